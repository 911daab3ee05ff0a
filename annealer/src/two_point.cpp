#include "poreforge/annealer/two_point.hpp"

namespace poreforge::anneal {

DirectionalCounts::DirectionalCounts(const Mask& phase) : m_shape(phase.shape()) {
  const Shape s = m_shape;
  for (int a = 0; a < 3; ++a) {
    const int64_t n = s.extent(a), stride = a == 0 ? 1 : a == 1 ? s.nx : s.nx * s.ny;
    m_counts[a].assign(static_cast<std::size_t>(n / 2 + 1), 0);
    for (int64_t z = 0; z < s.nz; ++z)
      for (int64_t y = 0; y < s.ny; ++y)
        for (int64_t x = 0; x < s.nx; ++x) {
          if (!phase(x, y, z)) continue;
          const int64_t c[3] = {x, y, z}, i = phase.index(x, y, z);
          for (int64_t r = 0; r <= n / 2; ++r) {
            const int64_t shifted = c[a] + r < n ? i + r * stride : i + (r - n) * stride;
            m_counts[a][r] += phase[shifted];
          }
        }
  }
}

std::vector<double> DirectionalCounts::s2(int axis) const {
  std::vector<double> out(m_counts[axis].size());
  const double n = double(m_shape.voxels());
  for (std::size_t r = 0; r < out.size(); ++r) out[r] = double(m_counts[axis][r]) / n;
  return out;
}

}  // namespace poreforge::anneal
