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
//    the bitmap for the bands below: marked as it paints, in a bitmap of its own that the
//    next band's launch merges (paint_band_marking). Any order within a band is right.
//
// Either way a ball skips the voxels that a face or yz-diagonal neighbour of no smaller
// radius paints (row_cut: whole rows toward ±y, ±z and the diagonals, the ends of rows toward
// ±x), which is exact for both: a skipped voxel is covered by a ball at least as large.
//
//  1. count_classes: centres per class (block histograms), phase voxels (those with a
//     distance); a bit per voxel marks the centres (a warp's ballot is one word: no atomics),
//     so the containment test (is_centre_in_warp) runs once.
//  2. place_classes (one thread): class regions, largest class first; the total and overflow.
//  3. write_classes: each marked centre into its class region (block-reserved ranges, from a
//     list of the block's centres), with its row cut and its number of painter items; an
//     exclusive scan of those gives item numbers (sum_tiles, scan_tile_sums, scan_tiles: over
//     the centres found, not the capacity).
//  4. Per class, largest first: paint_class (PSD: the union), or for the map
//     paint_band_marking (band q's values and marks, band q + 1's marks merged first); a
//     warp shares out the rows of a task of 32 items, and takes its tasks dealt or claimed.
//  5. counts_from_classes (PSD): running sums → at_least[edges], above, phase.
#include <cuda_runtime.h>

#include <cub/block/block_load.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>
#include <cuda/std/functional>

#include <algorithm>
#include <type_traits>

#include "../common/row_cuts.hpp"
#include "thickness_kernels.cuh"

