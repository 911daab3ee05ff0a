#pragma once
// The PSD-only path by coverage classes: the cumulative PSD without the thickness map.
//
// A voxel's thickness is ≥ a threshold exactly when a ball centre whose radius passes that
// threshold covers it (the thickness is the largest covering radius). So each count of the
// cumulative PSD is the size of a union of balls, and a union needs no order. The kept
// centres (the map's containment test: a dropped ball lies inside a larger kept one) are put
// in classes by how many thresholds their radius passes — radius ≥ edges[i] for each edge,
// then radius > the last edge — and the classes are painted largest first into one bitmap of
// the volume, one kernel per class, counting the bits each class sets for the first time:
// the running sum of those counts is the coverage of each threshold.
//
// Unlike the map's painter (one block per plane, levels in order, a barrier per level),
// inside a class any order is right — atomicOr gives every bit to exactly one painter — so
// the class's rows are spread over every SM. A row costs one or two bitmap words, not a
// voxel each: the work is the rows of the kept balls with radius ≥ the first edge.
//
//  1. count_classes: centres per class (block histograms), phase voxels, the no-background
//     flag; a bit per voxel marks the centres (a warp's ballot is one word: no atomics), so
//     the containment test runs once.
//  2. place_classes (one thread): class regions, largest class first; the total and overflow.
//  3. write_classes: each marked centre into its class region (block-reserved ranges), with
//     its box of rows — the ball's bounding box, less the rows a face neighbour paints
//     (row_box) — and their number; an exclusive scan of those gives row numbers.
//  4. paint_class, once per class: each thread paints runs of consecutive rows.
//  5. counts_from_classes: running sums → at_least[edges], above, phase.
#include <cuda_runtime.h>

#include <cub/block/block_reduce.cuh>

#include <algorithm>
#include <climits>
#include <type_traits>

#include "thickness_kernels.cuh"

