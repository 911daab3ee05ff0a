// The annealing loop on the device (see device_loop.hpp), in one of two drivers of the same
// step (step.hpp's functions, the host loop's own):
// - batches (Config::local_evaluation, isotropic spacing): K proposals drawn against the same
//   state and scored at once — the count, chord and S2 terms' change by each block, the PSD
//   terms' by the engine's swap scorers (local re-evaluation, cuda::SwapScorer) — then taken in
//   order up to the first accepted one, which is applied and committed; the rest are dropped.
//   Each proposal draws from its own evaluation's counter, so the chain is the one a proposal
//   at a time gives.
// - one step at a time (the default, which measured faster): propose and swap (one block), the
//   PSD of each weighted phase from scratch (the engine context's graph), score and accept or
//   undo (one block).
// Nothing comes back to the host until a run of steps ends.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "../device_loop.hpp"
#include "cuda/buffer.cuh"
#include "cuda/check.cuh"
#include "poreforge/cuda_engine.hpp"

namespace poreforge::anneal::detail {
namespace {

using cuda::DeviceBuffer;
using cuda::upload_async;

// Host-side steps per wait: the progress (and a stop) is seen at least this often.
constexpr int64_t kStepsPerWait = 256;
// Threads of the two step kernels (one block each).
constexpr int kThreads = 256;

// The first half of a step (step.hpp), one block: propose and apply the swap (thread 0), then
// each S2 count its change (every thread).
__global__ void propose_and_swap(Step st, StepState* state, int64_t batch_end) {
  StepState& s = *state;
  if (threadIdx.x == 0) {
    const Progress& p = s.progress;
    if (p.stopped != StopReason::none || p.evaluations >= batch_end) {
      s.active = 0;
    } else {
      const uint64_t step = uint64_t(p.evaluations);
      s.to_solid = propose(st, 1, step, 0);
      s.to_pore = propose(st, 0, step, 1, s.to_solid);
      apply_swap(st, s.to_solid, s.to_pore);
      s.active = 1;
    }
  }
  __syncthreads();
  if (!s.active) return;
  const int64_t p = s.to_solid, q = s.to_pore;
  const terms::S2& s2 = st.objective.s2;
  for (int e = int(threadIdx.x); e < s2.count_entries; e += int(blockDim.x)) s2.apply(st.pore, e, p, q);
}

// The rest of the step, one block, after the engine's PSD: every thread computes squares of the
// objective into shared memory (one double per entry: Impl::energy_bytes), thread 0 combines them
// in the host loop's order, accepts or undoes the swap and ends the evaluation; a rejected swap's
// S2 change is taken back by every thread.
__global__ void accept_or_undo(Step st, StepState* state) {
  extern __shared__ double squares[];
  __shared__ int rejected;
  StepState& s = *state;
  if (!s.active) return;  // the same for every thread of the block
  const Objective& o = st.objective;
  const int entries = o.entries();
  for (int j = int(threadIdx.x); j < entries; j += int(blockDim.x)) squares[j] = o.square(j);
  __syncthreads();
  if (threadIdx.x == 0) {
    const bool ok = accept(st, s, o.combine(squares));
    if (!ok) undo_swap(st, s.to_solid, s.to_pore);
    rejected = !ok;
    end_evaluation(st.cooling, s, st.stage_energies);
  }
  __syncthreads();
  if (rejected)
    for (int e = int(threadIdx.x); e < o.s2.count_entries; e += int(blockDim.x)) o.s2.undo(e);
}

// ---- batches ---------------------------------------------------------------------------

// The most proposals a batch scores: a scorer's paint launch has two blocks a proposal (one a
// multiprocessor), 128 of an H200's 132 in one wave; with both PSD terms the two scorers' launches
// run one after the other, and half as many keep each within a wave with the rest of the batch.
constexpr int kMostBatch = 64;

// A batch's buffers on the device, a row per proposal.
struct Batch {
  int32_t* count = nullptr;   // proposals made (≤ K; fewer at the run's or the run of steps' end)
  int32_t* chosen = nullptr;  // the one the chain took, or −1
  int64_t* swaps[2] = {};     // per scorer (pore, solid): [2k] leaves its phase, [2k + 1] joins it
  int64_t* psd_delta[2] = {}; // per scorer: the change of its counts, `psd_entries` a proposal
  int64_t* psd[2] = {};       // the candidate's PSD counts
  int64_t* s2 = nullptr;      // the candidate's S2 counts, count_entries a proposal
  int64_t* values = nullptr;  // the candidate's count values, Objective::kCountValues a proposal
  int64_t* chords = nullptr;  // the candidate's chord histograms, 6·stride a proposal
  Energy* energy = nullptr;
  const int64_t* base_psd[2] = {};  // the scorers' committed counts
  int psd_entries = 0;
};

// A proposal (step.hpp's `propose`) by the 32 lanes of a warp, an attempt each at a time: the
// lowest attempt that passes, the voxel one at a time gives.
__device__ int64_t propose_by_warp(const Step& st, int which, uint64_t step, uint32_t lane_base, int64_t leaving,
                                   int lane) {
  for (uint32_t first = 0;; first += 32) {
    const int64_t v = proposal_attempt(st, which, step, lane_base, first + uint32_t(lane), leaving);
    const unsigned pass = __ballot_sync(0xFFFFFFFFu, v >= 0);
    if (pass) return __shfl_sync(0xFFFFFFFFu, v, __ffs(int(pass)) - 1);
  }
}

// Proposals n, n + 1, … of the state (n its evaluations), a warp each, up to K or the end of
// the run of steps; none once the run has stopped.
__global__ void propose_batch(const __grid_constant__ Step st, const StepState* state, Batch b, int k_most,
                              int64_t batch_end) {
  const Progress& p = state->progress;
  const int64_t room = p.stopped != StopReason::none ? 0 : std::min<int64_t>(k_most, batch_end - p.evaluations);
  const int k = int((blockIdx.x * blockDim.x + threadIdx.x) / 32), lane = int(threadIdx.x % 32);
  if (k == 0 && lane == 0) {
    *b.count = int32_t(std::max<int64_t>(room, 0));
    *b.chosen = -1;
  }
  if (k >= room) return;  // the same for the whole warp
  const uint64_t step = uint64_t(p.evaluations) + uint64_t(k);
  const int64_t to_solid = propose_by_warp(st, 1, step, 0, -1, lane);
  const int64_t to_pore = propose_by_warp(st, 0, step, 1, to_solid, lane);
  if (lane != 0) return;
  b.swaps[0][2 * k] = to_solid;  // the pore phase loses to_solid and gains to_pore
  b.swaps[0][2 * k + 1] = to_pore;
  if (b.swaps[1]) {
    b.swaps[1][2 * k] = to_pore;  // the solid phase the other way round
    b.swaps[1][2 * k + 1] = to_solid;
  }
}

// Proposal k's candidate counts of the count, chord and S2 terms (the state's, changed as
// apply_swap and S2::apply would change them), one block each.
__global__ void candidate_terms(const __grid_constant__ Step st, Batch b) {
  const int k = int(blockIdx.x);
  if (k >= *b.count) return;
  const int64_t to_solid = b.swaps[0][2 * k], to_pore = b.swaps[0][2 * k + 1];
  const Objective& o = st.objective;
  const terms::S2& s2 = o.s2;
  int64_t* s2_out = b.s2 + int64_t(k) * s2.count_entries;
  for (int e = int(threadIdx.x); e < s2.count_entries; e += int(blockDim.x))
    s2_out[e] = s2.counts[e] + s2.change(st.pore, e, to_solid, to_pore);
  terms::Chords chords = o.chords;
  if (chords.counts) {
    int64_t* out = b.chords + int64_t(k) * 6 * chords.stride;
    for (int e = int(threadIdx.x); e < 6 * chords.stride; e += int(blockDim.x)) out[e] = chords.counts[e];
    chords.counts = out;
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  chords.on_swap(st.pore, to_solid, to_pore);
  int64_t* values = b.values + Objective::kCountValues * int64_t(k);
  for (int e = 0; e < Objective::kCountValues; ++e) values[e] = 0;
  o.read_counts(values);
  if (o.euler.value || o.surface.value || o.patterns.counts) {
    const terms::SwapCubes cubes = terms::swap_cubes(st.pore, st.extent, to_solid, to_pore);
    if (o.euler.value) values[0] += o.euler.change(cubes);
    if (o.surface.value) values[1] += o.surface.change(cubes);
    if (o.patterns.counts) o.patterns.add_swap(cubes, values + Objective::kPatternsAt);
  }
  if (o.local_porosity.counts)
    o.local_porosity.add_swap(st.pore, st.extent, to_solid, to_pore, values + Objective::kLocalPorosityAt);
}

// Proposal k's energy: the objective over its candidate counts (squares by every thread, added
// up by thread 0 in the host loop's order), one block each.
__global__ void candidate_energy(const __grid_constant__ Step st, Batch b) {
  extern __shared__ double squares[];
  const int k = int(blockIdx.x);
  if (k >= *b.count) return;
  Objective o = st.objective;
  for (int which = 0; which < 2; ++which) {
    if (!b.base_psd[which]) continue;
    int64_t* out = b.psd[which] + int64_t(k) * b.psd_entries;
    for (int e = int(threadIdx.x); e < b.psd_entries; e += int(blockDim.x))
      out[e] = b.base_psd[which][e] + b.psd_delta[which][int64_t(k) * b.psd_entries + e];
    (which ? o.solid_psd : o.pore_psd).counts = out;
  }
  o.s2.counts = b.s2 + int64_t(k) * o.s2.count_entries;
  o.attach_counts(b.values + Objective::kCountValues * int64_t(k));
  if (o.chords.counts) o.chords.counts = b.chords + int64_t(k) * 6 * o.chords.stride;
  __syncthreads();
  const int entries = o.entries();
  for (int j = int(threadIdx.x); j < entries; j += int(blockDim.x)) squares[j] = o.square(j);
  __syncthreads();
  if (threadIdx.x == 0) b.energy[k] = o.combine(squares);
}

// The chain through the batch (thread 0): each proposal accepted or not in order, its
// evaluation ended, up to the first accepted one, whose phases and list places are swapped;
// every thread then copies its counts into the terms' (the scorers commit it next).
__global__ void take_batch(const __grid_constant__ Step st, StepState* state, Batch b) {
  __shared__ int chosen;
  StepState& s = *state;
  if (threadIdx.x == 0) {
    chosen = -1;
    const int count = *b.count;
    for (int k = 0; k < count && s.progress.stopped == StopReason::none; ++k) {
      s.to_solid = b.swaps[0][2 * k];
      s.to_pore = b.swaps[0][2 * k + 1];
      const bool ok = accept(st, s, b.energy[k]);
      end_evaluation(st.cooling, s, st.stage_energies);
      if (ok) {
        chosen = k;
        swap_phases(st, s.to_solid, s.to_pore);
        break;
      }
    }
    *b.chosen = chosen;
  }
  __syncthreads();
  if (chosen < 0) return;
  const Objective& o = st.objective;
  const terms::S2& s2 = o.s2;
  const int64_t* from = b.s2 + int64_t(chosen) * s2.count_entries;
  for (int e = int(threadIdx.x); e < s2.count_entries; e += int(blockDim.x)) s2.counts[e] = from[e];
  if (o.chords.counts) {
    const int64_t* chords = b.chords + int64_t(chosen) * 6 * o.chords.stride;
    for (int e = int(threadIdx.x); e < 6 * o.chords.stride; e += int(blockDim.x)) o.chords.counts[e] = chords[e];
  }
  if (threadIdx.x == 0) o.write_counts(b.values + Objective::kCountValues * int64_t(chosen));
}

template <class T>
void download(const DeviceBuffer<T>& d, T* host, std::size_t count, cudaStream_t s) {
  if (count) PF_CUDA_CHECK(cudaMemcpyAsync(host, d.data(), count * sizeof(T), cudaMemcpyDeviceToHost, s));
}

}  // namespace

struct DeviceLoop::Impl {
  Shape shape;
  Spacing spacing;
  cuda::Stream stream;  // first: the buffers below are freed on it
  cuda::Event ready{cudaEventDisableTiming}, scored[2]{cuda::Event{cudaEventDisableTiming}, cuda::Event{cudaEventDisableTiming}};
  // One step at a time: the evaluators' engine contexts (pore, solid; null when not weighted).
  std::unique_ptr<cuda::ThicknessContext> context[2];
  // Batches: the swap scorers of the weighted phases, and the batch's buffers.
  std::unique_ptr<cuda::SwapScorer> scorer[2];
  bool batches = false;
  int batch = 0;        // Config::batch: proposals a batch scores (0: from the acceptance rate)
  int most_batch = 1;   // the most a batch takes
  double acceptance = 1.0;  // the acceptance rate over the last run of steps
  Batch batch_buffers;
  DeviceBuffer<int32_t> batch_ints;
  DeviceBuffer<int64_t> batch_swaps[2], batch_psd_delta[2], batch_psd[2], batch_s2, batch_values, batch_chords;
  DeviceBuffer<Energy> batch_energy;
  DeviceBuffer<uint8_t> pore, solid, frozen;
  DeviceBuffer<int64_t> list[2], slot, s2_counts, s2_delta, psd_counts[2], count_values, chord_counts, surface_quanta;
  DeviceBuffer<double> psd_target[2], s2_target, chord_target, stage_energies;
  DeviceBuffer<StepState> state;
  StepState* host_state = nullptr;  // pinned
  Step step;                        // views of the buffers above
  std::size_t energy_bytes = 0;     // accept_or_undo's and candidate_energy's shared memory: a double per objective entry
  Progress progress;

