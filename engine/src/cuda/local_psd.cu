// The swap scorer (cuda_engine.hpp): common/local_psd.hpp's local re-evaluation in kernels, for
// many candidate swaps at once. Every kernel takes a candidate per block row and a changed
// voxel (0: the one leaving the phase, 1: the one joining) per block column, and runs the same
// functions the CPU evaluator runs in loops, so both give the same counts to the bit.
//
// Scoring a batch: prepare (the joining voxel's new distance), reach (each change's R1 scan,
// brick by brick: how far distances change and how far the changed balls reach), near (the
// changed distances round each change, once), paint (each change's R2, slab by slab in shared
// memory: the near boxes' balls sorted into O, N and U's part, O's and N's painted by atomic
// maxima a ball a warp, each voxel's value from its committed one and theirs, U's balls asked
// a warp a voxel where those leave it open; then its voxels' old values out of the tallies and
// the new ones in). Committing the chosen candidate: paint again writing the thickness, then
// the distances, the bricks' largest distances, the centre bits, the counts and the largest
// distance.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
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
constexpr int kWarp = 32;
// A paint block's shared memory: the largest squared radius of O's, then N's (and U's) balls
// over a slab of R2, a bit a voxel for where U gave the committed value and one for where U's
// balls decide; the balls listed (O, N and U's part in the near boxes, then U's that reach a
// slab's voxels left to them: packed centre and squared radius).
constexpr int64_t kSlabVoxels = 24 * 1024;
constexpr int kOld = 0, kNew = 1, kKept = 2, kU = 3;  // the lists
__host__ __device__ constexpr int room(int) { return 1024; }  // each list's: 150 KB a block in all, an A100's room
__host__ __device__ constexpr int first_of(int which) { return which == kOld ? 0 : first_of(which - 1) + room(which - 1); }
constexpr int kBallRoom = first_of(kU) + room(kU);
constexpr std::size_t kPaintShared =
    std::size_t(kSlabVoxels) * sizeof(uint32_t) + 2 * std::size_t(kSlabVoxels / 32) * sizeof(uint32_t) + std::size_t(kBallRoom) * 12;
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

// What every thread of a block reads in its inner loops, once in shared memory: kernel
// parameters and per-thread copies whose address is taken live in local memory, which the
// paint kernel's shared arrays leave little L1 to cache. Raw storage: __shared__ variables
// take no initialisers.
struct Common {
  local::View v;
  local::Changes ch;
  local::NearDistances nd;
  local::Box r2, first, slab;
  int64_t d1[kChanges];
  int k;
};

__device__ Common& common() {
  __shared__ alignas(16) unsigned char raw[sizeof(Common)];
  return *reinterpret_cast<Common*>(raw);
}

__device__ local::Box r2_box(const local::View& v, const Candidate& c, int j) {
  return local::Box::around(v.grid, c.changes.at[j], local::repaint_half_width({c.d1[j], c.rho[j]}));
}

// Thread 0 fills the block's Common for candidate k (its changes; with `regions`, the R1 and
// near boxes of both changes, change j's R2 and the first change's); every thread waits for it.
__device__ void load_common(const local::View& v, const State* state, const Candidate* candidates, int k, int j,
                            bool regions, const uint32_t* near, int64_t capacity) {
  Common& c = common();
  if (threadIdx.x == 0) {
    c.v = v;
    c.v.largest = local::ceil_root(state->max_d2);
    c.k = k;
    const Candidate& cand = candidates[k];
    c.ch = cand.changes;
    if (regions) {
      for (int i = 0; i < kChanges; ++i) {
        c.d1[i] = cand.d1[i];
        c.nd.box[i] = local::near_box(c.v, c.ch, i, cand.d1[i]);
        c.nd.d2[i] = c.nd.box[i].voxels() <= capacity ? near + (int64_t(k) * kChanges + i) * capacity : nullptr;
      }
      c.r2 = r2_box(c.v, cand, j);
      c.first = r2_box(c.v, cand, 0);
    }
  }
  __syncthreads();
}

__device__ void add_int64(int64_t* at, int64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(at), static_cast<unsigned long long>(v));
}

