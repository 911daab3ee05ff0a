#pragma once
// Exact local re-evaluation of a phase's local thickness and PSD counts after a few voxels
// change phase (docs/local-evaluation.md), written once for both backends: the CPU evaluator
// (cpu/evaluator.cpp) runs these functions in loops, the CUDA swap scorer (cuda/local_psd.cu)
// in kernels. Isotropic spacing only: every value is an integer squared distance in voxels.
//
// What is kept of the evaluated ("committed") mask: its squared distances d2, its thickness map
// (float32, as the engine writes it), its ball-centre flags (a phase voxel whose lattice ball
// lies inside no 26-neighbour's, the engine's rule), each 4×4×4 brick's largest d2 and D, the
// largest distance in voxels rounded up. A change set holds voxels that leave the phase (L)
// and that join it (J).
//
// Why it is exact:
// - Distances. x moves nearer the background only if some L is nearer than its nearest
//   background, dist2(x, L) < d2(x); it moves farther only if a J was one of its nearest,
//   dist2(x, J) = d2(x). Both lie within D of the voxel. Those voxels are R1 (per changed
//   voxel p: the members of its scan of the box of half-width D round p). A voxel's new d2 is
//   min(d2, dist2 to each L), or, where a J was among its nearest, the nearest background of the
//   new mask, found by walking lattice offsets in increasing norm (every old background but
//   the J's is at least d2 away, so the walk starts there).
// - Thickness. LT(y) is the largest d(c) over the centres c whose open ball holds y; only the
//   balls of R1's voxels changed, and each reaches less than rho (the largest of their radii
//   before and after, rounded up) from it: LT changes only in R2(p) = the box of half-width
//   d1 + rho − 1 round p, d1 the farthest member (Chebyshev).
// - Changed balls only. A set of balls that holds every kept centre, and otherwise only balls
//   inside others, gives the same largest ball everywhere. Split the balls into U (the kept
//   centres outside the near boxes — R1's boxes grown by one, outside which neither a voxel's
//   distance nor a neighbour's changed, so the kept flags hold — and the voxels inside them
//   whose distance did not change: the same ball in both masks), O (the committed centres
//   inside whose distance changed) and N (the changed mask's voxels inside whose distance
//   changed): LT before = max(U, O) and after = max(U, N). Where O's largest ball holding y is
//   below the committed value, U gave it and the new one is max(before, N); where O gave it and
//   N reaches it, N's; a joined voxel was background, which no ball of U held: N's. Only the
//   rest need U's balls (thickness_from_changed_balls, u_centres_in_brick): O and N hold only the
//   balls a swap changed, and no centre test is made near the changes.
// - The scan for R1. Its members lie within their own distance of the change, so a 4×4×4 brick
//   farther from it than the brick's largest distance holds none (brick_gap2).
// - Counting. The PSD counts are integers: each voxel of R2 (of the first box that holds it)
//   takes its old value out of the tallies and its new one in, by psd_from_thickness's rule on
//   the float32 radius, so the result equals a from-scratch evaluation to the bit.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "ball_containment.hpp"
#include "metric.hpp"
#include "poreforge/host_device.hpp"
#include "poreforge/volume.hpp"

namespace poreforge::detail::local {

/// Changed voxels an evaluation takes (an annealer's swap changes two; a replica that took a
/// swap it did not score and then its own changes four); more, and the caller evaluates from
/// scratch.
constexpr int kMostChanges = 8;
/// What a search returns when no background lies anywhere (open faces, a phase of every voxel).
constexpr uint32_t kNoBackground = 0xFFFFFFFFu;

/// Extents, strides and boundary of the volume (the boundary as Boundary's value: 0 open,
/// 1 wall, 2 periodic). A flat axis (extent 1) has no offsets and no faces along it.
struct Grid {
  int64_t n[3] = {1, 1, 1}, stride[3] = {1, 1, 1};
  int boundary = 0;

