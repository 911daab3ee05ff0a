#pragma once
/// One annealing step, written once for both loops (DESIGN §2, STYLE "The annealing step as
/// twins"): a Step of plain views — the structure, the voxel lists, the objective's terms, the
/// schedule — and the functions a step is made of. The host loop (Annealer) calls them in a
/// `for`; the device loop's kernels (src/cuda/device_loop.cu) call the same functions, so a
/// seed gives the same run on both, draw for draw and rounding for rounding (device code is
/// built without FMA contraction). Nothing here allocates or knows a backend.
///
/// A step: propose a pore and a solid voxel; apply_swap (with the count and chord terms'
/// change), and each count of the S2 term its change; the engine's PSD of each weighted phase
/// (outside: the step only reads the counts); the objective's squares and `combine`; accept
/// (Metropolis); undo_swap if rejected; end_evaluation (schedule.hpp).
#include <cmath>
#include <cstdint>

#include "poreforge/annealer/connectivity.hpp"
#include "poreforge/annealer/philox.hpp"
#include "poreforge/annealer/progress.hpp"
#include "poreforge/annealer/schedule.hpp"
#include "poreforge/annealer/terms/terms.hpp"
#include "poreforge/host_device.hpp"

namespace poreforge::anneal {

/// The Philox lane of a step's acceptance draw (proposal attempts take lanes 0, 1, 2, …).
constexpr uint32_t kAcceptLane = 0xFFFFu;
/// Attempts a proposal makes at a voxel that passes the connectivity tests before it takes the
/// next one drawn without them (frozen voxels stay out): a structure with no such voxel among
/// this many draws is degenerate (a pore of a few voxels), and a step must end.
constexpr uint32_t kConnectedAttempts = 1u << 12;

struct Step {
  int64_t extent[3] = {0, 0, 0}, stride[3] = {0, 0, 0};
  bool periodic = true;
  double interface_bias = 0;
  bool keep_pore_connected = false;  ///< proposals pass connectivity.hpp's tests
  /// With keep_pore_connected: voxels never proposed (null: none) — the pore clusters other
  /// than the largest and every voxel within their 26-neighbourhoods, so that they stay as the
  /// start has them.
  const uint8_t* frozen = nullptr;
  Philox random{0};
  Objective objective;
  Cooling cooling;

