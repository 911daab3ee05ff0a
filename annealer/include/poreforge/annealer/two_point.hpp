#pragma once
/// Directional two-point counts C_a(r) = Σ_v I(v)·I(v + r·e_a), periodic, r = 0 … n_a/2, as
/// exact integers: the full recount of the S2 term, whose counts the loops keep up to date swap
/// by swap (terms/s2.hpp).
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "poreforge/volume.hpp"

namespace poreforge::anneal {

class DirectionalCounts {
 public:
  DirectionalCounts() = default;
  /// Counts from scratch (directional_counts, correlation.hpp).
  explicit DirectionalCounts(const Mask& phase);
  /// Counts known already (kept elsewhere, e.g. on the device): axis a holds n_a/2 + 1 entries.
  DirectionalCounts(Shape shape, std::array<std::vector<int64_t>, 3> counts)
      : m_shape(shape), m_counts(std::move(counts)) {}

  /// S2 along `axis`: counts / N.
  std::vector<double> s2(int axis) const;
  const std::vector<int64_t>& counts(int axis) const { return m_counts[axis]; }
  bool operator==(const DirectionalCounts& o) const { return m_counts == o.m_counts; }

 private:
  Shape m_shape;
  std::array<std::vector<int64_t>, 3> m_counts;
};

}  // namespace poreforge::anneal