  PF_HD bool periodic() const { return boundary == 2; }
  PF_HD void coords(int64_t i, int64_t c[3]) const {
    c[0] = i % n[0];
    c[1] = (i / n[0]) % n[1];
    c[2] = i / (n[0] * n[1]);
  }
  PF_HD int64_t index(const int64_t c[3]) const { return c[0] + c[1] * stride[1] + c[2] * stride[2]; }
  PF_HD static int64_t wrap(int64_t v, int64_t n) {
    v %= n;
    return v < 0 ? v + n : v;
  }
  /// The offset from a to b along axis k: the nearest image's where periodic.
  PF_HD int64_t offset(int k, int64_t a, int64_t b) const {
    int64_t d = b - a;
    if (periodic() && n[k] > 1) {
      d = wrap(d, n[k]);
      if (2 * d > n[k]) d -= n[k];
    }
    return d;
  }
  /// Squared voxel distance between two voxels (nearest images where periodic).
  PF_HD uint32_t dist2(const int64_t a[3], const int64_t b[3]) const {
    return squared_norm(VoxelMetric{}, offset(0, a[0], b[0]), offset(1, a[1], b[1]), offset(2, a[2], b[2]));
  }
  /// Where c + (dx, dy, dz) lies: its index, −1 beyond an open face (nothing there), −2 beyond a
  /// wall (background). Periodic axes wrap.
  PF_HD int64_t at(const int64_t c[3], int64_t dx, int64_t dy, int64_t dz) const {
    const int64_t o[3] = {dx, dy, dz};
    int64_t q[3];
    for (int k = 0; k < 3; ++k) {
      q[k] = c[k] + o[k];
      if (q[k] >= 0 && q[k] < n[k]) continue;
      if (n[k] > 1 && periodic()) q[k] = wrap(q[k], n[k]);
      else return boundary == 1 && n[k] > 1 ? -2 : -1;
    }
    return index(q);
  }
};

/// The kept ball centres as bits: one 64-bit word a 4×4×4 brick of voxels, bricks x fastest,
/// so a scan of a region reads a word per brick and visits only the centres.
struct CentreBits {
  PF_HD static int64_t bricks(int64_t n) { return (n + 3) / 4; }
  /// The word of brick w (brick coordinates).
  PF_HD static int64_t brick(const Grid& g, const int64_t w[3]) {
    return w[0] + bricks(g.n[0]) * (w[1] + bricks(g.n[1]) * w[2]);
  }
  PF_HD static int64_t word(const Grid& g, const int64_t c[3]) {
    const int64_t w[3] = {c[0] / 4, c[1] / 4, c[2] / 4};
    return brick(g, w);
  }
  PF_HD static int bit(const int64_t c[3]) { return int(c[0] % 4 + 4 * (c[1] % 4) + 16 * (c[2] % 4)); }
  PF_HD static bool holds(const uint64_t* bits, const Grid& g, const int64_t c[3]) {
    return (bits[word(g, c)] >> bit(c)) & 1u;
  }
  /// The index of the lowest set bit of a nonzero word.
  PF_HD static int lowest(uint64_t w) {
#if defined(__CUDA_ARCH__)
    return __ffsll(static_cast<long long>(w)) - 1;
#else
    return __builtin_ctzll(w);
#endif
  }
  PF_HD static int64_t words(const Grid& g) { return bricks(g.n[0]) * bricks(g.n[1]) * bricks(g.n[2]); }
};

/// Squared distance from voxel p to the nearest voxel of brick w (CentreBits' 4×4×4 bricks;
/// nearest images where periodic). R1's members lie within their own distance of the change,
/// so a brick farther than its largest distance holds none of them.
PF_HD uint32_t brick_gap2(const Grid& g, const int64_t p[3], const int64_t w[3]) {
  int64_t d[3];
  for (int k = 0; k < 3; ++k) {
    d[k] = g.n[k];
    const int64_t last = 4 * w[k] + 3 < g.n[k] - 1 ? 4 * w[k] + 3 : g.n[k] - 1;
    for (int64_t c = 4 * w[k]; c <= last; ++c) {
      const int64_t o = g.offset(k, p[k], c);
      d[k] = (o < 0 ? -o : o) < d[k] ? (o < 0 ? -o : o) : d[k];
    }
  }
  return squared_norm(VoxelMetric{}, d[0], d[1], d[2]);
}

/// The largest squared distance among brick w's voxels (d2: the volume's).
PF_HD uint32_t brick_largest(const Grid& g, const uint32_t* d2, const int64_t w[3]) {
  uint32_t most = 0;
  int64_t q[3];
  for (q[2] = 4 * w[2]; q[2] < 4 * w[2] + 4 && q[2] < g.n[2]; ++q[2])
    for (q[1] = 4 * w[1]; q[1] < 4 * w[1] + 4 && q[1] < g.n[1]; ++q[1])
      for (q[0] = 4 * w[0]; q[0] < 4 * w[0] + 4 && q[0] < g.n[0]; ++q[0]) {
        const uint32_t d = d2[g.index(q)];
        most = d > most ? d : most;
      }
  return most;
}

/// Lattice offsets sorted by squared norm, for nearest-background walks: packed 10 bits a
/// component (offsets up to ±511), and first[v] the first entry of norm ≥ v (v ≤ limit + 1).
/// Offsets along flat axes are left out.
struct Offsets {
  const uint32_t* packed = nullptr;
  const uint32_t* norm = nullptr;
  const uint32_t* first = nullptr;
  uint32_t limit = 0;  ///< every offset of norm ≤ limit is listed
  uint32_t count = 0;

  PF_HD static int64_t component(uint32_t p, int k) { return int64_t((p >> (10 * k)) & 1023u) - 512; }
  static uint32_t pack(int64_t dx, int64_t dy, int64_t dz) {
    return uint32_t(dx + 512) | (uint32_t(dy + 512) << 10) | (uint32_t(dz + 512) << 20);
  }
};

/// An axis-aligned box of voxels, inclusive, in unwrapped coordinates (a periodic box may start
/// below 0 or end past n − 1; one as long as its axis holds each voxel once).
struct Box {
  int64_t lo[3] = {0, 0, 0}, hi[3] = {-1, -1, -1};

