#pragma once
/// The CUDA backend's device-resident API, for callers in a loop (the annealer), and its
/// one-shot host helpers. Compiles without nvcc: no CUDA types appear here (a stream is a
/// void*). Defined only in builds with the CUDA backend (poreforge::cuda_compiled()); the
/// dispatching functions of edt.hpp and local_thickness.hpp work in every build.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "poreforge/evaluator.hpp"
#include "poreforge/psd.hpp"
#include "poreforge/volume.hpp"

namespace poreforge::cuda {

/// What a ThicknessContext is bound to. Fixed for the context's life.
struct ContextConfig {
  Shape shape;
  Spacing spacing;
  Boundary boundary = Boundary::open;
  std::vector<double> psd_edges;  ///< PSD-only path bin edges; empty disables that path
  /// Room for ball centres, as a fraction of the voxels (centres are a small part of the
  /// phase: 6 % of a 250³ blob volume). A volume with more centres is reported by
  /// synchronize(); the one-shot helpers retry with room for every voxel.
  double centre_capacity = 0.125;
  /// Ratio between the map painter's successive radius bands, in (1, 4]. Narrow bands put
  /// fewer balls of a band over each voxel, wide ones take fewer launches. Unset: 1.8 up to
  /// 2^22 voxels, 1.15 up to 2^25, 1.05 up to 2^28, 1.02 above. The map is the same either way.
  std::optional<double> band_step;
  /// Blocks of each painter launch, in [1, 2^20]. Unset: as many as fit on the device at once
  /// on the PSD-only path (its warps claim their tasks), 8 per SM on the map (tasks dealt).
  /// Tests set a few, so that a small volume has more tasks than warps. The results are the
  /// same either way.
  std::optional<int> painter_blocks;
};

/// Device memory a context takes, by part, in bytes (the CUB-style size query). The context
/// asks it before allocating and refuses, naming both sizes, when the device has less free.
struct WorkspaceSize {
  std::size_t distance = 0;  ///< squared distances (PSD path; the map path uses its output)
  std::size_t centres = 0;   ///< ball centres: radius, index, row cut, painter item number
  std::size_t scan = 0;      ///< tile totals of the scan of the centres' painter items
  std::size_t coverage = 0;  ///< covered-voxel, centre and mark bitmaps
  std::size_t small = 0;     ///< counters, tables, flags
  std::size_t total() const { return distance + centres + scan + coverage + small; }
};

/// A device-resident local-thickness evaluator bound to one shape. Owns a non-blocking stream
/// and a workspace allocated once; each evaluation is a fixed sequence of kernels captured as
/// a CUDA graph on first use (per pair of buffers) and replayed afterwards: no allocation, no
/// free, no host copy and no synchronisation inside an evaluation.
class ThicknessContext {
 public:
  static WorkspaceSize workspace_size(const ContextConfig& config);

  /// Allocates the workspace. Throws InputError for a bad config (shape, spacing, edges),
  /// RuntimeError naming the bytes asked for when the device is out of memory.
  explicit ThicknessContext(const ContextConfig& config);
  ~ThicknessContext();
  ThicknessContext(const ThicknessContext&) = delete;
  ThicknessContext& operator=(const ThicknessContext&) = delete;

  /// Local thickness (radius, physical units, float32; 0 outside the phase) of the device
  /// mask `d_mask` (N bytes, 1 = phase) into `d_thickness` (N floats). Asynchronous.
  void thickness_async(const uint8_t* d_mask, float* d_thickness);

  /// The PSD-only path: exact counts into `d_counts` (psd_count_entries() int64 values:
  /// voxels with thickness ≥ each edge, then above the last edge, then phase voxels).
  /// Asynchronous. Throws InputError when the context was made without PSD edges.
  void psd_async(const uint8_t* d_mask, int64_t* d_counts);

  /// Squared distances in voxel units (isotropic spacing only) into `d_out` (N uint32).
  void squared_distance_async(const uint8_t* d_mask, uint32_t* d_out);

  /// Distance transform in physical units (float32) into `d_out` (N floats).
  void distance_async(const uint8_t* d_mask, float* d_out);

  std::size_t psd_count_entries() const;
  /// The context's cudaStream_t, as void*.
  void* stream() const;
  /// Waits for the stream, then throws if the last evaluation was invalid: InputError when a
  /// phase voxel had no background to measure from, RuntimeError when centres overflowed.
  void synchronize();
  /// Centres found by the last evaluation (valid after synchronize()).
  int64_t last_centre_count() const;
  /// True when the last synchronize() threw because the centres overflowed the capacity.
  bool last_overflowed() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> m_impl;
};

/// Exact PSD counts of one phase under candidate swaps, on the device, for a loop that keeps
/// its structure there and tries many swaps against it (the annealer's device loop): the
/// CPU evaluator's local re-evaluation (evaluator.hpp; the same code, docs/local-evaluation.md),
/// run for many candidates at once against the same structure, the one taken committed. It
/// keeps the structure's squared distances, thickness map and ball centres on the device
/// (about 9 bytes a voxel) and needs isotropic spacing.
class SwapScorer {
 public:
  /// Bound to `d_phase`, the caller's device mask of the phase (N bytes, 1 = phase), which the
  /// caller keeps alive and changes only by the swaps it commits (flipping them in stream order
  /// before or after commit_async). `most`: the most candidates one score_async takes. Every
  /// call is asynchronous on `stream` (a cudaStream_t); the constructor waits for its maps.
  /// Throws InputError for anisotropic spacing, an empty phase or one with no background;
  /// MemoryLimitError when the device has no room.
  SwapScorer(const uint8_t* d_phase, const Shape& shape, const Spacing& spacing, Boundary boundary, const Bins& bins,
             int most, void* stream);
  ~SwapScorer();
  SwapScorer(const SwapScorer&) = delete;
  SwapScorer& operator=(const SwapScorer&) = delete;

