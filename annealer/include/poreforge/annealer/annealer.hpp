#pragma once
/// Yeong–Torquato reconstruction by simulated annealing (DESIGN §1, "Energy"): swap a pore
/// and a solid voxel (porosity is kept exactly), score the candidate with the engine, accept
/// by Metropolis. On the CPU backend the loop runs on the host with the CPU engine. On the
/// CUDA backend the whole loop runs on the device (proposals, incremental S2, the engine's PSD,
/// acceptance, rollback, schedule) and the host reads the progress once per batch of steps;
/// `Config::host_loop` keeps the loop on the host with only the PSD on the device (one round
/// trip per step). The random stream is Philox4x32-10 keyed by the seed and counted by the
/// step, so a seed gives the same run every time, on either loop.
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "poreforge/annealer/philox.hpp"
#include "poreforge/annealer/progress.hpp"
#include "poreforge/annealer/step.hpp"
#include "poreforge/annealer/two_point.hpp"
#include "poreforge/backend.hpp"
#include "poreforge/evaluator.hpp"
#include "poreforge/measures.hpp"
#include "poreforge/psd.hpp"
#include "poreforge/volume.hpp"

namespace poreforge::anneal {

/// What the reconstruction aims at. PSD bins are fixed here, never re-derived per candidate.
struct Targets {
  double porosity = 0;
  std::vector<double> pore_edges, pore_psd;    ///< physical units; fractions per bin
  std::vector<double> solid_edges, solid_psd;  ///< empty: no solid-PSD target
  std::array<std::vector<double>, 3> s2;       ///< directional S2 along x, y, z, r = 0, 1, …
  Spacing spacing;                             ///< the reference's spacing: S2's lag r lies r·spacing away
  /// Share of the reference's pore in its largest 6-connected cluster (0: not known). Not an
  /// energy term: a connected start is built to it (connect_largest_cluster).
  double largest_cluster_share = 0;
  /// χ of the pore per box volume (physical units⁻³; NaN: not known): the Euler term's target
  /// where `euler_occupancy` is not known.
  double euler_density = std::numeric_limits<double>::quiet_NaN();
  /// The reference's pattern occupancies on its grid, from which the Euler term's target is the
  /// χ a box of the domain's shape holds on average (expected_euler_characteristic): a box's
  /// faces cut loops, so χ per volume depends on the box, and the whole image's would ask a
  /// smaller domain for more loops than a real sub-volume of its size holds. Not known from a
  /// descriptor file, or once at_spacing changes the grid: then euler_density × volume.
  PatternOccupancy euler_occupancy;
  /// The surface term's target: the pore–solid interface's marching-cubes area over the cells
  /// inside the box, per their volume (physical units⁻¹; NaN: not known).
  double surface_density = std::numeric_limits<double>::quiet_NaN();
  /// The chords term's target: chords[a][p][l], the relative frequency of chords of phase p
  /// (0 solid, 1 pore) and length l voxels (index 0 unused) along axis a, as an unbounded
  /// image would hold them — the reference's counts over the chances n − 1 − l that a chord of
  /// l voxels fits between its box's faces. Empty: not known.
  std::array<std::array<std::vector<double>, 2>, 3> chords;
  /// The grid the chord lengths were counted on (voxels of this spacing; at_spacing keeps it).
  Spacing chord_spacing;
  /// The openings term's target: χ of the pore's openings {LT ≥ r}, r at each pore-PSD edge,
  /// per volume of the inner cells (physical units⁻³; measures.hpp's inner_euler8_of_openings
  /// over 8), from the reference's pore thickness map. Empty: not known (a 2D image, or a
  /// descriptor file).
  std::vector<double> opening_euler_density;
  /// The patterns term's target: the shares of the reference's interface cells inside its box
  /// in each class (interface_pattern_shares), and the share of its inner cells that are
  /// interface cells. Empty: not known (a 2D image, a descriptor file, or another grid:
  /// at_spacing drops them, a cell is a cube of the reference's voxels).
  std::vector<double> pattern_shares;
  double interface_cell_share = 0;
  /// The local porosity term's target: the shares of the reference's voxels in each bin
  /// (local_porosity_histogram's counts over its voxels). Empty: not known, as pattern_shares.
  std::vector<double> local_porosity_shares;

