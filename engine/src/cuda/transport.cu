// Transport measures on the GPU: the formation factor by conjugate gradients on the spanning
// cluster's cells, preconditioned by the CPU's aggregation multigrid V-cycle, the permeability
// by one fused D3Q19 stream-collide kernel. The per-voxel arithmetic is the CPU's
// (common/transport_stencils.hpp), computed in double (the lattice stored in float until it
// has nearly settled, on both backends), so both agree to the solvers' tolerances.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cub/block/block_reduce.cuh>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

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
// the CPU's unknowns), preconditioned by the CPU's aggregation multigrid V-cycle
// (cpu::Multigrid: the hierarchy is built on the host and uploaded), each step of it a
// kernel over one level. The CG's scalars sit in slots that are cleared a chunk of iterations
// at a time, so that the host reads the residual only every few iterations.

#define PF_GRID_STRIDE(k, n) \
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < (n); k += int64_t(gridDim.x) * blockDim.x)

// x = 0, r = b; Σ b² into d_bb.
__global__ void cg_start(int64_t n, const double* __restrict__ b, double* __restrict__ x, double* __restrict__ r,
                         double* d_bb) {
  double bb = 0;
  PF_GRID_STRIDE(k, n) {
    const double bk = b[k];
    x[k] = 0;
    r[k] = bk;
    bb += bk * bk;
  }
  block_add(bb, d_bb);
}

// Σ u·v into d_sum.
__global__ void dot(int64_t n, const double* __restrict__ u, const double* __restrict__ v, double* d_sum) {
  double sum = 0;
  PF_GRID_STRIDE(k, n) sum += u[k] * v[k];
  block_add(sum, d_sum);
}

// q = A p; Σ p·q into d_pq.
__global__ void cg_apply(int64_t n, const int32_t* __restrict__ nb, const double* __restrict__ w,
                         const double* __restrict__ diag, const double* __restrict__ p, double* __restrict__ q,
                         double* d_pq) {
  double pq = 0;
  PF_GRID_STRIDE(k, n) {
    const double v = detail::cell_row(nb, w, diag, p, k);
    q[k] = v;
    pq += p[k] * v;
  }
  block_add(pq, d_pq);
}

// α = rz / pq; x += α p; r −= α q; Σ r² into d_rr.
__global__ void cg_update(int64_t n, const double* __restrict__ p, const double* __restrict__ q,
                          double* __restrict__ x, double* __restrict__ r, const double* d_rz, const double* d_pq,
                          double* d_rr) {
  // The host reads the residual every few iterations, so iterations may follow an exact
  // solution (r = 0, then p = 0): they must leave it as it is rather than divide 0 by 0.
  const double pq = *d_pq;
  const double alpha = pq != 0 ? *d_rz / pq : 0;
  double rr = 0;
  PF_GRID_STRIDE(k, n) {
    x[k] += alpha * p[k];
    const double rk = r[k] - alpha * q[k];
    r[k] = rk;
    rr += rk * rk;
  }
  block_add(rr, d_rr);
}

// p = z + β p, β = rz_new / rz.
__global__ void cg_direction(int64_t n, const double* __restrict__ z, double* __restrict__ p, const double* d_rz,
                             const double* d_rz_new) {
  const double rz = *d_rz;
  const double beta = rz != 0 ? *d_rz_new / rz : 0;
  PF_GRID_STRIDE(k, n) p[k] = z[k] + beta * p[k];
}

// The V-cycle's steps (cpu::Multigrid::cycle, the same arithmetic). A damped Jacobi sweep
// from zero: x = ω b / d.
__global__ void mg_first_sweep(int64_t n, const double* __restrict__ diag, const double* __restrict__ b,
                               double* __restrict__ x) {
  PF_GRID_STRIDE(k, n) x[k] = cpu::multigrid::damping * b[k] / diag[k];
}

// A damped Jacobi sweep: out = x + ω (b − A x) / d.
__global__ void mg_sweep(int64_t n, const int32_t* __restrict__ nb, const double* __restrict__ w,
                         const double* __restrict__ diag, const double* __restrict__ b, const double* __restrict__ x,
                         double* __restrict__ out) {
  PF_GRID_STRIDE(k, n) out[k] = x[k] + cpu::multigrid::damping * (b[k] - detail::cell_row(nb, w, diag, x, k)) / diag[k];
}

// The coarse right-hand side: the residual b − A x summed over each coarse unknown's block.
__global__ void mg_restrict(int64_t coarse, const int32_t* __restrict__ first, const int32_t* __restrict__ children,
                            const int32_t* __restrict__ nb, const double* __restrict__ w,
                            const double* __restrict__ diag, const double* __restrict__ b,
                            const double* __restrict__ x, double* __restrict__ coarse_b) {
  PF_GRID_STRIDE(c, coarse) {
    double sum = 0;
    for (int32_t j = first[c]; j < first[c + 1]; ++j) {
      const int32_t k = children[j];
      sum += b[k] - detail::cell_row(nb, w, diag, x, k);
    }
    coarse_b[c] = sum;
  }
}

