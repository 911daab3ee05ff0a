// The swap scorer (cuda_engine.hpp): common/local_psd.hpp's local re-evaluation in kernels, for
// many candidate swaps at once. Every kernel takes a candidate per block row and a changed
// voxel (0: the one leaving the phase, 1: the one joining) per block column, and runs the same
// functions the CPU evaluator runs in loops, so both give the same counts to the bit.
//
// Scoring a batch: prepare (the joining voxel's new distance), reach (each change's R1 scan:
// how far distances change and how far the changed balls reach), near (the changed distances
// round each change, once), paint (each change's R2, slab by slab in shared memory: the balls
// that reach it painted by atomic maxima, then its voxels' old values out of the tallies and
// the new ones in). Committing the chosen candidate: paint again writing the thickness, then the
// distances, then the centre bits, then the counts and the largest distance.
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "../common/geometry.hpp"
#include "../common/local_psd.hpp"
#include "../common/messages.hpp"
#include "buffer.cuh"
#include "check.cuh"
#include "poreforge/cuda_engine.hpp"
#include "poreforge/error.hpp"

namespace poreforge::cuda {
namespace {

namespace local = detail::local;
using detail::VoxelMetric;

// The changes of a candidate swap: the voxel leaving the phase, then the one joining it.
constexpr int kChanges = 2;
constexpr int kThreads = 256;
constexpr int kPaintThreads = 512;
// A paint block's shared memory: squared thicknesses of a slab of R2.
constexpr int64_t kSlabVoxels = 40 * 1024;
// Tallies in shared memory: edges + 2 of them.
constexpr int kMostEdges = 510;

// What the kernels of one batch leave each other, per candidate.
struct Candidate {
  local::Changes changes;
  int64_t d1[kChanges], rho[kChanges];
};

// The scorer's scalars on the device.
struct State {
  uint32_t max_d2;       // the committed structure's largest squared distance
  uint32_t written_max;  // a commit's largest new squared distance
  int failed;            // a joining voxel found no background
  int too_large;         // an R2 plane did not fit a paint block's shared memory
};

__device__ local::View with_largest(local::View v, const State* state) {
  v.largest = local::ceil_root(state->max_d2);
  return v;
}

__device__ local::Box r2_box(const local::View& v, const Candidate& c, int j) {
  return local::Box::around(v.grid, c.changes.at[j], local::repaint_half_width({c.d1[j], c.rho[j]}));
}

__device__ local::NearDistances near_of(const local::View& v, const Candidate& c, const uint32_t* near, int64_t capacity,
                                        int k) {
  local::NearDistances n;
  for (int j = 0; j < kChanges; ++j) {
    n.box[j] = local::near_box(v, c.changes, j, c.d1[j]);
    n.d2[j] = n.box[j].voxels() <= capacity ? near + (int64_t(k) * kChanges + j) * capacity : nullptr;
  }
  return n;
}

__device__ void add_int64(int64_t* at, int64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(at), static_cast<unsigned long long>(v));
}

// Each candidate's changes, the joining voxel's new distance; its deltas cleared.
__global__ void prepare(local::View v, State* state, const int64_t* swaps, const int32_t* count, Candidate* out,
                        int64_t* delta, int entries) {
  const int k = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (k >= *count) return;
  v = with_largest(v, state);
  local::Changes ch;
  ch.add(v.grid, swaps[2 * k], 0);
  ch.add(v.grid, swaps[2 * k + 1], 1);
  local::prepare(v, ch);
  if (ch.failed) atomicExch(&state->failed, 1);
  out[k].changes = ch;
  for (int e = 0; e < entries; ++e) delta[int64_t(k) * entries + e] = 0;
}

// Change j's R1 scan: the members' farthest offset and largest radius.
__global__ void reach(local::View v, const State* state, const int32_t* count, Candidate* candidates) {
  const int k = int(blockIdx.y), j = int(blockIdx.x);
  if (k >= *count) return;
  __shared__ int d1, rho;
  if (threadIdx.x == 0) d1 = rho = 0;
  __syncthreads();
  v = with_largest(v, state);
  const local::Changes ch = candidates[k].changes;
  const int64_t* p = ch.at[j];
  const local::Box box = local::Box::around(v.grid, p, v.largest);
  local::Reach r;
  for (int64_t t = threadIdx.x; t < box.voxels(); t += blockDim.x) {
    int64_t c[3];
    const int64_t x = local::box_voxel(v.grid, box, t, c);
    int64_t cheb = 0;
    for (int a = 0; a < 3; ++a) {
      const int64_t o = v.grid.offset(a, p[a], c[a]);
      cheb = std::max<int64_t>(cheb, o < 0 ? -o : o);
    }
    local::scan_voxel(v, ch, j, x, c, cheb, r);
  }
  atomicMax(&d1, int(r.d1));
  atomicMax(&rho, int(r.rho));
  __syncthreads();
  if (threadIdx.x == 0) {
    candidates[k].d1[j] = d1;
    candidates[k].rho[j] = rho;
  }
}

// The changed distances in change j's near box, where it fits the room.
__global__ void near_distances(local::View v, const State* state, const int32_t* count, const Candidate* candidates,
                     uint32_t* out, int64_t capacity) {
  const int k = int(blockIdx.y), j = int(blockIdx.x);
  if (k >= *count) return;
  v = with_largest(v, state);
  const Candidate& c = candidates[k];
  const local::Changes ch = c.changes;
  const local::Box box = local::near_box(v, ch, j, c.d1[j]);
  if (box.voxels() > capacity) return;  // asked for as needed instead
  uint32_t* d = out + (int64_t(k) * kChanges + j) * capacity;
  for (int64_t t = threadIdx.x; t < box.voxels(); t += blockDim.x) {
    int64_t q[3];
    const int64_t x = local::box_voxel(v.grid, box, t, q);
    d[t] = local::new_d2(v, ch, x, q);
  }
}

// Change j's R2 repainted slab by slab. Scoring: each voxel (of the first change's R2 that holds
// it) takes its old value out of the tallies and its new one in, added to the candidate's delta.
// Committing (`commit`): the new values written to the map.
template <bool kCommit>
__global__ void __launch_bounds__(kPaintThreads) paint(local::View v, State* state, const int32_t* count_or_chosen,
                                                       const Candidate* candidates, const uint32_t* near,
                                                       int64_t capacity, int64_t* delta, int entries, float* thickness) {
  extern __shared__ uint32_t lt2[];
  __shared__ int hits[kMostEdges + 2];
  const int k = kCommit ? *count_or_chosen : int(blockIdx.y);
  if (kCommit ? k < 0 : k >= *count_or_chosen) return;
  const int j = int(blockIdx.x);
  v = with_largest(v, state);
  const Candidate& cand = candidates[k];
  const local::Changes ch = cand.changes;
  const int64_t d1[kChanges] = {cand.d1[0], cand.d1[1]};
  const local::NearDistances nd = near_of(v, cand, near, capacity, k);
  const local::Box r2 = r2_box(v, cand, j);
  const local::Box first = r2_box(v, cand, 0);
  const local::Box around = local::Box::around(v.grid, ch.at[j], local::repaint_half_width({cand.d1[j], cand.rho[j]}) +
                                                                         local::largest_new_radius(v, ch) - 1);
  const local::CentreScan scan = local::CentreScan::of(v, ch, nd, around);
  const int64_t lx = r2.length(0), plane = lx * r2.length(1);
  if (plane > kSlabVoxels) {
    if (threadIdx.x == 0) atomicExch(&state->too_large, 1);
    return;
  }
  for (int e = int(threadIdx.x); e < v.edge_count + 2; e += int(blockDim.x)) hits[e] = 0;
  const int64_t planes = kSlabVoxels / plane;
  for (int64_t z0 = r2.lo[2]; z0 <= r2.hi[2]; z0 += planes) {
    local::Box slab = r2;
    slab.lo[2] = z0;
    slab.hi[2] = std::min<int64_t>(z0 + planes - 1, r2.hi[2]);
    const int64_t n = slab.voxels();
    for (int64_t t = threadIdx.x; t < n; t += blockDim.x) lt2[t] = 0;
    __syncthreads();
    for (int64_t t = threadIdx.x; t < scan.items; t += blockDim.x)
      scan.item(v, ch, d1, nd, slab, around, t, [&](int64_t, const int64_t* c, uint32_t r) {
        local::ball_chords(
            v.grid, slab, c, r, 0, 1, [](int64_t) { return true; },
            [&](int64_t row, int64_t x0, int64_t x1) {
              for (int64_t x = x0; x <= x1; ++x) atomicMax(&lt2[row * lx + x], r);
            });
      });
    __syncthreads();
    for (int64_t t = threadIdx.x; t < n; t += blockDim.x) {
      int64_t c[3];
      const int64_t y = local::box_voxel(v.grid, slab, t, c);
      if (j > 0 && first.holds(v.grid, c)) continue;  // the first change's R2 counts it
      const float now = local::in_phase(v, ch, y) ? v.metric.radius(lt2[t]) : 0.0f;
      const float before = v.thickness[y];
      if (now == before) continue;
      if (kCommit) {
        thickness[y] = now;
      } else {
        local::tally(v, before, -1, [&](int e, int64_t s) { atomicAdd(&hits[e], int(s)); });
        local::tally(v, now, +1, [&](int e, int64_t s) { atomicAdd(&hits[e], int(s)); });
      }
    }
    __syncthreads();
  }
  if (kCommit || threadIdx.x != 0) return;
  local::counts_from_hits(
      v.edge_count, [&](int e) { return int64_t(hits[e]); },
      [&](int e, int64_t c) {
        if (c) add_int64(&delta[int64_t(k) * entries + e], c);
      });
}

// The chosen candidate's new distances, in each change's R1 box (of the first that holds a
// voxel), and the tally of distances. A voxel's new distance reads only its own old one.
__global__ void commit_distances(local::View v, State* state, const int32_t* chosen, const Candidate* candidates,
                                 uint32_t* d2, unsigned long long* d2_count) {
  const int k = *chosen;
  if (k < 0) return;
  const int j = int(blockIdx.x);
  v = with_largest(v, state);
  const Candidate& cand = candidates[k];
  const local::Changes ch = cand.changes;
  const local::Box box = local::Box::around(v.grid, ch.at[j], cand.d1[j]);
  const local::Box first = local::Box::around(v.grid, ch.at[0], cand.d1[0]);
  for (int64_t t = threadIdx.x; t < box.voxels(); t += blockDim.x) {
    int64_t c[3];
    const int64_t x = local::box_voxel(v.grid, box, t, c);
    if (j > 0 && first.holds(v.grid, c)) continue;
    const uint32_t now = local::new_d2(v, ch, x, c), old = v.d2[x];
    if (now == old) continue;
    atomicAdd(&d2_count[old], ~0ull);  // −1
    atomicAdd(&d2_count[now], 1ull);
    atomicMax(&state->written_max, now);
    d2[x] = now;
  }
}

// The centre bits round the chosen candidate's changes, from the committed distances.
__global__ void commit_centres(local::View v, const State* state, const int32_t* chosen, const Candidate* candidates,
                               unsigned long long* bits) {
  const int k = *chosen;
  if (k < 0) return;
  const int j = int(blockIdx.x);
  v = with_largest(v, state);
  const Candidate& cand = candidates[k];
  const local::Changes ch = cand.changes;
  const local::Box box = local::near_box(v, ch, j, cand.d1[j]);
  const local::Box first = local::near_box(v, ch, 0, cand.d1[0]);
  for (int64_t t = threadIdx.x; t < box.voxels(); t += blockDim.x) {
    int64_t c[3];
    const int64_t x = local::box_voxel(v.grid, box, t, c);
    if (j > 0 && first.holds(v.grid, c)) continue;
    const uint32_t r = v.d2[x];
    const bool on = r && local::kept_centre(v, c, r, [&](int64_t i, const int64_t*) { return v.d2[i]; });
    const unsigned long long bit = 1ull << local::CentreBits::bit(c);
    unsigned long long* word = bits + local::CentreBits::word(v.grid, c);
    if (on) atomicOr(word, bit);
    else atomicAnd(word, ~bit);
  }
}

// The chosen candidate's counts, and the largest distance now.
__global__ void commit_counts(State* state, const int32_t* chosen, const int64_t* delta, int entries, int64_t* counts,
                              const unsigned long long* d2_count) {
  const int k = *chosen;
  if (k < 0) return;
  for (int e = 0; e < entries; ++e) counts[e] += delta[int64_t(k) * entries + e];
  uint32_t m = std::max(state->max_d2, state->written_max);
  while (m > 0 && d2_count[m] == 0) --m;
  state->max_d2 = m;
  state->written_max = 0;
}

// From scratch: the centre bits, the tallies of distances and of thickness values.
__global__ void init_maps(local::View v, int64_t voxels, unsigned long long* bits, unsigned long long* d2_count,
                          int64_t* hits) {
  __shared__ int block_hits[kMostEdges + 2];
  for (int e = int(threadIdx.x); e < v.edge_count + 2; e += int(blockDim.x)) block_hits[e] = 0;
  __syncthreads();
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < voxels; i += int64_t(gridDim.x) * blockDim.x) {
    const uint32_t r = v.d2[i];
    atomicAdd(&d2_count[r], 1ull);
    local::tally(v, v.thickness[i], 1, [&](int e, int64_t s) { atomicAdd(&block_hits[e], int(s)); });
    if (!r) continue;
    int64_t c[3];
    v.grid.coords(i, c);
    if (local::kept_centre(v, c, r, [&](int64_t j, const int64_t*) { return v.d2[j]; }))
      atomicOr(bits + local::CentreBits::word(v.grid, c), 1ull << local::CentreBits::bit(c));
  }
  __syncthreads();
  for (int e = int(threadIdx.x); e < v.edge_count + 2; e += int(blockDim.x))
    if (block_hits[e]) add_int64(&hits[e], block_hits[e]);
}

