// Exact local thickness by ball painting in decreasing radius.
//
// 1. Exact squared EDT (distance.cpp).
// 2. Centres: every phase voxel, less those whose lattice ball lies inside a 26-neighbour's
//    lattice ball (decided exactly, ball_containment.hpp): such a ball adds nothing to the max.
// 3. Sort centres by squared radius, largest first, and paint each ball one x-chord at a time.
//    A voxel's first paint is its local thickness, so later chords skip painted voxels through
//    a per-row union-find ("next unpainted x"), making each chord O(1) amortised. Work is
//    O(N + Σ r²) over the kept centres instead of the O(Σ r³) of plain ball painting.
// 4. Each z-plane (y-row in 2D) is painted on its own, all levels in order, by one thread at a
//    time: no atomics, no races, deterministic output, and the plane stays in cache.
//
// Counting painted voxels at the end of each radius level gives the coverage by balls of
// radius ≥ r, which is the cumulative PSD: the PSD-only path is the same walk with no map.
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <type_traits>

#include "../common/ball_containment.hpp"
#include "../common/messages.hpp"
#include "ball_centres.hpp"
#include "cpu_backend.hpp"
#include "distance.hpp"
#include "first_unpainted.hpp"
#include "poreforge/error.hpp"

namespace poreforge::cpu {
namespace {

using detail::chord_half_width;
using detail::squared_norm;

// The result of painting: for each radius level (largest first) its radius as stored and the
// number of phase voxels covered by balls of that radius or larger.
struct Coverage {
  std::vector<float> level_radius;
  std::vector<int64_t> covered;
};

// Chord half-widths of one ball size, computed once per radius level instead of once per
// chord: for each |dz| ≤ rz the row reach ry(dz), and for each (|dy|, |dz|) the half-width
// along x (−1: the row misses the ball).
template <class M>
struct BallChords {
  int64_t rz = 0, ry0 = 0;
  std::vector<int64_t> ry;     // size rz + 1
  std::vector<int64_t> width;  // (rz + 1) × (ry0 + 1)

  BallChords(const M& m, typename M::value_type r2, const Shape& shape) {
    // A flat axis has no offsets along it: the ball only meets its own plane or row there.
    rz = shape.nz > 1 ? chord_half_width(m, r2, 2, 0, 0) : 0;
    ry0 = shape.ny > 1 ? chord_half_width(m, r2, 1, 0, 0) : 0;
    ry.resize(rz + 1);
    width.assign((rz + 1) * (ry0 + 1), -1);
    for (int64_t dz = 0; dz <= rz; ++dz) {
      ry[dz] = shape.ny > 1 ? chord_half_width(m, r2, 1, 0, dz) : 0;
      for (int64_t dy = 0; dy <= ry[dz]; ++dy)
        width[dz * (ry0 + 1) + dy] = shape.nx > 1 ? chord_half_width(m, r2, 0, dy, dz) : 0;
    }
  }
  int64_t half_width(int64_t dy, int64_t dz) const { return width[std::abs(dz) * (ry0 + 1) + std::abs(dy)]; }
};

// Paints every centre's ball into `thickness` (may be null: count only). `next` is N entries
// of scratch for the per-row union-find.
//
// The work is split by slab (a z-plane, or a y-row in 2D): a voxel belongs to one slab, so
// each slab can take every level in order on its own. A thread paints one slab at a time,
// all levels, which keeps that slab's rows in cache; the centres of a level that reach the
// slab are a contiguous run of the level (centres are sorted by index within a level), found
// by binary search.
template <class M>
Coverage paint_balls(const Shape& shape, Boundary boundary, const M& m,
                     const std::vector<Centre<M>>& centres, uint32_t* next, float* thickness) {
  // Level boundaries: centres [level_first[j], level_first[j+1]) share one squared radius.
  std::vector<std::size_t> level_first;
  for (std::size_t i = 0; i < centres.size(); ++i)
    if (i == 0 || centres[i].r2 != centres[i - 1].r2) level_first.push_back(i);
  const std::size_t levels = level_first.size();
  level_first.push_back(centres.size());

  Coverage coverage;
  coverage.level_radius.resize(levels);
  std::vector<BallChords<M>> chords;
  chords.reserve(levels);
  for (std::size_t j = 0; j < levels; ++j) {
    coverage.level_radius[j] = m.radius(centres[level_first[j]].r2);
    chords.emplace_back(m, centres[level_first[j]].r2, shape);
  }
  coverage.covered.assign(levels, 0);

  const int64_t nx = shape.nx, ny = shape.ny, nz = shape.nz;
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < ny * nz; ++row)
    for (int64_t x = 0; x < nx; ++x) next[row * nx + x] = static_cast<uint32_t>(x);

