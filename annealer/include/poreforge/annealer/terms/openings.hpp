#pragma once
/// Objective term: χ(r) of the pore's openings {LT ≥ r}, r at each pore-PSD edge, against the
/// reference's (`compare` reports χ(r) per volume of the whole box as euler_of_openings). The
/// pore PSD says how much of the pore is
/// in balls of each radius, and the Euler term counts the loops of the whole pore, but not
/// which radii those loops pass through: a network whose narrow throats close more loops than
/// the rock's, and whose wide pores close fewer, can match both. Each opening is the pore with
/// the throats narrower than its r cut: its χ tells how many loops those throats carried.
///
/// χ is counted over the box's inner 2×2×2 cells (measures.hpp's inner_euler8_of_openings): the
/// box's faces cut branches of an opening into pieces that χ of the whole box counts, more of
/// them per volume in a small box than in the reference, so whole-box χ per volume would aim a
/// domain at the wrong loops; over the inner cells it has the reference's density, and the
/// faces then add to the domain's χ what they add to a real sub-volume's of its size.
/// The counts, in eighths (8·χ), come from the pore's PSD evaluator, which keeps them with its
/// local re-evaluation (PsdEvaluator::count_openings, CPU only): the term reads them as the PSD
/// term reads its counts. Squares (8·χ_i − target_i)², the targets 8 × the reference's density
/// times this box's inner cells' volume.
#include <cstdint>

#include "poreforge/host_device.hpp"

namespace poreforge::anneal::terms {

struct Openings {
  const int64_t* value = nullptr;  ///< 8·χ of each opening over the inner cells, one per pore-PSD edge
  const double* target = nullptr;
  int entries = 0;  ///< the pore PSD's edges when the term is weighted, else 0

  PF_HD double square(int i) const {
    const double d = double(value[i]) - target[i];
    return d * d;
  }
};

}  // namespace poreforge::anneal::terms
