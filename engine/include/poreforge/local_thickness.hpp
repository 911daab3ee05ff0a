#pragma once
/// Exact local thickness (Hildebrand & Rüegsegger) and the PSD-only path (DESIGN §1).
#include "poreforge/backend.hpp"
#include "poreforge/psd.hpp"
#include "poreforge/volume.hpp"

namespace poreforge {

/// Local thickness as a radius in physical units: for each phase voxel x, the largest dt(c)
/// over phase voxels c with |x − c| < dt(c); 0 outside the phase. Float32 of the exact value.
///
/// Algorithm (CPU): exact EDT; drop every centre whose ball lies inside a 26-neighbour's
/// ball (an exact integer test, so no covering ball is lost); paint the remaining balls in
/// decreasing radius, one x-chord per (y, z) row, skipping already painted voxels with a
/// per-row union-find, so each voxel is written once and a chord costs O(1) amortised.
/// Work O(N + Σ r²) over kept centres, memory ≈ 9 bytes per voxel. OpenMP over z-planes.
/// Throws InputError when the phase is empty or has no background (see distance_transform).
Volume<float> local_thickness(const Mask& phase, Boundary boundary,
                              Backend backend = Backend::automatic);

/// The PSD-only path: the same ball painting without the per-voxel map, counting the share
/// of the phase covered by balls of radius ≥ each edge (which is exactly the cumulative PSD).
/// Equals psd_from_thickness(local_thickness(...)) to the count. Memory ≈ 5 bytes per voxel.
PoreSizeDistribution pore_size_distribution(const Mask& phase, Boundary boundary,
                                            const Bins& bins,
                                            Backend backend = Backend::automatic);

}  // namespace poreforge
