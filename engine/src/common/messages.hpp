#pragma once
// Error messages both backends raise, so a user sees the same words whichever ran.
#include <string>

#include "poreforge/volume.hpp"

namespace poreforge::detail {

inline std::string empty_phase_message() {
  return "the phase is empty: no voxel of the volume has the selected label";
}

inline std::string no_background_message(Boundary boundary) {
  return "the phase fills the whole volume: with boundary '" + to_string(boundary) +
         "' there is no background voxel to measure distances to"
         " (use boundary 'wall' to treat the outside as background)";
}

}  // namespace poreforge::detail
