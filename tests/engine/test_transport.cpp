// Transport measures against analytic answers: the formation factor of straight tubes, of a
// stepped channel (series conductances, anisotropic spacing), of an open box; the
// permeability of Poiseuille flow in slits, square ducts and circular tubes.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include <omp.h>

#include "cpu/multigrid.hpp"
#include "transport_backends.hpp"
#include "poreforge/error.hpp"
#include "poreforge/generators.hpp"
#include "poreforge/transport.hpp"
#include "support/backends.hpp"
#include "support/random.hpp"

using namespace poreforge;

namespace {

// Straight tubes along `axis`: a random set of columns of the cross-section, pore along their
// whole length.
Mask tubes(Shape shape, int axis, double fraction, uint64_t seed) {
  Mask m(shape);
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution pick(fraction);
  const int a1 = (axis + 1) % 3, a2 = (axis + 2) % 3;
  bool any = false;
  for (int64_t v = 0; v < shape.extent(a2); ++v)
    for (int64_t u = 0; u < shape.extent(a1); ++u) {
      const bool open = pick(rng) || (!any && u == shape.extent(a1) - 1 && v == shape.extent(a2) - 1);
      any = any || open;
      for (int64_t w = 0; w < shape.extent(axis); ++w) {
        int64_t c[3];
        c[axis] = w, c[a1] = u, c[a2] = v;
        m(c[0], c[1], c[2]) = open;
      }
    }
  return m;
}

double porosity(const Mask& m) { return double(count_phase(m)) / double(m.voxels()); }

// Square duct of a × a pore voxels inside one solid voxel on each side: k over the duct's
// own section, in voxel², from the series solution of the rectangular duct.
double duct_k(double a) {
  double sum = 0;
  for (int n = 1; n < 200; n += 2) sum += std::tanh(n * M_PI / 2) / std::pow(double(n), 5);
  return a * a / 12 * (1 - 192 / std::pow(M_PI, 5) * sum);
}

// The step cap for flows through along_each_axis_of_a_random_sample's samples: a few hundred
// voxels of spheres can hold a pocket behind a one-voxel throat that fills slowly. To 1e-8,
// 80 seeds took 5,300-45,300 steps along their slowest axis and one seed in a CI run 247,100,
// past the default cap.
constexpr int64_t kSlowSampleSteps = 2000000;

// Two flows compared through a random sample whose pore varies along every axis:
// compare(m, axis) along each axis returns whether the pore spans it, and one axis at least
// must.
template <class Compare>
void along_each_axis_of_a_random_sample(Compare&& compare) {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  const Mask m = testing::random_volume({12, 10, 9}, 2, 0.5, seed);
  int spanning = 0;
  for (int axis = 0; axis < 3; ++axis) {
    CAPTURE(axis);
    spanning += compare(m, axis) ? 1 : 0;
  }
  CHECK(spanning > 0);
}

PermeabilityOptions quick(LateralBoundary lateral = LateralBoundary::periodic) {
  PermeabilityOptions o;
  o.mirror = false;  // the ducts are uniform along the flow: the mirror would only double the cost
  o.lateral = lateral;
  return o;
}

}  // namespace

PF_BACKEND_TEST("transport", "formation_factor.straight_tubes") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  for (int axis = 0; axis < 3; ++axis)
    for (const Spacing sp : {Spacing{}, Spacing{0.5, 1.3, 2.0}}) {
      CAPTURE(axis);
      Mask m = tubes({9, 7, 11}, axis, 0.3, seed + uint64_t(axis));
      m.set_spacing(sp);
      const FormationFactorResult r = formation_factor(m, axis, {}, B::backend);
      CHECK(r.backend == B::backend);
      CHECK(r.converged);
      CHECK(r.formation_factor * porosity(m) == doctest::Approx(1).epsilon(1e-7));
      CHECK(r.spanning_porosity == doctest::Approx(porosity(m)));
    }
}

