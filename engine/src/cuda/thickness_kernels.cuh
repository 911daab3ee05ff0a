#pragma once
// Device kernels of local thickness after the EDT: ball centres, radius levels, painting and
// the PSD counts. Same scheme as the CPU backend (engine/src/cpu/local_thickness.cpp):
//
//  1. Centres: phase voxels whose lattice ball is not inside a 26-neighbour's lattice ball
//     (the exact table of common/ball_containment.hpp), compacted in index order chunk by
//     chunk into a buffer of fixed capacity (an overflow is counted, never written).
//  2. A stable radix sort by squared radius, largest first: within a radius, index order.
//  3. Level starts: where the squared radius changes.
//  4. Painting, in kBands bands of the sorted centres, largest radii first. Within a band,
//     each ball writes its level key to the voxels it covers by atomicMax, so the band's
//     largest covering ball wins whatever the order; voxels painted in an earlier band are
//     final (a bitmap) and skipped 32 at a time. Each voxel ends with the key of the
//     largest ball covering it: its thickness. Work is O(Σ rows of the kept balls), the
//     same as the CPU's chords, spread over every SM with no per-level barrier.
//  5. Keys become radii in place (the map), or a per-level histogram (the PSD-only path),
//     whose cumulative sums are the coverage by balls of radius ≥ each level.
#include <cuda_runtime.h>

#include <cub/block/block_scan.cuh>

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
  const int64_t x = i % g.nx, y = (i / g.nx) % g.ny, z = i / (g.nx * g.ny);
  const int64_t t = table.thresholds(r2);
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

// Pass 1 of the compaction: centres per chunk; flags phase voxels left at infinity.
template <class M>
__global__ void count_centres(const uint8_t* __restrict__ mask, const typename M::value_type* __restrict__ d2,
                              Geometry g, detail::ContainmentView<M> table, int64_t voxels,
                              unsigned int* __restrict__ chunk_counts, Status* status) {
  using BlockReduceCount = cub::BlockScan<unsigned int, kCentreThreads>;
  __shared__ typename BlockReduceCount::TempStorage temp;
  const int64_t start = int64_t(blockIdx.x) * kCentreChunk + int64_t(threadIdx.x) * kCentreItems;
  unsigned int count = 0;
  bool unreachable = false;
  for (int k = 0; k < kCentreItems; ++k) {
    const int64_t i = start + k;
    if (i >= voxels) break;
    if (mask[i] && d2[i] == M::infinity) unreachable = true;
    count += is_centre(d2, i, g, table);
  }
  if (unreachable) status->no_background = 1;
  unsigned int total;
  BlockReduceCount(temp).ExclusiveSum(count, count, total);
  if (threadIdx.x == 0) chunk_counts[blockIdx.x] = total;
}

// Pass 2: each chunk writes its centres in index order from its offset.
template <class M>
__global__ void write_centres(const typename M::value_type* __restrict__ d2, Geometry g,
                              detail::ContainmentView<M> table, int64_t voxels,
                              const unsigned int* __restrict__ chunk_offsets, int64_t capacity,
                              typename M::value_type* __restrict__ keys, uint32_t* __restrict__ values,
                              Status* status) {
  using BlockScanFlags = cub::BlockScan<unsigned int, kCentreThreads>;
  __shared__ typename BlockScanFlags::TempStorage temp;
  const int64_t start = int64_t(blockIdx.x) * kCentreChunk + int64_t(threadIdx.x) * kCentreItems;
  unsigned int flags[kCentreItems], ranks[kCentreItems];
  for (int k = 0; k < kCentreItems; ++k) {
    const int64_t i = start + k;
    flags[k] = i < voxels && is_centre(d2, i, g, table);
  }
  BlockScanFlags(temp).ExclusiveSum(flags, ranks);
  const int64_t offset = chunk_offsets[blockIdx.x];
  for (int k = 0; k < kCentreItems; ++k) {
    if (!flags[k]) continue;
    const int64_t slot = offset + ranks[k];
    if (slot < capacity) {
      keys[slot] = d2[start + k];
      values[slot] = static_cast<uint32_t>(start + k);
    } else {
      status->overflow = 1;
    }
  }
}

// Unused slots sort last (squared radius 0 is never a centre).
template <class V>
__global__ void pad_centres(V* __restrict__ keys, const unsigned int* __restrict__ total, int64_t capacity) {
  const int64_t used = *total < capacity ? int64_t(*total) : capacity;
  for (int64_t i = used + blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < capacity; i += int64_t(gridDim.x) * blockDim.x)
    keys[i] = V(0);
}