  /// Entries of the flat counts: voxels with thickness ≥ each edge, above the last edge, phase
  /// voxels (ThicknessContext::psd_async's layout).
  int count_entries() const;
  /// Device memory: the committed structure's counts, flat.
  const int64_t* counts() const;
  /// Scores candidates 0 … *d_candidates − 1 (device int32, at most `most`): candidate k moves
  /// voxel d_swaps[2k] out of the phase and d_swaps[2k + 1] into it, and d_delta[k·entries + e]
  /// receives the change of counts()[e]. Both stay the caller's until commit_async.
  void score_async(const int64_t* d_swaps, const int32_t* d_candidates, int64_t* d_delta);
  /// Commits candidate *d_chosen (device int32; nothing when negative) of the last score_async:
  /// the maps and counts() take its change.
  void commit_async(const int32_t* d_chosen);
  /// Waits for the stream, then throws InputError if a candidate's joining voxel had no
  /// background to measure from (the swap would leave the phase without one), RuntimeError if a
  /// candidate's region was wider than a paint block holds (pores of about 50 voxels' radius and
  /// more). Either leaves the scorer unusable: it was found out after the batch ran.
  void synchronize();

  struct Impl;

 private:
  std::unique_ptr<Impl> m_impl;
};

/// One-shot calls on many images (a batch of files, a Python loop): keeps a context and the
/// device buffers for the mask and the result from one call to the next, and makes new ones
/// only when the shape, spacing, boundary or PSD edges change, or a structure needs more room
/// for ball centres. The host functions upload the mask and download the result; the device
/// ones work on the caller's device memory (a CuPy array) in the caller's stream order: the
/// work waits for what `stream` (a cudaStream_t; CuPy's current one) has queued so far, and
/// not for the rest of the device, and the call returns when the result is written.
/// Errors as the context's.
class Workspace {
 public:
  Workspace();
  ~Workspace();
  Workspace(Workspace&&) noexcept;
  Workspace& operator=(Workspace&&) noexcept;

  /// True when a context for this shape, spacing and boundary is kept (a call needs no new
  /// device memory for it).
  bool holds(const Shape& shape, const Spacing& spacing, Boundary boundary) const;

  Volume<float> distance_transform(const Mask& phase, Boundary boundary);
  Volume<float> local_thickness(const Mask& phase, Boundary boundary);
  PsdCounts psd_counts(const Mask& phase, Boundary boundary, const Bins& bins);

  /// On the device the workspace first worked on (InputError when another is current).
  /// `d_mask`: N bytes (1 = phase), `d_out`: N floats, device memory, x fastest.
  void distance_transform(const uint8_t* d_mask, float* d_out, const Shape& shape, const Spacing& spacing,
                          Boundary boundary, void* stream);
  void local_thickness(const uint8_t* d_mask, float* d_out, const Shape& shape, const Spacing& spacing,
                       Boundary boundary, void* stream);
  PsdCounts psd_counts(const uint8_t* d_mask, const Shape& shape, const Spacing& spacing, Boundary boundary,
                       const Bins& bins, void* stream);

  struct Impl;

 private:
  std::unique_ptr<Impl> m_impl;
};

/// One-shot helpers on host volumes (a workspace for one call).
Volume<uint32_t> squared_distance_voxels(const Mask& phase, Boundary boundary);
Volume<float> distance_transform(const Mask& phase, Boundary boundary);
Volume<float> local_thickness(const Mask& phase, Boundary boundary);
PsdCounts psd_counts(const Mask& phase, Boundary boundary, const Bins& bins);

/// The device-resident PSD evaluator (see evaluator.hpp). Its context has room for
/// `centre_capacity` of the voxels as ball centres and grows once, to every voxel, when a
/// structure has more; 1 makes it with that room from the start, as a context handed to the
/// device loop needs (take_context), since nothing there can stop to grow it.
std::unique_ptr<PsdEvaluator> make_psd_evaluator(const Mask& phase, Boundary boundary, const Bins& bins,
                                                 double centre_capacity = 0.25);

/// The context of a CUDA evaluator — its stream, workspace and captured graphs — for a caller
/// that goes on evaluating on the device; waits for the evaluator's queued work, and leaves it
/// spent. Throws InputError when `evaluator` was not made by the CUDA backend.
std::unique_ptr<ThicknessContext> take_context(std::unique_ptr<PsdEvaluator> evaluator);

}  // namespace poreforge::cuda
