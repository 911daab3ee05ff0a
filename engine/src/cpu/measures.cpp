// Structural measures on the CPU: configuration histograms (Euler characteristic and
// marching-cubes area), face counts, run lengths (chords, lineal path), union-find labelling,
// and the canonical numbering both labelling backends share.
#include "poreforge/measures.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>

#include "poreforge/euler.hpp"
#include "../measures_detail.hpp"
#include "cpu_backend.hpp"
#include "poreforge/error.hpp"
#include "poreforge/local_thickness.hpp"

namespace poreforge {
namespace {

// An isolated voxel is one component; removing the centre of a full 3×3×3 block opens a
// cavity: both add 1 to χ.
static_assert(detail::euler_weight8(1) == 1, "one voxel's corner");
static_assert(detail::euler_flip_delta8(0) == 8, "a voxel appears alone");
static_assert(detail::euler_flip_delta8((1ul << 27) - 1) == 8, "a cavity opens");

// The 8·χ weights, tabulated once.
const std::array<int, 256>& euler_table() {
  static const std::array<int, 256> table = [] {
    std::array<int, 256> t{};
    for (unsigned c = 0; c < 256; ++c) t[c] = detail::euler_weight8(c);
    return t;
  }();
  return table;
}

// Bit 2·dy + 4·dz of a corner's configuration for the x-column of 4 voxels (y − 1 + dy,
// z − 1 + dz) at x; `rows[k]` is the voxel row (dy, dz) = (k & 1, k >> 1), null when outside.
inline unsigned column_bits(const uint8_t* const rows[4], int64_t x) {
  unsigned c = 0;
  for (int k = 0; k < 4; ++k)
    if (rows[k] && rows[k][x]) c |= 1u << (2 * k);
  return c;
}

// Visits every lattice corner (x, y, z), 0 ≤ x ≤ nx etc., with its configuration. Outside
// voxels are not phase (`replicate` false) or copy the nearest face voxel (`replicate` true).
// `visit(thread_local_state, configuration, x, y, z)`; OpenMP over z.
template <class State, class Visit, class Merge>
void for_each_corner(const Mask& phase, bool replicate, Visit visit, Merge merge) {
  const Shape s = phase.shape();
  const uint8_t* data = phase.data();
  auto row = [&](int64_t y, int64_t z) -> const uint8_t* {
    if (replicate) {
      y = std::clamp<int64_t>(y, 0, s.ny - 1);
      z = std::clamp<int64_t>(z, 0, s.nz - 1);
    } else if (y < 0 || z < 0 || y >= s.ny || z >= s.nz) {
      return nullptr;
    }
    return data + phase.index(0, y, z);
  };
#pragma omp parallel
  {
    State state{};
#pragma omp for schedule(static)
    for (int64_t z = 0; z <= s.nz; ++z)
      for (int64_t y = 0; y <= s.ny; ++y) {
        const uint8_t* rows[4] = {row(y - 1, z - 1), row(y, z - 1), row(y - 1, z), row(y, z)};
        unsigned previous = replicate ? column_bits(rows, 0) : 0u;  // column x − 1
        for (int64_t x = 0; x <= s.nx; ++x) {
          const unsigned current =
              x < s.nx ? column_bits(rows, x) : (replicate ? column_bits(rows, s.nx - 1) : 0u);
          visit(state, previous | (current << 1), x, y, z);
          previous = current;
        }
      }
    merge(state);
  }
}

// ---- marching-cubes area per configuration ----

struct Point {
  double x, y, z;
};

Point corner_position(unsigned v, const Spacing& sp) {
  return {double(v & 1u) * sp.x, double((v >> 1) & 1u) * sp.y, double((v >> 2) & 1u) * sp.z};
}

// Area of the marching-cubes polygons of configuration `c` in a cell of the given spacing.
double configuration_area(unsigned c, const Spacing& sp) {
  auto in = [&](unsigned v) { return ((c >> v) & 1u) != 0; };
  // Edge e joins corners (lo, lo | 1 << axis); an iso-vertex sits at its midpoint when the
  // two differ. Edges indexed by (axis, lo) → axis * 8 + lo (lo has bit `axis` clear).
  std::array<std::array<int, 2>, 24> links;
  std::array<int, 24> degree{};
  auto link = [&](int a, int b) {
    links[std::size_t(a)][std::size_t(degree[std::size_t(a)]++)] = b;
    links[std::size_t(b)][std::size_t(degree[std::size_t(b)]++)] = a;
  };
  auto edge_between = [](unsigned u, unsigned v) {
    const unsigned d = u ^ v;
    const int axis = d == 1u ? 0 : d == 2u ? 1 : 2;
    return axis * 8 + int(u & v);
  };
  for (int axis = 0; axis < 3; ++axis)
    for (unsigned side = 0; side < 2; ++side) {
      const int b = (axis + 1) % 3, d = (axis + 2) % 3;
      const unsigned base = side << axis;
      const unsigned ring[4] = {base, base | (1u << b), base | (1u << b) | (1u << d), base | (1u << d)};
      int crossings = 0;
      for (int k = 0; k < 4; ++k) crossings += in(ring[k]) != in(ring[(k + 1) % 4]);
      if (crossings == 0) continue;
      if (crossings == 2) {
        int ends[2] = {0, 0}, n = 0;
        for (int k = 0; k < 4; ++k)
          if (in(ring[k]) != in(ring[(k + 1) % 4])) ends[n++] = edge_between(ring[k], ring[(k + 1) % 4]);
        link(ends[0], ends[1]);
      } else {
        // Diagonal phase corners: they touch (26-connected phase), so each segment cuts off
        // one non-phase corner, joining that corner's two face edges.
        for (int k = 0; k < 4; ++k)
          if (!in(ring[k]))
            link(edge_between(ring[(k + 3) % 4], ring[k]), edge_between(ring[k], ring[(k + 1) % 4]));
      }
    }
  auto midpoint = [&](int e) {
    const int axis = e / 8;
    const unsigned lo = unsigned(e % 8), hi = lo | (1u << axis);
    const Point p = corner_position(lo, sp), q = corner_position(hi, sp);
    return Point{(p.x + q.x) / 2, (p.y + q.y) / 2, (p.z + q.z) / 2};
  };
  double area = 0;
  std::array<bool, 24> seen{};
  for (int start = 0; start < 24; ++start) {
    if (degree[std::size_t(start)] == 0 || seen[std::size_t(start)]) continue;
    std::vector<Point> cycle;
    int previous = -1, e = start;
    do {
      seen[std::size_t(e)] = true;
      cycle.push_back(midpoint(e));
      const auto& next = links[std::size_t(e)];
      const int n = next[0] != previous ? next[0] : next[1];
      previous = e;
      e = n;
    } while (e != start);
    Point centre{0, 0, 0};
    for (const Point& p : cycle) centre = {centre.x + p.x, centre.y + p.y, centre.z + p.z};
    const double k = double(cycle.size());
    centre = {centre.x / k, centre.y / k, centre.z / k};
    for (std::size_t i = 0; i < cycle.size(); ++i) {
      const Point& p = cycle[i];
      const Point& q = cycle[(i + 1) % cycle.size()];
      const double ux = p.x - centre.x, uy = p.y - centre.y, uz = p.z - centre.z;
      const double vx = q.x - centre.x, vy = q.y - centre.y, vz = q.z - centre.z;
      const double cx = uy * vz - uz * vy, cy = uz * vx - ux * vz, cz = ux * vy - uy * vx;
      area += 0.5 * std::sqrt(cx * cx + cy * cy + cz * cz);
    }
  }
  return area;
}

// ---- Crofton directions ----

// The 13 directions of a 2×2×2 cell, first non-zero component positive.
constexpr std::array<std::array<int, 3>, 13> kDirections = {{{1, 0, 0},  {0, 1, 0},  {0, 0, 1},   {1, 1, 0},  {1, -1, 0},
                                                            {1, 0, 1},  {1, 0, -1}, {0, 1, 1},   {0, 1, -1}, {1, 1, 1},
                                                            {1, 1, -1}, {1, -1, 1}, {1, -1, -1}}};

// Share of the unit sphere nearer to ±d than to any other direction (in physical space), by
// a Fibonacci lattice of points: a fixed, deterministic quadrature.
std::array<double, 13> crofton_weights(const Spacing& sp) {
  std::array<Point, 13> unit;
  for (std::size_t k = 0; k < 13; ++k) {
    const double x = kDirections[k][0] * sp.x, y = kDirections[k][1] * sp.y, z = kDirections[k][2] * sp.z;
    const double n = std::sqrt(x * x + y * y + z * z);
    unit[k] = {x / n, y / n, z / n};
  }
  constexpr int kPoints = 400000;
  const double golden = 3.14159265358979323846 * (3.0 - std::sqrt(5.0));
  std::array<int64_t, 13> nearest{};
  for (int i = 0; i < kPoints; ++i) {
    const double z = 1.0 - (2.0 * i + 1.0) / kPoints, r = std::sqrt(1.0 - z * z), phi = golden * i;
    const double x = r * std::cos(phi), y = r * std::sin(phi);
    std::size_t best = 0;
    double best_dot = -1;
    for (std::size_t k = 0; k < 13; ++k) {
      const double dot = std::abs(x * unit[k].x + y * unit[k].y + z * unit[k].z);
      if (dot > best_dot) best_dot = dot, best = k;
    }
    ++nearest[best];
  }
  std::array<double, 13> w{};
  for (std::size_t k = 0; k < 13; ++k) w[k] = double(nearest[k]) / kPoints;
  return w;
}

// Phase/non-phase transitions between voxels d apart inside the box, for the 13 directions.
std::array<int64_t, 13> transitions(const Mask& phase) {
  const Shape s = phase.shape();
  std::array<int64_t, 13> total{};
  std::mutex lock;
#pragma omp parallel
  {
    std::array<int64_t, 13> local{};
#pragma omp for schedule(static)
    for (int64_t z = 0; z < s.nz; ++z)
      for (std::size_t k = 0; k < 13; ++k) {
        const int dx = kDirections[k][0], dy = kDirections[k][1], dz = kDirections[k][2];
        if (z + dz < 0 || z + dz >= s.nz) continue;
        const int64_t x0 = std::max(0, -dx), x1 = s.nx - std::max(0, dx);
        int64_t count = 0;
        for (int64_t y = std::max(0, -dy); y < s.ny - std::max(0, dy); ++y) {
          const uint8_t* a = phase.data() + phase.index(0, y, z);
          const uint8_t* b = phase.data() + phase.index(0, y + dy, z + dz) + dx;
          for (int64_t x = x0; x < x1; ++x) count += (a[x] != 0) != (b[x] != 0);
        }
        local[k] += count;
      }
    std::lock_guard<std::mutex> guard(lock);
    for (std::size_t k = 0; k < 13; ++k) total[k] += local[k];
  }
  return total;
}

// ---- runs along the axes ----

// Run-length histograms of both values along one axis: all runs, and runs touching neither
// face (chords). Index = length in voxels.
struct Runs {
  std::array<std::vector<int64_t>, 2> all, interior;
  explicit Runs(int64_t n = 0) {
    for (int v = 0; v < 2; ++v) {
      all[std::size_t(v)].assign(std::size_t(n + 1), 0);
      interior[std::size_t(v)].assign(std::size_t(n + 1), 0);
    }
  }
  void add(const Runs& o) {
    for (std::size_t v = 0; v < 2; ++v)
      for (std::size_t l = 0; l < all[v].size(); ++l) {
        all[v][l] += o.all[v][l];
        interior[v][l] += o.interior[v][l];
      }
  }
};

// Runs along `axis`. Every line is walked with x innermost, so that the reads stay contiguous:
// along x one row at a time, along y and z a plane of per-line run states at a time.
Runs runs_along(const Mask& phase, int axis) {
  const Shape s = phase.shape();
  const int64_t n = s.extent(axis);
  Runs total(n);
  std::mutex lock;
  const uint8_t* data = phase.data();
  // Lines along y are grouped by z, lines along z by y; along x every row is one line.
  const int64_t outer = axis == 2 ? s.ny : s.nz;
#pragma omp parallel
  {
    Runs local(n);
    auto close = [&](uint8_t v, int64_t length, int64_t start) {
      local.all[v][std::size_t(length)] += 1;
      if (start > 0 && start + length < n) local.interior[v][std::size_t(length)] += 1;
    };
    std::vector<int64_t> start(std::size_t(s.nx));
    std::vector<uint8_t> value(std::size_t(s.nx));
#pragma omp for schedule(static)
    for (int64_t o = 0; o < outer; ++o) {
      if (axis == 0) {
        for (int64_t y = 0; y < s.ny; ++y) {
          const uint8_t* row = data + phase.index(0, y, o);
          int64_t begin = 0;
          for (int64_t x = 1; x <= s.nx; ++x)
            if (x == s.nx || (row[x] != 0) != (row[begin] != 0)) {
              close(row[begin] != 0, x - begin, begin);
              begin = x;
            }
        }
        continue;
      }
      auto row_at = [&](int64_t t) {
        return axis == 1 ? data + phase.index(0, t, o) : data + phase.index(0, o, t);
      };
      const uint8_t* first = row_at(0);
      for (int64_t x = 0; x < s.nx; ++x) {
        start[std::size_t(x)] = 0;
        value[std::size_t(x)] = first[x] != 0;
      }
      for (int64_t t = 1; t < n; ++t) {
        const uint8_t* row = row_at(t);
        for (int64_t x = 0; x < s.nx; ++x) {
          const uint8_t v = row[x] != 0;
          if (v != value[std::size_t(x)]) {
            close(value[std::size_t(x)], t - start[std::size_t(x)], start[std::size_t(x)]);
            start[std::size_t(x)] = t;
            value[std::size_t(x)] = v;
          }
        }
      }
      for (int64_t x = 0; x < s.nx; ++x)
        close(value[std::size_t(x)], n - start[std::size_t(x)], start[std::size_t(x)]);
    }
    std::lock_guard<std::mutex> guard(lock);
    total.add(local);
  }
  return total;
}

ChordLengths chords_from(const std::array<Runs, 3>& runs, uint8_t value, const Spacing& sp) {
  ChordLengths out;
  for (int a = 0; a < 3; ++a) {
    const auto& h = runs[std::size_t(a)].interior[value ? 1 : 0];
    out.histogram[std::size_t(a)] = h;
    int64_t count = 0, length = 0;
    for (std::size_t l = 1; l < h.size(); ++l) {
      count += h[l];
      length += h[l] * int64_t(l);
    }
    out.count[std::size_t(a)] = count;
    out.mean_voxels[std::size_t(a)] = count ? double(length) / double(count) : 0.0;
    out.mean[std::size_t(a)] = out.mean_voxels[std::size_t(a)] * sp.along(a);
  }
  return out;
}

LinealPath lineal_from(const std::array<Runs, 3>& runs, uint8_t value, const Shape& s) {
  LinealPath out;
  for (int a = 0; a < 3; ++a) {
    const int64_t n = s.extent(a), lines = s.voxels() / n;
    const auto& h = runs[std::size_t(a)].all[value ? 1 : 0];
    auto& l = out.along[std::size_t(a)];
    l.assign(std::size_t(n / 2 + 1), 0.0);
    for (int64_t r = 0; r <= n / 2; ++r) {
      // A run of ℓ voxels holds ℓ − r segments of length r.
      int64_t inside = 0;
      for (int64_t len = r + 1; len <= n; ++len) inside += h[std::size_t(len)] * (len - r);
      l[std::size_t(r)] = double(inside) / double(lines * (n - r));
    }
  }
  return out;
}

std::array<Runs, 3> all_runs(const Mask& phase) {
  return {runs_along(phase, 0), runs_along(phase, 1), runs_along(phase, 2)};
}

}  // namespace

// ---- Euler characteristic ----

int euler_weight8(int configuration) { return euler_table()[std::size_t(configuration & 0xFF)]; }

namespace {
// The histogram of every lattice corner, or of the inner ones only (`inner`: 1 ≤ x < nx etc.).
ConfigurationHistogram corner_histogram(const Mask& phase, bool inner) {
  const Shape s = phase.shape();
  validate_shape(s);
  ConfigurationHistogram total{};
  std::mutex lock;
  for_each_corner<ConfigurationHistogram>(
      phase, false,
      [&](ConfigurationHistogram& h, unsigned c, int64_t x, int64_t y, int64_t z) {
        if (!inner || (x >= 1 && x < s.nx && y >= 1 && y < s.ny && z >= 1 && z < s.nz)) ++h[c];
      },
      [&](const ConfigurationHistogram& h) {
        std::lock_guard<std::mutex> guard(lock);
        for (std::size_t c = 0; c < 256; ++c) total[c] += h[c];
      });
  return total;
}
}  // namespace

ConfigurationHistogram configuration_histogram(const Mask& phase) { return corner_histogram(phase, false); }

ConfigurationHistogram interior_configuration_histogram(const Mask& phase) { return corner_histogram(phase, true); }

int64_t euler_characteristic(const ConfigurationHistogram& histogram) {
  int64_t sum = 0;
  for (std::size_t c = 0; c < 256; ++c) sum += histogram[c] * euler_table()[c];
  return sum / 8;
}

int64_t euler_characteristic(const Mask& phase) { return euler_characteristic(configuration_histogram(phase)); }

namespace {
// Configuration (bit dx + 2·dy + 4·dz) after a symmetry of the cube: the axes permuted by
// `perm` (new axis a is old axis perm[a]) and those in `flip` mirrored.
unsigned transformed(unsigned c, const int perm[3], unsigned flip) {
  unsigned out = 0;
  for (unsigned v = 0; v < 8; ++v) {
    if (!((c >> v) & 1u)) continue;
    unsigned w = 0;
    for (int a = 0; a < 3; ++a) w |= (((v >> perm[a]) & 1u) ^ ((flip >> a) & 1u)) << a;
    out |= 1u << w;
  }
  return out;
}

const std::array<int, 256>& interface_pattern_table() {
  static const std::array<int, 256> table = [] {
    static const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    std::array<unsigned, 256> smallest{};
    for (unsigned c = 0; c < 256; ++c) {
      smallest[c] = c;
      for (const auto& perm : perms)
        for (unsigned flip = 0; flip < 8; ++flip) smallest[c] = std::min(smallest[c], transformed(c, perm, flip));
    }
    std::array<int, 256> t{};
    int next = 0;
    std::array<int, 256> class_of_smallest;
    class_of_smallest.fill(-1);
    for (unsigned c = 0; c < 256; ++c) {
      if (c == 0 || c == 255) {
        t[c] = -1;
        continue;
      }
      int& k = class_of_smallest[smallest[c]];
      if (k < 0) k = next++;  // the smallest member comes first, so classes go in its order
      t[c] = k;
    }
    if (next != kInterfacePatterns) throw std::logic_error("interface patterns: " + std::to_string(next) + " classes");
    return t;
  }();
  return table;
}
}  // namespace

int interface_pattern(int configuration) { return interface_pattern_table()[std::size_t(configuration & 0xFF)]; }

std::array<double, kInterfacePatterns> interface_pattern_shares(const ConfigurationHistogram& h) {
  std::array<double, kInterfacePatterns> out{};
  double cells = 0;
  for (std::size_t c = 1; c < 255; ++c) {
    out[std::size_t(interface_pattern(int(c)))] += double(h[c]);
    cells += double(h[c]);
  }
  if (cells > 0)
    for (double& x : out) x /= cells;
  return out;
}

LocalPorosityHistogram local_porosity_histogram(const Mask& pore) {
  const Shape s = pore.shape();
  validate_shape(s);
  LocalPorosityHistogram out;
  // Every voxel is a centre; a neighbour beyond a face is the nearest voxel inside, so the
  // faces' voxels are counted as the others are (an annealer left free there piles spikes on
  // them). Sums of three along one axis at a time, each on the sums before: x, then y, then z
  // (the cube), z of the x-sums (the square normal to y) and z of the y-sums (normal to x); the
  // 5×5 squares the same way with sums of five.
  const int64_t nx = s.nx, ny = s.ny, nz = s.nz;
  const auto index = [&](int64_t x, int64_t y, int64_t z) {
    return std::size_t(std::clamp<int64_t>(x, 0, nx - 1) +
                        nx * (std::clamp<int64_t>(y, 0, ny - 1) + ny * std::clamp<int64_t>(z, 0, nz - 1)));
  };
  const std::size_t n = std::size_t(s.voxels());
  std::vector<uint8_t> sx(n), sy(n), sxy(n), wx(n), wy(n), wxy(n);  // w: sums of five
#pragma omp parallel for schedule(static)
  for (int64_t z = 0; z < nz; ++z)
    for (int64_t y = 0; y < ny; ++y)
      for (int64_t x = 0; x < nx; ++x) {
        const std::size_t i = index(x, y, z);
        sx[i] = uint8_t(pore[int64_t(index(x - 1, y, z))] + pore[int64_t(i)] + pore[int64_t(index(x + 1, y, z))]);
        sy[i] = uint8_t(pore[int64_t(index(x, y - 1, z))] + pore[int64_t(i)] + pore[int64_t(index(x, y + 1, z))]);
        wx[i] = uint8_t(sx[i] + pore[int64_t(index(x - 2, y, z))] + pore[int64_t(index(x + 2, y, z))]);
        wy[i] = uint8_t(sy[i] + pore[int64_t(index(x, y - 2, z))] + pore[int64_t(index(x, y + 2, z))]);
      }
#pragma omp parallel for schedule(static)
  for (int64_t z = 0; z < nz; ++z)
    for (int64_t y = 0; y < ny; ++y)
      for (int64_t x = 0; x < nx; ++x) {
        sxy[index(x, y, z)] = uint8_t(sx[index(x, y - 1, z)] + sx[index(x, y, z)] + sx[index(x, y + 1, z)]);
        int sum = 0;
        for (int64_t d = -2; d <= 2; ++d) sum += wx[index(x, y + d, z)];
        wxy[index(x, y, z)] = uint8_t(sum);
      }
  std::mutex lock;
#pragma omp parallel
  {
    std::array<int64_t, kLocalPorosityBins> mine{};
#pragma omp for schedule(static)
    for (int64_t z = 0; z < nz; ++z)
      for (int64_t y = 0; y < ny; ++y)
        for (int64_t x = 0; x < nx; ++x) {
          const std::size_t i = index(x, y, z), below = index(x, y, z - 1), above = index(x, y, z + 1);
          const int centre = pore[int64_t(i)] ? 1 : 0;
          const int b = local_porosity_bin(centre, sxy[below] + sxy[i] + sxy[above] - centre);
          if (b >= 0) ++mine[std::size_t(b)];
          const int in_plane[3] = {sy[below] + sy[i] + sy[above] - centre,  // normal to x
                                   sx[below] + sx[i] + sx[above] - centre,  // normal to y
                                   sxy[i] - centre};                        // normal to z
          int wide[3] = {-centre, -centre, wxy[i] - centre};  // the 5×5 squares normal to x, y, z
          for (int64_t d = -2; d <= 2; ++d) {
            const std::size_t j = index(x, y, z + d);
            wide[0] += wy[j];
            wide[1] += wx[j];
          }
          for (int axis = 0; axis < 3; ++axis) {
            const int q = local_porosity_square_bin(axis, centre, in_plane[axis]);
            if (q >= 0) ++mine[std::size_t(q)];
            const int w = local_porosity_wide_square_bin(axis, centre, wide[axis]);
            if (w >= 0) ++mine[std::size_t(w)];
          }
        }
    std::lock_guard<std::mutex> guard(lock);
    for (std::size_t b = 0; b < mine.size(); ++b) out.counts[b] += mine[b];
  }
  out.voxels = s.voxels();
  return out;
}

PatternOccupancy pattern_occupancy(const Mask& phase) {
  PatternOccupancy o;
  const Shape s = phase.shape();
  if (s.nx < 2 || s.ny < 2 || s.nz < 2) return o;
  // Each cell holds 8 voxels, 4 pairs along each axis, 2 squares normal to each axis and
  // itself: bit dx + 2·dy + 4·dz is voxel (dx, dy, dz).
  const ConfigurationHistogram h = interior_configuration_histogram(phase);
  double cells = 0, voxels = 0, cubes = 0;
  std::array<double, 3> pairs{}, squares{};
  for (unsigned c = 0; c < 256; ++c) {
    if (!h[c]) continue;
    const double n = double(h[c]);
    cells += n;
    for (unsigned v = 0; v < 8; ++v) voxels += n * double((c >> v) & 1u);
    for (int a = 0; a < 3; ++a) {
      const unsigned along = 1u << a;
      for (unsigned v = 0; v < 8; ++v)
        if (!(v & along)) pairs[std::size_t(a)] += n * double(((c >> v) | (c >> (v | along))) & 1u);
      for (unsigned side = 0; side < 2; ++side) {
        unsigned any = 0;
        for (unsigned v = 0; v < 8; ++v)
          if (((v >> a) & 1u) == side) any |= (c >> v) & 1u;
        squares[std::size_t(a)] += n * double(any);
      }
    }
    cubes += n * double(c != 0);
  }
  o.voxel = voxels / (8 * cells);
  for (std::size_t a = 0; a < 3; ++a) {
    o.pair[a] = pairs[a] / (4 * cells);
    o.square[a] = squares[a] / (2 * cells);
  }
  o.cube = cubes / cells;
  o.known = true;
  return o;
}

double expected_euler_characteristic(const PatternOccupancy& o, const Shape& box) {
  validate_shape(box);
  if (!o.known) throw InputError("expected_euler_characteristic: the occupancies are not known");
  const double n[3] = {double(box.nx), double(box.ny), double(box.nz)};
  double cubes = o.voxel * n[0] * n[1] * n[2], faces = 0, edges = 0, corners = 8 * o.voxel;
  for (int a = 0; a < 3; ++a) {
    const int b = (a + 1) % 3, c = (a + 2) % 3;
    // Faces normal to a: between two voxels of the box inside, one voxel on its two faces.
    faces += n[b] * n[c] * ((n[a] - 1) * o.pair[a] + 2 * o.voxel);
    // Edges along a: a 2×2 square inside, a pair on the box's faces, one voxel on its edges.
    edges += n[a] * ((n[b] - 1) * (n[c] - 1) * o.square[a] + 2 * (n[c] - 1) * o.pair[c] +
                     2 * (n[b] - 1) * o.pair[b] + 4 * o.voxel);
    // Corners on the two faces normal to a (a square), on the four edges along a (a pair).
    corners += 2 * (n[b] - 1) * (n[c] - 1) * o.square[a] + 4 * (n[a] - 1) * o.pair[a];
  }
  corners += (n[0] - 1) * (n[1] - 1) * (n[2] - 1) * o.cube;
  return corners - edges + faces - cubes;
}

namespace {
// The configuration of corner (cx, cy, cz), outside voxels not phase.
unsigned corner_configuration(const Mask& phase, int64_t cx, int64_t cy, int64_t cz) {
  const Shape s = phase.shape();
  unsigned c = 0;
  for (unsigned v = 0; v < 8; ++v) {
    const int64_t x = cx - 1 + (v & 1u), y = cy - 1 + ((v >> 1) & 1u), z = cz - 1 + ((v >> 2) & 1u);
    if (x < 0 || y < 0 || z < 0 || x >= s.nx || y >= s.ny || z >= s.nz) continue;
    if (phase(x, y, z)) c |= 1u << v;
  }
  return c;
}

void check_voxel(const Mask& phase, int64_t x, int64_t y, int64_t z) {
  const Shape s = phase.shape();
  if (x < 0 || y < 0 || z < 0 || x >= s.nx || y >= s.ny || z >= s.nz)
    throw InputError("voxel (" + std::to_string(x) + ", " + std::to_string(y) + ", " + std::to_string(z) +
                     ") lies outside the " + to_string(s) + " volume");
}
}  // namespace

int euler_flip_delta(const Mask& phase, int64_t x, int64_t y, int64_t z) {
  check_voxel(phase, x, y, z);
  const Shape s = phase.shape();
  unsigned long neighbourhood = 0;
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        const int64_t a = x + dx, b = y + dy, c = z + dz;
        if (a < 0 || b < 0 || c < 0 || a >= s.nx || b >= s.ny || c >= s.nz || !phase(a, b, c)) continue;
        neighbourhood |= 1ul << ((dx + 1) + 3 * (dy + 1) + 9 * (dz + 1));
      }
  return detail::euler_flip_delta8(neighbourhood) / 8;
}

