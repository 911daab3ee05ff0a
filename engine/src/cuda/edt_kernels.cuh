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

// The x pass of one row of n ≤ 1024 voxels by a warp, from bit words: lane c keeps the
// ballot of chunk c (voxels 32c … 32c + 31, 1 = background), a scan over the lanes gives
// each chunk the last background voxel before it and the first after it, and each voxel's
// nearest on either side is a bit search in its own chunk's word. The mask is read once and
// the output written once; the two-sweep loop below reads the mask twice and the output back
// (14 bytes a voxel moved against 5; docs/performance.md). The boundary rule is
// a virtual background beyond each end of the row (left_end, right_end; low / high: none).
// Returns whether a voxel was left at infinity.
template <class M>
__device__ bool edt_row_by_words(const uint8_t* __restrict__ in, typename M::value_type* __restrict__ out, int n,
                                 Boundary b, const M& m, bool invert, int lane) {
  using V = typename M::value_type;
  constexpr unsigned full = 0xFFFFFFFFu;
  constexpr int low = -(1 << 30), high = 1 << 30;
  const int chunks = (n + 31) / 32;
  unsigned int word = 0;  // chunk `lane`'s background bits
#pragma unroll 4
  for (int c = 0; c < chunks; ++c) {
    const int p = c * 32 + lane;
    const unsigned int bits = __ballot_sync(full, p < n && (in[p] != 0) == invert);
    if (lane == c) word = bits;
  }
  // Per chunk: its last and first background voxel (low / high: none), then running extrema.
  int last = word ? lane * 32 + 31 - __clz(word) : low;
  int first = word ? lane * 32 + __ffs(word) - 1 : high;
  for (int o = 1; o < 32; o <<= 1) {
    const int before = __shfl_up_sync(full, last, o), after = __shfl_down_sync(full, first, o);
    if (lane >= o && before > last) last = before;
    if (lane + o < 32 && after < first) first = after;
  }
  // The row's virtual background beyond each end.
  int left_end = b == Boundary::wall ? -1 : low, right_end = b == Boundary::wall ? n : high;
  if (b == Boundary::periodic) {
    const int row_last = __shfl_sync(full, last, 31), row_first = __shfl_sync(full, first, 0);
    if (row_last != low) left_end = row_last - n, right_end = row_first + n;
  }
  // Chunk c's neighbours: the last background before it, the first after it.
  int before = __shfl_up_sync(full, last, 1), after = __shfl_down_sync(full, first, 1);
  if (lane == 0 || before == low) before = left_end;
  if (lane == 31 || after == high) after = right_end;
  bool unreachable = false;
  const unsigned int at_or_below = lane == 31 ? full : (2u << lane) - 1u, at_or_above = ~((1u << lane) - 1u);
  for (int c = 0; c < chunks; ++c) {
    const unsigned int w = __shfl_sync(full, word, c);
    const int chunk_before = __shfl_sync(full, before, c), chunk_after = __shfl_sync(full, after, c);
    const int p = c * 32 + lane;
    const unsigned int left_bits = w & at_or_below, right_bits = w & at_or_above;
    const int left = left_bits ? c * 32 + 31 - __clz(left_bits) : chunk_before;
    const int right = right_bits ? c * 32 + __ffs(right_bits) - 1 : chunk_after;
    const int to_left = left == low ? high : p - left, to_right = right == high ? high : right - p;
    const int dist = to_left < to_right ? to_left : to_right;
    if (p < n) {
      out[p] = dist == high ? M::infinity : m.term(dist, 0);
      unreachable |= dist == high;
    }
  }
  return unreachable;
}

// x pass: d = term(distance to the nearest non-phase voxel along the row), or infinity.
// One warp per row. Rows of up to 1024 voxels: edt_row_by_words. Longer rows, 32 voxels at
// a time (coalesced): a prefix-max scan over the lanes finds the last background voxel at or
// before each voxel, a suffix-min scan the next one, each carried from chunk to chunk. The
// forward sweep parks p − last in the output, the backward sweep (same lane, same voxel)
// finishes it.
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
    if (n <= 1024) {
      left_at_infinity |= edt_row_by_words(in, out, n, b, m, invert, lane);
      continue;
    }
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
