// Transport measures on the GPU: the formation factor by Jacobi-preconditioned conjugate
// gradients on the spanning cluster's cells, the permeability by one fused D3Q19 stream-collide
// kernel. The per-voxel arithmetic is the CPU's (common/transport_stencils.hpp), computed in
// double (the lattice stored in float until it has nearly settled, on both backends), so both
// agree to the solvers' tolerances.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cub/block/block_reduce.cuh>
#include <limits>
#include <optional>
#include <utility>

#include "../transport_backends.hpp"
#include "buffer.cuh"
#include "check.cuh"
#include "poreforge/error.hpp"

namespace poreforge::cuda {
namespace {

namespace lbm = detail::lbm;

constexpr int kThreads = 256;
using BlockSum = cub::BlockReduce<double, kThreads>;

unsigned blocks_for(int64_t n) {
  return unsigned(std::min<int64_t>((n + kThreads - 1) / kThreads, int64_t(1) << 20));
}

// Adds each thread's `value` into *d_total: one atomic a block.
__device__ __forceinline__ void block_add(double value, double* d_total) {
  __shared__ typename BlockSum::TempStorage temp;
  const double sum = BlockSum(temp).Sum(value);
  if (threadIdx.x == 0 && sum != 0) atomicAdd(d_total, sum);
}

// The conjugate gradients run on the spanning cluster's cells only (detail::laplace_system,
// the CPU's unknowns): rock's cluster is a fifth of the box or less, and each iteration is three
// kernels over it, its scalars in slots that are cleared a chunk of iterations at a time.

// x = 0, r = b (the inlet reservoirs' current), p = r / diag; Σ r²/diag and Σ b² into d_rz, d_bb.
__global__ void cg_start(int64_t n, const double* __restrict__ diag, const double* __restrict__ b,
                         double* __restrict__ inv_diag, double* __restrict__ x, double* __restrict__ r,
                         double* __restrict__ p, double* d_rz, double* d_bb) {
  double rz = 0, bb = 0;
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < n; k += int64_t(gridDim.x) * blockDim.x) {
    const double inv = 1 / diag[k], bk = b[k];
    inv_diag[k] = inv;
    x[k] = 0;
    r[k] = bk;
    p[k] = bk * inv;
    rz += bk * bk * inv;
    bb += bk * bk;
  }
  block_add(rz, d_rz);
  __syncthreads();
  block_add(bb, d_bb);
}

// q = A p; Σ p·q into d_pq.
__global__ void cg_apply(int64_t n, const int32_t* __restrict__ nb, const double* __restrict__ w,
                         const double* __restrict__ diag, const double* __restrict__ p, double* __restrict__ q,
                         double* d_pq) {
  double pq = 0;
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < n; k += int64_t(gridDim.x) * blockDim.x) {
    const double v = detail::cell_row(nb, w, diag, p, k);
    q[k] = v;
    pq += p[k] * v;
  }
  block_add(pq, d_pq);
}

// α = rz / pq; x += α p; r −= α q; Σ r²/diag and Σ r² into d_rz_new, d_rr.
__global__ void cg_update(int64_t n, const double* __restrict__ inv_diag, const double* __restrict__ p,
                          const double* __restrict__ q, double* __restrict__ x, double* __restrict__ r,
                          const double* d_rz, const double* d_pq, double* d_rz_new, double* d_rr) {
  // The host reads the residual every few iterations, so iterations may follow an exact
  // solution (r = 0, then p = 0): they must leave it as it is rather than divide 0 by 0.
  const double pq = *d_pq;
  const double alpha = pq != 0 ? *d_rz / pq : 0;
  double rz = 0, rr = 0;
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < n; k += int64_t(gridDim.x) * blockDim.x) {
    x[k] += alpha * p[k];
    const double rk = r[k] - alpha * q[k];
    r[k] = rk;
    rz += rk * rk * inv_diag[k];
    rr += rk * rk;
  }
  block_add(rz, d_rz_new);
  __syncthreads();
  block_add(rr, d_rr);
}

// p = r / diag + β p, β = rz_new / rz.
__global__ void cg_direction(int64_t n, const double* __restrict__ inv_diag, const double* __restrict__ r,
                             double* __restrict__ p, const double* d_rz, const double* d_rz_new) {
  const double rz = *d_rz;
  const double beta = rz != 0 ? *d_rz_new / rz : 0;
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < n; k += int64_t(gridDim.x) * blockDim.x)
    p[k] = r[k] * inv_diag[k] + beta * p[k];
}