void update_histogram_for_flip(ConfigurationHistogram& histogram, const Mask& phase, int64_t x, int64_t y,
                               int64_t z) {
  check_voxel(phase, x, y, z);
  for (unsigned corner = 0; corner < 8; ++corner) {
    const int64_t i = corner & 1u, j = (corner >> 1) & 1u, k = (corner >> 2) & 1u;
    const unsigned c = corner_configuration(phase, x + i, y + j, z + k);
    const unsigned bit = 1u << ((1 - i) + 2 * (1 - j) + 4 * (1 - k));
    --histogram[c];
    ++histogram[c ^ bit];
  }
}

namespace {
// f(opening) for the opening {LT ≥ r} of each r, in order.
template <class F>
std::vector<int64_t> for_openings(const Volume<float>& thickness, const std::vector<double>& radii, F&& f) {
  std::vector<int64_t> out;
  out.reserve(radii.size());
  Mask opening(thickness.shape(), thickness.spacing());
  const std::size_t n = std::size_t(thickness.voxels());
  for (double r : radii) {
    const float* t = thickness.data();
    uint8_t* m = opening.data();
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < n; ++i) m[i] = t[i] > 0.0f && double(t[i]) >= r;
    out.push_back(f(opening));
  }
  return out;
}
}  // namespace

