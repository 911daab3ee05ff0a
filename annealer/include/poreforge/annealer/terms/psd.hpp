#pragma once
/// Objective term: a phase's pore-size distribution against its target, ‖PSD − target‖² on the
/// target's bins. The PSD itself is the engine's (a PsdEvaluator in the host loop, a
/// ThicknessContext in the device loop) and is evaluated between the swap and the acceptance;
/// this term only reads its counts. The full recount is the engine's one-shot PSD.
#include <cstdint>

#include "poreforge/host_device.hpp"
#include "poreforge/psd.hpp"

namespace poreforge::anneal::terms {

struct Psd {
  /// The engine's counts laid out flat: at_least[0 … bins], above, phase voxels.
  const int64_t* counts = nullptr;
  const double* target = nullptr;  ///< fractions per bin
  int bins = 0;
  int entries = 0;  ///< bins compared, min(bins, target length); 0 when the term is off

  /// Squared difference in bin i: psd_from_counts's fraction, rounded as it rounds.
  PF_HD double square(int i) const {
    const int64_t upper = i + 1 < bins ? counts[i + 1] : counts[bins + 1];  // the last bin is closed
    const double d = double(counts[i] - upper) / double(counts[bins + 2]) - target[i];
    return d * d;
  }
};

/// Entries of the flat layout for `bins` bins.
constexpr int psd_count_entries(int bins) { return bins + 3; }

/// The engine's counts in the flat layout (host side).
inline void flatten(const PsdCounts& c, int64_t* out) {
  std::size_t i = 0;
  for (; i < c.at_least.size(); ++i) out[i] = c.at_least[i];
  out[i] = c.above;
  out[i + 1] = c.phase_voxels;
}

}  // namespace poreforge::anneal::terms
