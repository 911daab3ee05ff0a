// The natural envelope: sub-volume sampling, crops, the statistics of a comparison, and the
// realism profile of simple structures.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "poreforge/error.hpp"
#include "poreforge/generators.hpp"
#include "poreforge/realism.hpp"
#include "support/random.hpp"

using namespace poreforge;

namespace {

RealismProfile profile_of(std::vector<double> scalars, std::vector<std::vector<double>> curves) {
  RealismProfile p;
  for (std::size_t i = 0; i < scalars.size(); ++i) p.scalars.push_back({"s" + std::to_string(i), "1", scalars[i]});
  for (std::size_t i = 0; i < curves.size(); ++i) {
    CurveMeasure c;
    c.name = "c" + std::to_string(i);
    c.distance = i % 2 ? CurveMeasure::Distance::l1 : CurveMeasure::Distance::rms;
    c.y = curves[i];
    c.x.assign(c.y.size(), 0.0);
    p.curves.push_back(c);
  }
  return p;
}

}  // namespace

TEST_CASE("realism.envelope_statistics") {
  const double inf = std::numeric_limits<double>::infinity();
  // Four real sub-volumes: s0 = 1, 2, 3, 4; s1 finite and infinite mixed; one curve each kind.
  std::vector<RealismProfile> real;
  const double s0[] = {1, 2, 3, 4}, s1[] = {10, 20, inf, 30};
  for (int k = 0; k < 4; ++k)
    real.push_back(profile_of({s0[k], s1[k]}, {{double(k), 1.0}, {0.1 * k, 0.5}}));
  const EnvelopeComparison c = compare_with_envelope(profile_of({2.5, inf}, {{9.0, 1.0}, {0.15, 0.5}}), real);
  REQUIRE(c.scalars.size() == 2);
  CHECK(c.scalars[0].mean == doctest::Approx(2.5));
  CHECK(c.scalars[0].sd == doctest::Approx(std::sqrt(5.0 / 3.0)));
  CHECK(c.scalars[0].z == 0);
  CHECK(c.scalars[0].inside);
  CHECK(c.scalars[0].min == 1);
  CHECK(c.scalars[0].max == 4);
  CHECK(c.scalars[1].mean == doctest::Approx(20));  // over the finite values
  CHECK(c.scalars[1].max == inf);
  CHECK(c.scalars[1].inside);  // ∞ lies within a range that reaches ∞
  // The first curve: the candidate is 9 from a mean of 1.5 at the first point; RMS.
  CHECK(c.curves[0].distance == doctest::Approx(std::sqrt((7.5 * 7.5) / 2)));
  CHECK_FALSE(c.curves[0].inside);
  // Leave one out: real curve 0 against the mean of 1, 2, 3 (= 2): RMS of (−2, 0).
  CHECK(c.curves[0].real_distances[0] == doctest::Approx(std::sqrt(2.0)));
  // The second curve (L1): 0.15 is the mean of 0, 0.1, 0.2, 0.3: inside.
  CHECK(c.curves[1].distance == doctest::Approx(0.0));
  CHECK(c.curves[1].inside);
  CHECK(c.outside == 1);
  CHECK(c.measures == 4);
  // Real sub-volumes outside the others' range: s0 = 1 and 4 (the ends), s1 = 10 and ∞. The
  // curves' farthest sub-volumes tie (0 and 3 alike), and a tie is not outside.
  CHECK(c.real_outside == std::vector<int>{2, 0, 1, 1});
  CHECK(c.typical_real_outside == 1);

  CHECK_THROWS_AS(compare_with_envelope(profile_of({1}, {}), {profile_of({1}, {})}), InputError);
  CHECK_THROWS_AS(compare_with_envelope(profile_of({1, 2}, {}), real), InputError);
}

TEST_CASE("realism.subvolumes_and_crops") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  const Shape whole{40, 30, 20}, sub{16, 30, 5};
  const auto corners = subvolume_corners(whole, sub, 50, seed);
  REQUIRE(corners.size() == 50);
  for (const Shape& c : corners) {
    CHECK(c.nx >= 0);
    CHECK(c.nx + sub.nx <= whole.nx);
    CHECK(c.ny == 0);  // the sub-volume fills y
    CHECK(c.nz + sub.nz <= whole.nz);
  }
  CHECK(subvolume_corners(whole, sub, 50, seed) == corners);  // the seed fixes them
  CHECK_THROWS_AS(subvolume_corners(whole, {41, 1, 1}, 3, seed), InputError);

  const Mask m = generate_noise(whole, 0.5, seed);
  const Mask c = crop(m, corners[0], sub);
  CHECK(c.shape() == sub);
  for (int64_t z = 0; z < sub.nz; z += 2)
    for (int64_t y = 0; y < sub.ny; y += 3)
      for (int64_t x = 0; x < sub.nx; ++x)
        CHECK(c(x, y, z) == m(corners[0].nx + x, corners[0].ny + y, corners[0].nz + z));
  CHECK_THROWS_AS(crop(m, {30, 0, 0}, sub), InputError);
}

