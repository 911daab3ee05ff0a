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

// The neighbour maxima of one voxel's yz-cross for is_centre_in_warp: the largest of the ±y
// neighbours, of the ±z ones, and of the four yz-diagonals. `c` points at the voxel.
template <class V>
struct CrossMaxima {
  V y, z, yz;
};
template <class V>
__device__ CrossMaxima<V> cross_maxima(const V* c, int64_t row, int64_t plane) {
  auto larger = [](V a, V b) { return a > b ? a : b; };
  return {larger(c[-row], c[row]), larger(c[-plane], c[plane]),
          larger(larger(c[-plane - row], c[-plane + row]), larger(c[plane - row], c[plane + row]))};
}

// is_centre for the 32 consecutive voxels i0 … i0 + 31 of a warp (i0 a multiple of 32; every
// lane calls it, r2 = d2[i], 0 outside the phase or the volume). The 26 neighbours fall into
// the same 7 classes as in is_centre, and a class's largest neighbour is a maximum over the
// voxel's own yz-cross (9 loads: itself, ±y, ±z, the yz-diagonals) and those of the voxels
// either side in x, which are the lanes either side: shuffles, and for the warp's two end
// lanes one more cross each. The seven thresholds of the ball's shell are loaded together
// with the crosses and compared without a load between: the test of is_centre is a chain of
// up to seven dependent look-ups, and count_classes waited on such chains
// (docs/performance.md). Voxels the fast path does not take (a y or z face of the volume, an x
// face of a periodic one, beyond the tables, or a warp whose loads would leave the volume)
// go to is_centre. Returns whether voxel i is a centre.
template <class M>
__device__ bool is_centre_in_warp(const typename M::value_type* __restrict__ d2, int64_t i,
                                  typename M::value_type r2, int64_t voxels, const Geometry& g,
                                  const detail::ContainmentView<M>& table) {
  using V = typename M::value_type;
  constexpr unsigned int kWarp = 0xFFFFFFFFu;
  const bool phase = r2 != V(0);
  if (!__any_sync(kWarp, phase)) return false;
  const int lane = int(threadIdx.x & 31);
  const int64_t row = g.nx, plane = g.nx * g.ny, i0 = i - lane;
  bool decided = false, centre = false;
  // Warp-uniform: the crosses of voxels i0 − 1 … i0 + 32 lie inside the volume.
  if (g.nz > 2 && i0 - 1 - plane - row >= 0 && i0 + 32 + plane + row < voxels) {
    const int64_t t = phase && r2 != M::infinity ? table.thresholds(r2) : -1;
    const CrossMaxima<V> own = cross_maxima(d2 + i, row, plane);
    CrossMaxima<V> end{};
    V end_value{};
    if (lane == 0 || lane == 31) {  // the voxel beyond the warp's end on this lane's side
      const V* c = d2 + (lane == 0 ? i - 1 : i + 1);
      end = cross_maxima(c, row, plane);
      end_value = *c;
    }
    V reach[7] = {};  // thresholds by class 1 … 7 (ContainmentView::inside)
    if (t >= 0)
#pragma unroll
      for (int k = 0; k < 7; ++k) reach[k] = table.reach[t + k];
    auto from = [&](V mine, V end_one, int delta, int edge_lane) {
      const V other = delta < 0 ? __shfl_up_sync(kWarp, mine, 1) : __shfl_down_sync(kWarp, mine, 1);
      return lane == edge_lane ? end_one : other;
    };
    auto larger = [](V a, V b) { return a > b ? a : b; };
    V value_left = from(r2, end_value, -1, 0), value_right = from(r2, end_value, 1, 31);
    V y_left = from(own.y, end.y, -1, 0), y_right = from(own.y, end.y, 1, 31);
    V z_left = from(own.z, end.z, -1, 0), z_right = from(own.z, end.z, 1, 31);
    V yz_left = from(own.yz, end.yz, -1, 0), yz_right = from(own.yz, end.yz, 1, 31);
    if (t >= 0) {
      int64_t x, y, z;
      g.split(uint32_t(i), x, y, z);
      // The x faces: a row's end voxel has no neighbour beyond it (open and wall; periodic
      // wraps, is_centre's case) — the lane beside it holds the next row's voxel, so that
      // side counts as none (0 contains nothing). Sent to is_centre, a warp paid for its
      // lane's 26 look-ups in a row; at 128³ half the warps hold a row's end.
      const bool wrap_x = g.along(0) == Boundary::periodic;
      if ((!wrap_x || (x > 0 && x < g.nx - 1)) && y > 0 && y < g.ny - 1 && z > 0 && z < g.nz - 1) {
        if (x == 0) value_left = y_left = z_left = yz_left = V(0);
        if (x == g.nx - 1) value_right = y_right = z_right = yz_right = V(0);
        V most[8];  // most[k]: the largest neighbour of class k (bit 0: moves in x, 1: y, 2: z)
        most[1] = larger(value_left, value_right);
        most[2] = own.y;
        most[3] = larger(y_left, y_right);
        most[4] = own.z;
        most[5] = larger(z_left, z_right);
        most[6] = own.yz;
        most[7] = larger(yz_left, yz_right);
        decided = true;
        centre = true;
#pragma unroll
        for (int k = 1; k < 8; ++k)  // ContainmentView::inside with the thresholds at hand
          if (most[k] > r2 && most[k] > reach[k - 1]) centre = false;
      }
    }
  }
  if (!phase) return false;
  return decided ? centre : is_centre(d2, i, g, table);
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