// x += scale · the coarse correction of each unknown's block.
__global__ void mg_prolong(int64_t n, const int32_t* __restrict__ parent, const double* __restrict__ coarse_x,
                           double* __restrict__ x) {
  PF_GRID_STRIDE(k, n) x[k] += cpu::multigrid::correction * coarse_x[parent[k]];
}

// The coarsest level exactly: x = A⁻¹ b, the inverse dense.
__global__ void mg_coarsest(int64_t m, const double* __restrict__ inverse, const double* __restrict__ b,
                            double* __restrict__ x) {
  PF_GRID_STRIDE(i, m) {
    double sum = 0;
    for (int64_t j = 0; j < m; ++j) sum += inverse[i * m + j] * b[j];
    x[i] = sum;
  }
}

// The current from the inlet reservoir: Σ b (1 − x), b the inlet cells' reservoir conductances
// (0 elsewhere).
__global__ void inlet_current(int64_t n, const double* __restrict__ b, const double* __restrict__ x, double* d_current) {
  double sum = 0;
  PF_GRID_STRIDE(k, n) sum += b[k] * (1 - x[k]);
  block_add(sum, d_current);
}

#undef PF_GRID_STRIDE

// One lattice step of every fluid node; with `d_momentum`, Σ of the momentum along the axis.
// A step's 18 gathers wait on memory. Unbounded, ptxas gives the step so many registers that
// an SM holds one block of 256, eight warps to hide them; bounded to three blocks it spills a
// few bytes and hides them better, at four it spills more than it hides (docs/performance.md).
template <class T>
__global__ void __launch_bounds__(kThreads, 3)
    lbm_step(lbm::Params p, const int32_t* __restrict__ source, const T* __restrict__ in, T* __restrict__ out,
             double* d_momentum) {
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

// The coarsest level the device solves by its dense inverse: small, so that the host forms
// the inverse in well under a millisecond; the levels it adds over the CPU's are tiny.
constexpr int64_t kCoarsestUnknowns = 128;

// A multigrid hierarchy on the device: each level's operator and work vectors, the maps
// between levels, the coarsest level's inverse.
class DeviceMultigrid {
 public:
  DeviceMultigrid(const cpu::Multigrid& mg, cudaStream_t s) : stream_(s) {
    for (int l = 0; l < mg.levels(); ++l) {
      const cpu::CellOperator& a = mg.level(l);
      Level v;
      v.n = a.size();
      const std::size_t n = std::size_t(v.n);
      v.nb = upload_async(a.nb.data(), a.nb.size(), s, "the multigrid's neighbours");
      v.w = upload_async(a.w.data(), a.w.size(), s, "the multigrid's conductances");
      v.diag = upload_async(a.diag.data(), n, s, "the multigrid's diagonal");
      v.other = DeviceBuffer<double>(n, s, "the multigrid's work vector");
      if (l > 0) {
        v.b = DeviceBuffer<double>(n, s, "the multigrid's work vector");
        v.x = DeviceBuffer<double>(n, s, "the multigrid's work vector");
      }
      if (l + 1 < mg.levels()) {
        v.parent = upload_async(mg.parent(l).data(), n, s, "the multigrid's blocks");
        v.first = upload_async(mg.first(l).data(), mg.first(l).size(), s, "the multigrid's blocks");
        v.children = upload_async(mg.children(l).data(), n, s, "the multigrid's blocks");
      }
      levels_.push_back(std::move(v));
    }
    const std::vector<double> inverse = mg.coarsest_inverse();
    inverse_ = upload_async(inverse.data(), inverse.size(), s, "the multigrid's coarsest inverse");
  }

  const int32_t* nb() const { return levels_.front().nb.data(); }
  const double* w() const { return levels_.front().w.data(); }
  const double* diag() const { return levels_.front().diag.data(); }

  // z = M⁻¹ r on the finest level, queued on the stream.
  void apply(const double* r, double* z) { cycle(0, r, z); }

 private:
  struct Level {
    int64_t n = 0;
    DeviceBuffer<int32_t> nb, parent, first, children;
    DeviceBuffer<double> w, diag, b, x, other;
  };

  void cycle(std::size_t l, const double* b, double* x) {
    Level& v = levels_[l];
    const unsigned blocks = blocks_for(v.n);
    if (l + 1 == levels_.size()) {
      mg_coarsest<<<blocks, kThreads, 0, stream_>>>(v.n, inverse_.data(), b, x);
      PF_CUDA_CHECK_LAUNCH(stream_);
      return;
    }
    // 2 × sweeps − 1 sweeps follow the first, an odd count: started in `other`, the cycle
    // alternates and ends in x.
    double* cur = v.other.data();
    double* next = x;
    auto sweep = [&] {
      mg_sweep<<<blocks, kThreads, 0, stream_>>>(v.n, v.nb.data(), v.w.data(), v.diag.data(), b, cur, next);
      PF_CUDA_CHECK_LAUNCH(stream_);
      std::swap(cur, next);
    };
    mg_first_sweep<<<blocks, kThreads, 0, stream_>>>(v.n, v.diag.data(), b, cur);
    PF_CUDA_CHECK_LAUNCH(stream_);
    for (int k = 1; k < cpu::multigrid::sweeps; ++k) sweep();
    Level& c = levels_[l + 1];
    mg_restrict<<<blocks_for(c.n), kThreads, 0, stream_>>>(c.n, v.first.data(), v.children.data(), v.nb.data(),
                                                           v.w.data(), v.diag.data(), b, cur, c.b.data());
    PF_CUDA_CHECK_LAUNCH(stream_);
    cycle(l + 1, c.b.data(), c.x.data());
    mg_prolong<<<blocks, kThreads, 0, stream_>>>(v.n, v.parent.data(), c.x.data(), cur);
    PF_CUDA_CHECK_LAUNCH(stream_);
    for (int k = 0; k < cpu::multigrid::sweeps; ++k) sweep();
  }

  cudaStream_t stream_;
  std::vector<Level> levels_;
  DeviceBuffer<double> inverse_;
};

}  // namespace

