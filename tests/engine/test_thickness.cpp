// Distance transform, local thickness and PSD against the brute-force definitions.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <random>

#include "cpu/cpu_backend.hpp"
#include "poreforge/edt.hpp"
#include "poreforge/evaluator.hpp"
#include "poreforge/generators.hpp"
#include "poreforge/error.hpp"
#include "poreforge/local_thickness.hpp"
#include "poreforge/measures.hpp"
#include "poreforge/psd.hpp"
#include "support/backends.hpp"
#include "support/random.hpp"
#include "support/reference.hpp"

using namespace poreforge;

namespace {

const Boundary all_boundaries[] = {Boundary::open, Boundary::wall, Boundary::periodic};

bool has_background(const Mask& phase, Boundary boundary) {
  if (count_phase(phase) < phase.voxels()) return true;
  if (boundary != Boundary::wall) return false;
  const Shape s = phase.shape();
  return s.nx > 1 || s.ny > 1 || s.nz > 1;
}

// Checks distance, local thickness and both PSD paths of one mask against brute force.
template <class M>
void check_against_brute_force(const Mask& phase, Boundary boundary, const M& metric, Backend backend,
                               bool exact) {
  CAPTURE(to_string(boundary));
  CAPTURE(to_string(phase.shape()));
  if (count_phase(phase) == 0 || !has_background(phase, boundary)) {
    CHECK_THROWS_AS(local_thickness(phase, boundary, backend), InputError);
    return;
  }
  const auto d2 = testing::brute_squared_distance(phase, boundary, metric);
  const Volume<float> dt = distance_transform(phase, boundary, backend);
  const Volume<float> lt = local_thickness(phase, boundary, backend);
  const auto expected = testing::brute_local_thickness(phase, boundary, metric, d2);

  int64_t dt_mismatch = 0, lt_mismatch = 0;
  for (int64_t i = 0; i < phase.voxels(); ++i) {
    const float want_dt = phase[i] ? metric.radius(d2[i]) : 0.0f;
    const float want_lt = expected[i];
    const bool dt_ok = exact ? dt[i] == want_dt : std::abs(dt[i] - want_dt) <= 1e-6f * std::max(1.0f, want_dt);
    const bool lt_ok = exact ? lt[i] == want_lt : std::abs(lt[i] - want_lt) <= 1e-6f * std::max(1.0f, want_lt);
    dt_mismatch += !dt_ok;
    lt_mismatch += !lt_ok;
    if (!lt_ok && lt_mismatch == 1) {
      const auto s = phase.shape();
      MESSAGE("first LT mismatch at (" << i % s.nx << "," << (i / s.nx) % s.ny << "," << i / (s.nx * s.ny)
                                       << "): got " << lt[i] << ", want " << want_lt);
    }
  }
  CHECK(dt_mismatch == 0);
  CHECK(lt_mismatch == 0);

  // PSD: the histogram of the map, the PSD-only path and the brute-force map all agree.
  Volume<float> expected_map(phase.shape(), phase.spacing(), expected);
  const Bins bins = default_bins(expected_map, phase, 7, false);
  const auto want = psd_from_thickness(expected_map, phase, bins);
  const auto from_map = psd_from_thickness(lt, phase, bins);
  const auto only = pore_size_distribution(phase, boundary, bins, backend);
  CHECK(from_map.fraction == want.fraction);
  CHECK(only.fraction == want.fraction);
  CHECK(only.cumulative == want.cumulative);
  double sum = 0;
  for (double f : only.fraction) sum += f;
  CHECK(sum == doctest::Approx(1.0).epsilon(1e-12));
}

}  // namespace

PF_BACKEND_TEST("local_thickness", "brute_force_isotropic") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  const Shape shapes[] = {{20, 20, 20}, {17, 31, 5}, {1, 1, 40}, {23, 19, 1}, {2, 3, 4}, {40, 1, 1}};
  int k = 0;
  for (const Shape& shape : shapes)
    for (Boundary boundary : all_boundaries) {
      const int kind = k % 3;
      const double porosity = 0.3 + 0.4 * ((k * 37) % 10) / 10.0;
      Mask phase = testing::random_volume(shape, kind, porosity, seed + k++);
      phase.set_spacing(k % 2 ? Spacing{1, 1, 1} : Spacing{0.7, 0.7, 0.7});
      const auto metric = detail::VoxelMetric{phase.spacing().x};
      check_against_brute_force(phase, boundary, metric, B::backend, true);
      check_against_brute_force(complement(phase), boundary, metric, B::backend, true);
    }
}

