#pragma once
// What the component-labelling backends share: the root array they produce and its canonical
// numbering.
#include <cstdint>
#include <vector>

#include "poreforge/measures.hpp"

namespace poreforge::detail {

/// Marks a voxel outside the phase in a root array.
constexpr uint32_t kNoRoot = 0xFFFFFFFFu;

/// Either backend's check before labelling: a valid shape whose voxel numbers stay below
/// kNoRoot. Throws InputError.
void require_labelable(const Shape& shape);

/// Canonical labels from `roots` (per voxel: the index of its component's first voxel in
/// raster order, kNoRoot outside the phase), with sizes and the faces each component touches.
/// O(N), in place on `roots`.
ComponentLabels canonical_components(const Mask& phase, std::vector<uint32_t> roots, Backend backend);

}  // namespace poreforge::detail
