// Transport measures on the GPU: the formation factor by Jacobi-preconditioned conjugate
// gradients over 7-point stencil kernels, the permeability by one fused D3Q19 stream-collide
// kernel. The per-voxel arithmetic is the CPU's (common/transport_stencils.hpp), in double
// precision, so both backends agree to the solvers' tolerances.
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

using detail::LaplaceGrid;
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

__device__ __forceinline__ void coords(const LaplaceGrid& g, int64_t i, int64_t& x, int64_t& y, int64_t& z) {
  x = i % g.nx;
  y = (i / g.nx) % g.ny;
  z = i / (g.nx * g.ny);
}

// r = b (the inlet reservoirs' current), x = 0, p = z = r / diag; Σ r·z and Σ b² into d_s.
__global__ void cg_start(LaplaceGrid g, const uint8_t* __restrict__ cluster, double* __restrict__ inv_diag,
                         double* __restrict__ x, double* __restrict__ r, double* __restrict__ p, double* d_rz,
                         double* d_bb) {
  double rz = 0, bb = 0;
  const int64_t n = g.nx * g.ny * g.nz;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    double inv = 0, b = 0;
    if (cluster[i]) {
      int64_t cx, cy, cz;
      coords(g, i, cx, cy, cz);
      inv = 1 / detail::laplace_diagonal(g, cluster, cx, cy, cz);
      const int64_t c[3] = {cx, cy, cz};
      if (c[g.axis] == 0) b = g.g_reservoir();
    }
    inv_diag[i] = inv;
    x[i] = 0;
    r[i] = b;
    p[i] = b * inv;
    rz += b * b * inv;
    bb += b * b;
  }
  block_add(rz, d_rz);
  __syncthreads();
  block_add(bb, d_bb);
}

// q = A p on the cluster; Σ p·q into d_pq. Outside the cluster every vector stays 0.
__global__ void cg_apply(LaplaceGrid g, const uint8_t* __restrict__ cluster, const double* __restrict__ inv_diag,
                         const double* __restrict__ p, double* __restrict__ q, double* d_pq) {
  double pq = 0;
  const int64_t n = g.nx * g.ny * g.nz;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    if (!cluster[i]) continue;
    int64_t cx, cy, cz;
    coords(g, i, cx, cy, cz);
    const int64_t c[3] = {cx, cy, cz};
    double v = p[i] / inv_diag[i];
#pragma unroll
    for (int a = 0; a < 3; ++a) {
      const int64_t s = g.stride(a);
      // Neighbours outside the cluster hold p = 0: no test of the cluster needed.
      if (c[a] > 0) v -= g.g[a] * p[i - s];
      if (c[a] < g.extent(a) - 1) v -= g.g[a] * p[i + s];
    }
    q[i] = v;
    pq += p[i] * v;
  }
  block_add(pq, d_pq);
}

// α = rz / pq; x += α p; r −= α q; Σ r²/diag and Σ r² into d_rz_new, d_rr.
__global__ void cg_update(int64_t n, const uint8_t* __restrict__ cluster, const double* __restrict__ inv_diag,
                          const double* __restrict__ p, const double* __restrict__ q, double* __restrict__ x,
                          double* __restrict__ r, const double* d_rz, const double* d_pq, double* d_rz_new,
                          double* d_rr) {
  // The host reads the residual every few iterations, so iterations may follow an exact
  // solution (r = 0, then p = 0): they must leave it as it is rather than divide 0 by 0.
  const double pq = *d_pq;
  const double alpha = pq != 0 ? *d_rz / pq : 0;
  double rz = 0, rr = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    if (!cluster[i]) continue;
    x[i] += alpha * p[i];
    const double ri = r[i] - alpha * q[i];
    r[i] = ri;
    rz += ri * ri * inv_diag[i];
    rr += ri * ri;
  }
  block_add(rz, d_rz_new);
  __syncthreads();
  block_add(rr, d_rr);
}