PF_BACKEND_TEST("transport", "formation_factor.nothing_spans_is_infinite") {
  // Isolated tubes along x (no two columns touch): nothing crosses y or z.
  Mask m({10, 9, 9});
  for (int64_t z = 0; z < 9; z += 2)
    for (int64_t y = 0; y < 9; y += 2)
      for (int64_t x = 0; x < 10; ++x) m(x, y, z) = 1;
  CHECK(std::isfinite(formation_factor(m, 0, {}, B::backend).formation_factor));
  for (int axis : {1, 2}) {
    const FormationFactorResult r = formation_factor(m, axis, {}, B::backend);
    CHECK(std::isinf(r.formation_factor));
    CHECK(r.formation_factor > 0);
    CHECK(r.spanning_porosity == 0);
    CHECK(r.porosity == doctest::Approx(porosity(m)));
  }
  CHECK(std::isinf(formation_factor(Mask({4, 4, 4}), 2, {}, B::backend).formation_factor));
  // A staircase of voxels that touch along edges only: 18-connected, not 6-connected.
  Mask stairs({6, 6, 1});
  for (int64_t x = 0; x < 6; ++x) stairs(x, x, 0) = 1;
  CHECK(std::isinf(formation_factor(stairs, 0, {}, B::backend).formation_factor));
  stairs(1, 0, 0) = stairs(2, 1, 0) = stairs(3, 2, 0) = stairs(4, 3, 0) = stairs(5, 4, 0) = 1;  // now 6-connected
  const FormationFactorResult joined = formation_factor(stairs, 0, {}, B::backend);
  // Resistances (unit g, open box conductance 1): the inlet's half voxel, 9 links to (5, 4) on
  // the outlet face, then its own half voxel in parallel with the link to (5, 5) and its half.
  CHECK(joined.formation_factor == doctest::Approx(0.5 + 9 + 1 / (1 / 0.5 + 1 / 1.5)).epsilon(1e-7));
}

PF_BACKEND_TEST("transport", "formation_factor.open_box_is_one") {
  for (const Shape shape : {Shape{8, 8, 8}, Shape{13, 5, 7}, Shape{1, 6, 9}, Shape{12, 10, 1}})
    for (const Spacing sp : {Spacing{}, Spacing{0.3, 1.0, 2.5}})
      for (int axis = 0; axis < 3; ++axis) {
        CAPTURE(to_string(shape));
        CAPTURE(axis);
        const Mask m(shape, sp, 1);
        const FormationFactorResult r = formation_factor(m, axis, {}, B::backend);
        CHECK(r.formation_factor == doctest::Approx(1).epsilon(1e-7));
        const double L[3] = {double(shape.nx) * sp.x, double(shape.ny) * sp.y, double(shape.nz) * sp.z};
        CHECK(r.open_conductance == doctest::Approx(L[(axis + 1) % 3] * L[(axis + 2) % 3] / L[axis]));
      }
}

PF_BACKEND_TEST("transport", "formation_factor.stepped_channel_anisotropic") {
  // One voxel-wide channel: along x at y = 0 up to x = m, up along y to y = k, along x again
  // to the outlet. Conductances in series: F = ny·nz·(1 + k·g_x / (n·g_y)), g_x/g_y =
  // (sy/sx)². A dead-end branch and an isolated cluster change nothing.
  const int64_t n = 14, ny = 9, nz = 3, mid = 6, k = 5;
  for (const Spacing sp : {Spacing{}, Spacing{0.7, 1.9, 1.2}, Spacing{2.0, 0.5, 0.5}}) {
    Mask m({n, ny, nz}, sp);
    for (int64_t x = 0; x <= mid; ++x) m(x, 0, 1) = 1;
    for (int64_t y = 1; y <= k; ++y) m(mid, y, 1) = 1;
    for (int64_t x = mid + 1; x < n; ++x) m(x, k, 1) = 1;
    for (int64_t y = 1; y < 4; ++y) m(2, y, 1) = 1;      // dead end
    m(n - 2, 8, 0) = m(n - 2, 8, 1) = m(n - 1, 8, 1) = 1;  // touches the outlet only
    const double F = double(ny * nz) * (1 + double(k) * sp.y * sp.y / (double(n) * sp.x * sp.x));
    const FormationFactorResult r = formation_factor(m, 0, {}, B::backend);
    CHECK(r.formation_factor == doctest::Approx(F).epsilon(1e-7));
    CHECK(r.spanning_porosity * double(m.voxels()) == doctest::Approx(double(n + k + 3)));
  }
}

PF_BACKEND_TEST("transport", "formation_factor.transposed_volume_and_scaled_spacing") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  const Shape shape{14, 11, 9};
  Mask m = testing::random_volume(shape, 1, 0.45, seed);
  m.set_spacing({0.8, 1.4, 1.1});
  // The same volume with x and y exchanged, and its spacing.
  Mask t({shape.ny, shape.nx, shape.nz}, {1.4, 0.8, 1.1});
  for (int64_t z = 0; z < shape.nz; ++z)
    for (int64_t y = 0; y < shape.ny; ++y)
      for (int64_t x = 0; x < shape.nx; ++x) t(y, x, z) = m(x, y, z);
  Mask scaled = m;
  scaled.set_spacing({0.8 * 3e-6, 1.4 * 3e-6, 1.1 * 3e-6});
  const FormationFactorResult a = formation_factor(m, 0, {}, B::backend);
  CAPTURE(a.formation_factor);
  CHECK(a.formation_factor >= 1 / porosity(m));
  if (std::isfinite(a.formation_factor)) {
    CHECK(a.converged);
    CHECK(formation_factor(t, 1, {}, B::backend).formation_factor == doctest::Approx(a.formation_factor).epsilon(1e-6));
    CHECK(formation_factor(scaled, 0, {}, B::backend).formation_factor ==
          doctest::Approx(a.formation_factor).epsilon(1e-6));
  }
}