  PF_HD int64_t length(int k) const { return hi[k] - lo[k] + 1; }
  PF_HD int64_t voxels() const { return length(0) * length(1) * length(2); }
  /// The box of half-width h round c, clipped to the volume where it is not periodic and the
  /// whole axis where it would wrap onto itself.
  PF_HD static Box around(const Grid& g, const int64_t c[3], int64_t h) {
    Box b;
    for (int k = 0; k < 3; ++k) {
      const int64_t n = g.n[k], r = n > 1 ? h : 0;
      if (r < 0) {  // empty
        b.lo[k] = 0, b.hi[k] = -1;
      } else if (g.periodic() && n > 1) {
        if (2 * r + 1 >= n) b.lo[k] = 0, b.hi[k] = n - 1;
        else b.lo[k] = c[k] - r, b.hi[k] = c[k] + r;
      } else {
        b.lo[k] = c[k] - r < 0 ? 0 : c[k] - r;
        b.hi[k] = c[k] + r > n - 1 ? n - 1 : c[k] + r;
      }
    }
    return b;
  }
  /// This box grown by h along each axis: clipped at open or wall faces; where periodic, the
  /// whole axis once it would wrap onto itself, else started within [0, n).
  PF_HD Box grown(const Grid& g, int64_t h) const {
    Box out;
    for (int k = 0; k < 3; ++k) {
      const int64_t n = g.n[k], r = n > 1 && h > 0 ? h : 0;
      int64_t a = lo[k] - r, b = hi[k] + r;
      if (g.periodic() && n > 1) {
        if (b - a + 1 >= n) {
          a = 0, b = n - 1;
        } else {
          const int64_t shift = Grid::wrap(a, n) - a;
          a += shift, b += shift;
        }
      } else {
        a = a < 0 ? 0 : a, b = b > n - 1 ? n - 1 : b;
      }
      out.lo[k] = a, out.hi[k] = b;
    }
    return out;
  }
  /// The coordinate of volume coordinate v along axis k within the box's unwrapped range, or
  /// lo − 1 when the box does not hold it.
  PF_HD int64_t local(const Grid& g, int k, int64_t v) const {
    int64_t u = v;
    if (g.periodic() && g.n[k] > 1) u = lo[k] + Grid::wrap(v - lo[k], g.n[k]);
    return u >= lo[k] && u <= hi[k] ? u - lo[k] : -1;
  }
  /// Whether the box may share a voxel with `o` (a periodic axis that is not whole in both is
  /// taken to meet).
  PF_HD bool meets(const Grid& g, const Box& o) const {
    for (int k = 0; k < 3; ++k) {
      if (g.periodic() && g.n[k] > 1 && (length(k) < g.n[k] || o.length(k) < g.n[k])) continue;
      if (hi[k] < o.lo[k] || o.hi[k] < lo[k]) return false;
    }
    return true;
  }
  PF_HD bool holds(const Grid& g, const int64_t v[3]) const {
    return local(g, 0, v[0]) >= 0 && local(g, 1, v[1]) >= 0 && local(g, 2, v[2]) >= 0;
  }
  /// Distance along axis k from coordinate v to the box (from its nearest image where
  /// periodic); 0 within it.
  PF_HD int64_t axis_gap(const Grid& g, int k, int64_t v) const {
    int64_t u = v;
    if (g.periodic() && g.n[k] > 1 && length(k) < g.n[k]) {
      const int64_t mid = lo[k] + (hi[k] - lo[k]) / 2;  // the image of v nearest the box
      u = mid + g.offset(k, mid, v);
    }
    return u < lo[k] ? lo[k] - u : u > hi[k] ? u - hi[k] : 0;
  }
  /// Squared distance from voxel v to the nearest voxel of the box (its nearest image where
  /// periodic); 0 inside.
  PF_HD uint32_t gap2(const Grid& g, const int64_t v[3]) const {
    return squared_norm(VoxelMetric{}, axis_gap(g, 0, v[0]), axis_gap(g, 1, v[1]), axis_gap(g, 2, v[2]));
  }
  /// The least gap2 of the voxels of the block from–to (volume coordinates, inclusive).
  PF_HD uint32_t block_gap2(const Grid& g, const int64_t from[3], const int64_t to[3]) const {
    int64_t d[3];
    for (int k = 0; k < 3; ++k) {
      d[k] = axis_gap(g, k, from[k]);
      for (int64_t v = from[k] + 1; v <= to[k] && d[k] > 0; ++v) {
        const int64_t e = axis_gap(g, k, v);
        d[k] = e < d[k] ? e : d[k];
      }
    }
    return squared_norm(VoxelMetric{}, d[0], d[1], d[2]);
  }
};

/// Where voxel (box-local) index `local` of `box` lies in the volume.
PF_HD int64_t box_voxel(const Grid& g, const Box& box, int64_t local, int64_t c[3]) {
  const int64_t lx = box.length(0), ly = box.length(1);
  int64_t u[3];
  if (local < (int64_t(1) << 32) && lx * ly < (int64_t(1) << 32)) {  // 32-bit division: a fraction of the 64-bit cost on a GPU
    const uint32_t l = uint32_t(local), x = uint32_t(lx), row = l / x;
    u[0] = l - row * x, u[1] = row % uint32_t(ly), u[2] = row / uint32_t(ly);
  } else {
    u[0] = local % lx, u[1] = (local / lx) % ly, u[2] = local / (lx * ly);
  }
  for (int k = 0; k < 3; ++k) {
    c[k] = box.lo[k] + u[k];
    if (g.periodic() && g.n[k] > 1) c[k] = Grid::wrap(c[k], g.n[k]);
  }
  return g.index(c);
}

/// The kept state of the committed mask, and the tables (host or device memory).
struct View {
  Grid grid;
  const uint8_t* phase = nullptr;    ///< the committed mask (1 = phase); outside the change set, the current one
  const uint32_t* d2 = nullptr;      ///< squared distances in voxels (0 outside the phase)
  const float* thickness = nullptr;  ///< local thickness, physical units (0 outside the phase)
  const uint64_t* centres = nullptr;  ///< kept ball centres, a bit a voxel in 4×4×4 bricks (CentreBits)
  Offsets offsets;
  ContainmentView<VoxelMetric> containment;
  VoxelMetric metric;  ///< its spacing turns squared distances into stored radii
  const double* edges = nullptr;
  int edge_count = 0;
  int64_t largest = 0;  ///< D: the largest distance, in voxels, rounded up
};

/// Voxels that changed phase since the committed mask: `value` 0 left the phase, 1 joined it.
/// prepare() fills in each joined voxel's new squared distance and `grown`.
struct Changes {
  int count = 0;
  int64_t index[kMostChanges] = {};
  int64_t at[kMostChanges][3] = {};  ///< their coordinates
  uint8_t value[kMostChanges] = {};
  uint32_t joined_d2[kMostChanges] = {};
  int64_t grown = 0;  ///< the largest new distance of a joined voxel, in voxels, rounded up
  bool failed = false;  ///< a joined voxel found no background (open faces, every voxel phase)
  bool whole = false;   ///< the CPU evaluator scored it from scratch (its regions hold the volume)

