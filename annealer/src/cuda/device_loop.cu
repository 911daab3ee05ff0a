// The annealing loop on the device (see device_loop.hpp). One step is three launches in stream
// order — propose, swap and update the S2 counts (one block); the PSD of each weighted phase
// (the engine context's graph); score, accept or undo (one block) — and nothing comes back to
// the host until the batch ends. The step's arithmetic is step.hpp's, the host loop's own.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include "../device_loop.hpp"
#include "cuda/buffer.cuh"
#include "cuda/check.cuh"
#include "poreforge/cuda_engine.hpp"

namespace poreforge::anneal::detail {
namespace {

using cuda::DeviceBuffer;
using cuda::upload_async;

// Host-side steps per wait: the progress (and a stop) is seen at least this often.
constexpr int64_t kStepsPerWait = 256;
// Threads of the two step kernels (one block each).
constexpr int kThreads = 256;

// The first half of a step (step.hpp), one block: propose and apply the swap (thread 0), then
// each S2 count its change (every thread).
__global__ void propose_and_swap(Step st, StepState* state, int64_t batch_end) {
  StepState& s = *state;
  if (threadIdx.x == 0) {
    const Progress& p = s.progress;
    if (p.stopped != StopReason::none || p.evaluations >= batch_end) {
      s.active = 0;
    } else {
      const uint64_t step = uint64_t(p.evaluations);
      s.to_solid = propose(st, 1, step, 0);
      s.to_pore = propose(st, 0, step, 1, s.to_solid);
      apply_swap(st, s.to_solid, s.to_pore);
      s.active = 1;
    }
  }
  __syncthreads();
  if (!s.active) return;
  const int64_t p = s.to_solid, q = s.to_pore;
  const terms::S2& s2 = st.objective.s2;
  for (int e = int(threadIdx.x); e < s2.count_entries; e += int(blockDim.x)) s2.apply(st.pore, e, p, q);
}

// The rest of the step, one block, after the engine's PSD: every thread computes squares of the
// objective into shared memory (one double per entry: Impl::energy_bytes), thread 0 combines them
// in the host loop's order, accepts or undoes the swap and ends the evaluation; a rejected swap's
// S2 change is taken back by every thread.
__global__ void accept_or_undo(Step st, StepState* state) {
  extern __shared__ double squares[];
  __shared__ int rejected;
  StepState& s = *state;
  if (!s.active) return;  // the same for every thread of the block
  const Objective& o = st.objective;
  const int entries = o.entries();
  for (int j = int(threadIdx.x); j < entries; j += int(blockDim.x)) squares[j] = o.square(j);
  __syncthreads();
  if (threadIdx.x == 0) {
    const bool ok = accept(st, s, o.combine(squares));
    if (!ok) undo_swap(st, s.to_solid, s.to_pore);
    rejected = !ok;
    end_evaluation(st.cooling, s, st.stage_energies);
  }
  __syncthreads();
  if (rejected)
    for (int e = int(threadIdx.x); e < o.s2.count_entries; e += int(blockDim.x)) o.s2.undo(e);
}

template <class T>
void download(const DeviceBuffer<T>& d, T* host, std::size_t count, cudaStream_t s) {
  if (count) PF_CUDA_CHECK(cudaMemcpyAsync(host, d.data(), count * sizeof(T), cudaMemcpyDeviceToHost, s));
}

}  // namespace

struct DeviceLoop::Impl {
  Shape shape;
  Spacing spacing;
  cuda::Stream stream;  // first: the buffers below are freed on it
  cuda::Event ready{cudaEventDisableTiming}, scored[2]{cuda::Event{cudaEventDisableTiming}, cuda::Event{cudaEventDisableTiming}};
  std::unique_ptr<cuda::ThicknessContext> context[2];  // pore, solid; null when not weighted
  DeviceBuffer<uint8_t> pore, solid, frozen;
  DeviceBuffer<int64_t> list[2], slot, s2_counts, s2_delta, psd_counts[2], count_values, chord_counts;
  DeviceBuffer<double> psd_target[2], s2_target, chord_target, stage_energies;
  DeviceBuffer<StepState> state;
  StepState* host_state = nullptr;  // pinned
  Step step;                        // views of the buffers above
  std::size_t energy_bytes = 0;     // accept_or_undo's shared memory: a double per objective entry
  Progress progress;