TEST_CASE("transport.cpu.spanning_cluster.from_components") {
  // The cluster read from the 6-connected labels is the one the two searches find, on every
  // axis, at porosities where some, most or no clusters span.
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  for (const double fraction : {0.25, 0.35, 0.6}) {
    const Mask m = testing::random_volume({17, 12, 9}, 1, fraction, seed + uint64_t(100 * fraction));
    const ComponentLabels c6 = label_components(m, Adjacency::face6, Backend::cpu);
    for (int axis = 0; axis < 3; ++axis) {
      CAPTURE(fraction);
      CAPTURE(axis);
      const detail::SpanningCluster searched = detail::spanning_cluster(m, axis);
      const detail::SpanningCluster read = detail::spanning_cluster(c6, axis);
      CHECK(read.voxels == searched.voxels);
      CHECK(read.cluster == searched.cluster);
    }
  }
}

PF_BACKEND_TEST("transport", "components_given_change_nothing") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  const Mask m = generate_blobs({20, 18, 16}, 0.4, 0.7, seed);
  const ComponentLabels c6 = label_components(m, Adjacency::face6, Backend::cpu);
  PermeabilityOptions o;
  o.max_steps = 300;
  for (int axis = 0; axis < 3; ++axis) {
    CAPTURE(axis);
    const FormationFactorResult a = formation_factor(m, axis, {}, B::backend);
    const FormationFactorResult b = formation_factor(m, axis, {}, B::backend, &c6);
    CHECK(b.spanning_porosity == a.spanning_porosity);
    CHECK(b.iterations == a.iterations);
    // The same system; the device's block sums meet in atomics of no fixed order, so the last
    // bits may differ between any two runs.
    CHECK(b.formation_factor == doctest::Approx(a.formation_factor).epsilon(1e-10));
    const PermeabilityResult k = permeability(m, axis, o, B::backend);
    const PermeabilityResult l = permeability(m, axis, o, B::backend, &c6);
    CHECK(l.spans == k.spans);
    CHECK(l.mean_velocity == doctest::Approx(k.mean_velocity).epsilon(1e-10));
  }
  // Components of another shape or adjacency are refused.
  const ComponentLabels c26 = label_components(m, Adjacency::full26, Backend::cpu);
  CHECK_THROWS_AS(formation_factor(m, 0, {}, B::backend, &c26), InputError);
  const ComponentLabels other = label_components(Mask({4, 4, 4}, {}, 1), Adjacency::face6, Backend::cpu);
  CHECK_THROWS_AS(permeability(m, 0, o, B::backend, &other), InputError);
}

PF_BACKEND_TEST("transport", "poiseuille_permeability.uniform_radius_is_r2_over_8_over_F") {
  // One radius everywhere scales every conductance alike: k = (r² / 8) / F.
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  Mask m = testing::random_volume({14, 11, 9}, 1, 0.55, seed);
  m.set_spacing({0.8, 1.4, 1.1});
  const float r = 2.5f;
  const Volume<float> radius(m.shape(), m.spacing(), r);
  int spanning = 0;
  for (int axis = 0; axis < 3; ++axis) {
    CAPTURE(axis);
    const double F = formation_factor(m, axis, {}, B::backend).formation_factor;
    const PoiseuillePermeabilityResult k = poiseuille_permeability(m, radius, axis, {}, B::backend);
    CHECK(k.backend == B::backend);
    CHECK(k.converged);
    // The components the run passes in give the same system; on the device its block sums meet
    // in atomics of no fixed order, so the last bits may differ between any two runs.
    const ComponentLabels components = label_components(m, Adjacency::face6, Backend::cpu);
    CHECK(poiseuille_permeability(m, radius, axis, {}, B::backend, &components).permeability ==
          doctest::Approx(k.permeability).epsilon(1e-10));
    if (std::isinf(F)) {
      CHECK(k.permeability == 0);
      continue;
    }
    ++spanning;
    CHECK(k.permeability == doctest::Approx(double(r) * double(r) / 8 / F).epsilon(1e-7));
  }
  CHECK(spanning > 0);
}