  ~Impl() {
    for (auto& c : context)
      if (c) PF_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(static_cast<cudaStream_t>(c->stream())));
    PF_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(stream.get()));
    if (host_state) PF_CUDA_CHECK_NOTHROW(cudaFreeHost(host_state));
  }

  // The stream the steps run on: the pore context's when one step runs at a time, so that the
  // common case (no solid term) needs no event between streams; the loop's own for batches.
  cudaStream_t work() const {
    for (auto& c : context)
      if (c) return static_cast<cudaStream_t>(c->stream());
    return stream.get();
  }

  // One step, enqueued.
  void enqueue_step(int64_t batch_end) {
    const cudaStream_t s = work();
    propose_and_swap<<<1, kThreads, 0, s>>>(step, state.data(), batch_end);
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
    accept_or_undo<<<1, kThreads, energy_bytes, s>>>(step, state.data());
    PF_CUDA_CHECK_LAUNCH(s);
  }

  // Proposals a batch scores now: Config::batch, or enough that the chain takes one in about a
  // quarter of the batches' length at the acceptance rate lately (taking more costs the device
  // little while its multiprocessors are not all busy).
  int batch_size() const {
    if (batch > 0) return std::min(batch, most_batch);
    return int(std::clamp(std::ceil(4.0 / std::max(acceptance, 1e-6)), 4.0, double(most_batch)));
  }