  ~Impl() {
    for (auto& c : context)
      if (c) PF_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(static_cast<cudaStream_t>(c->stream())));
    PF_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(stream.get()));
    if (host_state) PF_CUDA_CHECK_NOTHROW(cudaFreeHost(host_state));
  }

  // The stream the steps run on: the pore context's, so that the common case (no solid term)
  // needs no event between streams.
  cudaStream_t work() const {
    for (auto& c : context)
      if (c) return static_cast<cudaStream_t>(c->stream());
    return stream.get();
  }

  // One step, enqueued.
  void enqueue_step(int64_t batch_end) {
    const cudaStream_t s = work();
    propose_and_swap<<<1, kThreads, 0, s>>>(step, state.data(), batch_end);
    PF_CUDA_CHECK_LAUNCH(s);
    for (int k = 0; k < 2; ++k) {
      if (!context[k]) continue;
      const cudaStream_t cs = static_cast<cudaStream_t>(context[k]->stream());
      if (cs != s) {
        PF_CUDA_CHECK(cudaEventRecord(ready.get(), s));
        PF_CUDA_CHECK(cudaStreamWaitEvent(cs, ready.get(), 0));
      }
      context[k]->psd_async(k == 0 ? pore.data() : solid.data(), psd_counts[k].data());
      if (cs != s) {
        PF_CUDA_CHECK(cudaEventRecord(scored[k].get(), cs));
        PF_CUDA_CHECK(cudaStreamWaitEvent(s, scored[k].get(), 0));
      }
    }
    accept_or_undo<<<1, kThreads, energy_bytes, s>>>(step, state.data());
    PF_CUDA_CHECK_LAUNCH(s);
  }
};