PF_BACKEND_TEST("transport", "poiseuille_permeability.nothing_spans_is_zero") {
  // Isolated tubes along x (no two columns touch): nothing crosses y or z.
  Mask m({10, 9, 9});
  for (int64_t z = 0; z < 9; z += 2)
    for (int64_t y = 0; y < 9; y += 2)
      for (int64_t x = 0; x < 10; ++x) m(x, y, z) = 1;
  const Volume<float> radius(m.shape(), m.spacing(), 0.5f);
  // Along x: 25 tubes of one voxel in a 9 × 9 section, each r² / 8.
  CHECK(poiseuille_permeability(m, radius, 0, {}, B::backend).permeability ==
        doctest::Approx(25.0 / 81.0 * 0.25 / 8).epsilon(1e-7));
  for (int axis : {1, 2}) {
    const PoiseuillePermeabilityResult k = poiseuille_permeability(m, radius, axis, {}, B::backend);
    CHECK(k.permeability == 0);
    CHECK(k.converged);
  }
}

PF_BACKEND_TEST("transport", "poiseuille_permeability.layers_in_series_and_side_by_side") {
  // An all-pore box, the first h voxels along x of radius r1, the rest r2 (σ = r² / 8). Along
  // x the layers are in series: each row's resistance is h / σ1 + (n − h) / σ2 (the half
  // voxels at the reservoirs and at the interface add up to whole ones), so k = n / that;
  // along y and z side by side: k = (h σ1 + (n − h) σ2) / n.
  const int64_t n = 10, h = 3;
  const double r1 = 1.5, r2 = 4.0, s1 = r1 * r1 / 8, s2 = r2 * r2 / 8;
  for (const Spacing sp : {Spacing{}, Spacing{0.7, 1.3, 2.0}}) {
    const Mask m({n, 6, 5}, sp, 1);
    Volume<float> radius(m.shape(), sp, float(r2));
    for (int64_t z = 0; z < 5; ++z)
      for (int64_t y = 0; y < 6; ++y)
        for (int64_t x = 0; x < h; ++x) radius(x, y, z) = float(r1);
    CHECK(poiseuille_permeability(m, radius, 0, {}, B::backend).permeability ==
          doctest::Approx(double(n) / (double(h) / s1 + double(n - h) / s2)).epsilon(1e-7));
    for (int axis : {1, 2})
      CHECK(poiseuille_permeability(m, radius, axis, {}, B::backend).permeability ==
            doctest::Approx((double(h) * s1 + double(n - h) * s2) / double(n)).epsilon(1e-7));
  }
}

TEST_CASE("transport.cpu.poiseuille_permeability.bad_input") {
  const Mask m({4, 4, 4}, {}, 1);
  CHECK_THROWS_AS(poiseuille_permeability(m, Volume<float>({4, 4, 3}), 0, {}, Backend::cpu), InputError);
  CHECK_THROWS_AS(poiseuille_permeability(m, Volume<float>({4, 4, 4}, {}, 1.0f), 3, {}, Backend::cpu), InputError);
  Volume<float> radius({4, 4, 4}, {}, 1.0f);
  CHECK(poiseuille_permeability(m, radius, 0, {}, Backend::cpu).permeability == doctest::Approx(1.0 / 8));
  radius(1, 2, 3) = 0;  // a pore voxel without a radius
  CHECK_THROWS_AS(poiseuille_permeability(m, radius, 0, {}, Backend::cpu), InputError);
  radius(1, 2, 3) = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_AS(poiseuille_permeability(m, radius, 0, {}, Backend::cpu), InputError);
}

TEST_CASE("transport.cpu.formation_factor.bad_input") {
  const Mask m({4, 4, 4}, {}, 1);
  CHECK_THROWS_AS(formation_factor(m, 3, {}, Backend::cpu), InputError);
  CHECK_THROWS_AS(formation_factor(m, -1, {}, Backend::cpu), InputError);
  FormationFactorOptions o;
  o.tolerance = 0;
  CHECK_THROWS_AS(formation_factor(m, 0, o, Backend::cpu), InputError);
  CHECK_THROWS_AS(parse_axis("w"), InputError);
  CHECK(parse_axis("z") == 2);
}

PF_BACKEND_TEST("transport", "permeability.slit_is_h2_over_12") {
  // Plane Poiseuille flow between two solid layers. With TRT at Λ = 3/16 and halfway
  // bounce-back the velocity at the voxel centres is the exact parabola with the walls half a
  // voxel beyond the last fluid voxels, whatever the viscosity; its mean over those voxels
  // (the voxel average Darcy's law takes) is h²/12 + 1/24 over the gap — the midpoint rule
  // on the parabola — which is h²/12 to 0.8 % at h = 8.
  for (const int64_t h : {4, 8, 13}) {
    for (const double tau : {0.55, 0.8, 1.0, 1.7}) {
      CAPTURE(h);
      CAPTURE(tau);
      Mask m({2, 1, h + 2});
      for (int64_t z = 1; z <= h; ++z) m(0, 0, z) = m(1, 0, z) = 1;
      PermeabilityOptions o = quick();
      o.tau = tau;
      const PermeabilityResult r = permeability(m, 0, o, B::backend);
      CHECK(r.backend == B::backend);
      CHECK(r.converged);
      CHECK(r.spans);
      const double gap = double(h) / double(h + 2);
      CHECK(r.k_voxels == doctest::Approx((double(h * h) / 12 + 1.0 / 24) * gap).epsilon(1e-6));
      if (h >= 8) CHECK(r.k_voxels == doctest::Approx(double(h * h) / 12 * gap).epsilon(0.01));
      CHECK(std::isnan(r.k_millidarcy));
    }
  }
}