std::vector<int64_t> euler_of_openings(const Volume<float>& thickness, const std::vector<double>& radii) {
  return for_openings(thickness, radii, [](const Mask& opening) { return euler_characteristic(opening); });
}

std::vector<int64_t> inner_euler8_of_openings(const Volume<float>& thickness, const std::vector<double>& radii) {
  return for_openings(thickness, radii, [](const Mask& opening) {
    const ConfigurationHistogram h = interior_configuration_histogram(opening);
    int64_t sum = 0;
    for (std::size_t c = 0; c < 256; ++c) sum += h[c] * euler_table()[c];
    return sum;
  });
}

// ---- specific surface ----

double marching_cubes_area(int configuration, const Spacing& spacing) {
  validate_spacing(spacing);
  return configuration_area(unsigned(configuration) & 0xFFu, spacing);
}

SurfaceMeasures specific_surface(const Mask& phase) {
  const Shape s = phase.shape();
  const Spacing sp = phase.spacing();
  validate_shape(s);
  validate_spacing(sp);
  std::array<double, 256> area{};
  for (unsigned c = 0; c < 256; ++c) area[c] = configuration_area(c, sp);

  // Weighted histogram: a cell straddling a face counts ½ per face axis; ×8 keeps it integer.
  ConfigurationHistogram weighted{};
  std::mutex lock;
  auto factor = [](int64_t p, int64_t n) { return (p == 0 || p == n) ? 1 : 2; };
  for_each_corner<ConfigurationHistogram>(
      phase, true,
      [&](ConfigurationHistogram& h, unsigned c, int64_t x, int64_t y, int64_t z) {
        if (c != 0 && c != 255) h[c] += factor(x, s.nx) * factor(y, s.ny) * factor(z, s.nz);
      },
      [&](const ConfigurationHistogram& h) {
        std::lock_guard<std::mutex> guard(lock);
        for (std::size_t c = 0; c < 256; ++c) weighted[c] += h[c];
      });

  SurfaceMeasures out;
  for (std::size_t c = 0; c < 256; ++c) out.area += double(weighted[c]) * area[c];
  out.area /= 8.0;

  const std::array<double, 13> weights = crofton_weights(sp);
  const std::array<int64_t, 13> crossings = transitions(phase);
  double crofton_per_volume = 0;
  for (std::size_t k = 0; k < 13; ++k) {
    const int dx = kDirections[k][0], dy = kDirections[k][1], dz = kDirections[k][2];
    // Lattice lines along d cross a unit area |d| / voxel volume times, so a surface of area A
    // is crossed A·|d|·|cos| / voxel volume times; over the box's voxels, not the pairs, so
    // that a surface inside the box counts whole.
    const double length = std::sqrt(dx * dx * sp.x * sp.x + dy * dy * sp.y * sp.y + dz * dz * sp.z * sp.z);
    crofton_per_volume += 2.0 * weights[k] * double(crossings[k]) / (double(s.voxels()) * length);
  }

  int64_t fx = 0, fy = 0, fz = 0;
  const uint8_t* d = phase.data();
  const int64_t sx = 1, sy = s.nx, sz = s.nx * s.ny;
#pragma omp parallel for schedule(static) reduction(+ : fx, fy, fz)
  for (int64_t z = 0; z < s.nz; ++z)
    for (int64_t y = 0; y < s.ny; ++y) {
      const uint8_t* row = d + phase.index(0, y, z);
      for (int64_t x = 0; x < s.nx; ++x) {
        const bool v = row[x] != 0;
        if (x + 1 < s.nx) fx += v != (row[x + sx] != 0);
        if (y + 1 < s.ny) fy += v != (row[x + sy] != 0);
        if (z + 1 < s.nz) fz += v != (row[x + sz] != 0);
      }
    }
  out.faces = {fx, fy, fz};
  out.face_area = double(fx) * sp.y * sp.z + double(fy) * sp.x * sp.z + double(fz) * sp.x * sp.y;
  out.volume = double(s.voxels()) * sp.x * sp.y * sp.z;
  out.area_per_volume = out.area / out.volume;
  // Along a flat axis no pair of voxels exists, so the estimate would miss directions.
  const bool flat = s.nx == 1 || s.ny == 1 || s.nz == 1;
  out.crofton_per_volume = flat ? 0.0 : crofton_per_volume;
  out.crofton_area = out.crofton_per_volume * out.volume;
  out.faces_per_volume = out.face_area / out.volume;
  return out;
}