namespace poreforge::cuda::kernels {

// How many thresholds the radius of squared radius r2 passes: 0 … n + 1 (n edges).
template <class M>
__device__ int coverage_class(const M& m, typename M::value_type r2, const double* edges, int n) {
  const double r = double(m.radius(r2));  // the float radius the map would store
  int a = 0, b = n;                       // edges are increasing: count those ≤ r
  while (a < b) {
    const int mid = (a + b) / 2;
    if (r >= edges[mid]) a = mid + 1; else b = mid;
  }
  return a == n && r > edges[n - 1] ? n + 1 : a;
}

// Half-extents of a ball's bounding box of rows: along y and z (0 along a flat axis).
template <class M>
__device__ void row_reach(const M& m, typename M::value_type r2, const Geometry& g, int64_t& ry, int64_t& rz) {
  ry = g.ny > 1 ? detail::chord_half_width(m, r2, 1, 0, 0) : 0;
  rz = g.nz > 1 ? detail::chord_half_width(m, r2, 2, 0, 0) : 0;
}

// The rows a centre paints: dy in [y0, y1], dz in [z0, z1] (empty when y0 > y1 or z0 > z1).
struct RowBox {
  int16_t y0, y1, z0, z1;
  __device__ int64_t rows() const {
    return y1 < y0 || z1 < z0 ? 0 : int64_t(y1 - y0 + 1) * int64_t(z1 - z0 + 1);
  }
};
static_assert(sizeof(RowBox) == 8, "a row box packs into 8 bytes");

// The centre's bounding box of rows, cut where a face neighbour along y or z paints the same
// rows. With isotropic integer distances, a neighbour c' = c + e (e = ±ŷ or ±ẑ) in the phase
// with R'² = R² + Δ, Δ ≥ 0, holds each row of c at offset t along e with 2t ≥ 1 − Δ: that
// row's chord is |w|² < R² − t² − u², c''s at the same voxels is |w|² < R'² − (t − 1)² − u²,
// and R² − t² ≤ R'² − (t − 1)² exactly then. The neighbour's class is at least c's, so it is
// painted in this or an earlier class — or, if it is not a kept centre, the ball containing
// it is. Its own rows may be cut in turn, by a neighbour whose radius is no smaller: along
// such a chain either R² grows or |t| shrinks, so the chain ends at a centre that paints the
// row. Anisotropic spacing keeps the whole box (its tie-breaking is floating point).
template <class M>
__device__ RowBox row_box(const typename M::value_type* d2, int64_t i, const Geometry& g, const M& m) {
  using V = typename M::value_type;
  const V r2 = d2[i];
  int64_t ry, rz;
  row_reach(m, r2, g, ry, rz);
  RowBox box{int16_t(-ry), int16_t(ry), int16_t(-rz), int16_t(rz)};
  if constexpr (std::is_same_v<M, detail::VoxelMetric>) {
    int64_t x, y, z;
    g.split(uint32_t(i), x, y, z);
    // First offset (toward the neighbour) of the rows the neighbour holds, or none (INT64_MAX).
    auto held_from = [&](int64_t neighbour) -> int64_t {
      const V other = d2[neighbour];
      if (other == V(0) || other == M::infinity || other < r2) return INT64_MAX;
      const int64_t delta = int64_t(other) - int64_t(r2);
      return -((delta - 1) >> 1);  // ⌈(1 − Δ) / 2⌉
    };
    // Cuts past the far side of the box only empty it: clamp there (int16 fields).
    auto cut = [&](int axis, int64_t coordinate, int64_t extent, int64_t stride, int64_t reach, int16_t& lo,
                   int16_t& hi) {
      if (extent == 1) return;
      const bool wrap = g.along(axis) == Boundary::periodic;
      for (int side = -1; side <= 1; side += 2) {
        int64_t c = coordinate + side;
        if (c < 0 || c >= extent) {
          if (!wrap) continue;
          c = c < 0 ? c + extent : c - extent;
        }
        const int64_t from = held_from(i + (c - coordinate) * stride);
        if (from == INT64_MAX) continue;
        if (side > 0) hi = int16_t(std::min<int64_t>(hi, std::max<int64_t>(from - 1, -reach - 1)));
        else lo = int16_t(std::max<int64_t>(lo, std::min<int64_t>(1 - from, reach + 1)));
      }
    };
    cut(1, y, g.ny, g.nx, ry, box.y0, box.y1);
    cut(2, z, g.nz, g.nx * g.ny, rz, box.z0, box.z1);
  }
  return box;
}

// The edges in shared memory (the class look-up's binary search is a chain of dependent
// loads), after `counters` unsigned ints of dynamic shared memory; 8-byte aligned.
__device__ inline const double* shared_edges(unsigned int* shared, int counters, const double* edges, int n) {
  double* copy = reinterpret_cast<double*>(shared + ((counters + 1) & ~1));
  for (int e = threadIdx.x; e < n; e += blockDim.x) copy[e] = edges[e];
  return copy;
}

// Dynamic shared memory for a class pass with `counters` counters: the counters, then the edges.
inline std::size_t class_pass_shared(int counters, int num_edges) {
  return std::size_t((counters + 1) & ~1) * sizeof(unsigned int) + std::size_t(num_edges) * sizeof(double);
}

// Step 1. Dynamic shared memory: class_pass_shared(classes, edges).
template <class M>
__global__ void count_classes(const uint8_t* __restrict__ mask, const typename M::value_type* __restrict__ d2,
                              Geometry g, detail::ContainmentView<M> table, M m, int64_t voxels,
                              const double* __restrict__ edges, int num_edges, unsigned int* __restrict__ class_count,
                              unsigned int* __restrict__ centre_bits, unsigned long long* __restrict__ phase_total,
                              Status* status) {
  extern __shared__ unsigned int histogram[];
  using BlockSum = cub::BlockReduce<unsigned int, kCentreThreads>;
  __shared__ typename BlockSum::TempStorage temp;
  const int classes = num_edges + 2;
  for (int q = threadIdx.x; q < classes; q += blockDim.x) histogram[q] = 0;
  edges = shared_edges(histogram, classes, edges, num_edges);
  __syncthreads();
  unsigned int phase = 0;
  bool unreachable = false;
  for (int k = 0; k < kCentreItems; ++k) {
    const int64_t i = striped_voxel(k);
    bool centre = false;
    if (i < voxels && mask[i]) {
      ++phase;
      if (d2[i] == M::infinity) unreachable = true;
      if (is_centre(d2, i, g, table)) {
        const int q = coverage_class(m, d2[i], edges, num_edges);
        centre = q > 0;
        if (centre) atomicAdd(&histogram[q], 1u);
      }
    }
    // The warp's 32 voxels are consecutive and start at a multiple of 32: one word.
    const unsigned int word = __ballot_sync(0xFFFFFFFFu, centre);
    if ((threadIdx.x & 31) == 0 && i < voxels) centre_bits[i >> 5] = word;
  }
  if (unreachable) status->no_background = 1;
  const unsigned int block_phase = BlockSum(temp).Sum(phase);
  if (threadIdx.x == 0 && block_phase) atomicAdd(phase_total, static_cast<unsigned long long>(block_phase));
  __syncthreads();
  for (int q = threadIdx.x; q < classes; q += blockDim.x)
    if (histogram[q]) atomicAdd(&class_count[q], histogram[q]);
}

// Step 2 (one thread): class q occupies [class_start[q], class_start[q] + class_count[q]),
// the largest class first; class_cursor starts at class_start. `total` takes the number of
// centres (what synchronize() reports), `overflow` is raised when they exceed the capacity.
__global__ void place_classes(const unsigned int* __restrict__ class_count, int num_edges,
                              unsigned int* __restrict__ class_start, unsigned int* __restrict__ class_cursor,
                              unsigned int* __restrict__ total, int64_t capacity, Status* status) {
  unsigned long long offset = 0;
  for (int q = num_edges + 1; q >= 1; --q) {
    class_start[q] = class_cursor[q] = static_cast<unsigned int>(offset);
    offset += class_count[q];
  }
  *total = static_cast<unsigned int>(offset);
  if (offset > static_cast<unsigned long long>(capacity)) status->overflow = 1;
}

// Step 3. Dynamic shared memory: class_pass_shared(2 × classes, edges) (ranks, block bases).
template <class M>
__global__ void write_classes(const typename M::value_type* __restrict__ d2, Geometry g, M m, int64_t voxels,
                              const unsigned int* __restrict__ centre_bits, const double* __restrict__ edges,
                              int num_edges, unsigned int* __restrict__ class_cursor, int64_t capacity,
                              typename M::value_type* __restrict__ centre_r2, uint32_t* __restrict__ centre_index,
                              RowBox* __restrict__ centre_box, unsigned long long* __restrict__ centre_rows) {
  extern __shared__ unsigned int shared_counts[];
  const int classes = num_edges + 2;
  unsigned int* block_count = shared_counts;
  unsigned int* block_base = shared_counts + classes;
  for (int q = threadIdx.x; q < classes; q += blockDim.x) block_count[q] = 0;
  edges = shared_edges(shared_counts, 2 * classes, edges, num_edges);
  __syncthreads();
  int cls[kCentreItems];
  unsigned int rank[kCentreItems];
  for (int k = 0; k < kCentreItems; ++k) {
    const int64_t i = striped_voxel(k);
    const bool centre = i < voxels && (centre_bits[i >> 5] >> (i & 31)) & 1u;
    cls[k] = centre ? coverage_class(m, d2[i], edges, num_edges) : 0;
    if (cls[k] > 0) rank[k] = atomicAdd(&block_count[cls[k]], 1u);
  }
  __syncthreads();
  for (int q = threadIdx.x; q < classes; q += blockDim.x)
    block_base[q] = block_count[q] ? atomicAdd(&class_cursor[q], block_count[q]) : 0;
  __syncthreads();
  for (int k = 0; k < kCentreItems; ++k) {
    if (cls[k] <= 0) continue;
    const int64_t slot = int64_t(block_base[cls[k]]) + rank[k];
    if (slot >= capacity) continue;  // overflow: place_classes has raised the flag
    const int64_t i = striped_voxel(k);
    const RowBox box = row_box(d2, i, g, m);
    centre_r2[slot] = d2[i];
    centre_index[slot] = static_cast<uint32_t>(i);
    centre_box[slot] = box;
    centre_rows[slot] = static_cast<unsigned long long>(box.rows());
  }
}

// Slots past the centres count no rows (so the scan's last entry is the total).
__global__ void clear_rows(unsigned long long* __restrict__ centre_rows, const unsigned int* __restrict__ total,
                           int64_t capacity) {
  const int64_t used = *total < capacity ? int64_t(*total) : capacity;
  for (int64_t i = used + blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i <= capacity; i += int64_t(gridDim.x) * blockDim.x)
    centre_rows[i] = 0;
}

// The bitmap: bit x of voxel row (y, z) is bit x % 32 of word (z·words_per_row + x / 32)·ny + y
// — y fastest, so the consecutive rows of a ball (dy fastest) are adjacent words, one cache line.
//
// Sets bits [a, b] (0 ≤ a ≤ b < nx) of the row whose first word is row[0] (the next word of
// the row is `stride` words on); returns how many were not set before.
__device__ inline unsigned int set_run(unsigned int* row, int stride, int a, int b) {
  unsigned int fresh = 0;
  for (int w = a >> 5; w <= (b >> 5); ++w) {
    const unsigned int from = w == (a >> 5) ? unsigned(a & 31) : 0u;
    const unsigned int to = w == (b >> 5) ? unsigned(b & 31) : 31u;
    const unsigned int bits = (to == 31 ? 0xFFFFFFFFu : ((1u << (to + 1)) - 1u)) & ~((1u << from) - 1u);
    unsigned int* word = row + w * stride;
    // A stale read only costs an atomic: the atomic's old value decides what is fresh.
    if ((*word & bits) == bits) continue;
    fresh += __popc(bits & ~atomicOr(word, bits));
  }
  return fresh;
}

constexpr int kRowsPerThread = 16;

// Step 4 for class q: rows [row_start[s], row_start[e]) of its centres [s, e), where centre k
// owns rows row_start[k] … row_start[k+1] − 1, its row box (row_box) with dy fastest.
// A thread takes kRowsPerThread consecutive rows, so it looks a centre up once per run of its
// rows (the row loop is what counts: a centre's look-up costs as much as a few rows, and
// small balls have few rows). Rows outside the ball (box corners) paint
// nothing; a periodic ball wider than the period paints some voxels twice, which a union
// ignores.
template <class M>
__global__ void paint_class(int q, const typename M::value_type* __restrict__ centre_r2,
                            const uint32_t* __restrict__ centre_index, const RowBox* __restrict__ centre_box,
                            const unsigned long long* __restrict__ row_start,
                            const unsigned int* __restrict__ class_start, const unsigned int* __restrict__ class_count,
                            int64_t capacity, Geometry g, M m, unsigned int* __restrict__ bitmap, int64_t words_per_row,
                            unsigned long long* __restrict__ class_newly) {
  using V = typename M::value_type;
  const int64_t s = class_start[q];
  const int64_t e = s + class_count[q] < capacity ? s + class_count[q] : capacity;
  const int lane = threadIdx.x & 31;
  unsigned long long fresh = 0;
  if (s < e) {
    const unsigned long long begin = row_start[s], end = row_start[e];
    const unsigned long long runs = (end - begin + kRowsPerThread - 1) / kRowsPerThread;
    const bool wrap_x = g.along(0) == Boundary::periodic, wrap_y = g.along(1) == Boundary::periodic,
               wrap_z = g.along(2) == Boundary::periodic;
    const unsigned long long threads = uint64_t(gridDim.x) * blockDim.x;
    const int64_t plane_words = words_per_row * g.ny;
    for (unsigned long long run = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; run < runs; run += threads) {
      const unsigned long long first = begin + run * kRowsPerThread;
      const unsigned long long last = first + kRowsPerThread < end ? first + kRowsPerThread : end;
      int64_t lo = s, hi = e - 1;  // the last centre k with row_start[k] ≤ first
      while (lo < hi) {
        const int64_t mid = (lo + hi + 1) / 2;
        if (row_start[mid] <= first) lo = mid; else hi = mid - 1;
      }
      int64_t k = lo;
      // Extents are below 2^15 (validate_shape), so coordinates and offsets are ints.
      V r2{};
      int cx = 0, cy = 0, cz = 0, y0 = 0, z0 = 0, side = 1;
      float inv_side = 1.0f;
      unsigned long long own_first = 0, own_end = 0;
      auto load = [&] {
        r2 = centre_r2[k];
        int64_t x, y, z;
        g.split(centre_index[k], x, y, z);
        const RowBox box = centre_box[k];
        cx = int(x), cy = int(y), cz = int(z), y0 = box.y0, z0 = box.z0;
        side = box.y1 - box.y0 + 1;  // ≥ 1 whenever the centre owns rows
        inv_side = 1.0f / float(side);
        own_first = row_start[k];
        own_end = row_start[k + 1];
      };
      load();
      const int nx = int(g.nx), ny = int(g.ny), nz = int(g.nz);
      for (unsigned long long row = first; row < last; ++row) {
        while (row >= own_end) {
          ++k;
          load();
        }
        // (dz, dy) of the row: a float quotient, corrected exactly (no integer divide).
        const int local = int(row - own_first);
        int zi = int(float(local) * inv_side);
        while (zi * side > local) --zi;
        while ((zi + 1) * side <= local) ++zi;
        const int dz = z0 + zi, dy = y0 + local - zi * side;
        const int w = int(detail::chord_half_width(m, r2, 0, dy, dz));
        if (w < 0) continue;  // a corner of the box
        int y = cy + dy, z = cz + dz;
        if (y < 0 || y >= ny) {
          if (!wrap_y) continue;
          y = ((y % ny) + ny) % ny;
        }
        if (z < 0 || z >= nz) {
          if (!wrap_z) continue;
          z = ((z % nz) + nz) % nz;
        }
        unsigned int* bits = bitmap + int64_t(z) * plane_words + y;
        const int a = cx - w, b = cx + w;
        if (!wrap_x) {
          fresh += set_run(bits, ny, a > 0 ? a : 0, b < nx - 1 ? b : nx - 1);
        } else if (b - a + 1 >= nx) {
          fresh += set_run(bits, ny, 0, nx - 1);
        } else if (a < 0) {
          fresh += set_run(bits, ny, a + nx, nx - 1) + set_run(bits, ny, 0, b);
        } else if (b >= nx) {
          fresh += set_run(bits, ny, a, nx - 1) + set_run(bits, ny, 0, b - nx);
        } else {
          fresh += set_run(bits, ny, a, b);
        }
      }
    }
  }
  for (int o = 16; o > 0; o >>= 1) fresh += __shfl_down_sync(0xFFFFFFFFu, fresh, o);
  if (lane == 0 && fresh) atomicAdd(&class_newly[q], fresh);
}

// Step 5 (one thread). counts: at_least[edges], above, phase voxels.
__global__ void counts_from_classes(const unsigned long long* __restrict__ class_newly, int num_edges,
                                    const unsigned long long* __restrict__ phase_total, int64_t* __restrict__ counts) {
  unsigned long long covered = 0;
  for (int q = num_edges + 1; q >= 1; --q) {
    covered += class_newly[q];
    counts[q == num_edges + 1 ? num_edges : q - 1] = static_cast<int64_t>(covered);
  }
  counts[num_edges + 1] = static_cast<int64_t>(*phase_total);
}

}  // namespace poreforge::cuda::kernels