PF_BACKEND_TEST("local_thickness", "brute_force_anisotropic") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  const Shape shapes[] = {{16, 18, 14}, {17, 31, 5}, {1, 1, 30}, {21, 17, 1}};
  const Spacing spacings[] = {{1.0, 1.7, 0.6}, {0.5, 0.5, 2.0}, {3.0, 1.0, 1.0}};
  int k = 0;
  for (const Shape& shape : shapes)
    for (Boundary boundary : all_boundaries) {
      Mask phase = testing::random_volume(shape, k % 3, 0.55, seed + k);
      phase.set_spacing(spacings[k++ % 3]);
      detail::PhysicalMetric metric{phase.spacing().x, phase.spacing().y, phase.spacing().z};
      check_against_brute_force(phase, boundary, metric, B::backend, false);
      check_against_brute_force(complement(phase), boundary, metric, B::backend, false);
    }
}

PF_BACKEND_TEST("edt", "squared_voxels_exact") {
  // Dense and sparse background: long runs of the phase, lines with one background voxel or
  // none (the line passes split lines at background voxels and walk periodic lines from one).
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  const Shape shapes[] = {{24, 24, 24}, {37, 5, 9}, {1, 50, 3}, {33, 1, 1}};
  int k = 0;
  for (const Shape& shape : shapes)
    for (const double porosity : {0.6, 0.97, 0.995}) {
      CAPTURE(to_string(shape));
      CAPTURE(porosity);
      const Mask phase = testing::random_volume(shape, k % 2, porosity, seed + k);
      ++k;
      for (Boundary boundary : all_boundaries) {
        CAPTURE(to_string(boundary));
        const auto want = testing::brute_squared_distance(phase, boundary, detail::VoxelMetric{});
        if (std::find(want.begin(), want.end(), detail::VoxelMetric::infinity) != want.end()) {
          CHECK_THROWS_AS(squared_distance_voxels(phase, boundary, B::backend), InputError);  // no background
          CHECK_THROWS_AS(distance_transform(phase, boundary, B::backend), InputError);
          continue;
        }
        CHECK(squared_distance_voxels(phase, boundary, B::backend).values() == want);
      }
    }
}

PF_BACKEND_TEST("local_thickness", "ball") {
  // A voxelised ball |x| ≤ R in an open volume: every voxel has LT = √(R²+1), since the
  // centre's distance to the nearest outside voxel is √(R²+1).
  for (int R : {1, 2, 3, 5, 8, 13}) {
    CAPTURE(R);
    const int64_t n = 2 * R + 5;
    Mask ball({n, n, n});
    const int64_t c = n / 2;
    for (int64_t z = 0; z < n; ++z)
      for (int64_t y = 0; y < n; ++y)
        for (int64_t x = 0; x < n; ++x)
          ball(x, y, z) = (x - c) * (x - c) + (y - c) * (y - c) + (z - c) * (z - c) <= R * R;
    const float want = static_cast<float>(std::sqrt(double(R * R + 1)));
    const auto lt = local_thickness(ball, Boundary::open, B::backend);
    int64_t wrong = 0;
    for (int64_t i = 0; i < ball.voxels(); ++i) wrong += ball[i] ? lt[i] != want : lt[i] != 0.0f;
    CHECK(wrong == 0);
  }
}