  PF_HD int find(int64_t i) const {
    for (int k = 0; k < count; ++k)
      if (index[k] == i) return k;
    return -1;
  }
  PF_HD void add(const Grid& g, int64_t i, uint8_t v) {
    index[count] = i;
    g.coords(i, at[count]);
    value[count] = v;
    ++count;
  }
};

/// ⌈√v⌉ for an integer squared distance.
PF_HD int64_t ceil_root(uint32_t v) {
  int64_t r = int64_t(std::sqrt(double(v)));
  while (uint64_t(r) * uint64_t(r) < v) ++r;
  while (r > 0 && uint64_t(r - 1) * uint64_t(r - 1) >= v) --r;
  return r;
}

/// Whether voxel i is in the phase of the changed mask.
PF_HD bool in_phase(const View& v, const Changes& ch, int64_t i) {
  const int k = ch.find(i);
  return k >= 0 ? ch.value[k] != 0 : v.phase[i] != 0;
}

/// Whether position q (Grid::at's answer) holds background in the changed mask.
PF_HD bool background_at(const View& v, const Changes& ch, int64_t q) {
  if (q == -2) return true;   // beyond a wall
  if (q == -1) return false;  // beyond an open face
  return !in_phase(v, ch, q);
}

/// The squared distance from voxel x (coordinates c) to the nearest background of the changed
/// mask whose norm is at least `from`: the sorted offsets from there, then (past the table)
/// Chebyshev shells outward. kNoBackground when there is none.
PF_HD uint32_t nearest_background(const View& v, const Changes& ch, const int64_t c[3], uint32_t from) {
  const Offsets& t = v.offsets;
  const Grid& g = v.grid;
  if (from <= t.limit) {
    for (uint32_t e = t.first[from]; e < t.count; ++e) {
      const uint32_t p = t.packed[e];
      if (background_at(v, ch, g.at(c, Offsets::component(p, 0), Offsets::component(p, 1), Offsets::component(p, 2))))
        return t.norm[e];
    }
  }
  // Beyond the table: shells of Chebyshev radius r hold norms of at least r², so the search
  // stops once r² passes the best found. Rare (distances beyond the table's radius).
  int64_t r0 = 1;
  while (uint64_t(r0) * uint64_t(r0) * 3 < (from > t.limit ? from : t.limit + 1)) ++r0;
  int64_t reach = 1;
  for (int k = 0; k < 3; ++k)
    if (g.n[k] > reach) reach = g.n[k];
  uint32_t best = kNoBackground;
  for (int64_t r = r0; r <= reach + 1; ++r) {
    if (best != kNoBackground && uint64_t(r) * uint64_t(r) >= best) break;
    const int64_t rz = g.n[2] > 1 ? r : 0, ry = g.n[1] > 1 ? r : 0, rx = g.n[0] > 1 ? r : 0;
    for (int64_t dz = -rz; dz <= rz; ++dz)
      for (int64_t dy = -ry; dy <= ry; ++dy)
        for (int64_t dx = -rx; dx <= rx; ++dx) {
          const int64_t m = dx < 0 ? -dx : dx, my = dy < 0 ? -dy : dy, mz = dz < 0 ? -dz : dz;
          if (m != r && my != r && mz != r) continue;  // the shell's surface only
          const uint32_t norm = squared_norm(VoxelMetric{}, dx, dy, dz);
          if (norm < from || norm >= best) continue;
          if (background_at(v, ch, g.at(c, dx, dy, dz))) best = norm;
        }
  }
  return best;
}

/// Fills in each joined voxel's new squared distance (its nearest background in the changed
/// mask) and `grown`; marks the set failed when one has none.
PF_HD void prepare(const View& v, Changes& ch) {
  ch.grown = 0;
  for (int k = 0; k < ch.count; ++k) {
    ch.joined_d2[k] = 0;
    if (!ch.value[k]) continue;
    const uint32_t d = nearest_background(v, ch, ch.at[k], 1);
    if (d == kNoBackground) {
      ch.failed = true;
      continue;
    }
    ch.joined_d2[k] = d;
    const int64_t r = ceil_root(d);
    if (r > ch.grown) ch.grown = r;
  }
}

/// The squared distance of voxel i (coordinates c) in the changed mask.
PF_HD uint32_t new_d2(const View& v, const Changes& ch, int64_t i, const int64_t c[3]) {
  const int k = ch.find(i);
  if (k >= 0) return ch.value[k] ? ch.joined_d2[k] : 0u;
  if (!v.phase[i]) return 0;
  const uint32_t old = v.d2[i];
  uint32_t nearest_left = kNoBackground;
  bool lost_nearest = false;
  for (int j = 0; j < ch.count; ++j) {
    const uint32_t d = v.grid.dist2(c, ch.at[j]);
    if (ch.value[j]) lost_nearest = lost_nearest || d == old;
    else if (d < nearest_left) nearest_left = d;
  }
  // Every old background but the joined voxels is at least `old` away, so the walk from there
  // finds the nearest of them; the voxels that left may be nearer.
  const uint32_t kept = lost_nearest ? nearest_background(v, ch, c, old) : old;
  return kept < nearest_left ? kept : nearest_left;
}

PF_HD uint32_t new_d2(const View& v, const Changes& ch, int64_t i) {
  int64_t c[3];
  v.grid.coords(i, c);
  return new_d2(v, ch, i, c);
}

/// What one changed voxel's scan yields: R1's extent (d1, the farthest member) and the largest
/// radius among its members' balls before and after (rho), giving R2 = half-width d1 + rho − 1.
struct Reach {
  int64_t d1 = 0, rho = 0;
};

/// Change k's test of voxel x (coordinates c, Chebyshev offset `cheb` from the changed voxel p):
/// a member of R1 when its distance may change because of p; its radius bound into `r`.
PF_HD void scan_voxel(const View& v, const Changes& ch, int k, int64_t x, const int64_t c[3], int64_t cheb, Reach& r) {
  const int64_t p = ch.index[k];
  int64_t radius = -1;
  if (x == p) {
    radius = ch.value[k] ? ceil_root(ch.joined_d2[k]) : ceil_root(v.d2[p]);  // the ball it gains, or loses
  } else if (ch.find(x) < 0 && v.phase[x]) {
    const uint32_t d = v.grid.dist2(c, ch.at[k]), old = v.d2[x];
    if (!ch.value[k] && d < old) radius = ceil_root(old);                  // nearer the background: smaller
    else if (ch.value[k] && d == old) radius = ceil_root(old) + ch.grown;  // farther: at most grown more
  }
  if (radius < 0) return;
  if (cheb > r.d1) r.d1 = cheb;
  if (radius > r.rho) r.rho = radius;
}

/// The half-width of R2 round a changed voxel from its scan.
PF_HD int64_t repaint_half_width(const Reach& r) { return r.d1 + r.rho - 1 > 0 ? r.d1 + r.rho - 1 : 0; }


/// Whether voxel c's neighbourhood may hold changed distances: within one voxel of some R1
/// box (half-width `d1[k]` round change k).
PF_HD bool near_changes(const View& v, const Changes& ch, const int64_t* d1, const int64_t c[3]) {
  for (int k = 0; k < ch.count; ++k) {
    bool inside = true;
    for (int a = 0; a < 3 && inside; ++a) {
      int64_t o = v.grid.offset(a, ch.at[k][a], c[a]);
      if (o < 0) o = -o;
      inside = o <= d1[k] + 1;
    }
    if (inside) return true;
  }
  return false;
}

/// Calls `visit(j, q, dx, dy, dz)` for each of c's 26 neighbours inside the grid (index j,
/// coordinates q, wrapped where the grid is periodic; none along a flat axis, whose one voxel
/// has no neighbours), c itself too with `self`, only the 6 face neighbours with `faces`, until
/// a call returns true; returns whether one did.
template <class Visit>
PF_HD bool any_neighbour(const Grid& g, const int64_t c[3], bool self, bool faces, Visit&& visit) {
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        const int nonzero = (dx != 0) + (dy != 0) + (dz != 0);
        if ((nonzero == 0 && !self) || (faces && nonzero > 1) || (dx && g.n[0] == 1) || (dy && g.n[1] == 1) ||
            (dz && g.n[2] == 1))
          continue;
        const int64_t o[3] = {dx, dy, dz};
        int64_t q[3];
        bool inside = true;
        for (int k = 0; k < 3; ++k) {
          q[k] = c[k] + o[k];
          if (q[k] >= 0 && q[k] < g.n[k]) continue;
          if (g.periodic()) q[k] = q[k] < 0 ? q[k] + g.n[k] : q[k] - g.n[k];
          else inside = false;  // beyond a face: no neighbour
        }
        if (inside && visit(g.index(q), q, dx, dy, dz)) return true;
      }
  return false;
}

