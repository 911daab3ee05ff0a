#pragma once
// Painting by classes: the thickness map and the PSD-only path from the kept ball centres.
//
// The centres (thickness_kernels.cuh: a dropped ball lies inside a larger kept one) are put
// in classes by how many thresholds their radius passes — radius ≥ edges[i] for each edge,
// then radius > the last edge — and painted class by class, largest first, into one bitmap
// of the volume (one kernel per class over the whole GPU; a row costs a bitmap word or two).
//
//  - PSD-only path: the thresholds are the PSD edges. A voxel's thickness is ≥ an edge
//    exactly when a centre whose radius passes it covers the voxel, so each count of the
//    cumulative PSD is the size of a union of balls, and a union needs no order: the bits a
//    class sets for the first time, summed from the top class down, are the counts.
//  - Thickness map: the thresholds are radius bands (band_edges). A voxel's thickness lies
//    in the first band whose union covers it, and is the largest radius among that band's
//    balls that cover it. So every ball of a band writes its radius by atomicMax to the
//    voxels of its rows not yet covered (by a larger band), and the band's union is added to
//    the bitmap for the bands below — in the next band's launch (paint_band). Any order
//    within a band is right.
//
// Either way a ball skips the voxels that a face neighbour of no smaller radius paints
// (row_cut: whole rows toward ±y and ±z, the ends of rows toward ±x), which is exact for
// both: a skipped voxel is covered by a ball at least as large.
//
//  1. count_classes: centres per class (block histograms), phase voxels, the no-background
//     flag; a bit per voxel marks the centres (a warp's ballot is one word: no atomics), so
//     the containment test runs once.
//  2. place_classes (one thread): class regions, largest class first; the total and overflow.
//  3. write_classes: each marked centre into its class region (block-reserved ranges), with
//     its row cut and its number of rows; an exclusive scan of those gives row numbers
//     (scan_tiles, scan_tile_sums, add_tile_offsets: over the centres found, not the capacity).
//  4. Per class, largest first: paint_class (PSD: the union), or paint_band (map: band q's
//     values and band q + 1's union in one launch); each thread walks runs of consecutive rows.
//  5. counts_from_classes (PSD): running sums → at_least[edges], above, phase.
#include <cuda_runtime.h>

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <algorithm>
#include <type_traits>

#include "../common/row_cuts.hpp"
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

