#pragma once
// Exact EDT on the device, one pass per axis that is not flat, x then y then z, so squared
// distances are summed in the same order as on the CPU (detail::squared_norm): the results
// are bit-identical.
//
//  - x: one warp per row, two sweeps of lane scans for the nearest background voxel.
//  - y, z: a block loads a tile of up to 32 adjacent lines into shared memory (coalesced:
//    adjacent threads read adjacent x), then each output is the minimum of f(q) + term(p − q)
//    found by searching outwards from p until term alone reaches the best value so far — the
//    work per voxel is proportional to its distance, and the pass runs in place.
#include <cuda_runtime.h>

#include <type_traits>

#include "../common/geometry.hpp"
#include "../common/metric.hpp"
#include "poreforge/volume.hpp"

namespace poreforge::cuda::kernels {

using detail::Geometry;

// x pass: d = term(distance to the nearest non-phase voxel along the row), or infinity.
// One warp per row, 32 voxels at a time (coalesced): a prefix-max scan over the lanes finds
// the last background voxel at or before each voxel, a suffix-min scan the next one, each
// carried from chunk to chunk. The forward sweep parks p − last in the output, the backward
// sweep (same lane, same voxel) finishes it.
// `invert` swaps the roles: voxels with mask ≠ 0 are the background (the morphology measures
// from the set to dilate it). On the last pass, `unreachable` (when given) is set to 1 if a
// voxel is left at infinity: it had no background to measure from.
template <class M>
__global__ void edt_rows(const uint8_t* __restrict__ mask, typename M::value_type* __restrict__ d, Geometry g, M m,
                         bool invert = false, unsigned int* unreachable = nullptr) {
  using V = typename M::value_type;
  constexpr unsigned full = 0xFFFFFFFFu;
  // Positions are below 2^15 (validate_shape): 32-bit scans, half the shuffles of 64-bit ones.
  constexpr int low = -(1 << 30), high = 1 << 30;  // "no background on this side"
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t(gridDim.x) * blockDim.x) >> 5;
  const int64_t rows = g.ny * g.nz;
  const int n = int(g.nx);
  const Boundary b = g.along(0);
  bool left_at_infinity = false;
  for (int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; row < rows; row += warps) {
    const uint8_t* in = mask + row * n;
    V* out = d + row * n;
    int last = b == Boundary::wall ? -1 : low;
    int next = b == Boundary::wall ? n : high;
    if (b == Boundary::periodic) {  // the row's last and first background voxels, as images
      int last_bg = -1, first_bg = n;
      for (int p = lane; p < n; p += 32)
        if ((in[p] != 0) == invert) {
          last_bg = p > last_bg ? p : last_bg;
          first_bg = p < first_bg ? p : first_bg;
        }
      for (int o = 16; o > 0; o >>= 1) {
        const int a = __shfl_xor_sync(full, last_bg, o), c = __shfl_xor_sync(full, first_bg, o);
        last_bg = a > last_bg ? a : last_bg;
        first_bg = c < first_bg ? c : first_bg;
      }
      if (last_bg >= 0) {
        last = last_bg - n;
        next = first_bg + n;
      }
    }
    for (int c0 = 0; c0 < n; c0 += 32) {
      const int p = c0 + lane;
      int v = p < n && (in[p] != 0) == invert ? p : low;
      for (int o = 1; o < 32; o <<= 1) {
        const int t = __shfl_up_sync(full, v, o);
        if (lane >= o && t > v) v = t;
      }
      if (last > v) v = last;
      last = __shfl_sync(full, v, 31);
      if (p < n) out[p] = v == low ? M::infinity : V(p - v);
    }
    for (int c0 = ((n - 1) / 32) * 32; c0 >= 0; c0 -= 32) {
      const int p = c0 + lane;
      int v = p < n && (in[p] != 0) == invert ? p : high;
      for (int o = 1; o < 32; o <<= 1) {
        const int t = __shfl_down_sync(full, v, o);
        if (lane + o < 32 && t < v) v = t;
      }
      if (next < v) v = next;
      next = __shfl_sync(full, v, 0);
      if (p < n) {
        const V back = out[p];
        int dist = v == high ? -1 : v - p;
        if (back != M::infinity) {
          const int f = static_cast<int>(back);
          dist = dist < 0 || f < dist ? f : dist;
        }
        out[p] = dist < 0 ? M::infinity : m.term(dist, 0);
        left_at_infinity |= dist < 0;
      }
    }
  }
  if (unreachable && left_at_infinity) *unreachable = 1;
}

