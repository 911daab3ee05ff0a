// A profile against the natural envelope: statistics over real sub-volumes, leave-one-out.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "poreforge/error.hpp"
#include "poreforge/realism.hpp"
#include "poreforge/workspace.hpp"

namespace poreforge {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double curve_distance(const std::vector<double>& a, const std::vector<double>& b, CurveMeasure::Distance kind) {
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = a[i] - b[i];
    sum += kind == CurveMeasure::Distance::l1 ? std::abs(d) : d * d;
  }
  if (kind == CurveMeasure::Distance::l1) return sum;
  return a.empty() ? 0 : std::sqrt(sum / double(a.size()));
}

// The mean curve of `curves` without the one at `skip` (none when skip is out of range).
std::vector<double> mean_curve(const std::vector<const std::vector<double>*>& curves, std::size_t skip) {
  std::vector<double> mean(curves.front()->size(), 0.0);
  std::size_t n = 0;
  for (std::size_t k = 0; k < curves.size(); ++k) {
    if (k == skip) continue;
    for (std::size_t i = 0; i < mean.size(); ++i) mean[i] += (*curves[k])[i];
    ++n;
  }
  for (double& v : mean) v /= double(n);
  return mean;
}

struct Range {
  double min = kInf, max = -kInf;
  void add(double v) {
    min = std::min(min, v);
    max = std::max(max, v);
  }
  // NaN (a measure that could not be taken) is never inside.
  bool holds(double v) const { return v >= min && v <= max; }
};