// The equilibrium's sound speed changes how a flow gets to its steady state, not where it
// settles. The sample varies along the flow, so that the pressure does: in a uniform duct the
// density never leaves rest and the sound speed has nothing to act on.
PF_BACKEND_TEST("transport", "permeability.sound_speed_changes_the_way_not_the_end") {
  along_each_axis_of_a_random_sample([](const Mask& m, int axis) {
    PermeabilityOptions o;
    o.max_steps = kSlowSampleSteps;
    o.sound_speed_squared = 1.0 / 3;
    const PermeabilityResult usual = permeability(m, axis, o, B::backend);
    o.sound_speed_squared = 2.0 / 3;
    const PermeabilityResult faster = permeability(m, axis, o, B::backend);
    CHECK(usual.spans == faster.spans);
    if (!usual.spans) return false;
    CAPTURE(usual.steps);
    CAPTURE(faster.steps);
    CHECK(usual.converged);
    CHECK(faster.converged);
    CHECK(faster.k_voxels == doctest::Approx(usual.k_voxels).epsilon(1e-5));  // each to 1e-6
    // On the way the two flows differ: the parameter reaches the step. Their difference swings
    // as the pressure waves do (on some samples it passes near zero after one check interval),
    // so it is taken at the larger of two moments.
    double apart = 0;  // the larger relative difference
    for (const int intervals : {1, 2}) {
      PermeabilityOptions q = o;
      q.max_steps = intervals * o.check_every;
      const double early = permeability(m, axis, q, B::backend).mean_velocity;
      q.sound_speed_squared = 1.0 / 3;
      apart = std::max(apart, std::abs(early - permeability(m, axis, q, B::backend).mean_velocity) / std::abs(early));
    }
    CHECK(apart > 1e-6);
    return true;
  });
}

PF_BACKEND_TEST("transport", "permeability.square_duct") {
  for (const int64_t a : {8, 12, 16}) {
    CAPTURE(a);
    Mask m({2, a + 2, a + 2});
    for (int64_t z = 1; z <= a; ++z)
      for (int64_t y = 1; y <= a; ++y) m(0, y, z) = m(1, y, z) = 1;
    const PermeabilityResult r = permeability(m, 0, quick(), B::backend);
    CHECK(r.converged);
    const double expected = duct_k(double(a)) * double(a * a) / double((a + 2) * (a + 2));
    CHECK(r.k_voxels == doctest::Approx(expected).epsilon(0.02));
    // The same duct from an all-pore box with walls on its sides, along z this time.
    const Mask open({a, a, 3}, {}, 1);
    const PermeabilityResult w = permeability(open, 2, quick(LateralBoundary::wall), B::backend);
    CHECK(w.k_voxels == doctest::Approx(duct_k(double(a))).epsilon(0.02));
  }
}

PF_BACKEND_TEST("transport", "permeability.circular_tube") {
  // Hagen–Poiseuille: k = R²/8 over the tube, R the radius of the voxelised disc's area. The
  // staircase wall drags more than the circle (about −5 % at R = 8, −1.7 % at R = 16, −1.4 %
  // at R = 20, and not monotonically), so 2 % takes R ≥ 16.
  for (const double R : {16.0, 20.0}) {
    CAPTURE(R);
    const int64_t n = int64_t(2 * R) + 3;
    Mask m({n, n, 2});
    const double c = 0.5 * double(n - 1);
    int64_t area = 0;
    for (int64_t y = 0; y < n; ++y)
      for (int64_t x = 0; x < n; ++x)
        if ((double(x) - c) * (double(x) - c) + (double(y) - c) * (double(y) - c) <= R * R) {
          m(x, y, 0) = m(x, y, 1) = 1;
          ++area;
        }
    // k does not depend on τ (Λ = 3/16: the slit test runs four), and across a uniform tube
    // the flow settles in a viscous time R²/ν: τ = 1 takes a tenth of the default's steps.
    PermeabilityOptions o = quick();
    o.tau = 1.0;
    const PermeabilityResult r = permeability(m, 2, o, B::backend);
    CHECK(r.converged);
    const double r_eff2 = double(area) / M_PI;
    CHECK(r.k_voxels == doctest::Approx(r_eff2 / 8 * double(area) / double(n * n)).epsilon(0.02));
  }
}