  /// From a reference image (pore = 1): PSDs by the engine on `bins` bins of each phase's
  /// range (log-spaced if `log`), S2 by FFT, the largest cluster's share by labelling, χ and
  /// the interface's area over the cells inside the box (measures.hpp; NaN for a 2D image), χ
  /// of the pore's openings at the pore-PSD edges over those cells.
  static Targets from_image(const Mask& pore, Boundary boundary, int bins, bool log, Backend backend);
  /// From a descriptor file written by `poreforge describe`, or from the same layout under
  /// `group` of another file (a checkpoint keeps its targets under "/targets"): datasets
  /// psd/{pore,solid}/{edges,fraction}, s2/directional/{x,y,z}; porosity in the root
  /// attribute `porosity_attribute`; the largest cluster's share, χ_V and the specific surface
  /// from /measures/largest_cluster_share_6, /measures/euler_density and
  /// /measures/specific_surface where `describe --measures` wrote them (the last is `compare`'s
  /// estimate of the same density, the cells cut by the box's faces counted in part: within a
  /// few per cent of the inner cells' on small images).
  /// The reference's spacing is the root attribute `spacing_attribute` ("sx,sy,sz"); files
  /// without it are read as unit spacing.
  static Targets from_descriptor_file(const std::string& path, const std::string& group = "",
                                      const std::string& porosity_attribute = "porosity",
                                      const std::string& spacing_attribute = "spacing");

