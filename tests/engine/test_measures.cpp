// Structural measures: Euler characteristic (shapes, brute-force V − E + F − C, flips, the 2D
// relation to components and holes), χ of openings, marching-cubes area and face counts,
// component labelling on every backend, cluster statistics, chords and the lineal path.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>
#include <set>

#include "poreforge/error.hpp"
#include "poreforge/local_thickness.hpp"
#include "poreforge/measures.hpp"
#include "support/backends.hpp"
#include "support/measures_reference.hpp"
#include "support/random.hpp"

using namespace poreforge;

namespace {

constexpr double kPi = 3.14159265358979323846;

Mask shape_of(Shape s, const std::function<bool(double, double, double)>& inside) {
  Mask m(s);
  for (int64_t z = 0; z < s.nz; ++z)
    for (int64_t y = 0; y < s.ny; ++y)
      for (int64_t x = 0; x < s.nx; ++x) m(x, y, z) = inside(double(x), double(y), double(z));
  return m;
}

Mask ball(Shape s, double cx, double cy, double cz, double r) {
  return shape_of(s, [=](double x, double y, double z) {
    return (x - cx) * (x - cx) + (y - cy) * (y - cy) + (z - cz) * (z - cz) <= r * r;
  });
}

Mask random_mask(Shape s, double porosity, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution on(porosity);
  Mask m(s);
  for (auto& v : m.values()) v = on(rng);
  return m;
}

}  // namespace

TEST_CASE("measures.cpu.euler_shapes") {
  const Shape s{32, 30, 28};
  CHECK(euler_characteristic(Mask(s)) == 0);
  CHECK(euler_characteristic(Mask(s, {}, 1)) == 1);  // the full box
  CHECK(euler_characteristic(ball(s, 15, 14, 13, 9)) == 1);
  CHECK(euler_characteristic(ball({9, 9, 9}, 4, 4, 4, 0.5)) == 1);  // one voxel
  const Mask torus = shape_of(s, [](double x, double y, double z) {
    const double rho = std::hypot(x - 15.5, y - 14.5);
    return (rho - 9) * (rho - 9) + (z - 13) * (z - 13) <= 9.0;
  });
  CHECK(euler_characteristic(torus) == 0);
  const Mask two = shape_of(s, [](double x, double y, double z) {
    return (x - 8) * (x - 8) + (y - 8) * (y - 8) + (z - 8) * (z - 8) <= 36 ||
           (x - 23) * (x - 23) + (y - 21) * (y - 21) + (z - 19) * (z - 19) <= 25;
  });
  CHECK(euler_characteristic(two) == 2);
  const Mask shell = shape_of(s, [](double x, double y, double z) {
    const double d2 = (x - 15) * (x - 15) + (y - 14) * (y - 14) + (z - 13) * (z - 13);
    return d2 <= 12 * 12 && d2 > 8 * 8;
  });
  CHECK(euler_characteristic(shell) == 2);  // one component, one cavity
  const Mask tunnel = shape_of(s, [](double x, double y, double z) {
    const bool cube = x >= 5 && x < 25 && y >= 5 && y < 25 && z >= 4 && z < 24;
    const bool hole = x >= 12 && x < 17 && y >= 11 && y < 18;
    return cube && !hole;
  });
  CHECK(euler_characteristic(tunnel) == 0);
  // Two tunnels: 1 − 2.
  const Mask two_tunnels = shape_of(s, [](double x, double y, double z) {
    const bool cube = x >= 2 && x < 30 && y >= 5 && y < 25 && z >= 4 && z < 24;
    const bool hole = (x >= 6 && x < 10 && y >= 11 && y < 18) || (x >= 18 && x < 22 && y >= 11 && y < 18);
    return cube && !hole;
  });
  CHECK(euler_characteristic(two_tunnels) == -1);
  // Shapes touching the box faces: outside counts as not phase.
  CHECK(euler_characteristic(ball(s, 0, 0, 0, 7)) == 1);
  const Mask rods = shape_of(s, [](double, double y, double z) { return (y == 3 || y == 9) && z > 5; });
  CHECK(euler_characteristic(rods) == 2);
  // Cubes meeting at one corner are one 26-connected component.
  Mask corner({4, 4, 4});
  corner(1, 1, 1) = corner(2, 2, 2) = 1;
  CHECK(euler_characteristic(corner) == 1);
  // A diamond of four voxels touching at edges is a 26-connected loop around voxel (2, 2),
  // whose 6-neighbours in the plane are all phase: a tunnel, χ = 1 − 1.
  Mask ring({5, 5, 1});
  ring(1, 2, 0) = ring(2, 1, 0) = ring(3, 2, 0) = ring(2, 3, 0) = 1;
  CHECK(euler_characteristic(ring) == 0);
}