PF_BACKEND_TEST("transport", "permeability.mirror_units_and_nothing_spans") {
  const int64_t h = 6;
  Mask m({3, 1, h + 2}, {2.0, 2.0, 2.0});
  for (int64_t z = 1; z <= h; ++z)
    for (int64_t x = 0; x < 3; ++x) m(x, 0, z) = 1;
  PermeabilityOptions o = quick();
  o.mirror = true;
  o.voxel_size_m = 5.345e-6;
  const PermeabilityResult r = permeability(m, 0, o, B::backend);
  const double k = (double(h * h) / 12 + 1.0 / 24) * double(h) / double(h + 2);  // as in the slit test
  CHECK(r.k_voxels == doctest::Approx(k).epsilon(1e-6));
  CHECK(r.k_m2 == doctest::Approx(k * 5.345e-6 * 5.345e-6).epsilon(1e-4));
  CHECK(r.k_millidarcy == doctest::Approx(r.k_m2 / 9.869233e-16).epsilon(1e-12));
  // Across the slit nothing flows.
  const PermeabilityResult across = permeability(m, 2, o, B::backend);
  CHECK_FALSE(across.spans);
  CHECK(across.k_voxels == 0);
}

// The mirror is not stored but implied (lbm::node_step): the flow through a sample mirrored
// along the axis is the flow through the sample followed by its reflection, periodic, which is
// built here voxel by voxel. Both settle to the same steady state, in as many steps.
PF_BACKEND_TEST("transport", "permeability.mirror_is_the_doubled_sample") {
  along_each_axis_of_a_random_sample([](const Mask& m, int axis) {
    Shape doubled_shape = m.shape();
    (axis == 0 ? doubled_shape.nx : axis == 1 ? doubled_shape.ny : doubled_shape.nz) *= 2;
    Mask doubled(doubled_shape);
    const int64_t n = m.shape().extent(axis);
    for (int64_t z = 0; z < doubled_shape.nz; ++z)
      for (int64_t y = 0; y < doubled_shape.ny; ++y)
        for (int64_t x = 0; x < doubled_shape.nx; ++x) {
          int64_t c[3] = {x, y, z};
          if (c[axis] >= n) c[axis] = 2 * n - 1 - c[axis];
          doubled(x, y, z) = m(c[0], c[1], c[2]);
        }
    PermeabilityOptions o;
    o.tolerance = 1e-8;
    o.max_steps = kSlowSampleSteps;
    o.mirror = true;
    const PermeabilityResult implied = permeability(m, axis, o, B::backend);
    o.mirror = false;
    const PermeabilityResult stored = permeability(doubled, axis, o, B::backend);
    CHECK(implied.spans == stored.spans);
    if (!stored.spans) return false;
    CHECK(implied.converged);
    CHECK(stored.converged);
    CHECK(implied.k_voxels == doctest::Approx(stored.k_voxels).epsilon(1e-6));
    // A check apart, or 0.5 % of the steps where the approach is slow: the two sum in another
    // order, and a flow that creeps to its steady state (247,100 steps) crossed the tolerance
    // two checks apart.
    CHECK(std::abs(implied.steps - stored.steps) <= std::max<int64_t>(o.check_every, stored.steps / 200));
    return true;
  });
}

