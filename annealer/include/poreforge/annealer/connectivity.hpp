#pragma once
/// Proposals that never break the pore space apart, for both loops. Swaps
/// scored by PSD and S2 alone fragment the pore: a voxel in a throat is as cheap to remove as
/// one in a pore's middle, and a voxel in a pore's middle as cheap as one at its wall (leaving
/// a solid speck inside the pore). With `keep_pore_connected` a swap must pass O(1) tests on
/// the two voxels' 3×3×3 neighbourhoods, so that no 6-connected cluster of either phase splits
/// and none appears:
/// - the pore voxel leaving: its pore face neighbours stay 6-connected to each other inside the
///   neighbourhood without it, and it touches solid through a face;
/// - the solid voxel joining the pore: the same with the phases exchanged — its solid face
///   neighbours stay joined, and it touches pore through a face other than the leaving voxel's
///   (and is not that voxel's only solid face neighbour).
/// What swaps still change is the loops: a joining voxel may close one (a throat between two
/// parts of a pore), a leaving one may open one.
/// Connectivity is the box's (faces do not wrap), whatever the annealing boundary: it is the
/// sample's connectivity `compare` measures, and what flows through it.
#include <cstdint>

#include "poreforge/host_device.hpp"

namespace poreforge::anneal {

/// The 3×3×3 neighbourhood of v as 27 bits, bit (dx+1) + 3(dy+1) + 9(dz+1): `pore` where that
/// voxel is pore, `inside` where it lies in the box (outside voxels belong to neither phase);
/// the centre bit is left out of both. `now_solid` (−1: none) reads as solid whatever `pore`
/// says: the state after the first half of a swap.
struct Neighbourhood {
  uint32_t pore = 0, inside = 0;
  PF_HD uint32_t solid() const { return inside & ~pore; }
};

PF_HD Neighbourhood neighbourhood(const uint8_t* pore, const int64_t* extent, int64_t v, int64_t now_solid = -1) {
  const int64_t nx = extent[0], ny = extent[1], nz = extent[2];
  const int64_t x = v % nx, y = (v / nx) % ny, z = v / (nx * ny);
  Neighbourhood n;
  for (int dz = -1; dz <= 1; ++dz) {
    if (z + dz < 0 || z + dz >= nz) continue;
    for (int dy = -1; dy <= 1; ++dy) {
      if (y + dy < 0 || y + dy >= ny) continue;
      for (int dx = -1; dx <= 1; ++dx) {
        if (x + dx < 0 || x + dx >= nx || (dx == 0 && dy == 0 && dz == 0)) continue;
        const uint32_t bit = 1u << ((dx + 1) + 3 * (dy + 1) + 9 * (dz + 1));
        n.inside |= bit;
        const int64_t u = v + dx + nx * (dy + ny * dz);
        if (u != now_solid && pore[u]) n.pore |= bit;
      }
    }
  }
  return n;
}

/// Calls f(u) for every voxel u of v's 3×3×3 cube that lies in the box, v itself included.
template <class F>
PF_HD void for_each_in_cube(const int64_t* extent, int64_t v, F&& f) {
  const int64_t nx = extent[0], ny = extent[1], nz = extent[2];
  const int64_t x = v % nx, y = (v / nx) % ny, z = v / (nx * ny);
  for (int64_t w = z > 0 ? z - 1 : 0; w <= (z + 1 < nz ? z + 1 : z); ++w)
    for (int64_t u = y > 0 ? y - 1 : 0; u <= (y + 1 < ny ? y + 1 : y); ++u)
      for (int64_t t = x > 0 ? x - 1 : 0; t <= (x + 1 < nx ? x + 1 : x); ++t) f((w * ny + u) * nx + t);
}

/// The cells of the 3×3×3 cube that share a face with cell c (as bits).
PF_HD uint32_t cube_face_neighbours(int c) {
  const int x = c % 3, y = (c / 3) % 3, z = c / 9;
  uint32_t out = 0;
  if (x > 0) out |= 1u << (c - 1);
  if (x < 2) out |= 1u << (c + 1);
  if (y > 0) out |= 1u << (c - 3);
  if (y < 2) out |= 1u << (c + 3);
  if (z > 0) out |= 1u << (c - 9);
  if (z < 2) out |= 1u << (c + 9);
  return out;
}

constexpr uint32_t kCentreBit = 1u << 13;
/// The six face neighbours of the centre.
constexpr uint32_t kFaceBits = (1u << 4) | (1u << 10) | (1u << 12) | (1u << 14) | (1u << 16) | (1u << 22);
/// The 18-neighbourhood: the cube without its centre and its eight corners.
constexpr uint32_t kN18Bits = 0x7FFFFFFu & ~kCentreBit & ~((1u << 0) | (1u << 2) | (1u << 6) | (1u << 8) |
                                                         (1u << 18) | (1u << 20) | (1u << 24) | (1u << 26));

/// Whether the face neighbours among `bits` (one phase of a neighbourhood) are one 6-connected
/// set inside the 18-neighbourhood, the centre left out: the centre leaving that phase splits
/// none of its clusters (a path through it can go around it instead).
PF_HD bool removal_keeps_connected(uint32_t bits) {
  const uint32_t faces = bits & kFaceBits;
  if ((faces & (faces - 1)) == 0) return true;  // none or one: nothing to keep joined
  const uint32_t open = bits & kN18Bits;
  uint32_t reached = faces & (~faces + 1);  // the lowest face neighbour
  for (;;) {
    uint32_t grown = reached;
    for (uint32_t r = reached; r; r &= r - 1) {
      int c = 0;
      while (!((r >> c) & 1u)) ++c;
      grown |= cube_face_neighbours(c) & open;
    }
    if (grown == reached) break;
    reached = grown;
  }
  return (faces & ~reached) == 0;
}

/// The cube cell of u in v's neighbourhood when u is a face neighbour of v, else −1.
PF_HD int face_cell(const int64_t* extent, int64_t v, int64_t u) {
  if (u < 0) return -1;
  const int64_t nx = extent[0], ny = extent[1];
  const int64_t d[3] = {u % nx - v % nx, (u / nx) % ny - (v / nx) % ny, u / (nx * ny) - v / (nx * ny)};
  const int64_t l1 = (d[0] < 0 ? -d[0] : d[0]) + (d[1] < 0 ? -d[1] : d[1]) + (d[2] < 0 ? -d[2] : d[2]);
  return l1 == 1 ? int(13 + d[0] + 3 * d[1] + 9 * d[2]) : -1;
}

/// Whether pore voxel v may become solid: it splits no pore cluster (its pore face
/// neighbours stay joined without it) and starts no solid one (it touches solid by a face).
PF_HD bool may_leave_pore(const uint8_t* pore, const int64_t* extent, int64_t v) {
  const Neighbourhood n = neighbourhood(pore, extent, v);
  return (n.solid() & kFaceBits) != 0 && removal_keeps_connected(n.pore);
}

/// Whether solid voxel u may become pore in the swap that makes pore voxel `leaving` solid:
/// it splits no solid cluster, it joins a pore cluster through a face other than `leaving`'s,
/// and `leaving` keeps a solid face neighbour other than u (so it starts no solid cluster).
PF_HD bool may_join_pore(const uint8_t* pore, const int64_t* extent, int64_t u, int64_t leaving) {
  const Neighbourhood n = neighbourhood(pore, extent, u);
  uint32_t pore_faces = n.pore & kFaceBits;
  const int cell = face_cell(extent, u, leaving);
  if (cell >= 0) {
    pore_faces &= ~(1u << cell);
    const Neighbourhood l = neighbourhood(pore, extent, leaving);
    if ((l.solid() & kFaceBits) == (1u << (26 - cell))) return false;  // u is its only solid face neighbour
  }
  return pore_faces != 0 && removal_keeps_connected(n.solid());
}

}  // namespace poreforge::anneal