TEST_CASE("measures.cpu.euler_matches_brute_force") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::vector<Shape> shapes = {{7, 6, 5}, {1, 9, 8}, {12, 1, 1}, {5, 5, 5}, {16, 11, 9}, {3, 17, 2}};
  for (const Shape& s : shapes)
    for (double p : {0.2, 0.5, 0.8}) {
      CAPTURE(to_string(s));
      CAPTURE(p);
      const Mask m = random_mask(s, p, rng());
      const ConfigurationHistogram h = configuration_histogram(m);
      int64_t corners = 0;
      for (int64_t c : h) corners += c;
      CHECK(corners == (s.nx + 1) * (s.ny + 1) * (s.nz + 1));
      CHECK(euler_characteristic(m) == testing::brute_euler(m));
    }
  for (int kind = 0; kind < 3; ++kind) {
    const Mask m = testing::random_volume({20, 18, 16}, kind, 0.4, rng());
    CAPTURE(kind);
    CHECK(euler_characteristic(m) == testing::brute_euler(m));
  }
}

// The cells inside the box: one per corner with 1 ≤ x < nx etc., each the configuration of its
// eight voxels read directly; none along an extent of 1. A ball inside the box: its
// marching-cubes area summed over them is SurfaceMeasures::area (no cell cut by a face holds
// any of its surface).
TEST_CASE("measures.cpu.interior_configuration_histogram") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (const Shape& s : std::vector<Shape>{{7, 6, 5}, {2, 9, 8}, {16, 11, 9}, {12, 1, 4}}) {
    CAPTURE(to_string(s));
    const Mask m = random_mask(s, 0.4, rng());
    ConfigurationHistogram brute{};
    for (int64_t z = 1; z < s.nz; ++z)
      for (int64_t y = 1; y < s.ny; ++y)
        for (int64_t x = 1; x < s.nx; ++x) {
          unsigned c = 0;
          for (unsigned v = 0; v < 8; ++v)
            if (m(x - 1 + (v & 1u), y - 1 + ((v >> 1) & 1u), z - 1 + ((v >> 2) & 1u))) c |= 1u << v;
          ++brute[c];
        }
    CHECK(interior_configuration_histogram(m) == brute);
  }
  const double r = 9.5;
  const int64_t n = 26;
  const Mask b = ball({n, n, n}, 12.5, 12.5, 12.5, r);
  const ConfigurationHistogram h = interior_configuration_histogram(b);
  double area = 0;
  for (std::size_t c = 0; c < 256; ++c) area += double(h[c]) * marching_cubes_area(int(c));
  CHECK(area == doctest::Approx(specific_surface(b).area).epsilon(1e-12));
}

// In a 2D image (nz = 1) χ is the 8-connected components minus the holes: the 4-connected
// components of the complement that do not touch the border. Counted by flood fill: an
// independent check of the whole construction.
TEST_CASE("measures.cpu.euler_2d_components_minus_holes") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 12; ++round) {
    const Shape s{int64_t(5 + rng() % 30), int64_t(5 + rng() % 30), 1};
    const Mask m = random_mask(s, 0.3 + 0.1 * double(round % 5), rng());
    // Pad with a ring of complement so the outside is one 4-connected component.
    Mask padded({s.nx + 2, s.ny + 2, 1});
    for (int64_t y = 0; y < s.ny; ++y)
      for (int64_t x = 0; x < s.nx; ++x) padded(x + 1, y + 1, 0) = m(x, y, 0);
    const auto fg = testing::brute_labels(padded, 26, 1);
    const auto bg = testing::brute_labels(padded, 6, 0);
    const int64_t components = *std::max_element(fg.begin(), fg.end());
    const int64_t holes = int64_t(*std::max_element(bg.begin(), bg.end())) - 1;
    CAPTURE(to_string(s));
    CHECK(euler_characteristic(m) == components - holes);
  }
}

