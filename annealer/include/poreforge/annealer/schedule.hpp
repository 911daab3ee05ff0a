#pragma once
/// The schedule, for both loops: after each evaluation the energy is recorded for the stage,
/// the stopping rules are checked, and every `stage_length` evaluations a temperature stage ends —
/// exponential cooling T ← α·T, or Aarts–Korst T ← T / (1 + T·ln(1 + δ) / 3σ) with σ the spread
/// of the stage's energies — and stages without a new best are counted.
#include <cmath>
#include <cstdint>

#include "poreforge/host_device.hpp"
#include "poreforge/annealer/progress.hpp"

namespace poreforge::anneal {

struct Cooling {
  int aarts_korst = 0;            ///< 0: exponential
  double alpha = 0.9;
  double log_one_plus_delta = 0;  ///< ln(1 + δ), computed once on the host
  int64_t stage_length = 1;
  int64_t max_evaluations = 0;
  int64_t stall_stages = 0;
  double energy_tolerance = 0;
};

/// Ends a temperature stage: stall count and its stopping rule, the new temperature.
PF_HD void end_stage(const Cooling& c, StepState& s, const double* stage_energies) {
  Progress& p = s.progress;
  s.stall = s.stall < 0 ? 0 : s.stall + 1;
  if (s.stall >= c.stall_stages && p.stopped == StopReason::none) p.stopped = StopReason::no_improvement;
  if (!c.aarts_korst) {
    p.temperature *= c.alpha;
  } else {  // cool by the spread of the energies seen in the stage
    const double n = double(s.stage_count);
    double mean = 0, var = 0;
    for (int64_t k = 0; k < s.stage_count; ++k) mean += stage_energies[k];
    mean /= n;
    for (int64_t k = 0; k < s.stage_count; ++k) var += (stage_energies[k] - mean) * (stage_energies[k] - mean);
    const double sigma = sqrt(var / n);
    if (sigma > 0) p.temperature /= 1 + p.temperature * c.log_one_plus_delta / (3 * sigma);
  }
  s.stage_count = 0;
  ++p.stage;
}

/// Closes an evaluation: records the current energy for the stage, counts it, applies the
/// stopping rules and ends the stage on its last evaluation.
PF_HD void end_evaluation(const Cooling& c, StepState& s, double* stage_energies) {
  Progress& p = s.progress;
  stage_energies[s.stage_count++] = p.energy.total;
  ++p.evaluations;
  if (p.energy.total <= c.energy_tolerance) p.stopped = StopReason::energy_tolerance;
  else if (p.evaluations >= c.max_evaluations) p.stopped = StopReason::max_evaluations;
  if (p.evaluations % c.stage_length == 0) end_stage(c, s, stage_energies);
}

}  // namespace poreforge::anneal
