// Two-point correlation against the definition, summed directly over all voxel pairs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "poreforge/correlation.hpp"
#include "poreforge/error.hpp"
#include "poreforge/generators.hpp"
#include "support/random.hpp"

using namespace poreforge;

namespace {

// S2(Δ) = (1/N) Σ_v I(v) I(v + Δ), periodic.
double brute_s2(const Mask& m, int64_t dx, int64_t dy, int64_t dz) {
  const Shape s = m.shape();
  int64_t hits = 0;
  for (int64_t z = 0; z < s.nz; ++z)
    for (int64_t y = 0; y < s.ny; ++y)
      for (int64_t x = 0; x < s.nx; ++x)
        hits += m(x, y, z) && m((x + dx) % s.nx, (y + dy) % s.ny, (z + dz) % s.nz);
  return double(hits) / double(s.voxels());
}

}  // namespace

TEST_CASE("s2.directional_matches_definition") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  for (const Shape shape : {Shape{12, 9, 7}, Shape{16, 1, 1}, Shape{10, 11, 1}, Shape{5, 8, 13}}) {
    CAPTURE(to_string(shape));
    const Mask m = testing::random_volume(shape, 1, 0.45, seed);
    const auto s2 = two_point_correlation(m);
    REQUIRE(s2.directional.x.size() == std::size_t(shape.nx / 2 + 1));
    REQUIRE(s2.directional.z.size() == std::size_t(shape.nz / 2 + 1));
    CHECK(s2.directional.x[0] == doctest::Approx(double(count_phase(m)) / double(m.voxels())).epsilon(1e-12));
    for (int axis = 0; axis < 3; ++axis)
      for (std::size_t r = 0; r < s2.directional.along(axis).size(); ++r) {
        const int64_t d[3] = {axis == 0 ? int64_t(r) : 0, axis == 1 ? int64_t(r) : 0, axis == 2 ? int64_t(r) : 0};
        CHECK(s2.directional.along(axis)[r] == doctest::Approx(brute_s2(m, d[0], d[1], d[2])).epsilon(1e-10));
      }
  }
}

TEST_CASE("s2.directional_counts_match_definition") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  // Extents below, at and across the 64-bit words a line is packed into.
  for (const Shape shape : {Shape{12, 9, 7}, Shape{64, 3, 2}, Shape{65, 1, 1}, Shape{1, 130, 3}, Shape{5, 8, 127},
                            Shape{1, 1, 1}}) {
    CAPTURE(to_string(shape));
    for (const Mask& m : {testing::random_volume(shape, 0, 0.3, seed), testing::random_volume(shape, 1, 0.45, seed),
                          Mask(shape, {}, 1), Mask(shape)}) {
      CAPTURE(count_phase(m));
      const DirectionalS2 exact = directional_s2(m);
      const DirectionalS2 fft = two_point_correlation(m).directional;
      for (int axis = 0; axis < 3; ++axis) {
        REQUIRE(exact.along(axis).size() == std::size_t(shape.extent(axis) / 2 + 1));
        CHECK(directional_counts(m, axis).size() == exact.along(axis).size());
        for (std::size_t r = 0; r < exact.along(axis).size(); ++r) {
          const int64_t d[3] = {axis == 0 ? int64_t(r) : 0, axis == 1 ? int64_t(r) : 0, axis == 2 ? int64_t(r) : 0};
          CHECK(exact.along(axis)[r] == brute_s2(m, d[0], d[1], d[2]));  // the same count over the same N
          CHECK(exact.along(axis)[r] == doctest::Approx(fft.along(axis)[r]).epsilon(1e-12));
        }
      }
    }
  }
  CHECK_THROWS_AS(directional_counts(Mask({2, 2, 2}), 3), InputError);
}

TEST_CASE("s2.radial_matches_definition") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  Mask m = testing::random_volume({10, 12, 8}, 0, 0.35, seed);
  for (const Spacing sp : {Spacing{1, 1, 1}, Spacing{1.0, 0.5, 2.0}}) {
    m.set_spacing(sp);
    const auto radial = two_point_correlation(m).radial;
    // Average the brute-force S2 over minimal-image vectors of each rounded radius.
    const double h = std::min({sp.x, sp.y, sp.z});
    for (std::size_t k = 0; k < radial.r.size(); ++k) {
      double sum = 0;
      int64_t count = 0;
      for (int64_t z = 0; z < 8; ++z)
        for (int64_t y = 0; y < 12; ++y)
          for (int64_t x = 0; x < 10; ++x) {
            auto minimal = [](int64_t d, int64_t e) { return d > e / 2 ? d - e : d; };
            const double dx = double(minimal(x, 10)) * sp.x, dy = double(minimal(y, 12)) * sp.y,
                         dz = double(minimal(z, 8)) * sp.z;
            if (std::llround(std::sqrt(dx * dx + dy * dy + dz * dz) / h) == std::llround(radial.r[k] / h)) {
              sum += brute_s2(m, x, y, z);
              ++count;
            }
          }
      CAPTURE(radial.r[k]);
      CHECK(radial.vectors[k] == count);
      CHECK(radial.s2[k] == doctest::Approx(sum / double(count)).epsilon(1e-10));
    }
    CHECK(radial.r.front() == 0.0);
    CHECK(radial.s2.front() == doctest::Approx(double(count_phase(m)) / double(m.voxels())));
  }
}
