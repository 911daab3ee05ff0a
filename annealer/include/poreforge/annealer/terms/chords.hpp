#pragma once
/// Objective term: the chord-length distributions of both phases along x, y, z against the
/// reference's. A chord is a run of one phase along an axis; runs touching the box faces are
/// not counted (DESIGN §1, as `compare` measures them). PSD, S2 and the surface leave the
/// shape of these distributions free, and a reconstruction fitted to them alone has several
/// times the rock's one-voxel chords of both phases: walls and necks one voxel thick.
///
/// Kept exactly swap by swap: flipping voxel v splits the chord of its phase through v along
/// each axis into the runs on either side and joins the other phase's runs next to it into
/// one. apply_swap (step.hpp) adds the change before it writes the phases (the pore voxel's
/// flip first, then the solid voxel's in the state that leaves), and an undo is the reverse
/// swap's change. Counts[(2·axis + phase)·stride + len] holds the chords of length len
/// (voxels, 1 … n_axis − 2); len 0 holds their number.
#include <cstdint>

#include "poreforge/host_device.hpp"

namespace poreforge::anneal::terms {

struct Chords {
  int64_t* counts = nullptr;       ///< null when the term is off (nothing is counted)
  const double* target = nullptr;  ///< fractions per length, the counts' layout (len 0 unused)
  int64_t extent[3] = {0, 0, 0}, step[3] = {0, 0, 0};  ///< the volume's extents and strides
  int stride = 0;   ///< entries per (axis, phase): max extent − 1 (lengths up to n − 2, and len 0)
  int entries = 0;  ///< 6·stride when the term is weighted, else 0

  /// Squared difference of entry j: the share of its (axis, phase)'s chords with its length.
  PF_HD double square(int j) const {
    const int len = j % stride;
    if (len == 0) return 0;
    const int64_t all = counts[j - len];
    const double d = (all > 0 ? double(counts[j]) / double(all) : 0.0) - target[j];
    return d * d;
  }

  /// Adds the change of flipping v (`pore` holds its phase, `now_solid` reads as solid).
  PF_HD void flip(const uint8_t* pore, int64_t v, int64_t now_solid) const {
    auto phase = [&](int64_t u) -> int { return u == now_solid ? 0 : pore[u]; };
    const int was = phase(v);
    for (int a = 0; a < 3; ++a) {
      const int64_t n = extent[a], s = step[a];
      if (n < 3) continue;  // no chord fits between the faces
      const int64_t c = (v / s) % n;
      // Runs of each phase next to v: their lengths, and whether they reach a face.
      int64_t left = 0, right = 0;
      const int left_phase = c > 0 ? phase(v - s) : -1, right_phase = c + 1 < n ? phase(v + s) : -1;
      while (c - left - 1 >= 0 && phase(v - (left + 1) * s) == left_phase) ++left;
      while (c + right + 1 < n && phase(v + (right + 1) * s) == right_phase) ++right;
      int64_t* was_counts = counts + (2 * a + was) * stride;
      int64_t* now_counts = counts + (2 * a + 1 - was) * stride;
      auto add = [&](int64_t* h, int64_t len, bool touches, int64_t by) {
        if (len <= 0 || touches) return;
        h[len] += by;
        h[0] += by;
      };
      // v's own chord before: v with the runs of its phase on each side.
      const int64_t own_left = left_phase == was ? left : 0, own_right = right_phase == was ? right : 0;
      const bool own_lf = c - own_left == 0, own_rf = c + own_right == n - 1;
      add(was_counts, own_left + 1 + own_right, own_lf || own_rf, -1);
      add(was_counts, own_left, own_lf, +1);
      add(was_counts, own_right, own_rf, +1);
      // The other phase's runs beside v join through it.
      const int64_t other_left = left_phase == 1 - was ? left : 0, other_right = right_phase == 1 - was ? right : 0;
      const bool other_lf = c - other_left == 0, other_rf = c + other_right == n - 1;
      add(now_counts, other_left, other_lf, -1);
      add(now_counts, other_right, other_rf, -1);
      add(now_counts, other_left + 1 + other_right, other_lf || other_rf, +1);
    }
  }

  /// The swap's change, before the phases are written: `to_solid` flips, then `to_pore`.
  PF_HD void on_swap(const uint8_t* pore, int64_t to_solid, int64_t to_pore) const {
    if (!counts) return;
    flip(pore, to_solid, -1);
    flip(pore, to_pore, to_solid);
  }
};

}  // namespace poreforge::anneal::terms
