#pragma once
/// Directional two-point counts kept up to date swap by swap: C_a(r) = Σ_v I(v)·I(v + r·e_a),
/// periodic, r = 0 … n_a/2, as exact integers. Flipping voxel p changes C_a(r) only through
/// the pairs (p, p ± r·e_a), so a swap costs O(Σ_a n_a/2) instead of a new FFT.
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "poreforge/volume.hpp"

namespace poreforge::anneal {

class DirectionalCounts {
 public:
  DirectionalCounts() = default;
  /// Counts from scratch (O(N · Σ n_a/2)).
  explicit DirectionalCounts(const Mask& phase);
  /// Counts known already (kept elsewhere, e.g. on the device): axis a holds n_a/2 + 1 entries.
  DirectionalCounts(Shape shape, std::array<std::vector<int64_t>, 3> counts)
      : m_shape(shape), m_counts(std::move(counts)) {}

  /// Updates the counts for voxel `index` changing to `value` (0 or 1) in `phase`, which must
  /// still hold the old value; then writes the new value into `phase`.
  void flip(Mask& phase, int64_t index, uint8_t value);

  /// S2 along `axis`: counts / N.
  std::vector<double> s2(int axis) const;
  const std::vector<int64_t>& counts(int axis) const { return m_counts[axis]; }
  bool operator==(const DirectionalCounts& o) const { return m_counts == o.m_counts; }

 private:
  Shape m_shape;
  std::array<std::vector<int64_t>, 3> m_counts;
};

}  // namespace poreforge::anneal