// Each candidate's changes, the joining voxel's new distance; its deltas cleared.
__global__ void prepare(const __grid_constant__ local::View v, State* state, const int64_t* swaps, const int32_t* count,
                        Candidate* out, int64_t* delta, int entries) {
  const int k = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (k >= *count) return;
  local::View w = v;
  w.largest = local::ceil_root(state->max_d2);
  local::Changes ch;
  ch.add(w.grid, swaps[2 * k], 0);
  ch.add(w.grid, swaps[2 * k + 1], 1);
  local::prepare(w, ch);
  if (ch.failed) atomicExch(&state->failed, 1);
  out[k].changes = ch;
  for (int e = 0; e < entries; ++e) delta[int64_t(k) * entries + e] = 0;
}

// Change j's R1 scan: the members' farthest offset and largest radius, a thread a voxel of the
// bricks that can hold members (nearer the change than their largest distance).
__global__ void reach(const __grid_constant__ local::View v, const State* state, const int32_t* count,
                      Candidate* candidates, const uint32_t* brick_d2) {
  const int k = int(blockIdx.y), j = int(blockIdx.x);
  if (k >= *count) return;
  __shared__ int d1, rho;
  if (threadIdx.x == 0) d1 = rho = 0;
  load_common(v, state, candidates, k, j, false, nullptr, 0);
  const Common& c = common();
  const local::Grid& g = c.v.grid;
  const int64_t* p = c.ch.at[j];
  const local::BrickWalk walk = local::BrickWalk::of(g, local::Box::around(g, p, c.v.largest));
  local::Reach r;
  for (int64_t t = threadIdx.x; t < walk.bricks * 64; t += blockDim.x) {
    int64_t w[3], from[3], to[3];
    walk.brick(t >> 6, w, from, to);
    const int b = int(t & 63);
    const int64_t q[3] = {4 * w[0] + b % 4, 4 * w[1] + (b / 4) % 4, 4 * w[2] + b / 16};
    if (q[0] < from[0] || q[0] > to[0] || q[1] < from[1] || q[1] > to[1] || q[2] < from[2] || q[2] > to[2]) continue;
    if (local::brick_gap2(g, p, w) > brick_d2[local::CentreBits::brick(g, w)]) continue;
    int64_t cheb = 0;
    for (int a = 0; a < 3; ++a) {
      const int64_t o = g.offset(a, p[a], q[a]);
      cheb = std::max<int64_t>(cheb, o < 0 ? -o : o);
    }
    local::scan_voxel(c.v, c.ch, j, g.index(q), q, cheb, r);
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
__global__ void near_distances(const __grid_constant__ local::View v, const State* state, const int32_t* count,
                               const Candidate* candidates, uint32_t* out, int64_t capacity) {
  const int k = int(blockIdx.y), j = int(blockIdx.x);
  if (k >= *count) return;
  load_common(v, state, candidates, k, j, false, nullptr, 0);
  const Common& c = common();
  const local::Box box = local::near_box(c.v, c.ch, j, candidates[k].d1[j]);
  if (box.voxels() > capacity) return;  // asked for as needed instead
  uint32_t* d = out + (int64_t(k) * kChanges + j) * capacity;
  for (int64_t t = threadIdx.x; t < box.voxels(); t += blockDim.x) {
    int64_t q[3];
    const int64_t x = local::box_voxel(c.v.grid, box, t, q);
    d[t] = local::new_d2(c.v, c.ch, x, q);
  }
}

// A ball in the paint kernel's lists: centre coordinates 21 bits each, and its squared radius.
__device__ uint64_t pack(const int64_t c[3]) {
  return uint64_t(c[0]) | (uint64_t(c[1]) << 21) | (uint64_t(c[2]) << 42);
}
__device__ void unpack(uint64_t p, int64_t c[3]) {
  c[0] = int64_t(p & 0x1FFFFF), c[1] = int64_t((p >> 21) & 0x1FFFFF), c[2] = int64_t(p >> 42);
}

// Change j's R2 repainted slab by slab from the changed balls (local_psd.hpp, "Changed balls
// only"). The near boxes' balls that reach R2 are listed once: O, N and U's part. Each slab
// takes O's largest squared radius a voxel (a ball a warp, its rows split between the lanes,
// atomic maxima), a bit where U gave the committed value, then N's largest; a voxel's value
// follows from these but where U's balls decide: those voxels are marked, and U's balls that
// reach their bounding box are listed and painted over it. A list past its room is not used:
// its balls are found again, or painted by the thread that found them. Scoring: each voxel (of
// the first change's R2 that holds it) takes its old value out of the tallies and its new one
// in, added to the candidate's delta. Committing (`kCommit`): the new values written.
template <bool kCommit>
__global__ void __launch_bounds__(kPaintThreads)
    paint(const __grid_constant__ local::View view, State* state, const int32_t* count_or_chosen,
          const Candidate* candidates, const uint32_t* near, int64_t capacity, int64_t* delta, int entries,
          float* thickness) {
  extern __shared__ __align__(16) unsigned char dynamic[];
  uint32_t* lt2 = reinterpret_cast<uint32_t*>(dynamic);
  uint32_t* gave = lt2 + kSlabVoxels;
  uint32_t* needs_u = gave + kSlabVoxels / 32;
  uint64_t* ball_at = reinterpret_cast<uint64_t*>(needs_u + kSlabVoxels / 32);
  uint32_t* ball_r2 = reinterpret_cast<uint32_t*>(ball_at + kBallRoom);
  __shared__ int hits[kMostEdges + 2];
  __shared__ int listed[4];
  __shared__ int lo[3], hi[3];  // the bounding box of the slab's voxels that need U (slab-local)
  const int k = kCommit ? *count_or_chosen : int(blockIdx.y);
  if (kCommit ? k < 0 : k >= *count_or_chosen) return;
  const int j = int(blockIdx.x);
  load_common(view, state, candidates, k, j, true, near, capacity);
  Common& c = common();
  const local::View& v = c.v;
  const local::Grid& g = v.grid;
  const int64_t lx = c.r2.length(0), ly = c.r2.length(1), plane = lx * ly;
  if (plane > kSlabVoxels) {
    if (threadIdx.x == 0) atomicExch(&state->too_large, 1);
    return;
  }
  for (int e = int(threadIdx.x); e < v.edge_count + 2; e += int(blockDim.x)) hits[e] = 0;
  if (threadIdx.x < 3) listed[threadIdx.x] = 0;
  __syncthreads();
  const int lane = int(threadIdx.x) % kWarp, warp = int(threadIdx.x) / kWarp, warps = int(blockDim.x) / kWarp;
  const auto list = [&](int which, const int64_t q[3], uint32_t r2) {
    const int at = atomicAdd(&listed[which], 1);
    if (at >= room(which)) return false;
    ball_at[first_of(which) + at] = pack(q);
    ball_r2[first_of(which) + at] = r2;
    return true;
  };

  // The near boxes' balls that reach R2, each voxel once.
  const int64_t items = local::near_voxels(c.ch, c.nd);
  for (int64_t t = threadIdx.x; t < items; t += blockDim.x) {
    int64_t x, q[3];
    if (!local::near_voxel(v, c.ch, c.nd, t, x, q)) continue;
    const local::NearBall b = local::near_ball(v, c.ch, c.nd, x, q, true);
    const uint32_t gap = c.r2.gap2(g, q);
    if (b.kept && gap < b.before) list(kKept, q, b.before);
    if (b.old && gap < b.before) list(kOld, q, b.before);
    if (b.fresh && gap < b.after) list(kNew, q, b.after);
  }
  __syncthreads();
  const bool fits[3] = {listed[kOld] <= room(kOld), listed[kNew] <= room(kNew), listed[kKept] <= room(kKept)};

  const int64_t planes = kSlabVoxels / plane;
  for (int64_t z0 = c.r2.lo[2]; z0 <= c.r2.hi[2]; z0 += planes) {
    if (threadIdx.x == 0) {
      c.slab = c.r2;
      c.slab.lo[2] = z0;
      c.slab.hi[2] = std::min<int64_t>(z0 + planes - 1, c.r2.hi[2]);
      listed[kU] = 0;
    }
    if (threadIdx.x < 3) lo[threadIdx.x] = INT_MAX, hi[threadIdx.x] = -1;
    __syncthreads();
    const local::Box& slab = c.slab;
    const int64_t n = slab.voxels();
    for (int64_t t = threadIdx.x; t < n; t += blockDim.x) lt2[t] = 0;
    for (int64_t t = threadIdx.x; t < (n + 31) / 32; t += blockDim.x) gave[t] = needs_u[t] = 0;
    __syncthreads();
    // A ball raised into lt2 over the slab's rows `wanted` takes and columns x_lo … x_hi.
    const auto paint_ball = [&](const int64_t q[3], uint32_t r, int64_t part, int64_t parts, auto&& wanted, int64_t x_lo,
                                int64_t x_hi) {
      if (slab.gap2(g, q) >= r) return;
      local::ball_chords(g, slab, q, r, part, parts, wanted, [&](int64_t row, int64_t x0, int64_t x1) {
        for (int64_t x = x0 > x_lo ? x0 : x_lo; x <= x1 && x <= x_hi; ++x) atomicMax(&lt2[row * lx + x], r);
      });
    };
    const auto all_rows = [](int64_t) { return true; };
    // O's balls (which = kOld) or N's (kNew).
    const auto paint_set = [&](int which) {
      if (fits[which]) {
        for (int i = warp; i < listed[which]; i += warps) {
          int64_t q[3];
          unpack(ball_at[first_of(which) + i], q);
          paint_ball(q, ball_r2[first_of(which) + i], lane, kWarp, all_rows, 0, lx - 1);
        }
        return;
      }
      for (int64_t t = threadIdx.x; t < items; t += blockDim.x) {
        int64_t x, q[3];
        if (!local::near_voxel(v, c.ch, c.nd, t, x, q)) continue;
        const local::NearBall b = local::near_ball(v, c.ch, c.nd, x, q, true);
        const uint32_t r = which == kOld ? (b.old ? b.before : 0u) : (b.fresh ? b.after : 0u);
        if (r) paint_ball(q, r, 0, 1, all_rows, 0, lx - 1);
      }
    };
    // A voxel's new value: into the tallies, or written.
    const auto finish = [&](int64_t y, float now) {
      const float before = v.thickness[y];
      if (now == before) return;
      if (kCommit) {
        thickness[y] = now;
      } else {
        local::tally(v, before, -1, [&](int e, int64_t s) { atomicAdd(&hits[e], int(s)); });
        local::tally(v, now, +1, [&](int e, int64_t s) { atomicAdd(&hits[e], int(s)); });
      }
    };
    paint_set(kOld);
    __syncthreads();
    for (int64_t t = threadIdx.x; t < n; t += blockDim.x) {
      int64_t q[3];
      const int64_t y = local::box_voxel(g, slab, t, q);
      if (local::u_gave(v, v.thickness[y], lt2[t])) atomicOr(&gave[t / 32], 1u << (t % 32));
    }
    __syncthreads();
    for (int64_t t = threadIdx.x; t < n; t += blockDim.x) lt2[t] = 0;
    __syncthreads();
    paint_set(kNew);
    __syncthreads();
    for (int64_t t = threadIdx.x; t < n; t += blockDim.x) {
      int64_t q[3];
      const int64_t y = local::box_voxel(g, slab, t, q);
      if (j > 0 && c.first.holds(g, q)) continue;  // the first change's R2 counts it
      bool open = false;
      const float now = local::thickness_from_changed_balls(v, c.ch, y, (gave[t / 32] >> (t % 32)) & 1u, lt2[t], open);
      if (!open) {
        finish(y, now);
        continue;
      }
      atomicOr(&needs_u[t / 32], 1u << (t % 32));
      const int64_t u[3] = {t % lx, (t / lx) % ly, t / plane};
      for (int a = 0; a < 3; ++a) atomicMin(&lo[a], int(u[a])), atomicMax(&hi[a], int(u[a]));
    }
    __syncthreads();
    if (hi[0] < 0) {  // every voxel finished; read by all before the next slab resets it
      __syncthreads();
      continue;
    }
    // U's balls over the voxels left: N's largest stays in lt2, U's are raised into it there.
    local::Box needed;
    for (int a = 0; a < 3; ++a) needed.lo[a] = slab.lo[a] + lo[a], needed.hi[a] = slab.lo[a] + hi[a];
    const local::BrickWalk walk = local::BrickWalk::of(g, needed.grown(g, v.largest - 1));
    const auto needed_row = [&](int64_t row) {
      const int64_t y = row % ly, z = row / ly;
      return y >= lo[1] && y <= hi[1] && z >= lo[2] && z <= hi[2];
    };
    const auto take = [&](const int64_t q[3], uint32_t r2) {
      if (!list(kU, q, r2)) paint_ball(q, r2, 0, 1, needed_row, lo[0], hi[0]);  // no room: painted here
    };
    for (int64_t t = threadIdx.x; t < walk.bricks; t += blockDim.x)
      local::u_centres_in_brick(v, c.ch, c.d1, walk, t, needed, [&](int64_t, const int64_t* q, uint32_t r2) { take(q, r2); });
    if (fits[kKept]) {
      for (int i = int(threadIdx.x); i < listed[kKept]; i += int(blockDim.x)) {
        int64_t q[3];
        unpack(ball_at[first_of(kKept) + i], q);
        if (needed.gap2(g, q) < ball_r2[first_of(kKept) + i]) take(q, ball_r2[first_of(kKept) + i]);
      }
    } else {
      for (int64_t t = threadIdx.x; t < items; t += blockDim.x) {
        int64_t x, q[3];
        if (!local::near_voxel(v, c.ch, c.nd, t, x, q)) continue;
        const local::NearBall b = local::near_ball(v, c.ch, c.nd, x, q, true);
        if (b.kept && needed.gap2(g, q) < b.before) take(q, b.before);
      }
    }
    __syncthreads();
    const int u_count = listed[kU] < room(kU) ? listed[kU] : room(kU);
    for (int i = warp; i < u_count; i += warps) {
      int64_t q[3];
      unpack(ball_at[first_of(kU) + i], q);
      paint_ball(q, ball_r2[first_of(kU) + i], lane, kWarp, needed_row, lo[0], hi[0]);
    }
    __syncthreads();
    for (int64_t t = threadIdx.x; t < n; t += blockDim.x) {
      if (!((needs_u[t / 32] >> (t % 32)) & 1u)) continue;
      int64_t q[3];
      finish(local::box_voxel(g, slab, t, q), v.metric.radius(lt2[t]));
    }
    __syncthreads();
  }
  if (kCommit || threadIdx.x != 0) return;
  local::counts_from_hits(
      v.edge_count, [&](int e) { return int64_t(hits[e]); },
      [&](int e, int64_t n) {
        if (n) add_int64(&delta[int64_t(k) * entries + e], n);
      });
}

// The chosen candidate's new distances, in each change's R1 box (of the first that holds a
// voxel), and the tally of distances. A voxel's new distance reads only its own old one.
__global__ void commit_distances(const __grid_constant__ local::View v, State* state, const int32_t* chosen,
                                 const Candidate* candidates, uint32_t* d2, unsigned long long* d2_count) {
  const int k = *chosen;
  if (k < 0) return;
  const int j = int(blockIdx.x);
  load_common(v, state, candidates, k, j, false, nullptr, 0);
  const Common& c = common();
  const Candidate& cand = candidates[k];
  const local::Box box = local::Box::around(c.v.grid, c.ch.at[j], cand.d1[j]);
  const local::Box first = local::Box::around(c.v.grid, c.ch.at[0], cand.d1[0]);
  for (int64_t t = threadIdx.x; t < box.voxels(); t += blockDim.x) {
    int64_t q[3];
    const int64_t x = local::box_voxel(c.v.grid, box, t, q);
    if (j > 0 && first.holds(c.v.grid, q)) continue;
    const uint32_t now = local::new_d2(c.v, c.ch, x, q), old = c.v.d2[x];
    if (now == old) continue;
    atomicAdd(&d2_count[old], ~0ull);  // −1
    atomicAdd(&d2_count[now], 1ull);
    atomicMax(&state->written_max, now);
    d2[x] = now;
  }
}

// Each brick's largest distance where the chosen candidate's distances changed (in each
// change's R1 box), from its voxels' committed distances; a brick in both boxes is written
// twice with the same value.
__global__ void commit_bricks(const __grid_constant__ local::View v, const int32_t* chosen, const Candidate* candidates,
                              uint32_t* brick_d2) {
  const int k = *chosen;
  if (k < 0) return;
  const int j = int(blockIdx.x);
  const local::Grid& g = v.grid;
  const Candidate& cand = candidates[k];
  const local::BrickWalk walk = local::BrickWalk::of(g, local::Box::around(g, cand.changes.at[j], cand.d1[j]));
  for (int64_t t = threadIdx.x; t < walk.bricks; t += blockDim.x) {
    int64_t w[3], from[3], to[3];
    walk.brick(t, w, from, to);
    brick_d2[local::CentreBits::brick(g, w)] = local::brick_largest(g, v.d2, w);
  }
}

// The centre bits round the chosen candidate's changes, from the committed distances.
__global__ void commit_centres(const __grid_constant__ local::View v, const State* state, const int32_t* chosen,
                               const Candidate* candidates, unsigned long long* bits) {
  const int k = *chosen;
  if (k < 0) return;
  const int j = int(blockIdx.x);
  load_common(v, state, candidates, k, j, false, nullptr, 0);
  const Common& c = common();
  const Candidate& cand = candidates[k];
  const local::Box box = local::near_box(c.v, c.ch, j, cand.d1[j]);
  const local::Box first = local::near_box(c.v, c.ch, 0, cand.d1[0]);
  for (int64_t t = threadIdx.x; t < box.voxels(); t += blockDim.x) {
    int64_t q[3];
    const int64_t x = local::box_voxel(c.v.grid, box, t, q);
    if (j > 0 && first.holds(c.v.grid, q)) continue;
    const uint32_t r = c.v.d2[x];
    const bool on = r && local::kept_centre(c.v, q, r, [&](int64_t i, const int64_t*) { return c.v.d2[i]; });
    const unsigned long long bit = 1ull << local::CentreBits::bit(q);
    unsigned long long* word = bits + local::CentreBits::word(c.v.grid, q);
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
__global__ void init_maps(const __grid_constant__ local::View v, int64_t voxels, unsigned long long* bits,
                          unsigned long long* d2_count, int64_t* hits, uint32_t* brick_d2) {
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
    atomicMax(brick_d2 + local::CentreBits::word(v.grid, c), r);
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
  DeviceBuffer<uint32_t> brick_d2;  // each brick's largest squared distance (CentreBits' layout)
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
  m.brick_d2 = DeviceBuffer<uint32_t>(std::size_t(local::CentreBits::words(g)), s, "the scorer's brick distances");
  PF_CUDA_CHECK(cudaMemsetAsync(m.brick_d2.data(), 0, m.brick_d2.bytes(), s));
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
  init_maps<<<1024, kThreads, 0, s>>>(v, n, m.centres.data(), m.d2_count.data(), m.hits.data(), m.brick_d2.data());
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
  PF_CUDA_CHECK(cudaMemsetAsync(m.brick_d2.data(), 0, m.brick_d2.bytes(), s));
  init_maps<<<1024, kThreads, 0, s>>>(v, n, m.centres.data(), m.d2_count.data(), m.hits.data(), m.brick_d2.data());
  PF_CUDA_CHECK_LAUNCH(s);
  init_counts<<<1, 1, 0, s>>>(m.state.data(), m.hits.data(), v.edge_count, m.counts.data(), m.d2_count.data(), top);
  PF_CUDA_CHECK_LAUNCH(s);

  m.candidates = DeviceBuffer<Candidate>(std::size_t(most), s, "the scorer's candidates");
  m.near = DeviceBuffer<uint32_t>(std::size_t(most) * kChanges * std::size_t(m.near_capacity), s,
                                  "the scorer's near distances");
  const int smem = int(kPaintShared);
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
  reach<<<grid, kThreads, 0, s>>>(m.view, m.state.data(), d_candidates, m.candidates.data(), m.brick_d2.data());
  PF_CUDA_CHECK_LAUNCH(s);
  near_distances<<<grid, kThreads, 0, s>>>(m.view, m.state.data(), d_candidates, m.candidates.data(), m.near.data(),
                                 m.near_capacity);
  PF_CUDA_CHECK_LAUNCH(s);
  paint<false><<<grid, kPaintThreads, kPaintShared, s>>>(
      m.view, m.state.data(), d_candidates, m.candidates.data(), m.near.data(), m.near_capacity, d_delta, m.entries,
      nullptr);
  PF_CUDA_CHECK_LAUNCH(s);
}

void SwapScorer::commit_async(const int32_t* d_chosen) {
  Impl& m = *m_impl;
  const cudaStream_t s = m.stream;
  if (!m.delta) throw InputError("commit_async before any score_async");
  paint<true><<<kChanges, kPaintThreads, kPaintShared, s>>>(
      m.view, m.state.data(), d_chosen, m.candidates.data(), m.near.data(), m.near_capacity, nullptr, m.entries,
      m.thickness.data());
  PF_CUDA_CHECK_LAUNCH(s);
  commit_distances<<<kChanges, kThreads, 0, s>>>(m.view, m.state.data(), d_chosen, m.candidates.data(), m.d2.data(),
                                                  m.d2_count.data());
  PF_CUDA_CHECK_LAUNCH(s);
  commit_bricks<<<kChanges, kThreads, 0, s>>>(m.view, d_chosen, m.candidates.data(), m.brick_d2.data());
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