  // One batch, enqueued: proposals, their terms and PSDs, the chain through them, the commit.
  void enqueue_batch(int64_t batch_end, int k_most) {
    const cudaStream_t s = work();
    propose_batch<<<(k_most + 3) / 4, 128, 0, s>>>(step, state.data(), batch_buffers, k_most, batch_end);
    PF_CUDA_CHECK_LAUNCH(s);
    for (int w = 0; w < 2; ++w)
      if (scorer[w]) scorer[w]->score_async(batch_buffers.swaps[w], batch_buffers.count, batch_buffers.psd_delta[w]);
    candidate_terms<<<k_most, kThreads, 0, s>>>(step, batch_buffers);
    PF_CUDA_CHECK_LAUNCH(s);
    candidate_energy<<<k_most, kThreads, energy_bytes, s>>>(step, batch_buffers);
    PF_CUDA_CHECK_LAUNCH(s);
    take_batch<<<1, kThreads, 0, s>>>(step, state.data(), batch_buffers);
    PF_CUDA_CHECK_LAUNCH(s);
    for (auto& sc : scorer)
      if (sc) sc->commit_async(batch_buffers.chosen);
  }

  // The batch buffers for `most` proposals and the scorers of the weighted phases.
  void make_batches(const Config& config, const Bins* bins[2]) {
    const cudaStream_t s = stream.get();
    const Objective& o = step.objective;
    const int phases = (bins[0] ? 1 : 0) + (bins[1] ? 1 : 0);
    most_batch = phases > 1 ? kMostBatch / 2 : kMostBatch;
    batch = config.batch;
    const int k = most_batch;
    Batch& b = batch_buffers;
    batch_ints = DeviceBuffer<int32_t>(2, s, "the batch's counters");
    b.count = batch_ints.data();
    b.chosen = batch_ints.data() + 1;
    for (int w = 0; w < 2; ++w) {
      if (!bins[w]) continue;
      scorer[w] = std::make_unique<cuda::SwapScorer>(w == 0 ? pore.data() : solid.data(), shape, spacing,
                                                     config.boundary, *bins[w], k, s);
      b.psd_entries = scorer[w]->count_entries();
      batch_swaps[w] = DeviceBuffer<int64_t>(2 * std::size_t(k), s, "the batch's swaps");
      batch_psd_delta[w] = DeviceBuffer<int64_t>(std::size_t(k) * std::size_t(b.psd_entries), s, "the batch's PSD changes");
      batch_psd[w] = DeviceBuffer<int64_t>(std::size_t(k) * std::size_t(b.psd_entries), s, "the batch's PSD counts");
      b.swaps[w] = batch_swaps[w].data();
      b.psd_delta[w] = batch_psd_delta[w].data();
      b.psd[w] = batch_psd[w].data();
      b.base_psd[w] = scorer[w]->counts();
    }
    if (!b.swaps[0]) {  // no PSD term: the pore phase's swaps all the same
      batch_swaps[0] = DeviceBuffer<int64_t>(2 * std::size_t(k), s, "the batch's swaps");
      b.swaps[0] = batch_swaps[0].data();
    }
    batch_s2 = DeviceBuffer<int64_t>(std::size_t(k) * std::size_t(o.s2.count_entries), s, "the batch's S2 counts");
    batch_values = DeviceBuffer<int64_t>(std::size_t(Objective::kCountValues) * std::size_t(k), s,
                                         "the batch's count terms");
    batch_chords = DeviceBuffer<int64_t>(o.chords.counts ? std::size_t(k) * 6 * std::size_t(o.chords.stride) : 0, s,
                                         "the batch's chord histograms");
    batch_energy = DeviceBuffer<Energy>(std::size_t(k), s, "the batch's energies");
    b.s2 = batch_s2.data();
    b.values = batch_values.data();
    b.chords = batch_chords.data();
    b.energy = batch_energy.data();
    batches = true;
  }
};

