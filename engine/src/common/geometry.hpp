#pragma once
// A volume's extents and boundary as the CUDA kernels (and the host checks of their logic,
// tests/engine/test_row_cuts.cpp) see them: voxel index → coordinates without a divider.
#include <cstdint>

#include "fast_divide.hpp"
#include "metric.hpp"
#include "poreforge/host_device.hpp"
#include "poreforge/volume.hpp"

namespace poreforge::detail {

// The largest squared distance (metric units) a voxel of this shape can have: it bounds the
// containment tables, the radius bands and the tallies of distances.
template <class M>
typename M::value_type max_squared_distance(const Shape& s, Boundary b, const M& m) {
  int64_t reach[3];
  for (int a = 0; a < 3; ++a) {
    const int64_t n = s.extent(a);
    reach[a] = n == 1 ? 0 : b == Boundary::periodic ? n / 2 : b == Boundary::wall ? (n + 1) / 2 : n - 1;
  }
  return squared_norm(m, reach[0], reach[1], reach[2]);
}

struct Geometry {
  int64_t nx, ny, nz;
  Boundary boundary;
  FastDivisor by_nx, by_ny, by_plane;

  static Geometry of(const Shape& s, Boundary b) {
    return {s.nx, s.ny, s.nz, b, FastDivisor(uint32_t(s.nx)), FastDivisor(uint32_t(s.ny)), FastDivisor(uint32_t(s.nx * s.ny))};
  }
  PF_HD void split(uint32_t index, int64_t& x, int64_t& y, int64_t& z) const {
    const uint32_t row = by_nx.divide(index);
    x = index - row * uint32_t(nx);
    z = by_ny.divide(row);
    y = row - uint32_t(z) * uint32_t(ny);
  }
  PF_HD int64_t extent(int axis) const { return axis == 0 ? nx : axis == 1 ? ny : nz; }
  // Flat axes (extent 1) have no faces: the boundary mode does not apply along them.
  PF_HD Boundary along(int axis) const { return extent(axis) > 1 ? boundary : Boundary::open; }
};

}  // namespace poreforge::detail
