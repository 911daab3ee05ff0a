// Exact local thickness by ball painting in decreasing radius.
//
// 1. Exact squared EDT (distance.cpp).
// 2. Centres: every phase voxel, less those whose ball lies inside a 26-neighbour's ball
//    (√R'² ≥ √R² + |c − c'|, decided exactly): such a ball adds nothing to the max.
// 3. Sort centres by squared radius, largest first, and paint each ball one x-chord at a time.
//    A voxel's first paint is its local thickness, so later chords skip painted voxels through
//    a per-row union-find ("next unpainted x"), making each chord O(1) amortised. Work is
//    O(N + Σ r²) over the kept centres instead of the O(Σ r³) of plain ball painting.
// 4. Threads own z-planes (y-rows for 2D) round-robin, and each walks all centres in the same
//    order, painting only its own rows: no atomics, no races, deterministic output.
//
// Counting painted voxels at the end of each radius level gives the coverage by balls of
// radius ≥ r, which is the cumulative PSD: the PSD-only path is the same walk with no map.
#include <omp.h>

#include <algorithm>
#include <numeric>
#include <type_traits>

#include "cpu_backend.hpp"
#include "distance.hpp"
#include "poreforge/error.hpp"

namespace poreforge::cpu {
namespace {

using detail::chord_half_width;
using detail::squared_norm;

template <class M>
struct Centre {
  typename M::value_type r2;
  int64_t index;
};

int64_t wrap(int64_t v, int64_t n) {
  v %= n;
  return v < 0 ? v + n : v;
}

// Keeps the centres whose ball is not inside a neighbour's ball; sorted largest first.
template <class M>
std::vector<Centre<M>> ball_centres(const Shape& shape, Boundary boundary, const M& m,
                                    const std::vector<typename M::value_type>& d2) {
  const bool periodic = boundary == Boundary::periodic;
  std::vector<std::vector<Centre<M>>> per_plane(static_cast<std::size_t>(shape.nz));
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t z = 0; z < shape.nz; ++z) {
    auto& out = per_plane[z];
    for (int64_t y = 0; y < shape.ny; ++y)
      for (int64_t x = 0; x < shape.nx; ++x) {
        const int64_t i = (z * shape.ny + y) * shape.nx + x;
        const auto r2 = d2[i];
        if (r2 == 0) continue;
        bool inside = false;
        for (int dz = -1; dz <= 1 && !inside; ++dz) {
          if (dz != 0 && shape.nz == 1) continue;
          int64_t zz = z + dz;
          if (zz < 0 || zz >= shape.nz) {
            if (!periodic) continue;
            zz = wrap(zz, shape.nz);
          }
          for (int dy = -1; dy <= 1 && !inside; ++dy) {
            if (dy != 0 && shape.ny == 1) continue;
            int64_t yy = y + dy;
            if (yy < 0 || yy >= shape.ny) {
              if (!periodic) continue;
              yy = wrap(yy, shape.ny);
            }
            for (int dx = -1; dx <= 1 && !inside; ++dx) {
              if ((dx == 0 && dy == 0 && dz == 0) || (dx != 0 && shape.nx == 1)) continue;
              int64_t xx = x + dx;
              if (xx < 0 || xx >= shape.nx) {
                if (!periodic) continue;
                xx = wrap(xx, shape.nx);
              }
              const auto big2 = d2[(zz * shape.ny + yy) * shape.nx + xx];
              inside = big2 > r2 && M::ball_inside(r2, big2, squared_norm(m, dx, dy, dz));
            }
          }
        }
        if (!inside) out.push_back({r2, i});
      }
  }
  std::size_t total = 0;
  for (auto& p : per_plane) total += p.size();
  std::vector<Centre<M>> centres;
  centres.reserve(total);
  for (auto& p : per_plane) {
    centres.insert(centres.end(), p.begin(), p.end());
    std::vector<Centre<M>>().swap(p);
  }
  std::sort(centres.begin(), centres.end(), [](const Centre<M>& a, const Centre<M>& b) {
    return a.r2 != b.r2 ? a.r2 > b.r2 : a.index < b.index;
  });
  return centres;
}

// "Next possibly unpainted x" for one row, with path compression. Returns the first
// unpainted x ≥ `x`, or some value > `last` when [x, last] is all painted.
inline int64_t first_unpainted(uint32_t* row, int64_t x, int64_t last) {
  int64_t r = x;
  while (r <= last && row[r] != r) r = row[r];
  while (x < r && x <= last) {
    const int64_t following = row[x];
    row[x] = static_cast<uint32_t>(r);
    x = following;
  }
  return r;
}

// The result of painting: for each radius level (largest first) its radius as stored and the
// number of phase voxels covered by balls of that radius or larger.
struct Coverage {
  std::vector<float> level_radius;
  std::vector<int64_t> covered;
};

// Paints every centre's ball into `thickness` (may be null: count only). `next` is N entries
// of scratch. See the file comment for the scheme.
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
  for (std::size_t j = 0; j < levels; ++j)
    coverage.level_radius[j] = m.radius(centres[level_first[j]].r2);
  coverage.covered.assign(levels, 0);