TEST_CASE("realism.profile_of_tubes") {
  // Straight tubes along z (4×4 voxels, every 8 voxels in x and y): porosity 1/4, every
  // cluster spans z and touches no x or y face... except the tubes at the faces.
  Mask m({32, 32, 24}, {2, 2, 2});
  for (int64_t z = 0; z < 24; ++z)
    for (int64_t y = 0; y < 32; ++y)
      for (int64_t x = 0; x < 32; ++x) m(x, y, z) = (x % 8 >= 2 && x % 8 < 6 && y % 8 >= 2 && y % 8 < 6) ? 1 : 0;
  RealismOptions o;
  o.backend = Backend::cpu;
  o.psd_bins = Bins::linear(2, 6, 4);
  const RealismProfile p = realism_profile(m, o);
  auto value = [&](const std::string& name) {
    for (const ScalarMeasure& s : p.scalars)
      if (s.name == name) return s.value;
    FAIL("no measure " << name);
    return 0.0;
  };
  CHECK(value("porosity") == doctest::Approx(0.25));
  CHECK(value("spanning_share_z") == doctest::Approx(1.0));
  CHECK(value("spanning_share_x") == 0);
  CHECK(value("clusters_per_million_6") == doctest::Approx(16e6 / (32.0 * 32 * 24)));
  CHECK(value("formation_factor_z") == doctest::Approx(4.0));  // F·φ = 1 along tubes
  CHECK(std::isinf(value("formation_factor_x")));
  CHECK(value("euler_density") == doctest::Approx(16.0 / (32.0 * 32 * 24 * 8)));  // 16 tubes, χ = 1 each
  CHECK(value("mean_chord_pore_x") == doctest::Approx(8.0));  // 4 voxels of 2 units
  for (const CurveMeasure& c : p.curves) {
    CAPTURE(c.name);
    CHECK(c.x.size() == c.y.size());
    CHECK_FALSE(c.y.empty());
  }
}

// Profiles measured several at a time are the profiles measured one by one, in order, each
// reported once; an error in one volume comes back once the others have finished.
TEST_CASE("realism.profiles_at_once_equal_one_by_one") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  std::vector<Mask> masks;
  for (uint64_t k = 0; k < 5; ++k) masks.push_back(generate_blobs({24, 22, 20}, 0.3 + 0.05 * double(k), 1, seed + k));
  std::vector<const Mask*> volumes;
  for (const Mask& m : masks) volumes.push_back(&m);
  RealismOptions o;
  o.backend = Backend::cpu;
  o.psd_bins = Bins::linear(1, 8, 6);
  std::vector<int> reported(volumes.size(), 0);
  const std::vector<RealismProfile> together = realism_profiles(volumes, o, 3, [&](std::size_t k) { ++reported[k]; });
  REQUIRE(together.size() == volumes.size());
  for (std::size_t k = 0; k < volumes.size(); ++k) {
    CAPTURE(k);
    CHECK(reported[k] == 1);
    const RealismProfile alone = realism_profile(*volumes[k], o);
    REQUIRE(together[k].scalars.size() == alone.scalars.size());
    for (std::size_t i = 0; i < alone.scalars.size(); ++i) {
      CAPTURE(alone.scalars[i].name);
      // The formation factor's CG sums in another order on fewer threads: equal to its tolerance
      // (infinite where nothing spans, which Approx cannot compare).
      const double at_once = together[k].scalars[i].value, one = alone.scalars[i].value;
      if (std::isfinite(one)) CHECK(at_once == doctest::Approx(one).epsilon(1e-7));
      else CHECK(at_once == one);
    }
    REQUIRE(together[k].curves.size() == alone.curves.size());
    for (std::size_t i = 0; i < alone.curves.size(); ++i) CHECK(together[k].curves[i].y == alone.curves[i].y);
  }
  masks[3] = Mask(masks[3].shape());  // no pore: nothing to profile
  CHECK_THROWS_AS(realism_profiles(volumes, o, 2), InputError);
}
