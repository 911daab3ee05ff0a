#pragma once
/// Objective term: the local porosity distribution of the 3×3×3 neighbourhoods and of the 3×3 and
/// 5×5 squares through their centre normal to x, y and z (Hilfer's local porosity theory at the
/// smallest measurement cells), split by the centre's phase — how many voxels of the box are pore
/// or solid with each number of pore voxels among their 26 neighbours, and among their 8 and 24 in
/// each plane (measures.hpp's local_porosity_histogram; a neighbour beyond a face is the nearest
/// voxel inside) — against the reference's shares of them times this box's voxels. The 2×2×2
/// patterns fix how the interface turns within a cell of eight voxels, but not the one-voxel spikes
/// of either phase that a wall of such cells can carry: swaps scored by the other terms leave pore
/// and solid voxels with few of their own phase around them two to four times as often as the rock
/// has them, a ragged outline where the grains leave a smooth one (compare's local porosity
/// measure). The squares see what a section shows and the cube averages away: fins and strands of
/// solid one voxel thick, spurs and pinholes on the slices; the 5×5 squares how a section's outline
/// bends over a few voxels, where the 3×3 ones leave it free to wobble (grains leave flat or gently
/// curved faces and sharp tips, not knobs). Counting the faces' voxels as the others keeps the
/// swaps from piling such spikes on the faces, where cells inside the box alone would not see them.
/// The two uniform bins of each cell (a pore voxel in pore, a solid one in solid) are left out:
/// porosity and the surface fix them. Each bin's error is Pearson's, (count_b − target_b)² /
/// (target_b + 1), over Σ target: the spikes that give a section away are rare bins, which squares
/// on the scale of the whole distribution (the patterns term's) leave free. apply_swap (step.hpp)
/// moves the cells around each flipped voxel between bins before it writes the phases; the counts
/// live in the count terms' block (Objective::attach_counts).
#include <cstdint>

#include "poreforge/host_device.hpp"
#include "poreforge/measures.hpp"

namespace poreforge::anneal::terms {

struct LocalPorosity {
  int64_t* counts = nullptr;  ///< voxels by bin (kLocalPorosityBins); null when the term is off
  int entries = 0;            ///< kLocalPorosityBins when the term is weighted, else 0
  double target[kLocalPorosityBins] = {};
  double scale = 1;  ///< Σ target (1 when it is 0)

  PF_HD static int64_t clamp_to(int64_t i, int64_t n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }

  PF_HD static void move(int from, int to, int64_t* out) {
    if (from == to) return;
    if (from >= 0) --out[from];
    if (to >= 0) ++out[to];
  }

  PF_HD double square(int b) const {
    const double d = double(counts[b]) - target[b];
    return d * d / ((target[b] + 1) * scale);
  }

  /// Moves the neighbourhoods around voxel v to the bins they take when v flips, in `out`
  /// (kLocalPorosityBins counts). The phases are read from `pore`, with voxel `flipped` (−1:
  /// none) read as already flipped: the second voxel of a swap sees the first's change.
  PF_HD void add_flip(const uint8_t* pore, const int64_t* extent, int64_t v, int64_t flipped, int64_t* out) const {
    const int64_t nx = extent[0], ny = extent[1], nz = extent[2];
    const int64_t x = v % nx, y = (v / nx) % ny, z = v / (nx * ny);
    if (x >= kInside && y >= kInside && z >= kInside && x < nx - kInside && y < ny - kInside && z < nz - kInside)
      add_flip_inside(pore, extent, v, flipped, out);
    else
      add_flip_anywhere(pore, extent, v, flipped, out);
  }

  /// add_flip for any voxel of the box, the faces' included.
  PF_HD void add_flip_anywhere(const uint8_t* pore, const int64_t* extent, int64_t v, int64_t flipped,
                               int64_t* out) const {
    const int64_t nx = extent[0], ny = extent[1], nz = extent[2];
    const int64_t x = v % nx, y = (v / nx) % ny, z = v / (nx * ny);
    // The 5×5×5 block around v before and after the flip, read as local_porosity_histogram
    // reads the box: a position beyond a face takes the nearest voxel inside, so v may stand
    // at several positions of the block near a face.
    uint8_t before[125], after[125];
    for (int k = 0; k < 125; ++k) {
      const int64_t bx = clamp_to(x + k % 5 - 2, nx), by = clamp_to(y + (k / 5) % 5 - 2, ny),
                    bz = clamp_to(z + k / 25 - 2, nz);
      const int64_t u = bx + nx * (by + ny * bz);
      const uint8_t p = uint8_t(pore[u] ^ (u == flipped ? 1u : 0u));
      before[k] = p;
      after[k] = uint8_t(p ^ (u == v ? 1u : 0u));
    }
    // Only the voxels of the box within one of v hold it in their cells.
    for (int c = 0; c < 27; ++c) {
      const int cx = c % 3 + 1, cy = (c / 3) % 3 + 1, cz = c / 9 + 1;  // the centre's place in the block
      const int64_t ux = x + cx - 2, uy = y + cy - 2, uz = z + cz - 2;
      if (ux < 0 || uy < 0 || uz < 0 || ux >= nx || uy >= ny || uz >= nz) continue;
      int cube[2] = {0, 0}, square[2][3] = {{0, 0, 0}, {0, 0, 0}};  // pore neighbours, before and after
      for (int d = 0; d < 27; ++d) {
        if (d == 13) continue;
        const int dx = d % 3 - 1, dy = (d / 3) % 3 - 1, dz = d / 9 - 1;
        const int k = (cx + dx) + 5 * (cy + dy) + 25 * (cz + dz);
        cube[0] += before[k];
        cube[1] += after[k];
        const int level[3] = {dx, dy, dz};
        for (int axis = 0; axis < 3; ++axis)
          if (level[axis] == 0) {
            square[0][axis] += before[k];
            square[1][axis] += after[k];
          }
      }
      const int k = cx + 5 * cy + 25 * cz;
      move(local_porosity_bin(before[k], cube[0]), local_porosity_bin(after[k], cube[1]), out);
      for (int axis = 0; axis < 3; ++axis)
        move(local_porosity_square_bin(axis, before[k], square[0][axis]),
             local_porosity_square_bin(axis, after[k], square[1][axis]), out);
    }
    for (int axis = 0; axis < 3; ++axis) add_flip_wide_squares(pore, extent, v, flipped, axis, out);
  }