FormationFactorResult formation_factor(const Mask& pore, int axis, const FormationFactorOptions& options,
                                       const ComponentLabels* components6, const float* radius) {
  FormationFactorResult r;
  // The spanning cluster, its system and the multigrid hierarchy are built on the host,
  // shared with the CPU.
  const std::optional<detail::SpanningCluster> spanning =
      detail::start_formation_factor(r, pore, axis, options, Backend::cuda, components6);
  if (!spanning) return r;
  detail::LaplaceSystem system = detail::laplace_system(pore, *spanning, axis, radius);
  const int64_t n = system.op.size();
  const std::size_t un = static_cast<std::size_t>(n);
  Stream stream;
  const cudaStream_t s = stream.get();
  DeviceMultigrid mg(cpu::Multigrid(std::move(system.op), kCoarsestUnknowns), s);
  DeviceBuffer<double> b = upload_async(system.b.data(), un, s, "the formation factor's reservoirs");
  DeviceBuffer<double> x(un, s, "the potential"), res(un, s, "the residual"), z(un, s, "the preconditioned residual"),
      p(un, s, "the search direction"), q(un, s, "the operator's image");
  // Iteration j of a chunk reads rz[j] and writes rz[j + 1], pq[j] and rr[j]; two chunks
  // alternate, each cleared as it starts while the last rz of the other carries over.
  constexpr int kCheckEvery = 4;
  constexpr int kChunk = 3 * kCheckEvery;
  DeviceBuffer<double> scalars(2 * kChunk + 3, s, "the solver's scalars");
  double* d_rz_start = scalars.data() + 2 * kChunk;
  double* d_bb = d_rz_start + 1;
  double* d_current = d_rz_start + 2;
  PF_CUDA_CHECK(cudaMemsetAsync(scalars.data(), 0, scalars.bytes(), s));
  const unsigned blocks = blocks_for(n);
  cg_start<<<blocks, kThreads, 0, s>>>(n, b.data(), x.data(), res.data(), d_bb);
  PF_CUDA_CHECK_LAUNCH(s);
  mg.apply(res.data(), z.data());
  dot<<<blocks, kThreads, 0, s>>>(n, res.data(), z.data(), d_rz_start);
  PF_CUDA_CHECK_LAUNCH(s);
  PF_CUDA_CHECK(cudaMemcpyAsync(p.data(), z.data(), z.bytes(), cudaMemcpyDeviceToDevice, s));
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
      cg_apply<<<blocks, kThreads, 0, s>>>(n, mg.nb(), mg.w(), mg.diag(), p.data(), q.data(), d_pq);
      PF_CUDA_CHECK_LAUNCH(s);
      cg_update<<<blocks, kThreads, 0, s>>>(n, p.data(), q.data(), x.data(), res.data(), d_rz, d_pq, d_rr);
      PF_CUDA_CHECK_LAUNCH(s);
      mg.apply(res.data(), z.data());
      dot<<<blocks, kThreads, 0, s>>>(n, res.data(), z.data(), d_rz_new);
      PF_CUDA_CHECK_LAUNCH(s);
      cg_direction<<<blocks, kThreads, 0, s>>>(n, z.data(), p.data(), d_rz, d_rz_new);
      PF_CUDA_CHECK_LAUNCH(s);
      d_rz = d_rz_new;
    }
    rr = read_scalar(d_rr, s);
  }
  inlet_current<<<blocks, kThreads, 0, s>>>(n, b.data(), x.data(), d_current);
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

PermeabilityResult permeability(const Mask& pore, int axis, const PermeabilityOptions& options,
                                const ComponentLabels* components6) {
  PermeabilityResult r;
  if (!detail::start_permeability(r, pore, axis, options, Backend::cuda, components6)) return r;
  const detail::LatticeSetup setup = detail::lattice_setup(pore, axis, options);
  Stream stream;
  DeviceLattice lattice(setup, stream.get());
  detail::run_to_steady_state(r, lattice, setup.voxels, options);
  detail::finish_permeability(r, options);
  return r;
}

}  // namespace poreforge::cuda
