#include "poreforge/morphology.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <sstream>
#include <vector>

#include "cpu_backend.hpp"
#include "distance.hpp"
#include "poreforge/error.hpp"

namespace poreforge {

StructuringElement StructuringElement::parse(const std::string& text) {
  const auto colon = text.find(':');
  const std::string kind = text.substr(0, colon), rest = colon == std::string::npos ? "" : text.substr(colon + 1);
  auto bad = [&]() -> InputError {
    return InputError("element '" + text + "': expected box:KXxKY, box:KXxKYxKZ or ball:R");
  };
  if (kind == "box") {
    std::vector<int> k;
    std::stringstream ss(rest);
    for (std::string part; std::getline(ss, part, 'x');) {
      try {
        std::size_t used = 0;
        k.push_back(std::stoi(part, &used));
        if (used != part.size()) throw bad();
      } catch (const std::logic_error&) {
        throw bad();
      }
    }
    if (k.size() != 2 && k.size() != 3) throw bad();
    for (int v : k)
      if (v < 1) throw InputError("element '" + text + "': box sizes must be at least 1");
    return box(k[0], k[1], k.size() == 3 ? k[2] : 1);
  }
  if (kind == "ball") {
    try {
      std::size_t used = 0;
      const double r = std::stod(rest, &used);
      if (used != rest.size() || !(r > 0) || !std::isfinite(r)) throw bad();
      return ball(r);
    } catch (const std::logic_error&) {
      throw bad();
    }
  }
  throw bad();
}

std::string StructuringElement::to_string() const {
  if (kind == Kind::ball) {
    std::ostringstream s;
    s << "ball:" << radius;
    return s.str();
  }
  return "box:" + std::to_string(kx) + "x" + std::to_string(ky) + (kz > 1 ? "x" + std::to_string(kz) : "");
}

MorphOp parse_morph_op(const std::string& text) {
  if (text == "erode") return MorphOp::erode;
  if (text == "dilate") return MorphOp::dilate;
  if (text == "open") return MorphOp::open;
  if (text == "close") return MorphOp::close;
  throw InputError("unknown operation '" + text + "' (expected erode, dilate, open or close)");
}

namespace {

// One box pass along `axis`: out(x) = min (erode) or max (dilate) of in over the window
// [x − anchor, x − anchor + k − 1] ∩ [0, n). Binary min/max are "no zero" / "any one" in the
// window, so a running count of ones answers each voxel in O(1) whatever k (the binary case of
// van Herk / Gil–Werman). Along x the count runs within each row; along y and z it runs over
// whole rows or planes at once, a vector of counts slid one row (plane) at a time, so memory
// is read contiguously and the inner loop vectorises.
void box_pass(const Mask& in, Mask& out, int axis, int k, bool erosion) {
  const Shape s = in.shape();
  const int64_t n = s.extent(axis), anchor = k / 2;
  auto window = [&](int64_t p) {  // the window of p, clipped; it always holds p (anchor ≤ k − 1)
    return std::pair<int64_t, int64_t>{std::max<int64_t>(0, p - anchor), std::min<int64_t>(n - 1, p - anchor + k - 1)};
  };
  if (axis == 0) {
    const int64_t rows = s.ny * s.nz;
#pragma omp parallel
    {
      std::vector<int32_t> ones(static_cast<std::size_t>(n + 1));
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        const uint8_t* src = in.data() + r * n;
        uint8_t* dst = out.data() + r * n;
        ones[0] = 0;
        for (int64_t p = 0; p < n; ++p) ones[p + 1] = ones[p] + (src[p] != 0);
        for (int64_t p = 0; p < n; ++p) {
          const auto [lo, hi] = window(p);
          const int32_t count = ones[hi + 1] - ones[lo];
          dst[p] = uint8_t(erosion ? count == hi - lo + 1 : count > 0);
        }
      }
    }
    return;
  }
  // y: blocks of `inner` = nx voxels (a row), `outer` = nz planes; z: inner = a whole plane.
  const int64_t inner = axis == 1 ? s.nx : s.nx * s.ny, outer = axis == 1 ? s.nz : 1;
  const int64_t chunk = 4096;  // columns per task: enough tasks for every thread, even in 2D
  const int64_t chunks = (inner + chunk - 1) / chunk;
#pragma omp parallel
  {
    std::vector<int32_t> count(static_cast<std::size_t>(chunk));
#pragma omp for schedule(static) collapse(2)
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t c = 0; c < chunks; ++c) {
        const int64_t x0 = c * chunk, width = std::min(chunk, inner - x0);
        const uint8_t* src = in.data() + o * n * inner + x0;
        uint8_t* dst = out.data() + o * n * inner + x0;
        std::fill(count.begin(), count.begin() + width, 0);
        int64_t lo = 0, hi = -1;  // rows currently summed
        for (int64_t p = 0; p < n; ++p) {
          const auto [want_lo, want_hi] = window(p);
          while (hi < want_hi) {
            ++hi;
            const uint8_t* row = src + hi * inner;
            for (int64_t x = 0; x < width; ++x) count[x] += row[x] != 0;
          }
          while (lo < want_lo) {
            const uint8_t* row = src + lo * inner;
            for (int64_t x = 0; x < width; ++x) count[x] -= row[x] != 0;
            ++lo;
          }
          const int32_t size = int32_t(hi - lo + 1);
          uint8_t* out_row = dst + p * inner;
          if (erosion)
            for (int64_t x = 0; x < width; ++x) out_row[x] = uint8_t(count[x] == size);
          else
            for (int64_t x = 0; x < width; ++x) out_row[x] = uint8_t(count[x] > 0);
        }
      }
  }
}

