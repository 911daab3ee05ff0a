#pragma once
// CPU distance-transform core shared by edt.cpp and local_thickness.cpp.
#include <vector>

#include "../common/metric.hpp"
#include "poreforge/volume.hpp"

namespace poreforge::cpu {

// Squared distances (metric units) of every voxel to the nearest non-phase voxel under
// `boundary`: 0 outside the phase. Throws InputError when some phase voxel has no
// background to measure from.
template <class M>
std::vector<typename M::value_type> squared_distance(const Mask& phase, Boundary boundary,
                                                     const M& metric);

// The metric for a mask: VoxelMetric when the spacing is isotropic.
detail::VoxelMetric voxel_metric(const Spacing& s);
detail::PhysicalMetric physical_metric(const Spacing& s);

}  // namespace poreforge::cpu
