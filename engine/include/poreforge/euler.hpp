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
#include "poreforge/host_device.hpp"

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

// 8·Δχ of flipping the centre voxel of a 3×3×3 neighbourhood: bit (dx + 1) + 3·(dy + 1) +
// 9·(dz + 1) of `neighbourhood` is the voxel at offset (dx, dy, dz) (0 outside the box). The
// flip changes the 8 configurations of the corners of the centre voxel.
PF_HD constexpr int euler_flip_delta8(unsigned long neighbourhood) {
  int delta = 0;
  for (unsigned corner = 0; corner < 8; ++corner) {
    const int i = int(corner & 1u), j = int((corner >> 1) & 1u), k = int((corner >> 2) & 1u);
    unsigned c = 0;
    for (unsigned v = 0; v < 8; ++v) {
      // Voxel v of the corner (x + i, y + j, z + k) lies at offset (i − 1 + vx, …).
      const int dx = i - 1 + int(v & 1u), dy = j - 1 + int((v >> 1) & 1u), dz = k - 1 + int((v >> 2) & 1u);
      if ((neighbourhood >> ((dx + 1) + 3 * (dy + 1) + 9 * (dz + 1))) & 1ul) c |= 1u << v;
    }
    const unsigned centre = 1u << ((1 - i) + 2 * (1 - j) + 4 * (1 - k));
    delta += euler_weight8(c ^ centre) - euler_weight8(c);
  }
  return delta;
}

}  // namespace poreforge::detail