// p = r / diag + β p, β = rz_new / rz.
__global__ void cg_direction(int64_t n, const uint8_t* __restrict__ cluster, const double* __restrict__ inv_diag,
                             const double* __restrict__ r, double* __restrict__ p, const double* d_rz,
                             const double* d_rz_new) {
  const double rz = *d_rz;
  const double beta = rz != 0 ? *d_rz_new / rz : 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    if (cluster[i]) p[i] = r[i] * inv_diag[i] + beta * p[i];
}

// The current from the inlet reservoir: Σ g_res (1 − x) over the cluster's inlet voxels.
__global__ void inlet_current(LaplaceGrid g, const uint8_t* __restrict__ cluster, const double* __restrict__ x,
                              double* d_current) {
  const int a1 = (g.axis + 1) % 3, a2 = (g.axis + 2) % 3;
  const int64_t n1 = g.extent(a1), face = n1 * g.extent(a2);
  double sum = 0;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < face; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = (t % n1) * g.stride(a1) + (t / n1) * g.stride(a2);
    if (cluster[i]) sum += g.g_reservoir() * (1 - x[i]);
  }
  block_add(sum, d_current);
}

// One lattice step of every fluid node; with `d_momentum`, Σ of the momentum along the axis.
__global__ void lbm_step(lbm::Params p, const int32_t* __restrict__ source, const double* __restrict__ in,
                         double* __restrict__ out, double* d_momentum) {
  double sum = 0;
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < p.nodes; k += int64_t(gridDim.x) * blockDim.x)
    sum += lbm::node_step(p, source, in, out, k);
  if (d_momentum) block_add(sum, d_momentum);
}

__global__ void lbm_fill(int64_t n, double* f) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n * lbm::Q;
       i += int64_t(gridDim.x) * blockDim.x)
    f[i] = lbm::weight(int(i / n));
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
  // The spanning cluster is found on the host (two breadth-first searches, shared with the CPU).
  const std::optional<detail::SpanningCluster> spanning =
      detail::start_formation_factor(r, pore, axis, options, Backend::cuda);
  if (!spanning) return r;
  const detail::SpanningCluster& sc = *spanning;
  const LaplaceGrid grid = detail::laplace_grid(pore, axis);
  const int64_t n = pore.voxels();
  const std::size_t un = static_cast<std::size_t>(n);
  Stream stream;
  const cudaStream_t s = stream.get();
  DeviceBuffer<uint8_t> cluster = upload_async(sc.cluster.data(), un, s, "the spanning cluster");
  DeviceBuffer<double> inv_diag(un, s, "the formation factor's diagonal"), x(un, s, "the potential"),
      res(un, s, "the residual"), p(un, s, "the search direction"), q(un, s, "the operator's image");
  // Scalars: rz (two slots, old and new swap each iteration), pq, rr, bb, current.
  DeviceBuffer<double> scalars(6, s, "the solver's scalars");
  double* d_rz[2] = {scalars.data(), scalars.data() + 1};
  double* d_pq = scalars.data() + 2;
  double* d_rr = scalars.data() + 3;
  double* d_bb = scalars.data() + 4;
  double* d_current = scalars.data() + 5;
  PF_CUDA_CHECK(cudaMemsetAsync(scalars.data(), 0, scalars.bytes(), s));
  const unsigned blocks = blocks_for(n);
  cg_start<<<blocks, kThreads, 0, s>>>(grid, cluster.data(), inv_diag.data(), x.data(), res.data(), p.data(), d_rz[0],
                                       d_bb);
  PF_CUDA_CHECK_LAUNCH(s);
  const double b_norm = std::sqrt(read_scalar(d_bb, s));
  const int64_t max_iterations = detail::max_cg_iterations(pore, axis, options);
  // The residual is read back every few iterations only: each read waits for the stream.
  constexpr int kCheckEvery = 8;
  double rr = b_norm * b_norm;
  int64_t it = 0;
  int old = 0;
  while (std::sqrt(rr) > options.tolerance * b_norm && it < max_iterations) {
    for (int k = 0; k < kCheckEvery && it < max_iterations; ++k, ++it, old ^= 1) {
      PF_CUDA_CHECK(cudaMemsetAsync(d_pq, 0, sizeof(double), s));
      PF_CUDA_CHECK(cudaMemsetAsync(d_rz[old ^ 1], 0, sizeof(double), s));
      PF_CUDA_CHECK(cudaMemsetAsync(d_rr, 0, sizeof(double), s));
      cg_apply<<<blocks, kThreads, 0, s>>>(grid, cluster.data(), inv_diag.data(), p.data(), q.data(), d_pq);
      PF_CUDA_CHECK_LAUNCH(s);
      cg_update<<<blocks, kThreads, 0, s>>>(n, cluster.data(), inv_diag.data(), p.data(), q.data(), x.data(),
                                            res.data(), d_rz[old], d_pq, d_rz[old ^ 1], d_rr);
      PF_CUDA_CHECK_LAUNCH(s);
      cg_direction<<<blocks, kThreads, 0, s>>>(n, cluster.data(), inv_diag.data(), res.data(), p.data(), d_rz[old],
                                               d_rz[old ^ 1]);
      PF_CUDA_CHECK_LAUNCH(s);
    }
    rr = read_scalar(d_rr, s);
  }
  const int a1 = (axis + 1) % 3, a2 = (axis + 2) % 3;
  inlet_current<<<blocks_for(pore.shape().extent(a1) * pore.shape().extent(a2)), kThreads, 0, s>>>(
      grid, cluster.data(), x.data(), d_current);
  PF_CUDA_CHECK_LAUNCH(s);
  const double current = read_scalar(d_current, s);
  detail::finish_formation_factor(r, current, it, std::sqrt(rr), b_norm, options);
  return r;
}

