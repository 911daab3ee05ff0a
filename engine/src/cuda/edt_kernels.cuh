#pragma once
// Exact EDT on the device, one pass per axis that is not flat, x then y then z, so squared
// distances are summed in the same order as on the CPU (detail::squared_norm): the results
// are bit-identical.
//
//  - x: one thread per row, two sweeps for the nearest background voxel along the row.
//  - y, z: a block loads a tile of up to 32 adjacent lines into shared memory (coalesced:
//    adjacent threads read adjacent x), then each output is the minimum of f(q) + term(p − q)
//    found by searching outwards from p until term alone reaches the best value so far — the
//    work per voxel is proportional to its distance, and the pass runs in place.
#include <cuda_runtime.h>

#include "../common/metric.hpp"
#include "poreforge/volume.hpp"

namespace poreforge::cuda::kernels {

struct Geometry {
  int64_t nx, ny, nz;
  Boundary boundary;
  __host__ __device__ int64_t extent(int axis) const { return axis == 0 ? nx : axis == 1 ? ny : nz; }
  // Flat axes (extent 1) have no faces: the boundary mode does not apply along them.
  __host__ __device__ Boundary along(int axis) const { return extent(axis) > 1 ? boundary : Boundary::open; }
};

// x pass: d = term(distance to the nearest non-phase voxel along the row), or infinity.
template <class M>
__global__ void edt_rows(const uint8_t* __restrict__ mask, typename M::value_type* __restrict__ d, Geometry g, M m) {
  using V = typename M::value_type;
  const int64_t rows = g.ny * g.nz;
  const int64_t n = g.nx;
  const Boundary b = g.along(0);
  for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < rows; r += int64_t(gridDim.x) * blockDim.x) {
    const uint8_t* row = mask + r * n;
    V* out = d + r * n;
    constexpr int64_t none = INT64_MIN / 4;
    // Nearest background at or before p (forward) and at or after p (backward).
    int64_t last = b == Boundary::wall ? -1 : none;
    int64_t next_after = b == Boundary::wall ? n : -none;
    if (b == Boundary::periodic) {
      for (int64_t q = n - 1; q >= 0; --q)
        if (!row[q]) { last = q - n; break; }
      for (int64_t q = 0; q < n; ++q)
        if (!row[q]) { next_after = q + n; break; }
    }
    // Forward sweep stores the distance back to `last` (or none) in `out` as an integer.
    for (int64_t p = 0; p < n; ++p) {
      if (!row[p]) last = p;
      out[p] = last == none ? M::infinity : V(p - last);
    }
    for (int64_t p = n - 1; p >= 0; --p) {
      if (!row[p]) next_after = p;
      const V back = out[p];
      int64_t dist = next_after == -none ? -1 : next_after - p;
      if (back != M::infinity) {
        const int64_t f = static_cast<int64_t>(back);
        dist = dist < 0 ? f : (f < dist ? f : dist);
      }
      out[p] = dist < 0 ? M::infinity : m.term(dist, 0);
    }
  }
}

// Lines along `axis` (1 or 2). Block: blockDim.x adjacent x, blockDim.y threads along the line;
// blockIdx.x picks the x tile, blockIdx.y the remaining coordinate (z for axis 1, y for axis 2).
template <class M>
__global__ void edt_lines(typename M::value_type* __restrict__ d, Geometry g, int axis, M m) {
  using V = typename M::value_type;
  extern __shared__ unsigned char shared_raw[];
  V* tile = reinterpret_cast<V*>(shared_raw);
  const int64_t n = g.extent(axis);
  const int tx = threadIdx.x, width = blockDim.x;
  const int64_t x = int64_t(blockIdx.x) * width + tx;
  const int64_t other = blockIdx.y;
  const int64_t stride = axis == 1 ? g.nx : g.nx * g.ny;
  const int64_t base = axis == 1 ? other * g.nx * g.ny + x : other * g.nx + x;
  const bool active = x < g.nx;
  for (int64_t p = threadIdx.y; p < n; p += blockDim.y)
    tile[p * width + tx] = active ? d[base + p * stride] : V(0);
  __syncthreads();
  if (!active) return;
  const Boundary b = g.along(axis);
  for (int64_t p = threadIdx.y; p < n; p += blockDim.y) {
    V best = tile[p * width + tx];
    // Offsets beyond `reach` see no more voxels: the far face (open), the wall voxel just
    // past it (wall), or half the period (periodic, where offsets ±d and ∓(n−d) coincide).
    const int64_t reach = b == Boundary::periodic ? n / 2 : b == Boundary::wall ? (p + 1 > n - p ? p + 1 : n - p)
                                                                              : (p > n - 1 - p ? p : n - 1 - p);
    for (int64_t dd = 1; dd <= reach; ++dd) {
      const V t = m.term(dd, axis);
      if (!(t < best)) break;  // every further candidate is ≥ t ≥ best
      for (int side = -1; side <= 1; side += 2) {
        int64_t q = p + side * dd;
        V f;
        if (q >= 0 && q < n) {
          f = tile[q * width + tx];
        } else if (b == Boundary::periodic) {
          q = q < 0 ? q + n : q - n;
          f = tile[q * width + tx];
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
    d[base + p * stride] = best;
  }
}

}  // namespace poreforge::cuda::kernels
