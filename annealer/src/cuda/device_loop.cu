// The annealing loop on the device (see device_loop.hpp). One step is three launches in stream
// order — propose, swap and update the S2 counts (one block); the PSD of each weighted phase
// (the engine context's graph); score, accept or roll back (one block) — and nothing comes
// back to the host until the batch ends.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include "../device_loop.hpp"
#include "cuda/buffer.cuh"
#include "cuda/check.cuh"
#include "poreforge/cuda_engine.hpp"

namespace poreforge::anneal::detail {
namespace {

using cuda::DeviceBuffer;
using cuda::upload_async;

// StopReason as the device stores it.
constexpr int32_t kRunning = 0, kMaxEvaluations = 1, kEnergyTolerance = 2, kNoImprovement = 3;
static_assert(int(StopReason::none) == kRunning && int(StopReason::max_evaluations) == kMaxEvaluations &&
              int(StopReason::energy_tolerance) == kEnergyTolerance && int(StopReason::no_improvement) == kNoImprovement);

// Host-side steps per wait: the progress (and a stop) is seen at least this often.
constexpr int64_t kStepsPerWait = 256;
// Threads of the two step kernels (one block each).
constexpr int kThreads = 256;

struct Terms {
  double total, pore_psd, solid_psd, s2;
};

// The loop's scalar state; copied to pinned host memory at the end of every batch.
struct State {
  int64_t evaluations, accepted, rejected, stage, stall;
  int64_t stage_count;  // energies recorded in the current stage
  double temperature, last_delta;
  Terms energy, best;
  int32_t stopped;  // kRunning, or the StopReason that fired
  int32_t active;   // the current step made a proposal (the batch and the run go on)
  int64_t pore_voxel, solid_voxel;  // the current swap: pore_voxel became solid, solid_voxel pore
};

// What stays fixed for a run, passed by value to every kernel.
struct Problem {
  int64_t extent[3], stride[3], voxels;
  bool periodic;
  double interface_bias;
  Philox random{0};
  double weight[3], norm[3];           // pore PSD, solid PSD, S2
  int bins[2];                          // PSD bins of the pore and solid terms
  int target_len[2];                    // PSD target entries (pore, solid)
  int s2_len[3];                        // S2 target entries compared per axis
  int count_offset[3], count_entries;   // S2 counts: axis a at count_offset[a], n_a/2 + 1 each
  int64_t list_size[2];                 // solid, pore voxels
  int schedule_kind;                    // 0 exponential, 1 Aarts–Korst
  double alpha, log_one_plus_delta;     // the latter computed on the host, as the host loop does
  int64_t stage_length;
  int64_t max_evaluations;
  int64_t stall_stages;
  double energy_tolerance;
};

// Device pointers, passed by value.
struct Buffers {
  uint8_t* pore;
  uint8_t* solid;  // null when the solid PSD is not weighted
  int64_t* list[2];  // [0] solid voxels, [1] pore voxels
  int64_t* slot;     // position of each voxel in its list
  int64_t* s2_counts;
  int64_t* s2_delta;  // the current swap's change to the counts, for a rollback
  const int64_t* psd_counts[2];
  const double* psd_target[2];
  const double* s2_target;  // x, y, z entries concatenated, s2_len[a] each
  double* stage_energies;
  State* state;
};

// The host loop's propose(): a voxel of phase `which`, interface-biased by rejection.
__device__ int64_t propose(const Problem& P, const Buffers& B, int which, uint64_t step, uint32_t lane_base) {
  const int64_t* list = B.list[which];
  const double bias = P.interface_bias;
  for (uint32_t attempt = 0;; attempt += 2) {
    const PhiloxBlock w = P.random.draw(step, lane_base + attempt);
    const int64_t v = list[Philox::below(w[0], w[1], uint64_t(P.list_size[which]))];
    if (bias == 0) return v;
    const int64_t c[3] = {v % P.extent[0], (v / P.extent[0]) % P.extent[1], v / (P.extent[0] * P.extent[1])};
    int k = 0;
    for (int a = 0; a < 3; ++a) {
      const int64_t n = P.extent[a];
      if (n == 1) continue;
      for (int side = -1; side <= 1; side += 2) {
        int64_t p = c[a] + side;
        if (p < 0 || p >= n) {
          if (!P.periodic) continue;
          p = (p + n) % n;
        }
        k += B.pore[v + (p - c[a]) * P.stride[a]] != which;
      }
    }
    if (Philox::unit(w[2]) * (1 + 6 * bias) < 1 + bias * k) return v;
  }
}

// The host loop's swap(): `to_solid` (a pore voxel) and `to_pore` (a solid voxel) trade phase
// and list places. swap(q, p) after swap(p, q) restores everything.
__device__ void swap_voxels(const Buffers& B, int64_t to_solid, int64_t to_pore) {
  B.pore[to_solid] = 0;
  B.pore[to_pore] = 1;
  if (B.solid) {
    B.solid[to_solid] = 1;
    B.solid[to_pore] = 0;
  }
  const int64_t a = B.slot[to_solid], b = B.slot[to_pore];
  B.list[1][a] = to_pore;
  B.list[0][b] = to_solid;
  B.slot[to_pore] = a;
  B.slot[to_solid] = b;
}

// DirectionalCounts::flip for the swap just made, entry e = (axis, distance r). The mask
// already holds the new phases; the host loop's order (p to solid, then q to pore) is
// reconstructed from it: before the swap p was pore and q solid; between the flips both solid.
__device__ int64_t s2_change(const Problem& P, const Buffers& B, int e, int64_t p, int64_t q) {
  int a = 0;
  while (a < 2 && e >= P.count_offset[a + 1]) ++a;
  const int64_t r = e - P.count_offset[a];
  if (r == 0) return 0;  // −1 for p, +1 for q
  const int64_t n = P.extent[a], stride = P.stride[a];
  auto up = [&](int64_t i) {
    const int64_t c = (i / stride) % n;
    return c + r < n ? i + r * stride : i + (r - n) * stride;
  };
  auto down = [&](int64_t i) {
    const int64_t c = (i / stride) % n;
    return c - r >= 0 ? i - r * stride : i + (n - r) * stride;
  };
  auto before = [&](int64_t i) -> int64_t { return i == p ? 1 : i == q ? 0 : B.pore[i]; };
  auto between = [&](int64_t i) -> int64_t { return i == q ? 0 : B.pore[i]; };
  return -(before(up(p)) + before(down(p))) + (between(up(q)) + between(down(q)));
}

// The first half of Annealer::step, one block: draw and make the swap (thread 0), then update
// the S2 counts (every thread).
__global__ void propose_and_swap(Problem P, Buffers B, int64_t batch_end) {
  State& s = *B.state;
  if (threadIdx.x == 0) {
    if (s.stopped != kRunning || s.evaluations >= batch_end) {
      s.active = 0;
    } else {
      const uint64_t step = uint64_t(s.evaluations);
      const int64_t p = propose(P, B, 1, step, 0), q = propose(P, B, 0, step, 1);
      swap_voxels(B, p, q);
      s.pore_voxel = p;
      s.solid_voxel = q;
      s.active = 1;
    }
  }
  __syncthreads();
  if (!s.active) return;
  const int64_t p = s.pore_voxel, q = s.solid_voxel;
  for (int e = int(threadIdx.x); e < P.count_entries; e += int(blockDim.x)) {
    const int64_t delta = s2_change(P, B, e, p, q);
    B.s2_counts[e] += delta;
    B.s2_delta[e] = delta;
  }
}

// Annealer::energy_of on the device's descriptors. Every thread computes squared differences
// into shared memory (`squares`: pore-PSD bins, solid-PSD bins, S2 entries), then thread 0
// adds them up in the host's order, so the sums round as the host's do; one thread reading
// every count from global memory in turn was most of a step's overhead.
__device__ Terms energy(const Problem& P, const Buffers& B, double* squares) {
  const int psd_terms[2] = {P.weight[0] > 0 ? min(P.bins[0], P.target_len[0]) : 0,
                            P.weight[1] > 0 ? min(P.bins[1], P.target_len[1]) : 0};
  const int s2_terms = P.weight[2] > 0 ? P.s2_len[0] + P.s2_len[1] + P.s2_len[2] : 0;
  const int total_terms = psd_terms[0] + psd_terms[1] + s2_terms;
  for (int j = int(threadIdx.x); j < total_terms; j += int(blockDim.x)) {
    double d;
    if (j < psd_terms[0] + psd_terms[1]) {
      // psd_from_counts: counts are at_least[0..bins], above, phase voxels.
      const int k = j < psd_terms[0] ? 0 : 1, i = j - (k ? psd_terms[0] : 0), bins = P.bins[k];
      const int64_t* counts = B.psd_counts[k];
      const int64_t upper = i + 1 < bins ? counts[i + 1] : counts[bins + 1];
      d = double(counts[i] - upper) / double(counts[bins + 2]) - B.psd_target[k][i];
    } else {
      int r = j - psd_terms[0] - psd_terms[1], a = 0;
      const int target_index = r;
      while (r >= P.s2_len[a]) r -= P.s2_len[a++];
      d = double(B.s2_counts[P.count_offset[a] + r]) / double(P.voxels) - B.s2_target[target_index];
    }
    squares[j] = d * d;
  }
  __syncthreads();
  Terms t{0, 0, 0, 0};
  if (threadIdx.x != 0) return t;
  auto sum = [&](int from, int count) {
    double e = 0;
    for (int j = from; j < from + count; ++j) e += squares[j];
    return e;
  };
  if (P.weight[0] > 0) t.pore_psd = sum(0, psd_terms[0]) / P.norm[0];
  if (P.weight[1] > 0) t.solid_psd = sum(psd_terms[0], psd_terms[1]) / P.norm[1];
  if (P.weight[2] > 0) t.s2 = sum(psd_terms[0] + psd_terms[1], s2_terms) / P.norm[2];
  t.total = P.weight[0] * t.pore_psd + P.weight[1] * t.solid_psd + P.weight[2] * t.s2;
  return t;
}

// Annealer::end_stage.
__device__ void end_stage(const Problem& P, const Buffers& B, State& s) {
  s.stall = s.stall < 0 ? 0 : s.stall + 1;
  if (s.stall >= P.stall_stages && s.stopped == kRunning) s.stopped = kNoImprovement;
  if (P.schedule_kind == 0) {
    s.temperature *= P.alpha;
  } else {
    const double n = double(s.stage_count);
    double mean = 0, var = 0;
    for (int64_t k = 0; k < s.stage_count; ++k) mean += B.stage_energies[k];
    mean /= n;
    for (int64_t k = 0; k < s.stage_count; ++k) var += (B.stage_energies[k] - mean) * (B.stage_energies[k] - mean);
    const double sigma = sqrt(var / n);
    if (sigma > 0) s.temperature /= 1 + s.temperature * P.log_one_plus_delta / (3 * sigma);
  }
  s.stage_count = 0;
  ++s.stage;
}

// The rest of Annealer::step, one block: score, Metropolis, roll back a rejected swap,
// book-keeping. Dynamic shared memory: one double per energy term (Impl::energy_terms).
__global__ void accept_or_roll_back(Problem P, Buffers B) {
  extern __shared__ double squares[];
  __shared__ int rejected;
  State& s = *B.state;
  if (!s.active) return;  // the same for every thread of the block
  const Terms candidate = energy(P, B, squares);
  if (threadIdx.x == 0) {
    const double de = candidate.total - s.energy.total;
    s.last_delta = de;
    const double u = Philox::unit(P.random.draw(uint64_t(s.evaluations), kAcceptLane)[0]);
    const bool accept = de <= 0 || u < exp(-de / s.temperature);
    if (accept) {
      s.energy = candidate;
      ++s.accepted;
      if (candidate.total < s.best.total) {
        s.best = candidate;
        s.stall = -1;
      }
    } else {
      swap_voxels(B, s.solid_voxel, s.pore_voxel);
      ++s.rejected;
    }
    rejected = !accept;
    B.stage_energies[s.stage_count++] = s.energy.total;
    ++s.evaluations;
    if (s.energy.total <= P.energy_tolerance) s.stopped = kEnergyTolerance;
    else if (s.evaluations >= P.max_evaluations) s.stopped = kMaxEvaluations;
    if (s.evaluations % P.stage_length == 0) end_stage(P, B, s);
  }
  __syncthreads();
  if (rejected)
    for (int e = int(threadIdx.x); e < P.count_entries; e += int(blockDim.x)) B.s2_counts[e] -= B.s2_delta[e];
}

Terms terms_of(const Energy& e) { return {e.total, e.pore_psd, e.solid_psd, e.s2}; }
Energy energy_of(const Terms& t) {
  Energy e;
  e.total = t.total;
  e.pore_psd = t.pore_psd;
  e.solid_psd = t.solid_psd;
  e.s2 = t.s2;
  return e;
}

template <class T>
void download(const DeviceBuffer<T>& d, T* host, std::size_t count, cudaStream_t s) {
  if (count) PF_CUDA_CHECK(cudaMemcpyAsync(host, d.data(), count * sizeof(T), cudaMemcpyDeviceToHost, s));
}

}  // namespace

struct DeviceLoop::Impl {
  Shape shape;
  Spacing spacing;
  std::array<double, 3> norm{};
  cuda::Stream stream;  // first: the buffers below are freed on it
  cuda::Event ready{cudaEventDisableTiming}, scored[2]{cuda::Event{cudaEventDisableTiming}, cuda::Event{cudaEventDisableTiming}};
  std::unique_ptr<cuda::ThicknessContext> context[2];  // pore, solid; null when not weighted
  DeviceBuffer<uint8_t> pore, solid;
  DeviceBuffer<int64_t> list[2], slot, s2_counts, s2_delta, psd_counts[2];
  DeviceBuffer<double> psd_target[2], s2_target, stage_energies;
  DeviceBuffer<State> state;
  State* host_state = nullptr;  // pinned
  Problem problem{};
  Buffers buffers{};
  std::size_t energy_bytes = 0;  // accept_or_roll_back's shared memory: a double per energy term
  Progress progress;