PF_BACKEND_TEST("local_thickness", "slab_and_cylinder") {
  SUBCASE("slab of width 2h+1 between walls along z") {
    for (int h : {0, 1, 4, 7}) {
      CAPTURE(h);
      const int64_t nz = 2 * h + 1;
      Mask slab({30, 30, nz + 2});
      for (int64_t z = 1; z <= nz; ++z)
        for (int64_t y = 0; y < 30; ++y)
          for (int64_t x = 0; x < 30; ++x) slab(x, y, z) = 1;
      // Periodic in x and y is what makes it an infinite slab: the mid-plane's distance is h+1.
      const auto lt = local_thickness(slab, Boundary::periodic, B::backend);
      int64_t wrong = 0;
      for (int64_t i = 0; i < slab.voxels(); ++i) wrong += slab[i] ? lt[i] != float(h + 1) : lt[i] != 0.0f;
      CHECK(wrong == 0);
    }
  }
  SUBCASE("cylinder along z, periodic") {
    for (int R : {2, 4, 6}) {
      CAPTURE(R);
      const int64_t n = 2 * R + 4, c = n / 2;
      Mask cyl({n, n, 12});
      for (int64_t z = 0; z < 12; ++z)
        for (int64_t y = 0; y < n; ++y)
          for (int64_t x = 0; x < n; ++x) cyl(x, y, z) = (x - c) * (x - c) + (y - c) * (y - c) <= R * R;
      // The axis voxel is √(R²+1) from the nearest outside voxel, and its ball covers the disk.
      const float want = static_cast<float>(std::sqrt(double(R * R + 1)));
      const auto lt = local_thickness(cyl, Boundary::periodic, B::backend);
      int64_t wrong = 0;
      for (int64_t i = 0; i < cyl.voxels(); ++i) wrong += cyl[i] ? lt[i] != want : lt[i] != 0.0f;
      CHECK(wrong == 0);
    }
  }
}

PF_BACKEND_TEST("local_thickness", "bad_input") {
  Mask empty({8, 8, 8});
  CHECK_THROWS_WITH_AS(local_thickness(empty, Boundary::open, B::backend), doctest::Contains("empty"), InputError);
  Mask full({8, 8, 8}, {}, 1);
  CHECK_THROWS_WITH_AS(local_thickness(full, Boundary::open, B::backend), doctest::Contains("fills the whole volume"),
                       InputError);
  CHECK_THROWS_AS(local_thickness(full, Boundary::periodic, B::backend), InputError);
  // With walls the outside is background: a full volume is a box of thickness ~4.
  const auto lt = local_thickness(full, Boundary::wall, B::backend);
  CHECK(lt(4, 4, 4) == doctest::Approx(4.0));
  Mask bad_spacing = testing::random_volume({6, 6, 6}, 0, 0.5, 1);
  bad_spacing.set_spacing({1, -1, 1});
  CHECK_THROWS_WITH_AS(local_thickness(bad_spacing, Boundary::open, B::backend), doctest::Contains("spacing"),
                       InputError);
}

// `auto` for one-shot work: the CPU where no device answers (whatever the size), the device for
// a volume too large for the CPU to win even against the device's start-up, the CPU for a tiny
// one, its reason the two estimates (it did not ask for a device, which would start the
// driver). An explicit request resolves as resolve_backend does.
TEST_CASE("backend.auto_by_size") {
  const BackendChoice tiny = choose_backend(Backend::automatic, Operation::local_thickness, 1000);
  CHECK(tiny.backend == Backend::cpu);
  if (cuda_compiled()) {
    CHECK(tiny.reason.find("on a device") != std::string::npos);
    CHECK(tiny.reason.find("CPU threads") != std::string::npos);
  }
  const BackendChoice huge = choose_backend(Backend::automatic, Operation::local_thickness, int64_t(1) << 32, 4);
  if (!has_cuda_device()) {
    CHECK(huge.backend == Backend::cpu);
    CHECK((huge.reason == "no CUDA device" || huge.reason == "this build has no CUDA backend"));
  } else {
    CHECK(huge.backend == Backend::cuda);
    CHECK(huge.reason.find("on a device") != std::string::npos);
  }
  CHECK(choose_backend(Backend::cpu, Operation::local_thickness, int64_t(1) << 32).backend == Backend::cpu);
  if (!has_cuda_device())
    CHECK_THROWS_AS(choose_backend(Backend::cuda, Operation::local_thickness, 1000), InputError);
}