  const int64_t nx = shape.nx, ny = shape.ny, nz = shape.nz;
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < ny * nz; ++row)
    for (int64_t x = 0; x < nx; ++x) next[row * nx + x] = static_cast<uint32_t>(x);

  const bool periodic = boundary == Boundary::periodic;
  const bool own_by_z = nz > 1;
#pragma omp parallel
  {
    const int t = omp_get_thread_num(), threads = omp_get_num_threads();
    std::vector<int64_t> covered(levels, 0);
    int64_t painted = 0;
    auto paint_run = [&](int64_t row, int64_t a, int64_t b, float value) {
      uint32_t* r = next + row * nx;
      for (int64_t x = first_unpainted(r, a, b); x <= b; x = first_unpainted(r, x + 1, b)) {
        if (thickness) thickness[row * nx + x] = value;
        r[x] = static_cast<uint32_t>(x + 1);
        ++painted;
      }
    };
    // Maps an offset coordinate onto the volume: wraps (periodic) or reports outside (−1).
    auto place = [&](int64_t v, int64_t n) -> int64_t {
      if (v >= 0 && v < n) return v;
      return periodic ? wrap(v, n) : -1;
    };
    for (std::size_t j = 0; j < levels; ++j) {
      const float value = coverage.level_radius[j];
      for (std::size_t c = level_first[j]; c < level_first[j + 1]; ++c) {
        const auto r2 = centres[c].r2;
        const int64_t cx = centres[c].index % nx;
        const int64_t cy = (centres[c].index / nx) % ny;
        const int64_t cz = centres[c].index / (nx * ny);
        const int64_t rz = nz > 1 ? chord_half_width(m, r2, 2, 0, 0) : 0;
        for (int64_t dz = -rz; dz <= rz; ++dz) {
          const int64_t z = place(cz + dz, nz);
          if (z < 0 || (own_by_z && z % threads != t)) continue;
          const int64_t ry = ny > 1 ? chord_half_width(m, r2, 1, 0, dz) : 0;
          for (int64_t dy = -ry; dy <= ry; ++dy) {
            const int64_t y = place(cy + dy, ny);
            if (y < 0 || (!own_by_z && y % threads != t)) continue;
            const int64_t w = nx > 1 ? chord_half_width(m, r2, 0, dy, dz) : 0;
            const int64_t row = z * ny + y;
            int64_t a = cx - w, b = cx + w;
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
          }
        }
      }
      covered[j] = painted;
    }
#pragma omp critical
    for (std::size_t j = 0; j < levels; ++j) coverage.covered[j] += covered[j];
  }
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
    throw InputError("the phase is empty: no voxel of the volume has the selected label");
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
