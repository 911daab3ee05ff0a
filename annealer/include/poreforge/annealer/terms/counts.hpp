#pragma once
/// Objective terms that are one integer count of the whole structure, which a swap changes
/// only in the two voxels' 3×3×3 neighbourhoods, against a target count:
/// - `euler`: the Euler characteristic χ of the 26-connected pore (6-connected solid), voxels
///   outside the box solid (DESIGN §1, Ohser–Mücklich) — components − tunnels + cavities. PSD
///   and S2 leave it free, and swaps that keep the pore connected can still close loops: a
///   reconstruction fitted to them alone ends with far more tunnels than the rock;
/// - `surface`: the marching-cubes area of the pore–solid interface over the cells inside the
///   box (measures.hpp, the estimator of `compare`'s specific surface), in whole quanta of a
///   per-configuration table (`quanta`). S2 fixes the surface only through one lag among
///   hundreds. A face count is not enough: the chord terms already fix the faces along each
///   axis, but not how they meet, and swaps make outlines of one-voxel steps — the faces of a
///   smooth wall with more area, a specific surface above every real sub-volume's.
/// The square is the relative error ((count − target) / target)². apply_swap (step.hpp) adds
/// each swap's change before it writes the phases, and an undo is the reverse swap's change.
#include <cstdint>

#include "poreforge/annealer/connectivity.hpp"
#include "poreforge/euler.hpp"
#include "poreforge/host_device.hpp"

namespace poreforge::anneal::terms {

/// Calls f(before, after) for each of the eight 2×2×2 cells that hold the centre of `bits`
/// (pore bits of a 3×3×3 cube, the centre's included) and lie inside the box (all their voxels
/// in `inside`, the centre's bit aside): the cell's configuration (bit dx + 2·dy + 4·dz of its
/// pore voxels) before and after the centre flips.
template <class F>
PF_HD void for_each_flipped_cell(uint32_t bits, uint32_t inside, F&& f) {
  inside |= kCentreBit;
  for (int corner = 0; corner < 8; ++corner) {
    const int i = corner & 1, j = (corner >> 1) & 1, k = (corner >> 2) & 1;
    unsigned configuration = 0, centre = 0;
    bool in_box = true;
    for (unsigned v = 0; v < 8 && in_box; ++v) {
      // Voxel v of the cell that starts at offset (i − 1, j − 1, k − 1) from the centre.
      const int bit = (i + int(v & 1u)) + 3 * (j + int((v >> 1) & 1u)) + 9 * (k + int((v >> 2) & 1u));
      in_box = (inside >> bit) & 1u;
      if ((bits >> bit) & 1u) configuration |= 1u << v;
      if (bit == 13) centre = 1u << v;
    }
    if (in_box) f(configuration, configuration ^ centre);
  }
}

/// Change of the surface term's count when the centre of `bits` flips: each cell's `quanta`
/// (indexed by configuration) after less before (for_each_flipped_cell).
PF_HD int64_t area_flip_delta(uint32_t bits, uint32_t inside, const int64_t* quanta) {
  int64_t delta = 0;
  for_each_flipped_cell(bits, inside, [&](unsigned before, unsigned after) { delta += quanta[after] - quanta[before]; });
  return delta;
}

/// The cubes around a swap's voxels (pore bits with the centre's, connectivity.hpp's layout),
/// read once for every count term: `to_solid`'s in the state before the swap, `to_pore`'s in
/// the state after `to_solid` flipped (it flips first).
struct SwapCubes {
  uint32_t to_solid = 0, to_pore = 0;
  uint32_t to_solid_inside = 0, to_pore_inside = 0;  ///< their neighbours inside the box
};

PF_HD SwapCubes swap_cubes(const uint8_t* pore, const int64_t* extent, int64_t to_solid, int64_t to_pore) {
  const Neighbourhood a = neighbourhood(pore, extent, to_solid), b = neighbourhood(pore, extent, to_pore, to_solid);
  SwapCubes c;
  c.to_solid = a.pore | (pore[to_solid] ? kCentreBit : 0u);
  c.to_pore = b.pore | (to_pore != to_solid && pore[to_pore] ? kCentreBit : 0u);
  c.to_solid_inside = a.inside;
  c.to_pore_inside = b.inside;
  return c;
}

struct Count {
  enum Kind : int { euler = 0, surface = 1 };
  int kind = euler;
  int64_t* value = nullptr;  ///< the count; null when the term is off (nothing is counted)
  double target = 0;         ///< the count aimed at (on this grid)
  int entries = 0;           ///< 1 when the term is weighted, else 0
  /// surface: each configuration's marching-cubes area in quanta (256 entries; surface_quanta)
  const int64_t* quanta = nullptr;

  PF_HD double square(int) const {
    const double scale = target != 0 ? (target < 0 ? -target : target) : 1.0;
    const double d = (double(*value) - target) / scale;
    return d * d;
  }

  /// The change of the count by a swap, from the cubes around its voxels (SwapCubes).
  PF_HD int64_t change(const SwapCubes& c) const {
    if (kind == euler) return (detail::euler_flip_delta8(c.to_solid) + detail::euler_flip_delta8(c.to_pore)) / 8;
    return area_flip_delta(c.to_solid, c.to_solid_inside, quanta) +
           area_flip_delta(c.to_pore, c.to_pore_inside, quanta);
  }

  /// Adds the swap's change (before the phases are written).
  PF_HD void on_swap(const SwapCubes& c) const {
    if (value) *value += change(c);
  }
};

}  // namespace poreforge::anneal::terms
