#pragma once
// The kept ball centres of a squared-distance map (step 2 of local_thickness.cpp): every
// phase voxel whose lattice ball is not inside a 26-neighbour's lattice ball. Shared with the
// host check of the CUDA painter's cuts (tests/engine/test_row_cuts.cpp).
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "../common/ball_containment.hpp"
#include "poreforge/volume.hpp"

namespace poreforge::cpu {

template <class M>
struct Centre {
  typename M::value_type r2;
  int64_t index;
};

inline int64_t wrap(int64_t v, int64_t n) {
  v %= n;
  return v < 0 ? v + n : v;
}

// Keeps the centres whose ball is not inside a neighbour's ball; sorted largest first and by
// index within a radius.
template <class M>
std::vector<Centre<M>> ball_centres(const Shape& shape, Boundary boundary, const M& m,
                                    const std::vector<typename M::value_type>& d2) {
  using V = typename M::value_type;
  const bool periodic = boundary == Boundary::periodic;
  const V max_r2 = *std::max_element(d2.begin(), d2.end());
  const detail::BallContainment<M> containment(m, max_r2);
  const detail::ContainmentView<M> table = containment.view();
  const int64_t nx = shape.nx, ny = shape.ny, nz = shape.nz;

  // The neighbour offsets that exist (none along a flat axis).
  struct Neighbour {
    int dx, dy, dz;
    int64_t step;  // linear offset when no face is crossed
  };
  std::vector<Neighbour> neighbours;
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        if ((dx == 0 && dy == 0 && dz == 0) || (dx && nx == 1) || (dy && ny == 1) || (dz && nz == 1)) continue;
        neighbours.push_back({dx, dy, dz, (dz * ny + dy) * nx + dx});
      }

  std::vector<std::vector<Centre<M>>> per_plane(static_cast<std::size_t>(nz));
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t z = 0; z < nz; ++z) {
    auto& out = per_plane[z];
    const bool z_inner = nz == 1 || (z > 0 && z < nz - 1);
    for (int64_t y = 0; y < ny; ++y) {
      const bool yz_inner = z_inner && (ny == 1 || (y > 0 && y < ny - 1));
      for (int64_t x = 0; x < nx; ++x) {
        const int64_t i = (z * ny + y) * nx + x;
        const V r2 = d2[i];
        if (r2 == 0) continue;
        const int64_t thresholds = table.thresholds(r2);
        bool inside = false;
        if (yz_inner && (nx == 1 || (x > 0 && x < nx - 1))) {  // no face crossed: plain offsets
          for (const Neighbour& n : neighbours)
            if (table.inside(r2, thresholds, d2[i + n.step], n.dx, n.dy, n.dz)) {
              inside = true;
              break;
            }
        } else {
          for (const Neighbour& n : neighbours) {
            int64_t c[3] = {x + n.dx, y + n.dy, z + n.dz};
            bool exists = true;
            for (int a = 0; a < 3; ++a)
              if (c[a] < 0 || c[a] >= shape.extent(a)) {
                exists = periodic;
                c[a] = wrap(c[a], shape.extent(a));
              }
            if (exists && table.inside(r2, thresholds, d2[(c[2] * ny + c[1]) * nx + c[0]], n.dx, n.dy, n.dz)) {
              inside = true;
              break;
            }
          }
        }
        if (!inside) out.push_back({r2, i});
      }
    }
  }
  // Planes in order are already sorted by index; a stable sort by radius keeps that.
  std::size_t total = 0;
  for (auto& p : per_plane) total += p.size();
  std::vector<Centre<M>> centres(total);
  if constexpr (std::is_integral_v<V>) {  // counting sort over the integer squared radii
    std::vector<std::size_t> start(static_cast<std::size_t>(max_r2) + 2, 0);
    for (auto& p : per_plane)
      for (const auto& c : p) ++start[max_r2 - c.r2 + 1];
    for (std::size_t k = 1; k < start.size(); ++k) start[k] += start[k - 1];
    for (auto& p : per_plane) {
      for (const auto& c : p) centres[start[max_r2 - c.r2]++] = c;
      std::vector<Centre<M>>().swap(p);
    }
  } else {
    auto out = centres.begin();
    for (auto& p : per_plane) {
      out = std::copy(p.begin(), p.end(), out);
      std::vector<Centre<M>>().swap(p);
    }
    std::stable_sort(centres.begin(), centres.end(), [](const Centre<M>& a, const Centre<M>& b) { return a.r2 > b.r2; });
  }
  return centres;
}

}  // namespace poreforge::cpu