using detail::box_of;
using detail::clip_chord;
using detail::kNoCut;
using detail::row_cut;
using detail::RowBox;
using detail::RowCut;

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
                              unsigned int* __restrict__ centre_bits, unsigned long long* __restrict__ phase_total) {
  extern __shared__ unsigned int histogram[];
  using BlockSum = cub::BlockReduce<unsigned int, kCentreThreads>;
  __shared__ typename BlockSum::TempStorage temp;
  const int classes = num_edges + 2;
  for (int q = threadIdx.x; q < classes; q += blockDim.x) histogram[q] = 0;
  edges = shared_edges(histogram, classes, edges, num_edges);
  __syncthreads();
  unsigned int phase = 0;
  for (int k = 0; k < kCentreItems; ++k) {
    const int64_t i = striped_voxel(k);
    bool centre = false;
    if (i < voxels && mask[i]) {
      ++phase;
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
  class_start[num_edges + 2] = class_cursor[num_edges + 2] = 0;  // the empty class above the top (paint_band)
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
                              RowCut* __restrict__ centre_cut, unsigned long long* __restrict__ centre_rows) {
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
    int64_t x, y, z;
    g.split(uint32_t(i), x, y, z);
    const RowCut cut = row_cut<M>(d2, i, x, y, z, g);
    centre_r2[slot] = d2[i];
    centre_index[slot] = static_cast<uint32_t>(i);
    centre_cut[slot] = cut;
    centre_rows[slot] = static_cast<unsigned long long>(box_of(m, d2[i], g, cut, int(y), int(z)).rows());
  }
}

// The exclusive scan of the centres' row counts, in place over entries 0 … used (used =
// the centres found, at most the capacity; entry `used` becomes the total). A library scan
// must be told its length on the host, so it ran over the whole capacity — with room for a
// centre at every voxel (the annealer's contexts), clearing and scanning the unused slots cost
// more than a tenth of a 250³ PSD evaluation. Tiles of kScanTile entries: each tile is scanned
// on its own (scan_tiles), the tile totals are scanned (scan_tile_sums), every tile gets its
// offset (add_tile_offsets). Grids are sized for the capacity and loop; tiles past `used` do
// nothing.
constexpr int kScanThreads = 256, kScanItems = 8, kScanTile = kScanThreads * kScanItems;

// Tiles of the scan for a capacity (its capacity + 1 entries).
inline int64_t scan_tile_count(int64_t capacity) { return capacity / kScanTile + 1; }

__device__ inline int64_t used_centres(const unsigned int* total, int64_t capacity) {
  return *total < capacity ? int64_t(*total) : capacity;
}

__global__ void scan_tiles(unsigned long long* __restrict__ centre_rows, const unsigned int* __restrict__ total,
                           int64_t capacity, unsigned long long* __restrict__ tile_sums) {
  using Scan = cub::BlockScan<unsigned long long, kScanThreads>;
  __shared__ typename Scan::TempStorage scratch;
  const int64_t used = used_centres(total, capacity);
  for (int64_t tile = blockIdx.x; tile * kScanTile <= used; tile += gridDim.x) {
    const int64_t first = tile * kScanTile + int64_t(threadIdx.x) * kScanItems;
    unsigned long long items[kScanItems];
    for (int k = 0; k < kScanItems; ++k) items[k] = first + k < used ? centre_rows[first + k] : 0;
    unsigned long long tile_total;
    Scan(scratch).ExclusiveSum(items, items, tile_total);
    for (int k = 0; k < kScanItems; ++k)
      if (first + k <= used) centre_rows[first + k] = items[k];
    if (threadIdx.x == 0) tile_sums[tile] = tile_total;
    __syncthreads();  // scratch is reused by the next tile
  }
}

// One block: the tile totals' exclusive scan, a block's width at a time with a carry.
__global__ void scan_tile_sums(unsigned long long* __restrict__ tile_sums, const unsigned int* __restrict__ total,
                               int64_t capacity) {
  using Scan = cub::BlockScan<unsigned long long, kScanThreads>;
  __shared__ typename Scan::TempStorage scratch;
  const int64_t tiles = used_centres(total, capacity) / kScanTile + 1;
  unsigned long long carry = 0;
  for (int64_t base = 0; base < tiles; base += kScanThreads) {
    const int64_t t = base + threadIdx.x;
    unsigned long long value = t < tiles ? tile_sums[t] : 0, chunk_total;
    Scan(scratch).ExclusiveSum(value, value, chunk_total);
    if (t < tiles) tile_sums[t] = value + carry;
    carry += chunk_total;
    __syncthreads();
  }
}

__global__ void add_tile_offsets(unsigned long long* __restrict__ centre_rows, const unsigned int* __restrict__ total,
                                 int64_t capacity, const unsigned long long* __restrict__ tile_sums) {
  const int64_t used = used_centres(total, capacity);
  for (int64_t tile = blockIdx.x; tile * kScanTile <= used; tile += gridDim.x) {
    const unsigned long long offset = tile_sums[tile];
    if (offset == 0) continue;
    const int64_t end = std::min<int64_t>(used, tile * kScanTile + kScanTile - 1);
    for (int64_t i = tile * kScanTile + threadIdx.x; i <= end; i += blockDim.x) centre_rows[i] += offset;
  }
}

// The bitmap: bit x of voxel row (y, z) is bit x % 32 of word (z·words_per_row + x / 32)·ny + y
// — y fastest, so the consecutive rows of a ball (dy fastest) are adjacent words, one cache line.

constexpr int kMaxRowsPerThread = 16;

// Step 4's walk over the rows of the centres [s, e) (one class, or two adjacent ones): rows
// [row_start[s], row_start[e]), where centre k owns rows row_start[k] … row_start[k+1] − 1 of
// its box (box_of), dy fastest. A thread takes a run of consecutive rows, so it looks a
// centre up once per run (a look-up costs as much as a few rows, and small balls have few):
// up to kMaxRowsPerThread, fewer when the grid has threads to spare — a run is a chain of
// dependent loads, and in a small class the longest chain is the launch's time. For each row
// that meets the volume, `run(row_words, a, b, y, z, value, k)` gets the row's first bitmap
// word and each clipped x-run [a, b] of centre k; rows outside the ball (box corners) give
// none, and a periodic ball wider than the period gives some voxels twice.
template <class M, class Run>
__device__ void walk_rows(int64_t s, int64_t e, const typename M::value_type* __restrict__ centre_r2,
                          const uint32_t* __restrict__ centre_index, const RowCut* __restrict__ centre_cut,
                          const unsigned long long* __restrict__ row_start, const Geometry& g, const M& m,
                          unsigned int* bitmap, int64_t words_per_row, Run&& run) {
  using V = typename M::value_type;
  if (s >= e) return;
  const unsigned long long begin = row_start[s], end = row_start[e];
  if (begin == end) return;  // every centre's rows were cut
  const unsigned long long threads = uint64_t(gridDim.x) * blockDim.x;
  const unsigned long long spread = (end - begin + threads - 1) / threads;  // ≥ 1
  const unsigned long long per_thread = spread < kMaxRowsPerThread ? spread : kMaxRowsPerThread;
  const unsigned long long runs = (end - begin + per_thread - 1) / per_thread;
  const bool wrap_x = g.along(0) == Boundary::periodic, wrap_y = g.along(1) == Boundary::periodic,
             wrap_z = g.along(2) == Boundary::periodic;
  const int64_t plane_words = words_per_row * g.ny;
  // Extents are below 2^15 (validate_shape), so coordinates and offsets are ints.
  const int nx = int(g.nx), ny = int(g.ny), nz = int(g.nz);
  for (unsigned long long r = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; r < runs; r += threads) {
    const unsigned long long first = begin + r * per_thread;
    const unsigned long long last = first + per_thread < end ? first + per_thread : end;
    int64_t lo = s, hi = e - 1;  // the last centre k with row_start[k] ≤ first
    while (lo < hi) {
      const int64_t mid = (lo + hi + 1) / 2;
      if (row_start[mid] <= first) lo = mid; else hi = mid - 1;
    }
    int64_t k = lo;
    V r2{};
    float value = 0;
    int cx = 0, cy = 0, cz = 0, y0 = 0, z0 = 0, x0 = 0, x1 = 0, side = 1;
    float inv_side = 1.0f;
    unsigned long long own_first = 0, own_end = 0;
    auto load = [&] {
      r2 = centre_r2[k];
      value = m.radius(r2);
      int64_t x, y, z;
      g.split(centre_index[k], x, y, z);
      cx = int(x), cy = int(y), cz = int(z);
      const RowBox box = box_of(m, r2, g, centre_cut[k], cy, cz);
      y0 = box.y0, z0 = box.z0, x0 = box.x0, x1 = box.x1;
      side = box.y1 - box.y0 + 1;  // ≥ 1 whenever the centre owns rows
      inv_side = 1.0f / float(side);
      own_first = row_start[k];
      own_end = row_start[k + 1];
    };
    load();
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
      int from, to;
      if (!clip_chord(int(detail::chord_half_width(m, r2, 0, dy, dz)), x0, x1, from, to)) continue;
      int y = cy + dy, z = cz + dz;
      if (y < 0 || y >= ny) {
        if (!wrap_y) continue;
        y = ((y % ny) + ny) % ny;
      }
      if (z < 0 || z >= nz) {
        if (!wrap_z) continue;
        z = ((z % nz) + nz) % nz;
      }
      unsigned int* words = bitmap + int64_t(z) * plane_words + y;
      const int a = cx + from, b = cx + to;
      if (!wrap_x) {
        run(words, a > 0 ? a : 0, b < nx - 1 ? b : nx - 1, y, z, value, k);
      } else if (b - a + 1 >= nx) {
        run(words, 0, nx - 1, y, z, value, k);
      } else if (a < 0) {
        run(words, a + nx, nx - 1, y, z, value, k);
        run(words, 0, b, y, z, value, k);
      } else if (b >= nx) {
        run(words, a, nx - 1, y, z, value, k);
        run(words, 0, b - nx, y, z, value, k);
      } else {
        run(words, a, b, y, z, value, k);
      }
    }
  }
}