// The mean χ of a box: exact where the mean is over a whole period of a periodic structure.
// An image of a tile repeated k times and one voxel more along each axis has k interior cells
// of every position in the period, so its occupancies are the period's; a box placed at every
// offset within one period then holds each cell of its complex at every position equally often.
TEST_CASE("measures.cpu.expected_euler_of_a_box") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  SUBCASE("a periodic structure, every offset of a period") {
    for (int round = 0; round < 3; ++round) {
      const Shape tile{int64_t(2 + rng() % 4), int64_t(2 + rng() % 4), int64_t(2 + rng() % 4)};
      const int k = 4;
      const Mask t = random_mask(tile, 0.25 + 0.2 * round, rng());
      const Shape big{k * tile.nx + 1, k * tile.ny + 1, k * tile.nz + 1};
      Mask reference(big);
      for (int64_t z = 0; z < big.nz; ++z)
        for (int64_t y = 0; y < big.ny; ++y)
          for (int64_t x = 0; x < big.nx; ++x) reference(x, y, z) = t(x % tile.nx, y % tile.ny, z % tile.nz);
      const PatternOccupancy o = pattern_occupancy(reference);
      REQUIRE(o.known);
      for (const Shape box : {Shape{tile.nx + 1, 2 * tile.ny, 3}, Shape{1, 1, 1}, Shape{2, tile.ny + 3, tile.nz}}) {
        CAPTURE(to_string(tile));
        CAPTURE(to_string(box));
        double sum = 0;
        for (int64_t oz = 0; oz < tile.nz; ++oz)
          for (int64_t oy = 0; oy < tile.ny; ++oy)
            for (int64_t ox = 0; ox < tile.nx; ++ox) {
              Mask w(box);
              for (int64_t z = 0; z < box.nz; ++z)
                for (int64_t y = 0; y < box.ny; ++y)
                  for (int64_t x = 0; x < box.nx; ++x) w(x, y, z) = reference(ox + x, oy + y, oz + z);
              sum += double(euler_characteristic(w));
            }
        CHECK(expected_euler_characteristic(o, box) == doctest::Approx(sum / double(tile.voxels())).epsilon(1e-12));
      }
    }
  }
  SUBCASE("layers of pore one voxel thick, a solid layer between: one component each") {
    Mask layers({6, 5, 12});
    for (int64_t z = 0; z < 12; z += 2)
      for (int64_t y = 0; y < 5; ++y)
        for (int64_t x = 0; x < 6; ++x) layers(x, y, z) = 1;
    const PatternOccupancy o = pattern_occupancy(layers);
    CHECK(o.voxel == doctest::Approx(0.5));
    CHECK(o.pair[2] == doctest::Approx(1.0));
    CHECK(o.square[0] == doctest::Approx(1.0));
    CHECK(o.square[2] == doctest::Approx(0.5));
    CHECK(expected_euler_characteristic(o, {9, 4, 6}) == doctest::Approx(3.0));
  }
  SUBCASE("all pore, all solid") {
    Mask full({4, 3, 5});
    for (int64_t i = 0; i < full.voxels(); ++i) full.data()[i] = 1;
    CHECK(expected_euler_characteristic(pattern_occupancy(full), {7, 2, 9}) == doctest::Approx(1.0));
    CHECK(expected_euler_characteristic(pattern_occupancy(Mask({4, 3, 5})), {7, 2, 9}) == doctest::Approx(0.0));
  }
  SUBCASE("an extent of 1 leaves the occupancies unknown") {
    CHECK_FALSE(pattern_occupancy(random_mask({9, 8, 1}, 0.4, rng())).known);
    CHECK_THROWS_AS(expected_euler_characteristic(PatternOccupancy{}, {4, 4, 4}), InputError);
  }
}

TEST_CASE("measures.cpu.euler_flip_delta") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (const Shape& s : std::vector<Shape>{{9, 8, 7}, {6, 6, 1}, {1, 1, 5}}) {
    Mask m = random_mask(s, 0.45, rng());
    ConfigurationHistogram h = configuration_histogram(m);
    int64_t chi = euler_characteristic(h);
    for (int k = 0; k < 300; ++k) {
      const int64_t x = int64_t(rng() % uint64_t(s.nx)), y = int64_t(rng() % uint64_t(s.ny)),
                    z = int64_t(rng() % uint64_t(s.nz));
      const int delta = euler_flip_delta(m, x, y, z);
      update_histogram_for_flip(h, m, x, y, z);
      m(x, y, z) ^= 1;
      chi += delta;
      CAPTURE(x);
      CAPTURE(y);
      CAPTURE(z);
      // A wrong delta or bin move stays in the running sums, so every 5th flip is checked.
      if (k % 5 != 4) continue;
      REQUIRE(chi == euler_characteristic(m));
      REQUIRE(h == configuration_histogram(m));
    }
  }
  CHECK_THROWS_AS(euler_flip_delta(Mask({3, 3, 3}), 3, 0, 0), InputError);
}

TEST_CASE("measures.cpu.euler_of_openings") {
  // A voxelised ball |x| ≤ R has LT = √(R² + 1) everywhere (DESIGN §1).
  const Mask b = ball({21, 21, 21}, 10, 10, 10, 6);
  const Volume<float> lt = local_thickness(b, Boundary::open, Backend::cpu);
  const double top = std::sqrt(37.0);
  const std::vector<int64_t> chi = euler_of_openings(lt, {0.0, 1.0, top - 1e-3, top + 1e-3, 100.0});
  CHECK(chi == std::vector<int64_t>{1, 1, 1, 0, 0});
  // Two balls of different sizes: the opening between their thicknesses keeps the larger.
  Mask two = ball({40, 20, 20}, 9, 9, 9, 7);
  const Mask small = ball({40, 20, 20}, 30, 10, 10, 3);
  for (std::size_t i = 0; i < two.values().size(); ++i) two[i] |= small[i];
  const std::vector<int64_t> chi2 =
      euler_of_openings(local_thickness(two, Boundary::open, Backend::cpu), {0.5, 4.0, 8.0});
  CHECK(chi2 == std::vector<int64_t>{2, 1, 0});
}