__global__ void init_counts(State* state, const int64_t* hits, int edge_count, int64_t* counts,
                            const unsigned long long* d2_count, uint32_t top) {
  local::counts_from_hit_array(edge_count, hits, counts);
  uint32_t m = top;
  while (m > 0 && d2_count[m] == 0) --m;
  state->max_d2 = m;
}

template <class T>
DeviceBuffer<T> upload(const std::vector<T>& host, cudaStream_t s, const char* what) {
  return upload_async(host.data(), host.size(), s, what);
}

}  // namespace

struct SwapScorer::Impl {
  cudaStream_t stream = nullptr;
  Shape shape;
  int most = 0, entries = 0;
  int64_t near_capacity = 0;
  DeviceBuffer<uint32_t> d2;
  DeviceBuffer<float> thickness;
  DeviceBuffer<unsigned long long> centres, d2_count;
  DeviceBuffer<int64_t> counts, hits;
  DeviceBuffer<State> state;
  DeviceBuffer<Candidate> candidates;
  DeviceBuffer<uint32_t> near;
  DeviceBuffer<uint32_t> offsets_packed, offsets_norm, offsets_first;
  DeviceBuffer<uint32_t> containment_shell, containment_reach, containment_below;
  DeviceBuffer<double> edges;
  local::View view;
  // The last score_async's buffers, which commit_async reads.
  const int64_t* swaps = nullptr;
  const int32_t* candidates_count = nullptr;
  int64_t* delta = nullptr;
  State* host_state = nullptr;  // pinned

