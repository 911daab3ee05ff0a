#pragma once
// Brute-force references: the DESIGN §1 formulas evaluated literally, O(N²), for small volumes.
// They share only the squared-norm arithmetic (engine/src/common/metric.hpp) with the engine,
// so that ties are decided identically; the search itself is exhaustive.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "common/metric.hpp"
#include "poreforge/volume.hpp"

namespace poreforge::testing {

// Per-axis offset from c to b under the boundary: the minimal image when periodic.
inline int64_t offset(int64_t b, int64_t c, int64_t n, Boundary boundary) {
  int64_t d = b - c;
  if (boundary == Boundary::periodic) {
    if (std::abs(d - n) < std::abs(d)) d -= n;
    if (std::abs(d + n) < std::abs(d)) d += n;
  }
  return d;
}

// Squared distance of every voxel to the nearest non-phase voxel (M::infinity when none).
template <class M>
std::vector<typename M::value_type> brute_squared_distance(const Mask& phase, Boundary boundary, const M& m) {
  using V = typename M::value_type;
  const Shape s = phase.shape();
  std::vector<int64_t> bx, by, bz;
  for (int64_t z = 0; z < s.nz; ++z)
    for (int64_t y = 0; y < s.ny; ++y)
      for (int64_t x = 0; x < s.nx; ++x)
        if (!phase(x, y, z)) {
          bx.push_back(x);
          by.push_back(y);
          bz.push_back(z);
        }
  std::vector<V> d2(static_cast<std::size_t>(s.voxels()), V(0));
  for (int64_t z = 0; z < s.nz; ++z)
    for (int64_t y = 0; y < s.ny; ++y)
      for (int64_t x = 0; x < s.nx; ++x) {
        if (!phase(x, y, z)) continue;
        V best = M::infinity;
        for (std::size_t k = 0; k < bx.size(); ++k)
          best = std::min(best, detail::squared_norm(m, offset(bx[k], x, s.nx, boundary),
                                                     offset(by[k], y, s.ny, boundary),
                                                     offset(bz[k], z, s.nz, boundary)));
        if (boundary == Boundary::wall) {  // the wall voxels one step beyond each face
          const int64_t c[3] = {x, y, z};
          for (int a = 0; a < 3; ++a) {
            if (s.extent(a) == 1) continue;  // flat axis: no faces
            for (int64_t d : {c[a] + 1, s.extent(a) - c[a]}) {
              const int64_t o[3] = {a == 0 ? d : 0, a == 1 ? d : 0, a == 2 ? d : 0};
              best = std::min(best, detail::squared_norm(m, o[0], o[1], o[2]));
            }
          }
        }
        d2[phase.index(x, y, z)] = best;
      }
  return d2;
}

// Local thickness (radius, physical units, float32 as stored): max dt(c) over phase c with
// |x − c|² < dt(c)², given the squared distances.
template <class M>
std::vector<float> brute_local_thickness(const Mask& phase, Boundary boundary, const M& m,
                                         const std::vector<typename M::value_type>& d2) {
  const Shape s = phase.shape();
  std::vector<float> lt(static_cast<std::size_t>(s.voxels()), 0.0f);
  std::vector<int64_t> cx, cy, cz;
  for (int64_t z = 0; z < s.nz; ++z)
    for (int64_t y = 0; y < s.ny; ++y)
      for (int64_t x = 0; x < s.nx; ++x)
        if (phase(x, y, z)) {
          cx.push_back(x);
          cy.push_back(y);
          cz.push_back(z);
        }
  for (std::size_t i = 0; i < cx.size(); ++i) {
    float best = 0;
    for (std::size_t k = 0; k < cx.size(); ++k) {
      const auto r2 = d2[phase.index(cx[k], cy[k], cz[k])];
      const auto n2 = detail::squared_norm(m, offset(cx[i], cx[k], s.nx, boundary),
                                           offset(cy[i], cy[k], s.ny, boundary),
                                           offset(cz[i], cz[k], s.nz, boundary));
      if (n2 < r2) best = std::max(best, m.radius(r2));
    }
    lt[phase.index(cx[i], cy[i], cz[i])] = best;
  }
  return lt;
}

}  // namespace poreforge::testing
