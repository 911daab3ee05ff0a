// The annealer on the CUDA backend: the device-resident PSD evaluator against the CPU after
// random changes, and a whole annealing run that must equal the CPU run step for step (PSD
// counts are exact integers and the loop is the same host code, so the runs are identical).
#include <doctest/doctest.h>

#include <random>

#include "cpu/cpu_backend.hpp"

#include "poreforge/annealer/annealer.hpp"
#include "poreforge/evaluator.hpp"
#include "poreforge/generators.hpp"
#include "poreforge/local_thickness.hpp"
#include "support/backends.hpp"
#include "support/random.hpp"

using namespace poreforge;

TEST_CASE("anneal.cuda.evaluator_matches_cpu_after_changes" * PF_GPU_DECORATORS) {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  for (const Boundary boundary : {Boundary::periodic, Boundary::open}) {
    Mask m = generate_blobs({40, 33, 27}, 0.4, 0.6, seed);
    const Bins bins = Bins::linear(0.5, 6.0, 9);
    auto gpu = make_psd_evaluator(m, boundary, bins, Backend::cuda);
    REQUIRE(gpu->backend() == Backend::cuda);
    std::mt19937_64 rng(seed);
    for (int round = 0; round < 30; ++round) {
      for (int k = 0; k < 1 + round % 7; ++k) {  // a few changes, sometimes the same voxel twice
        const int64_t v = int64_t(rng() % uint64_t(m.voxels()));
        const uint8_t value = uint8_t(rng() & 1);
        m[v] = value;
        gpu->set(v, value);
      }
      const PsdCounts expected = cpu::psd_counts(m, boundary, bins), got = gpu->counts();
      CAPTURE(round);
      CHECK(got.at_least == expected.at_least);
      CHECK(got.above == expected.above);
      CHECK(got.phase_voxels == expected.phase_voxels);
    }
  }
}

TEST_CASE("anneal.cuda.run_equals_cpu_run" * PF_GPU_DECORATORS) {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  const Shape shape{20, 18, 16};
  anneal::Config c;
  c.shape = shape;
  c.boundary = Boundary::periodic;
  c.targets = anneal::Targets::from_image(generate_blobs(shape, 0.4, 0.7, seed ^ 0x5eed), Boundary::periodic, 8, false,
                                          Backend::cpu);
  c.weights.solid_psd = 0.5;
  c.seed = seed;
  c.schedule.trial_moves = 50;
  c.schedule.stage_length = 100;
  c.stopping.max_evaluations = 600;
  c.backend = Backend::cpu;
  anneal::Annealer cpu(c);
  c.backend = Backend::cuda;
  anneal::Annealer gpu(c);
  REQUIRE(gpu.backend() == Backend::cuda);
  CHECK(gpu.progress().temperature == cpu.progress().temperature);
  const auto a = cpu.run(), b = gpu.run();
  CHECK(b.evaluations == a.evaluations);
  CHECK(b.accepted == a.accepted);
  CHECK(b.energy.total == a.energy.total);
  CHECK(gpu.structure().values() == cpu.structure().values());
  const auto scratch = gpu.evaluate_from_scratch();
  CHECK(scratch.total == doctest::Approx(b.energy.total).epsilon(1e-12));
}