// ---- chords and lineal path ----

ChordLengths chord_lengths(const Mask& phase, uint8_t value) {
  validate_shape(phase.shape());
  return chords_from(all_runs(phase), value, phase.spacing());
}

LinealPath lineal_path(const Mask& phase, uint8_t value) {
  validate_shape(phase.shape());
  return lineal_from(all_runs(phase), value, phase.shape());
}

// ---- components ----

void detail::require_labelable(const Shape& shape) {
  validate_shape(shape);
  if (shape.voxels() >= int64_t(kNoRoot))
    throw InputError("volume " + to_string(shape) + " too large to label (at most 2^32 - 2 voxels)");
}

namespace cpu {
namespace {

constexpr uint32_t kNone = detail::kNoRoot;

// Union-find with the smaller index as root, so that a root is its component's first voxel.
inline uint32_t find(uint32_t* parent, uint32_t i) {
  while (parent[i] != i) {
    parent[i] = parent[parent[i]];
    i = parent[i];
  }
  return i;
}

inline void unite(uint32_t* parent, uint32_t a, uint32_t b) {
  a = find(parent, a);
  b = find(parent, b);
  if (a < b)
    parent[b] = a;
  else if (b < a)
    parent[a] = b;
}

}  // namespace

std::vector<uint32_t> component_roots(const Mask& phase, Adjacency adjacency) {
  const Shape s = phase.shape();
  detail::require_labelable(s);
  const std::size_t n = std::size_t(s.voxels());
  std::vector<uint32_t> parent(n);
  uint32_t* p = parent.data();
  const uint8_t* m = phase.data();
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < n; ++i) p[i] = m[i] ? uint32_t(i) : kNone;