// The current from the inlet reservoir: Σ g_res (1 − x) over the cells on the inlet face (b ≠ 0).
__global__ void inlet_current(int64_t n, const double* __restrict__ b, const double* __restrict__ x, double g_reservoir,
                              double* d_current) {
  double sum = 0;
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < n; k += int64_t(gridDim.x) * blockDim.x)
    if (b[k] != 0) sum += g_reservoir * (1 - x[k]);
  block_add(sum, d_current);
}

// One lattice step of every fluid node; with `d_momentum`, Σ of the momentum along the axis.
template <class T>
__global__ void lbm_step(lbm::Params p, const int32_t* __restrict__ source, const T* __restrict__ in,
                         T* __restrict__ out, double* d_momentum) {
  double sum = 0;
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < p.nodes; k += int64_t(gridDim.x) * blockDim.x)
    sum += lbm::node_step(p, source, in, out, k);
  if (d_momentum) block_add(sum, d_momentum);
}

__global__ void widen_populations(int64_t n, const float* __restrict__ from, double* __restrict__ to) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    to[i] = from[i];
}

double read_scalar(const double* d_value, cudaStream_t stream) {
  double h = 0;
  PF_CUDA_CHECK(cudaMemcpyAsync(&h, d_value, sizeof(double), cudaMemcpyDeviceToHost, stream));
  PF_CUDA_CHECK(cudaStreamSynchronize(stream));
  return h;
}

}  // namespace

FormationFactorResult formation_factor(const Mask& pore, int axis, const FormationFactorOptions& options) {
  FormationFactorResult r;
  // The spanning cluster and its system are built on the host, shared with the CPU.
  const std::optional<detail::SpanningCluster> spanning =
      detail::start_formation_factor(r, pore, axis, options, Backend::cuda);
  if (!spanning) return r;
  const detail::LaplaceSystem system = detail::laplace_system(pore, *spanning, axis);
  const cpu::CellOperator& op = system.op;
  const int64_t n = op.size();
  const std::size_t un = static_cast<std::size_t>(n);
  Stream stream;
  const cudaStream_t s = stream.get();
  DeviceBuffer<int32_t> nb = upload_async(op.nb.data(), op.nb.size(), s, "the formation factor's neighbours");
  DeviceBuffer<double> w = upload_async(op.w.data(), op.w.size(), s, "the formation factor's conductances");
  DeviceBuffer<double> diag = upload_async(op.diag.data(), un, s, "the formation factor's diagonal");
  DeviceBuffer<double> b = upload_async(system.b.data(), un, s, "the formation factor's reservoirs");
  DeviceBuffer<double> inv_diag(un, s, "the formation factor's inverse diagonal"), x(un, s, "the potential"),
      res(un, s, "the residual"), p(un, s, "the search direction"), q(un, s, "the operator's image");
  // The residual is read back every few iterations only: each read waits for the stream.
  // Iteration j of a chunk reads rz[j] and writes rz[j + 1], pq[j] and rr[j]; two chunks
  // alternate, each cleared as it starts while the last rz of the other carries over.
  constexpr int kCheckEvery = 8;
  constexpr int kChunk = 3 * kCheckEvery;  // rz[1 … 8], pq[0 … 7], rr[0 … 7]
  DeviceBuffer<double> scalars(2 * kChunk + 3, s, "the solver's scalars");
  double* d_rz_start = scalars.data() + 2 * kChunk;
  double* d_bb = d_rz_start + 1;
  double* d_current = d_rz_start + 2;
  PF_CUDA_CHECK(cudaMemsetAsync(scalars.data(), 0, scalars.bytes(), s));
  const unsigned blocks = blocks_for(n);
  cg_start<<<blocks, kThreads, 0, s>>>(n, diag.data(), b.data(), inv_diag.data(), x.data(), res.data(), p.data(),
                                       d_rz_start, d_bb);
  PF_CUDA_CHECK_LAUNCH(s);
  const double b_norm = std::sqrt(read_scalar(d_bb, s));
  const int64_t max_iterations = detail::max_cg_iterations(pore, axis, options);
  double rr = b_norm * b_norm;
  int64_t it = 0;
  double* d_rz = d_rz_start;
  for (int chunk_index = 0; std::sqrt(rr) > options.tolerance * b_norm && it < max_iterations; chunk_index ^= 1) {
    double* chunk = scalars.data() + chunk_index * kChunk;
    PF_CUDA_CHECK(cudaMemsetAsync(chunk, 0, kChunk * sizeof(double), s));
    double* d_rr = nullptr;
    for (int j = 0; j < kCheckEvery && it < max_iterations; ++j, ++it) {
      double* d_rz_new = chunk + j;
      double* d_pq = chunk + kCheckEvery + j;
      d_rr = chunk + 2 * kCheckEvery + j;
      cg_apply<<<blocks, kThreads, 0, s>>>(n, nb.data(), w.data(), diag.data(), p.data(), q.data(), d_pq);
      PF_CUDA_CHECK_LAUNCH(s);
      cg_update<<<blocks, kThreads, 0, s>>>(n, inv_diag.data(), p.data(), q.data(), x.data(), res.data(), d_rz, d_pq,
                                            d_rz_new, d_rr);
      PF_CUDA_CHECK_LAUNCH(s);
      cg_direction<<<blocks, kThreads, 0, s>>>(n, inv_diag.data(), res.data(), p.data(), d_rz, d_rz_new);
      PF_CUDA_CHECK_LAUNCH(s);
      d_rz = d_rz_new;
    }
    rr = read_scalar(d_rr, s);
  }
  const double g_reservoir = detail::laplace_grid(pore, axis).g_reservoir();
  inlet_current<<<blocks, kThreads, 0, s>>>(n, b.data(), x.data(), g_reservoir, d_current);
  PF_CUDA_CHECK_LAUNCH(s);
  const double current = read_scalar(d_current, s);
  detail::finish_formation_factor(r, current, it, std::sqrt(rr), b_norm, options);
  return r;
}

