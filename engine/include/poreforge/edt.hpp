#pragma once
/// Exact Euclidean distance transform (DESIGN §1).
#include <cstdint>

#include "poreforge/backend.hpp"
#include "poreforge/volume.hpp"

namespace poreforge {

/// Squared distance, in voxel units, from the centre of each phase voxel to the centre of
/// the nearest voxel not in the phase under `boundary`; 0 outside the phase. Exact integers
/// (spacing ignored: this is the isotropic form). Separable lower-envelope passes
/// (Felzenszwalb–Huttenlocher), O(N) work, OpenMP over lines.
/// Throws InputError when the phase has no background to measure from (the whole volume is
/// phase and `boundary` is open or periodic).
Volume<uint32_t> squared_distance_voxels(const Mask& phase, Boundary boundary,
                                          Backend backend = Backend::automatic);

/// Euclidean distance in physical units (the mask's spacing, anisotropic allowed); 0 outside
/// the phase. Same algorithm and errors as squared_distance_voxels.
Volume<float> distance_transform(const Mask& phase, Boundary boundary,
                                 Backend backend = Backend::automatic);

}  // namespace poreforge
