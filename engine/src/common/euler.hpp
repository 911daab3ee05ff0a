#pragma once
// Per-corner Euler weights of 2×2×2 configurations (Ohser–Mücklich), shared by the full
// count and the flip update; constexpr so that device code can use them too.
//
// The phase is a union of closed unit cubes. Around one lattice corner sit 8 voxels; bit
// dx + 2·dy + 4·dz of a configuration is voxel (dx, dy, dz) of that 2×2×2 block. Of the
// cubical complex's cells meeting the corner: the corner itself (in the union when any voxel
// is), 6 edges (an edge along +x is in it when any of the 4 voxels with dx = 1 is; it is
// shared by 2 corners), 12 faces (a face is in it when either of its 2 voxels is; shared by
// 4 corners) and 8 cubes (shared by 8). Multiplying by 8 keeps every weight an integer.
#include "host_device.hpp"

namespace poreforge::detail {

PF_HD constexpr int popcount8(unsigned c) {
  int n = 0;
  for (int b = 0; b < 8; ++b) n += (c >> b) & 1u;
  return n;
}

PF_HD constexpr int euler_weight8(unsigned c) {
  c &= 0xFFu;
  if (c == 0) return 0;
  int w = 8;  // the corner
  // Edges: for each axis a and side s, the 4 voxels whose bit a equals s.
  for (int a = 0; a < 3; ++a)
    for (int s = 0; s < 2; ++s) {
      bool any = false;
      for (unsigned v = 0; v < 8; ++v)
        if (((v >> a) & 1u) == unsigned(s) && ((c >> v) & 1u)) any = true;
      w -= any ? 4 : 0;
    }
  // Faces: pairs of voxels differing only in bit a.
  for (int a = 0; a < 3; ++a)
    for (unsigned v = 0; v < 8; ++v) {
      if ((v >> a) & 1u) continue;
      const unsigned u = v | (1u << a);
      w += (((c >> v) | (c >> u)) & 1u) ? 2 : 0;
    }
  return w - popcount8(c);
}

}  // namespace poreforge::detail
