#pragma once
/// What a run has done so far: the public Progress, and the StepState the step functions
/// (step.hpp) read and write — the same plain struct in host memory for the host loop and in
/// device memory for the device loop.
#include <cstdint>
#include <string>

#include "poreforge/host_device.hpp"

namespace poreforge::anneal {

/// `time_limit` is the caller's: the annealer keeps no clock (a seed's run is the same run at
/// any speed), `poreforge run` stops one at its wall-clock limit through `stop`.
enum class StopReason { none, max_evaluations, energy_tolerance, no_improvement, time_limit };
std::string to_string(StopReason r);

/// Energy and its terms, each normalised by its error at the start.
struct Energy {
  double total = 0, pore_psd = 0, solid_psd = 0, s2 = 0, euler = 0, surface = 0, chords = 0, openings = 0, patterns = 0,
         local_porosity = 0;
  /// Term k of the registered list (terms/terms.hpp): 0 pore PSD, 1 solid PSD, 2 S2, 3 Euler
  /// characteristic, 4 surface, 5 chords, 6 openings, 7 interface patterns,
  /// 8 local porosity.
  PF_HD double& term(int k) {
    return k == 0 ? pore_psd
           : k == 1 ? solid_psd
           : k == 2 ? s2
           : k == 3 ? euler
           : k == 4 ? surface
           : k == 5 ? chords
           : k == 6 ? openings
           : k == 7 ? patterns
                    : local_porosity;
  }
  PF_HD double term(int k) const { return const_cast<Energy*>(this)->term(k); }
};

struct Progress {
  int64_t evaluations = 0;  ///< candidates scored so far (the step counter)
  int64_t accepted = 0, rejected = 0;
  int64_t stage = 0;        ///< temperature stages ended
  double temperature = 0;
  Energy energy, best;
  double last_delta = 0;  ///< ΔE of the last proposal
  StopReason stopped = StopReason::none;
};

/// The run's state as one step sees it: the progress, the schedule's bookkeeping of the current
/// stage, and the swap in flight between propose and accept.
struct StepState {
  Progress progress;
  int64_t stall = 0;        ///< stages ended without a new best; −1: a new best in this stage
  int64_t stage_count = 0;  ///< energies recorded in the current stage (Aarts–Korst)
  int64_t to_solid = -1;    ///< the swap in flight: this pore voxel became solid …
  int64_t to_pore = -1;     ///< … and this solid voxel pore
  int32_t active = 0;       ///< device loop: the current launch made a proposal
};

}  // namespace poreforge::anneal