  /// The same targets for a grid of spacing `grid`: the PSDs are in physical units and stay;
  /// along each axis whose spacing differs, S2 is resampled at the grid's lags r·grid by
  /// linear interpolation in distance (up to the reference's last lag). Reconstructing on a
  /// coarser grid than the reference's keeps its physical size in fewer voxels.
  Targets at_spacing(const Spacing& grid) const;
};

/// Weight of each energy term (≥ 0; zero switches a term off).
struct Weights {
  double pore_psd = 1.0, solid_psd = 0.0, s2 = 1.0;
  double euler = 0.0, surface = 0.0;  ///< terms/counts.hpp
  double chords = 0.0;                ///< terms/chords.hpp
  double openings = 0.0;              ///< terms/openings.hpp (the CPU backend only)
  double patterns = 0.0;              ///< terms/patterns.hpp
  double local_porosity = 0.0;        ///< terms/local_porosity.hpp
};

struct Schedule {
  enum class Kind { exponential, aarts_korst };
  Kind kind = Kind::exponential;
  double t0 = 0;                     ///< initial temperature; 0: from initial_acceptance
  double initial_acceptance = 0.5;   ///< χ0: T0 = −mean(uphill ΔE) / ln χ0, over trial moves
  int trial_moves = 200;
  double alpha = 0.9;                ///< exponential: T_k = T0·α^k, α in (0, 1)
  int64_t stage_length = 1000;       ///< evaluations per temperature stage
  double delta = 0.1;                ///< Aarts–Korst distance parameter (> 0)
};

struct Stopping {
  int64_t max_evaluations = 200000;
  double energy_tolerance = 1e-4;    ///< stop when E ≤ this (E starts at Σ weights)
  int stall_stages = 25;             ///< stop after this many stages without a new best
};

/// Proposal choice: a voxel of each phase, weighted by 1 + interface_bias × (number of face
/// neighbours of the other phase), after Tang et al. / Pant et al.; 0 is uniform. With
/// keep_pore_connected only swaps that split no 6-connected cluster of either phase and start
/// none, and leave the pore clusters beside the largest alone (connectivity.hpp): the pore
/// space stays as connected as the start's. For a connected start (connect_largest_cluster);
/// from white noise, whose pore is thousands of specks, almost every voxel would be frozen.
struct Moves {
  double interface_bias = 0.0;
  bool keep_pore_connected = false;
};

struct Config {
  Shape shape;
  Spacing spacing;
  Boundary boundary = Boundary::periodic;
  Targets targets;
  Weights weights;
  Schedule schedule;
  Stopping stopping;
  Moves moves;
  uint64_t seed = 1;
  Backend backend = Backend::automatic;
  /// Start from this structure (pore = 1) instead of a seeded random one; its porosity must
  /// be the target's (round(porosity·N) pore voxels).
  std::optional<Mask> initial;
  /// CUDA backend: drive the loop from the host, the engine's PSD on the device (a round trip
  /// per step), instead of the device-resident loop. For cross-checks and comparisons.
  bool host_loop = false;
  /// Speculative batches: this many proposals are scored at once against the same structure
  /// (on the device loop in one pass; on the host loop each on a thread, pipelined: a thread
  /// that is done claims the next proposal while the chain waits on a slower one, at most this
  /// many ahead of the chain), and taken in order up to the first accepted one; the rest are
  /// dropped. The run is the same, draw for draw, for every value (each proposal draws from its
  /// own evaluation's counter). 0: chosen as it runs, from the acceptance rate (and on the host
  /// the threads); 1: one at a time. The device loop takes at most 64 (32 with both PSD terms
  /// weighted).
  int batch = 0;
  /// The device loop scores swaps in speculative batches, the PSD re-evaluated only around each
  /// swap (cuda::SwapScorer; isotropic spacing). Off by default: it measured slower than
  /// evaluating the whole structure a step at a time (docs/local-evaluation.md). The run is the
  /// same either way.
  bool local_evaluation = false;
};

/// Throws InputError naming the parameter when a config is unusable.
void validate(const Config& config);

/// How far a structure is from the targets in absolute terms (the energy is relative to the
/// start): L1 distance between the pore PSD fractions on the target's bins, and RMS error of
/// the directional S2 over the target's x, y, z curves.
struct Quality {
  double pore_psd_l1 = 0, s2_rms = 0;
};
Quality quality(const Mask& pore, const Targets& targets, Boundary boundary, Backend backend = Backend::cpu);
/// RMS error of the directional S2 over the target's x, y, z curves (Quality::s2_rms alone).
double s2_rms(const Mask& pore, const Targets& targets);
/// L1 distance between the structure's chord-length shares and the target's as this box would
/// hold them (the chords term's measure), the mean over both phases along x, y, z; 0 when the
/// targets hold no chord lengths.
double chords_l1(const Mask& pore, const Targets& targets);
/// L1 distance between pore-PSD fractions (on the target's bins) and the target's.
double pore_psd_l1(const std::vector<double>& fraction, const Targets& targets);

/// Each term's normaliser (its squared error at the start), in the order of terms/terms.hpp.
using Norms = std::array<double, kTermCount>;
inline Norms unit_norms() {
  Norms n;
  n.fill(1.0);
  return n;
}

/// Everything a run needs to continue bit for bit (with the config and the seed): the
/// structure, the order of the voxel lists proposals index into, the progress and the
/// schedule's state. What can be recomputed exactly (the S2 counts) is not kept.
struct Snapshot {
  Mask pore;
  std::vector<int64_t> solid_voxels, pore_voxels;
  Progress progress;
  int64_t stall = 0;
  std::vector<double> stage_energies;
  Norms norm = unit_norms();
};

namespace detail {
class DeviceLoop;
struct HostState;
// A swap the chain accepted, with what the pore and solid evaluators that scored it found
// (PsdEvaluator::last_scoring; null where none), for the states that take it after.
struct TakenSwap {
  int64_t to_solid = -1, to_pore = -1;
  std::array<std::shared_ptr<const Scoring>, 2> scoring;
};
// Swaps a state took in, and those of them its evaluators wrote from the scoring's findings.
struct Takes {
  int64_t swaps = 0, from_findings = 0;
  Takes& operator+=(const Takes& o) {
    swaps += o.swaps;
    from_findings += o.from_findings;
    return *this;
  }
};
// The accepted swaps that replicas have yet to take, oldest first, numbered in the order pushed
// (clear and drop_oldest keep the numbers going). Pushed one at a time, their findings are held
// to kMostBytes in all, the newest kept (an older swap whose findings were let go is evaluated
// by each replica that takes it); the bytes held are a running total, so a push costs the
// findings it lets go, not a walk of the backlog. Swaps pushed in a pipeline keep theirs: other
// threads may be reading them. A swap stays where it is in memory until dropped.
class Backlog {
 public:
  // Each swap's findings hold its changes' near boxes, which grow as the cube of the pores' width.
  static constexpr std::size_t kMostBytes = std::size_t(64) << 20;
  void push(TakenSwap swap);
  void push_kept(TakenSwap swap);
  // The oldest swaps' findings let go until those held fit kMostBytes (what push does).
  void keep_within_bytes();
  void drop_oldest(std::size_t n);
  // The swaps numbered below `number` dropped (every state that reads the backlog has taken them).
  void drop_below(int64_t number) { drop_oldest(std::size_t(number - m_dropped)); }
  void clear();
  std::size_t size() const { return m_swaps.size(); }
  // Swaps ever pushed: the next one's number.
  int64_t pushed() const { return m_dropped + int64_t(m_swaps.size()); }
  const TakenSwap& numbered(int64_t n) const { return m_swaps[std::size_t(n - m_dropped)]; }

