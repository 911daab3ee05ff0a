// The annealer on the CUDA backend: the device-resident PSD evaluator against the CPU after
// random changes, and whole annealing runs — driven from the host, and on the device — that
// must equal the CPU run step for step (PSD counts are exact integers, and the device loop
// does the host loop's arithmetic in the host loop's order).
#include <doctest/doctest.h>

#include <random>

#include "cpu/cpu_backend.hpp"

#include "poreforge/annealer/annealer.hpp"
#include "poreforge/error.hpp"
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

namespace {

// A small reconstruction problem with every term weighted.
anneal::Config small_problem(Shape shape, uint64_t seed) {
  anneal::Config c;
  c.shape = shape;
  c.boundary = Boundary::periodic;
  c.targets = anneal::Targets::from_image(generate_blobs(shape, 0.4, 0.7, seed ^ 0x5eed), Boundary::periodic, 8, false,
                                          Backend::cpu);
  c.weights.solid_psd = 0.5;
  c.moves.keep_pore_connected = true;  // blobs at 0.4 porosity: the largest cluster holds most of the pore
  c.seed = seed;
  c.schedule.trial_moves = 50;
  c.schedule.stage_length = 100;
  c.stopping.max_evaluations = 600;
  return c;
}

void check_same_run(const anneal::Annealer& got, const anneal::Annealer& expected) {
  const auto &a = expected.progress(), &b = got.progress();
  CHECK(b.evaluations == a.evaluations);
  CHECK(b.accepted == a.accepted);
  CHECK(b.rejected == a.rejected);
  CHECK(b.stage == a.stage);
  CHECK(b.stopped == a.stopped);
  CHECK(b.temperature == a.temperature);
  CHECK(b.energy.total == a.energy.total);
  CHECK(b.energy.pore_psd == a.energy.pore_psd);
  CHECK(b.energy.solid_psd == a.energy.solid_psd);
  CHECK(b.energy.s2 == a.energy.s2);
  CHECK(b.best.total == a.best.total);
  CHECK(b.last_delta == a.last_delta);
  CHECK(got.structure().values() == expected.structure().values());
  CHECK(got.counts() == expected.counts());
}

}  // namespace

// The three loops — CPU, CUDA driven from the host, CUDA on the device — are one algorithm
// with one random stream and exact integer descriptors: the same seed gives the same run.
TEST_CASE("anneal.cuda.run_equals_cpu_run" * PF_GPU_DECORATORS) {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  anneal::Config c = small_problem({20, 18, 16}, seed);
  c.backend = Backend::cpu;
  anneal::Annealer cpu(c);
  c.backend = Backend::cuda;
  c.host_loop = true;
  anneal::Annealer host(c);
  c.host_loop = false;
  anneal::Annealer device(c);
  REQUIRE(host.backend() == Backend::cuda);
  REQUIRE_FALSE(host.device_loop());
  REQUIRE(device.device_loop());
  CHECK(device.progress().temperature == cpu.progress().temperature);
  cpu.run();
  host.run();
  device.run();
  check_same_run(host, cpu);
  check_same_run(device, cpu);
  CHECK(device.counts() == anneal::DirectionalCounts(device.structure()));
  const auto scratch = device.evaluate_from_scratch();
  CHECK(scratch.total == doctest::Approx(device.progress().energy.total).epsilon(1e-12));
}

// The other branches of a step on the device: interface-biased proposals, the Aarts–Korst
// schedule, open boundaries, a stop by stalling, steps taken one by one and in batches.
TEST_CASE("anneal.cuda.device_loop_variants_equal_host_loop" * PF_GPU_DECORATORS) {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  anneal::Config c = small_problem({17, 23, 12}, seed);
  c.boundary = Boundary::open;
  c.moves.interface_bias = 1.5;
  c.schedule.kind = anneal::Schedule::Kind::aarts_korst;
  c.schedule.stage_length = 37;
  c.stopping.stall_stages = 3;
  c.stopping.max_evaluations = 3000;
  c.backend = Backend::cpu;
  anneal::Annealer cpu(c);
  c.backend = Backend::cuda;
  anneal::Annealer device(c);
  REQUIRE(device.device_loop());
  for (int k = 0; k < 5; ++k) CHECK(device.step() == cpu.step());
  cpu.advance(250);
  device.advance(250);
  check_same_run(device, cpu);
  cpu.run();
  device.run({}, 333);
  check_same_run(device, cpu);
  CHECK(device.progress().stopped != anneal::StopReason::none);
}