  const bool periodic = boundary == Boundary::periodic;
  const bool slab_is_plane = nz > 1;  // else 2D (or 1D): slabs are y-rows
  const int64_t slabs = slab_is_plane ? nz : ny;
  const int64_t plane = nx * ny;
#pragma omp parallel
  {
    std::vector<int64_t> newly(levels, 0);  // voxels this thread painted at each level
    int64_t painted = 0;
    auto paint_run = [&](int64_t row, int64_t a, int64_t b, float value) {
      uint32_t* r = next + row * nx;
      for (int64_t x = first_unpainted(r, a, b); x <= b; x = first_unpainted(r, x + 1, b)) {
        if (thickness) thickness[row * nx + x] = value;
        r[x] = static_cast<uint32_t>(x + 1);
        ++painted;
      }
    };
    // The chord [cx − w, cx + w] of row `row`, clipped to the volume or wrapped (periodic).
    auto paint_chord = [&](int64_t row, int64_t cx, int64_t w, float value) {
      const int64_t a = cx - w, b = cx + w;
      if (!periodic) {
        paint_run(row, std::max<int64_t>(a, 0), std::min(b, nx - 1), value);
      } else if (b - a + 1 >= nx) {
        paint_run(row, 0, nx - 1, value);
      } else if (a < 0) {
        paint_run(row, a + nx, nx - 1, value);
        paint_run(row, 0, b, value);
      } else if (b >= nx) {
        paint_run(row, a, nx - 1, value);
        paint_run(row, 0, b - nx, value);
      } else {
        paint_run(row, a, b, value);
      }
    };
    auto wrap_or_outside = [&](int64_t v, int64_t n) -> int64_t {
      if (v >= 0 && v < n) return v;
      return periodic ? wrap(v, n) : -1;
    };
#pragma omp for schedule(dynamic, 1)
    for (int64_t s = 0; s < slabs; ++s) {
      for (std::size_t j = 0; j < levels; ++j) {
        const BallChords<M>& ball = chords[j];
        const float value = coverage.level_radius[j];
        const int64_t reach = slab_is_plane ? ball.rz : ball.ry0;  // offsets that reach slab s
        const int64_t before = painted;
        // Centre images at c + k·n (periodic) within `reach` of the slab.
        const int64_t images = periodic ? reach / slabs + 1 : 0;
        for (int64_t k = -images; k <= images; ++k) {
          const int64_t lo = s - reach - k * slabs, hi = s + reach - k * slabs;  // slab coordinate range
          auto slab_of = [&](const Centre<M>& c) { return slab_is_plane ? c.index / plane : c.index / nx; };
          const auto first = std::lower_bound(centres.begin() + level_first[j], centres.begin() + level_first[j + 1],
                                              lo, [&](const Centre<M>& c, int64_t v) { return slab_of(c) < v; });
          for (auto c = first; c != centres.begin() + level_first[j + 1] && slab_of(*c) <= hi; ++c) {
            const int64_t cx = c->index % nx, cy = (c->index / nx) % ny;
            const int64_t offset = s - (slab_of(*c) + k * slabs);  // dz (3D) or dy (2D)
            if (!slab_is_plane) {
              paint_chord(s, cx, ball.half_width(offset, 0), value);
              continue;
            }
            const int64_t ry = ball.ry[std::abs(offset)];
            for (int64_t dy = -ry; dy <= ry; ++dy) {
              const int64_t y = wrap_or_outside(cy + dy, ny);
              if (y >= 0) paint_chord(s * ny + y, cx, ball.half_width(dy, offset), value);
            }
          }
        }
        newly[j] += painted - before;
      }
    }
#pragma omp critical
    for (std::size_t j = 0; j < levels; ++j) coverage.covered[j] += newly[j];
  }
  for (std::size_t j = 1; j < levels; ++j) coverage.covered[j] += coverage.covered[j - 1];
  return coverage;
}

PsdCounts counts_from_coverage(const Coverage& cov, const Bins& bins, int64_t phase_voxels) {
  // Levels are in decreasing radius: the coverage at edge e is that of the last level whose
  // radius is still ≥ e (every voxel's thickness is the radius of the first level to reach it).
  auto covered_where = [&](auto keep) -> int64_t {
    int64_t c = 0;
    for (std::size_t j = 0; j < cov.level_radius.size() && keep(double(cov.level_radius[j])); ++j)
      c = cov.covered[j];
    return c;
  };
  PsdCounts counts;
  counts.phase_voxels = phase_voxels;
  for (double e : bins.edges())
    counts.at_least.push_back(covered_where([e](double r) { return r >= e; }));
  const double last = bins.edges().back();
  counts.above = covered_where([last](double r) { return r > last; });
  return counts;
}

void require_phase(const Mask& phase) {
  validate_shape(phase.shape());
  validate_spacing(phase.spacing());
  if (count_phase(phase) == 0)
    throw InputError(detail::empty_phase_message());
}

// Runs steps 1–4 with the metric the spacing calls for. `thickness` may be null.
template <class M>
Coverage thickness_walk(const Mask& phase, Boundary boundary, const M& m, float* thickness) {
  const Shape& shape = phase.shape();
  auto d2 = squared_distance(phase, boundary, m);
  const auto centres = ball_centres(shape, boundary, m, d2);
  std::vector<uint32_t> scratch;
  uint32_t* next;
  if constexpr (std::is_same_v<typename M::value_type, uint32_t>) {
    next = d2.data();  // the distances live on in `centres`; reuse their 4 bytes per voxel
  } else {
    std::vector<typename M::value_type>().swap(d2);
    scratch.resize(static_cast<std::size_t>(shape.voxels()));
    next = scratch.data();
  }
  return paint_balls(shape, boundary, m, centres, next, thickness);
}

template <class F>
auto with_metric(const Spacing& s, F&& f) {
  return s.isotropic() ? f(voxel_metric(s)) : f(physical_metric(s));
}

}  // namespace

Volume<float> local_thickness(const Mask& phase, Boundary boundary) {
  require_phase(phase);
  Volume<float> thickness(phase.shape(), phase.spacing(), 0.0f);
  with_metric(phase.spacing(),
              [&](const auto& m) { return thickness_walk(phase, boundary, m, thickness.data()); });
  return thickness;
}

PsdCounts psd_counts(const Mask& phase, Boundary boundary, const Bins& bins) {
  require_phase(phase);
  const Coverage cov = with_metric(
      phase.spacing(), [&](const auto& m) { return thickness_walk(phase, boundary, m, nullptr); });
  return counts_from_coverage(cov, bins, count_phase(phase));
}

}  // namespace poreforge::cpu