DeviceLoop::DeviceLoop(const Config& config, const Snapshot& start, const DirectionalCounts& counts, const Step& host,
                       std::unique_ptr<PsdEvaluator> pore_evaluator, std::unique_ptr<PsdEvaluator> solid_evaluator)
    : m_impl(std::make_unique<Impl>()) {
  Impl& m = *m_impl;
  const cudaStream_t s = m.stream.get();
  const Shape shape = config.shape;
  const int64_t n = shape.voxels();
  m.shape = shape;
  m.spacing = config.spacing;
  m.progress = start.progress;

  Step& st = m.step;
  st = step_of(config);
  Objective& o = st.objective;
  for (int k = 0; k < kTermCount; ++k) o.norm[k] = start.norm[k];
  st.list_size[0] = int64_t(start.solid_voxels.size());
  st.list_size[1] = int64_t(start.pore_voxels.size());
  std::vector<int64_t> host_counts;
  for (int a = 0; a < 3; ++a) host_counts.insert(host_counts.end(), counts.counts(a).begin(), counts.counts(a).end());
  const std::vector<double> s2_target = detail::s2_target(config, o.s2);
  const auto& t = config.targets;
  const auto& sc = config.schedule;

  // Device state: the structure (and its complement when the solid PSD is weighted), the voxel
  // lists and their slots, the S2 counts, the targets, the stage's energies, the scalars.
  m.pore = upload_async(start.pore.data(), std::size_t(n), s, "the annealer's structure");
  std::vector<int64_t> slot(static_cast<std::size_t>(n));
  for (int which = 0; which < 2; ++which) {
    const auto& list = which ? start.pore_voxels : start.solid_voxels;
    for (std::size_t k = 0; k < list.size(); ++k) slot[std::size_t(list[k])] = int64_t(k);
    m.list[which] = upload_async(list.data(), list.size(), s, which ? "the pore-voxel list" : "the solid-voxel list");
  }
  m.slot = upload_async(slot.data(), slot.size(), s, "the voxel-list slots");
  m.s2_counts = upload_async(host_counts.data(), host_counts.size(), s, "the S2 counts");
  m.s2_delta = DeviceBuffer<int64_t>(host_counts.size(), s, "the S2 change of a swap");
  const Objective& ho = host.objective;
  const int64_t count_values[2] = {ho.euler.value ? *ho.euler.value : 0, ho.surface.value ? *ho.surface.value : 0};
  m.count_values = upload_async(count_values, 2, s, "the Euler and surface counts");
  const std::vector<double> chord_target = detail::chord_target(config.targets, o.chords);
  m.chord_counts = upload_async(ho.chords.counts, ho.chords.counts ? std::size_t(6 * ho.chords.stride) : 0, s,
                                "the chord histograms");
  m.chord_target = upload_async(chord_target.data(), chord_target.size(), s, "the chord target");
  if (host.frozen) m.frozen = upload_async(host.frozen, std::size_t(n), s, "the frozen voxels");
  m.s2_target = upload_async(s2_target.data(), s2_target.size(), s, "the S2 target");
  m.psd_target[0] = upload_async(t.pore_psd.data(), t.pore_psd.size(), s, "the pore-PSD target");
  m.psd_target[1] = upload_async(t.solid_psd.data(), t.solid_psd.size(), s, "the solid-PSD target");
  const std::size_t stage_room = std::size_t(sc.stage_length) + start.stage_energies.size();
  m.stage_energies = DeviceBuffer<double>(stage_room, s, "the stage's energies");
  PF_CUDA_CHECK(cudaMemcpyAsync(m.stage_energies.data(), start.stage_energies.data(),
                                start.stage_energies.size() * sizeof(double), cudaMemcpyHostToDevice, s));
  Mask solid;  // lives until the synchronisation below, like every host source of an upload
  if (config.weights.solid_psd > 0) {
    solid = complement(start.pore);
    m.solid = upload_async(solid.data(), std::size_t(n), s, "the annealer's solid phase");
  }

  // The evaluators' engine contexts, with their workspaces, streams and captured graphs.
  std::unique_ptr<PsdEvaluator> evaluators[2] = {std::move(pore_evaluator), std::move(solid_evaluator)};
  for (int k = 0; k < 2; ++k) {
    if (!evaluators[k]) continue;
    m.context[k] = cuda::take_context(std::move(evaluators[k]));
    m.psd_counts[k] = DeviceBuffer<int64_t>(m.context[k]->psd_count_entries(), s, "PSD counts");
  }

  m.energy_bytes = std::size_t(o.entries()) * sizeof(double);
  if (m.energy_bytes > 48 * 1024)  // beyond the default: objectives of more than ~6,000 entries (S2, chords)
    PF_CUDA_CHECK(cudaFuncSetAttribute(accept_or_undo, cudaFuncAttributeMaxDynamicSharedMemorySize, int(m.energy_bytes)));

  PF_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&m.host_state), sizeof(StepState)));
  StepState& hs = *m.host_state;
  hs = StepState{};
  hs.progress = start.progress;
  hs.progress.stopped = StopReason::none;
  hs.stall = start.stall;
  hs.stage_count = int64_t(start.stage_energies.size());
  m.state = upload_async(&hs, 1, s, "the loop's state");

  st.pore = m.pore.data();
  st.solid = m.solid.data();
  st.list[0] = m.list[0].data();
  st.list[1] = m.list[1].data();
  st.slot = m.slot.data();
  st.stage_energies = m.stage_energies.data();
  o.s2.counts = m.s2_counts.data();
  o.s2.delta = m.s2_delta.data();
  o.s2.target = m.s2_target.data();
  o.euler.value = o.euler.entries ? m.count_values.data() : nullptr;
  o.surface.value = o.surface.entries ? m.count_values.data() + 1 : nullptr;
  o.chords.counts = o.chords.entries ? m.chord_counts.data() : nullptr;
  o.chords.target = m.chord_target.data();
  st.frozen = host.frozen ? m.frozen.data() : nullptr;
  o.pore_psd.counts = m.psd_counts[0].data();
  o.pore_psd.target = m.psd_target[0].data();
  o.solid_psd.counts = m.psd_counts[1].data();
  o.solid_psd.target = m.psd_target[1].data();
  PF_CUDA_CHECK(cudaStreamSynchronize(s));  // the host copies above must outlive their uploads
}

