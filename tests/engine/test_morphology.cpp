// Morphology against a brute-force neighbourhood min/max on fresh random inputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>

#include "common/metric.hpp"
#include "poreforge/error.hpp"
#include "poreforge/morphology.hpp"
#include "support/backends.hpp"
#include "support/random.hpp"

using namespace poreforge;

namespace {

// min (erode) or max (dilate) over the element's voxels that lie inside the image.
Mask brute(const Mask& in, const StructuringElement& e, bool erosion) {
  const Shape s = in.shape();
  Mask out(s, in.spacing());
  std::vector<std::array<int64_t, 3>> offsets;
  if (e.kind == StructuringElement::Kind::box) {
    for (int64_t z = -(e.kz / 2); z <= e.kz - 1 - e.kz / 2; ++z)
      for (int64_t y = -(e.ky / 2); y <= e.ky - 1 - e.ky / 2; ++y)
        for (int64_t x = -(e.kx / 2); x <= e.kx - 1 - e.kx / 2; ++x) offsets.push_back({x, y, z});
  } else {
    const detail::PhysicalMetric m{in.spacing().x, in.spacing().y, in.spacing().z};
    const int64_t reach = int64_t(e.radius / std::min({m.sx, m.sy, m.sz})) + 1;
    for (int64_t z = -reach; z <= reach; ++z)
      for (int64_t y = -reach; y <= reach; ++y)
        for (int64_t x = -reach; x <= reach; ++x)
          if (detail::squared_norm(m, x, y, z) <= e.radius * e.radius) offsets.push_back({x, y, z});
  }
  for (int64_t z = 0; z < s.nz; ++z)
    for (int64_t y = 0; y < s.ny; ++y)
      for (int64_t x = 0; x < s.nx; ++x) {
        uint8_t v = erosion ? 1 : 0;
        for (const auto& o : offsets) {
          const int64_t a = x + o[0], b = y + o[1], c = z + o[2];
          if (a < 0 || b < 0 || c < 0 || a >= s.nx || b >= s.ny || c >= s.nz) continue;  // outside: ignored
          v = erosion ? std::min(v, in(a, b, c)) : std::max(v, in(a, b, c));
        }
        out(x, y, z) = v;
      }
  return out;
}

Mask brute_op(const Mask& in, MorphOp op, const StructuringElement& e, int iterations) {
  Mask m = in;
  auto repeat = [&](bool erosion) {
    for (int i = 0; i < iterations; ++i) m = brute(m, e, erosion);
  };
  if (op == MorphOp::erode || op == MorphOp::open) repeat(true);
  if (op != MorphOp::erode) repeat(false);
  if (op == MorphOp::close) repeat(true);
  return m;
}

}  // namespace

PF_BACKEND_TEST("morphology", "box_and_ball_match_brute_force") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  struct Case {
    Shape shape;
    Spacing spacing;
    std::vector<StructuringElement> elements;
  };
  const std::vector<Case> cases = {
      {{31, 17, 1}, {}, {StructuringElement::box(1, 1), StructuringElement::box(2, 2), StructuringElement::box(3, 5),
                         StructuringElement::box(4, 4), StructuringElement::box(7, 7), StructuringElement::ball(1.5),
                         StructuringElement::ball(2.9)}},
      {{5, 4, 1}, {}, {StructuringElement::box(9, 9), StructuringElement::box(6, 2), StructuringElement::ball(4)}},
      {{12, 9, 7}, {}, {StructuringElement::box(3, 3, 3), StructuringElement::box(2, 4, 3), StructuringElement::ball(1),
                        StructuringElement::ball(2.2)}},
      {{10, 8, 6}, {1.0, 0.7, 1.6}, {StructuringElement::ball(1.4), StructuringElement::ball(2.5)}},
      {{3, 2, 2}, {}, {StructuringElement::box(5, 5, 5), StructuringElement::ball(3)}},
      // Rows of several 32-voxel words (the CUDA backend packs 32 voxels per word): windows
      // across word edges, wider than a word, wider than the row; 2D and 3D.
      {{97, 6, 1}, {}, {StructuringElement::box(33, 3), StructuringElement::box(70, 1), StructuringElement::box(250, 2),
                        StructuringElement::box(8, 9), StructuringElement::ball(5.5)}},
      {{64, 5, 4}, {}, {StructuringElement::box(32, 2, 2), StructuringElement::box(65, 1, 5), StructuringElement::ball(2)}},
      {{40, 3, 9}, {0.5, 1.0, 0.8}, {StructuringElement::ball(1.7)}},
  };
  int k = 0;
  for (const Case& c : cases)
    for (const auto& e : c.elements)
      for (MorphOp op : {MorphOp::erode, MorphOp::dilate, MorphOp::open, MorphOp::close})
        for (int iterations : {1, 2}) {
          Mask in = testing::random_volume(c.shape, k % 2, 0.3 + 0.1 * (k % 5), seed + k);
          ++k;
          in.set_spacing(c.spacing);
          CAPTURE(to_string(c.shape));
          CAPTURE(e.to_string());
          CAPTURE(int(op));
          CAPTURE(iterations);
          CHECK(morphology(in, op, e, iterations, B::backend).values() == brute_op(in, op, e, iterations).values());
        }
}

PF_BACKEND_TEST("morphology", "one_kind_and_bad_input") {
  // One kind only: nothing erodes or dilates (outside the image never does).
  const Mask full({6, 5, 1}, {}, 1), empty({6, 5, 1});
  CHECK(erode(full, StructuringElement::ball(2), 1, B::backend).values() == full.values());
  CHECK(dilate(empty, StructuringElement::ball(2), 1, B::backend).values() == empty.values());
  CHECK(erode(full, StructuringElement::box(5, 5), 1, B::backend).values() == full.values());
  CHECK(dilate(empty, StructuringElement::box(5, 5, 3), 2, B::backend).values() == empty.values());
  // Labels other than 0/1 count as set.
  Mask labels({9, 4, 1});
  labels(4, 2, 0) = 7;
  const Mask d = dilate(labels, StructuringElement::box(3, 3), 1, B::backend);
  CHECK(count_phase(d) == 9);
  CHECK(d(3, 1, 0) == 1);
  CHECK_THROWS_AS(erode(Mask({4, 4, 1}), StructuringElement::box(3, 3), 0, B::backend), InputError);
  CHECK_THROWS_AS(erode(Mask({4, 4, 1}), StructuringElement::ball(0), 1, B::backend), InputError);
}

TEST_CASE("morphology.elements_and_errors") {
  CHECK(StructuringElement::parse("box:7x7").kx == 7);
  CHECK(StructuringElement::parse("box:3x3x3").kz == 3);
  CHECK(StructuringElement::parse("ball:2.5").radius == 2.5);
  CHECK(StructuringElement::parse("box:4x2").to_string() == "box:4x2");
  for (const char* bad : {"box:7", "box:0x3", "ball:-1", "ball:x", "disk:3", "box:3x3x3x3", "box:3xq"})
    CHECK_THROWS_AS(StructuringElement::parse(bad), InputError);
  CHECK_THROWS_AS(parse_morph_op("thin"), InputError);
}