  ~Impl() {
    for (auto& c : context)
      if (c) PF_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(static_cast<cudaStream_t>(c->stream())));
    PF_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(stream.get()));
    if (host_state) PF_CUDA_CHECK_NOTHROW(cudaFreeHost(host_state));
  }

  // The stream the steps run on: the pore context's, so that the common case (no solid term)
  // needs no event between streams.
  cudaStream_t work() const {
    for (auto& c : context)
      if (c) return static_cast<cudaStream_t>(c->stream());
    return stream.get();
  }

  void read_progress() {
    const State& st = *host_state;
    progress.evaluations = st.evaluations;
    progress.accepted = st.accepted;
    progress.rejected = st.rejected;
    progress.stage = st.stage;
    progress.temperature = st.temperature;
    progress.energy = energy_of(st.energy);
    progress.best = energy_of(st.best);
    progress.last_delta = st.last_delta;
    progress.stopped = StopReason(st.stopped);
  }

  // One step, enqueued.
  void enqueue_step(int64_t batch_end) {
    const cudaStream_t s = work();
    propose_and_swap<<<1, kThreads, 0, s>>>(problem, buffers, batch_end);
    PF_CUDA_CHECK_LAUNCH(s);
    for (int k = 0; k < 2; ++k) {
      if (!context[k]) continue;
      const cudaStream_t cs = static_cast<cudaStream_t>(context[k]->stream());
      if (cs != s) {
        PF_CUDA_CHECK(cudaEventRecord(ready.get(), s));
        PF_CUDA_CHECK(cudaStreamWaitEvent(cs, ready.get(), 0));
      }
      context[k]->psd_async(k == 0 ? pore.data() : solid.data(), psd_counts[k].data());
      if (cs != s) {
        PF_CUDA_CHECK(cudaEventRecord(scored[k].get(), cs));
        PF_CUDA_CHECK(cudaStreamWaitEvent(s, scored[k].get(), 0));
      }
    }
    accept_or_roll_back<<<1, kThreads, energy_bytes, s>>>(problem, buffers);
    PF_CUDA_CHECK_LAUNCH(s);
  }
};