/// Whether voxel c (squared distance r2 > 0 in the changed mask) is a kept centre there: its
/// ball lies inside no 26-neighbour's (the engine's rule), or with `faces` no face neighbour's
/// (fewer reads, a few more centres: any ball inside a neighbour's may be dropped or kept, the
/// thickness is the same). `value_at(j, q)` gives neighbour j's (coordinates q) squared distance.
template <class D2>
PF_HD bool kept_centre(const View& v, const int64_t c[3], uint32_t r2, D2&& value_at, bool faces = false) {
  const int64_t t = v.containment.thresholds(r2);
  return !any_neighbour(v.grid, c, false, faces, [&](int64_t j, const int64_t q[3], int dx, int dy, int dz) {
    return v.containment.inside(r2, t, value_at(j, q), dx, dy, dz);
  });
}

/// The squared distances of the changed mask round the changes, computed once: `d2[k]` over
/// `box[k]` (change k's R1 box grown by one, x fastest), where every changed distance lies;
/// a box without them (d2[k] null: too large for the caller's room) computes them as asked.
struct NearDistances {
  Box box[kMostChanges];
  const uint32_t* d2[kMostChanges] = {};

  /// Voxel c's squared distance in the changed mask.
  PF_HD uint32_t at(const View& v, const Changes& ch, int64_t i, const int64_t c[3]) const {
    for (int k = 0; k < ch.count; ++k) {
      const Box& b = box[k];
      const int64_t x = b.local(v.grid, 0, c[0]), y = b.local(v.grid, 1, c[1]), z = b.local(v.grid, 2, c[2]);
      if (x >= 0 && y >= 0 && z >= 0) return d2[k] ? d2[k][x + b.length(0) * (y + b.length(1) * z)] : new_d2(v, ch, i, c);
    }
    return v.d2[i];
  }
};