// Level starts: positions where the (sorted) squared radius changes.
template <class V>
struct LevelStart {
  const V* keys;
  const unsigned int* total;
  int64_t capacity;
  __device__ bool operator()(uint32_t i) const {
    const int64_t used = *total < capacity ? int64_t(*total) : capacity;
    return int64_t(i) < used && (i == 0 || keys[i] != keys[i - 1]);
  }
};

__global__ void zero_levels(unsigned long long* newly, const int* num_levels) {
  for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < *num_levels; j += gridDim.x * blockDim.x) newly[j] = 0;
}

// Bands split the sorted centres into kBands equal runs, painted one after the other.
constexpr int kBands = 32;
constexpr int kPaintThreads = 256;

__global__ void band_bounds(const unsigned int* total, int64_t capacity, uint32_t* band_first) {
  const int64_t used = *total < capacity ? int64_t(*total) : capacity;
  for (int b = threadIdx.x; b <= kBands; b += blockDim.x) band_first[b] = uint32_t(used * b / kBands);
}

// One band (see the file comment, step 4). Every voxel not final (painted in an earlier band)
// that a ball of this band covers takes the ball's key by atomicMax and is marked pending; the
// fold after the band makes pending voxels final. Keys are L − level, so a larger key is a
// larger radius, whatever the metric. A warp takes a centre; its lanes take the rows.
template <class M>
__global__ void __launch_bounds__(kPaintThreads) paint_band(
    int band, const typename M::value_type* __restrict__ keys, const uint32_t* __restrict__ values,
    const uint32_t* __restrict__ level_first, const int* __restrict__ num_levels,
    const uint32_t* __restrict__ band_first, Geometry g, M m, uint32_t* __restrict__ voxel_key,
    const uint32_t* __restrict__ final_bits, uint32_t* __restrict__ pending_bits) {
  using V = typename M::value_type;
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t(gridDim.x) * blockDim.x) >> 5;
  const uint32_t first = band_first[band], end = band_first[band + 1];
  const int levels = *num_levels;
  const bool periodic = g.boundary == Boundary::periodic;

  for (int64_t c = first + ((int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5); c < end; c += warps) {
    const uint32_t index = values[c];
    const V r2 = keys[c];
    // The centre's level: the last level starting at or before c.
    int lo = 0, hi = levels;
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (level_first[mid] <= uint32_t(c)) lo = mid + 1; else hi = mid;
    }
    const uint32_t key = uint32_t(levels - (lo - 1));
    const int64_t cx = index % g.nx, cy = (index / g.nx) % g.ny, cz = index / (g.nx * g.ny);

    // Marks the voxels of row `row_base` in [a, b] that are not final.
    auto paint_run = [&](int64_t row_base, int64_t a, int64_t b) {
      const int64_t lo_bit = row_base + a, hi_bit = row_base + b;
      for (int64_t w = lo_bit >> 5; w <= (hi_bit >> 5); ++w) {
        const int64_t bit0 = w << 5;
        const unsigned int from = lo_bit > bit0 ? unsigned(lo_bit - bit0) : 0u;
        const unsigned int to = hi_bit < bit0 + 31 ? unsigned(hi_bit - bit0) : 31u;
        const unsigned int mask = (to == 31 ? 0xFFFFFFFFu : ((1u << (to + 1)) - 1u)) & ~((1u << from) - 1u);
        const unsigned int open = mask & ~final_bits[w];
        if (!open) continue;
        for (unsigned int bits = open; bits; bits &= bits - 1) {
          uint32_t* v = voxel_key + bit0 + (__ffs(bits) - 1);
          if (*v < key) atomicMax(v, key);
        }
        if ((pending_bits[w] & open) != open) atomicOr(&pending_bits[w], open);
      }
    };
    const int64_t rz = g.nz > 1 ? detail::chord_half_width(m, r2, 2, 0, 0) : 0;
    for (int64_t dz = -rz; dz <= rz; ++dz) {
      int64_t z = cz + dz;
      if (z < 0 || z >= g.nz) {
        if (!periodic) continue;
        z = ((z % g.nz) + g.nz) % g.nz;
      }
      const int64_t ry = g.ny > 1 ? detail::chord_half_width(m, r2, 1, 0, dz) : 0;
      for (int64_t dy = -ry + lane; dy <= ry; dy += 32) {
        int64_t y = cy + dy;
        if (y < 0 || y >= g.ny) {
          if (!periodic) continue;
          y = ((y % g.ny) + g.ny) % g.ny;
        }
        const int64_t w = g.nx > 1 ? detail::chord_half_width(m, r2, 0, dy, dz) : 0;
        const int64_t row = (z * g.ny + y) * g.nx, a = cx - w, b = cx + w, n = g.nx;
        if (!periodic) {
          paint_run(row, a > 0 ? a : 0, b < n - 1 ? b : n - 1);
        } else if (b - a + 1 >= n) {
          paint_run(row, 0, n - 1);
        } else if (a < 0) {
          paint_run(row, a + n, n - 1);
          paint_run(row, 0, b);
        } else if (b >= n) {
          paint_run(row, a, n - 1);
          paint_run(row, 0, b - n);
        } else {
          paint_run(row, a, b);
        }
      }
    }
  }
}

