#pragma once
// Device pieces every thickness path shares after the EDT: the ball-centre test, the status
// flags and the radius conversion. The centres are the phase voxels whose lattice ball is
// not inside a 26-neighbour's lattice ball (the exact table of common/ball_containment.hpp,
// as on the CPU, engine/src/cpu/local_thickness.cpp); coverage_kernels.cuh groups and
// paints them, for the map and for the PSD-only path.
#include <cuda_runtime.h>

#include "../common/ball_containment.hpp"
#include "../common/metric.hpp"
#include "edt_kernels.cuh"

namespace poreforge::cuda::kernels {

constexpr int kCentreThreads = 256;
constexpr int kCentreItems = 8;  // voxels per thread: a chunk is 2048 voxels
constexpr int64_t kCentreChunk = int64_t(kCentreThreads) * kCentreItems;

struct Status {
  unsigned int no_background;  // a phase voxel was left at infinity
  unsigned int overflow;       // more centres than capacity
};

template <class M>
__device__ bool is_centre(const typename M::value_type* d2, int64_t i, const Geometry& g,
                          const detail::ContainmentView<M>& table) {
  using V = typename M::value_type;
  const V r2 = d2[i];
  if (r2 == V(0) || r2 == M::infinity) return false;
  int64_t x, y, z;
  g.split(uint32_t(i), x, y, z);
  const int64_t t = table.thresholds(r2);
  // Interior voxels (most of them) within the tables: the 26 neighbours at fixed offsets, no
  // face checks. "Inside the neighbour's ball" is monotone in the neighbour's squared radius
  // and depends on the offset only through which axes it moves along (7 classes), so the
  // largest neighbour of each class decides for its class: 26 loads and maxima, then at most
  // 7 table look-ups, instead of a look-up per neighbour.
  if (t >= 0 && x > 0 && x < g.nx - 1 && y > 0 && y < g.ny - 1 && z > 0 && z < g.nz - 1) {
    const int64_t plane = g.nx * g.ny, row = g.nx;
    const V* c = d2 + i;
    auto larger = [](V a, V b) { return a > b ? a : b; };
    V most[8];  // most[k]: the largest neighbour of class k (bit 0: moves in x, 1: y, 2: z)
    most[1] = larger(c[-1], c[1]);
    most[2] = larger(c[-row], c[row]);
    most[4] = larger(c[-plane], c[plane]);
    most[3] = larger(larger(c[-row - 1], c[-row + 1]), larger(c[row - 1], c[row + 1]));
    most[5] = larger(larger(c[-plane - 1], c[-plane + 1]), larger(c[plane - 1], c[plane + 1]));
    most[6] = larger(larger(c[-plane - row], c[-plane + row]), larger(c[plane - row], c[plane + row]));
    most[7] = larger(larger(larger(c[-plane - row - 1], c[-plane - row + 1]), larger(c[-plane + row - 1], c[-plane + row + 1])),
                     larger(larger(c[plane - row - 1], c[plane - row + 1]), larger(c[plane + row - 1], c[plane + row + 1])));
#pragma unroll
    for (int k = 1; k < 8; ++k)
      if (table.inside(r2, t, most[k], k & 1, k >> 1 & 1, k >> 2 & 1)) return false;
    return true;
  }
  const bool periodic = g.boundary == Boundary::periodic;
  for (int dz = -1; dz <= 1; ++dz) {
    if (dz && g.nz == 1) continue;
    int64_t zz = z + dz;
    if (zz < 0 || zz >= g.nz) {
      if (!periodic) continue;
      zz = zz < 0 ? zz + g.nz : zz - g.nz;
    }
    for (int dy = -1; dy <= 1; ++dy) {
      if (dy && g.ny == 1) continue;
      int64_t yy = y + dy;
      if (yy < 0 || yy >= g.ny) {
        if (!periodic) continue;
        yy = yy < 0 ? yy + g.ny : yy - g.ny;
      }
      for (int dx = -1; dx <= 1; ++dx) {
        if ((!dx && !dy && !dz) || (dx && g.nx == 1)) continue;
        int64_t xx = x + dx;
        if (xx < 0 || xx >= g.nx) {
          if (!periodic) continue;
          xx = xx < 0 ? xx + g.nx : xx - g.nx;
        }
        if (table.inside(r2, t, d2[(zz * g.ny + yy) * g.nx + xx], dx, dy, dz)) return false;
      }
    }
  }
  return true;
}

// A chunk's voxels are striped over the block: item k of thread t is voxel
// chunk start + k·kCentreThreads + t, so a warp's loads of a voxel and of each of its
// neighbours are 32 consecutive values, and a warp's 32 voxels start at a multiple of 32.
__device__ inline int64_t striped_voxel(int k) {
  return int64_t(blockIdx.x) * kCentreChunk + int64_t(k) * kCentreThreads + threadIdx.x;
}

template <class M>
__global__ void radius_of(const typename M::value_type* __restrict__ d2, float* __restrict__ out, int64_t voxels, M m) {
  using V = typename M::value_type;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < voxels; i += int64_t(gridDim.x) * blockDim.x) {
    const V v = d2[i];
    out[i] = v == V(0) || v == M::infinity ? 0.0f : m.radius(v);
  }
}

}  // namespace poreforge::cuda::kernels