// Over the inner cells a body inside the box counts as in the whole box (8·χ = 8), and a rod that
// crosses the box counts nothing: an unbounded rod has no χ per length, and only the box's faces,
// which cut it, make the whole box's χ 1.
TEST_CASE("measures.cpu.inner_euler8_of_openings") {
  Volume<float> t({24, 20, 20}, {1, 1, 1});
  for (int64_t z = 0; z < 20; ++z)
    for (int64_t y = 0; y < 20; ++y)
      for (int64_t x = 0; x < 24; ++x) {
        if ((y - 5) * (y - 5) + (z - 5) * (z - 5) <= 4) t(x, y, z) = 3.0f;                                // the rod
        if ((x - 12) * (x - 12) + (y - 13) * (y - 13) + (z - 13) * (z - 13) <= 9) t(x, y, z) = 4.0f;  // a ball
      }
  const std::vector<double> radii{1.0, 3.5, 5.0};
  CHECK(euler_of_openings(t, radii) == std::vector<int64_t>{2, 1, 0});
  CHECK(inner_euler8_of_openings(t, radii) == std::vector<int64_t>{8, 8, 0});
  // A hollow ring inside the box: one loop, χ = 0 either way.
  Volume<float> ring({16, 16, 5}, {1, 1, 1});
  for (int64_t y = 3; y <= 12; ++y)
    for (int64_t x = 3; x <= 12; ++x)
      if (x == 3 || x == 12 || y == 3 || y == 12) ring(x, y, 2) = 2.0f;
  CHECK(euler_of_openings(ring, {1.0}) == std::vector<int64_t>{0});
  CHECK(inner_euler8_of_openings(ring, {1.0}) == std::vector<int64_t>{0});
}

TEST_CASE("measures.cpu.marching_cubes_table") {
  CHECK(marching_cubes_area(0) == 0);
  CHECK(marching_cubes_area(255) == 0);
  CHECK(marching_cubes_area(1) == doctest::Approx(std::sqrt(3.0) / 8));       // a corner: triangle
  CHECK(marching_cubes_area(0x3) == doctest::Approx(std::sqrt(0.5)));         // an edge: 1 × √½
  CHECK(marching_cubes_area(0xF) == doctest::Approx(1.0));                    // a face: the mid-plane
  CHECK(marching_cubes_area(0xF, {2.0, 3.0, 0.5}) == doctest::Approx(6.0));  // normal to z: sx·sy
  CHECK(marching_cubes_area(0x81) == doctest::Approx(2 * std::sqrt(3.0) / 8));  // opposite corners
  // Every configuration's surface is the complement's, except where a face is ambiguous.
  for (int c = 0; c < 256; ++c) {
    bool ambiguous = false;
    for (int a = 0; a < 3; ++a)
      for (int side = 0; side < 2; ++side) {
        const int b = (a + 1) % 3, d = (a + 2) % 3;
        const int ring[4] = {side << a, (side << a) | (1 << b), (side << a) | (1 << b) | (1 << d), (side << a) | (1 << d)};
        const int p0 = (c >> ring[0]) & 1, p1 = (c >> ring[1]) & 1, p2 = (c >> ring[2]) & 1, p3 = (c >> ring[3]) & 1;
        ambiguous = ambiguous || (p0 == p2 && p1 == p3 && p0 != p1);
      }
    CAPTURE(c);
    if (!ambiguous) CHECK(marching_cubes_area(c) == doctest::Approx(marching_cubes_area(255 - c)));
  }
}

