#include "poreforge/annealer/two_point.hpp"

#include "poreforge/correlation.hpp"

namespace poreforge::anneal {

DirectionalCounts::DirectionalCounts(const Mask& phase) : m_shape(phase.shape()) {
  for (int a = 0; a < 3; ++a) m_counts[a] = directional_counts(phase, a);
}

std::vector<double> DirectionalCounts::s2(int axis) const {
  std::vector<double> out(m_counts[axis].size());
  const double n = double(m_shape.voxels());
  for (std::size_t r = 0; r < out.size(); ++r) out[r] = double(m_counts[axis][r]) / n;
  return out;
}

}  // namespace poreforge::anneal