namespace {

// The lattice on the device: its sources and two copies of the populations (pull: read one,
// write the other), 2 × 19 × 4 bytes a node in float, then 2 × 19 × 8 in double once widened,
// and 18 × 4 for the sources; one fused kernel a step.
class DeviceLattice {
 public:
  DeviceLattice(const detail::LatticeSetup& setup, cudaStream_t s)
      : params_(setup.params),
        stream_(s),
        source_(upload_async(setup.source.data(), setup.source.size(), s, "the lattice's sources")),
        momentum_(1, s, "the momentum sum") {
    for (DeviceBuffer<float>& copy : narrow_) {
      copy = DeviceBuffer<float>(populations(), s, "the lattice populations");
      PF_CUDA_CHECK(cudaMemsetAsync(copy.data(), 0, copy.bytes(), s));  // at rest: every departure 0
    }
  }

  double run(int steps) { return wide_[0].size() ? run_in(wide_, steps) : run_in(narrow_, steps); }

  // A step writes every population of its output, so only the current copy is converted;
  // the floats go before the second double copy comes, keeping the peak at double's.
  void widen() {
    wide_[0] = DeviceBuffer<double>(populations(), stream_, "the lattice populations");
    widen_populations<<<blocks_for(int64_t(populations())), kThreads, 0, stream_>>>(int64_t(populations()),
                                                                                  narrow_[0].data(), wide_[0].data());
    PF_CUDA_CHECK_LAUNCH(stream_);
    narrow_[0] = DeviceBuffer<float>();
    narrow_[1] = DeviceBuffer<float>();
    wide_[1] = DeviceBuffer<double>(populations(), stream_, "the lattice populations");
  }

 private:
  std::size_t populations() const { return static_cast<std::size_t>(params_.nodes * lbm::Q); }

  template <class T>
  double run_in(DeviceBuffer<T> (&lattice)[2], int steps) {
    const unsigned blocks = blocks_for(params_.nodes);
    for (int k = 0; k < steps; ++k) {
      const bool last = k == steps - 1;
      if (last) PF_CUDA_CHECK(cudaMemsetAsync(momentum_.data(), 0, sizeof(double), stream_));
      lbm_step<<<blocks, kThreads, 0, stream_>>>(params_, source_.data(), lattice[0].data(), lattice[1].data(),
                                                 last ? momentum_.data() : nullptr);
      PF_CUDA_CHECK_LAUNCH(stream_);
      std::swap(lattice[0], lattice[1]);
    }
    return read_scalar(momentum_.data(), stream_);
  }

  lbm::Params params_;
  cudaStream_t stream_;
  DeviceBuffer<int32_t> source_;
  DeviceBuffer<double> momentum_;
  DeviceBuffer<float> narrow_[2];
  DeviceBuffer<double> wide_[2];
};

}  // namespace

PermeabilityResult permeability(const Mask& pore, int axis, const PermeabilityOptions& options) {
  PermeabilityResult r;
  if (!detail::start_permeability(r, pore, axis, options, Backend::cuda)) return r;
  const detail::LatticeSetup setup = detail::lattice_setup(pore, axis, options);
  Stream stream;
  DeviceLattice lattice(setup, stream.get());
  detail::run_to_steady_state(r, lattice, setup.voxels, options);
  detail::finish_permeability(r, options);
  return r;
}

}  // namespace poreforge::cuda
