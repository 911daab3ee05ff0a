#pragma once
/// Objective term: the interface's 2×2×2 patterns — how many of the cells inside the box that
/// hold both phases fall into each of the 20 classes up to rotation and reflection
/// (measures.hpp's interface_pattern) — against the reference's shares of them times this box's
/// inner cells. The surface term fixes the interface's area and the chords its faces along each
/// axis, but not how they meet: swaps scored by those alone build walls of one-voxel stairs,
/// too many flat cells normal to an axis and too few oblique ones, where a sandstone's grains
/// leave smooth, curved walls — the slices show it, and compare's interface patterns measure
/// it. Squares ((count_k − target_k) / Σ target)²: each class's share of the interface aimed
/// at, on the scale of the whole interface, so that classes too rare to matter stay small.
/// apply_swap (step.hpp) moves the swap's 16 cells between classes before it writes the
/// phases; the counts live in the count terms' block (Objective::attach_counts).
#include <cstdint>

#include "poreforge/annealer/terms/counts.hpp"
#include "poreforge/host_device.hpp"
#include "poreforge/measures.hpp"

namespace poreforge::anneal::terms {

struct Patterns {
  int64_t* counts = nullptr;  ///< inner cells by class (kInterfacePatterns); null when the term is off
  int entries = 0;            ///< kInterfacePatterns when the term is weighted, else 0
  double target[kInterfacePatterns] = {};
  double scale = 1;               ///< Σ target (1 when it is 0)
  int8_t class_of[256] = {};      ///< interface_pattern of each configuration, −1 for the uniform two

  PF_HD double square(int k) const {
    const double d = (double(counts[k]) - target[k]) / scale;
    return d * d;
  }

  /// Moves the cells around the centre of `bits` to the classes they take when it flips
  /// (for_each_flipped_cell) in `out` (kInterfacePatterns counts).
  PF_HD void add_flip(uint32_t bits, uint32_t inside, int64_t* out) const {
    for_each_flipped_cell(bits, inside, [&](unsigned before, unsigned after) {
      const int from = class_of[before], to = class_of[after];
      if (from >= 0) --out[from];
      if (to >= 0) ++out[to];
    });
  }

  /// Adds the swap's change (before the phases are written) to `out`, the counts or a copy.
  PF_HD void add_swap(const SwapCubes& c, int64_t* out) const {
    add_flip(c.to_solid, c.to_solid_inside, out);
    add_flip(c.to_pore, c.to_pore_inside, out);
  }

  PF_HD void on_swap(const SwapCubes& c) const {
    if (counts) add_swap(c, counts);
  }
};

}  // namespace poreforge::anneal::terms