// The CPU evaluator re-evaluates around the changed voxels when the volume is large beside its
// structure: after every batch of random swaps (some undone before the evaluation, some several
// at once) its counts equal a from-scratch PSD of the same mask, on every boundary, and most
// evaluations did run locally. A copy made halfway (its last change still pending) takes the
// same changes and gives the same counts, locally from its first evaluation.
TEST_CASE("psd.cpu.local_evaluation_equals_full") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const Bins bins = Bins::linear(0.5, 4.5, 8);
  // Evaluations per boundary: 200 in the suite (the from-scratch references take most of its time); more by hand.
  const char* asked = std::getenv("POREFORGE_LOCAL_EVALUATIONS");
  const int steps = asked ? std::atoi(asked) : 200;
  for (int run = 0; run < 6; ++run) {
    const Boundary boundary = std::array<Boundary, 3>{Boundary::open, Boundary::wall, Boundary::periodic}[run % 3];
    const Shape shape = run < 3 ? Shape{72, 64, 60} : Shape{200, 180, 1};  // 3D, then 2D (a flat z)
    CAPTURE(to_string(boundary));
    CAPTURE(to_string(shape));
    Mask m = generate_blobs(shape, 0.45, 3.0, seed + uint64_t(run));
    auto evaluator = make_psd_evaluator(m, boundary, bins, Backend::cpu);
    // The openings' χ counted from the start (even runs) or from a quarter of the way in.
    const int openings_from = run % 2 == 0 ? 0 : steps / 4;
    std::unique_ptr<PsdEvaluator> twin;
    const auto set = [&](int64_t i, uint8_t v) {
      evaluator->set(i, v);
      if (twin) twin->set(i, v);
    };
    std::vector<int64_t> pore, solid;
    for (int64_t i = 0; i < m.voxels(); ++i) (m[std::size_t(i)] ? pore : solid).push_back(i);
    auto pick = [&](std::vector<int64_t>& from) -> int64_t& { return from[rng() % from.size()]; };
    for (int step = 0; step < steps; ++step) {
      const int swaps = step % 50 == 0 ? 3 : 1;
      for (int k = 0; k < swaps; ++k) {
        int64_t& a = pick(pore);
        int64_t& b = pick(solid);
        set(a, 0);
        set(b, 1);
        if (step % 7 == 3) {  // undone before the evaluation: nothing changed
          set(a, 1);
          set(b, 0);
          continue;
        }
        m[std::size_t(a)] = 0;
        m[std::size_t(b)] = 1;
        std::swap(a, b);
      }
      if (step == openings_from) REQUIRE(evaluator->count_openings());
      const PsdCounts got = evaluator->counts();
      const PsdCounts want = cpu::psd_counts(m, boundary, bins);
      REQUIRE(got.at_least == want.at_least);
      REQUIRE(got.above == want.above);
      REQUIRE(got.phase_voxels == want.phase_voxels);
      std::vector<int64_t> openings;  // 8·χ of {thickness ≥ edge} over the inner cells, from scratch
      if (step >= openings_from) {
        openings = inner_euler8_of_openings(cpu::local_thickness(m, boundary), bins.edges());
        REQUIRE(got.opening_euler == openings);
      } else {
        REQUIRE(got.opening_euler.empty());
      }
      if (twin) {
        const PsdCounts copied = twin->counts();
        REQUIRE(copied.at_least == want.at_least);
        REQUIRE(copied.above == want.above);
        REQUIRE(copied.opening_euler == openings);
      }
      if (step == steps / 2) twin = evaluator->copy();
    }
    const cpu::EvaluationTally tally = cpu::evaluation_tally(*evaluator);
    CAPTURE(tally.full);
    // The first evaluation computes the map; every later one after a change ran locally (none
    // is left to the full path at this size). The copy counts the original's first half as its
    // own, and evaluated nothing from scratch.
    CHECK(tally.full == 1);
    CHECK(tally.local == steps - (steps + 3) / 7 - 1);
    REQUIRE(twin);
    CHECK(cpu::evaluation_tally(*twin).full == 1);
    CHECK(cpu::evaluation_tally(*twin).local == tally.local);
  }
}