DeviceLoop::DeviceLoop(const Config& config, const Snapshot& start, const DirectionalCounts& counts, const Step& host,
                       std::unique_ptr<PsdEvaluator> pore_evaluator, std::unique_ptr<PsdEvaluator> solid_evaluator)
    : m_impl(std::make_unique<Impl>()) {
  Impl& m = *m_impl;
  const cudaStream_t s = m.stream.get();
  const Shape shape = config.shape;
  const int64_t n = shape.voxels();
  m.shape = shape;
  m.spacing = config.spacing;
  m.progress = start.progress;

  Step& st = m.step;
  st = step_of(config);
  Objective& o = st.objective;
  for (int k = 0; k < kTermCount; ++k) o.norm[k] = start.norm[k];
  st.list_size[0] = int64_t(start.solid_voxels.size());
  st.list_size[1] = int64_t(start.pore_voxels.size());
  std::vector<int64_t> host_counts;
  for (int a = 0; a < 3; ++a) host_counts.insert(host_counts.end(), counts.counts(a).begin(), counts.counts(a).end());
  const std::vector<double> s2_target = detail::s2_target(config, o.s2);
  const auto& t = config.targets;
  const auto& sc = config.schedule;

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
  const Objective& ho = host.objective;
  std::vector<int64_t> count_values(Objective::kCountValues, 0);
  ho.read_counts(count_values.data());
  m.count_values = upload_async(count_values.data(), count_values.size(), s, "the count terms' values");
  m.surface_quanta = upload_async(ho.surface.quanta, ho.surface.quanta ? std::size_t(256) : 0, s, "the surface quanta");
  const std::vector<double> chord_target = detail::chord_target(config.targets, o.chords);
  m.chord_counts = upload_async(ho.chords.counts, ho.chords.counts ? std::size_t(6 * ho.chords.stride) : 0, s,
                                "the chord histograms");
  m.chord_target = upload_async(chord_target.data(), chord_target.size(), s, "the chord target");
  if (host.frozen) m.frozen = upload_async(host.frozen, std::size_t(n), s, "the frozen voxels");
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

  // Batches where the scorers' local re-evaluation applies (isotropic spacing) and the config
  // keeps it; else one step at a time, with the evaluators' engine contexts (their workspaces,
  // streams and captured graphs). Batches need no evaluator: they go with this constructor.
  const bool batches = config.local_evaluation && config.spacing.isotropic();
  std::unique_ptr<PsdEvaluator> evaluators[2] = {std::move(pore_evaluator), std::move(solid_evaluator)};
  for (int k = 0; k < 2 && !batches; ++k) {
    if (!evaluators[k]) continue;
    m.context[k] = cuda::take_context(std::move(evaluators[k]));
    m.psd_counts[k] = DeviceBuffer<int64_t>(m.context[k]->psd_count_entries(), s, "PSD counts");
  }

  m.energy_bytes = std::size_t(o.entries()) * sizeof(double);
  if (m.energy_bytes > 48 * 1024) {  // beyond the default: objectives of more than ~6,000 entries (S2, chords)
    PF_CUDA_CHECK(cudaFuncSetAttribute(accept_or_undo, cudaFuncAttributeMaxDynamicSharedMemorySize, int(m.energy_bytes)));
    PF_CUDA_CHECK(cudaFuncSetAttribute(candidate_energy, cudaFuncAttributeMaxDynamicSharedMemorySize, int(m.energy_bytes)));
  }

  PF_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&m.host_state), sizeof(StepState)));
  StepState& hs = *m.host_state;
  hs = StepState{};
  hs.progress = start.progress;
  hs.progress.stopped = StopReason::none;
  hs.stall = start.stall;
  hs.stage_count = int64_t(start.stage_energies.size());
  m.state = upload_async(&hs, 1, s, "the loop's state");

  st.pore = m.pore.data();
  st.solid = m.solid.data();
  st.list[0] = m.list[0].data();
  st.list[1] = m.list[1].data();
  st.slot = m.slot.data();
  st.stage_energies = m.stage_energies.data();
  o.s2.counts = m.s2_counts.data();
  o.s2.delta = m.s2_delta.data();
  o.s2.target = m.s2_target.data();
  o.attach_counts(m.count_values.data());
  o.surface.quanta = m.surface_quanta.data();
  o.chords.counts = o.chords.entries ? m.chord_counts.data() : nullptr;
  o.chords.target = m.chord_target.data();
  st.frozen = host.frozen ? m.frozen.data() : nullptr;
  o.pore_psd.counts = m.psd_counts[0].data();
  o.pore_psd.target = m.psd_target[0].data();
  o.solid_psd.counts = m.psd_counts[1].data();
  o.solid_psd.target = m.psd_target[1].data();
  PF_CUDA_CHECK(cudaStreamSynchronize(s));  // the host copies above must outlive their uploads
  if (batches) {
    std::optional<Bins> bins[2];
    if (config.weights.pore_psd > 0) bins[0] = Bins::from_edges(t.pore_edges);
    if (config.weights.solid_psd > 0) bins[1] = Bins::from_edges(t.solid_edges);
    const Bins* weighted[2] = {bins[0] ? &*bins[0] : nullptr, bins[1] ? &*bins[1] : nullptr};
    m.make_batches(config, weighted);
    PF_CUDA_CHECK(cudaStreamSynchronize(s));
  }
}