// The bits of word w of the x-run [a, b].
__device__ inline unsigned int run_bits(int w, int a, int b) {
  const unsigned int from = w == (a >> 5) ? unsigned(a & 31) : 0u;
  const unsigned int to = w == (b >> 5) ? unsigned(b & 31) : 31u;
  return (to == 31 ? 0xFFFFFFFFu : ((1u << (to + 1)) - 1u)) & ~((1u << from) - 1u);
}

// A step-4 kernel may be launched before the previous kernel has finished (programmatic
// dependent launch, thickness.cu's launch_painter): it waits here for that kernel's
// completion and memory before reading anything, then lets the next one be set up.
__device__ inline void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
  cudaTriggerProgrammaticLaunchCompletion();
#endif
}

// Centres [begin, end) of class q (clamped to the capacity: overflow is flagged elsewhere).
__device__ inline void class_range(int q, const unsigned int* class_start, const unsigned int* class_count,
                                   int64_t capacity, int64_t& begin, int64_t& end) {
  begin = class_start[q];
  end = begin + class_count[q] < capacity ? begin + class_count[q] : capacity;
}

// Sets the bits of the x-run [a, b] in the row whose first word is `words`; returns how many
// were not set before.
__device__ inline unsigned int union_run(unsigned int* words, int stride, int a, int b) {
  unsigned int fresh = 0;
  for (int w = a >> 5; w <= (b >> 5); ++w) {
    const unsigned int bits = run_bits(w, a, b);
    unsigned int* word = words + int64_t(w) * stride;
    // A stale read only costs an atomic: the atomic's old value decides.
    if ((*word & bits) == bits) continue;
    fresh += __popc(bits & ~atomicOr(word, bits));
  }
  return fresh;
}