namespace poreforge::cuda::kernels {

// How many thresholds the radius of squared radius r2 passes: 0 … n + 1 (n edges). Host and
// device: thickness.cu's class tables are built with it.
template <class M>
PF_HD int coverage_class(const M& m, typename M::value_type r2, const double* edges, int n) {
  const double r = double(m.radius(r2));  // the float radius the map would store
  int a = 0, b = n;                       // edges are increasing: count those ≤ r
  while (a < b) {
    const int mid = (a + b) / 2;
    if (r >= edges[mid]) a = mid + 1; else b = mid;
  }
  return a == n && r > edges[n - 1] ? n + 1 : a;
}

// The class of squared radius r2: from `table` (integer distances up to `table_limit`, built on
// the host with coverage_class's own rule, thickness.cu's class_table) when there is one,
// else by coverage_class's search. The centre passes ask it for every centre (10^8 at 1000³),
// where the search is a chain of ~9 dependent shared-memory loads and double compares.
template <class M>
__device__ int class_of(const M& m, typename M::value_type r2, const uint16_t* __restrict__ table, int64_t table_limit,
                        const double* edges, int n) {
  if constexpr (std::is_same_v<M, detail::VoxelMetric>)
    if (table && int64_t(r2) <= table_limit) return table[r2];
  return coverage_class(m, r2, edges, n);
}

using detail::box_of;
using detail::clip_chord;
using detail::column_rows;
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
__global__ void count_classes(const typename M::value_type* __restrict__ d2,
                              Geometry g, detail::ContainmentView<M> table, M m, int64_t voxels,
                              const double* __restrict__ edges, int num_edges, const uint16_t* __restrict__ class_table,
                              int64_t table_limit, unsigned int* __restrict__ class_count,
                              unsigned int* __restrict__ centre_bits, unsigned long long* __restrict__ phase_total) {
  extern __shared__ unsigned int histogram[];
  using BlockSum = cub::BlockReduce<unsigned int, kCentreThreads>;
  __shared__ typename BlockSum::TempStorage temp;
  const int classes = num_edges + 2;
  for (int q = threadIdx.x; q < classes; q += blockDim.x) histogram[q] = 0;
  edges = shared_edges(histogram, classes, edges, num_edges);
  __syncthreads();
  unsigned int phase = 0;
  // A phase voxel is one with a distance (≥ one voxel, or infinite); the mask is not read.
  // (Loading the thread's 8 distances before the first test took 72 registers against 48 and
  // the kernel 10.8 → 28 ms at 1000³: docs/performance.md.)
  using V = typename M::value_type;
  for (int k = 0; k < kCentreItems; ++k) {
    const int64_t i = striped_voxel(k);
    const V r2 = i < voxels ? d2[i] : V(0);
    phase += r2 != V(0);
    bool centre = false;
    if (is_centre_in_warp(d2, i, r2, voxels, g, table)) {
      const int q = class_of(m, r2, class_table, table_limit, edges, num_edges);
      centre = q > 0;
      if (centre) atomicAdd(&histogram[q], 1u);
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
  class_start[num_edges + 2] = class_cursor[num_edges + 2] = 0;  // the empty class above the top (paint_band_marking)
  for (int q = num_edges + 1; q >= 1; --q) {
    class_start[q] = class_cursor[q] = static_cast<unsigned int>(offset);
    offset += class_count[q];
  }
  *total = static_cast<unsigned int>(offset);
  if (offset > static_cast<unsigned long long>(capacity)) status->overflow = 1;
}

// Threads of a step-4 (painter) block.
constexpr int kPaintThreads = 256;

// Step 4's unit of work (walk_rows): a segment of up to kRowsPerItem rows of one column of a
// centre's box. A centre has a column per dz of its box and as many segments per column as
// its box is high; segments that miss the ball are dropped by the walk, not walked. Each item
// costs a centre look-up and a clip: 32 rows against 16 took the 1000³ map 163.8 → 160.9 ms
// and its PSD path 126 → 121, and left 250³, 512³ and Berea within noise (docs/performance.md).
constexpr int kRowsPerItem = 32;

PF_HD int64_t items_of(const RowBox& box) {
  if (box.rows() == 0) return 0;
  return int64_t(box.z1 - box.z0 + 1) * ((box.y1 - box.y0 + kRowsPerItem) / kRowsPerItem);
}

// Step 3. Dynamic shared memory: class_pass_shared(2 × classes, edges) (ranks, block bases).
// The block's centres are listed first and described (row cut, painter items) from the list,
// a thread a centre: described where they were found, a warp's 32 voxels held ~3 centres at
// 1000³ and the warp spent the row cut's ten loads and the box's arithmetic on each of them
// in turn (docs/performance.md).
template <class M>
__global__ void write_classes(const typename M::value_type* __restrict__ d2, Geometry g, M m, int64_t voxels,
                              const unsigned int* __restrict__ centre_bits, const double* __restrict__ edges,
                              int num_edges, const uint16_t* __restrict__ class_table, int64_t table_limit,
                              unsigned int* __restrict__ class_cursor, int64_t capacity,
                              typename M::value_type* __restrict__ centre_r2, uint32_t* __restrict__ centre_index,
                              RowCut* __restrict__ centre_cut, unsigned long long* __restrict__ centre_items) {
  extern __shared__ unsigned int shared_counts[];
  // The block's centres: voxel (offset in the chunk), class, rank within the block's class.
  __shared__ uint16_t found_voxel[kCentreChunk], found_rank[kCentreChunk];
  __shared__ unsigned int found_class[kCentreChunk];
  __shared__ unsigned int found;
  const int classes = num_edges + 2;
  unsigned int* block_count = shared_counts;
  unsigned int* block_base = shared_counts + classes;
  for (int q = threadIdx.x; q < classes; q += blockDim.x) block_count[q] = 0;
  if (threadIdx.x == 0) found = 0;
  edges = shared_edges(shared_counts, 2 * classes, edges, num_edges);
  __syncthreads();
  const int lane = int(threadIdx.x & 31);
  for (int k = 0; k < kCentreItems; ++k) {
    const int64_t i = striped_voxel(k);
    const bool centre = i < voxels && (centre_bits[i >> 5] >> (i & 31)) & 1u;
    const int q = centre ? class_of(m, d2[i], class_table, table_limit, edges, num_edges) : 0;
    // A place in the list for each centre of the warp: one shared atomic a warp.
    const unsigned int listed = __ballot_sync(0xFFFFFFFFu, q > 0);
    unsigned int first = 0;
    if (lane == 0 && listed) first = atomicAdd(&found, unsigned(__popc(listed)));
    first = __shfl_sync(0xFFFFFFFFu, first, 0);
    if (q > 0) {
      const unsigned int at = first + unsigned(__popc(listed & ((1u << lane) - 1u)));
      found_voxel[at] = uint16_t(k * kCentreThreads + int(threadIdx.x));
      found_class[at] = unsigned(q);
      found_rank[at] = uint16_t(atomicAdd(&block_count[q], 1u));
    }
  }
  __syncthreads();
  for (int q = threadIdx.x; q < classes; q += blockDim.x)
    block_base[q] = block_count[q] ? atomicAdd(&class_cursor[q], block_count[q]) : 0;
  __syncthreads();
  const int64_t chunk_start = int64_t(blockIdx.x) * kCentreChunk;
  for (unsigned int j = threadIdx.x; j < found; j += blockDim.x) {
    const int64_t slot = int64_t(block_base[found_class[j]]) + found_rank[j];
    if (slot >= capacity) continue;  // overflow: place_classes has raised the flag
    const int64_t i = chunk_start + found_voxel[j];
    int64_t x, y, z;
    g.split(uint32_t(i), x, y, z);
    const typename M::value_type r2 = d2[i];
    const RowCut cut = row_cut<M>(d2, i, x, y, z, g);
    centre_r2[slot] = r2;
    centre_index[slot] = static_cast<uint32_t>(i);
    centre_cut[slot] = cut;
    centre_items[slot] = static_cast<unsigned long long>(items_of(box_of(m, r2, g, cut, int(y), int(z))));
  }
}

// The exclusive scan of the centres' item counts, in place over entries 0 … used (used =
// the centres found, at most the capacity; entry `used` becomes the total). A library scan
// must be told its length on the host, so it ran over the whole capacity — with room for a
// centre at every voxel (the annealer's contexts), clearing and scanning the unused slots cost
// more than a tenth of a 250³ PSD evaluation. Tiles of kScanTile entries: each tile's total
// (sum_tiles), the totals scanned (scan_tile_sums), each tile scanned from its offset
// (scan_tiles). Entries move between memory and registers through shared memory (warp
// transposes), so each load and store of a warp is contiguous; the tiles' sums read the
// entries and write nothing. Before (a tile scanned and written, then offsets added in a
// second pass; each thread's 8 entries loaded and stored as 8 strided accesses) the three
// kernels took 1.9 ms at 1000³ (docs/performance.md). Grids are sized for the
// capacity and loop; tiles past `used` do nothing.
constexpr int kScanThreads = 256, kScanItems = 8, kScanTile = kScanThreads * kScanItems;

// Tiles of the scan for a capacity (its capacity + 1 entries).
inline int64_t scan_tile_count(int64_t capacity) { return capacity / kScanTile + 1; }

__device__ inline int64_t used_centres(const unsigned int* total, int64_t capacity) {
  return *total < capacity ? int64_t(*total) : capacity;
}

using ScanLoad = cub::BlockLoad<unsigned long long, kScanThreads, kScanItems, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
using ScanStore = cub::BlockStore<unsigned long long, kScanThreads, kScanItems, cub::BLOCK_STORE_WARP_TRANSPOSE>;

// The entries of a tile that hold centres' counts (the rest load as 0).
__device__ inline int tile_entries(int64_t tile, int64_t used) {
  const int64_t left = used - tile * kScanTile;
  return int(left < kScanTile ? left : kScanTile);
}

__global__ void sum_tiles(const unsigned long long* __restrict__ centre_items, const unsigned int* __restrict__ total,
                          int64_t capacity, unsigned long long* __restrict__ tile_sums) {
  using Sum = cub::BlockReduce<unsigned long long, kScanThreads>;
  __shared__ union {
    typename ScanLoad::TempStorage load;
    typename Sum::TempStorage sum;
  } scratch;
  const int64_t used = used_centres(total, capacity);
  for (int64_t tile = blockIdx.x; tile * kScanTile <= used; tile += gridDim.x) {
    unsigned long long items[kScanItems];
    ScanLoad(scratch.load).Load(centre_items + tile * kScanTile, items, tile_entries(tile, used), 0ull);
    __syncthreads();  // the load's scratch is the sum's
    const unsigned long long tile_total = Sum(scratch.sum).Sum(items);
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

__global__ void scan_tiles(unsigned long long* __restrict__ centre_items, const unsigned int* __restrict__ total,
                           int64_t capacity, const unsigned long long* __restrict__ tile_sums) {
  using Scan = cub::BlockScan<unsigned long long, kScanThreads>;
  __shared__ union {
    typename ScanLoad::TempStorage load;
    typename Scan::TempStorage scan;
    typename ScanStore::TempStorage store;
  } scratch;
  const int64_t used = used_centres(total, capacity);
  for (int64_t tile = blockIdx.x; tile * kScanTile <= used; tile += gridDim.x) {
    unsigned long long* entries = centre_items + tile * kScanTile;
    const int loaded = tile_entries(tile, used);
    unsigned long long items[kScanItems];
    ScanLoad(scratch.load).Load(entries, items, loaded, 0ull);
    __syncthreads();
    const unsigned long long offset = tile_sums[tile];
    Scan(scratch.scan).ExclusiveScan(items, items, offset, ::cuda::std::plus<unsigned long long>());
    __syncthreads();
    ScanStore(scratch.store).Store(entries, items, loaded + 1 < kScanTile ? loaded + 1 : kScanTile);  // + entry `used`
    __syncthreads();  // scratch is reused by the next tile
  }
}

// The bitmap: bit x of voxel row (y, z) is bit x % 32 of word (z·words_per_row + x / 32)·ny + y
// — y fastest, so the consecutive rows of a ball (dy fastest) are adjacent words, one cache line.

// One lane's item: rows [lo, lo + count) of column dz of its centre (count 0: none).
template <class V>
struct WalkItem {
  V r2{};
  float value = 0;
  int cx = 0, cy = 0, cz = 0, dz = 0, x0 = 0, x1 = 0, lo = 0, count = 0;
};

// The rows of `item`, which centre k owns: its segment clipped to the rows of its column that
// meet the ball (column_rows).
template <class M>
__device__ WalkItem<typename M::value_type> walk_item(unsigned long long item, int64_t k,
                                                      const typename M::value_type* __restrict__ centre_r2,
                                                      const uint32_t* __restrict__ centre_index,
                                                      const RowCut* __restrict__ centre_cut,
                                                      const unsigned long long* __restrict__ item_start,
                                                      const Geometry& g, const M& m) {
  WalkItem<typename M::value_type> w;
  w.r2 = centre_r2[k];
  w.value = m.radius(w.r2);
  int64_t x, y, z;
  g.split(centre_index[k], x, y, z);
  w.cx = int(x), w.cy = int(y), w.cz = int(z);
  const RowBox box = box_of(m, w.r2, g, centre_cut[k], w.cy, w.cz);
  const int segments = (box.y1 - box.y0 + kRowsPerItem) / kRowsPerItem;  // ≥ 1: the centre owns items
  const int local = int(item - item_start[k]);
  const int column = local / segments, segment = local - column * segments;
  w.dz = box.z0 + column;
  const detail::RowSpan rows = column_rows(m, box, w.dz);
  const int segment_lo = box.y0 + segment * kRowsPerItem;
  w.lo = rows.lo > segment_lo ? rows.lo : segment_lo;
  const int hi = rows.hi < segment_lo + kRowsPerItem - 1 ? rows.hi : segment_lo + kRowsPerItem - 1;
  w.count = hi >= w.lo ? hi - w.lo + 1 : 0;
  w.x0 = box.x0, w.x1 = box.x1;
  return w;
}

// The centre of each lane's item `base + lane` among centres [s, e) (the last k with
// item_start[k] ≤ item), found by the warp together: a 33-way search for the centre of `base`
// (each round the 32 lanes test 32 pivots and a ballot keeps one gap: ~6 rounds of one load
// for 10^8 centres, where a binary search is ~27 loads in a chain), then each lane counts the
// next 32 centres' first items below its own (shuffles). A lane whose item lies beyond those
// 32 centres (centres with no items between) searches on alone, if it `wants` the answer (a
// lane without an item does not). Every lane must call it.
__device__ inline int64_t warp_item_centre(unsigned long long base, int64_t s, int64_t e,
                                           const unsigned long long* __restrict__ item_start, int lane,
                                           bool wants) {
  constexpr unsigned int kWarp = 0xFFFFFFFFu;
  int64_t lo = s, hi = e - 1;  // item_start[lo] ≤ base; the answer lies in [lo, hi]
  while (hi - lo >= 32) {
    const int64_t pivot = lo + (hi - lo) * (lane + 1) / 33;
    const unsigned int below = __ballot_sync(kWarp, item_start[pivot] <= base);  // a prefix of the lanes
    const int c = __popc(below);
    const int64_t next_lo = __shfl_sync(kWarp, pivot, c > 0 ? c - 1 : 0);
    const int64_t next_hi = __shfl_sync(kWarp, pivot, c < 32 ? c : 31) - 1;
    if (c > 0) lo = next_lo;
    if (c < 32) hi = next_hi;
  }
  const unsigned int below = __ballot_sync(kWarp, lo + lane <= hi && item_start[lo + lane] <= base);
  const int64_t first = lo + __popc(below) - 1;  // base's centre
  // The first items of centres first + 1 … first + 32 (item_start[e] is the end of the range).
  const unsigned long long starts = first + 1 + lane <= e ? item_start[first + 1 + lane] : ~0ull;
  const unsigned long long item = base + lane;
  int passed = 0;  // of those centres, how many start at or before this lane's item
  for (int step = 16; step > 0; step >>= 1)
    if (__shfl_sync(kWarp, starts, passed + step - 1) <= item) passed += step;
  int64_t k = first + passed;
  const unsigned long long last_start = __shfl_sync(kWarp, starts, 31);  // by every lane
  if (wants && last_start <= item && k + 1 < e) {  // beyond the 32: on alone
    int64_t a = first + 32, b = e - 1;
    while (a < b) {
      const int64_t mid = (a + b + 1) / 2;
      if (item_start[mid] <= item) a = mid; else b = mid - 1;
    }
    k = a;
  }
  return k;
}

// A row (y, z) of the volume: its first word in the bitmaps (word w of the row is word + w·ny,
// coverage_kernels' layout) and its first voxel.
struct RowAt {
  uint32_t word, voxel;
};

// Step 4's walk over the rows of the centres [s, e) (one class). The
// work is numbered in items: centre k owns items item_start[k] … item_start[k + 1] − 1, one
// per column dz of its box (box_of) and segment of kRowsPerItem rows of the box's height
// (items_of). A warp takes 32 consecutive items (fewer in a small class): the lanes find their
// centres together (warp_item_centre), each clips its segment to the rows of its column that
// meet the ball (walk_item), and the warp shares out the rows left, 32 at a time, so that
// every lane walks a row that meets the ball. Walking whole boxes row by row, a thread a run
// of rows, spent a step on every box corner, and a warp a step on any row one of its lanes
// walked (docs/performance.md). For each row that meets the volume,
// `run(row, a, b, value)` gets the row's indices (RowAt) and each clipped x-run [a, b]; a
// periodic ball wider than the period gives some voxels twice. The value (the ball's radius)
// reaches `run` only when kValue asks for it: each field a row carries is a shuffle per row
// (docs/performance.md). kClaim: the warps claim their tasks from `task_claims`
// (below); without it they are dealt and `task_claims` is unused — a choice made at compile
// time, because the dealt walk compiled beside a claim chosen at run time ran the 1000³ map
// 24 % slower (176.1 against 141.6 ms, docs/performance.md).
template <class M, bool kClaim, bool kValue, class Run>
__device__ void walk_rows(int64_t s, int64_t e, const typename M::value_type* __restrict__ centre_r2,
                          const uint32_t* __restrict__ centre_index, const RowCut* __restrict__ centre_cut,
                          const unsigned long long* __restrict__ item_start, const Geometry& g, const M& m,
                          int64_t words_per_row, unsigned long long* task_claims, Run&& run) {
  using V = typename M::value_type;
  constexpr unsigned int kWarp = 0xFFFFFFFFu;
  if (s >= e) return;
  const unsigned long long begin = item_start[s], end = item_start[e];
  if (begin == end) return;  // every centre's rows were cut
  const int lane = int(threadIdx.x & 31);
  const unsigned long long warps = (uint64_t(gridDim.x) * blockDim.x) >> 5;
  // Items per warp: 32, fewer when the grid has warps to spare — a warp's rows are a chain of
  // steps, and in a small class the longest chain is the launch's time.
  const unsigned long long spread = (end - begin + warps - 1) / warps;  // ≥ 1
  const int per_warp = spread < 32 ? int(spread) : 32;
  const unsigned long long tasks = (end - begin + per_warp - 1) / per_warp;
  const bool wrap_x = g.along(0) == Boundary::periodic, wrap_y = g.along(1) == Boundary::periodic,
             wrap_z = g.along(2) == Boundary::periodic;
  // Bitmap words and voxels number below 2^32 (Engine: voxels < 2^32; the bitmap has ≤ 1/32
  // of them plus a word a row): 32-bit row indices, one wide multiply-add per access.
  const uint32_t plane_words = uint32_t(words_per_row * g.ny);
  // Extents are below 2^15 (validate_shape), so coordinates and offsets are ints.
  const int nx = int(g.nx), ny = int(g.ny), nz = int(g.nz);
  // A warp's first task is its number. The next ones: dealt, every `warps`-th task; or, with
  // kClaim, claimed from `task_claims` (zero before the launch) by lane 0, so that a warp
  // whose tasks were light takes more. A claim is made a task ahead: the one sent as task n
  // starts is read when task n + 1 ends.
  const bool claim = kClaim && tasks > warps;  // warp-uniform
  auto next_of = [&](unsigned long long dealt) {
    return claim ? (lane == 0 ? warps + atomicAdd(task_claims, 1ull) : 0ull) : dealt;
  };
  unsigned long long t = (blockIdx.x * uint64_t(blockDim.x) + threadIdx.x) >> 5;
  unsigned long long task_after_t = next_of(t + warps);
  while (t < tasks) {
    const unsigned long long task_after_that = next_of(task_after_t + warps);
    const unsigned long long item = begin + t * per_warp + lane;
    const bool has_item = lane < per_warp && item < end;
    const int64_t centre = warp_item_centre(begin + t * per_warp, s, e, item_start, lane, has_item);
    const WalkItem<V> own = has_item
                                ? walk_item(item, centre, centre_r2, centre_index, centre_cut, item_start, g, m)
                                : WalkItem<V>{};
    const int count = own.count, lo = own.lo, dz = own.dz, cx = own.cx, x0 = own.x0, x1 = own.x1;
    const int cyz = own.cy | (own.cz << 16);  // both below 2^15: one shuffle
    const V r2 = own.r2;
    const float value = own.value;
    // The warp's rows, numbered lane by lane: this lane's are [rows_end − count, rows_end).
    int rows_end = count;
    for (int o = 1; o < 32; o <<= 1) {
      const int before = __shfl_up_sync(kWarp, rows_end, o);
      if (lane >= o) rows_end += before;
    }
    const int total = __shfl_sync(kWarp, rows_end, 31);
    const int first_dy = lo - (rows_end - count);  // row number j of this lane's rows is dy = first_dy + j
    for (int j0 = 0; j0 < total; j0 += 32) {
      const int j = j0 + lane;
      int owner = 0;  // the lanes whose rows all come before row j
      for (int step = 16; step > 0; step >>= 1)
        if (__shfl_sync(kWarp, rows_end, owner + step - 1) <= j) owner += step;
      const int dy = __shfl_sync(kWarp, first_dy, owner) + j;
      const int row_dz = __shfl_sync(kWarp, dz, owner);
      const int row_cx = __shfl_sync(kWarp, cx, owner), row_cyz = __shfl_sync(kWarp, cyz, owner);
      const int row_cy = row_cyz & 0xFFFF, row_cz = row_cyz >> 16;
      const int row_x0 = __shfl_sync(kWarp, x0, owner), row_x1 = __shfl_sync(kWarp, x1, owner);
      const V row_r2 = __shfl_sync(kWarp, r2, owner);
      float row_value = 0;
      if constexpr (kValue) row_value = __shfl_sync(kWarp, value, owner);
      if (j >= total) continue;
      int from, to;
      if (!clip_chord(int(detail::chord_half_width(m, row_r2, 0, dy, row_dz)), row_x0, row_x1, from, to)) continue;
      int y = row_cy + dy, z = row_cz + row_dz;
      if (y < 0 || y >= ny) {
        if (!wrap_y) continue;
        y = ((y % ny) + ny) % ny;
      }
      if (z < 0 || z >= nz) {
        if (!wrap_z) continue;
        z = ((z % nz) + nz) % nz;
      }
      const RowAt row{uint32_t(z) * plane_words + uint32_t(y), (uint32_t(z) * uint32_t(ny) + uint32_t(y)) * uint32_t(nx)};
      const int a = row_cx + from, b = row_cx + to;
      if (!wrap_x) {
        run(row, a > 0 ? a : 0, b < nx - 1 ? b : nx - 1, row_value);
      } else if (b - a + 1 >= nx) {
        run(row, 0, nx - 1, row_value);
      } else if (a < 0) {
        run(row, a + nx, nx - 1, row_value);
        run(row, 0, b, row_value);
      } else if (b >= nx) {
        run(row, a, nx - 1, row_value);
        run(row, 0, b - nx, row_value);
      } else {
        run(row, a, b, row_value);
      }
    }
    // Claimed numbers are lane 0's. Claims only grow, so a warp whose next task is past the
    // end holds no claimed task that lies inside it.
    t = claim ? __shfl_sync(kWarp, task_after_t, 0) : task_after_t;
    task_after_t = task_after_that;
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

// Sets the bits of the x-run [a, b] of the row whose first word is `row_word` in `bitmap`
// (word w at row_word + w·stride); returns how many were not set before.
__device__ inline unsigned int union_run(unsigned int* bitmap, uint32_t row_word, int stride, int a, int b) {
  unsigned int fresh = 0;
  for (int w = a >> 5; w <= (b >> 5); ++w) {
    const unsigned int bits = run_bits(w, a, b);
    unsigned int* word = bitmap + (row_word + uint32_t(w) * uint32_t(stride));
    // A stale read only costs an atomic: the atomic's old value decides.
    if ((*word & bits) == bits) continue;
    fresh += __popc(bits & ~atomicOr(word, bits));
  }
  return fresh;
}

// Step 4 of the PSD path, the union: sets the bits of class q's rows; counts the bits set
// for the first time into class_newly[q]. `task_claims`: walk_rows' counter (kClaim).
// Blocks an SM it is held to (registers): five for integer distances (48 registers, none
// spilled, where four let it take 55), four for physical ones (five spilled 96 bytes).
template <class M>
constexpr int kPaintClassBlocks = std::is_same_v<M, detail::VoxelMetric> ? 5 : 4;
template <class M, bool kClaim>
__global__ void __launch_bounds__(kPaintThreads, kPaintClassBlocks<M>) paint_class(int q, const typename M::value_type* __restrict__ centre_r2,
                            const uint32_t* __restrict__ centre_index, const RowCut* __restrict__ centre_cut,
                            const unsigned long long* __restrict__ item_start,
                            const unsigned int* __restrict__ class_start, const unsigned int* __restrict__ class_count,
                            int64_t capacity, Geometry g, M m, unsigned int* __restrict__ bitmap, int64_t words_per_row,
                            unsigned long long* __restrict__ class_newly, unsigned long long* task_claims) {
  wait_for_previous_kernel();
  const int stride = int(g.ny);
  int64_t begin, end;
  class_range(q, class_start, class_count, capacity, begin, end);
  unsigned long long fresh = 0;
  walk_rows<M, kClaim, false>(begin, end, centre_r2, centre_index, centre_cut, item_start, g, m, words_per_row,
                             task_claims, [&](RowAt row, int a, int b, float) {
                               fresh += union_run(bitmap, row.word, stride, a, b);
                             });
  for (int o = 16; o > 0; o >>= 1) fresh += __shfl_down_sync(0xFFFFFFFFu, fresh, o);
  if ((threadIdx.x & 31) == 0 && fresh) atomicAdd(&class_newly[q], fresh);
}

// The map's value write for the x-run [a, b] of `row`: `bits_of_value` by atomicMax on the
// float's bits (non-negative floats order as their bits) to each voxel of `cells` (the map,
// as ints) that the coverage words leave open. With kMark (the marking painter) those voxels
// are also marked in `marks`, a bitmap of the coverage's layout. Every open voxel gets its
// atomic: reading a word's values first to send only those that raise one cost more than the
// atomics it saved with the default narrow bands (docs/performance.md). Addresses from 32-bit
// indices: 64-bit pointer arithmetic was about half of a word's instructions and a third of an
// atomic's (SASS, sm_90).
template <bool kMark>
__device__ inline void write_values(const unsigned int* coverage, unsigned int* marks, RowAt row, int stride, int a,
                                    int b, int* cells, int bits_of_value) {
  for (int w = a >> 5; w <= (b >> 5); ++w) {
    const uint32_t word = row.word + uint32_t(w) * uint32_t(stride);
    unsigned int open = run_bits(w, a, b) & ~coverage[word];
    if (!open) continue;
    if constexpr (kMark) {
      unsigned int* mark = marks + word;
      if ((*mark & open) != open) atomicOr(mark, open);  // a stale read only costs an atomic
    }
    const uint32_t first = row.voxel + uint32_t(w) * 32u;  // the word's first voxel
    while (open) {  // highest bit first: one instruction finds it
      const uint32_t bit = 31u - uint32_t(__clz(open));
      open ^= 1u << bit;
      atomicMax(cells + (first + bit), bits_of_value);
    }
  }
}

// The words of the merge that paint_band_marking's blocks claim at a time (16 KiB).
constexpr int64_t kMergeChunkWords = 4096;

// Adds `pending` (the marks of the band above) to the coverage and clears it, in chunks of
// kMergeChunkWords that the launch's blocks claim from `claims` (zero before the launch) until
// none is left: the first blocks to run share the pass out and start painting as soon as it
// is done, where a grid-stride split would leave a block that the GPU starts late (blocks
// past those resident wait for others to finish) its part of the pass until its turn.
// `words` is the bitmap's length; whole 16-byte groups, the tail by the last chunk's block.
// Not inlined: inlined, it took the painter from 47 registers to 70 (ptxas, sm_90), five
// blocks an SM to three.
__device__ __noinline__ void merge_pending_marks(unsigned int* coverage, unsigned int* pending, int64_t words,
                                           unsigned long long* claims) {
  __shared__ unsigned long long chunk;
  const int64_t chunks = (words + kMergeChunkWords - 1) / kMergeChunkWords;
  for (;;) {
    __syncthreads();  // every thread has read the previous chunk's number
    if (threadIdx.x == 0) chunk = atomicAdd(claims, 1ull);
    __syncthreads();
    const int64_t c = int64_t(chunk);
    if (c >= chunks) return;
    const int64_t first = c * kMergeChunkWords;
    const int64_t last = first + kMergeChunkWords < words ? first + kMergeChunkWords : words;
    const int64_t groups_end = last / 4;  // first is a multiple of 4
    uint4* cover4 = reinterpret_cast<uint4*>(coverage);
    uint4* pending4 = reinterpret_cast<uint4*>(pending);
    for (int64_t i = first / 4 + threadIdx.x; i < groups_end; i += blockDim.x) {
      const uint4 m = pending4[i];
      if ((m.x | m.y | m.z | m.w) == 0u) continue;
      uint4 v = cover4[i];
      v.x |= m.x, v.y |= m.y, v.z |= m.z, v.w |= m.w;
      cover4[i] = v;
      pending4[i] = make_uint4(0u, 0u, 0u, 0u);
    }
    for (int64_t i = groups_end * 4 + threadIdx.x; i < last; i += blockDim.x) {
      const unsigned int m = pending[i];
      if (m == 0u) continue;
      coverage[i] |= m;
      pending[i] = 0u;
    }
  }
}

// Step 4 of the map, band q, walking each row once: every ball of band q writes its radius to
// the voxels of its rows that no larger band covers, and marks those voxels in `marks`, a
// bitmap of the coverage's layout that this launch never reads (a ball must not skip a voxel
// for a smaller ball of its own band). Marking only the open voxels gives the same union as
// setting every row's bits: the others are covered already. The marks of band q + 1
// (`pending`, the other of the two mark bitmaps) join the coverage at the start of this
// launch (merge_pending_marks) and are cleared for band q − 1's marks; a painter that reads a
// coverage word before its merge only sends atomics that change nothing (a smaller radius
// over a larger one) and marks voxels that are covered already (so neither bitmap is
// __restrict__ here: the launch writes what it reads). The painter this one replaced walked
// band q + 1's rows again in band q's launch for the union: at 1000³ that second walk was
// about half of its instructions (docs/performance.md; it was slower at every size).
// Merging in the painter's own launch, not a launch of its own after each band, halves the
// launches.
template <class M, bool kClaim>
__global__ void paint_band_marking(int q, const typename M::value_type* __restrict__ centre_r2,
                                   const uint32_t* __restrict__ centre_index, const RowCut* __restrict__ centre_cut,
                                   const unsigned long long* __restrict__ item_start,
                                   const unsigned int* __restrict__ class_start,
                                   const unsigned int* __restrict__ class_count, int64_t capacity, Geometry g, M m,
                                   unsigned int* coverage, unsigned int* pending, unsigned int* __restrict__ marks,
                                   int64_t words, unsigned long long* merge_claims,
                                   int64_t words_per_row, float* __restrict__ thickness,
                                   unsigned long long* task_claims) {
  wait_for_previous_kernel();
  if (class_count[q + 1] > 0) merge_pending_marks(coverage, pending, words, merge_claims);  // none: nothing marked
  const int stride = int(g.ny);
  int64_t begin, end;
  class_range(q, class_start, class_count, capacity, begin, end);
  int* cells = reinterpret_cast<int*>(thickness);
  walk_rows<M, kClaim, true>(begin, end, centre_r2, centre_index, centre_cut, item_start, g, m, words_per_row,
                            task_claims, [&](RowAt row, int a, int b, float value) {
                              write_values<true>(coverage, marks, row, stride, a, b, cells, __float_as_int(value));
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
