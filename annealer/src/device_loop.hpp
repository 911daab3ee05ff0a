#pragma once
/// The annealing loop on the device (CUDA builds only; no CUDA types here). Proposal, swap,
/// incremental S2, the PSD terms by the engine's ThicknessContexts, energy, Metropolis
/// acceptance, rollback, schedule and stopping rules all run in stream order on the device.
/// The host enqueues a batch of steps and reads the progress back once per batch through a
/// pinned asynchronous copy; the structure, the voxel lists and the S2 counts come back only
/// when asked for (snapshot, counts).
///
/// Each step is made of the host loop's functions (step.hpp, schedule.hpp, terms/): the same
/// Philox draws, the same arithmetic in the same order, no FMA contraction — so for a seed the
/// device loop gives the run the host loop gives.
#include <cstdint>
#include <memory>
#include <vector>

#include "poreforge/annealer/annealer.hpp"
#include "poreforge/annealer/step.hpp"
#include "poreforge/evaluator.hpp"

namespace poreforge::anneal::detail {

/// A Step's fixed part for `config` — geometry, moves, the objective's weights, bins and
/// lengths, the schedule — without buffers or normalisers; both loops start from it.
Step step_of(const Config& config);
/// The S2 target as terms::S2 reads it: each axis's compared lags, x, y, z concatenated.
std::vector<double> s2_target(const Config& config, const terms::S2& s2);
/// The chords term's target in its layout (empty when the term is off).
std::vector<double> chord_target(const Targets& targets, const terms::Chords& layout);
/// The surface term's quanta: each 2×2×2 configuration's marching-cubes area at `spacing`
/// (measures.hpp) in whole quanta of 2⁻¹⁶ of the smallest voxel face, so that the term's count
/// is an exact integer on both loops; `quantum` is the area of one (physical units²).
struct SurfaceQuanta {
  std::vector<int64_t> quanta;  ///< 256 entries, by configuration
  double quantum = 0;
};
SurfaceQuanta surface_quanta(const Spacing& spacing);

class DeviceLoop {
 public:
  /// Uploads the state of `start` (its S2 counts are `counts`) and goes on with the engine
  /// contexts of the evaluators of the weighted phases (CUDA ones with room for a centre at
  /// every voxel; null for a phase not weighted). Throws RuntimeError naming the bytes when the
  /// device has no room. `host`: the host loop's step, whose count and chord terms and frozen
  /// voxels are copied.
  DeviceLoop(const Config& config, const Snapshot& start, const DirectionalCounts& counts, const Step& host,
             std::unique_ptr<PsdEvaluator> pore_evaluator, std::unique_ptr<PsdEvaluator> solid_evaluator);
  ~DeviceLoop();
  DeviceLoop(const DeviceLoop&) = delete;
  DeviceLoop& operator=(const DeviceLoop&) = delete;

  /// Runs up to `steps` steps (fewer when a stopping rule fires), then waits for them and reads
  /// the progress back.
  void advance(int64_t steps);

  const Progress& progress() const;
  /// The whole state, copied back from the device.
  Snapshot snapshot() const;
  Mask structure() const;
  DirectionalCounts counts() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> m_impl;
};

}  // namespace poreforge::anneal::detail