  ~Impl() {
    if (stream) PF_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(stream));
    if (host_state) PF_CUDA_CHECK_NOTHROW(cudaFreeHost(host_state));
  }
};

SwapScorer::SwapScorer(const uint8_t* d_phase, const Shape& shape, const Spacing& spacing, Boundary boundary,
                       const Bins& bins, int most, void* stream)
    : m_impl(std::make_unique<Impl>()) {
  validate_shape(shape);
  validate_spacing(spacing);
  if (!spacing.isotropic()) throw InputError("the swap scorer needs isotropic spacing (got " + to_string(spacing) + ")");
  if (int(bins.edges().size()) > kMostEdges)
    throw InputError("the swap scorer takes at most " + std::to_string(kMostEdges - 1) + " bins");
  if (most < 1) throw InputError("the swap scorer needs room for at least one candidate");
  Impl& m = *m_impl;
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  m.stream = s;
  m.shape = shape;
  m.most = most;
  m.entries = local::count_entries(int(bins.edges().size()));
  const int64_t n = shape.voxels();

  // The maps from scratch, by the engine (its own stream, waited for).
  m.d2 = DeviceBuffer<uint32_t>(std::size_t(n), s, "the scorer's squared distances");
  m.thickness = DeviceBuffer<float>(std::size_t(n), s, "the scorer's thickness map");
  PF_CUDA_CHECK(cudaStreamSynchronize(s));
  {
    ContextConfig config;
    config.shape = shape;
    config.spacing = spacing;
    config.boundary = boundary;
    config.centre_capacity = 1.0;
    ThicknessContext engine(config);
    engine.squared_distance_async(d_phase, m.d2.data());
    engine.thickness_async(d_phase, m.thickness.data());
    engine.synchronize();  // throws when a phase voxel has no background
  }

  // The tallies, the centre bits and the counts.
  const uint32_t top = detail::max_squared_distance(shape, boundary, VoxelMetric{});
  m.d2_count = DeviceBuffer<unsigned long long>(std::size_t(top) + 1, s, "the scorer's tally of distances");
  PF_CUDA_CHECK(cudaMemsetAsync(m.d2_count.data(), 0, m.d2_count.bytes(), s));
  local::Grid g;
  g.n[0] = shape.nx, g.n[1] = shape.ny, g.n[2] = shape.nz;
  g.stride[0] = 1, g.stride[1] = shape.nx, g.stride[2] = shape.nx * shape.ny;
  g.boundary = int(boundary);
  m.centres = DeviceBuffer<unsigned long long>(std::size_t(local::CentreBits::words(g)), s, "the scorer's centre bits");
  PF_CUDA_CHECK(cudaMemsetAsync(m.centres.data(), 0, m.centres.bytes(), s));
  m.counts = DeviceBuffer<int64_t>(std::size_t(m.entries), s, "the scorer's counts");
  m.hits = DeviceBuffer<int64_t>(std::size_t(m.entries), s, "the scorer's tallies");
  PF_CUDA_CHECK(cudaMemsetAsync(m.hits.data(), 0, m.hits.bytes(), s));
  m.state = DeviceBuffer<State>(1, s, "the scorer's state");
  PF_CUDA_CHECK(cudaMemsetAsync(m.state.data(), 0, sizeof(State), s));
  m.edges = upload(bins.edges(), s, "the PSD edges");

  local::View& v = m.view;
  v.grid = g;
  v.phase = d_phase;
  v.d2 = m.d2.data();
  v.thickness = m.thickness.data();
  v.centres = reinterpret_cast<const uint64_t*>(m.centres.data());
  v.metric.spacing = spacing.x;
  v.edges = m.edges.data();
  v.edge_count = int(bins.edges().size());

  // The centre test needs the containment tables, which need the largest distance: a first
  // pass with tables for radii up to 2, whose centre bits are then cleared and made again.
  PF_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&m.host_state), sizeof(State)));
  const auto tables = [&](uint32_t max_d2) {
    const int64_t want = 2 * (local::ceil_root(max_d2) + 2);
    const local::OffsetTable offsets(shape, want);
    m.offsets_packed = upload(offsets.packed, s, "the scorer's offsets");
    m.offsets_norm = upload(offsets.norm, s, "the scorer's offset norms");
    m.offsets_first = upload(offsets.first, s, "the scorer's offset index");
    v.offsets = {m.offsets_packed.data(), m.offsets_norm.data(), m.offsets_first.data(), offsets.limit,
                 uint32_t(offsets.norm.size())};
    const detail::BallContainment<VoxelMetric> containment(VoxelMetric{}, uint32_t(std::min<int64_t>(want * want, int64_t(1) << 20)));
    std::vector<uint32_t> reach;
    for (const auto& r : containment.reaches()) reach.insert(reach.end(), r.begin(), r.end());
    m.containment_shell = upload(containment.shells(), s, "the containment shells");
    m.containment_reach = upload(reach, s, "the containment reaches");
    m.containment_below = upload(containment.shell_below(), s, "the containment index");
    detail::ContainmentView<VoxelMetric> cv = containment.view();
    cv.shell = m.containment_shell.data();
    cv.reach = m.containment_reach.data();
    cv.shell_below = m.containment_below.data();
    v.containment = cv;
    // Near boxes up to the largest distance's R1 grown by one fit the room.
    const int64_t side = 2 * (local::ceil_root(max_d2) + 2) + 1;
    m.near_capacity = side * side * side;
    PF_CUDA_CHECK(cudaStreamSynchronize(s));  // the host tables outlive their uploads
  };
  tables(4);
  init_maps<<<1024, kThreads, 0, s>>>(v, n, m.centres.data(), m.d2_count.data(), m.hits.data());
  PF_CUDA_CHECK_LAUNCH(s);
  init_counts<<<1, 1, 0, s>>>(m.state.data(), m.hits.data(), v.edge_count, m.counts.data(), m.d2_count.data(), top);
  PF_CUDA_CHECK_LAUNCH(s);
  PF_CUDA_CHECK(cudaMemcpyAsync(m.host_state, m.state.data(), sizeof(State), cudaMemcpyDeviceToHost, s));
  std::vector<int64_t> counts(std::size_t(m.entries));
  PF_CUDA_CHECK(cudaMemcpyAsync(counts.data(), m.counts.data(), m.counts.bytes(), cudaMemcpyDeviceToHost, s));
  PF_CUDA_CHECK(cudaStreamSynchronize(s));
  if (counts.back() == 0) throw InputError(detail::empty_phase_message());
  tables(m.host_state->max_d2);
  PF_CUDA_CHECK(cudaMemsetAsync(m.centres.data(), 0, m.centres.bytes(), s));
  PF_CUDA_CHECK(cudaMemsetAsync(m.d2_count.data(), 0, m.d2_count.bytes(), s));
  PF_CUDA_CHECK(cudaMemsetAsync(m.hits.data(), 0, m.hits.bytes(), s));
  init_maps<<<1024, kThreads, 0, s>>>(v, n, m.centres.data(), m.d2_count.data(), m.hits.data());
  PF_CUDA_CHECK_LAUNCH(s);
  init_counts<<<1, 1, 0, s>>>(m.state.data(), m.hits.data(), v.edge_count, m.counts.data(), m.d2_count.data(), top);
  PF_CUDA_CHECK_LAUNCH(s);

  m.candidates = DeviceBuffer<Candidate>(std::size_t(most), s, "the scorer's candidates");
  m.near = DeviceBuffer<uint32_t>(std::size_t(most) * kChanges * std::size_t(m.near_capacity), s,
                                  "the scorer's near distances");
  const int smem = int(kSlabVoxels * sizeof(uint32_t));
  PF_CUDA_CHECK(cudaFuncSetAttribute(paint<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  PF_CUDA_CHECK(cudaFuncSetAttribute(paint<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  PF_CUDA_CHECK(cudaStreamSynchronize(s));
}

SwapScorer::~SwapScorer() = default;

int SwapScorer::count_entries() const { return m_impl->entries; }

const int64_t* SwapScorer::counts() const { return m_impl->counts.data(); }

void SwapScorer::score_async(const int64_t* d_swaps, const int32_t* d_candidates, int64_t* d_delta) {
  Impl& m = *m_impl;
  const cudaStream_t s = m.stream;
  m.swaps = d_swaps;
  m.candidates_count = d_candidates;
  m.delta = d_delta;
  prepare<<<(m.most + 63) / 64, 64, 0, s>>>(m.view, m.state.data(), d_swaps, d_candidates, m.candidates.data(), d_delta,
                                            m.entries);
  PF_CUDA_CHECK_LAUNCH(s);
  const dim3 grid(kChanges, unsigned(m.most));
  reach<<<grid, kThreads, 0, s>>>(m.view, m.state.data(), d_candidates, m.candidates.data());
  PF_CUDA_CHECK_LAUNCH(s);
  near_distances<<<grid, kThreads, 0, s>>>(m.view, m.state.data(), d_candidates, m.candidates.data(), m.near.data(),
                                 m.near_capacity);
  PF_CUDA_CHECK_LAUNCH(s);
  paint<false><<<grid, kPaintThreads, kSlabVoxels * sizeof(uint32_t), s>>>(
      m.view, m.state.data(), d_candidates, m.candidates.data(), m.near.data(), m.near_capacity, d_delta, m.entries,
      nullptr);
  PF_CUDA_CHECK_LAUNCH(s);
}

void SwapScorer::commit_async(const int32_t* d_chosen) {
  Impl& m = *m_impl;
  const cudaStream_t s = m.stream;
  if (!m.delta) throw InputError("commit_async before any score_async");
  paint<true><<<kChanges, kPaintThreads, kSlabVoxels * sizeof(uint32_t), s>>>(
      m.view, m.state.data(), d_chosen, m.candidates.data(), m.near.data(), m.near_capacity, nullptr, m.entries,
      m.thickness.data());
  PF_CUDA_CHECK_LAUNCH(s);
  commit_distances<<<kChanges, kThreads, 0, s>>>(m.view, m.state.data(), d_chosen, m.candidates.data(), m.d2.data(),
                                                  m.d2_count.data());
  PF_CUDA_CHECK_LAUNCH(s);
  commit_centres<<<kChanges, kThreads, 0, s>>>(m.view, m.state.data(), d_chosen, m.candidates.data(),
                                                m.centres.data());
  PF_CUDA_CHECK_LAUNCH(s);
  commit_counts<<<1, 1, 0, s>>>(m.state.data(), d_chosen, m.delta, m.entries, m.counts.data(), m.d2_count.data());
  PF_CUDA_CHECK_LAUNCH(s);
}

void SwapScorer::synchronize() {
  Impl& m = *m_impl;
  PF_CUDA_CHECK(cudaMemcpyAsync(m.host_state, m.state.data(), sizeof(State), cudaMemcpyDeviceToHost, m.stream));
  PF_CUDA_CHECK(cudaStreamSynchronize(m.stream));
  if (m.host_state->failed)
    throw InputError("a candidate swap left a phase voxel with no background to measure from");
  if (m.host_state->too_large)
    throw RuntimeError("a swap's region to repaint is wider than the scorer's shared memory holds (pores over ~50 voxels across)");
}

}  // namespace poreforge::cuda