  /// How far a voxel lies from every face for add_flip_inside: the 5×5 squares of the voxels
  /// within two of it reach four.
  static constexpr int64_t kInside = 4;

  /// add_flip for a voxel kInside or more from every face, most of a box's: no position of its
  /// neighbourhoods lies beyond a face, so each holds v once, and a cell's count after the flip
  /// is its count before plus v's change (none for v's own cell, whose centre flips instead).
  /// The counts before are running sums: of the 5×5×5 block around v for the cube and the 3×3
  /// squares, of a 9×9 block of each plane through v for the 5×5 squares.
  PF_HD void add_flip_inside(const uint8_t* pore, const int64_t* extent, int64_t v, int64_t flipped,
                             int64_t* out) const {
    const int64_t nx = extent[0], nxy = extent[0] * extent[1];
    uint8_t b[5][5][5];  // b[z][y][x]: the block around v (at [2][2][2]), `flipped` read as flipped
    for (int k = 0; k < 5; ++k)
      for (int j = 0; j < 5; ++j) {
        const uint8_t* row = pore + v + (k - 2) * nxy + (j - 2) * nx - 2;
        for (int i = 0; i < 5; ++i) b[k][j][i] = row[i];
      }
    int64_t at_flipped[3] = {-1, -1, -1};  // flipped's place in a block around v, or beyond it
    if (flipped >= 0) {
      const int64_t ny = extent[1];
      const int64_t off[3] = {flipped % nx - v % nx, (flipped / nx) % ny - (v / nx) % ny, flipped / nxy - v / nxy};
      for (int a = 0; a < 3; ++a) at_flipped[a] = off[a];
      if (off[0] >= -2 && off[0] <= 2 && off[1] >= -2 && off[1] <= 2 && off[2] >= -2 && off[2] <= 2)
        b[off[2] + 2][off[1] + 2][off[0] + 2] ^= 1u;
    }
    const int change = b[2][2][2] ? -1 : 1;  // v's pore count
    int sx[5][5][3], sy[5][3][5];            // runs of three along x, along y
    for (int k = 0; k < 5; ++k)
      for (int j = 0; j < 5; ++j)
        for (int i = 0; i < 3; ++i) sx[k][j][i] = b[k][j][i] + b[k][j][i + 1] + b[k][j][i + 2];
    for (int k = 0; k < 5; ++k)
      for (int j = 0; j < 3; ++j)
        for (int i = 0; i < 5; ++i) sy[k][j][i] = b[k][j][i] + b[k][j + 1][i] + b[k][j + 2][i];
    for (int cz = 1; cz < 4; ++cz)
      for (int cy = 1; cy < 4; ++cy)
        for (int cx = 1; cx < 4; ++cx) {
          const int centre = b[cz][cy][cx];
          const bool own = cx == 2 && cy == 2 && cz == 2;
          const int xy = sx[cz][cy - 1][cx - 1] + sx[cz][cy][cx - 1] + sx[cz][cy + 1][cx - 1];  // normal to z
          const int xz = sx[cz - 1][cy][cx - 1] + sx[cz][cy][cx - 1] + sx[cz + 1][cy][cx - 1];  // normal to y
          const int yz = sy[cz - 1][cy - 1][cx] + sy[cz][cy - 1][cx] + sy[cz + 1][cy - 1][cx];  // normal to x
          const int cube = xy + sx[cz - 1][cy - 1][cx - 1] + sx[cz - 1][cy][cx - 1] + sx[cz - 1][cy + 1][cx - 1] +
                           sx[cz + 1][cy - 1][cx - 1] + sx[cz + 1][cy][cx - 1] + sx[cz + 1][cy + 1][cx - 1] - centre;
          const int square[3] = {yz - centre, xz - centre, xy - centre};
          const int after = own ? 1 - centre : centre;
          move(local_porosity_bin(centre, cube), local_porosity_bin(after, own ? cube : cube + change), out);
          const int level[3] = {cx, cy, cz};
          for (int axis = 0; axis < 3; ++axis) {
            const int in_plane = !own && level[axis] == 2 ? change : 0;  // v in this square
            move(local_porosity_square_bin(axis, centre, square[axis]),
                 local_porosity_square_bin(axis, after, square[axis] + in_plane), out);
          }
        }
    const int64_t stride[3] = {1, nx, nxy};
    for (int axis = 0; axis < 3; ++axis) {
      const int first = axis == 0 ? 1 : 0, second = axis == 2 ? 1 : 2;  // the plane's two axes
      uint8_t p[9][9];  // p[row along second][column along first], v at [4][4]
      for (int j = 0; j < 9; ++j) {
        const uint8_t* row = pore + v + (j - 4) * stride[second] - 4 * stride[first];
        for (int i = 0; i < 9; ++i) p[j][i] = row[i * stride[first]];
      }
      if (at_flipped[axis] == 0 && at_flipped[first] >= -4 && at_flipped[first] <= 4 && at_flipped[second] >= -4 &&
          at_flipped[second] <= 4)
        p[at_flipped[second] + 4][at_flipped[first] + 4] ^= 1u;
      int rows[9][5];  // runs of five along the first axis
      for (int j = 0; j < 9; ++j)
        for (int i = 0; i < 5; ++i) rows[j][i] = p[j][i] + p[j][i + 1] + p[j][i + 2] + p[j][i + 3] + p[j][i + 4];
      for (int bj = 0; bj < 5; ++bj)
        for (int ai = 0; ai < 5; ++ai) {
          const int centre = p[bj + 2][ai + 2];
          const int around = rows[bj][ai] + rows[bj + 1][ai] + rows[bj + 2][ai] + rows[bj + 3][ai] + rows[bj + 4][ai] -
                             centre;
          const bool own = ai == 2 && bj == 2;
          move(local_porosity_wide_square_bin(axis, centre, around),
               local_porosity_wide_square_bin(axis, own ? 1 - centre : centre, own ? around : around + change), out);
        }
    }
  }