TEST_CASE("measures.cpu.surface_slab_exact") {
  const Shape s{24, 13, 11};
  for (const Spacing sp : {Spacing{}, Spacing{0.5, 2.0, 1.5}}) {
    Mask slab(s, sp);
    for (int64_t z = 0; z < s.nz; ++z)
      for (int64_t y = 0; y < s.ny; ++y)
        for (int64_t x = 6; x < 15; ++x) slab(x, y, z) = 1;
    const SurfaceMeasures m = specific_surface(slab);
    const double plane = double(s.ny * s.nz) * sp.y * sp.z;
    CHECK(m.area == doctest::Approx(2 * plane).epsilon(1e-12));
    CHECK(m.faces == std::array<int64_t, 3>{2 * s.ny * s.nz, 0, 0});
    CHECK(m.face_area == doctest::Approx(2 * plane).epsilon(1e-12));
    CHECK(m.volume == doctest::Approx(double(s.voxels()) * sp.x * sp.y * sp.z));
    CHECK(m.area_per_volume == doctest::Approx(2 * plane / m.volume));
    // A slab touching a face has one interface: the box face is no surface.
    Mask half(s, sp);
    for (int64_t z = 0; z < s.nz; ++z)
      for (int64_t y = 0; y < 5; ++y)
        for (int64_t x = 0; x < s.nx; ++x) half(x, y, z) = 1;
    const SurfaceMeasures h = specific_surface(half);
    CHECK(h.area == doctest::Approx(double(s.nx * s.nz) * sp.x * sp.z).epsilon(1e-12));
    CHECK(h.faces == std::array<int64_t, 3>{0, s.nx * s.nz, 0});
  }
  // Crofton's estimate is right on average over orientations, not for each plane: 0.922 of a
  // plane normal to an axis here (the pairs cut by the box faces take 0.4 % of that).
  Mask wide({8, 256, 256});
  for (int64_t z = 0; z < 256; ++z)
    for (int64_t y = 0; y < 256; ++y)
      for (int64_t x = 2; x < 5; ++x) wide(x, y, z) = 1;
  CHECK(specific_surface(wide).crofton_area / (2 * 256.0 * 256.0) == doctest::Approx(0.922).epsilon(0.003));
  // Nothing and everything have no surface.
  CHECK(specific_surface(Mask(s)).area == 0);
  CHECK(specific_surface(Mask(s, {}, 1)).area == 0);
}

TEST_CASE("measures.cpu.surface_ball") {
  for (double r : {12.0, 24.0}) {
    const int64_t n = int64_t(2 * r) + 6;
    const double c = double(n - 1) / 2;
    const Mask b = ball({n, n, n}, c, c, c, r);
    // The sphere of the ball's volume (its voxel count) is the fair reference.
    const double radius = std::cbrt(3.0 * double(count_phase(b)) / (4 * kPi));
    const double sphere = 4 * kPi * radius * radius;
    const SurfaceMeasures m = specific_surface(b);
    CAPTURE(r);
    CAPTURE(m.area / sphere);
    // Marching cubes on a binary image keeps part of the voxel staircase: +6.5 % at r = 12 and
    // +6.8 % at r = 24 (measured), a known bias of midpoint marching cubes on curved surfaces.
    CHECK(m.area / sphere > 1.0);
    CHECK(m.area / sphere < 1.08);
    CAPTURE(m.crofton_area / sphere);
    CHECK(std::abs(m.crofton_area / sphere - 1) < 0.02);
    // Face counts overestimate a sphere by 3/2 on average over orientations.
    CHECK(std::abs(m.face_area / sphere - 1.5) < 0.05);
    int64_t faces = 0;
    for (int64_t z = 0; z < n; ++z)
      for (int64_t y = 0; y < n; ++y)
        for (int64_t x = 0; x < n; ++x) {
          if (x + 1 < n) faces += b(x, y, z) != b(x + 1, y, z);
          if (y + 1 < n) faces += b(x, y, z) != b(x, y + 1, z);
          if (z + 1 < n) faces += b(x, y, z) != b(x, y, z + 1);
        }
    CHECK(m.faces[0] + m.faces[1] + m.faces[2] == faces);
  }
}

TEST_CASE("measures.cpu.surface_random_faces") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  const Shape s{13, 9, 7};
  const Mask m = random_mask(s, 0.4, seed);
  std::array<int64_t, 3> faces{};
  for (int64_t z = 0; z < s.nz; ++z)
    for (int64_t y = 0; y < s.ny; ++y)
      for (int64_t x = 0; x < s.nx; ++x) {
        if (x + 1 < s.nx) faces[0] += m(x, y, z) != m(x + 1, y, z);
        if (y + 1 < s.ny) faces[1] += m(x, y, z) != m(x, y + 1, z);
        if (z + 1 < s.nz) faces[2] += m(x, y, z) != m(x, y, z + 1);
      }
  const SurfaceMeasures sm = specific_surface(m);
  CHECK(sm.faces == faces);
  CHECK(specific_surface(complement(m)).faces == faces);
  CHECK(specific_surface(complement(m)).crofton_area == doctest::Approx(sm.crofton_area).epsilon(1e-12));
}

