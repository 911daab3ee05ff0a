#pragma once
/// Objective terms that are one integer count of the whole structure, which a swap changes
/// only in the two voxels' 3×3×3 neighbourhoods, against a target count:
/// - `euler`: the Euler characteristic χ of the 26-connected pore (6-connected solid), voxels
///   outside the box solid (DESIGN §1, Ohser–Mücklich) — components − tunnels + cavities. PSD
///   and S2 leave it free, and swaps that keep the pore connected can still close loops: a
///   reconstruction fitted to them alone ends with far more tunnels than the rock;
/// - `surface`: the pore–solid faces inside the box, the face count of the specific surface.
///   S2 fixes it only through one lag among hundreds, and a structure roughened by swaps has
///   short chords in both phases.
/// The square is the relative error ((count − target) / target)². apply_swap (step.hpp) adds
/// each swap's change before it writes the phases, and an undo is the reverse swap's change.
#include <cstdint>

#include "poreforge/euler.hpp"
#include "poreforge/host_device.hpp"

namespace poreforge::anneal::terms {

/// The 27 voxels around v (the centre included) as bits (dx+1) + 3(dy+1) + 9(dz+1), set where
/// pore; outside the box reads as solid. `now_solid` (−1: none) reads as solid whatever
/// `pore` says: the state after the first half of a swap.
PF_HD uint32_t cube_bits(const uint8_t* pore, const int64_t* extent, int64_t v, int64_t now_solid) {
  const int64_t nx = extent[0], ny = extent[1], nz = extent[2];
  const int64_t x = v % nx, y = (v / nx) % ny, z = v / (nx * ny);
  uint32_t bits = 0;
  for (int dz = -1; dz <= 1; ++dz) {
    if (z + dz < 0 || z + dz >= nz) continue;
    for (int dy = -1; dy <= 1; ++dy) {
      if (y + dy < 0 || y + dy >= ny) continue;
      for (int dx = -1; dx <= 1; ++dx) {
        if (x + dx < 0 || x + dx >= nx) continue;
        const int64_t u = v + dx + nx * (dy + ny * dz);
        if (u != now_solid && pore[u]) bits |= 1u << ((dx + 1) + 3 * (dy + 1) + 9 * (dz + 1));
      }
    }
  }
  return bits;
}

/// Change of the pore–solid face count when the centre of `bits` (a cube_bits) flips: its face
/// neighbours inside the box of its own phase become interfaces, those of the other stop being.
PF_HD int64_t face_flip_delta(uint32_t bits, uint32_t inside_faces) {
  const bool centre = (bits >> 13) & 1u;
  const int faces[6] = {4, 10, 12, 14, 16, 22};
  int same = 0, other = 0;
  for (int c : faces) {
    if (!((inside_faces >> c) & 1u)) continue;
    if (bool((bits >> c) & 1u) == centre) ++same;
    else ++other;
  }
  return same - other;
}

/// The face neighbours of v that lie inside the box, as cube bits.
PF_HD uint32_t inside_faces(const int64_t* extent, int64_t v) {
  const int64_t c[3] = {v % extent[0], (v / extent[0]) % extent[1], v / (extent[0] * extent[1])};
  uint32_t bits = 0;
  for (int a = 0; a < 3; ++a) {
    const int step = a == 0 ? 1 : a == 1 ? 3 : 9;
    if (c[a] > 0) bits |= 1u << (13 - step);
    if (c[a] + 1 < extent[a]) bits |= 1u << (13 + step);
  }
  return bits;
}

/// The cubes around a swap's voxels, read once for every count term: `to_solid`'s in the
/// state before the swap, `to_pore`'s in the state after `to_solid` flipped (it flips first).
struct SwapCubes {
  uint32_t to_solid = 0, to_pore = 0;
  uint32_t to_solid_faces = 0, to_pore_faces = 0;  ///< their face neighbours inside the box
};

PF_HD SwapCubes swap_cubes(const uint8_t* pore, const int64_t* extent, int64_t to_solid, int64_t to_pore) {
  SwapCubes c;
  c.to_solid = cube_bits(pore, extent, to_solid, -1);
  c.to_pore = cube_bits(pore, extent, to_pore, to_solid);
  c.to_solid_faces = inside_faces(extent, to_solid);
  c.to_pore_faces = inside_faces(extent, to_pore);
  return c;
}

struct Count {
  enum Kind : int { euler = 0, surface = 1 };
  int kind = euler;
  int64_t* value = nullptr;  ///< the count; null when the term is off (nothing is counted)
  double target = 0;         ///< the count aimed at (on this grid)
  int entries = 0;           ///< 1 when the term is weighted, else 0

  PF_HD double square(int) const {
    const double scale = target != 0 ? (target < 0 ? -target : target) : 1.0;
    const double d = (double(*value) - target) / scale;
    return d * d;
  }

  /// The change of the count by a swap, from the cubes around its voxels (SwapCubes).
  PF_HD int64_t change(const SwapCubes& c) const {
    if (kind == euler) return (detail::euler_flip_delta8(c.to_solid) + detail::euler_flip_delta8(c.to_pore)) / 8;
    return face_flip_delta(c.to_solid, c.to_solid_faces) + face_flip_delta(c.to_pore, c.to_pore_faces);
  }

  /// Adds the swap's change (before the phases are written).
  PF_HD void on_swap(const SwapCubes& c) const {
    if (value) *value += change(c);
  }
};

}  // namespace poreforge::anneal::terms
