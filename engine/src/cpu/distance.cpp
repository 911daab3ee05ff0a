// Exact EDT by separable lower envelopes of parabolas (Felzenszwalb & Huttenlocher 2012),
// one pass per axis that is not flat, x then y then z, so squared distances are summed in the
// same order as detail::squared_norm. Integer squared distances (isotropic spacing) take
// faster passes with the same results: a nearest-background scan first, then envelopes with
// integer breakpoints over the runs between background voxels.
#include "distance.hpp"

#include "../common/messages.hpp"

#include <omp.h>

#include <algorithm>
#include <limits>
#include <type_traits>

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
  std::vector<int64_t> site_start;  // integer_envelope_line: where hull[k] becomes lowest

  void reserve(int64_t n) {
    in.resize(n);
    out.resize(n);
    site_pos.resize(3 * n + 2);
    site_val.resize(3 * n + 2);
    hull.resize(3 * n + 2);
    breaks.resize(3 * n + 3);
    site_start.resize(3 * n + 2);
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

// Integer squared distances (VoxelMetric) have two faster line passes, both exact:
//
// The first pass reads the 0/∞ mask, and the lower envelope of parabolas sited at the 0s is
// just the square of the distance to the nearest 0: two scans, one from each end, with the
// walls at −1 and n (wall) or the line's last and first 0 one period away (periodic).
void nearest_zero_line(LineScratch<uint32_t>& s, int64_t n, Boundary boundary) {
  constexpr uint32_t inf = detail::VoxelMetric::infinity;
  int64_t first = -1, last = -1;  // the line's first and last 0
  for (int64_t p = 0; p < n; ++p)
    if (s.in[p] == 0) {
      if (first < 0) first = p;
      last = p;
    }
  // The nearest 0 (or wall) before the line and after it; kFar and −kFar when there is none.
  constexpr int64_t kFar = std::numeric_limits<int64_t>::min() / 4;
  int64_t before = kFar, after = -kFar;
  if (boundary == Boundary::wall) before = -1, after = n;
  if (boundary == Boundary::periodic && first >= 0) before = last - n, after = first + n;
  int64_t zero = before;
  for (int64_t p = 0; p < n; ++p) {
    if (s.in[p] == 0) zero = p;
    s.out[p] = zero == kFar ? inf : static_cast<uint32_t>((p - zero) * (p - zero));
  }
  zero = after;
  for (int64_t p = n - 1; p >= 0; --p) {
    if (s.in[p] == 0) zero = p;
    if (zero != -kFar) s.out[p] = std::min(s.out[p], static_cast<uint32_t>((zero - p) * (zero - p)));
  }
}

// Later passes: the lower envelope with integer breakpoints (Meijster, Roerdink & Hesselink
// 2000): parabola j replaces the stack's top from the first integer p where it is no higher,
// ⌈N / 2Δ⌉ exactly, so each p reads one parabola and no neighbour needs checking. Positions
// reach −n … 2n − 1 and values 3·32767², so the arithmetic is 64-bit.
//
// The envelope of the sites s.site_pos/site_val[0, count) (ascending positions) at the
// integers first … last, into s.out[u mod n] (first ≥ 0, last < 2n).
void envelope_of_sites(LineScratch<uint32_t>& s, int64_t count, int64_t first, int64_t last, int64_t n) {
  auto height = [&](int64_t site, int64_t p) {
    const int64_t d = p - s.site_pos[site];
    return int64_t(s.site_val[site]) + d * d;
  };
  // hull[0..k]: the envelope's parabolas; start[h]: the first p where hull[h] is lowest.
  std::vector<int64_t>& start = s.site_start;
  int64_t k = 0;
  s.hull[0] = 0;
  start[0] = first;
  for (int64_t j = 1; j < count; ++j) {
    while (k >= 0 && height(j, start[k]) <= height(s.hull[k], start[k])) --k;
    if (k < 0) {
      k = 0;
      s.hull[0] = j;
      start[0] = first;
      continue;
    }
    const int64_t i = s.hull[k];
    const int64_t qi = s.site_pos[i], qj = s.site_pos[j];
    const int64_t num = (qj * qj + int64_t(s.site_val[j])) - (qi * qi + int64_t(s.site_val[i]));
    const int64_t den = 2 * (qj - qi);                                        // > 0: sites ascend
    const int64_t from = num >= 0 ? (num + den - 1) / den : -((-num) / den);  // ⌈num / den⌉
    if (from <= last) {
      ++k;
      s.hull[k] = j;
      start[k] = from;
    }
  }
  int64_t h = 0;
  for (int64_t u = first; u <= last; ++u) {
    while (h < k && start[h + 1] <= u) ++h;
    s.out[u < n ? u : u - n] = static_cast<uint32_t>(height(s.hull[h], u));
  }
}

// A whole line as one envelope: the sites are its finite entries, plus the walls at −1 and n
// (wall) or the images at q ± n (periodic).
void integer_envelope_line(LineScratch<uint32_t>& s, int64_t n, Boundary boundary) {
  constexpr uint32_t inf = detail::VoxelMetric::infinity;
  int64_t count = 0;
  auto push = [&](int64_t q, uint32_t v) {
    s.site_pos[count] = q;
    s.site_val[count] = v;
    ++count;
  };
  if (boundary == Boundary::wall) push(-1, 0);
  const int images = boundary == Boundary::periodic ? 1 : 0;
  for (int k = -images; k <= images; ++k)
    for (int64_t q = 0; q < n; ++q)
      if (s.in[q] != inf) push(q + k * n, s.in[q]);
  if (boundary == Boundary::wall) push(n, 0);
  if (count == 0) {
    std::fill(s.out.begin(), s.out.begin() + n, inf);
    return;
  }
  envelope_of_sites(s, count, 0, n - 1, n);
}

// A line with background on it, run by run: a 0 is the lowest parabola everywhere on its far
// side ((p − z)² < (p − q)² + g for any site q beyond z), so each run of non-zero entries needs
// only its own sites and the 0s (or walls) that bound it, and the background needs nothing —
// the work follows the phase, not the line (a fifth of it for Berea's pores). Periodic lines
// are walked from a 0, so that every run has a 0 on both sides; a line without a 0 is one
// envelope (integer_envelope_line).
void segmented_envelope_line(LineScratch<uint32_t>& s, int64_t n, Boundary boundary) {
  constexpr uint32_t inf = detail::VoxelMetric::infinity;
  int64_t zero = -1;
  for (int64_t p = 0; p < n && zero < 0; ++p)
    if (s.in[p] == 0) zero = p;
  if (zero < 0) return integer_envelope_line(s, n, boundary);
  const bool periodic = boundary == Boundary::periodic;
  // Unrolled positions u in [begin, begin + n): from the first 0 when periodic.
  const int64_t begin = periodic ? zero : 0, end = begin + n;
  auto at = [&](int64_t u) { return s.in[u < n ? u : u - n]; };
  int64_t u = begin;
  while (u < end) {
    if (at(u) == 0) {
      s.out[u < n ? u : u - n] = 0;
      ++u;
      continue;
    }
    int64_t last = u;  // the run [u, last]
    while (last + 1 < end && at(last + 1) != 0) ++last;
    int64_t count = 0;
    auto push = [&](int64_t q, uint32_t v) {
      s.site_pos[count] = q;
      s.site_val[count] = v;
      ++count;
    };
    // The 0 before the run: on the line (always, when periodic: the walk starts at one), the
    // wall at −1, or none (open). The 0 after it: on the line (periodic: begin + n at the
    // latest, the walk's first 0 again), the wall at n, or none.
    if (u > begin) push(u - 1, 0);
    else if (boundary == Boundary::wall) push(-1, 0);
    for (int64_t q = u; q <= last; ++q)
      if (at(q) != inf) push(q, at(q));
    if (last + 1 < end || periodic) push(last + 1, 0);
    else if (boundary == Boundary::wall) push(n, 0);
    if (count == 0) {  // open, no 0 on this side and nothing finite: unreachable along here
      for (int64_t q = u; q <= last; ++q) s.out[q < n ? q : q - n] = inf;
    } else {
      envelope_of_sites(s, count, u, last, n);
    }
    u = last + 1;
  }
}

template <class M>
void pass_along(std::vector<typename M::value_type>& d, const Shape& shape, int axis,
                Boundary boundary, const M& m, bool first_pass) {
  using V = typename M::value_type;
  const int64_t n = shape.extent(axis);
  const int64_t plane = shape.nx * shape.ny;
  const int64_t stride = axis == 0 ? 1 : axis == 1 ? shape.nx : plane;
  // Along y and z a line's entries are a row or a plane apart, so lines are taken in groups of
  // up to kGroup neighbours along x, gathered a step at a time (one cache line for all of
  // them, not one per line): z-lines at 128³ 33 → 15 ms on one thread. A group is kGroup x's
  // of one z (y-lines) or kGroup consecutive columns of the plane (z-lines); x-lines go alone.
  constexpr int64_t kGroup = 16;
  const int64_t width = axis == 0 ? 1 : kGroup;
  const int64_t per_plane = axis == 1 ? (shape.nx + width - 1) / width : 0;  // y-line groups per z
  const int64_t groups = axis == 0   ? shape.voxels() / n
                         : axis == 1 ? shape.nz * per_plane
                                     : (plane + width - 1) / width;
  // The first entry of group g and its number of lines.
  auto group_of = [&](int64_t g, int64_t& first, int64_t& count) {
    if (axis == 0) {
      first = g * shape.nx, count = 1;
    } else if (axis == 1) {
      const int64_t x0 = (g % per_plane) * width;
      first = (g / per_plane) * plane + x0, count = std::min(width, shape.nx - x0);
    } else {
      first = g * width, count = std::min(width, plane - first);
    }
  };
#pragma omp parallel
  {
    LineScratch<V> s;
    s.reserve(n);
    std::vector<V> block(static_cast<std::size_t>(width * n));  // block[w·n + p]: line w, entry p
#pragma omp for schedule(static)
    for (int64_t g = 0; g < groups; ++g) {
      int64_t first, count;
      group_of(g, first, count);
      V* base = d.data() + first;
      auto one_line = [&] {
        if constexpr (std::is_same_v<M, VoxelMetric>) {
          if (first_pass) nearest_zero_line(s, n, boundary);
          else segmented_envelope_line(s, n, boundary);
        } else {
          envelope_line(s, n, axis, boundary, m);
        }
      };
      if (axis == 0) {  // a row: no gathering
        std::copy_n(base, n, s.in.begin());
        one_line();
        std::copy_n(s.out.begin(), n, base);
        continue;
      }
      for (int64_t p = 0; p < n; ++p)
        for (int64_t w = 0; w < count; ++w) block[w * n + p] = base[p * stride + w];
      for (int64_t w = 0; w < count; ++w) {
        std::copy_n(block.begin() + w * n, n, s.in.begin());
        one_line();
        std::copy_n(s.out.begin(), n, block.begin() + w * n);
      }
      for (int64_t p = 0; p < n; ++p)
        for (int64_t w = 0; w < count; ++w) base[p * stride + w] = block[w * n + p];
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

  bool first_pass = true;
  for (int axis = 0; axis < 3; ++axis)
    if (shape.extent(axis) > 1) {
      pass_along(d, shape, axis, boundary, metric, first_pass);
      first_pass = false;
    }

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
