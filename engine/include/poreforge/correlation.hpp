#pragma once
/// Two-point probability S2 (DESIGN §1): the probability that two points a lattice vector r
/// apart both lie in the phase, with the volume tiling space (periodic).
#include <cstdint>
#include <vector>

#include "poreforge/volume.hpp"

namespace poreforge {

/// S2 along the three axes, index r = 0 … n/2 voxels (floor), periodic. An axis of extent 1
/// has only r = 0. S2(0) is the phase fraction.
struct DirectionalS2 {
  std::vector<double> x, y, z;
  const std::vector<double>& along(int axis) const { return axis == 0 ? x : axis == 1 ? y : z; }
};

/// S2 averaged over all lattice vectors whose length (physical units, minimal periodic image)
/// rounds to r_k = k·h, h the smallest spacing of a non-flat axis, k = 0 … half the shortest
/// non-flat extent.
struct RadialS2 {
  std::vector<double> r;      ///< physical units
  std::vector<double> s2;
  std::vector<int64_t> vectors;  ///< lattice vectors averaged into each bin
};

struct TwoPointCorrelation {
  DirectionalS2 directional;
  RadialS2 radial;
};

/// Both, from one periodic autocorrelation by FFT (Eigen's FFT, OpenMP over lines):
/// O(N log N) time, 16 bytes per voxel of scratch. CPU.
TwoPointCorrelation two_point_correlation(const Mask& phase);

/// The directional two-point counts along `axis`, exact: C(r) = Σ_v I(v) · I(v + r·e_axis),
/// periodic, r = 0 … n/2 (n the axis's extent). Each line along the axis packed into 64-bit
/// words, its pairs at offset r counted by AND and popcount against the line rotated by r:
/// O(N · n / 128) word operations, a few words of scratch a thread. CPU, OpenMP.
std::vector<int64_t> directional_counts(const Mask& phase, int axis);

/// The directional S2 alone: directional_counts / N along x, y and z, several times faster than
/// the full autocorrelation's FFT for the measures that need only these three curves. Equal to
/// two_point_correlation's directional S2 up to that one's rounding. CPU.
DirectionalS2 directional_s2(const Mask& phase);

}  // namespace poreforge