// After a band: its painted voxels become final.
__global__ void fold_band(uint32_t* __restrict__ final_bits, uint32_t* __restrict__ pending_bits, int64_t words) {
  for (int64_t w = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; w < words; w += int64_t(gridDim.x) * blockDim.x) {
    const uint32_t p = pending_bits[w];
    if (p) {
      final_bits[w] |= p;
      pending_bits[w] = 0;
    }
  }
}

// Keys → thickness (radius of the key's level), in place: key and radius share the buffer.
template <class M>
__global__ void keys_to_thickness(uint32_t* __restrict__ voxel_key, const typename M::value_type* __restrict__ keys,
                                  const uint32_t* __restrict__ level_first, const int* __restrict__ num_levels,
                                  int64_t voxels, M m) {
  const int levels = *num_levels;
  float* out = reinterpret_cast<float*>(voxel_key);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < voxels; i += int64_t(gridDim.x) * blockDim.x) {
    const uint32_t k = voxel_key[i];
    out[i] = k == 0 ? 0.0f : m.radius(keys[level_first[levels - int(k)]]);
  }
}

// Voxels per level (PSD-only path). Levels below kSharedLevels count in shared memory first.
constexpr int kSharedLevels = 8192;
__global__ void count_levels(const uint32_t* __restrict__ voxel_key, int64_t voxels, const int* __restrict__ num_levels,
                             unsigned long long* __restrict__ level_newly) {
  __shared__ unsigned int local[kSharedLevels];
  const int levels = *num_levels;
  for (int j = threadIdx.x; j < kSharedLevels; j += blockDim.x) local[j] = 0;
  __syncthreads();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < voxels; i += int64_t(gridDim.x) * blockDim.x) {
    const uint32_t k = voxel_key[i];
    if (!k) continue;
    const int j = levels - int(k);
    if (j < kSharedLevels) atomicAdd(&local[j], 1u);
    else atomicAdd(&level_newly[j], 1ull);
  }
  __syncthreads();
  for (int j = threadIdx.x; j < kSharedLevels && j < levels; j += blockDim.x)
    if (local[j]) atomicAdd(&level_newly[j], static_cast<unsigned long long>(local[j]));
}

// Cumulative coverage per level → PSD counts (one block). counts: at_least[edges], above, phase.
template <class M>
__global__ void psd_counts_from_levels(const typename M::value_type* __restrict__ keys,
                                       const uint32_t* __restrict__ level_first, const int* __restrict__ num_levels,
                                       unsigned long long* __restrict__ level_newly, M m,
                                       const double* __restrict__ edges, int num_edges, int64_t* __restrict__ counts) {
  const int levels = *num_levels;
  if (threadIdx.x == 0)
    for (int j = 1; j < levels; ++j) level_newly[j] += level_newly[j - 1];
  __syncthreads();
  // Coverage of the last level whose radius satisfies keep(radius); levels are largest first.
  auto covered_where = [&](auto keep) -> int64_t {
    int a = 0, b = levels;  // first level failing keep
    while (a < b) {
      const int mid = (a + b) / 2;
      if (keep(double(m.radius(keys[level_first[mid]])))) a = mid + 1; else b = mid;
    }
    return a == 0 ? 0 : int64_t(level_newly[a - 1]);
  };
  for (int e = threadIdx.x; e < num_edges; e += blockDim.x) {
    const double edge = edges[e];
    counts[e] = covered_where([edge](double r) { return r >= edge; });
  }
  if (threadIdx.x == 0) {
    const double last = edges[num_edges - 1];
    counts[num_edges] = covered_where([last](double r) { return r > last; });
    counts[num_edges + 1] = levels ? int64_t(level_newly[levels - 1]) : 0;
  }
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