// The steady-state test on made-up mean velocities (one check = 100 steps): a geometric
// approach is steady once its estimated tail, not its last change, is below the tolerance;
// alternating changes that shrink are bounded by the last one; growing ones and a blown-up
// flow never are; the first verdict comes at the third check.
TEST_CASE("transport.cpu.permeability.steady_state_test") {
  PermeabilityOptions o;
  o.tolerance = 1e-6;
  const auto run = [&](const std::vector<double>& velocities) {
    PermeabilityResult r;
    detail::SteadyState state;
    std::size_t checks = 0;
    for (const double u : velocities) {
      ++checks;
      if (detail::permeability_check(r, u, 1, state, o)) break;
    }
    return std::make_pair(r, checks);
  };
  // u_k = 1 − 0.9^k: the last change understates the distance left ninefold.
  std::vector<double> geometric;
  for (int k = 1; k <= 400; ++k) geometric.push_back(1 - std::pow(0.9, k));
  const auto [g, g_checks] = run(geometric);
  CHECK(g.converged);
  CHECK(1 - g.mean_velocity < 1e-6);                         // truly within the tolerance
  CHECK(1 - geometric[g_checks - 2] >= 1e-6);                // and not a check earlier
  CHECK(g.relative_error == doctest::Approx((1 - g.mean_velocity) / g.mean_velocity).epsilon(1e-3));
  CHECK(g.steps == int64_t(g_checks) * o.check_every);
  // The old test (the last change alone) would have stopped with 9e-6 still to go.
  CHECK(std::abs(geometric[g_checks - 1] - geometric[g_checks - 2]) < 0.2e-6);
  // Alternating and shrinking: steady once a change is below the tolerance.
  std::vector<double> alternating;
  for (int k = 1; k <= 400; ++k) alternating.push_back(1 + std::pow(-0.5, k));
  const auto [a, a_checks] = run(alternating);
  CHECK(a.converged);
  CHECK(std::abs(a.mean_velocity - 1) < 1e-6);
  // Alternating and growing (ratio −2), or growing (ratio 1.5): never steady, however small.
  std::vector<double> swinging{1, 1 + 1e-9, 1 - 1e-9, 1 + 3e-9, 1 - 5e-9}, growing{1, 1 + 1e-9, 1 + 2.5e-9, 1 + 4.75e-9};
  CHECK_FALSE(run(swinging).first.converged);
  CHECK(std::isinf(run(swinging).first.relative_error));
  CHECK_FALSE(run(growing).first.converged);
  // A tiny change that halves is steady at the third check, not the second; one that stays
  // the same is a drift, not a steady state.
  CHECK(run({1, 1 + 1e-12, 1 + 1.5e-12}).second == 3);
  CHECK(run({1, 1 + 1e-12, 1 + 1.5e-12}).first.converged);
  const double step = std::ldexp(1.0, -30);  // exact steps: equal changes, a ratio of exactly 1
  CHECK_FALSE(run({1, 1 + step, 1 + 2 * step, 1 + 3 * step}).first.converged);
  CHECK_FALSE(run({1, 1 + 1e-12}).first.converged);
  CHECK(run({1, 1, 1}).first.converged);
  // A flow that blew up stops at once, not converged.
  const auto [nan, nan_checks] = run({1, std::numeric_limits<double>::quiet_NaN(), 1, 1, 1});
  CHECK_FALSE(nan.converged);
  CHECK(nan_checks == 2);
}

// A lattice large enough for the CPU step loop's threads gives, after as many steps, the mean
// velocity of one thread: the same populations a node, the momentum summed in another order.
TEST_CASE("transport.cpu.permeability.threads_agree") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  const Mask m = generate_blobs({48, 44, 40}, 0.45, 0.7, seed);
  PermeabilityOptions o;
  o.max_steps = 500;  // the state after as many steps is as deterministic as the steady one
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  const PermeabilityResult one = permeability(m, 0, o, Backend::cpu);
  omp_set_num_threads(std::max(2, before));
  const PermeabilityResult many = permeability(m, 0, o, Backend::cpu);
  omp_set_num_threads(before);
  CAPTURE(one.k_voxels);
  REQUIRE(one.spans);
  CHECK(one.steps == 500);
  CHECK(count_phase(m) > (int64_t(1) << 15));  // the lattice is past the one-thread size
  CHECK(many.mean_velocity == doctest::Approx(one.mean_velocity).epsilon(1e-9));
  CHECK(many.mean_velocity > 0);
}

TEST_CASE("transport.cpu.permeability.bad_input") {
  Mask m({4, 4, 4}, {1.0, 1.0, 2.0}, 1);
  CHECK_THROWS_AS(permeability(m, 0, {}, Backend::cpu), InputError);  // not cubic voxels
  m.set_spacing({});
  PermeabilityOptions o;
  o.tau = 0.5;
  CHECK_THROWS_AS(permeability(m, 0, o, Backend::cpu), InputError);
  o = {};
  o.body_force = -1;
  CHECK_THROWS_AS(permeability(m, 0, o, Backend::cpu), InputError);
  for (const double cs2 : {0.0, 0.75, std::numeric_limits<double>::quiet_NaN()}) {
    o = {};
    o.sound_speed_squared = cs2;
    CHECK_THROWS_AS(permeability(m, 0, o, Backend::cpu), InputError);
  }
  CHECK_THROWS_AS(permeability(m, 5, {}, Backend::cpu), InputError);
}