PermeabilityResult permeability(const Mask& pore, int axis, const PermeabilityOptions& options) {
  PermeabilityResult r;
  if (!detail::start_permeability(r, pore, axis, options, Backend::cuda)) return r;
  const detail::LatticeSetup setup = detail::lattice_setup(pore, axis, options);
  const lbm::Params& P = setup.params;
  const int64_t n = P.nodes;
  Stream stream;
  const cudaStream_t s = stream.get();
  // Two lattices of the fluid nodes (pull: read one, write the other) in double: 2 × 19 × 8
  // bytes a node and 18 × 4 for its sources, 9.5 GB for the 400³ Berea image mirrored; one
  // fused kernel a step. Float would halve the populations' bytes, but a creeping flow moves
  // the populations (~1/18) by ~1e-6 of themselves, the same order as float's rounding: the
  // mean velocity's steady-state test (1e-6 relative) would read rounding noise, and the
  // results would leave the CPU's (double) by far more than its tolerance.
  DeviceBuffer<int32_t> source = upload_async(setup.source.data(), setup.source.size(), s, "the lattice's sources");
  DeviceBuffer<double> a(static_cast<std::size_t>(n * lbm::Q), s, "the lattice populations"),
      b(static_cast<std::size_t>(n * lbm::Q), s, "the lattice populations");
  DeviceBuffer<double> momentum(1, s, "the momentum sum");
  const unsigned blocks = blocks_for(n);
  lbm_fill<<<blocks_for(n * lbm::Q), kThreads, 0, s>>>(n, a.data());
  PF_CUDA_CHECK_LAUNCH(s);
  lbm_fill<<<blocks_for(n * lbm::Q), kThreads, 0, s>>>(n, b.data());
  PF_CUDA_CHECK_LAUNCH(s);
  detail::SteadyState steady;
  while (r.steps < options.max_steps) {
    for (int k = 0; k < options.check_every; ++k) {
      const bool last = k == options.check_every - 1;
      if (last) PF_CUDA_CHECK(cudaMemsetAsync(momentum.data(), 0, sizeof(double), s));
      lbm_step<<<blocks, kThreads, 0, s>>>(P, source.data(), a.data(), b.data(), last ? momentum.data() : nullptr);
      PF_CUDA_CHECK_LAUNCH(s);
      std::swap(a, b);
    }
    if (detail::permeability_check(r, read_scalar(momentum.data(), s), setup.voxels, steady, options)) break;
  }
  detail::finish_permeability(r, options);
  return r;
}

}  // namespace poreforge::cuda