// An accepted swap is committed from what its scoring found, not evaluated again, and a copy in
// the same state takes a swap another copy scored the same way (an annealer's replicas,
// settle_with), even after that copy scored others (a replica's backlog): both stay equal to a
// from-scratch PSD. A copy given the findings of another swap, or of the same swap scored from
// another state, evaluates it itself, as exactly.
TEST_CASE("psd.cpu.commits_take_what_the_scoring_found") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const Bins bins = Bins::linear(0.5, 4.5, 8);
  for (int run = 0; run < 4; ++run) {
    const Boundary boundary = std::array<Boundary, 3>{Boundary::open, Boundary::wall, Boundary::periodic}[run % 3];
    const Shape shape = run < 3 ? Shape{64, 60, 56} : Shape{180, 160, 1};
    CAPTURE(to_string(boundary));
    CAPTURE(to_string(shape));
    Mask m = generate_blobs(shape, 0.45, 3.0, seed + uint64_t(run));
    auto scorer = make_psd_evaluator(m, boundary, bins, Backend::cpu);
    if (run % 2 == 1) REQUIRE(scorer->count_openings());
    scorer->counts();
    auto replica = scorer->copy();
    REQUIRE(replica);
    std::vector<int64_t> pore, solid;
    for (int64_t i = 0; i < m.voxels(); ++i) (m[std::size_t(i)] ? pore : solid).push_back(i);
    const auto pick = [&](std::vector<int64_t>& from) -> int64_t& { return from[rng() % from.size()]; };
    const auto swap_in = [&](PsdEvaluator& e, int64_t to_solid, int64_t to_pore) {
      e.set(to_solid, 0);
      e.set(to_pore, 1);
    };
    const auto equals_scratch = [&](const PsdCounts& got) {
      const PsdCounts want = cpu::psd_counts(m, boundary, bins);
      REQUIRE(got.at_least == want.at_least);
      REQUIRE(got.phase_voxels == want.phase_voxels);
      if (run % 2 == 1) REQUIRE(got.opening_euler == inner_euler8_of_openings(cpu::local_thickness(m, boundary), bins.edges()));
    };
    int taken = 0, held = 0, mismatched = 0;
    for (int step = 0; step < 60; ++step) {
      int64_t& a = pick(pore);
      int64_t& b = pick(solid);
      const auto another = [&](int64_t& to_solid, int64_t& to_pore) {
        do to_solid = pick(pore), to_pore = pick(solid);
        while (to_solid == a || to_pore == b);
      };
      // The scorer scores the swap and sets it back; the replica scores another and sets it back.
      swap_in(*scorer, a, b);
      m[std::size_t(a)] = 0, m[std::size_t(b)] = 1;
      equals_scratch(scorer->counts());
      const std::shared_ptr<const Scoring> its = scorer->last_scoring();
      REQUIRE(its.get() != nullptr);
      swap_in(*scorer, b, a);
      int64_t c, d;
      another(c, d);
      swap_in(*replica, c, d);
      m[std::size_t(a)] = 1, m[std::size_t(b)] = 0, m[std::size_t(c)] = 0, m[std::size_t(d)] = 1;
      equals_scratch(replica->counts());  // its maps as they stand after the last findings taken
      m[std::size_t(a)] = 0, m[std::size_t(b)] = 1, m[std::size_t(c)] = 1, m[std::size_t(d)] = 0;
      swap_in(*replica, d, c);
      // Two steps in three the scorer scores another swap after it: the replica takes this
      // swap's findings held from before (one step), or the other's (the next), which do not fit.
      const int kind = step % 3;
      if (kind > 0) {
        int64_t e, f;
        another(e, f);
        swap_in(*scorer, e, f);
        scorer->counts();
        swap_in(*scorer, f, e);
      }
      // Taken by both.
      swap_in(*scorer, a, b);
      scorer->settle();
      swap_in(*replica, a, b);
      replica->settle_with(kind == 1 ? its : scorer->last_scoring());
      (kind == 0 ? taken : kind == 1 ? held : mismatched) += 1;
      std::swap(a, b);
      if (step % 10 == 9) {
        equals_scratch(scorer->counts());
        equals_scratch(replica->counts());
      }
    }
    // The scorer committed from its own findings where they were its last; the replica took
    // every swap's own findings, and evaluated the ones it was given another's for (its own
    // scorings were set back: none of its commits came from them).
    CHECK(cpu::evaluation_tally(*scorer).recorded == taken);
    CHECK(cpu::evaluation_tally(*replica).recorded == taken + held);
    CHECK(mismatched > 0);
    CHECK(cpu::evaluation_tally(*replica).full == 1);  // the scorer's first evaluation, copied with it

    // The same swap scored from another state: the scorer takes swap X and then scores and takes
    // Y; the replica, still without X, is given Y's findings first (its hash differs), then X.
    int64_t x_solid = pick(pore), x_pore = pick(solid), y_solid, y_pore;
    do y_solid = pick(pore), y_pore = pick(solid);
    while (y_solid == x_solid || y_pore == x_pore);
    swap_in(*scorer, x_solid, x_pore);
    m[std::size_t(x_solid)] = 0, m[std::size_t(x_pore)] = 1;
    equals_scratch(scorer->counts());
    swap_in(*scorer, y_solid, y_pore);
    m[std::size_t(y_solid)] = 0, m[std::size_t(y_pore)] = 1;
    equals_scratch(scorer->counts());
    const int64_t before = cpu::evaluation_tally(*replica).recorded;
    swap_in(*replica, y_solid, y_pore);
    replica->settle_with(scorer->last_scoring());
    CHECK(cpu::evaluation_tally(*replica).recorded == before);
    swap_in(*replica, x_solid, x_pore);
    replica->settle();
    equals_scratch(replica->counts());
  }
}

