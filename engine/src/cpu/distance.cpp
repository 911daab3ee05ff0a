// Exact EDT by separable lower envelopes of parabolas (Felzenszwalb & Huttenlocher 2012),
// one pass per axis that is not flat, x then y then z, so squared distances are summed in the
// same order as detail::squared_norm.
#include "distance.hpp"

#include "../common/messages.hpp"

#include <omp.h>

#include <algorithm>
#include <limits>

#include "poreforge/edt.hpp"
#include "poreforge/error.hpp"

namespace poreforge::cpu {
namespace {

using detail::PhysicalMetric;
using detail::VoxelMetric;

// Per-thread scratch for one line: envelope sites, their values and the breakpoints.
template <class V>
struct LineScratch {
  std::vector<V> in, out;
  std::vector<int64_t> site_pos;
  std::vector<V> site_val;
  std::vector<int64_t> hull;     // indices into site_pos of the envelope's parabolas
  std::vector<double> breaks;    // hull[k] is lowest on [breaks[k], breaks[k+1])

  void reserve(int64_t n) {
    in.resize(n);
    out.resize(n);
    site_pos.resize(3 * n + 2);
    site_val.resize(3 * n + 2);
    hull.resize(3 * n + 2);
    breaks.resize(3 * n + 3);
  }
};

// One 1D pass: out[p] = min over sites q of f(q) + term(p − q). Sites are the finite entries
// of `in`, plus the wall voxels at −1 and n (wall) or the images at q ± n (periodic).
template <class M>
void envelope_line(LineScratch<typename M::value_type>& s, int64_t n, int axis,
                   Boundary boundary, const M& m) {
  using V = typename M::value_type;
  int64_t count = 0;
  auto push = [&](int64_t q, V v) {
    s.site_pos[count] = q;
    s.site_val[count] = v;
    ++count;
  };
  if (boundary == Boundary::wall) push(-1, V(0));
  const int images = boundary == Boundary::periodic ? 1 : 0;
  for (int k = -images; k <= images; ++k)
    for (int64_t q = 0; q < n; ++q)
      if (s.in[q] != M::infinity) push(q + k * n, s.in[q]);
  if (boundary == Boundary::wall) push(n, V(0));

  if (count == 0) {
    std::fill(s.out.begin(), s.out.begin() + n, M::infinity);
    return;
  }
  const double w = m.weight(axis);
  // Abscissa where parabolas i and j (pos_i < pos_j) meet.
  auto meet = [&](int64_t i, int64_t j) {
    const double pi = static_cast<double>(s.site_pos[i]), pj = static_cast<double>(s.site_pos[j]);
    return ((M::to_double(s.site_val[j]) + w * pj * pj) - (M::to_double(s.site_val[i]) + w * pi * pi)) /
           (2.0 * w * (pj - pi));
  };
  int64_t k = 0;
  s.hull[0] = 0;
  s.breaks[0] = -std::numeric_limits<double>::infinity();
  s.breaks[1] = std::numeric_limits<double>::infinity();
  for (int64_t j = 1; j < count; ++j) {
    double x = meet(s.hull[k], j);
    while (x <= s.breaks[k]) {
      --k;
      x = meet(s.hull[k], j);
    }
    ++k;
    s.hull[k] = j;
    s.breaks[k] = x;
    s.breaks[k + 1] = std::numeric_limits<double>::infinity();
  }
  auto value_at = [&](int64_t h, int64_t p) {
    const int64_t site = s.hull[h];
    return M::add(s.site_val[site], m.term(p - s.site_pos[site], axis));
  };
  int64_t h = 0;
  for (int64_t p = 0; p < n; ++p) {
    while (s.breaks[h + 1] < static_cast<double>(p)) ++h;
    // The breakpoints are rounded doubles: near one, the neighbouring parabola may be the
    // true minimum, so take the exact minimum of the three candidates.
    V best = value_at(h, p);
    if (h > 0) best = std::min(best, value_at(h - 1, p));
    if (h < k) best = std::min(best, value_at(h + 1, p));
    s.out[p] = best;
  }
}

template <class M>
void pass_along(std::vector<typename M::value_type>& d, const Shape& shape, int axis,
                Boundary boundary, const M& m) {
  using V = typename M::value_type;
  const int64_t n = shape.extent(axis);
  const int64_t plane = shape.nx * shape.ny;
  const int64_t stride = axis == 0 ? 1 : axis == 1 ? shape.nx : plane;
  const int64_t lines = shape.voxels() / n;
  // Line l starts at: x-lines l·nx; y-lines (z = l / nx, x = l % nx); z-lines l. Consecutive
  // l are neighbours in memory for the strided passes, so a thread's chunk shares cache lines.
  auto line_start = [&](int64_t l) -> int64_t {
    if (axis == 0) return l * shape.nx;
    if (axis == 1) return (l / shape.nx) * plane + l % shape.nx;
    return l;
  };
#pragma omp parallel
  {
    LineScratch<V> s;
    s.reserve(n);
#pragma omp for schedule(static)
    for (int64_t l = 0; l < lines; ++l) {
      V* line = d.data() + line_start(l);
      for (int64_t p = 0; p < n; ++p) s.in[p] = line[p * stride];
      envelope_line(s, n, axis, boundary, m);
      for (int64_t p = 0; p < n; ++p) line[p * stride] = s.out[p];
    }
  }
}

}  // namespace

detail::VoxelMetric voxel_metric(const Spacing& s) {
  detail::VoxelMetric m;
  m.spacing = s.x;
  return m;
}

detail::PhysicalMetric physical_metric(const Spacing& s) {
  detail::PhysicalMetric m;
  m.sx = s.x;
  m.sy = s.y;
  m.sz = s.z;
  return m;
}

template <class M>
std::vector<typename M::value_type> squared_distance(const Mask& phase, Boundary boundary,
                                                     const M& metric) {
  using V = typename M::value_type;
  const Shape& shape = phase.shape();
  std::vector<V> d(static_cast<std::size_t>(shape.voxels()));
  const uint8_t* in = phase.data();
  const int64_t total = shape.voxels();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < total; ++i) d[i] = in[i] ? M::infinity : V(0);

  for (int axis = 0; axis < 3; ++axis)
    if (shape.extent(axis) > 1) pass_along(d, shape, axis, boundary, metric);

  bool unreachable = false;
#pragma omp parallel for reduction(|| : unreachable)
  for (int64_t i = 0; i < total; ++i) unreachable = unreachable || d[i] == M::infinity;
  if (unreachable)
    throw InputError(detail::no_background_message(boundary));
  return d;
}

template std::vector<uint32_t> squared_distance(const Mask&, Boundary, const VoxelMetric&);
template std::vector<double> squared_distance(const Mask&, Boundary, const PhysicalMetric&);

}  // namespace poreforge::cpu
