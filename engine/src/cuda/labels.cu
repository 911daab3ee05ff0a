// Connected-component labelling on the device: union-find in the style of Playne & Hawick
// ("A new algorithm for parallel connected-component labelling on GPUs", 2018). Every phase
// voxel starts as its own root; each voxel unites with its backward neighbours, linking the
// larger root under the smaller by atomicMin (retrying when another thread moved the root
// first); a last pass points every voxel at its root. Roots end up as the smallest index of
// their component, which is what the host's canonical numbering expects.
#include <cuda_runtime.h>

#include <algorithm>

#include "../measures_detail.hpp"
#include "buffer.cuh"
#include "check.cuh"
#include "labels.hpp"
#include "poreforge/error.hpp"

namespace poreforge::cuda {
namespace {

constexpr int kThreads = 256;
constexpr uint32_t kNone = detail::kNoRoot;

// Reads through volatile: other threads lower parents while this one walks, and a retry in
// unite() must see their writes rather than a value the compiler kept in a register.
__device__ __forceinline__ uint32_t find_root(const volatile uint32_t* parent, uint32_t i) {
  uint32_t p = parent[i];
  while (p != i) {
    i = p;
    p = parent[i];
  }
  return i;
}

__device__ void unite(uint32_t* parent, uint32_t a, uint32_t b) {
  bool done = false;
  while (!done) {
    a = find_root(parent, a);
    b = find_root(parent, b);
    if (a == b) return;
    if (a > b) {
      const uint32_t t = a;
      a = b;
      b = t;
    }
    // Link b under a unless b stopped being a root meanwhile; then try again from b's parent.
    const uint32_t old = atomicMin(&parent[b], a);
    done = old == b;
    b = old;
  }
}

__global__ void init_kernel(const uint8_t* d_mask, uint32_t* d_parent, uint64_t n) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x)
    d_parent[i] = d_mask[i] ? uint32_t(i) : kNone;
}

__global__ void unite_kernel(const uint8_t* d_mask, uint32_t* d_parent, int64_t nx, int64_t ny, int64_t nz,
                             bool full26) {
  const uint64_t n = uint64_t(nx * ny * nz);
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x) {
    if (!d_mask[i]) continue;
    const int64_t x = int64_t(i % uint64_t(nx)), y = int64_t((i / uint64_t(nx)) % uint64_t(ny)),
                  z = int64_t(i / uint64_t(nx * ny));
    for (int dz = -1; dz <= 0; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          if (dz == 0 && (dy > 0 || (dy == 0 && dx >= 0))) continue;  // backward neighbours only
          if (!full26 && (dx != 0) + (dy != 0) + (dz != 0) != 1) continue;
          const int64_t a = x + dx, b = y + dy, c = z + dz;
          if (a < 0 || b < 0 || c < 0 || a >= nx || b >= ny) continue;
          const uint64_t j = uint64_t((c * ny + b) * nx + a);
          if (d_mask[j]) unite(d_parent, uint32_t(i), uint32_t(j));
        }
  }
}

__global__ void compress_kernel(uint32_t* d_parent, uint64_t n) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x) {
    const uint32_t p = d_parent[i];
    if (p != kNone) d_parent[i] = find_root(d_parent, uint32_t(i));
  }
}

unsigned grid_for(uint64_t n) { return unsigned(std::clamp<uint64_t>((n + kThreads - 1) / kThreads, 1, 65535u * 16u)); }

}  // namespace

std::vector<uint32_t> component_roots(const Mask& phase, Adjacency adjacency) {
  const Shape s = phase.shape();
  detail::require_labelable(s);
  const uint64_t n = uint64_t(s.voxels());
  Stream stream;
  DeviceBuffer<uint8_t> d_mask = upload_async(phase.data(), std::size_t(n), stream.get(), "the labelling's mask");
  DeviceBuffer<uint32_t> d_parent(std::size_t(n), stream.get(), "the labelling's roots");
  init_kernel<<<grid_for(n), kThreads, 0, stream.get()>>>(d_mask.data(), d_parent.data(), n);
  PF_CUDA_CHECK_LAUNCH(stream.get());
  unite_kernel<<<grid_for(n), kThreads, 0, stream.get()>>>(d_mask.data(), d_parent.data(), s.nx, s.ny, s.nz,
                                                           adjacency == Adjacency::full26);
  PF_CUDA_CHECK_LAUNCH(stream.get());
  compress_kernel<<<grid_for(n), kThreads, 0, stream.get()>>>(d_parent.data(), n);
  PF_CUDA_CHECK_LAUNCH(stream.get());
  std::vector<uint32_t> roots(static_cast<std::size_t>(n));
  PF_CUDA_CHECK(cudaMemcpyAsync(roots.data(), d_parent.data(), d_parent.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  PF_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  return roots;
}

}  // namespace poreforge::cuda
