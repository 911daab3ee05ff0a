#pragma once
/// Objective term: the local porosity distribution of the 3×3×3 neighbourhoods (Hilfer's local
/// porosity theory at the smallest measurement cell), split by the centre's phase — how many
/// voxels inside the box (their whole neighbourhood in it) are pore or solid with each number
/// of pore voxels among their 26 neighbours (measures.hpp's local_porosity_histogram) — against
/// the reference's shares of them times this box's such voxels. The 2×2×2 patterns fix how the
/// interface turns within a cell of eight voxels, but not the one-voxel spikes of either phase
/// that a wall of such cells can carry: swaps scored by the other terms leave pore and solid
/// voxels with few of their own phase around them two to four times as often as the rock has
/// them, a ragged outline where the grains leave a smooth one (compare's local porosity
/// measure). The two uniform bins (a pore voxel in pore, a solid one in solid) are left out:
/// porosity and the surface fix them. Squares ((count_b − target_b) / Σ target)², as the
/// patterns term's. apply_swap (step.hpp) moves the 27 neighbourhoods around each flipped voxel
/// between bins before it writes the phases; the counts live in the count terms' block
/// (Objective::attach_counts).
#include <cstdint>

#include "poreforge/host_device.hpp"
#include "poreforge/measures.hpp"

namespace poreforge::anneal::terms {

struct LocalPorosity {
  int64_t* counts = nullptr;  ///< voxels by bin (kLocalPorosityBins); null when the term is off
  int entries = 0;            ///< kLocalPorosityBins when the term is weighted, else 0
  double target[kLocalPorosityBins] = {};
  double scale = 1;  ///< Σ target (1 when it is 0)

  PF_HD double square(int b) const {
    const double d = (double(counts[b]) - target[b]) / scale;
    return d * d;
  }

  /// Moves the neighbourhoods around voxel v to the bins they take when v flips, in `out`
  /// (kLocalPorosityBins counts). The phases are read from `pore`, with voxel `flipped` (−1:
  /// none) read as already flipped: the second voxel of a swap sees the first's change.
  PF_HD void add_flip(const uint8_t* pore, const int64_t* extent, int64_t v, int64_t flipped, int64_t* out) const {
    const int64_t nx = extent[0], ny = extent[1], nz = extent[2];
    const int64_t x = v % nx, y = (v / nx) % ny, z = v / (nx * ny);
    // The 5×5×5 block around v, outside the box read as solid (no neighbourhood reaching there
    // counts).
    uint8_t block[125];
    for (int k = 0; k < 125; ++k) {
      const int64_t bx = x + k % 5 - 2, by = y + (k / 5) % 5 - 2, bz = z + k / 25 - 2;
      uint8_t p = 0;
      if (bx >= 0 && by >= 0 && bz >= 0 && bx < nx && by < ny && bz < nz) {
        const int64_t u = bx + nx * (by + ny * bz);
        p = pore[u];
        if (u == flipped) p ^= 1u;
      }
      block[k] = p;
    }
    for (int c = 0; c < 27; ++c) {
      const int cx = c % 3 + 1, cy = (c / 3) % 3 + 1, cz = c / 9 + 1;  // the cell's centre in the block
      const int64_t ux = x + cx - 2, uy = y + cy - 2, uz = z + cz - 2;
      if (ux < 1 || uy < 1 || uz < 1 || ux > nx - 2 || uy > ny - 2 || uz > nz - 2) continue;
      int around = 0;  // pore voxels among the centre's 26 neighbours, before the flip
      for (int d = 0; d < 27; ++d)
        if (d != 13) around += block[(cx + d % 3 - 1) + 5 * (cy + (d / 3) % 3 - 1) + 25 * (cz + d / 9 - 1)];
      const int centre = block[cx + 5 * cy + 25 * cz];
      const int from = local_porosity_bin(centre, around);
      int to;
      if (c == 13) {
        to = local_porosity_bin(centre ^ 1, around);  // v itself: its phase flips, its neighbours stay
      } else {
        to = local_porosity_bin(centre, around + (block[62] ? -1 : 1));  // v is among its neighbours
      }
      if (from >= 0) --out[from];
      if (to >= 0) ++out[to];
    }
  }

  /// Adds a swap's change (before the phases are written): `to_solid` flips first, then
  /// `to_pore` with it flipped.
  PF_HD void add_swap(const uint8_t* pore, const int64_t* extent, int64_t to_solid, int64_t to_pore,
                      int64_t* out) const {
    add_flip(pore, extent, to_solid, -1, out);
    add_flip(pore, extent, to_pore, to_solid, out);
  }

  PF_HD void on_swap(const uint8_t* pore, const int64_t* extent, int64_t to_solid, int64_t to_pore) const {
    if (counts) add_swap(pore, extent, to_solid, to_pore, counts);
  }
};

}  // namespace poreforge::anneal::terms
