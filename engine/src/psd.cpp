#include "poreforge/psd.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "poreforge/error.hpp"

namespace poreforge {

Bins Bins::linear(double lo, double hi, int n) {
  if (n < 1) throw InputError("bin count must be at least 1 (got " + std::to_string(n) + ")");
  if (!(lo < hi) || !std::isfinite(lo) || !std::isfinite(hi))
    throw InputError("linear bins need lo < hi (got " + std::to_string(lo) + ", " + std::to_string(hi) + ")");
  std::vector<double> e(static_cast<std::size_t>(n) + 1);
  for (int i = 0; i <= n; ++i) e[i] = lo + (hi - lo) * i / n;
  e.back() = hi;  // exact end, not lo + (hi − lo)
  return Bins(std::move(e));
}

Bins Bins::logarithmic(double lo, double hi, int n) {
  if (n < 1) throw InputError("bin count must be at least 1 (got " + std::to_string(n) + ")");
  if (!(lo > 0 && lo < hi) || !std::isfinite(hi))
    throw InputError("log bins need 0 < lo < hi (got " + std::to_string(lo) + ", " + std::to_string(hi) + ")");
  std::vector<double> e(static_cast<std::size_t>(n) + 1);
  const double a = std::log(lo), b = std::log(hi);
  for (int i = 0; i <= n; ++i) e[i] = std::exp(a + (b - a) * i / n);
  e.front() = lo;
  e.back() = hi;
  return Bins(std::move(e));
}

Bins Bins::from_edges(std::vector<double> edges) {
  if (edges.size() < 2) throw InputError("bin edges: need at least two edges");
  for (std::size_t i = 0; i < edges.size(); ++i) {
    if (!std::isfinite(edges[i])) throw InputError("bin edges: edge " + std::to_string(i) + " is not finite");
    if (i > 0 && !(edges[i] > edges[i - 1]))
      throw InputError("bin edges must be strictly increasing (edge " + std::to_string(i) + " is " +
                       std::to_string(edges[i]) + " after " + std::to_string(edges[i - 1]) + ")");
  }
  return Bins(std::move(edges));
}

PoreSizeDistribution psd_from_counts(const PsdCounts& counts, const Bins& bins) {
  PoreSizeDistribution psd;
  psd.edges = bins.edges();
  psd.phase_voxels = counts.phase_voxels;
  const double total = static_cast<double>(counts.phase_voxels);
  const std::size_t n = static_cast<std::size_t>(bins.count());
  psd.fraction.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int64_t upper = i + 1 < n ? counts.at_least[i + 1] : counts.above;  // last bin closed
    psd.fraction[i] = static_cast<double>(counts.at_least[i] - upper) / total;
  }
  psd.cumulative.resize(n + 1);
  for (std::size_t i = 0; i <= n; ++i) psd.cumulative[i] = static_cast<double>(counts.at_least[i]) / total;
  psd.below = static_cast<double>(counts.phase_voxels - counts.at_least[0]) / total;
  psd.above = static_cast<double>(counts.above) / total;
  return psd;
}

PoreSizeDistribution psd_from_thickness(const Volume<float>& thickness, const Mask& phase,
                                        const Bins& bins) {
  if (thickness.shape() != phase.shape())
    throw InputError("thickness map and phase mask differ in shape");
  const auto& e = bins.edges();
  // hits[k]: voxels with exactly k edges ≤ value; at_least[i] is then a suffix sum.
  std::vector<int64_t> hits(e.size() + 1, 0);
  PsdCounts counts;
  const int64_t n = phase.voxels();
  for (int64_t i = 0; i < n; ++i) {
    if (!phase[i]) continue;
    const double v = thickness[i];
    ++counts.phase_voxels;
    hits[std::upper_bound(e.begin(), e.end(), v) - e.begin()]++;
    if (v > e.back()) ++counts.above;
  }
  counts.at_least.assign(e.size(), 0);
  int64_t suffix = 0;
  for (std::size_t k = e.size(); k >= 1; --k) {
    suffix += hits[k];
    counts.at_least[k - 1] = suffix;
  }
  if (counts.phase_voxels == 0) throw InputError("the phase is empty: no PSD to compute");
  return psd_from_counts(counts, bins);
}

Bins default_bins(const Volume<float>& thickness, const Mask& phase, int n, bool log) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (int64_t i = 0; i < phase.voxels(); ++i)
    if (phase[i]) {
      lo = std::min(lo, double(thickness[i]));
      hi = std::max(hi, double(thickness[i]));
    }
  return default_bins(lo, hi, n, log);
}

Bins default_bins(double lo, double hi, int n, bool log) {
  if (!(lo <= hi)) throw InputError("the phase is empty: no PSD to compute");
  if (lo == hi) {  // one thickness everywhere (a ball, a slab): centre one bin on it
    const double pad = lo > 0 ? 0.5 * lo : 0.5;
    lo -= log ? 0.5 * lo : pad;
    hi += pad;
  }
  return log ? Bins::logarithmic(lo, hi, n) : Bins::linear(lo, hi, n);
}

}  // namespace poreforge
