#pragma once
// Brute-force references for the structural measures: the definitions counted literally on
// small volumes, sharing no code with the engine.
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "poreforge/volume.hpp"

namespace poreforge::testing {

// Whether voxel (x, y, z) is phase; outside the box never.
inline bool at(const Mask& m, int64_t x, int64_t y, int64_t z) {
  const Shape s = m.shape();
  if (x < 0 || y < 0 || z < 0 || x >= s.nx || y >= s.ny || z >= s.nz) return false;
  return m(x, y, z) != 0;
}

// χ = V − E + F − C of the union of the phase's closed unit cubes (voxel (x, y, z) is the cube
// [x, x+1] × [y, y+1] × [z, z+1]): every lattice vertex, edge and square of the box's lattice
// is tested for lying on a phase cube.
inline int64_t brute_euler(const Mask& m) {
  const Shape s = m.shape();
  int64_t v = 0, e = 0, f = 0, c = 0;
  for (int64_t z = 0; z <= s.nz; ++z)
    for (int64_t y = 0; y <= s.ny; ++y)
      for (int64_t x = 0; x <= s.nx; ++x) {
        // Vertex (x, y, z) meets cubes (x − 1 … x) × (y − 1 … y) × (z − 1 … z).
        bool any = false;
        for (int dz = -1; dz <= 0; ++dz)
          for (int dy = -1; dy <= 0; ++dy)
            for (int dx = -1; dx <= 0; ++dx) any = any || at(m, x + dx, y + dy, z + dz);
        v += any;
        // Edge from (x, y, z) along +x meets cubes x × (y − 1 … y) × (z − 1 … z).
        if (x < s.nx) {
          bool on = false;
          for (int dz = -1; dz <= 0; ++dz)
            for (int dy = -1; dy <= 0; ++dy) on = on || at(m, x, y + dy, z + dz);
          e += on;
        }
        if (y < s.ny) {
          bool on = false;
          for (int dz = -1; dz <= 0; ++dz)
            for (int dx = -1; dx <= 0; ++dx) on = on || at(m, x + dx, y, z + dz);
          e += on;
        }
        if (z < s.nz) {
          bool on = false;
          for (int dy = -1; dy <= 0; ++dy)
            for (int dx = -1; dx <= 0; ++dx) on = on || at(m, x + dx, y + dy, z);
          e += on;
        }
        // Squares with corner (x, y, z): normal to x meets cubes x − 1 and x at (y, z).
        if (y < s.ny && z < s.nz) f += at(m, x - 1, y, z) || at(m, x, y, z);
        if (x < s.nx && z < s.nz) f += at(m, x, y - 1, z) || at(m, x, y, z);
        if (x < s.nx && y < s.ny) f += at(m, x, y, z - 1) || at(m, x, y, z);
        if (x < s.nx && y < s.ny && z < s.nz) c += at(m, x, y, z);
      }
  return v - e + f - c;
}

// Canonical labels by flood fill: components numbered in the raster order of their first
// voxel; 0 outside the phase. `value` picks the voxels labelled (1 phase, 0 complement).
inline std::vector<uint32_t> brute_labels(const Mask& m, int adjacency, uint8_t value = 1) {
  const Shape s = m.shape();
  std::vector<uint32_t> label(std::size_t(s.voxels()), 0);
  std::vector<std::array<int, 3>> offsets;
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        const int k = (dx != 0) + (dy != 0) + (dz != 0);
        if (k == 0 || (adjacency == 6 && k != 1)) continue;
        offsets.push_back({dx, dy, dz});
      }
  auto is = [&](int64_t x, int64_t y, int64_t z) { return (m(x, y, z) != 0) == (value != 0); };
  uint32_t next = 0;
  std::vector<std::array<int64_t, 3>> stack;
  for (int64_t z = 0; z < s.nz; ++z)
    for (int64_t y = 0; y < s.ny; ++y)
      for (int64_t x = 0; x < s.nx; ++x) {
        if (!is(x, y, z) || label[m.index(x, y, z)]) continue;
        label[m.index(x, y, z)] = ++next;
        stack.push_back({x, y, z});
        while (!stack.empty()) {
          const auto p = stack.back();
          stack.pop_back();
          for (const auto& o : offsets) {
            const int64_t a = p[0] + o[0], b = p[1] + o[1], c = p[2] + o[2];
            if (a < 0 || b < 0 || c < 0 || a >= s.nx || b >= s.ny || c >= s.nz) continue;
            if (!is(a, b, c) || label[m.index(a, b, c)]) continue;
            label[m.index(a, b, c)] = next;
            stack.push_back({a, b, c});
          }
        }
      }
  return label;
}

inline int64_t brute_voxel(const Mask& m, int axis, int64_t line_a, int64_t line_b, int64_t t) {
  // Voxel t along `axis` of the line at (line_a, line_b) in the other two axes, in order.
  if (axis == 0) return m(t, line_a, line_b);
  if (axis == 1) return m(line_a, t, line_b);
  return m(line_a, line_b, t);
}

// Chord histogram along `axis`: maximal runs of `value` touching neither end of their line.
inline std::vector<int64_t> brute_chords(const Mask& m, int axis, uint8_t value) {
  const Shape s = m.shape();
  const int64_t n = s.extent(axis);
  const int64_t na = axis == 0 ? s.ny : s.nx, nb = axis == 2 ? s.ny : s.nz;
  std::vector<int64_t> h(std::size_t(n + 1), 0);
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t a = 0; a < na; ++a)
      for (int64_t t = 0; t < n; ++t) {
        const bool starts = (brute_voxel(m, axis, a, b, t) != 0) == (value != 0) &&
                            (t == 0 || (brute_voxel(m, axis, a, b, t - 1) != 0) != (value != 0));
        if (!starts) continue;
        int64_t u = t;
        while (u < n && (brute_voxel(m, axis, a, b, u) != 0) == (value != 0)) ++u;
        if (t > 0 && u < n) ++h[std::size_t(u - t)];
      }
  return h;
}

// L(r) along `axis`: segments [t, t + r] inside the box lying in `value`, over all of them.
inline std::vector<double> brute_lineal(const Mask& m, int axis, uint8_t value) {
  const Shape s = m.shape();
  const int64_t n = s.extent(axis);
  const int64_t na = axis == 0 ? s.ny : s.nx, nb = axis == 2 ? s.ny : s.nz;
  std::vector<double> l;
  for (int64_t r = 0; r <= n / 2; ++r) {
    int64_t hits = 0, total = 0;
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t a = 0; a < na; ++a)
        for (int64_t t = 0; t + r < n; ++t) {
          bool all = true;
          for (int64_t u = t; u <= t + r; ++u) all = all && (brute_voxel(m, axis, a, b, u) != 0) == (value != 0);
          hits += all;
          ++total;
        }
    l.push_back(double(hits) / double(total));
  }
  return l;
}

}  // namespace poreforge::testing