PF_BACKEND_TEST("measures", "components_match_flood_fill") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::vector<Shape> shapes = {{17, 13, 11}, {1, 1, 1}, {40, 1, 1}, {1, 23, 19}, {8, 8, 40}, {33, 29, 3}};
  for (const Shape& s : shapes)
    for (double p : {0.15, 0.3, 0.55, 0.9})
      for (Adjacency adj : {Adjacency::face6, Adjacency::full26}) {
        CAPTURE(to_string(s));
        CAPTURE(p);
        CAPTURE(int(adj));
        const Mask m = rng() % 2 ? random_mask(s, p, rng()) : testing::random_volume(s, int(rng() % 3), p, rng());
        const ComponentLabels c = label_components(m, adj, B::backend);
        CHECK(c.backend == B::backend);
        const std::vector<uint32_t> want = testing::brute_labels(m, int(adj));
        REQUIRE(c.labels.values() == want);
        const int64_t count = want.empty() ? 0 : *std::max_element(want.begin(), want.end());
        REQUIRE(c.count == count);
        std::vector<int64_t> sizes(std::size_t(count), 0);
        for (uint32_t l : want)
          if (l) ++sizes[l - 1];
        CHECK(c.sizes == sizes);
      }
}

PF_BACKEND_TEST("measures", "components_large_and_equal_across_backends") {
  // Large enough for many threads and blocks, with long winding components.
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  const Mask m = testing::random_volume({96, 80, 72}, 1, 0.45, seed);
  for (Adjacency adj : {Adjacency::face6, Adjacency::full26}) {
    const ComponentLabels c = label_components(m, adj, B::backend);
    const ComponentLabels ref = label_components(m, adj, Backend::cpu);
    CHECK(c.labels.values() == ref.labels.values());
    CHECK(c.sizes == ref.sizes);
    CHECK(c.faces == ref.faces);
    CHECK(c.labels.values() == testing::brute_labels(m, int(adj)));
  }
}

TEST_CASE("measures.cpu.cluster_statistics") {
  Mask m({20, 10, 8});
  for (int64_t x = 0; x < 20; ++x) m(x, 2, 2) = 1;       // spans x: 20 voxels
  for (int64_t z = 0; z < 8; ++z) m(5, 7, z) = 1;        // spans z: 8 voxels
  m(10, 5, 5) = 1;                                       // a speck of 1
  m(15, 6, 5) = 1;                                       // another speck
  for (int64_t x = 2; x < 14; ++x) m(x, 5, 3) = 1;       // 12 voxels, touches nothing
  m(13, 4, 4) = 1;                                       // diagonal neighbour of the bar's end
  const int64_t phase = count_phase(m);
  REQUIRE(phase == 20 + 8 + 1 + 1 + 12 + 1);
  const ComponentLabels c6 = label_components(m, Adjacency::face6, Backend::cpu);
  const ClusterStatistics s6 = cluster_statistics(c6);
  CHECK(s6.clusters == 6);
  CHECK(s6.clusters_per_million == doctest::Approx(6e6 / 1600.0));
  CHECK(s6.largest_share == doctest::Approx(20.0 / 43));
  CHECK(s6.spanning_share[0] == doctest::Approx(20.0 / 43));
  CHECK(s6.spanning_share[1] == 0);
  CHECK(s6.spanning_share[2] == doctest::Approx(8.0 / 43));
  CHECK(s6.speck_share == doctest::Approx(11.0 / 43));  // 1 + 1 + 1 and the 8-voxel rod
  const ClusterStatistics s26 = cluster_statistics(label_components(m, Adjacency::full26, Backend::cpu));
  CHECK(s26.clusters == 5);  // the bar and its diagonal neighbour join
  CHECK(s26.speck_share == doctest::Approx(10.0 / 43));
  CHECK(cluster_statistics(label_components(Mask({4, 4, 4}), Adjacency::face6, Backend::cpu)).largest_share == 0);
}