 private:
  std::deque<TakenSwap> m_swaps;
  int64_t m_dropped = 0;     // swaps dropped from the front
  std::size_t m_bytes = 0;   // the findings held
  std::size_t m_let_go = 0;  // the leading swaps whose findings were let go
};
}  // namespace detail

class Annealer {
 public:
  /// Validates, draws the initial structure (exact porosity, from the seed), scores it and
  /// sets T0.
  explicit Annealer(Config config);
  /// Continues a run from a snapshot taken with the same config (max_evaluations aside).
  /// Throws InputError when the snapshot does not fit the config.
  Annealer(Config config, Snapshot snapshot);
  ~Annealer();
  Annealer(Annealer&&);
  Annealer& operator=(Annealer&&);
  Snapshot snapshot() const;

  /// Runs until a stopping rule fires; `report` (optional) is called every `every` evaluations
  /// and at the end.
  Progress run(const std::function<void(const Progress&)>& report = {}, int64_t every = 1000);
  /// Runs up to `steps` proposals, fewer when a stopping rule fires. On the device loop they
  /// are enqueued together and the progress is read back once.
  const Progress& advance(int64_t steps);
  /// One proposal: swap, score, accept or roll back. Returns whether it was accepted.
  bool step();
  /// Ends the run for a reason of the caller's (a wall-clock limit); `advance` does nothing
  /// after it. The state stays exactly where it is, so a snapshot taken now resumes bit for bit.
  void stop(StopReason reason);

  /// The current structure (on the device loop, copied back when asked for).
  const Mask& structure() const;
  const Progress& progress() const { return m_state.progress; }
  const Config& config() const { return m_config; }
  /// The backend that evaluates the PSD terms (CPU when no PSD term is weighted).
  Backend backend() const { return m_backend; }
  /// Whether the loop runs on the device (CUDA backend, not `host_loop`).
  bool device_loop() const { return m_device != nullptr; }
  /// The energy of the current structure computed from scratch (descriptors recomputed).
  Energy evaluate_from_scratch() const;
  /// The current energy as if the run had started from the seed's random structure (white
  /// noise, porosity-matched: DESIGN.md §1's initial state): each term normalised by that
  /// structure's error instead of the run's own start's. Equals the energy for a random start;
  /// makes runs from other starts (blobs, planted pores), which begin nearer the target,
  /// comparable with each other and with a random start.
  double energy_against_random_start() const;
  /// The incremental two-point counts (for checks against a recount).
  const DirectionalCounts& counts() const;
  /// The host loop's speculative batches so far (Config::batch): the pipelined runs of them,
  /// the proposals they scored, and those dropped (scored on a state that an earlier accepted
  /// swap then changed, or in flight when a run ended); the accepted swaps this state and its
  /// replicas took in (a replica's backlog of swaps accepted one at a time among them), and
  /// those of them written from what their scoring found rather than evaluated again.
  struct BatchTally {
    int64_t batches = 0, scored = 0, dropped = 0;
    int64_t taken = 0, taken_from_findings = 0;
  };
  BatchTally batch_tally() const;
  /// Proposals the loop would take at once now: the host loop's pipelined run of speculative
  /// batches (Config::batch, or the automatic size), else 1; 1 on the device loop. A caller that
  /// advances by at least this many lets the run go whole (a shorter one ends with its
  /// proposals in flight dropped).
  int64_t proposals_at_once() const;