// A device run interrupted by a snapshot and resumed equals the run that went straight on; the
// snapshot is the host loop's snapshot of the same run.
TEST_CASE("anneal.cuda.device_loop_resume_is_exact" * PF_GPU_DECORATORS) {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  anneal::Config c = small_problem({16, 16, 16}, seed);
  c.schedule.stage_length = 70;  // the snapshot falls inside a stage
  c.backend = Backend::cuda;
  anneal::Annealer straight(c), interrupted(c);
  c.host_loop = true;
  anneal::Annealer host(c);
  interrupted.advance(300);
  host.advance(300);
  const anneal::Snapshot snap = interrupted.snapshot(), host_snap = host.snapshot();
  CHECK(snap.pore.values() == host_snap.pore.values());
  CHECK(snap.pore_voxels == host_snap.pore_voxels);
  CHECK(snap.solid_voxels == host_snap.solid_voxels);
  CHECK(snap.stage_energies == host_snap.stage_energies);
  CHECK(snap.stall == host_snap.stall);
  c.host_loop = false;
  anneal::Annealer resumed(c, snap);
  REQUIRE(resumed.device_loop());
  straight.run();
  resumed.run();
  check_same_run(resumed, straight);
}

// Speculative batches on the device: the chain is the one a proposal at a time gives, for every
// batch size, with the PSD scored locally, and equals the CPU's run and the device loop that
// evaluates every step from scratch (every term weighted, connected and biased moves).
TEST_CASE("anneal.cuda.batches_take_the_same_chain" * PF_GPU_DECORATORS) {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  for (const bool solid : {false, true}) {
    CAPTURE(solid);
    anneal::Config c = small_problem({34, 30, 28}, seed + (solid ? 1 : 0));
    if (!solid) c.weights.solid_psd = 0;
    c.boundary = solid ? Boundary::open : Boundary::periodic;
    c.weights.euler = 0.3;
    c.weights.surface = 0.7;
    c.weights.chords = 0.6;
    c.weights.patterns = 0.8;
    c.weights.local_porosity = 0.9;
    c.moves.interface_bias = 1.0;
    c.stopping.max_evaluations = 4000;
    c.stopping.energy_tolerance = 0;
    c.backend = Backend::cpu;
    anneal::Annealer cpu(c);
    cpu.run();
    c.backend = Backend::cuda;
    c.local_evaluation = true;
    for (const int batch : {1, 7, 64, 0}) {
      CAPTURE(batch);
      c.batch = batch;
      anneal::Annealer device(c);
      REQUIRE(device.device_loop());
      device.run({}, 1000);
      check_same_run(device, cpu);
    }
    c.local_evaluation = false;
    anneal::Annealer full(c);
    full.run();
    check_same_run(full, cpu);
  }
}

// The openings term is counted by the CPU's evaluator only: on the CUDA backend, the loop on the
// device or on the host, the annealer refuses it by name rather than run without it.
TEST_CASE("anneal.cuda.openings_term_needs_the_cpu" * PF_GPU_DECORATORS) {
  anneal::Config c;
  c.shape = {16, 16, 16};
  c.boundary = Boundary::open;
  c.targets = anneal::Targets::from_image(generate_blobs(c.shape, 0.4, 0.6, 3), Boundary::open, 6, false, Backend::cpu);
  c.weights.openings = 1;
  c.backend = Backend::cuda;
  for (bool host_loop : {false, true}) {
    CAPTURE(host_loop);
    c.host_loop = host_loop;
    CHECK_THROWS_WITH_AS(anneal::Annealer{c}, doctest::Contains("openings weight needs the CPU backend"), InputError);
  }
}
