#pragma once
// Host-side entry of the CUDA component labelling, for the dispatcher (no CUDA types).
#include <cstdint>
#include <vector>

#include "poreforge/measures.hpp"

namespace poreforge::cuda {

/// Per voxel the index of its component's first voxel in raster order (detail::kNoRoot
/// outside the phase), as cpu::component_roots. Allocates per call; synchronizes.
std::vector<uint32_t> component_roots(const Mask& phase, Adjacency adjacency);

}  // namespace poreforge::cuda