/// Change k's box of NearDistances (R1's, half-width d1, grown by one).
PF_HD Box near_box(const View& v, const Changes& ch, int k, int64_t d1) { return Box::around(v.grid, ch.at[k], d1 + 1); }

/// Whether U gave a phase voxel's committed value `before` (the header's "Changed balls only"):
/// O's largest ball that holds it (old_max, 0: none) is below it.
PF_HD bool u_gave(const View& v, float before, uint32_t old_max) {
  return old_max == 0 || v.metric.radius(old_max) < before;
}

/// Voxel y's thickness in the changed mask from its committed one and the changed balls:
/// `u_gave_before` as u_gave says, `new_max` the largest squared radius of N's balls that hold
/// it (0: none). Where U's balls decide, `needs_u` is set and N's value returned, to be raised
/// by the largest of U's balls that holds it.
PF_HD float thickness_from_changed_balls(const View& v, const Changes& ch, int64_t y, bool u_gave_before,
                                         uint32_t new_max, bool& needs_u) {
  needs_u = false;
  if (!in_phase(v, ch, y)) return 0.0f;
  const float fresh = new_max ? v.metric.radius(new_max) : 0.0f;
  if (!v.phase[y]) return fresh;  // joined: no ball of U held a background voxel
  const float before = v.thickness[y];
  if (u_gave_before) return before > fresh ? before : fresh;
  needs_u = fresh < before;  // O gave it: N's when that reaches it, else U's decide
  return fresh;
}

/// The voxels of the changes' near boxes as flat items, each once: item t's index and
/// coordinates, false when an earlier change's box holds it.
PF_HD int64_t near_voxels(const Changes& ch, const NearDistances& near) {
  int64_t n = 0;
  for (int k = 0; k < ch.count; ++k) n += near.box[k].voxels();
  return n;
}
PF_HD bool near_voxel(const View& v, const Changes& ch, const NearDistances& near, int64_t t, int64_t& x,
                      int64_t c[3]) {
  int k = 0;
  while (k + 1 < ch.count && t >= near.box[k].voxels()) t -= near.box[k++].voxels();
  x = box_voxel(v.grid, near.box[k], t, c);
  for (int j = 0; j < k; ++j)
    if (near.box[j].holds(v.grid, c)) return false;
  return true;
}

/// The balls a near-box voxel x holds in the split of "Changed balls only": its squared
/// distance before (committed) and after; O (`old`) when a committed centre's distance changed,
/// N (`fresh`) when the distance changed and is not 0, U (`kept`) when it did not change and is
/// not 0 — the same ball in both masks, kept or inside a neighbour's, either way no other
/// largest ball. With `centres`, fewer: N only where the changed mask keeps a centre there, U
/// only where either mask does (the face-neighbour test, as for a ball inside a neighbour's it
/// may drop or keep it), for callers whose room for balls is bounded.
struct NearBall {
  uint32_t before = 0, after = 0;
  bool old = false, fresh = false, kept = false;
};
PF_HD NearBall near_ball(const View& v, const Changes& ch, const NearDistances& near, int64_t x, const int64_t c[3],
                         bool centres = false) {
  NearBall b;
  b.before = v.d2[x];
  b.after = near.at(v, ch, x, c);
  const auto centre_after = [&] {
    return !centres || kept_centre(v, c, b.after, [&](int64_t j, const int64_t q[3]) { return near.at(v, ch, j, q); }, true);
  };
  if (b.before == b.after) {
    b.kept = b.before != 0 && ((centres && CentreBits::holds(v.centres, v.grid, c)) || centre_after());
  } else {
    b.old = b.before != 0 && CentreBits::holds(v.centres, v.grid, c);
    b.fresh = b.after != 0 && centre_after();
  }
  return b;
}

/// The wrapped pieces [lo[s], hi[s]] of a box along axis k (one, or two where a periodic box
/// crosses a face); returns how many.
PF_HD int pieces(const Grid& g, const Box& b, int k, int64_t lo[2], int64_t hi[2]) {
  const int64_t n = g.n[k];
  if (b.lo[k] < 0) {
    lo[0] = b.lo[k] + n, hi[0] = n - 1, lo[1] = 0, hi[1] = b.hi[k];
    return 2;
  }
  if (b.hi[k] >= n) {
    lo[0] = b.lo[k], hi[0] = n - 1, lo[1] = 0, hi[1] = b.hi[k] - n;
    return 2;
  }
  lo[0] = b.lo[k], hi[0] = b.hi[k];
  return 1;
}

/// The 4×4×4 bricks (CentreBits') that meet a box, as flat items — a thread each on the device,
/// a loop on the host: brick t's coordinates and the box's voxels in it.
struct BrickWalk {
  int64_t lo[3][2] = {}, hi[3][2] = {};  // the box's wrapped pieces along each axis
  int count[3] = {1, 1, 1};
  int64_t piece_bricks[8] = {};  // bricks of each combination of pieces (x fastest)
  int64_t bricks = 0;