  // Backward neighbours (already visited in raster order).
  std::vector<std::array<int, 3>> offsets;
  if (adjacency == Adjacency::face6) {
    offsets = {{-1, 0, 0}, {0, -1, 0}, {0, 0, -1}};
  } else {
    for (int dz = -1; dz <= 0; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          if (dz == 0 && (dy > 0 || (dy == 0 && dx >= 0))) continue;
          offsets.push_back({dx, dy, dz});
        }
  }
  // Unite voxel (x, y, z) with its backward neighbours, those of the previous plane only
  // when `seam` (planes below the slab belong to another thread until the seams are merged).
  auto unite_voxel = [&](int64_t x, int64_t y, int64_t z, bool within_plane, bool below_plane) {
    const std::size_t i = phase.index(x, y, z);
    if (!m[i]) return;
    for (const auto& o : offsets) {
      if (o[2] == 0 ? !within_plane : !below_plane) continue;
      const int64_t a = x + o[0], b = y + o[1], c = z + o[2];
      if (a < 0 || b < 0 || c < 0 || a >= s.nx || b >= s.ny) continue;
      const std::size_t j = phase.index(a, b, c);
      if (m[j]) unite(p, uint32_t(i), uint32_t(j));
    }
  };
  // Each thread labels a slab of planes; roots stay inside the slab, so slabs never write to
  // each other. Then the seams between slabs are merged in one thread.
  const int threads = std::max(1, std::min<int>(omp_get_max_threads(), int(s.nz)));
  std::vector<int64_t> first(std::size_t(threads) + 1);
  for (int t = 0; t <= threads; ++t) first[std::size_t(t)] = s.nz * t / threads;
#pragma omp parallel for schedule(static, 1) num_threads(threads)
  for (int t = 0; t < threads; ++t)
    for (int64_t z = first[std::size_t(t)]; z < first[std::size_t(t) + 1]; ++z)
      for (int64_t y = 0; y < s.ny; ++y)
        for (int64_t x = 0; x < s.nx; ++x) unite_voxel(x, y, z, true, z > first[std::size_t(t)]);
  for (int t = 1; t < threads; ++t) {
    const int64_t z = first[std::size_t(t)];
    for (int64_t y = 0; y < s.ny; ++y)
      for (int64_t x = 0; x < s.nx; ++x) unite_voxel(x, y, z, false, true);
  }
  // A parent never exceeds its child, so one ascending pass leaves every voxel on its root.
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != kNone) p[i] = p[p[i]];
  return parent;
}

}  // namespace cpu