  /// add_flip's part for the 5×5 squares normal to `axis`: only the voxels of v's plane within
  /// two of it hold v in theirs. A 9×9 block of that plane around v (positions beyond a face
  /// read as the histogram reads them), before and after the flip, as tables of prefix sums.
  PF_HD void add_flip_wide_squares(const uint8_t* pore, const int64_t* extent, int64_t v, int64_t flipped, int axis,
                                   int64_t* out) const {
    const int64_t nx = extent[0], ny = extent[1], nz = extent[2];
    const int64_t at[3] = {v % nx, (v / nx) % ny, v / (nx * ny)};
    const int first = axis == 0 ? 1 : 0, second = axis == 2 ? 1 : 2;  // the plane's two axes
    uint8_t phase[2][9][9];
    int16_t sum[2][10][10];  // sum[t][j][i]: the block's pore voxels in rows < j, columns < i
    for (int i = 0; i < 10; ++i) sum[0][0][i] = sum[1][0][i] = sum[0][i][0] = sum[1][i][0] = 0;
    for (int j = 0; j < 9; ++j)
      for (int i = 0; i < 9; ++i) {
        int64_t c[3] = {at[0], at[1], at[2]};
        c[first] += i - 4;
        c[second] += j - 4;
        const int64_t u = clamp_to(c[0], nx) + nx * (clamp_to(c[1], ny) + ny * clamp_to(c[2], nz));
        phase[0][j][i] = uint8_t(pore[u] ^ (u == flipped ? 1u : 0u));
        phase[1][j][i] = uint8_t(phase[0][j][i] ^ (u == v ? 1u : 0u));
        for (int t = 0; t < 2; ++t)
          sum[t][j + 1][i + 1] = int16_t(sum[t][j][i + 1] + sum[t][j + 1][i] - sum[t][j][i] + phase[t][j][i]);
      }
    for (int b = -2; b <= 2; ++b)
      for (int a = -2; a <= 2; ++a) {
        if (at[first] + a < 0 || at[first] + a >= extent[first] || at[second] + b < 0 ||
            at[second] + b >= extent[second])
          continue;
        // The centre sits at (a + 4, b + 4) of the block, its square at columns a + 2 … a + 6
        // and rows b + 2 … b + 6.
        int bin[2];
        for (int t = 0; t < 2; ++t) {
          const int centre = phase[t][b + 4][a + 4];
          const int square = sum[t][b + 7][a + 7] - sum[t][b + 2][a + 7] - sum[t][b + 7][a + 2] + sum[t][b + 2][a + 2];
          bin[t] = local_porosity_wide_square_bin(axis, centre, square - centre);
        }
        move(bin[0], bin[1], out);
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
