// The CUDA transport measures against the CPU's on random porous volumes (the analytic cases
// run on both backends in tests/engine/test_transport.cpp).
#include <doctest/doctest.h>

#include <cmath>

#include "poreforge/local_thickness.hpp"
#include "poreforge/transport.hpp"
#include "support/backends.hpp"
#include "support/random.hpp"

using namespace poreforge;

TEST_CASE("transport.cuda.formation_factor_matches_cpu_random" * PF_GPU_DECORATORS) {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  int finite = 0;
  for (const Shape shape : {Shape{40, 36, 33}, Shape{64, 64, 64}, Shape{23, 50, 1}})
    for (int kind = 1; kind < 3; ++kind)
      for (int axis = 0; axis < 3; ++axis) {
        CAPTURE(to_string(shape));
        CAPTURE(kind);
        CAPTURE(axis);
        Mask m = testing::random_volume(shape, kind, 0.4, seed + uint64_t(kind));
        m.set_spacing({1.0, 1.2, 0.9});
        const FormationFactorResult c = formation_factor(m, axis, {}, Backend::cpu);
        const FormationFactorResult g = formation_factor(m, axis, {}, Backend::cuda);
        CHECK(g.backend == Backend::cuda);
        CHECK(g.spanning_porosity == c.spanning_porosity);
        if (std::isinf(c.formation_factor)) {
          CHECK(std::isinf(g.formation_factor));
          continue;
        }
        ++finite;
        CHECK(g.converged);
        CHECK(g.formation_factor == doctest::Approx(c.formation_factor).epsilon(1e-6));
      }
  CHECK(finite > 6);
}

TEST_CASE("transport.cuda.poiseuille_permeability_matches_cpu_random" * PF_GPU_DECORATORS) {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  int finite = 0;
  for (const Shape shape : {Shape{40, 36, 33}, Shape{64, 64, 64}})
    for (int kind = 1; kind < 3; ++kind) {
      Mask m = testing::random_volume(shape, kind, 0.45, seed + uint64_t(kind));
      m.set_spacing({1.0, 1.2, 0.9});
      const Volume<float> radius = local_thickness(m, Boundary::open, Backend::cpu);
      for (int axis = 0; axis < 3; ++axis) {
        CAPTURE(to_string(shape));
        CAPTURE(kind);
        CAPTURE(axis);
        const PoiseuillePermeabilityResult c = poiseuille_permeability(m, radius, axis, {}, Backend::cpu);
        const PoiseuillePermeabilityResult g = poiseuille_permeability(m, radius, axis, {}, Backend::cuda);
        CHECK(g.backend == Backend::cuda);
        CHECK(g.converged);
        if (c.permeability == 0) {
          CHECK(g.permeability == 0);
          continue;
        }
        ++finite;
        CHECK(g.permeability == doctest::Approx(c.permeability).epsilon(1e-6));
      }
    }
  CHECK(finite > 4);
}

TEST_CASE("transport.cuda.permeability_matches_cpu_random" * PF_GPU_DECORATORS) {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  for (const bool mirror : {false, true}) {
    CAPTURE(mirror);
    const Mask m = testing::random_volume({20, 18, 16}, 2, 0.5, seed);
    PermeabilityOptions o;
    o.mirror = mirror;
    o.lateral = mirror ? LateralBoundary::wall : LateralBoundary::periodic;
    o.voxel_size_m = 5.345e-6;
    const PermeabilityResult c = permeability(m, 0, o, Backend::cpu);
    const PermeabilityResult g = permeability(m, 0, o, Backend::cuda);
    CHECK(g.backend == Backend::cuda);
    CHECK(g.spans == c.spans);
    CHECK(g.k_voxels == doctest::Approx(c.k_voxels).epsilon(1e-5));
    CHECK(g.k_millidarcy == doctest::Approx(c.k_millidarcy).epsilon(1e-5));
  }
}