namespace detail {

ComponentLabels canonical_components(const Mask& phase, std::vector<uint32_t> roots, Backend backend) {
  const Shape s = phase.shape();
  ComponentLabels out;
  out.backend = backend;
  uint32_t* l = roots.data();
  // A root is its component's first voxel in raster order, so components are numbered as
  // their roots are met; a later voxel's root has already been renumbered in place.
  for (int64_t z = 0; z < s.nz; ++z)
    for (int64_t y = 0; y < s.ny; ++y)
      for (int64_t x = 0; x < s.nx; ++x) {
        const std::size_t i = phase.index(x, y, z);
        const uint32_t r = l[i];
        uint32_t label = 0;
        if (r == kNoRoot) {
          l[i] = 0;
          continue;
        }
        if (r == uint32_t(i)) {
          out.sizes.push_back(0);
          out.faces.push_back(0);
          label = uint32_t(out.sizes.size());
        } else {
          if (r > uint32_t(i)) throw RuntimeError("component labelling: a root follows its voxel");
          label = l[r];
        }
        l[i] = label;
        ++out.sizes[label - 1];
        uint8_t f = 0;
        if (x == 0) f |= 1;
        if (x == s.nx - 1) f |= 2;
        if (y == 0) f |= 4;
        if (y == s.ny - 1) f |= 8;
        if (z == 0) f |= 16;
        if (z == s.nz - 1) f |= 32;
        out.faces[label - 1] |= f;
      }
  out.count = int64_t(out.sizes.size());
  out.labels = Volume<uint32_t>(s, phase.spacing(), std::move(roots));
  return out;
}

}  // namespace detail