DeviceLoop::DeviceLoop(const Config& config, const Snapshot& start, const DirectionalCounts& counts)
    : m_impl(std::make_unique<Impl>()) {
  Impl& m = *m_impl;
  const cudaStream_t s = m.stream.get();
  const Shape shape = config.shape;
  const int64_t n = shape.voxels();
  m.shape = shape;
  m.spacing = config.spacing;
  m.norm = start.norm;
  m.progress = start.progress;

  Problem& P = m.problem;
  P.extent[0] = shape.nx;
  P.extent[1] = shape.ny;
  P.extent[2] = shape.nz;
  P.stride[0] = 1;
  P.stride[1] = shape.nx;
  P.stride[2] = shape.nx * shape.ny;
  P.voxels = n;
  P.periodic = config.boundary == Boundary::periodic;
  P.interface_bias = config.moves.interface_bias;
  P.random = Philox(config.seed);
  P.weight[0] = config.weights.pore_psd;
  P.weight[1] = config.weights.solid_psd;
  P.weight[2] = config.weights.s2;
  for (int k = 0; k < 3; ++k) P.norm[k] = start.norm[k];
  const auto& t = config.targets;
  P.bins[0] = int(t.pore_edges.size()) - 1;
  P.bins[1] = t.solid_edges.empty() ? 0 : int(t.solid_edges.size()) - 1;
  P.target_len[0] = int(t.pore_psd.size());
  P.target_len[1] = int(t.solid_psd.size());
  int entries = 0;
  std::vector<double> s2_target;
  std::vector<int64_t> host_counts;
  for (int a = 0; a < 3; ++a) {
    const auto& c = counts.counts(a);
    P.count_offset[a] = entries;
    entries += int(c.size());
    host_counts.insert(host_counts.end(), c.begin(), c.end());
    P.s2_len[a] = int(std::min(t.s2[a].size(), c.size()));
    s2_target.insert(s2_target.end(), t.s2[a].begin(), t.s2[a].begin() + P.s2_len[a]);
  }
  P.count_entries = entries;
  P.list_size[0] = int64_t(start.solid_voxels.size());
  P.list_size[1] = int64_t(start.pore_voxels.size());
  const auto& sc = config.schedule;
  P.schedule_kind = sc.kind == Schedule::Kind::exponential ? 0 : 1;
  P.alpha = sc.alpha;
  P.log_one_plus_delta = std::log(1 + sc.delta);
  P.stage_length = sc.stage_length;
  P.max_evaluations = config.stopping.max_evaluations;
  P.stall_stages = config.stopping.stall_stages;
  P.energy_tolerance = config.stopping.energy_tolerance;

  // Device state: the structure (and its complement when the solid PSD is weighted), the voxel
  // lists and their slots, the S2 counts, the targets, the stage's energies, the scalars.
  m.pore = upload_async(start.pore.data(), std::size_t(n), s, "the annealer's structure");
  std::vector<int64_t> slot(static_cast<std::size_t>(n));
  for (int which = 0; which < 2; ++which) {
    const auto& list = which ? start.pore_voxels : start.solid_voxels;
    for (std::size_t k = 0; k < list.size(); ++k) slot[std::size_t(list[k])] = int64_t(k);
    m.list[which] = upload_async(list.data(), list.size(), s, which ? "the pore-voxel list" : "the solid-voxel list");
  }
  m.slot = upload_async(slot.data(), slot.size(), s, "the voxel-list slots");
  m.s2_counts = upload_async(host_counts.data(), host_counts.size(), s, "the S2 counts");
  m.s2_delta = DeviceBuffer<int64_t>(host_counts.size(), s, "the S2 change of a swap");
  m.s2_target = upload_async(s2_target.data(), s2_target.size(), s, "the S2 target");
  m.psd_target[0] = upload_async(t.pore_psd.data(), t.pore_psd.size(), s, "the pore-PSD target");
  m.psd_target[1] = upload_async(t.solid_psd.data(), t.solid_psd.size(), s, "the solid-PSD target");
  const std::size_t stage_room = std::size_t(sc.stage_length) + start.stage_energies.size();
  m.stage_energies = DeviceBuffer<double>(stage_room, s, "the stage's energies");
  PF_CUDA_CHECK(cudaMemcpyAsync(m.stage_energies.data(), start.stage_energies.data(),
                                start.stage_energies.size() * sizeof(double), cudaMemcpyHostToDevice, s));
  Mask solid;  // lives until the synchronisation below, like every host source of an upload
  if (config.weights.solid_psd > 0) {
    solid = complement(start.pore);
    m.solid = upload_async(solid.data(), std::size_t(n), s, "the annealer's solid phase");
  }

  // The engine contexts: room for a centre at every voxel, so no structure overflows them.
  for (int k = 0; k < 2; ++k) {
    const double w = k == 0 ? config.weights.pore_psd : config.weights.solid_psd;
    if (w <= 0) continue;
    cuda::ContextConfig cc{shape, config.spacing, config.boundary, k == 0 ? t.pore_edges : t.solid_edges, 1.0};
    m.context[k] = std::make_unique<cuda::ThicknessContext>(cc);
    m.psd_counts[k] = DeviceBuffer<int64_t>(m.context[k]->psd_count_entries(), s, "PSD counts");
  }

  int terms = P.weight[2] > 0 ? P.s2_len[0] + P.s2_len[1] + P.s2_len[2] : 0;
  for (int k = 0; k < 2; ++k)
    if (P.weight[k] > 0) terms += std::min(P.bins[k], P.target_len[k]);
  m.energy_bytes = std::size_t(terms) * sizeof(double);
  if (m.energy_bytes > 48 * 1024)  // beyond the default: S2 targets longer than ~6,000 entries
    PF_CUDA_CHECK(cudaFuncSetAttribute(accept_or_roll_back, cudaFuncAttributeMaxDynamicSharedMemorySize, int(m.energy_bytes)));

  PF_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&m.host_state), sizeof(State)));
  State& st = *m.host_state;
  st = State{};
  const Progress& p = start.progress;
  st.evaluations = p.evaluations;
  st.accepted = p.accepted;
  st.rejected = p.rejected;
  st.stage = p.stage;
  st.stall = start.stall;
  st.stage_count = int64_t(start.stage_energies.size());
  st.temperature = p.temperature;
  st.last_delta = p.last_delta;
  st.energy = terms_of(p.energy);
  st.best = terms_of(p.best);
  st.stopped = kRunning;
  m.state = upload_async(&st, 1, s, "the loop's state");

  Buffers& B = m.buffers;
  B.pore = m.pore.data();
  B.solid = m.solid.data();
  B.list[0] = m.list[0].data();
  B.list[1] = m.list[1].data();
  B.slot = m.slot.data();
  B.s2_counts = m.s2_counts.data();
  B.s2_delta = m.s2_delta.data();
  B.psd_counts[0] = m.psd_counts[0].data();
  B.psd_counts[1] = m.psd_counts[1].data();
  B.psd_target[0] = m.psd_target[0].data();
  B.psd_target[1] = m.psd_target[1].data();
  B.s2_target = m.s2_target.data();
  B.stage_energies = m.stage_energies.data();
  B.state = m.state.data();
  PF_CUDA_CHECK(cudaStreamSynchronize(s));  // the host copies above must outlive their uploads
}

