#pragma once
// The per-row union-find of the CPU painters (local_thickness.cpp, evaluator.cpp): balls are
// painted largest first, so a voxel's first paint is its thickness and later chords skip what
// is painted. row[x] == x: x is unpainted; a painter sets row[x] = x + 1.
#include <cstdint>

namespace poreforge::cpu {

// "Next possibly unpainted x" for one row, with path compression. Returns the first
// unpainted x ≥ `x`, or some value > `last` when [x, last] is all painted.
inline int64_t first_unpainted(uint32_t* row, int64_t x, int64_t last) {
  int64_t r = x;
  while (r <= last && row[r] != r) r = row[r];
  while (x < r && x <= last) {
    const int64_t following = row[x];
    row[x] = static_cast<uint32_t>(r);
    x = following;
  }
  return r;
}

}  // namespace poreforge::cpu
