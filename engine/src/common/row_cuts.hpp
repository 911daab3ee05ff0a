#pragma once
// Which voxels of a kept ball the CUDA painter (cuda/coverage_kernels.cuh) leaves to a face
// neighbour of no smaller radius, and the rows it walks. Plain host/device code, so the
// exactness of the cuts is checked on the host as well (tests/engine/test_row_cuts.cpp
// replays the painter against the CPU map).
#include <cstdint>
#include <type_traits>

#include "geometry.hpp"
#include "poreforge/host_device.hpp"
#include "metric.hpp"

namespace poreforge::detail {

PF_HD int smaller(int a, int b) { return a < b ? a : b; }
PF_HD int larger(int a, int b) { return a > b ? a : b; }

// Where neighbours take over a centre's voxels. Faces, toward +y, −y, +z, −z, +x, −x: the
// voxels at offset t ≥ from along that direction are painted by the neighbour (kNoCut: none);
// `from` ≤ 1 always. A y or z face has five bits: 31 is none, and code c ≤ 30 stands for
// from = 1 − ⌊c·(reach + 1) / 30⌋, where reach is the ball's (ball_reach): every `from` while
// the reach is below 30, steps of (reach + 1) / 30 above, each rounded toward 1, which only
// keeps more voxels; c = 30 is from = −reach, the whole ball. An x face has four bits, the
// same with 15 and 14 (its cuts shorten rows; the y and z cuts drop them). yz-diagonals
// (0, ±1, ±1), by `diagonal` k = (dy > 0) + 2·(dz > 0), one bit each: the rows (dy, dz) with
// dy·sign_y + dz·sign_z ≥ 1 are painted by that neighbour (see row_cut). One word for all
// (the map's memory target counts every byte of a centre). CPU counts of the rows this leaves
// at 512³ and 1000³: docs/performance.md.
constexpr int kNoCut = 127;
struct RowCut {
  enum Side { plus_y, minus_y, plus_z, minus_z, plus_x, minus_x };
  static constexpr int kXBase = 20, kDiagonalBase = 28;
  static constexpr uint32_t kAllNone = 0x0FFFFFFFu;  // every face none, no diagonal
  uint32_t bits = kAllNone;