  uint8_t* pore = nullptr;   ///< the structure, pore = 1
  uint8_t* solid = nullptr;  ///< its complement, kept only where the engine reads it (else null)
  int64_t* list[2] = {nullptr, nullptr};  ///< [0] solid voxels, [1] pore voxels
  int64_t list_size[2] = {0, 0};
  int64_t* slot = nullptr;             ///< position of each voxel in its list
  double* stage_energies = nullptr;    ///< room for a stage's energies
};

/// The interface bias's test of voxel v of phase `which` with uniform draw u.
PF_HD bool biased_accept(const Step& st, int64_t v, int which, double u) {
  const double bias = st.interface_bias;
  const int64_t c[3] = {v % st.extent[0], (v / st.extent[0]) % st.extent[1], v / (st.extent[0] * st.extent[1])};
  int k = 0;
  for (int a = 0; a < 3; ++a) {
    const int64_t n = st.extent[a];
    if (n == 1) continue;
    for (int side = -1; side <= 1; side += 2) {
      int64_t p = c[a] + side;
      if (p < 0 || p >= n) {
        if (!st.periodic) continue;
        p = (p + n) % n;
      }
      k += st.pore[v + (p - c[a]) * st.stride[a]] != which;
    }
  }
  return u * (1 + 6 * bias) < 1 + bias * k;
}

/// Attempt `attempt` (0, 1, 2, …) of a proposal of a voxel of phase `which` (1 pore, 0 solid):
/// the voxel drawn from lane lane_base + 2·attempt, uniform over its list, when it passes every
/// test, else −1. The tests: not frozen; with an interface bias b, kept with probability
/// (1 + b·k) / (1 + 6b), k = face neighbours of the other phase (after Tang et al. / Pant et
/// al.); with keep_pore_connected and for the first kConnectedAttempts attempts, may_leave_pore
/// (pore) or may_join_pore (solid, `leaving` the pore voxel of the same swap).
PF_HD int64_t proposal_attempt(const Step& st, int which, uint64_t step, uint32_t lane_base, uint32_t attempt,
                               int64_t leaving = -1) {
  const PhiloxBlock w = st.random.draw(step, lane_base + 2 * attempt);
  const int64_t v = st.list[which][Philox::below(w[0], w[1], uint64_t(st.list_size[which]))];
  // An attempt is taken when it passes every test, in any order: the cheap ones first (the
  // bias turns most interior voxels away with 6 reads, the connectivity tests read 27).
  const bool check_connected = st.keep_pore_connected && attempt < kConnectedAttempts;
  if (st.frozen && st.frozen[v]) return -1;  // always: the largest cluster and most solid never are
  if (st.interface_bias > 0 && !biased_accept(st, v, which, Philox::unit(w[2]))) return -1;
  if (check_connected &&
      !(which ? may_leave_pore(st.pore, st.extent, v) : may_join_pore(st.pore, st.extent, v, leaving)))
    return -1;
  return v;
}

/// A voxel of phase `which` (1 pore, 0 solid): the first of its attempts (proposal_attempt) that
/// passes. Attempts draw lanes lane_base, lane_base + 2, ….
PF_HD int64_t propose(const Step& st, int which, uint64_t step, uint32_t lane_base, int64_t leaving = -1) {
  for (uint32_t attempt = 0;; ++attempt) {
    const int64_t v = proposal_attempt(st, which, step, lane_base, attempt, leaving);
    if (v >= 0) return v;
  }
}

/// `to_solid` (a pore voxel) and `to_pore` (a solid voxel) trade phase and list places, the
/// terms left as they are (a caller that has the swap's counts already: the device batches).
PF_HD void swap_phases(const Step& st, int64_t to_solid, int64_t to_pore) {
  st.pore[to_solid] = 0;
  st.pore[to_pore] = 1;
  if (st.solid) {
    st.solid[to_solid] = 1;
    st.solid[to_pore] = 0;
  }
  const int64_t a = st.slot[to_solid], b = st.slot[to_pore];
  st.list[1][a] = to_pore;
  st.list[0][b] = to_solid;
  st.slot[to_pore] = a;
  st.slot[to_solid] = b;
}

/// `to_solid` (a pore voxel) and `to_pore` (a solid voxel) trade phase and list places; the
/// count terms take the swap's change.
PF_HD void apply_swap(const Step& st, int64_t to_solid, int64_t to_pore) {
  const Objective& o = st.objective;
  if (o.euler.value || o.surface.value || o.patterns.counts) {
    const terms::SwapCubes cubes = terms::swap_cubes(st.pore, st.extent, to_solid, to_pore);
    o.euler.on_swap(cubes);
    o.surface.on_swap(cubes);
    o.patterns.on_swap(cubes);
  }
  o.local_porosity.on_swap(st.pore, st.extent, to_solid, to_pore);
  o.chords.on_swap(st.pore, to_solid, to_pore);
  swap_phases(st, to_solid, to_pore);
}

/// Takes apply_swap(to_solid, to_pore) back: phases, lists and slots as before.
PF_HD void undo_swap(const Step& st, int64_t to_solid, int64_t to_pore) { apply_swap(st, to_pore, to_solid); }

/// Metropolis: takes the candidate (ΔE ≤ 0, or u < exp(−ΔE/T) with u the step's acceptance
/// draw) or counts a rejection; keeps the best and marks a new best in the stage. The caller
/// undoes a rejected swap and then calls end_evaluation.
PF_HD bool accept(const Step& st, StepState& s, const Energy& candidate) {
  Progress& p = s.progress;
  const double de = candidate.total - p.energy.total;
  p.last_delta = de;
  const double u = Philox::unit(st.random.draw(uint64_t(p.evaluations), kAcceptLane)[0]);
  const bool ok = de <= 0 || u < exp(-de / p.temperature);
  if (ok) {
    p.energy = candidate;
    ++p.accepted;
    if (candidate.total < p.best.total) {
      p.best = candidate;
      s.stall = -1;
    }
  } else {
    ++p.rejected;
  }
  return ok;
}

}  // namespace poreforge::anneal