// The CPU formation factor's preconditioner: each coarse operator is the Galerkin product
// P^T A P of the level above (P: a block's unknowns to its coarse unknown), and one V-cycle is
// a symmetric positive definite operator, as conjugate gradients need.
TEST_CASE("transport.cpu.multigrid.galerkin_symmetric_positive") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  const Shape shape{40, 34, 26};
  const Mask m = testing::random_volume(shape, 1, 0.6, seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> g(0.5, 2.0), u(-1.0, 1.0);
  cpu::CellOperator a;
  a.extent = {shape.nx, shape.ny, shape.nz};
  std::vector<int32_t> index(std::size_t(shape.voxels()), -1);
  for (int64_t i = 0; i < shape.voxels(); ++i)
    if (m[std::size_t(i)]) index[std::size_t(i)] = int32_t(a.cell.size()), a.cell.push_back(i);
  const int64_t n = int64_t(a.cell.size());
  a.nb.assign(std::size_t(6 * n), -1);
  a.w.assign(std::size_t(6 * n), 0.0);
  a.diag.assign(std::size_t(n), 0.0);
  const int64_t stride[3] = {1, shape.nx, shape.nx * shape.ny};
  for (int64_t k = 0; k < n; ++k) {  // symmetric face conductances, drawn once per face
    const int64_t i = a.cell[std::size_t(k)];
    const int64_t c[3] = {i % shape.nx, (i / shape.nx) % shape.ny, i / (shape.nx * shape.ny)};
    a.diag[std::size_t(k)] += 0.05;  // a little to a reservoir: positive definite
    for (int d = 0; d < 3; ++d) {
      if (c[d] + 1 >= shape.extent(d) || index[std::size_t(i + stride[d])] < 0) continue;
      const int32_t j = index[std::size_t(i + stride[d])];
      const double w = g(rng);
      a.nb[std::size_t(6 * k + 2 * d + 1)] = j, a.w[std::size_t(6 * k + 2 * d + 1)] = w;
      a.nb[std::size_t(6 * j + 2 * d)] = int32_t(k), a.w[std::size_t(6 * j + 2 * d)] = w;
      a.diag[std::size_t(k)] += w, a.diag[std::size_t(j)] += w;
    }
  }
  REQUIRE(n > 2000);
  const cpu::Multigrid mg(a);
  REQUIRE(mg.levels() >= 3);
  for (int l = 0; l + 1 < mg.levels(); ++l) {
    const cpu::CellOperator& f = mg.level(l);
    const cpu::CellOperator& c = mg.level(l + 1);
    const std::vector<int32_t>& parent = mg.parent(l);
    std::vector<double> xc(std::size_t(c.size())), x(std::size_t(f.size())), y(x.size()), want(xc.size(), 0.0),
        got(xc.size());
    for (double& v : xc) v = u(rng);
    for (std::size_t k = 0; k < x.size(); ++k) x[k] = xc[std::size_t(parent[k])];
    f.apply(x.data(), y.data());
    for (std::size_t k = 0; k < y.size(); ++k) want[std::size_t(parent[k])] += y[k];
    c.apply(xc.data(), got.data());
    double err = 0, norm = 0;
    for (std::size_t k = 0; k < got.size(); ++k) err = std::max(err, std::fabs(got[k] - want[k])), norm = std::max(norm, std::fabs(want[k]));
    CHECK(err <= 1e-12 * norm);
  }
  std::vector<double> r1(static_cast<std::size_t>(n)), r2(r1.size()), z1(r1.size()), z2(r1.size());
  for (int trial = 0; trial < 4; ++trial) {
    for (std::size_t k = 0; k < r1.size(); ++k) r1[k] = u(rng), r2[k] = u(rng);
    mg.apply(r1.data(), z1.data());
    mg.apply(r2.data(), z2.data());
    double a12 = 0, a21 = 0, a11 = 0;
    for (std::size_t k = 0; k < r1.size(); ++k) a12 += r1[k] * z2[k], a21 += r2[k] * z1[k], a11 += r1[k] * z1[k];
    CHECK(a12 == doctest::Approx(a21).epsilon(1e-10));
    CHECK(a11 > 0);
  }
}

// Preconditioned by the V-cycle, conjugate gradients need tens of iterations on a pore space
// where Jacobi took about 15 per voxel of extent.
TEST_CASE("transport.cpu.formation_factor.multigrid_iterations") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  const Mask m = generate_blobs({48, 48, 48}, 0.3, 1.0, seed);
  const FormationFactorResult r = formation_factor(m, 0, {}, Backend::cpu);
  REQUIRE(std::isfinite(r.formation_factor));
  CHECK(r.converged);
  CHECK(r.iterations < 80);
}

// Through the whole hierarchy (more unknowns than the coarsest level's dense solve takes): an
// open box, a one-voxel slab and a line, each F = 1 along every axis they span, whatever the
// spacing.
TEST_CASE("transport.cpu.formation_factor.multigrid_open_boxes") {
  for (const Shape shape : {Shape{30, 30, 30}, Shape{33, 17, 41}, Shape{200, 200, 1}, Shape{1, 1, 5000}})
    for (const Spacing sp : {Spacing{}, Spacing{0.5, 2.0, 1.5}}) {
      CAPTURE(to_string(shape));
      const Mask m(shape, sp, 1);
      for (int axis = 0; axis < 3; ++axis) {
        if (shape.extent(axis) == 1) continue;
        const FormationFactorResult r = formation_factor(m, axis, {}, Backend::cpu);
        CHECK(r.converged);
        CHECK(r.formation_factor == doctest::Approx(1.0).epsilon(1e-7));
      }
    }
}
