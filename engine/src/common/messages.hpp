#pragma once
// Error messages both backends raise, so a user sees the same words whichever ran.
#include <string>

#include "poreforge/volume.hpp"

namespace poreforge::detail {

inline std::string empty_phase_message() {
  return "the phase is empty: no voxel of the volume has the selected label";
}

inline std::string no_background_message(Boundary boundary) {
  if (boundary == Boundary::wall)  // only a 1×1×1 volume: walls stand on faces, flat axes have none
    return "the phase fills the whole volume, and a volume with every extent 1 has no faces for"
           " boundary 'wall' to put background beyond: there is no background voxel to measure"
           " distances to";
  return "the phase fills the whole volume: with boundary '" + to_string(boundary) +
         "' there is no background voxel to measure distances to"
         " (use boundary 'wall' to treat the outside as background)";
}

}  // namespace poreforge::detail
