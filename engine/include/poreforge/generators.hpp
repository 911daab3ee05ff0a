#pragma once
/// Seeded structure generators. The same seed gives the same volume on every platform:
/// random numbers come from a counter-based hash of (seed, voxel index), not from <random>'s
/// implementation-defined distributions.
#include <array>
#include <cstdint>
#include <vector>

#include "poreforge/volume.hpp"

namespace poreforge {

/// SplitMix64's finaliser (Steele, Lea & Flood 2014): a bijective, well-mixed 64-bit hash.
/// Every seeded draw of poreforge hashes (seed, counter) through it, so one definition keeps
/// them all the same on every platform.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
/// SplitMix64's increment (2^64 over the golden ratio), the step between its states.
inline constexpr uint64_t golden_gamma = 0x9E3779B97F4A7C15ull;
/// SplitMix64's output for `state`: the state advanced by golden_gamma, then mixed.
inline uint64_t splitmix64(uint64_t state) { return mix64(state + golden_gamma); }

/// Largest blobiness the blob generators accept (sigma a millionth of the usual).
inline constexpr double max_blobiness = 1e6;

/// Gaussian-filtered white noise thresholded so that exactly round(porosity·N) voxels are
/// phase (1), like PoreSpy's `blobs`: sigma = mean(extent) / (40 · blobiness) voxels,
/// filter truncated at 4 sigma with reflected borders. Throws InputError for porosity
/// outside (0, 1), blobiness ≤ 0 or above max_blobiness, or a sigma wider than the volume.
Mask generate_blobs(Shape shape, double porosity, double blobiness, uint64_t seed);
/// The smoothed noise that generate_blobs thresholds (its lowest values become phase), for
/// callers that shape a blobs structure further. Throws InputError for blobiness ≤ 0.
std::vector<float> blob_field(Shape shape, double blobiness, uint64_t seed);
/// The `count` lowest values of `field` as phase (1), ties broken by index so that exactly
/// `count` voxels are phase. Throws InputError when `field` does not have one value per voxel.
Mask lowest_values(const std::vector<float>& field, Shape shape, int64_t count);
/// The Gaussian's width in voxels that generate_blobs uses for `blobiness` on `shape`.
double blob_sigma(Shape shape, double blobiness);

/// Overlapping solid spheres of radius `radius` voxels placed uniformly (periodically
/// wrapped) until the pore fraction drops to `porosity`; pore = 1, like PoreSpy's
/// `overlapping_spheres`. With `radius_spread` > 0 the radii are log-normal with mean `radius`
/// and that coefficient of variation (at least 1 voxel each; the centres are the same as
/// with one radius), a polydisperse pack. `stretch` scales each sphere's semi-axis along x, y,
/// z (ellipsoids of semi-axes radius·stretch[a], about the same centres, with the same radii
/// drawn); {1, 1, 1} gives the spheres. Throws InputError for porosity outside (0, 1), radius
/// < 1 (or not finite), a spread outside [0, 10] or a stretch outside [0.1, 10]; semi-axes
/// beyond the volume's diagonal cover it all with one ellipsoid.
Mask generate_spheres(Shape shape, double porosity, double radius, uint64_t seed, double radius_spread = 0,
                      const std::array<double, 3>& stretch = {1.0, 1.0, 1.0});

/// Uniform white noise: each voxel is phase with probability `porosity`.
Mask generate_noise(Shape shape, double porosity, uint64_t seed);

}  // namespace poreforge
