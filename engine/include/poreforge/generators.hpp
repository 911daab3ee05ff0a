#pragma once
/// Seeded structure generators. The same seed gives the same volume on every platform:
/// random numbers come from a counter-based hash of (seed, voxel index), not from <random>'s
/// implementation-defined distributions.
#include <cstdint>

#include "poreforge/volume.hpp"

namespace poreforge {

/// Gaussian-filtered white noise thresholded so that exactly round(porosity·N) voxels are
/// phase (1), like PoreSpy's `blobs`: sigma = mean(extent) / (40 · blobiness) voxels,
/// filter truncated at 4 sigma with reflected borders. Throws InputError for porosity
/// outside (0, 1) or blobiness ≤ 0.
Mask generate_blobs(Shape shape, double porosity, double blobiness, uint64_t seed);
/// The Gaussian's width in voxels that generate_blobs uses for `blobiness` on `shape`.
double blob_sigma(Shape shape, double blobiness);

/// Overlapping solid spheres of radius `radius` voxels placed uniformly (periodically
/// wrapped) until the pore fraction drops to `porosity`; pore = 1, like PoreSpy's
/// `overlapping_spheres`. Throws InputError for porosity outside (0, 1) or radius < 1.
Mask generate_spheres(Shape shape, double porosity, double radius, uint64_t seed);

/// Uniform white noise: each voxel is phase with probability `porosity`.
Mask generate_noise(Shape shape, double porosity, uint64_t seed);

}  // namespace poreforge