ClusterStatistics cluster_statistics(const ComponentLabels& components, int64_t speck_voxels) {
  ClusterStatistics out;
  out.speck_voxels = speck_voxels;
  out.clusters = components.count;
  const int64_t voxels = components.labels.voxels();
  out.clusters_per_million = voxels ? double(components.count) * 1e6 / double(voxels) : 0.0;
  int64_t phase = 0, largest = 0, specks = 0;
  std::array<int64_t, 3> spanning{};
  for (int64_t k = 0; k < components.count; ++k) {
    const int64_t size = components.sizes[std::size_t(k)];
    const uint8_t f = components.faces[std::size_t(k)];
    phase += size;
    largest = std::max(largest, size);
    if (size <= speck_voxels) specks += size;
    for (int a = 0; a < 3; ++a)
      if (spans_axis(f, a)) spanning[std::size_t(a)] += size;
  }
  if (phase > 0) {
    out.largest_share = double(largest) / double(phase);
    out.speck_share = double(specks) / double(phase);
    for (std::size_t a = 0; a < 3; ++a) out.spanning_share[a] = double(spanning[a]) / double(phase);
  }
  return out;
}

// ---- everything ----

StructureMeasures measure_structure(const Mask& phase, const MeasureOptions& options, Backend backend) {
  const Shape s = phase.shape();
  const Spacing sp = phase.spacing();
  validate_shape(s);
  validate_spacing(sp);
  StructureMeasures out;
  out.shape = s;
  out.spacing = sp;
  out.voxels = s.voxels();
  out.phase_voxels = count_phase(phase);
  out.porosity = double(out.phase_voxels) / double(out.voxels);

  out.configurations = configuration_histogram(phase);
  out.euler = euler_characteristic(out.configurations);
  out.euler_per_voxel = double(out.euler) / double(out.voxels);
  out.euler_density = double(out.euler) / (double(out.voxels) * sp.x * sp.y * sp.z);
  if (!options.opening_radii.empty()) {
    out.opening_radii = options.opening_radii;
    out.opening_euler = euler_of_openings(local_thickness(phase, options.boundary, backend), options.opening_radii);
  }

  out.surface = specific_surface(phase);

  {
    ComponentLabels c6 = label_components(phase, Adjacency::face6, backend);
    out.backend = c6.backend;
    out.clusters6 = cluster_statistics(c6, options.speck_voxels);
    if (options.keep_components6) out.components6 = std::move(c6);
  }
  out.clusters26 = cluster_statistics(label_components(phase, Adjacency::full26, backend), options.speck_voxels);

  const std::array<Runs, 3> runs = all_runs(phase);
  out.chords = chords_from(runs, 1, sp);
  out.complement_chords = chords_from(runs, 0, sp);
  out.lineal = lineal_from(runs, 1, s);
  out.complement_lineal = lineal_from(runs, 0, s);
  return out;
}

}  // namespace poreforge