 private:
  // The structure's energy from scratch (every term recounted) under normalisers `norm`.
  Energy energy_from_scratch(const Mask& pore, const Norms& norm) const;
  // Each term's squared error against the targets (1 where it is 0): the energy's normalisers.
  Norms normalisers(const Mask& pore) const;
  // The seed's porosity-matched white-noise structure (the start when none is given).
  Mask random_start() const;
  // The voxel lists, the term buffers and the Step over them (the host loop's state).
  void make_step();
  // The PSD evaluators of the weighted phases, on the run's backend (m_backend).
  void make_evaluators();
  // On the CUDA backend, unless host_loop: the loop runs on the device.
  bool runs_on_device() const;
  // When the loop runs on the device: hand it the state and the evaluators' engine contexts.
  void start_device_loop();
  bool host_step();
  // Up to `most` proposals, one at a time or in speculative batches (Config::batch); returns
  // how many the chain took.
  int64_t host_batch(int64_t most);
  // `length` proposals on `threads` threads (this state and the replicas), scored at most
  // `window` ahead of the chain; fewer when a stopping rule fires. Returns how many the chain
  // took.
  int64_t pipeline(int64_t length, int64_t window, int threads);
  int64_t pipeline_length(int64_t window) const;  // the proposals a pipeline runs
  bool batches_faster() const;  // batches timed faster than one at a time lately (or untimed)
  void note_acceptance(bool accepted);  // the moving acceptance rate
  // Proposals a batch scores now: Config::batch, or from the acceptance rate, the threads and
  // which way (one at a time or batches) has been timed faster lately.
  int64_t batch_size() const;
  // The host loop's side of a step around the shared functions (step.hpp), on this annealer's
  // own state (host_state()): the swap with the S2 counts and the evaluators, its undo, and the
  // candidate's energy.
  detail::HostState host_state();
  void swap(int64_t to_solid, int64_t to_pore);
  void undo(int64_t to_solid, int64_t to_pore);
  Energy score();

  Config m_config;
  Philox m_random;
  // On the device loop this is a host copy, refreshed when asked for (m_stale).
  mutable Mask m_pore;
  mutable DirectionalCounts m_counts;  // counts() as a DirectionalCounts, made when asked for
  mutable bool m_stale = false;
  std::array<std::vector<int64_t>, 2> m_voxels;  // [0] solid voxels, [1] pore voxels
  std::vector<int64_t> m_slot;                   // position of each voxel in its list
  std::vector<int64_t> m_s2_counts, m_s2_delta;  // terms::S2's flat counts
  std::array<std::vector<int64_t>, 2> m_psd_counts;  // terms::Psd's flat counts (pore, solid)
  std::vector<double> m_s2_target, m_squares, m_stage_energies;
  Bins m_pore_bins;
  std::optional<Bins> m_solid_bins;
  Norms m_random_norm = unit_norms();  // the normalisers of random_start()
  std::vector<int64_t> m_count_values;  // the count terms' values (Objective::attach_counts)
  std::vector<int64_t> m_opening_values;  // terms::Openings's χ per opening (from the pore evaluator)
  std::vector<double> m_opening_target;
  std::vector<int64_t> m_surface_quanta;  // the surface term's quanta by configuration
  std::vector<int64_t> m_chord_counts;  // terms::Chords's histograms
  std::vector<double> m_chord_target;
  std::vector<uint8_t> m_frozen;        // Step::frozen (empty: none)
  Step m_step;        // views of the buffers above (heap memory: they survive a move)
  StepState m_state;  // progress and schedule bookkeeping; the device loop keeps its own
  std::unique_ptr<PsdEvaluator> m_pore_evaluator, m_solid_evaluator;  // null when the weight is 0
  Backend m_backend = Backend::cpu;
  std::unique_ptr<detail::DeviceLoop> m_device;  // the loop's state lives there when set
  // Copies of the host loop's state that score a batch's proposals on the other threads, made
  // when a batch first needs them. The accepted swaps wait in the backlog until each replica
  // (and, within a pipeline, this state) next claims a proposal.
  struct Replica;
  std::unique_ptr<Replica> replica() const;
  std::vector<std::unique_ptr<Replica>> m_replicas;
  detail::Backlog m_backlog;
  void trim_backlog();  // drops the swaps every replica has taken
  void drop_replicas();
  int64_t m_most_replicas = -1;  // as many as half the host's free memory holds (asked once)
  double m_acceptance = 1.0;  // the acceptance rate lately (a moving average): the batch size
  // Wall time of the evaluations lately, one at a time and in batches (fading sums): which
  // way batch_size takes.
  struct WallTime {
    double seconds = 0, evaluations = 0;
    double per_evaluation() const { return evaluations > 0 ? seconds / evaluations : 0; }
  };
  WallTime m_one_at_a_time, m_batched;
  int64_t m_batch_choices = 0;    // host batches so far, one proposal or more: when to probe the slower way
  int64_t m_same_way = 0;         // choices in a row the same way as the last (one at a time or batches)
  bool m_last_batched = false;
  BatchTally m_batch_tally;
  detail::Takes m_taken;  // this state's, and the dropped replicas'; the live ones keep their own
};

}  // namespace poreforge::anneal