DeviceLoop::~DeviceLoop() = default;

void DeviceLoop::advance(int64_t steps) {
  Impl& m = *m_impl;
  const cudaStream_t s = m.work();
  int64_t done = 0;
  while (done < steps && m.progress.stopped == StopReason::none) {
    const int64_t batch = std::min(kStepsPerWait, steps - done);
    const int64_t batch_end = m.progress.evaluations + batch;
    for (int64_t k = 0; k < batch; ++k) m.enqueue_step(batch_end);
    PF_CUDA_CHECK(cudaMemcpyAsync(m.host_state, m.state.data(), sizeof(State), cudaMemcpyDeviceToHost, s));
    PF_CUDA_CHECK(cudaStreamSynchronize(s));
    for (auto& c : m.context)
      if (c) c->synchronize();  // throws if an evaluation was invalid
    m.read_progress();
    done += batch;
  }
}

const Progress& DeviceLoop::progress() const { return m_impl->progress; }

Snapshot DeviceLoop::snapshot() const {
  const Impl& m = *m_impl;
  const cudaStream_t s = m.work();
  Snapshot snap;
  snap.pore = Mask(m.shape, m.spacing);
  download(m.pore, snap.pore.data(), std::size_t(m.shape.voxels()), s);
  snap.solid_voxels.resize(m.list[0].size());
  snap.pore_voxels.resize(m.list[1].size());
  download(m.list[0], snap.solid_voxels.data(), snap.solid_voxels.size(), s);
  download(m.list[1], snap.pore_voxels.data(), snap.pore_voxels.size(), s);
  PF_CUDA_CHECK(cudaMemcpyAsync(m.host_state, m.state.data(), sizeof(State), cudaMemcpyDeviceToHost, s));
  PF_CUDA_CHECK(cudaStreamSynchronize(s));
  snap.stage_energies.resize(std::size_t(m.host_state->stage_count));
  download(m.stage_energies, snap.stage_energies.data(), snap.stage_energies.size(), s);
  PF_CUDA_CHECK(cudaStreamSynchronize(s));
  snap.progress = m.progress;
  snap.stall = m.host_state->stall;
  snap.norm = m.norm;
  return snap;
}

Mask DeviceLoop::structure() const {
  const Impl& m = *m_impl;
  Mask pore(m.shape, m.spacing);
  download(m.pore, pore.data(), std::size_t(m.shape.voxels()), m.work());
  PF_CUDA_CHECK(cudaStreamSynchronize(m.work()));
  return pore;
}

DirectionalCounts DeviceLoop::counts() const {
  const Impl& m = *m_impl;
  std::vector<int64_t> all(std::size_t(m.problem.count_entries));
  download(m.s2_counts, all.data(), all.size(), m.work());
  PF_CUDA_CHECK(cudaStreamSynchronize(m.work()));
  std::array<std::vector<int64_t>, 3> axes;
  for (int a = 0; a < 3; ++a) {
    const int end = a < 2 ? m.problem.count_offset[a + 1] : m.problem.count_entries;
    axes[a].assign(all.begin() + m.problem.count_offset[a], all.begin() + end);
  }
  return DirectionalCounts(m.shape, std::move(axes));
}

}  // namespace poreforge::anneal::detail
