#pragma once
/// Objective term: the directional two-point probability along x, y, z against its target. The
/// counts C_a(r) = Σ_v I(v)·I(v + r·e_a) (periodic, r = 0 … n_a/2, exact integers) are kept up
/// to date swap by swap — one entry (axis, r) per thread on the device — and a rejected swap
/// takes back exactly its change. The full recount is DirectionalCounts(mask) (two_point.hpp).
#include <cstdint>

#include "poreforge/host_device.hpp"
#include "poreforge/volume.hpp"

namespace poreforge::anneal::terms {

struct S2 {
  int64_t* counts = nullptr;  ///< axis a's counts from offset[a], n_a/2 + 1 of them
  int64_t* delta = nullptr;   ///< the swap in flight's change to each count, for its undo
  const double* target = nullptr;  ///< x, y, z concatenated, len[a] each
  int64_t extent[3] = {0, 0, 0}, stride[3] = {0, 0, 0}, voxels = 0;
  int offset[3] = {0, 0, 0}, count_entries = 0;
  int len[3] = {0, 0, 0};  ///< target lags compared per axis
  int entries = 0;         ///< Σ len when the term is weighted, else 0 (the counts are kept anyway)

  /// Squared difference of the j-th compared lag (x's, then y's, then z's).
  PF_HD double square(int j) const {
    int r = j, a = 0;
    while (r >= len[a]) r -= len[a++];
    const double d = double(counts[offset[a] + r]) / double(voxels) - target[j];
    return d * d;
  }

  /// Change of count e = (axis, r) by the swap of p (`to_solid`, was pore) and q (`to_pore`,
  /// was solid), read from `pore` before or after the swap (the two voxels' phases are taken
  /// from the swap, not the mask). The pairs (p, p ± r·e_a) of each voxel, counted as flipping
  /// p to solid and then q to pore would count them.
  PF_HD int64_t change(const uint8_t* pore, int e, int64_t p, int64_t q) const {
    int a = 0;
    while (a < 2 && e >= offset[a + 1]) ++a;
    const int64_t r = e - offset[a];
    if (r == 0) return 0;  // −1 for p, +1 for q
    const int64_t n = extent[a], s = stride[a];
    const auto up = [&](int64_t i) {
      const int64_t c = (i / s) % n;
      return c + r < n ? i + r * s : i + (r - n) * s;
    };
    const auto down = [&](int64_t i) {
      const int64_t c = (i / s) % n;
      return c - r >= 0 ? i - r * s : i + (n - r) * s;
    };
    const auto before = [&](int64_t i) -> int64_t { return i == p ? 1 : i == q ? 0 : pore[i]; };
    const auto between = [&](int64_t i) -> int64_t { return i == p || i == q ? 0 : pore[i]; };
    return -(before(up(p)) + before(down(p))) + (between(up(q)) + between(down(q)));
  }

  /// Applies the swap's change to count e and keeps it for the undo (`pore` after the swap).
  PF_HD void apply(const uint8_t* pore, int e, int64_t p, int64_t q) const {
    const int64_t d = change(pore, e, p, q);
    counts[e] += d;
    delta[e] = d;
  }
  /// Takes count e's change back (the swap was rejected).
  PF_HD void undo(int e) const { counts[e] -= delta[e]; }
};

/// The count layout of a volume of `shape` (extents, strides, offsets: host side), with no
/// buffers and no target.
inline S2 s2_layout(const Shape& shape) {
  S2 t;
  for (int a = 0; a < 3; ++a) {
    t.extent[a] = shape.extent(a);
    t.stride[a] = a == 0 ? 1 : a == 1 ? shape.nx : shape.nx * shape.ny;
    t.offset[a] = t.count_entries;
    t.count_entries += int(shape.extent(a) / 2 + 1);
  }
  t.voxels = shape.voxels();
  return t;
}

}  // namespace poreforge::anneal::terms
