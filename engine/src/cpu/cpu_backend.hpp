#pragma once
// The CPU (OpenMP) backend's entry points; the public functions dispatch here.
#include "poreforge/psd.hpp"
#include "poreforge/volume.hpp"

namespace poreforge::cpu {

Volume<uint32_t> squared_distance_voxels(const Mask& phase, Boundary boundary);
Volume<float> distance_transform(const Mask& phase, Boundary boundary);
Volume<float> local_thickness(const Mask& phase, Boundary boundary);
PsdCounts psd_counts(const Mask& phase, Boundary boundary, const Bins& bins);

}  // namespace poreforge::cpu