Mask box_once(const Mask& image, const StructuringElement& e, bool erosion) {
  Mask a = image, b(image.shape(), image.spacing());
  const int k[3] = {e.kx, e.ky, e.kz};
  for (int axis = 0; axis < 3; ++axis) {
    if (k[axis] == 1) continue;
    box_pass(a, b, axis, k[axis], erosion);
    std::swap(a, b);
  }
  return a;
}

// Ball: dilation = {x : dist(x, set) ≤ r}; erosion = {x : dist(x, complement) > r}, with
// distances measured inside the image only (boundary open). Squared distances are physical
// doubles formed as everywhere ((x + y) + z terms), compared with r², so a voxel exactly at
// distance r is decided the same way by every path and by the brute-force reference.
Mask ball_once(const Mask& image, double radius, bool erosion) {
  const Mask target = erosion ? image : complement(image);  // distance from each of these to the other kind
  const int64_t n = image.voxels(), members = count_phase(target);
  if (members == 0 || members == n) return image;  // one kind only: nothing erodes or dilates
  const auto m = cpu::physical_metric(image.spacing());
  const auto d2 = cpu::squared_distance(target, Boundary::open, m);
  const double r2 = radius * radius;
  Mask out(image.shape(), image.spacing());
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = erosion ? (image[i] && d2[i] > r2) : (image[i] || d2[i] <= r2);
  return out;
}

Mask apply(const Mask& image, const StructuringElement& e, int iterations, bool erosion) {
  Mask m = image;
  for (int i = 0; i < iterations; ++i)
    m = e.kind == StructuringElement::Kind::box ? box_once(m, e, erosion) : ball_once(m, e.radius, erosion);
  return m;
}

}  // namespace

namespace cpu {

Mask morphology(const Mask& image, MorphOp op, const StructuringElement& e, int iterations) {
  switch (op) {
    case MorphOp::erode: return apply(image, e, iterations, true);
    case MorphOp::dilate: return apply(image, e, iterations, false);
    case MorphOp::open: return apply(apply(image, e, iterations, true), e, iterations, false);
    case MorphOp::close: return apply(apply(image, e, iterations, false), e, iterations, true);
  }
  return image;
}

}  // namespace cpu

void validate_element(const StructuringElement& e, int iterations) {
  if (iterations < 1) throw InputError("iterations must be at least 1 (got " + std::to_string(iterations) + ")");
  if (e.kind == StructuringElement::Kind::box && (e.kx < 1 || e.ky < 1 || e.kz < 1))
    throw InputError("box sizes must be at least 1");
  if (e.kind == StructuringElement::Kind::ball && !(e.radius > 0 && std::isfinite(e.radius)))
    throw InputError("ball radius must be positive");
}

void validate_morphology(const Mask& image, const StructuringElement& e, int iterations) {
  validate_shape(image.shape());
  validate_spacing(image.spacing());
  validate_element(e, iterations);
}

}  // namespace poreforge
