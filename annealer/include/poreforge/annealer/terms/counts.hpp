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

#include "poreforge/annealer/connectivity.hpp"
#include "poreforge/euler.hpp"
#include "poreforge/host_device.hpp"

namespace poreforge::anneal::terms {

/// Change of the pore–solid face count when the centre of `bits` (pore bits of a 3×3×3 cube, the
/// centre's included) flips: its face neighbours inside the box (`inside_faces`) of its own
/// phase become interfaces, those of the other stop being.
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

/// The cubes around a swap's voxels (pore bits with the centre's, connectivity.hpp's layout),
/// read once for every count term: `to_solid`'s in the state before the swap, `to_pore`'s in
/// the state after `to_solid` flipped (it flips first).
struct SwapCubes {
  uint32_t to_solid = 0, to_pore = 0;
  uint32_t to_solid_faces = 0, to_pore_faces = 0;  ///< their face neighbours inside the box
};

PF_HD SwapCubes swap_cubes(const uint8_t* pore, const int64_t* extent, int64_t to_solid, int64_t to_pore) {
  const Neighbourhood a = neighbourhood(pore, extent, to_solid), b = neighbourhood(pore, extent, to_pore, to_solid);
  SwapCubes c;
  c.to_solid = a.pore | (pore[to_solid] ? kCentreBit : 0u);
  c.to_pore = b.pore | (to_pore != to_solid && pore[to_pore] ? kCentreBit : 0u);
  c.to_solid_faces = a.inside & kFaceBits;
  c.to_pore_faces = b.inside & kFaceBits;
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
