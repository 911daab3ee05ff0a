// The device-resident PSD evaluator: the mask lives on the device, changes travel one byte
// each (from pinned memory, in stream order), evaluations replay the context's graph.
#include <cuda_runtime.h>

#include "../common/messages.hpp"
#include "buffer.cuh"
#include "check.cuh"
#include "poreforge/cuda_engine.hpp"
#include "poreforge/error.hpp"

namespace poreforge::cuda {
namespace {

class CudaPsdEvaluator final : public PsdEvaluator {
 public:
  CudaPsdEvaluator(const Mask& phase, Boundary boundary, const Bins& bins, double centre_capacity)
      : m_config{phase.shape(), phase.spacing(), boundary, bins.edges(), centre_capacity} {
    validate_shape(phase.shape());
    validate_spacing(phase.spacing());
    m_context = std::make_unique<ThicknessContext>(m_config);
    // The buffers belong to the evaluator's own stream (it outlives them and every context);
    // they are used on the context's stream once this stream is done with them.
    const cudaStream_t own = m_own.get();
    m_mask = DeviceBuffer<uint8_t>(std::size_t(phase.voxels()), own, "the evaluator's mask");
    m_counts = DeviceBuffer<int64_t>(m_context->psd_count_entries(), own, "PSD counts");
    PF_CUDA_CHECK(cudaMemcpyAsync(m_mask.data(), phase.data(), m_mask.bytes(), cudaMemcpyHostToDevice, own));
    PF_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&m_pending), kPending));
    PF_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&m_host_counts), m_counts.bytes()));
    PF_CUDA_CHECK(cudaStreamSynchronize(own));
  }
  ~CudaPsdEvaluator() override {
    if (m_context) PF_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(stream()));
    if (m_pending) PF_CUDA_CHECK_NOTHROW(cudaFreeHost(m_pending));
    if (m_host_counts) PF_CUDA_CHECK_NOTHROW(cudaFreeHost(m_host_counts));
  }

  void set(int64_t index, uint8_t value) override {
    if (m_used == kPending) {  // every queued byte must have left before its slot is reused
      PF_CUDA_CHECK(cudaStreamSynchronize(stream()));
      m_used = 0;
    }
    m_pending[m_used] = value;
    PF_CUDA_CHECK(cudaMemcpyAsync(m_mask.data() + index, m_pending + m_used, 1, cudaMemcpyHostToDevice, stream()));
    ++m_used;
  }

  PsdCounts counts() override {
    for (;;) {
      m_context->psd_async(m_mask.data(), m_counts.data());
      PF_CUDA_CHECK(cudaMemcpyAsync(m_host_counts, m_counts.data(), m_counts.bytes(), cudaMemcpyDeviceToHost, stream()));
      try {
        m_context->synchronize();
        break;
      } catch (const RuntimeError&) {
        // More ball centres than the context has room for: once, a context with room for all.
        if (!m_context->last_overflowed() || m_config.centre_capacity == 1.0) throw;
        cudaGetLastError();
        m_config.centre_capacity = 1.0;
        m_context = std::make_unique<ThicknessContext>(m_config);  // the old one synchronises as it goes
      }
    }
    m_used = 0;
    const std::size_t n = m_config.psd_edges.size();
    PsdCounts c;
    c.at_least.assign(m_host_counts, m_host_counts + n);
    c.above = m_host_counts[n];
    c.phase_voxels = m_host_counts[n + 1];
    if (c.phase_voxels == 0) throw InputError(detail::empty_phase_message());
    return c;
  }

  Backend backend() const override { return Backend::cuda; }

  std::unique_ptr<ThicknessContext> take_context() {
    m_context->synchronize();  // every queued change has landed; the mask and counts may go
    return std::move(m_context);
  }

 private:
  static constexpr std::size_t kPending = 4096;

  cudaStream_t stream() const { return static_cast<cudaStream_t>(m_context->stream()); }

  ContextConfig m_config;
  Stream m_own;
  std::unique_ptr<ThicknessContext> m_context;
  DeviceBuffer<uint8_t> m_mask;
  DeviceBuffer<int64_t> m_counts;
  uint8_t* m_pending = nullptr;  // pinned: the bytes of queued changes
  std::size_t m_used = 0;
  int64_t* m_host_counts = nullptr;  // pinned
};

}  // namespace

std::unique_ptr<PsdEvaluator> make_psd_evaluator(const Mask& phase, Boundary boundary, const Bins& bins,
                                                 double centre_capacity) {
  return std::make_unique<CudaPsdEvaluator>(phase, boundary, bins, centre_capacity);
}

std::unique_ptr<ThicknessContext> take_context(std::unique_ptr<PsdEvaluator> evaluator) {
  auto* cuda = dynamic_cast<CudaPsdEvaluator*>(evaluator.get());
  if (!cuda) throw InputError("take_context needs an evaluator made by the CUDA backend");
  return cuda->take_context();
}

}  // namespace poreforge::cuda