  PF_HD static BrickWalk of(const Grid& g, const Box& box) {
    BrickWalk s;
    for (int k = 0; k < 3; ++k) s.count[k] = pieces(g, box, k, s.lo[k], s.hi[k]);
    for (int pz = 0; pz < s.count[2]; ++pz)
      for (int py = 0; py < s.count[1]; ++py)
        for (int px = 0; px < s.count[0]; ++px) {
          const int64_t b = (s.hi[0][px] / 4 - s.lo[0][px] / 4 + 1) * (s.hi[1][py] / 4 - s.lo[1][py] / 4 + 1) *
                            (s.hi[2][pz] / 4 - s.lo[2][pz] / 4 + 1);
          s.piece_bricks[px + 2 * (py + 2 * pz)] = b;
          s.bricks += b;
        }
    return s;
  }

  /// Brick t: its coordinates w and the box's voxels in it, from[k] … to[k] along each axis.
  PF_HD void brick(int64_t t, int64_t w[3], int64_t from[3], int64_t to[3]) const {
    int piece = 0;
    while (t >= piece_bricks[piece]) t -= piece_bricks[piece++];
    const int p[3] = {piece % 2, (piece / 2) % 2, piece / 4};
    const uint32_t nx = uint32_t(hi[0][p[0]] / 4 - lo[0][p[0]] / 4 + 1);
    const uint32_t ny = uint32_t(hi[1][p[1]] / 4 - lo[1][p[1]] / 4 + 1);
    const uint32_t u = uint32_t(t), row = u / nx;  // bricks of a box are far fewer than 2^32
    w[0] = lo[0][p[0]] / 4 + int64_t(u - row * nx);
    w[1] = lo[1][p[1]] / 4 + int64_t(row % ny);
    w[2] = lo[2][p[2]] / 4 + int64_t(row / ny);
    for (int k = 0; k < 3; ++k) {
      from[k] = 4 * w[k] > lo[k][p[k]] ? 4 * w[k] : lo[k][p[k]];
      to[k] = 4 * w[k] + 3 < hi[k][p[k]] ? 4 * w[k] + 3 : hi[k][p[k]];
    }
  }
};

/// U's kept centres outside the near boxes in brick t of `walk` (a BrickWalk of a box round
/// `box` grown by D − 1: U's balls have radii of at most D) whose balls reach `box`: emit(index,
/// coordinates, squared radius) for each. U's near-box balls are the caller's (near_ball).
template <class Emit>
PF_HD void u_centres_in_brick(const View& v, const Changes& ch, const int64_t* d1, const BrickWalk& walk, int64_t t,
                              const Box& box, Emit&& emit) {
  const Grid& g = v.grid;
  int64_t w[3], from[3], to[3];
  walk.brick(t, w, from, to);
  uint64_t bits = v.centres[CentreBits::brick(g, w)];
  while (bits) {
    const int b = CentreBits::lowest(bits);
    bits &= bits - 1;
    const int64_t c[3] = {4 * w[0] + b % 4, 4 * w[1] + (b / 4) % 4, 4 * w[2] + b / 16};
    if (c[0] < from[0] || c[0] > to[0] || c[1] < from[1] || c[1] > to[1] || c[2] < from[2] || c[2] > to[2] ||
        near_changes(v, ch, d1, c))
      continue;
    const int64_t i = g.index(c);
    const uint32_t r2 = v.d2[i];
    if (box.gap2(g, c) < r2) emit(i, c, r2);
  }
}

/// The range of images k·n of centre coordinate cv along axis a whose ball (half-width w) can
/// meet [lo, hi]: images first … last (only 0 where not periodic).
PF_HD void images(const Grid& g, int a, int64_t cv, int64_t w, int64_t lo, int64_t hi, int64_t& first, int64_t& last) {
  if (!(g.periodic() && g.n[a] > 1)) {
    first = last = 0;
    return;
  }
  const int64_t n = g.n[a];
  // cv + k·n + w ≥ lo and cv + k·n − w ≤ hi
  const int64_t a0 = lo - w - cv, a1 = hi + w - cv;
  first = a0 >= 0 ? (a0 + n - 1) / n : -((-a0) / n);
  last = a1 >= 0 ? a1 / n : -((-a1 + n - 1) / n);
}

