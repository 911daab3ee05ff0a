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
  const std::size_t slots = e.size() + 1;
  // hits[k]: voxels with exactly k edges ≤ value; at_least[i] is then a suffix sum. Each
  // thread tallies its own row, summed after: integer counts, so the sum is exact.
  std::vector<int64_t> hits;
  int64_t phase_voxels = 0, above = 0;
  const int64_t n = phase.voxels();
  const uint8_t* in = phase.data();
  const float* t = thickness.data();
#pragma omp parallel
  {
    std::vector<int64_t> mine(slots, 0);
    int64_t mine_phase = 0, mine_above = 0;
#pragma omp for nowait
    for (int64_t i = 0; i < n; ++i) {
      if (!in[i]) continue;
      const double v = t[i];
      ++mine_phase;
      mine[std::upper_bound(e.begin(), e.end(), v) - e.begin()]++;
      if (v > e.back()) ++mine_above;
    }
#pragma omp critical(poreforge_psd_tally)
    {
      if (hits.empty()) hits.assign(slots, 0);
      for (std::size_t k = 0; k < slots; ++k) hits[k] += mine[k];
      phase_voxels += mine_phase;
      above += mine_above;
    }
  }
  PsdCounts counts;
  counts.phase_voxels = phase_voxels;
  counts.above = above;
  counts.at_least.assign(e.size(), 0);
  int64_t suffix = 0;
  for (std::size_t k = e.size(); k >= 1; --k) {
    suffix += hits[k];
    counts.at_least[k - 1] = suffix;
  }
  if (counts.phase_voxels == 0) throw InputError("the phase is empty: no PSD to compute");
  return psd_from_counts(counts, bins);
}

ThicknessRange thickness_range(const Volume<float>& thickness, const Mask& phase) {
  if (thickness.shape() != phase.shape())
    throw InputError("thickness map and phase mask differ in shape");
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  const int64_t n = phase.voxels();
  const uint8_t* in = phase.data();
  const float* t = thickness.data();
#pragma omp parallel for reduction(min : lo) reduction(max : hi)
  for (int64_t i = 0; i < n; ++i)
    if (in[i]) {
      lo = std::min(lo, t[i]);
      hi = std::max(hi, t[i]);
    }
  return {lo, hi};
}

Bins default_bins(const Volume<float>& thickness, const Mask& phase, int n, bool log) {
  const ThicknessRange r = thickness_range(thickness, phase);
  return default_bins(r.lo, r.hi, n, log);
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