double median(std::vector<int> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

EnvelopeComparison compare_with_envelope(const RealismProfile& candidate, const std::vector<RealismProfile>& real) {
  if (real.size() < 2) throw InputError("the natural envelope needs at least two real sub-volumes");
  for (const RealismProfile& r : real) {
    if (r.scalars.size() != candidate.scalars.size() || r.curves.size() != candidate.curves.size())
      throw InputError("the real profiles do not hold the candidate's measures");
    for (std::size_t m = 0; m < r.scalars.size(); ++m)
      if (r.scalars[m].name != candidate.scalars[m].name)
        throw InputError("measure '" + candidate.scalars[m].name + "' is not in every real profile");
    for (std::size_t m = 0; m < r.curves.size(); ++m)
      if (r.curves[m].name != candidate.curves[m].name || r.curves[m].x != candidate.curves[m].x ||
          r.curves[m].y.size() != candidate.curves[m].y.size())
        throw InputError("curve '" + candidate.curves[m].name + "' is not on the same abscissae in every real profile");
  }
  const std::size_t n = real.size();
  EnvelopeComparison out;
  out.real_outside.assign(n, 0);

  for (std::size_t m = 0; m < candidate.scalars.size(); ++m) {
    ScalarComparison c;
    c.name = candidate.scalars[m].name;
    c.unit = candidate.scalars[m].unit;
    c.value = candidate.scalars[m].value;
    Range range;
    double sum = 0;
    int finite = 0;
    for (const RealismProfile& r : real) {
      const double v = r.scalars[m].value;
      c.real.push_back(v);
      range.add(v);
      if (std::isfinite(v)) {
        sum += v;
        ++finite;
      }
    }
    c.min = range.min;
    c.max = range.max;
    c.mean = finite ? sum / finite : kInf;
    // Two passes for the variance: equal values give exactly 0, not a rounding remainder.
    double squares = 0;
    for (double v : c.real)
      if (std::isfinite(v)) squares += (v - c.mean) * (v - c.mean);
    c.sd = finite > 1 ? std::sqrt(squares / (finite - 1)) : 0;
    if (range.min == range.max) c.mean = range.min;  // every real value the same: that value
    if (std::isnan(c.value)) c.z = std::numeric_limits<double>::quiet_NaN();
    else if (c.value == c.mean) c.z = 0;
    else if (c.sd > 0 && std::isfinite(c.value)) c.z = (c.value - c.mean) / c.sd;
    else c.z = c.value > c.mean ? kInf : -kInf;
    c.inside = range.holds(c.value);
    for (std::size_t k = 0; k < n; ++k) {
      Range others;
      for (std::size_t j = 0; j < n; ++j)
        if (j != k) others.add(c.real[j]);
      if (!others.holds(c.real[k])) ++out.real_outside[k];
    }
    out.outside += c.inside ? 0 : 1;
    out.scalars.push_back(std::move(c));
  }

  for (std::size_t m = 0; m < candidate.curves.size(); ++m) {
    const CurveMeasure& cand = candidate.curves[m];
    CurveComparison c;
    c.name = cand.name;
    c.x_unit = cand.x_unit;
    c.distance_kind = cand.distance;
    c.x = cand.x;
    c.value = cand.y;
    std::vector<const std::vector<double>*> curves;
    for (const RealismProfile& r : real) curves.push_back(&r.curves[m].y);
    c.mean = mean_curve(curves, n);
    c.min.assign(cand.y.size(), kInf);
    c.max.assign(cand.y.size(), -kInf);
    for (const auto* y : curves)
      for (std::size_t i = 0; i < y->size(); ++i) {
        c.min[i] = std::min(c.min[i], (*y)[i]);
        c.max[i] = std::max(c.max[i], (*y)[i]);
      }
    c.distance = curve_distance(cand.y, c.mean, cand.distance);
    for (std::size_t k = 0; k < n; ++k)
      c.real_distances.push_back(curve_distance(*curves[k], mean_curve(curves, k), cand.distance));
    // Distances equal but for rounding (curves that mirror each other about the mean) tie.
    auto farther = [](double d, double than) { return d > than * (1 + 1e-12); };
    const double largest = *std::max_element(c.real_distances.begin(), c.real_distances.end());
    c.inside = c.distance <= largest * (1 + 1e-12);  // NaN (not measured) is never inside
    // A real sub-volume is outside when it is farther from the others' mean than every other
    // one is from the mean of theirs (leave one out, as for the scalars).
    for (std::size_t k = 0; k < n; ++k) {
      double others = 0;
      for (std::size_t j = 0; j < n; ++j)
        if (j != k) others = std::max(others, c.real_distances[j]);
      if (farther(c.real_distances[k], others)) ++out.real_outside[k];
    }
    out.outside += c.inside ? 0 : 1;
    out.curves.push_back(std::move(c));
  }
  out.measures = int(out.scalars.size() + out.curves.size());
  out.typical_real_outside = median(out.real_outside);
  return out;
}

std::vector<Shape> subvolume_corners(const Shape& whole, const Shape& sub, int count, uint64_t seed) {
  if (sub.nx > whole.nx || sub.ny > whole.ny || sub.nz > whole.nz)
    throw InputError("a " + to_string(sub) + " sub-volume does not fit inside the " + to_string(whole) + " reference");
  if (count < 1) throw InputError("the number of sub-volumes must be at least 1");
  // mt19937_64's sequence is fixed by the standard; the bounded draw is made here (not by a
  // library distribution, whose algorithm varies) so every machine picks the same corners.
  std::mt19937_64 random(seed);
  auto below = [&](uint64_t n) {
    const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
    uint64_t v;
    do v = random();
    while (v >= limit);
    return int64_t(v % n);
  };
  std::vector<Shape> corners;
  for (int k = 0; k < count; ++k) {
    Shape c;
    c.nx = below(uint64_t(whole.nx - sub.nx + 1));
    c.ny = below(uint64_t(whole.ny - sub.ny + 1));
    c.nz = below(uint64_t(whole.nz - sub.nz + 1));
    corners.push_back(c);
  }
  return corners;
}

Mask crop(const Mask& volume, const Shape& corner, const Shape& sub) {
  const Shape& s = volume.shape();
  if (corner.nx < 0 || corner.ny < 0 || corner.nz < 0 || corner.nx + sub.nx > s.nx || corner.ny + sub.ny > s.ny ||
      corner.nz + sub.nz > s.nz)
    throw InputError("a " + to_string(sub) + " crop at " + to_string(corner) + " does not fit inside " + to_string(s));
  Mask out(sub, volume.spacing());
  for (int64_t z = 0; z < sub.nz; ++z)
    for (int64_t y = 0; y < sub.ny; ++y) {
      const uint8_t* from = &volume(corner.nx, corner.ny + y, corner.nz + z);
      std::copy(from, from + sub.nx, &out(0, y, z));
    }
  return out;
}

EnvelopePlan plan_envelope(const Mask& candidate, const Mask& reference, int count, uint64_t seed, int bins,
                           Backend backend) {
  const Shape shape = candidate.shape();
  if (shape.nx > reference.shape().nx || shape.ny > reference.shape().ny || shape.nz > reference.shape().nz)
    throw InputError("the reconstruction (" + to_string(shape) + ") does not fit inside the reference (" +
                     to_string(reference.shape()) + "): sub-volumes of its shape cannot be cut");
  EnvelopePlan plan;
  plan.whole_reference = shape == reference.shape();
  plan.corners = plan.whole_reference ? std::vector<Shape>{Shape{0, 0, 0}}
                                      : subvolume_corners(reference.shape(), shape, count, seed);
  plan.largest_pore_fraction = double(count_phase(candidate)) / double(candidate.voxels());
  for (const Shape& c : plan.corners) {
    plan.real.push_back(crop(reference, c, shape));
    const int64_t n = count_phase(plan.real.back());
    if (n == 0 || n == plan.real.back().voxels())
      throw InputError("the reference's sub-volume at " + to_string(c) + " holds only one phase: the reference is "
                       "too uniform for sub-volumes of " + to_string(shape));
    plan.largest_pore_fraction = std::max(plan.largest_pore_fraction, double(n) / double(plan.real.back().voxels()));
  }
  std::vector<const Mask*> all{&candidate};
  for (const Mask& m : plan.real) all.push_back(&m);
  plan.psd_bins = shared_psd_bins(all, bins, backend);
  return plan;
}

Bins shared_psd_bins(const std::vector<const Mask*>& volumes, int bins, Backend backend) {
  if (bins < 1) throw InputError("the number of PSD bins must be at least 1 (got " + std::to_string(bins) + ")");
  if (volumes.empty()) throw InputError("shared_psd_bins: no volume");
  double largest = 0;
  // One engine context for every volume: a one-shot call builds its own each time, which on
  // CUDA costs far more than a small volume's distance map.
  Workspace workspace(backend);
  for (const Mask* m : volumes) {
    const Volume<float> d = workspace.distance_transform(*m, Boundary::open);
    for (float v : d.values()) largest = std::max(largest, double(v));
  }
  const Spacing spacing = volumes.front()->spacing();
  const double smallest = std::min({spacing.x, spacing.y, spacing.z});
  return Bins::linear(smallest, std::max(largest, 2 * smallest), bins);
}

}  // namespace poreforge