/// The x-chords of centre c's ball (squared radius r2) inside `box`: chord(row, x0, x1) for the
/// box-local row index (y, z) → row = y + z·ly and local x0 … x1, every image of the ball where
/// periodic, for the rows `wanted(row)` accepts; rows dealt out by `part` of `parts` (a
/// thread's share).
template <class Wanted, class Chord>
PF_HD void ball_chords(const Grid& g, const Box& box, const int64_t c[3], uint32_t r2, int64_t part, int64_t parts,
                       Wanted&& wanted, Chord&& chord) {
  const VoxelMetric m{};
  const int64_t wz = g.n[2] > 1 ? chord_half_width(m, r2, 2, 0, 0) : 0;
  const int64_t wy = g.n[1] > 1 ? chord_half_width(m, r2, 1, 0, 0) : 0;
  const int64_t wx = g.n[0] > 1 ? chord_half_width(m, r2, 0, 0, 0) : 0;
  const int64_t ly = box.length(1);
  int64_t fz, tz, fy, ty, fx, tx;
  images(g, 2, c[2], wz, box.lo[2], box.hi[2], fz, tz);
  images(g, 1, c[1], wy, box.lo[1], box.hi[1], fy, ty);
  images(g, 0, c[0], wx, box.lo[0], box.hi[0], fx, tx);
  int64_t turn = 0;  // whose the next row is: rows go round the parts in turn (no division)
  for (int64_t kz = fz; kz <= tz; ++kz) {
    const int64_t cz = c[2] + kz * g.n[2];
    const int64_t z0 = cz - wz > box.lo[2] ? cz - wz : box.lo[2], z1 = cz + wz < box.hi[2] ? cz + wz : box.hi[2];
    for (int64_t z = z0; z <= z1; ++z) {
      const int64_t dz = z - cz;
      const int64_t ry = g.n[1] > 1 ? chord_half_width(m, r2, 1, 0, dz) : 0;
      if (ry < 0) continue;
      for (int64_t ky = fy; ky <= ty; ++ky) {
        const int64_t cy = c[1] + ky * g.n[1];
        const int64_t y0 = cy - ry > box.lo[1] ? cy - ry : box.lo[1], y1 = cy + ry < box.hi[1] ? cy + ry : box.hi[1];
        for (int64_t y = y0; y <= y1; ++y) {
          const bool mine = turn == part;
          if (++turn == parts) turn = 0;
          if (!mine) continue;
          const int64_t box_row = (y - box.lo[1]) + (z - box.lo[2]) * ly;
          if (!wanted(box_row)) continue;
          const int64_t dy = y - cy;
          const int64_t rx = g.n[0] > 1 ? chord_half_width(m, r2, 0, dy, dz) : 0;
          if (rx < 0) continue;
          for (int64_t kx = fx; kx <= tx; ++kx) {
            const int64_t cx = c[0] + kx * g.n[0];
            const int64_t x0 = cx - rx > box.lo[0] ? cx - rx : box.lo[0], x1 = cx + rx < box.hi[0] ? cx + rx : box.hi[0];
            if (x0 <= x1) chord(box_row, x0 - box.lo[0], x1 - box.lo[0]);
          }
        }
      }
    }
  }
}

/// The flat PSD count layout (the engine's, terms::Psd's): at_least[0 … edges), above, phase
/// voxels.
PF_HD int count_entries(int edge_count) { return edge_count + 2; }

/// A thickness value's place in the tallies a change is counted in (hits: edge_count + 2
/// entries): hits[k] for the values with exactly k edges at or below them (k ≤ edge_count),
/// hits[edge_count + 1] for those above the last edge as well; −1 for 0 (no phase voxel). The
/// rule is psd_from_thickness's, on the stored float.
PF_HD int hit_of(const View& v, float value) {
  if (!(value > 0)) return -1;
  const double d = value;
  int lo = 0, hi = v.edge_count;  // the number of edges ≤ d
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (v.edges[mid] <= d) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
PF_HD bool above_of(const View& v, float value) { return value > 0 && double(value) > v.edges[v.edge_count - 1]; }

/// Counts a value in (sign +1) or out (−1) of `hits` through `add(entry, sign)`.
template <class Add>
PF_HD void tally(const View& v, float value, int64_t sign, Add&& add) {
  const int k = hit_of(v, value);
  if (k < 0) return;
  add(k, sign);
  if (above_of(v, value)) add(v.edge_count + 1, sign);
}

/// The flat counts' change from the hits' change: at_least[i] = Σ over k > i of hits[k],
/// above, phase voxels = Σ over k ≤ edge_count of hits[k]; `hit(k)` reads the hits,
/// `out(entry, value)` takes each count.
template <class Hit, class Out>
PF_HD void counts_from_hits(int edge_count, Hit&& hit, Out&& out) {
  int64_t suffix = 0;
  for (int i = edge_count; i >= 1; --i) {
    suffix += hit(i);
    out(i - 1, suffix);
  }
  out(edge_count, hit(edge_count + 1));
  out(edge_count + 1, suffix + hit(0));
}

/// The same from and into flat arrays.
PF_HD void counts_from_hit_array(int edge_count, const int64_t* hits, int64_t* counts) {
  counts_from_hits(edge_count, [&](int k) { return hits[k]; }, [&](int e, int64_t c) { counts[e] = c; });
}

/// The sorted offsets of Offsets, as host vectors (copied to the device by the CUDA scorer).
struct OffsetTable {
  std::vector<uint32_t> packed, norm, first;
  uint32_t limit = 0;

  /// Every offset of norm ≤ radius² (none along a flat axis, not the zero offset).
  OffsetTable(const Shape& shape, int64_t radius) {
    radius = std::min<int64_t>(radius, 511);
    limit = uint32_t(radius * radius);
    const int64_t r[3] = {shape.nx > 1 ? radius : 0, shape.ny > 1 ? radius : 0, shape.nz > 1 ? radius : 0};
    std::vector<std::pair<uint32_t, uint32_t>> all;
    for (int64_t dz = -r[2]; dz <= r[2]; ++dz)
      for (int64_t dy = -r[1]; dy <= r[1]; ++dy)
        for (int64_t dx = -r[0]; dx <= r[0]; ++dx) {
          const uint32_t n = uint32_t(dx * dx + dy * dy + dz * dz);
          if (n == 0 || n > limit) continue;
          all.push_back({n, Offsets::pack(dx, dy, dz)});
        }
    std::sort(all.begin(), all.end());
    for (const auto& [n, p] : all) {
      norm.push_back(n);
      packed.push_back(p);
    }
    first.assign(std::size_t(limit) + 2, uint32_t(norm.size()));
    for (std::size_t e = norm.size(); e-- > 0;) first[norm[e]] = uint32_t(e);
    for (std::size_t v = first.size() - 1; v-- > 0;) first[v] = std::min(first[v], first[v + 1]);
  }

  Offsets view() const {
    return {packed.data(), norm.data(), first.data(), limit, uint32_t(norm.size())};
  }
};

}  // namespace poreforge::detail::local
