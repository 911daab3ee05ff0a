// The CUDA painter's cuts (common/row_cuts.hpp), replayed on the host: every kept ball paints
// the voxels its cuts and rows leave it, the largest radius wins, and the map must equal the
// CPU engine's to the bit. The GPU parity tests check the painter on a device; this checks
// the argument behind the cuts on every machine, CI included.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/row_cuts.hpp"
#include "cpu/ball_centres.hpp"
#include "poreforge/edt.hpp"
#include "poreforge/local_thickness.hpp"
#include "support/random.hpp"

using namespace poreforge;

namespace {

struct Replay {
  std::vector<float> map;
  int64_t painted = 0;             // voxel writes, every ball together
  int64_t column_mismatches = 0;   // box rows where column_rows and the chord disagree
};

// Paints every kept centre of `phase` as the CUDA painter does: the rows of each column that
// column_rows gives (checked against every row of the box: a row is given exactly when the
// x-cuts leave its chord a voxel and no diagonal neighbour takes it) and, in each row, its chord clipped by the x-cuts,
// wrapped or clipped at the faces; with `cuts` false, whole balls.
Replay replay_painter(const Mask& phase, Boundary boundary, bool cuts) {
  const Shape s = phase.shape();
  const detail::VoxelMetric metric{};
  const auto d2 = squared_distance_voxels(phase, boundary, Backend::cpu).values();
  const detail::Geometry g = detail::Geometry::of(s, boundary);
  const int nx = int(s.nx), ny = int(s.ny), nz = int(s.nz);
  Replay out{std::vector<float>(std::size_t(s.voxels()), 0.0f), 0, 0};
  for (const auto& centre : cpu::ball_centres(s, boundary, metric, d2)) {
    int64_t x, y, z;
    g.split(uint32_t(centre.index), x, y, z);
    const detail::RowCut cut = cuts ? detail::row_cut<detail::VoxelMetric>(d2.data(), centre.index, x, y, z, g)
                                    : detail::RowCut{};
    const detail::RowBox box = detail::box_of(metric, centre.r2, g, cut, int(y), int(z));
    const float value = metric.radius(centre.r2);
    for (int dz = box.z0; dz <= box.z1; ++dz) {
      const auto [lo, hi] = detail::column_rows(metric, box, dz);
      for (int dy = box.y0; dy <= box.y1; ++dy) {
        int from, to;
        const bool meets =
            detail::clip_chord(int(detail::chord_half_width(metric, centre.r2, 0, dy, dz)), box.x0, box.x1, from, to);
        // The column's rows are those that meet the ball and no diagonal neighbour takes.
        out.column_mismatches += (meets && !cut.diagonal_takes(dy, dz)) != (dy >= lo && dy <= hi);
        if (dy < lo || dy > hi) continue;
        if (!meets) continue;
        const int yy = int(y) + dy, zz = int(z) + dz;
        if ((yy < 0 || yy >= ny) && g.along(1) != Boundary::periodic) continue;
        if ((zz < 0 || zz >= nz) && g.along(2) != Boundary::periodic) continue;
        const int64_t row = (cpu::wrap(zz, nz) * ny + cpu::wrap(yy, ny)) * nx;
        for (int dx = from; dx <= to; ++dx) {
          int xx = int(x) + dx;
          if (xx < 0 || xx >= nx) {
            if (g.along(0) != Boundary::periodic) continue;
            xx = int(cpu::wrap(xx, nx));
          }
          float& v = out.map[std::size_t(row + xx)];
          v = std::max(v, value);
          ++out.painted;
        }
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("row_cuts.painter_cuts_are_exact") {
  const Shape shapes[] = {{1, 1, 1}, {7, 300, 2}, {3, 3, 50}, {40, 40, 40}, {64, 33, 20}, {129, 64, 33}};
  int64_t saved_somewhere = 0;
  for (const Shape& shape : shapes)
    for (Boundary boundary : {Boundary::open, Boundary::wall, Boundary::periodic})
      for (int kind = 0; kind < 3; ++kind) {
        const uint64_t seed = testing::fresh_seed();
        const double porosity = 0.35 + 0.15 * kind;
        const std::string where = to_string(shape) + (boundary == Boundary::open ? " open" : boundary == Boundary::wall ? " wall" : " periodic");
        CAPTURE(where);
        CAPTURE(kind);
        CAPTURE(seed);
        Mask phase = testing::random_volume(shape, kind, porosity, seed);
        // A background voxel to measure from (walls stand only on faces, and 1×1×1 has none).
        if (count_phase(phase) == phase.voxels() && (boundary != Boundary::wall || shape.voxels() == 1))
          phase.values()[0] = 0;
        if (count_phase(phase) == 0) continue;  // nothing to paint (1×1×1 drawn empty)
        const Volume<float> expected = local_thickness(phase, boundary, Backend::cpu);
        const Replay with_cuts = replay_painter(phase, boundary, true);
        const Replay whole = replay_painter(phase, boundary, false);
        int64_t differ = 0;
        for (std::size_t i = 0; i < expected.values().size(); ++i) differ += with_cuts.map[i] != expected.values()[i];
        CHECK(differ == 0);
        CHECK(with_cuts.column_mismatches == 0);
        CHECK(whole.column_mismatches == 0);
        // Whole balls give the same map (the centre test alone is exact) with more writes.
        CHECK(whole.map == expected.values());
        CHECK(with_cuts.painted <= whole.painted);
        saved_somewhere += whole.painted - with_cuts.painted;
      }
  CHECK(saved_somewhere > 0);  // the cuts took voxels, so the equality above tested them
}

TEST_CASE("row_cuts.field_packing") {
  detail::RowCut cut;
  CHECK_FALSE(cut.any());
  for (int side = 0; side < 6; ++side) CHECK(cut.from(side, 5) == detail::kNoCut);
  for (int k = 0; k < 4; ++k) CHECK(cut.diagonal_from(k) == detail::kNoCut);
  for (int side : {int(detail::RowCut::minus_z), int(detail::RowCut::plus_x)}) {
    const int exact_below = side < 4 ? 30 : 14, steps = exact_below;
    CAPTURE(side);
    // Below a reach of 30 (y, z) or 14 (x) every `from` in [−reach, 1] is kept exactly.
    for (int reach : {0, 1, 7, exact_below - 1})
      for (int from = -reach; from <= 1; ++from) {
        CAPTURE(reach);
        CAPTURE(from);
        cut.set(side, from, reach);
        CHECK(cut.from(side, reach) == from);
      }
    // Above, a `from` is rounded toward 1 (keeps more voxels) by less than a step,
    // (reach + 1) / steps; beyond the ball it becomes −reach (the whole ball along that side).
    for (int reach : {exact_below, 47, 200, 16000})
      for (int64_t from : {int64_t(1), int64_t(0), int64_t(-13), int64_t(-29), int64_t(-reach / 2), int64_t(-reach),
                           int64_t(-reach - 5), int64_t(-1000000)}) {
        CAPTURE(reach);
        CAPTURE(from);
        cut.set(side, from, reach);
        const int kept = cut.from(side, reach);
        const int64_t wanted = std::max<int64_t>(from, -reach);
        CHECK(kept >= wanted);
        CHECK(kept - wanted < double(reach + 1) / steps + 1);
      }
  }
  CHECK(cut.any());
  cut.set(detail::RowCut::plus_x, 1, 40);
  cut.set(detail::RowCut::minus_z, -3, 40);
  CHECK_FALSE(cut.diagonal_takes(5, 5));
  cut.set_diagonal(3);  // toward (+y, +z): rows with dy + dz ≥ 1
  cut.set_diagonal(0);  // toward (−y, −z): rows with −dy − dz ≥ 1
  CHECK(cut.diagonal_from(3) == 1);
  CHECK(cut.diagonal_from(0) == 1);
  CHECK(cut.diagonal_from(1) == detail::kNoCut);
  CHECK(cut.diagonal_takes(1, 0));
  CHECK(cut.diagonal_takes(-1, -1));
  CHECK_FALSE(cut.diagonal_takes(1, -1));
  CHECK_FALSE(cut.diagonal_takes(0, 0));
  // Every field keeps its own bits.
  CHECK(cut.from(detail::RowCut::plus_x, 40) == 1);
  CHECK(cut.from(detail::RowCut::minus_z, 40) == -3);
  for (int side : {int(detail::RowCut::plus_y), int(detail::RowCut::minus_y), int(detail::RowCut::plus_z),
                   int(detail::RowCut::minus_x)})
    CHECK(cut.from(side, 40) == detail::kNoCut);
}

// The painter's integer chord width (32-bit float estimate, one correction each way) against
// the definition — the largest w with w² + a² + b² < r2 — over the whole range the painter
// can meet: squared radii up to 3·(2^15 − 1)², offsets up to 2^15 − 1, and the values next to
// perfect squares where a float root rounds across an integer.
TEST_CASE("row_cuts.integer_chord_width") {
  const detail::VoxelMetric metric{};
  auto reference = [](uint64_t r2, int64_t a, int64_t b) -> int64_t {
    const uint64_t base = uint64_t(a * a + b * b);
    if (base >= r2) return -1;
    const uint64_t rest = r2 - base - 1;
    uint64_t w = uint64_t(std::sqrt(double(rest)));
    while (w * w > rest) --w;
    while ((w + 1) * (w + 1) <= rest) ++w;
    return int64_t(w);
  };
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const uint32_t largest = 3u * 32767u * 32767u;
  std::uniform_int_distribution<uint32_t> any_r2(1, largest);
  std::uniform_int_distribution<int> offset(0, 32767), small(0, 64);
  int64_t checked = 0, mismatches = 0;
  auto check = [&](uint32_t r2, int a, int b) {
    for (int axis = 0; axis < 3; ++axis) {
      const int64_t aa = axis == 0 ? a : 0, bb = axis == 2 ? 0 : b;
      mismatches += detail::chord_half_width(metric, r2, axis, a, b) != reference(r2, aa, bb);
      ++checked;
    }
  };
  for (int i = 0; i < 200000; ++i) check(any_r2(rng), offset(rng) % 4 == 0 ? small(rng) : offset(rng), small(rng));
  // Around perfect squares w², w² + base ± 1, for w across the range (the float root's edge).
  for (uint32_t w = 1; w < 65536; w += 7)
    for (int a : {0, 3, 100})
      for (int delta : {-1, 0, 1, 2}) {
        const uint64_t r2 = uint64_t(w) * w + uint64_t(a * a) + delta;
        if (r2 >= 1 && r2 <= largest) check(uint32_t(r2), a, 0);
      }
  CAPTURE(checked);
  CHECK(mismatches == 0);
}

// The CUDA map paints over its own squared distances without clearing them first when
// map_overwrites_distances holds: then every squared distance up to max_r2, read as an int,
// lies below the float bits (read as an int, as the painter's atomic maximum reads them) of
// every radius a ball can have. Checked on random draws against that statement, and at the
// edges.
TEST_CASE("row_cuts.map_paints_over_distances") {
  auto bits_of = [](float f) {
    int32_t b = 0;
    std::memcpy(&b, &f, sizeof(b));
    return b;
  };
  detail::VoxelMetric unit;
  CHECK(detail::map_overwrites_distances(unit, 3u * 999u * 999u));  // 1000³, open
  CHECK(detail::map_overwrites_distances(unit, 1065353215u));       // 1.0f is 0x3F800000
  CHECK_FALSE(detail::map_overwrites_distances(unit, 1065353216u));
  CHECK_FALSE(detail::map_overwrites_distances(unit, 0xFFFFFFFEu));
  detail::VoxelMetric tiny;
  tiny.spacing = 1e-45;  // rounds to the smallest float, whose bits are 1
  CHECK(detail::map_overwrites_distances(tiny, 0u));
  CHECK_FALSE(detail::map_overwrites_distances(tiny, 1u));
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  int held = 0;
  for (int draw = 0; draw < 20000; ++draw) {
    detail::VoxelMetric m;
    m.spacing = std::pow(10.0, -40.0 + 42.0 * std::uniform_real_distribution<double>(0, 1)(rng));
    const uint32_t max_r2 = uint32_t(rng() >> (33 + rng() % 31));
    if (!detail::map_overwrites_distances(m, max_r2)) continue;
    ++held;
    const uint32_t d2 = max_r2 == 0 ? 0 : uint32_t(rng() % (uint64_t(max_r2) + 1));
    const uint32_t r2 = 1 + (max_r2 <= 1 ? 0 : uint32_t(rng() % max_r2));
    CAPTURE(m.spacing);
    CAPTURE(max_r2);
    CAPTURE(d2);
    CAPTURE(r2);
    REQUIRE(int32_t(d2) >= 0);
    REQUIRE(int32_t(d2) < bits_of(m.radius(r2)));
  }
  CHECK(held > 1000);  // the draws exercised the statement
}

// The chord width's correction (detail::corrected_root) for any estimate within the bound the
// device's x·rsqrt(x) keeps (0.02 of √x below 2^32; the PTX guide's rsqrt.approx.f32 bound is a
// relative 2^-22.9): here every estimate up to 0.45 away — the float next to √rest ± 0.45 —
// on both sides of every perfect square across the range and on random values. It fails if
// either correction is removed.
TEST_CASE("row_cuts.root_from_an_estimate") {
  auto exact = [](uint64_t rest) {
    uint64_t w = uint64_t(std::sqrt(double(rest)));
    while (w * w > rest) --w;
    while ((w + 1) * (w + 1) <= rest) ++w;
    return uint32_t(w);
  };
  int64_t checked = 0, wrong = 0;
  auto check = [&](uint64_t rest) {
    const double root = std::sqrt(double(rest));
    for (double off : {-0.45, -0.02, -1e-6, 0.0, 1e-6, 0.02, 0.45}) {
      const float estimate = float(root + off);
      wrong += detail::corrected_root(uint32_t(rest), estimate) != exact(rest);
      ++checked;
    }
  };
  for (uint64_t w = 0; w < 65536; ++w)
    for (int delta : {-1, 0, 1})
      if (int64_t(w * w) + delta >= 0 && w * w + delta <= 0xFFFFFFFFull) check(w * w + delta);
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 200000; ++i) check(rng() >> 32);
  CAPTURE(checked);
  CHECK(wrong == 0);
}