TEST_CASE("measures.cpu.chords_and_lineal_path") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (const Shape& s : std::vector<Shape>{{15, 12, 9}, {1, 20, 7}, {31, 1, 1}, {6, 7, 33}})
    for (double p : {0.3, 0.7}) {
      CAPTURE(to_string(s));
      Mask m = testing::random_volume(s, int(rng() % 3), p, rng());
      m.set_spacing({0.5, 1.25, 2.0});
      for (uint8_t v : {uint8_t(0), uint8_t(1)}) {
        CAPTURE(int(v));
        const ChordLengths c = chord_lengths(m, v);
        const LinealPath l = lineal_path(m, v);
        for (int a = 0; a < 3; ++a) {
          CAPTURE(a);
          const std::vector<int64_t> h = testing::brute_chords(m, a, v);
          CHECK(c.histogram[std::size_t(a)] == h);
          int64_t count = 0, length = 0;
          for (std::size_t k = 0; k < h.size(); ++k) count += h[k], length += h[k] * int64_t(k);
          CHECK(c.count[std::size_t(a)] == count);
          const double mean = count ? double(length) / double(count) : 0.0;
          CHECK(c.mean_voxels[std::size_t(a)] == doctest::Approx(mean));
          CHECK(c.mean[std::size_t(a)] == doctest::Approx(mean * m.spacing().along(a)));
          const std::vector<double> want = testing::brute_lineal(m, a, v);
          REQUIRE(l.along[std::size_t(a)].size() == want.size());
          for (std::size_t r = 0; r < want.size(); ++r) CHECK(l.along[std::size_t(a)][r] == doctest::Approx(want[r]));
        }
        const double fraction = double(v ? count_phase(m) : m.voxels() - count_phase(m)) / double(m.voxels());
        CHECK(l.along[0][0] == doctest::Approx(fraction));
      }
    }
  // Known chords: a 3-voxel and a 5-voxel run inside, a run cut by each face.
  Mask line({16, 1, 1});
  for (int64_t x : {0, 1, 4, 5, 6, 9, 10, 11, 12, 13, 15}) line(x, 0, 0) = 1;
  const ChordLengths c = chord_lengths(line);
  CHECK(c.count[0] == 2);
  CHECK(c.mean_voxels[0] == doctest::Approx(4.0));
  CHECK(chord_lengths(line, 0).count[0] == 3);  // 2, 2 and 1 voxels of the complement
}

PF_BACKEND_TEST("measures", "measure_structure_is_consistent") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  Mask m = testing::random_volume({30, 26, 22}, 2, 0.35, seed);
  m.set_spacing({2.0, 2.0, 2.0});
  MeasureOptions options;
  options.opening_radii = {1.0, 3.0, 6.0};
  const StructureMeasures sm = measure_structure(m, options, B::backend);
  CHECK(sm.backend == B::backend);
  CHECK(sm.phase_voxels == count_phase(m));
  CHECK(sm.porosity == doctest::Approx(double(sm.phase_voxels) / double(m.voxels())));
  CHECK(sm.euler == testing::brute_euler(m));
  CHECK(sm.euler_per_voxel == doctest::Approx(double(sm.euler) / double(m.voxels())));
  CHECK(sm.euler_density == doctest::Approx(double(sm.euler) / double(m.voxels()) / 8.0));
  CHECK(sm.opening_euler == euler_of_openings(local_thickness(m, Boundary::open, Backend::cpu), options.opening_radii));
  CHECK(sm.surface.area == doctest::Approx(specific_surface(m).area));
  CHECK(sm.surface.area_per_volume == doctest::Approx(sm.surface.area / (double(m.voxels()) * 8.0)));
  const ClusterStatistics s6 = cluster_statistics(label_components(m, Adjacency::face6, Backend::cpu));
  CHECK(sm.clusters6.clusters == s6.clusters);
  CHECK(sm.clusters6.largest_share == doctest::Approx(s6.largest_share));
  CHECK(sm.clusters26.clusters == cluster_statistics(label_components(m, Adjacency::full26, Backend::cpu)).clusters);
  CHECK(sm.chords.histogram == chord_lengths(m, 1).histogram);
  CHECK(sm.complement_chords.histogram == chord_lengths(m, 0).histogram);
  CHECK(sm.lineal.along == lineal_path(m, 1).along);
  CHECK(sm.complement_lineal.along == lineal_path(m, 0).along);
  CHECK_THROWS_AS(measure_structure(Mask({0, 3, 3})), InputError);
}

// The 20 classes of the interface's 2×2×2 patterns: every mixed configuration in one, each
// class closed under the cube's rotations and reflections, the uniform two in none; a plane's
// interface is one class; a convex corner and a concave one are different classes.
TEST_CASE("measures.cpu.interface_patterns") {
  std::set<int> classes;
  auto mirror_x = [](int c) {
    int out = 0;
    for (int v = 0; v < 8; ++v)
      if ((c >> v) & 1) out |= 1 << (v ^ 1);
    return out;
  };
  auto swap_xz = [](int c) {
    int out = 0;
    for (int v = 0; v < 8; ++v)
      if ((c >> v) & 1) out |= 1 << (((v & 1) << 2) | (v & 2) | ((v >> 2) & 1));
    return out;
  };
  for (int c = 1; c < 255; ++c) {
    CAPTURE(c);
    classes.insert(interface_pattern(c));
    CHECK(interface_pattern(mirror_x(c)) == interface_pattern(c));
    CHECK(interface_pattern(swap_xz(c)) == interface_pattern(c));
  }
  CHECK(classes.size() == std::size_t(kInterfacePatterns));
  CHECK(*classes.begin() == 0);
  CHECK(*classes.rbegin() == kInterfacePatterns - 1);
  CHECK(interface_pattern(0) == -1);
  CHECK(interface_pattern(255) == -1);
  CHECK(interface_pattern(1) != interface_pattern(254));  // one voxel of pore, one of solid
  CHECK(interface_pattern(1) == interface_pattern(128));

  Mask half({10, 6, 7});  // pore below x = 4: a wall normal to x
  for (int64_t z = 0; z < 7; ++z)
    for (int64_t y = 0; y < 6; ++y)
      for (int64_t x = 0; x < 4; ++x) half(x, y, z) = 1;
  const auto shares = interface_pattern_shares(interior_configuration_histogram(half));
  CHECK(shares[std::size_t(interface_pattern(0x55))] == 1.0);  // pore at dx = 0: bits 0, 2, 4, 6
  double sum = 0;
  for (double s : shares) sum += s;
  CHECK(sum == doctest::Approx(1.0));
  for (double s : interface_pattern_shares(interior_configuration_histogram(Mask({5, 5, 5})))) CHECK(s == 0.0);
}