// The local evaluator's edges: an evaluation that throws (the phase emptied) leaves the next
// to start afresh; a non-unit spacing; a volume too thin for local boxes goes from scratch.
TEST_CASE("psd.cpu.local_evaluation_edges") {
  const Bins bins = Bins::linear(0.05, 0.45, 5);
  Mask specks({64, 64, 64}, {0.1, 0.1, 0.1});
  const int64_t spots[3] = {64 * 64 * 10 + 64 * 10 + 10, 64 * 64 * 30 + 64 * 40 + 50, 64 * 64 * 50 + 64 * 20 + 33};
  for (int64_t i : spots) specks[std::size_t(i)] = 1;
  auto e = make_psd_evaluator(specks, Boundary::open, bins, Backend::cpu);
  CHECK(e->counts().at_least == cpu::psd_counts(specks, Boundary::open, bins).at_least);
  for (int64_t i : spots) e->set(i, 0);
  CHECK_THROWS_WITH_AS(e->counts(), doctest::Contains("phase is empty"), InputError);
  e->set(spots[1], 1);
  specks[std::size_t(spots[0])] = specks[std::size_t(spots[2])] = 0;
  const PsdCounts after = e->counts();
  CHECK(after.phase_voxels == 1);
  CHECK(after.at_least == cpu::psd_counts(specks, Boundary::open, bins).at_least);

  // Every voxel phase: no background, the evaluation throws from scratch; one voxel back and
  // the next evaluation starts afresh and is right.
  Mask full_box = generate_blobs({48, 48, 48}, 0.45, 3.0, 9);
  auto whole = make_psd_evaluator(full_box, Boundary::open, bins, Backend::cpu);
  whole->counts();
  for (int64_t i = 0; i < full_box.voxels(); ++i) whole->set(i, 1);
  CHECK_THROWS_WITH_AS(whole->counts(), doctest::Contains("no background"), InputError);
  Mask one_solid({48, 48, 48}, {}, 1);
  one_solid(20, 20, 20) = 0;
  whole->set((20 * 48 + 20) * 48 + 20, 0);
  CHECK(whole->counts().at_least == cpu::psd_counts(one_solid, Boundary::open, bins).at_least);

  // The openings counted where the evaluator keeps no maps: anisotropic voxels (evaluated from
  // scratch every time), and an evaluator with more changes than it tracks before its first
  // evaluation.
  {
    const Bins b = Bins::linear(0.05, 0.6, 6);
    Mask aniso = generate_blobs({30, 28, 26}, 0.45, 3.0, 13);
    aniso.set_spacing({0.1, 0.1, 0.2});
    auto scratch = make_psd_evaluator(aniso, Boundary::open, b, Backend::cpu);
    REQUIRE(scratch->count_openings());
    std::mt19937_64 flips(13);
    for (int step = 0; step < 4; ++step) {
      const int64_t i = int64_t(flips() % uint64_t(aniso.voxels()));
      aniso[std::size_t(i)] = uint8_t(1 - aniso[std::size_t(i)]);
      scratch->set(i, aniso[std::size_t(i)]);
      const std::vector<int64_t> want = inner_euler8_of_openings(cpu::local_thickness(aniso, Boundary::open), b.edges());
      REQUIRE(std::any_of(want.begin(), want.end(), [](int64_t x) { return x != 0; }));
      CHECK(scratch->counts().opening_euler == want);
    }
    Mask many = generate_blobs({32, 32, 32}, 0.45, 3.0, 14);
    auto m = make_psd_evaluator(many, Boundary::open, b, Backend::cpu);
    REQUIRE(m->count_openings());
    for (int64_t i = 0; i < 100; ++i) {
      many[std::size_t(i)] = uint8_t(1 - many[std::size_t(i)]);
      m->set(i, many[std::size_t(i)]);
    }
    CHECK(m->counts().opening_euler == inner_euler8_of_openings(cpu::local_thickness(many, Boundary::open), b.edges()));
  }

  // A spacing of 0.3: radii in physical units, the same counts.
  Mask blobs = generate_blobs({70, 66, 62}, 0.45, 3.0, 11);
  blobs.set_spacing({0.3, 0.3, 0.3});
  const Bins wide = Bins::linear(0.1, 1.5, 7);
  auto local = make_psd_evaluator(blobs, Boundary::wall, wide, Backend::cpu);
  local->counts();
  std::mt19937_64 rng(5);
  for (int step = 0; step < 40; ++step) {
    int64_t a, b;
    do a = int64_t(rng() % uint64_t(blobs.voxels())); while (!blobs[std::size_t(a)]);
    do b = int64_t(rng() % uint64_t(blobs.voxels())); while (blobs[std::size_t(b)]);
    local->set(a, 0), local->set(b, 1);
    blobs[std::size_t(a)] = 0, blobs[std::size_t(b)] = 1;
    CHECK(local->counts().at_least == cpu::psd_counts(blobs, Boundary::wall, wide).at_least);
  }
  CHECK(cpu::evaluation_tally(*local).local == 40);

  // Distances that grow past what their 4×4×4 brick held: solid specks in a wide pore taken out
  // one at a time, each followed by voxels set round where it was, whose reach runs through the
  // grown distances (a brick that kept its old largest would hide them).
  Mask pore({96, 96, 96}, {0.1, 0.1, 0.1});
  for (int64_t z = 28; z < 68; ++z)
    for (int64_t y = 28; y < 68; ++y)
      for (int64_t x = 28; x < 68; ++x) pore(x, y, z) = 1;
  const int64_t speck[3][3] = {{47, 48, 46}, {38, 54, 53}, {57, 41, 37}};
  for (const auto& c : speck) pore(c[0], c[1], c[2]) = 0;
  const Bins fine = Bins::linear(0.05, 2.5, 60);  // radii to 25 voxels
  auto grow = make_psd_evaluator(pore, Boundary::open, fine, Backend::cpu);
  grow->counts();
  // Ten voxels off, a set voxel's reach (voxels nearer it than the walls) runs farthest
  // through where the speck was.
  const int64_t offsets[6][3] = {{10, 0, 0}, {0, -10, 0}, {0, 0, 10}, {-9, 5, 0}, {0, 7, -8}, {6, 0, -9}};
  for (const auto& c : speck) {
    pore(c[0], c[1], c[2]) = 1;
    grow->set((c[2] * 96 + c[1]) * 96 + c[0], 1);
    CHECK(grow->counts().at_least == cpu::psd_counts(pore, Boundary::open, fine).at_least);
    for (const auto& o : offsets) {
      const int64_t i = ((c[2] + o[2]) * 96 + c[1] + o[1]) * 96 + c[0] + o[0];
      pore[std::size_t(i)] = uint8_t(1 - pore[std::size_t(i)]);
      grow->set(i, pore[std::size_t(i)]);
      CHECK(grow->counts().at_least == cpu::psd_counts(pore, Boundary::open, fine).at_least);
    }
  }
  CHECK(cpu::evaluation_tally(*grow).local >= 15);  // a few, whose regions hold most of the box, from scratch

  // Periodic and 12 voxels thick: the boxes along z take the whole axis, each voxel once.
  Mask thin = generate_blobs({96, 96, 12}, 0.45, 3.0, 12);
  auto flat = make_psd_evaluator(thin, Boundary::periodic, bins, Backend::cpu);
  flat->counts();
  for (int step = 0; step < 20; ++step) {
    int64_t a, b;
    do a = int64_t(rng() % uint64_t(thin.voxels())); while (!thin[std::size_t(a)]);
    do b = int64_t(rng() % uint64_t(thin.voxels())); while (thin[std::size_t(b)]);
    flat->set(a, 0), flat->set(b, 1);
    thin[std::size_t(a)] = 0, thin[std::size_t(b)] = 1;
    CHECK(flat->counts().at_least == cpu::psd_counts(thin, Boundary::periodic, bins).at_least);
  }
  CHECK(cpu::evaluation_tally(*flat).local == 20);
  CHECK(cpu::evaluation_tally(*flat).full == 1);
}
