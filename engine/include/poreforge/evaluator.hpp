#pragma once
/// Repeated pore-size-distribution evaluations of one structure that changes a few voxels at a
/// time — the annealer's loop. An evaluator owns its copy of the phase mask: set() records a
/// change, counts() evaluates the current mask. Knowing which voxels changed is what a later
/// evaluator needs to re-evaluate only the region a swap touches.
///
/// The CUDA evaluator keeps the mask and the engine's workspace on the device (a
/// ThicknessContext: graph-replayed, nothing allocated per call) and sends only the changed
/// voxels; each counts() is one round trip (the counts come back, the stream is synchronised).
#include <cstddef>
#include <cstdint>
#include <memory>

#include "poreforge/backend.hpp"
#include "poreforge/psd.hpp"
#include "poreforge/volume.hpp"

namespace poreforge {

/// What an evaluator found when it scored a change (opaque; unchanged while anyone but its
/// evaluator holds it): an evaluator in the state it was scored from takes that change from it
/// (settle_with) instead of evaluating it again.
class Scoring {
 public:
  virtual ~Scoring() = default;
  /// The memory it holds, in bytes (a holder of many bounds them).
  virtual std::size_t bytes() const = 0;
};

class PsdEvaluator {
 public:
  virtual ~PsdEvaluator() = default;
  /// Sets voxel `index` of the phase mask to `value` (0 or 1).
  virtual void set(int64_t index, uint8_t value) = 0;
  /// Exact PSD counts of the current mask (the PSD-only path, same bins every call).
  virtual PsdCounts counts() = 0;
  /// The backend that evaluates.
  virtual Backend backend() const = 0;
  /// The current mask is the one kept from now on, though it was never evaluated (a replica
  /// of an annealer taking a swap another thread scored): an evaluator that keeps the state of
  /// its last evaluation brings it up to date now, so that the next evaluation has only its
  /// own changes to look at. The counts stay as they are; nothing else changes.
  virtual void settle() {}
  /// settle(), taking `scoring` where it scored exactly the changes this evaluator has left to
  /// commit (those of its mask since its maps, after its own last scoring's kept changes), from
  /// the same mask, bins and boundary (a copy's, or this one's own): what it found is written
  /// instead of being evaluated again. Otherwise as settle(). True where findings were written:
  /// `scoring`'s, or this evaluator's own where the change it scored last was the one taken.
  virtual bool settle_with(const std::shared_ptr<const Scoring>& scoring) {
    (void)scoring;
    settle();
    return false;
  }
  /// What this evaluator's last evaluation found, for settle_with on it or its copies; the
  /// holder keeps it alive after this evaluator evaluates again. Null where that evaluation kept
  /// nothing (it went from scratch, or had no change to score).
  virtual std::shared_ptr<const Scoring> last_scoring() const { return nullptr; }
  /// An evaluator of the same mask in the same state, which goes its own way from then on
  /// (another thread's copy of an annealer); null where copies are not made (make one afresh,
  /// which evaluates from scratch at its first counts()).
  virtual std::unique_ptr<PsdEvaluator> copy() const { return nullptr; }
  /// From the next evaluation on, counts() also gives 8·χ of each opening {thickness ≥ edge}
  /// over the inner cells (PsdCounts::opening_euler), kept by the same local re-evaluation. False where this
  /// evaluator does not count them (the CUDA one: its counts never leave the device loop's
  /// kernels, which have no such tally); then nothing changes.
  virtual bool count_openings() { return false; }
};

/// An evaluator of `phase` (copied) with `bins`, on `backend` (resolved as everywhere else).
std::unique_ptr<PsdEvaluator> make_psd_evaluator(const Mask& phase, Boundary boundary, const Bins& bins,
                                                 Backend backend = Backend::automatic);

}  // namespace poreforge