// The local porosity histogram against a count voxel by voxel, on fresh random masks.
TEST_CASE("measures.cpu.local_porosity_histogram") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (const Shape s : {Shape{9, 8, 7}, Shape{3, 3, 3}, Shape{4, 13, 5}, Shape{2, 6, 6}, Shape{1, 5, 4}}) {
    CAPTURE(to_string(s));
    const Mask m = random_mask(s, 0.2 + 0.6 * double(rng() % 100) / 100.0, rng());
    std::array<int64_t, kLocalPorosityBins> expected{};
    int64_t voxels = 0;
    // A neighbour beyond a face is the nearest voxel inside.
    const auto at = [&](int64_t x, int64_t y, int64_t z) {
      return m(std::clamp<int64_t>(x, 0, s.nx - 1), std::clamp<int64_t>(y, 0, s.ny - 1),
               std::clamp<int64_t>(z, 0, s.nz - 1)) ? 1 : 0;
    };
    for (int64_t z = 0; z < s.nz; ++z)
      for (int64_t y = 0; y < s.ny; ++y)
        for (int64_t x = 0; x < s.nx; ++x) {
          ++voxels;
          int around = 0, in_plane[3] = {0, 0, 0};  // in the planes normal to x, y, z
          for (int dz = -1; dz <= 1; ++dz)
            for (int dy = -1; dy <= 1; ++dy)
              for (int dx = -1; dx <= 1; ++dx) {
                if (!(dx || dy || dz)) continue;
                const int p = at(x + dx, y + dy, z + dz);
                around += p;
                if (dx == 0) in_plane[0] += p;
                if (dy == 0) in_plane[1] += p;
                if (dz == 0) in_plane[2] += p;
              }
          int wide[3] = {0, 0, 0};  // the 5×5 squares normal to x, y, z
          for (int a = -2; a <= 2; ++a)
            for (int b = -2; b <= 2; ++b) {
              if (!(a || b)) continue;
              wide[0] += at(x, y + a, z + b);
              wide[1] += at(x + a, y, z + b);
              wide[2] += at(x + a, y + b, z);
            }
          const int centre = m(x, y, z) ? 1 : 0;
          const int b = local_porosity_bin(centre, around);
          if (b >= 0) ++expected[std::size_t(b)];
          for (int axis = 0; axis < 3; ++axis) {
            const int q = local_porosity_square_bin(axis, centre, in_plane[axis]);
            if (q >= 0) ++expected[std::size_t(q)];
            const int w = local_porosity_wide_square_bin(axis, centre, wide[axis]);
            if (w >= 0) ++expected[std::size_t(w)];
          }
        }
    const LocalPorosityHistogram h = local_porosity_histogram(m);
    CHECK(h.voxels == voxels);
    CHECK(h.counts == expected);
  }
  CHECK(local_porosity_bin(1, 26) == -1);
  CHECK(local_porosity_bin(0, 0) == -1);
  CHECK(local_porosity_bin(1, 0) == 0);
  CHECK(local_porosity_bin(0, 26) == kLocalPorosityCubeBins - 1);
  CHECK(local_porosity_square_bin(0, 1, 8) == -1);
  CHECK(local_porosity_square_bin(2, 0, 0) == -1);
  CHECK(local_porosity_square_bin(0, 1, 0) == kLocalPorosityCubeBins);
  CHECK(local_porosity_square_bin(2, 0, 8) == kLocalPorosityWideSquaresAt - 1);
  CHECK(local_porosity_wide_square_bin(0, 1, 24) == -1);
  CHECK(local_porosity_wide_square_bin(1, 0, 0) == -1);
  CHECK(local_porosity_wide_square_bin(0, 1, 0) == kLocalPorosityWideSquaresAt);
  CHECK(local_porosity_wide_square_bin(2, 0, 24) == kLocalPorosityBins - 1);
}