// Step 4 of the PSD path, the union: sets the bits of class q's rows; counts the bits set
// for the first time into class_newly[q].
template <class M>
__global__ void paint_class(int q, const typename M::value_type* __restrict__ centre_r2,
                            const uint32_t* __restrict__ centre_index, const RowCut* __restrict__ centre_cut,
                            const unsigned long long* __restrict__ row_start,
                            const unsigned int* __restrict__ class_start, const unsigned int* __restrict__ class_count,
                            int64_t capacity, Geometry g, M m, unsigned int* __restrict__ bitmap, int64_t words_per_row,
                            unsigned long long* __restrict__ class_newly) {
  wait_for_previous_kernel();
  const int stride = int(g.ny);
  int64_t begin, end;
  class_range(q, class_start, class_count, capacity, begin, end);
  unsigned long long fresh = 0;
  walk_rows(begin, end, centre_r2, centre_index, centre_cut, row_start, g, m, bitmap, words_per_row,
            [&](unsigned int* words, int a, int b, int, int, float, int64_t) { fresh += union_run(words, stride, a, b); });
  for (int o = 16; o > 0; o >>= 1) fresh += __shfl_down_sync(0xFFFFFFFFu, fresh, o);
  if ((threadIdx.x & 31) == 0 && fresh) atomicAdd(&class_newly[q], fresh);
}

// Step 4 of the map, band q: every ball of band q writes its radius, by atomicMax on the
// float's bits (non-negative floats order as their bits), to the voxels of its rows that no
// larger band covers; in the same launch the balls of band q + 1 add their union to the
// bitmap (for the top band, q + 1 is the empty class that ClassSet keeps above the top and
// place_classes places). The skip is only a saving — an extra atomicMax by a smaller ball leaves
// the larger value — so reading band q + 1's bits while they are being set is exact: a voxel
// skipped for one of them lies in a larger ball. One launch a band instead of two; band 1's
// union is never painted, nothing reads it. With `filter_values` a thread reads a word's
// values before its atomics and sends only those that raise a value: most voxels lie in
// several balls of a band, and on maps much larger than L2 each atomic is a trip to DRAM
// (1000³ with 15 % bands: 674 → 551 ms); with the narrow bands the engine now uses there,
// and on smaller maps at any width, the reads cost more than the atomics they save (1000³
// with 3 % bands: 448 against 393 ms; 250³: 3.00 against 2.53 ms), so it is off unless asked
// (results/bench/NOTES.md steps 17 and 19).
template <class M>
__global__ void paint_band(int q, const typename M::value_type* __restrict__ centre_r2,
                           const uint32_t* __restrict__ centre_index, const RowCut* __restrict__ centre_cut,
                           const unsigned long long* __restrict__ row_start,
                           const unsigned int* __restrict__ class_start, const unsigned int* __restrict__ class_count,
                           int64_t capacity, Geometry g, M m, unsigned int* bitmap, int64_t words_per_row,
                           float* thickness, bool filter_values) {
  wait_for_previous_kernel();
  const int stride = int(g.ny);
  int64_t larger_begin, larger_end, begin, end;
  class_range(q + 1, class_start, class_count, capacity, larger_begin, larger_end);
  class_range(q, class_start, class_count, capacity, begin, end);
  // Class q + 1's centres lie just before class q's (place_classes: largest first).
  if (larger_begin >= larger_end) larger_begin = begin;
  walk_rows(larger_begin, end, centre_r2, centre_index, centre_cut, row_start, g, m, bitmap, words_per_row,
            [&](unsigned int* words, int a, int b, int y, int z, float value, int64_t k) {
              if (k < begin) {  // band q + 1: the union
                union_run(words, stride, a, b);
                return;
              }
              const int64_t row_base = (int64_t(z) * g.ny + y) * g.nx;
              const int bits_of_value = __float_as_int(value);
              for (int w = a >> 5; w <= (b >> 5); ++w) {
                unsigned int open = run_bits(w, a, b) & ~words[int64_t(w) * stride];
                int* cell = reinterpret_cast<int*>(thickness) + row_base + w * 32;
                if (filter_values && open) {
                  // The word's open values, read together (one latency, not one per voxel),
                  // keep only the voxels this ball can raise. A stale read is an older,
                  // smaller value (values only grow): it can let an unneeded atomic through,
                  // never stop a needed one.
                  unsigned int raise = 0;
#pragma unroll
                  for (int j = 0; j < 32; ++j)
                    if ((open >> j) & 1u) raise |= unsigned(cell[j] < bits_of_value) << j;
                  open = raise;
                }
                while (open) {
                  const int bit = __ffs(open) - 1;
                  open &= open - 1;
                  atomicMax(cell + bit, bits_of_value);
                }
              }
            });
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