  PF_HD bool any() const { return bits != kAllNone; }
  // A face's field: its first bit, width and number of steps.
  PF_HD static int shift(int side) { return side < 4 ? 5 * side : kXBase + 4 * (side - 4); }
  PF_HD static int width(int side) { return side < 4 ? 5 : 4; }
  PF_HD static int steps(int side) { return side < 4 ? 30 : 14; }
  // `reach` is the ball's, the same as when the field was set. In 32 bits (code ≤ 30, reach
  // below 2^16): the painter decodes six faces for every item it walks, and a 64-bit division
  // by a constant is a chain of wide multiplies on the GPU.
  PF_HD int from(int side, int reach) const {
    const int none = (1 << width(side)) - 1;
    const int code = int(bits >> shift(side)) & none;
    return code == none ? kNoCut : 1 - int(uint32_t(code) * uint32_t(reach + 1) / uint32_t(steps(side)));
  }
  PF_HD void set(int side, int64_t from, int reach) {
    // The largest code whose `from` is still ≥ this one: ⌊c·m / steps⌋ ≤ 1 − from, m = reach + 1.
    // `below` ≥ m gives a code ≥ n (the whole ball): clamped first, so the division is 32-bit
    // (write_classes runs it for every face of 10^8 centres at 1000³).
    const int64_t m = int64_t(reach) + 1, below = 1 - from < m ? 1 - from : m;
    const uint32_t n = uint32_t(steps(side));
    const uint32_t code = (n * uint32_t(below + 1) - 1u) / uint32_t(m);
    const uint32_t field = code < n ? code : n, mask = (1u << width(side)) - 1u;
    bits = (bits & ~(mask << shift(side))) | (field << shift(side));
  }
  // The diagonal's threshold (1), or kNoCut.
  PF_HD int diagonal_from(int diagonal) const { return (bits >> (kDiagonalBase + diagonal)) & 1u ? 1 : kNoCut; }
  // Leaves to diagonal neighbour k the rows with dy·sign_y + dz·sign_z ≥ 1 (row_cut: only a
  // neighbour whose threshold is 1 or less).
  PF_HD void set_diagonal(int diagonal) { bits |= 1u << (kDiagonalBase + diagonal); }
  // Whether row (dy, dz) is left to a diagonal neighbour.
  PF_HD bool diagonal_takes(int dy, int dz) const {
    for (int k = 0; k < 4; ++k) {
      const int threshold = diagonal_from(k);
      if (threshold != kNoCut && ((k & 1) ? dy : -dy) + ((k & 2) ? dz : -dz) >= threshold) return true;
    }
    return false;
  }
};

// The reach of a ball: the largest a with a² < r2 (isotropic integer distances, the only
// metric with cuts; r2 ≥ 1).
PF_HD int ball_reach(uint32_t r2) { return int(chord_half_width(VoxelMetric{}, r2, 2, 0, 0)); }

// The voxels a centre paints: rows dy in [y0, y1], dz in [z0, z1] (dy fastest; empty when
// y0 > y1 or z0 > z1), and in each row the part of the ball's chord with dx in [x0, x1].
// The x-cuts leave no voxel in a row whose chord is shorter than max(0, x0, −x1), so the rows
// reach only as far as the ball shrunk by that much: rows_r2 = r2 − that². Rows outside the
// volume along a non-periodic axis are left out.
struct RowBox {
  int y0, y1, z0, z1, x0, x1;
  double rows_r2;  // the squared radius the rows reach (exact for integer squared distances)
  int diagonal[4];  // the diagonals' thresholds (RowCut), kNoCut for none
  PF_HD int64_t rows() const {
    return y1 < y0 || z1 < z0 ? 0 : int64_t(y1 - y0 + 1) * int64_t(z1 - z0 + 1);
  }
};

// The rows and x-range of a centre of squared radius r2 at (cy, cz), less its cuts.
template <class M>
PF_HD RowBox box_of(const M& m, typename M::value_type r2, const Geometry& g, RowCut cut, int cy, int cz) {
  using V = typename M::value_type;
  constexpr int kFar = 1 << 20;  // beyond any extent (below 2^15)
  RowBox box{0, -1, 0, -1, -kFar, kFar, 0.0, {kNoCut, kNoCut, kNoCut, kNoCut}};
  int face[6] = {kNoCut, kNoCut, kNoCut, kNoCut, kNoCut, kNoCut};
  if constexpr (std::is_same_v<M, VoxelMetric>)  // the only metric with cuts
    if (cut.any()) {
      const int reach = ball_reach(r2);
      for (int side = 0; side < 6; ++side) face[side] = cut.from(side, reach);
      for (int k = 0; k < 4; ++k) box.diagonal[k] = cut.diagonal_from(k);
    }
  if (face[RowCut::plus_x] != kNoCut) box.x1 = face[RowCut::plus_x] - 1;
  if (face[RowCut::minus_x] != kNoCut) box.x0 = 1 - face[RowCut::minus_x];
  if (box.x0 > box.x1) return box;  // both x-neighbours together hold the whole ball
  const int shortest = larger(0, larger(box.x0, -box.x1));
  V rows_r2 = r2;
  if constexpr (std::is_same_v<M, VoxelMetric>) {
    if (uint64_t(shortest) * uint64_t(shortest) >= uint64_t(r2)) return box;
    rows_r2 = r2 - V(shortest * shortest);
  }
  box.rows_r2 = double(rows_r2);
  int64_t ry = g.ny > 1 ? chord_half_width(m, rows_r2, 1, 0, 0) : 0;
  int64_t rz;
  if constexpr (std::is_same_v<M, VoxelMetric>)  // isotropic: the reach is the same along z
    rz = g.nz > 1 ? (g.ny > 1 ? ry : chord_half_width(m, rows_r2, 2, 0, 0)) : 0;
  else
    rz = g.nz > 1 ? chord_half_width(m, rows_r2, 2, 0, 0) : 0;
  box.y0 = -int(ry), box.y1 = int(ry), box.z0 = -int(rz), box.z1 = int(rz);
  if (face[RowCut::plus_y] != kNoCut) box.y1 = smaller(box.y1, face[RowCut::plus_y] - 1);
  if (face[RowCut::minus_y] != kNoCut) box.y0 = larger(box.y0, 1 - face[RowCut::minus_y]);
  if (face[RowCut::plus_z] != kNoCut) box.z1 = smaller(box.z1, face[RowCut::plus_z] - 1);
  if (face[RowCut::minus_z] != kNoCut) box.z0 = larger(box.z0, 1 - face[RowCut::minus_z]);
  if (g.along(1) != Boundary::periodic) box.y0 = larger(box.y0, -cy), box.y1 = smaller(box.y1, int(g.ny) - 1 - cy);
  if (g.along(2) != Boundary::periodic) box.z0 = larger(box.z0, -cz), box.z1 = smaller(box.z1, int(g.nz) - 1 - cz);
  return box;
}

// With isotropic integer distances, a face neighbour c' = c + e (e = ±x̂, ±ŷ or ±ẑ) in the
// phase with R'² = R² + Δ, Δ ≥ 0, holds each voxel of c's ball at offset t along e with
// 2t ≥ 1 − Δ: the voxel is |w|² + t² < R², and |w|² + (t − 1)² < R'² follows exactly then.
// A yz-diagonal neighbour c' = c + d (d = (0, ±1, ±1)) with R'² = R² + Δ, Δ ≥ 0, holds the
// whole row (dy, dz) of c — same x-centre, a chord no shorter — when s = dy·d_y + dz·d_z has
// 2s ≥ 2 − Δ; with Δ ≥ 1 it is cut from s ≥ 1 (⌈(2 − Δ) / 2⌉ ≤ 1), with Δ = 0 it could be
// from s ≥ 2 only (see below), which the cut word has no room for: no cut.
// The neighbour's class is at least c's, so it is painted in this or an earlier class — or,
// if it is not a kept centre, the ball containing it (strictly larger) is — with a radius no
// smaller. Along y and z a face cut drops whole rows, along x the end of every row. The
// neighbour's voxels may be cut in turn, by a neighbour whose radius is no smaller: along such
// a chain R² grows, or it stays and the voxel's squared offset |t|² from the painting centre
// shrinks (a face cut with Δ = 0 has t ≥ 1: |t|² falls by 2t − 1 ≥ 1; a diagonal cut with
// Δ = 0 would need s ≥ 2: |t|² falls by 2s − 2 — with s = 1 two equal diagonal neighbours
// could hand a row back and forth and neither paint it), so the chain ends at a centre that
// paints the voxel. Where both x-neighbours cut, with one of them larger, c paints nothing.
// Anisotropic spacing keeps whole balls (its ties are decided in floating point).
template <class M>
PF_HD RowCut row_cut(const typename M::value_type* d2, int64_t i, int64_t x, int64_t y, int64_t z,
                          const Geometry& g) {
  using V = typename M::value_type;
  RowCut cut;
  if constexpr (std::is_same_v<M, VoxelMetric>) {
    const V r2 = d2[i];
    const int reach = ball_reach(r2);
    // The neighbour at (y + dy, z + dz) wrapped or, across an open face, none; its offset.
    auto neighbour = [&](int64_t axis_y, int64_t axis_z, int64_t& offset) {
      int64_t yy = y + axis_y, zz = z + axis_z;
      if (yy < 0 || yy >= g.ny) {
        if (g.along(1) != Boundary::periodic) return false;
        yy = yy < 0 ? yy + g.ny : yy - g.ny;
      }
      if (zz < 0 || zz >= g.nz) {
        if (g.along(2) != Boundary::periodic) return false;
        zz = zz < 0 ? zz + g.nz : zz - g.nz;
      }
      offset = ((zz - z) * g.ny + (yy - y)) * g.nx;
      return true;
    };
    auto look = [&](int axis, int64_t coordinate, int64_t extent, int64_t stride, int plus, int minus) {
      if (extent == 1) return;
      const bool wrap = g.along(axis) == Boundary::periodic;
      for (int side = -1; side <= 1; side += 2) {
        int64_t c = coordinate + side;
        if (c < 0 || c >= extent) {
          if (!wrap) continue;
          c = c < 0 ? c + extent : c - extent;
        }
        const V other = d2[i + (c - coordinate) * stride];
        if (other == V(0) || other == M::infinity || other < r2) continue;
        cut.set(side > 0 ? plus : minus, -((int64_t(other) - int64_t(r2) - 1) >> 1), reach);  // ⌈(1 − Δ) / 2⌉ ≤ 1
      }
    };
    look(0, x, g.nx, 1, RowCut::plus_x, RowCut::minus_x);
    look(1, y, g.ny, g.nx, RowCut::plus_y, RowCut::minus_y);
    look(2, z, g.nz, g.nx * g.ny, RowCut::plus_z, RowCut::minus_z);
    if (g.ny > 1 && g.nz > 1)
      for (int k = 0; k < 4; ++k) {
        int64_t offset = 0;
        if (!neighbour((k & 1) ? 1 : -1, (k & 2) ? 1 : -1, offset)) continue;
        const V other = d2[i + offset];
        if (other == V(0) || other == M::infinity || other < r2) continue;
        // Δ ≥ 1: the threshold ⌈(2 − Δ) / 2⌉ is 1 or less, kept as 1 (keeps more rows);
        // Δ = 0 needs 2 (see above), which one bit does not hold: no cut.
        if (int64_t(other) - int64_t(r2) >= 1) cut.set_diagonal(k);
      }
  }
  return cut;
}

// The rows of column dz that the centre paints, dy in [lo, hi] (empty when lo > hi): those
// inside the box whose chord the x-cuts leave a voxel of — the rows with |(0, dy, dz)|² below
// rows_r2 (box_of), an interval, since the norm grows with |dy| — less those a diagonal
// neighbour takes (for a diagonal toward (sign_y, sign_z), the rows with
// dy·sign_y ≥ threshold − dz·sign_z: an end of the column). The painter walks only these.
struct RowSpan {
  int lo, hi;
};
// The lower end is kept negated, −min(−y0, w, …): CUDA 13.0's ptxas (sm_90) folded
// max(max(y0, −w), s) in the painter into one three-input VIMNMX3 and dropped the minus, so
// the painter walked dy ≥ +w only (docs/performance.md; the GPU parity tests and
// a stand-alone repro caught it, the PTX was right).
template <class M>
PF_HD RowSpan column_rows(const M& m, const RowBox& box, int dz) {
  using V = typename M::value_type;
  const int w = int(chord_half_width(m, V(box.rows_r2), 1, 0, dz));  // −1: the column misses the ball
  int minus_lo = smaller(-box.y0, w), hi = smaller(box.y1, w);
  for (int k = 0; k < 4; ++k) {
    if (box.diagonal[k] == kNoCut) continue;
    const int bound = box.diagonal[k] - ((k & 2) ? dz : -dz);  // rows with dy·sign_y ≥ bound go
    if (k & 1)
      hi = smaller(hi, bound - 1);
    else
      minus_lo = smaller(minus_lo, bound - 1);  // −dy ≥ bound goes: dy ≥ 1 − bound stays
  }
  return RowSpan{-minus_lo, hi};
}

// The part [from, to] of a row's chord [−w, w] (w < 0: the row misses the ball) that the
// x-cuts [x0, x1] leave; false when nothing is left.
PF_HD bool clip_chord(int w, int x0, int x1, int& from, int& to) {
  from = larger(-w, x0);
  to = smaller(w, x1);
  return from <= to;
}

}  // namespace poreforge::detail
