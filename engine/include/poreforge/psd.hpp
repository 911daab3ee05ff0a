#pragma once
/// Pore-size distribution: histogram of local thickness over the phase (DESIGN §1).
#include <cstdint>
#include <vector>

#include "poreforge/volume.hpp"

namespace poreforge {

/// Bin edges in physical units (radius, or diameter where the caller says so), strictly
/// increasing, at least two. Bins are [e_i, e_i+1) except the last, which is closed
/// (numpy's convention).
class Bins {
 public:
  /// n equal bins over [lo, hi]; throws InputError unless n ≥ 1 and lo < hi.
  static Bins linear(double lo, double hi, int n);
  /// n log-spaced bins over [lo, hi]; throws InputError unless n ≥ 1 and 0 < lo < hi.
  static Bins logarithmic(double lo, double hi, int n);
  /// Explicit edges; throws InputError unless at least two, finite and strictly increasing.
  static Bins from_edges(std::vector<double> edges);

  const std::vector<double>& edges() const { return m_edges; }
  int count() const { return static_cast<int>(m_edges.size()) - 1; }

 private:
  explicit Bins(std::vector<double> edges) : m_edges(std::move(edges)) {}
  std::vector<double> m_edges;
};

/// A PSD as fractions of the phase volume.
struct PoreSizeDistribution {
  std::vector<double> edges;       ///< physical units, size N+1
  std::vector<double> fraction;    ///< size N: share of phase voxels per bin
  std::vector<double> cumulative;  ///< size N+1: share with thickness ≥ edges[i] (PoreSpy's cdf)
  double below = 0;                ///< share with thickness < edges[0]
  double above = 0;                ///< share with thickness > edges[N]
  int64_t phase_voxels = 0;
};

/// Exact counts behind a PSD; the fractions follow by dividing by phase_voxels.
struct PsdCounts {
  std::vector<int64_t> at_least;  ///< size N+1: voxels with thickness ≥ edges[i]
  int64_t above = 0;              ///< voxels with thickness > edges[N]
  int64_t phase_voxels = 0;
  /// 8·χ of each opening {thickness ≥ edges[i]} over the box's inner 2×2×2 cells
  /// (measures.hpp's inner_euler8_of_openings: 26-connected, the box's faces not counted), size
  /// N+1, where an evaluator counts them (PsdEvaluator::count_openings); else empty.
  std::vector<int64_t> opening_euler;
};

/// Fractions from counts (shared by every path so they agree to the bit).
PoreSizeDistribution psd_from_counts(const PsdCounts& counts, const Bins& bins);

/// Histogram of a thickness map over the phase voxels (values compared as stored, float32).
/// O(N log B). Does not synchronise anything; CPU only.
PoreSizeDistribution psd_from_thickness(const Volume<float>& thickness, const Mask& phase,
                                        const Bins& bins);

/// The least and greatest thickness over the phase's voxels; lo > hi when the phase is empty.
struct ThicknessRange {
  double lo, hi;
};
ThicknessRange thickness_range(const Volume<float>& thickness, const Mask& phase);

/// Default bins for a thickness map: n bins (log-spaced if `log`) over [min, max] of the
/// thickness over the phase, like PoreSpy's and numpy's histogram defaults.
Bins default_bins(const Volume<float>& thickness, const Mask& phase, int n, bool log);
/// The same from the thickness's range over the phase, [lo, hi].
Bins default_bins(double lo, double hi, int n, bool log);

}  // namespace poreforge