DeviceLoop::~DeviceLoop() = default;

void DeviceLoop::advance(int64_t steps) {
  Impl& m = *m_impl;
  const cudaStream_t s = m.work();
  int64_t done = 0;
  while (done < steps && m.progress.stopped == StopReason::none) {
    const int64_t run = std::min(kStepsPerWait, steps - done);
    const int64_t run_end = m.progress.evaluations + run;
    const Progress before = m.progress;
    if (m.batches) {
      // As many batches as should take the run's evaluations at the acceptance rate lately (a
      // batch takes up to its first accepted proposal); those past the run's end do nothing,
      // and a run short of its end is finished by the next pass.
      const int k = m.batch_size();
      const double taken = std::clamp(1.0 / std::max(m.acceptance, 1e-6), 1.0, double(k));
      const int64_t count = std::clamp<int64_t>(int64_t(std::ceil(double(run) / taken)), 1, run);
      for (int64_t b = 0; b < count; ++b) m.enqueue_batch(run_end, k);
    } else {
      for (int64_t k = 0; k < run; ++k) m.enqueue_step(run_end);
    }
    PF_CUDA_CHECK(cudaMemcpyAsync(m.host_state, m.state.data(), sizeof(StepState), cudaMemcpyDeviceToHost, s));
    PF_CUDA_CHECK(cudaStreamSynchronize(s));
    for (auto& c : m.context)
      if (c) c->synchronize();  // throws if an evaluation was invalid
    for (auto& sc : m.scorer)
      if (sc) sc->synchronize();
    m.progress = m.host_state->progress;
    const int64_t made = m.progress.evaluations - before.evaluations;
    if (made == 0) break;  // stopped before its first step
    m.acceptance = double(m.progress.accepted - before.accepted) / double(made);
    done += made;
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
  PF_CUDA_CHECK(cudaMemcpyAsync(m.host_state, m.state.data(), sizeof(StepState), cudaMemcpyDeviceToHost, s));
  PF_CUDA_CHECK(cudaStreamSynchronize(s));
  snap.stage_energies.resize(std::size_t(m.host_state->stage_count));
  download(m.stage_energies, snap.stage_energies.data(), snap.stage_energies.size(), s);
  PF_CUDA_CHECK(cudaStreamSynchronize(s));
  snap.progress = m.progress;
  snap.stall = m.host_state->stall;
  for (int k = 0; k < kTermCount; ++k) snap.norm[k] = m.step.objective.norm[k];
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
  const terms::S2& s2 = m.step.objective.s2;
  std::vector<int64_t> all(std::size_t(s2.count_entries));
  download(m.s2_counts, all.data(), all.size(), m.work());
  PF_CUDA_CHECK(cudaStreamSynchronize(m.work()));
  std::array<std::vector<int64_t>, 3> axes;
  for (int a = 0; a < 3; ++a) {
    const int end = a < 2 ? s2.offset[a + 1] : s2.count_entries;
    axes[a].assign(all.begin() + s2.offset[a], all.begin() + end);
  }
  return DirectionalCounts(m.shape, std::move(axes));
}

}  // namespace poreforge::anneal::detail
