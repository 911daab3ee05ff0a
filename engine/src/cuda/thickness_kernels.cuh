#pragma once
// Device kernels of local thickness after the EDT: ball centres, radius levels, painting and
// the PSD counts. Same scheme as the CPU backend (engine/src/cpu/local_thickness.cpp):
//
//  1. Centres: phase voxels whose lattice ball is not inside a 26-neighbour's lattice ball
//     (the exact table of common/ball_containment.hpp), compacted in index order chunk by
//     chunk into a buffer of fixed capacity (an overflow is counted, never written).
//  2. A stable radix sort by squared radius, largest first: within a radius, index order.
//  3. Level starts: where the squared radius changes.
//  4. Painting: one block per z-plane (per y-row in 2D). The block walks every level in
//     order, paints the x-chords of the balls of that level that reach its plane into a
//     bitmap of painted voxels held in shared memory, and writes the level's radius to each
//     newly painted voxel. A voxel's first paint is its thickness. Within a level all values
//     are equal, so concurrent chords need no ordering.
// The PSD-only path shares steps 1's centre test and paints unions instead
// (coverage_kernels.cuh).
#include <cuda_runtime.h>

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "../common/ball_containment.hpp"
#include "../common/metric.hpp"
#include "edt_kernels.cuh"

namespace poreforge::cuda::kernels {

constexpr int kCentreThreads = 256;
constexpr int kCentreItems = 8;  // voxels per thread: a chunk is 2048 voxels
constexpr int64_t kCentreChunk = int64_t(kCentreThreads) * kCentreItems;
constexpr int kPaintThreads = 512;

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
  // Interior voxels (most of them): 26 neighbours at fixed offsets, no face checks.
  if (x > 0 && x < g.nx - 1 && y > 0 && y < g.ny - 1 && z > 0 && z < g.nz - 1) {
    const int64_t plane = g.nx * g.ny;
#pragma unroll
    for (int dz = -1; dz <= 1; ++dz)
#pragma unroll
      for (int dy = -1; dy <= 1; ++dy)
#pragma unroll
        for (int dx = -1; dx <= 1; ++dx) {
          if (!dx && !dy && !dz) continue;
          if (table.inside(r2, t, d2[i + dz * plane + dy * g.nx + dx], dx, dy, dz)) return false;
        }
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
// neighbours are 32 consecutive values (the blocked layout, 8 consecutive voxels per thread,
// spread every warp load over 8 cache lines and made these passes L1-bound).
__device__ inline int64_t striped_voxel(int k) {
  return int64_t(blockIdx.x) * kCentreChunk + int64_t(k) * kCentreThreads + threadIdx.x;
}

// Pass 1 of the compaction: centres per chunk; flags phase voxels left at infinity.
template <class M>
__global__ void count_centres(const uint8_t* __restrict__ mask, const typename M::value_type* __restrict__ d2,
                              Geometry g, detail::ContainmentView<M> table, int64_t voxels,
                              unsigned int* __restrict__ chunk_counts, Status* status) {
  using BlockReduceCount = cub::BlockReduce<unsigned int, kCentreThreads>;
  __shared__ typename BlockReduceCount::TempStorage temp;
  unsigned int count = 0;
  bool unreachable = false;
  for (int k = 0; k < kCentreItems; ++k) {
    const int64_t i = striped_voxel(k);
    if (i >= voxels) break;
    if (mask[i] && d2[i] == M::infinity) unreachable = true;
    count += is_centre(d2, i, g, table);
  }
  if (unreachable) status->no_background = 1;
  const unsigned int total = BlockReduceCount(temp).Sum(count);
  if (threadIdx.x == 0) chunk_counts[blockIdx.x] = total;
}

// Pass 2: each chunk writes its centres in index order from its offset (item by item: in the
// striped layout, index order is item-major).
template <class M>
__global__ void write_centres(const typename M::value_type* __restrict__ d2, Geometry g,
                              detail::ContainmentView<M> table, int64_t voxels,
                              const unsigned int* __restrict__ chunk_offsets, int64_t capacity,
                              typename M::value_type* __restrict__ keys, uint32_t* __restrict__ values,
                              Status* status) {
  using BlockScanFlags = cub::BlockScan<unsigned int, kCentreThreads>;
  __shared__ typename BlockScanFlags::TempStorage temp;
  int64_t offset = chunk_offsets[blockIdx.x];
  for (int k = 0; k < kCentreItems; ++k) {
    const int64_t i = striped_voxel(k);
    const unsigned int flag = i < voxels && is_centre(d2, i, g, table);
    unsigned int rank, items;
    BlockScanFlags(temp).ExclusiveSum(flag, rank, items);
    __syncthreads();  // `temp` is reused by the next item's scan
    if (flag) {
      const int64_t slot = offset + rank;
      if (slot < capacity) {
        keys[slot] = d2[i];
        values[slot] = static_cast<uint32_t>(i);
      } else {
        status->overflow = 1;
      }
    }
    offset += items;
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

// Which centres of one level reach one slab: up to two runs of the level's (slab-sorted)
// centres, or, when a periodic ball is as tall as the period, all of them (`all`).
template <class V>
struct LevelRuns {
  V r2;
  int64_t reach;  // largest |offset| across slabs at which the ball still has voxels
  uint32_t a0, b0, a1, b1;
  bool all;
};

constexpr int kLevelBatch = 512;

// See the file comment, step 4.
//
// Levels are taken in batches: first every thread finds, for a few levels at once, the runs
// of centres that reach this slab (binary searches, independent, so their memory latency
// overlaps); then the block paints the batch's levels in order from shared memory. Within a
// level a warp takes one centre and its lanes take its rows (one thread a centre in 2D).
template <class M>
__global__ void __launch_bounds__(kPaintThreads) paint_balls(
    const typename M::value_type* __restrict__ keys, const uint32_t* __restrict__ values,
    const uint32_t* __restrict__ level_first, const int* __restrict__ num_levels,
    const unsigned int* __restrict__ total, int64_t capacity, Geometry g, M m, float* __restrict__ thickness) {
  using V = typename M::value_type;
  extern __shared__ unsigned int painted[];  // one bit per voxel of this slab
  __shared__ LevelRuns<V> batch[kLevelBatch];
  const bool slab_is_plane = g.nz > 1;
  const int64_t s = blockIdx.x;
  const int64_t slabs = slab_is_plane ? g.nz : g.ny;
  const int64_t slab_voxels = slab_is_plane ? g.nx * g.ny : g.nx;
  const int64_t slab_base = s * slab_voxels;  // first voxel of the slab
  const int64_t words = (slab_voxels + 31) / 32;
  for (int64_t w = threadIdx.x; w < words; w += blockDim.x) painted[w] = 0;

  const int64_t used = *total < capacity ? int64_t(*total) : capacity;
  const int levels = *num_levels;
  const bool periodic = g.boundary == Boundary::periodic;
  auto slab_of = [&](uint32_t index) -> int64_t {
    return slab_is_plane ? g.by_plane.divide(index) : g.by_nx.divide(index);
  };
  // Workers: a warp per centre in 3D (lanes over rows), a thread per centre in 2D.
  const int lanes = slab_is_plane ? 32 : 1;
  const int worker = threadIdx.x / lanes, lane = threadIdx.x % lanes, workers = blockDim.x / lanes;

  for (int J = 0; J < levels; J += kLevelBatch) {
    const int count = levels - J < kLevelBatch ? levels - J : kLevelBatch;
    __syncthreads();  // the previous batch is done with `batch`
    for (int t = threadIdx.x; t < count; t += blockDim.x) {
      const int j = J + t;
      const uint32_t first = level_first[j];
      const uint32_t end = j + 1 < levels ? level_first[j + 1] : uint32_t(used);
      LevelRuns<V> r;
      r.r2 = keys[first];
      r.reach = slab_is_plane ? detail::chord_half_width(m, r.r2, 2, 0, 0)
                              : (g.ny > 1 ? detail::chord_half_width(m, r.r2, 1, 0, 0) : 0);
      // First centre of the level whose slab is ≥ v (or > v with `after`).
      auto bound = [&](int64_t v, bool after) {
        uint32_t a = first, b = end;
        while (a < b) {
          const uint32_t mid = (a + b) / 2;
          const int64_t cs = slab_of(values[mid]);
          if (cs < v || (after && cs == v)) a = mid + 1; else b = mid;
        }
        return a;
      };
      const int64_t lo = s - r.reach, hi = s + r.reach;
      r.all = false;
      r.a1 = r.b1 = first;
      if (periodic && 2 * r.reach + 1 >= slabs) {
        r.all = true;
        r.a0 = first;
        r.b0 = end;
      } else if (periodic && lo < 0) {
        r.a0 = bound(lo + slabs, false), r.b0 = end;
        r.a1 = first, r.b1 = bound(hi, true);
      } else if (periodic && hi >= slabs) {
        r.a0 = bound(lo, false), r.b0 = end;
        r.a1 = first, r.b1 = bound(hi - slabs, true);
      } else {
        r.a0 = bound(lo, false), r.b0 = bound(hi, true);
      }
      batch[t] = r;
    }
    __syncthreads();

    for (int t = 0; t < count; ++t) {
      const LevelRuns<V> r = batch[t];
      const uint32_t n0 = r.b0 - r.a0, n1 = r.b1 - r.a1;
      if (n0 + n1 == 0) continue;  // no ball of this level reaches the slab (uniform branch)
      const float value = m.radius(r.r2);

      // Marks [a, b] of slab row `row` painted; writes the value to newly painted voxels.
      auto paint_run = [&](int64_t row, int64_t a, int64_t b) {
        const int64_t lo_bit = row * g.nx + a, hi_bit = row * g.nx + b;
        for (int64_t w = lo_bit >> 5; w <= (hi_bit >> 5); ++w) {
          const int64_t bit0 = w << 5;
          const unsigned int from = lo_bit > bit0 ? unsigned(lo_bit - bit0) : 0u;
          const unsigned int to = hi_bit < bit0 + 31 ? unsigned(hi_bit - bit0) : 31u;
          const unsigned int mask = (to == 31 ? 0xFFFFFFFFu : ((1u << (to + 1)) - 1u)) & ~((1u << from) - 1u);
          if ((painted[w] & mask) == mask) continue;  // already painted: no atomic
          unsigned int fresh = mask & ~atomicOr(&painted[w], mask);
          while (fresh) {
            const int bit = __ffs(fresh) - 1;
            fresh &= fresh - 1;
            thickness[slab_base + bit0 + bit] = value;
          }
        }
      };
      auto paint_chord = [&](int64_t row, int64_t cx, int64_t w) {
        const int64_t a = cx - w, b = cx + w, n = g.nx;
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
      };
      // One centre seen from this slab at `offset` (dz in 3D, dy in 2D).
      auto paint_centre = [&](int64_t cx, int64_t cy, int64_t offset) {
        if (!slab_is_plane) {
          paint_chord(0, cx, g.nx > 1 ? detail::chord_half_width(m, r.r2, 0, offset, 0) : 0);
          return;
        }
        const int64_t ry = g.ny > 1 ? detail::chord_half_width(m, r.r2, 1, 0, offset) : 0;
        for (int64_t dy = -ry + lane; dy <= ry; dy += lanes) {
          int64_t y = cy + dy;
          if (y < 0 || y >= g.ny) {
            if (!periodic) continue;
            y = ((y % g.ny) + g.ny) % g.ny;
          }
          paint_chord(y, cx, g.nx > 1 ? detail::chord_half_width(m, r.r2, 0, dy, offset) : 0);
        }
      };

      for (uint32_t c = worker; c < n0 + n1; c += workers) {
        const uint32_t index = values[c < n0 ? r.a0 + c : r.a1 + (c - n0)];
        int64_t cx, cy, cz;
        g.split(index, cx, cy, cz);
        const int64_t cs = slab_is_plane ? cz : cy;
        if (r.all) {  // a periodic ball taller than the period meets this slab several times
          const int64_t images = r.reach / slabs + 1;
          for (int64_t k = -images; k <= images; ++k) {
            const int64_t offset = s - (cs + k * slabs);
            if (offset >= -r.reach && offset <= r.reach) paint_centre(cx, cy, offset);
          }
        } else {
          int64_t offset = s - cs;  // the one image within reach
          if (offset > r.reach) offset -= slabs;
          if (offset < -r.reach) offset += slabs;
          paint_centre(cx, cy, offset);
        }
      }
      __syncthreads();  // the level is painted before the next (smaller) one
    }
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