// The line along `axis` (1 or 2) through column x at `other` (z for axis 1, y for axis 2):
// its first voxel and the stride between its voxels.
struct Line {
  int64_t base, stride;
  __device__ static Line of(const Geometry& g, int axis, int64_t other, int64_t x) {
    return axis == 1 ? Line{other * g.nx * g.ny + x, g.nx} : Line{other * g.nx + x, g.nx * g.ny};
  }
};

// Lines along `axis` (1 or 2). Block: blockDim.x adjacent x, blockDim.y threads along the line;
// blockIdx.x picks the x tile, blockIdx.y the remaining coordinate (z for axis 1, y for axis 2).
// `unreachable` as in edt_rows.
template <class M>
__global__ void edt_lines(typename M::value_type* __restrict__ d, Geometry g, int axis, M m,
                          unsigned int* unreachable = nullptr) {
  using V = typename M::value_type;
  extern __shared__ unsigned char shared_raw[];
  V* tile = reinterpret_cast<V*>(shared_raw);
  // Extents are below 2^15 (validate_shape): 32-bit positions and offsets in the search.
  const int n = int(g.extent(axis));
  const int tx = threadIdx.x, width = blockDim.x;
  const int64_t x = int64_t(blockIdx.x) * width + tx;
  const auto [base, stride] = Line::of(g, axis, blockIdx.y, x);
  const bool active = x < g.nx;
  for (int p = threadIdx.y; p < n; p += blockDim.y)
    tile[p * width + tx] = active ? d[base + p * stride] : V(0);
  __syncthreads();
  if (!active) return;
  const Boundary b = g.along(axis);
  const V* column = tile + tx;
  bool left_at_infinity = false;
  for (int p = threadIdx.y; p < n; p += blockDim.y) {
    V best = column[p * width];
    if constexpr (std::is_same_v<M, detail::VoxelMetric>) {
      // Integer distances, the common case: when every offset the search can reach — those
      // with dd² < best ≤ f(p) — stays inside the line, no face or boundary rule applies, and
      // the search runs without bounds checks, two offsets at a time. It still stops where
      // dd² reaches the best value, and may look one offset further (harmless: that
      // candidate is no smaller than the best). An infinite f(p) takes the general search.
      if (best != M::infinity) {
        const int reach = best == 0 ? 0 : int(detail::chord_half_width(m, best, 2, 0, 0));  // largest dd² < best
        if (p - reach - 1 >= 0 && p + reach + 1 < n) {
          const V* c = column + p * width;
          const int step = width;
          for (int dd = 1; dd <= reach; dd += 2) {
            const V t1 = V(dd) * V(dd), t2 = V(dd + 1) * V(dd + 1);
            if (!(t1 < best)) break;
            // f ≤ infinity; a sum with infinity wraps, so those are kept apart.
            const V a1 = c[-dd * step], b1 = c[dd * step], a2 = c[-(dd + 1) * step], b2 = c[(dd + 1) * step];
            const V f1 = a1 < b1 ? a1 : b1, f2 = a2 < b2 ? a2 : b2;
            if (f1 != M::infinity && f1 + t1 < best) best = f1 + t1;
            if (f2 != M::infinity && f2 + t2 < best) best = f2 + t2;
          }
          d[base + int64_t(p) * stride] = best;
          continue;
        }
      }
    }
    // Offsets beyond `reach` see no more voxels: the far face (open), the wall voxel just
    // past it (wall), or half the period (periodic, where offsets ±d and ∓(n−d) coincide).
    const int reach = b == Boundary::periodic ? n / 2 : b == Boundary::wall ? (p + 1 > n - p ? p + 1 : n - p)
                                                                          : (p > n - 1 - p ? p : n - 1 - p);
    for (int dd = 1; dd <= reach; ++dd) {
      const V t = m.term(dd, axis);
      if (!(t < best)) break;  // every further candidate is ≥ t ≥ best
      for (int side = -1; side <= 1; side += 2) {
        int q = p + side * dd;
        V f;
        if (q >= 0 && q < n) {
          f = column[q * width];
        } else if (b == Boundary::periodic) {
          q = q < 0 ? q + n : q - n;
          f = column[q * width];
        } else if (b == Boundary::wall && (q == -1 || q == n)) {
          f = V(0);
        } else {
          continue;
        }
        if (f == M::infinity) continue;
        const V v = M::add(f, t);
        if (v < best) best = v;
      }
    }
    d[base + int64_t(p) * stride] = best;
    left_at_infinity |= best == M::infinity;
  }
  if (unreachable && left_at_infinity) *unreachable = 1;
}

}  // namespace poreforge::cuda::kernels