DeviceLoop::~DeviceLoop() = default;

void DeviceLoop::advance(int64_t steps) {
  Impl& m = *m_impl;
  const cudaStream_t s = m.work();
  int64_t done = 0;
  while (done < steps && m.progress.stopped == StopReason::none) {
    const int64_t batch = std::min(kStepsPerWait, steps - done);
    const int64_t batch_end = m.progress.evaluations + batch;
    for (int64_t k = 0; k < batch; ++k) m.enqueue_step(batch_end);
    PF_CUDA_CHECK(cudaMemcpyAsync(m.host_state, m.state.data(), sizeof(StepState), cudaMemcpyDeviceToHost, s));
    PF_CUDA_CHECK(cudaStreamSynchronize(s));
    for (auto& c : m.context)
      if (c) c->synchronize();  // throws if an evaluation was invalid
    m.progress = m.host_state->progress;
    done += batch;
  }
}

const Progress& DeviceLoop::progress() const { return m_impl->progress; }

Snapshot DeviceLoop::snapshot() const {
  const Impl& m = *m_impl;
  const cudaStream_t s = m.work();
  Snapshot snap;
  snap.pore = Mask(m.shape, m.spacing);
  download(m.pore, snap.pore.data(), std::size_t(m.shape.voxels()), s);
  snap.solid_voxels.resize(m.list[0].size());
  snap.pore_voxels.resize(m.list[1].size());
  download(m.list[0], snap.solid_voxels.data(), snap.solid_voxels.size(), s);
  download(m.list[1], snap.pore_voxels.data(), snap.pore_voxels.size(), s);
  PF_CUDA_CHECK(cudaMemcpyAsync(m.host_state, m.state.data(), sizeof(StepState), cudaMemcpyDeviceToHost, s));
  PF_CUDA_CHECK(cudaStreamSynchronize(s));
  snap.stage_energies.resize(std::size_t(m.host_state->stage_count));
  download(m.stage_energies, snap.stage_energies.data(), snap.stage_energies.size(), s);
  PF_CUDA_CHECK(cudaStreamSynchronize(s));
  snap.progress = m.progress;
  snap.stall = m.host_state->stall;
  for (int k = 0; k < kTermCount; ++k) snap.norm[k] = m.step.objective.norm[k];
  return snap;
}

Mask DeviceLoop::structure() const {
  const Impl& m = *m_impl;
  Mask pore(m.shape, m.spacing);
  download(m.pore, pore.data(), std::size_t(m.shape.voxels()), m.work());
  PF_CUDA_CHECK(cudaStreamSynchronize(m.work()));
  return pore;
}

DirectionalCounts DeviceLoop::counts() const {
  const Impl& m = *m_impl;
  const terms::S2& s2 = m.step.objective.s2;
  std::vector<int64_t> all(std::size_t(s2.count_entries));
  download(m.s2_counts, all.data(), all.size(), m.work());
  PF_CUDA_CHECK(cudaStreamSynchronize(m.work()));
  std::array<std::vector<int64_t>, 3> axes;
  for (int a = 0; a < 3; ++a) {
    const int end = a < 2 ? s2.offset[a + 1] : s2.count_entries;
    axes[a].assign(all.begin() + s2.offset[a], all.begin() + end);
  }
  return DirectionalCounts(m.shape, std::move(axes));
}

}  // namespace poreforge::anneal::detail
