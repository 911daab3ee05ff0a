#pragma once
// Squared-distance arithmetic shared by every backend and by the brute-force references.
//
// Two metrics with one interface:
//  - VoxelMetric: isotropic spacing; squared distances are exact integers in voxel units and
//    physical values only appear at the last step (radius = s·√d²).
//  - PhysicalMetric: anisotropic spacing; squared distances in physical units as doubles.
//
// Every squared distance is formed the same way, ((x term + y term) + z term) with a term
// (d·s)², so the distance transform (which adds one axis per pass, x then y then z) and any
// ball-membership test produce bit-identical values for the same offset: `|x−c|² < dt(c)²`
// is then decided the same way everywhere, ties included (mirror offsets tie exactly).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "poreforge/host_device.hpp"

namespace poreforge::detail {

struct VoxelMetric {
  using value_type = uint32_t;
  static constexpr value_type infinity = 0xFFFFFFFFu;

  double spacing = 1.0;  // the isotropic spacing, used only by radius()

  PF_HD value_type term(int64_t d, int /*axis*/) const { return static_cast<value_type>(d * d); }
  PF_HD static value_type add(value_type a, value_type b) { return a + b; }
  PF_HD double weight(int /*axis*/) const { return 1.0; }  // s² of the axis, in the metric's units
  PF_HD static double to_double(value_type v) { return static_cast<double>(v); }
  // Radius in physical units, as stored (float32).
  PF_HD float radius(value_type d2) const {
    return static_cast<float>(spacing * std::sqrt(static_cast<double>(d2)));
  }
  // Is the ball (centre c, squared radius r2) inside the ball (c', big2) when |c − c'|² = d2?
  // True iff √big2 ≥ √r2 + √d2, decided exactly: big2 − r2 − d2 ≥ 0 and its square ≥ 4·r2·d2.
  PF_HD static bool ball_inside(value_type r2, value_type big2, value_type d2) {
    const int64_t a = static_cast<int64_t>(big2) - static_cast<int64_t>(r2) - static_cast<int64_t>(d2);
    if (a < 0) return false;
    const uint64_t ua = static_cast<uint64_t>(a);  // < 2^32, so ua² fits in 64 bits
    return ua * ua >= 4ull * r2 * d2;
  }
};

// Whether a thickness map may be painted straight over the squared distances it is computed
// from, the two sharing their 4-byte words (the CUDA map, isotropic), with no clearing pass:
// the painter raises each voxel by an atomic maximum on the float's bits read as an int, every
// phase voxel is painted, and background voxels already hold 0. It holds when the smallest
// radius a ball can have, radius(1), has float bits above every squared distance up to
// max_r2 — for unit spacing, any max_r2 below 1.065·10⁹ (distances below 32,600 voxels).
inline bool map_overwrites_distances(const VoxelMetric& m, VoxelMetric::value_type max_r2) {
  const float smallest = m.radius(1);
  uint32_t bits = 0;
  static_assert(sizeof(bits) == sizeof(smallest));
  std::memcpy(&bits, &smallest, sizeof(bits));
  return smallest > 0 && max_r2 < bits;
}

struct PhysicalMetric {
  using value_type = double;
  static constexpr value_type infinity = std::numeric_limits<double>::infinity();

  double sx = 1.0, sy = 1.0, sz = 1.0;

  PF_HD double along(int axis) const { return axis == 0 ? sx : axis == 1 ? sy : sz; }
  PF_HD value_type term(int64_t d, int axis) const {
    const double t = static_cast<double>(d) * along(axis);
    return t * t;
  }
  PF_HD static value_type add(value_type a, value_type b) { return a + b; }
  PF_HD double weight(int axis) const { return along(axis) * along(axis); }
  PF_HD static double to_double(value_type v) { return v; }
  PF_HD float radius(value_type d2) const { return static_cast<float>(std::sqrt(d2)); }
  // Conservative: claims containment only with a margin far above rounding, so a ball that
  // might poke out is kept (keeping a redundant ball costs time, never correctness).
  PF_HD static bool ball_inside(value_type r2, value_type big2, value_type d2) {
    const double slack = std::sqrt(big2) - std::sqrt(r2) - std::sqrt(d2);
    return slack > 1e-9 * (std::sqrt(big2) + 1.0);
  }
};

// |offset|² in the fixed order ((x + y) + z).
template <class M>
PF_HD typename M::value_type squared_norm(const M& m, int64_t dx, int64_t dy, int64_t dz) {
  return M::add(M::add(m.term(dx, 0), m.term(dy, 1)), m.term(dz, 2));
}

// Largest w ≥ 0 with squared_norm(w, dy, dz) < r2 (the half-width of the ball's chord along
// x in row (dy, dz)), or −1 when the row misses the ball. Axis 1 / 2 variants pass the
// offsets of the axes already fixed as zero. The float estimate is corrected with the exact
// predicate, so the answer is the predicate's, not the estimate's.
template <class M>
PF_HD int64_t chord_half_width(const M& m, typename M::value_type r2, int axis, int64_t dy,
                               int64_t dz) {
  auto norm = [&](int64_t w) {
    return axis == 0 ? squared_norm(m, w, dy, dz)
                     : axis == 1 ? squared_norm(m, 0, w, dz) : squared_norm(m, 0, 0, w);
  };
  const auto base = norm(0);
  if (!(base < r2)) return -1;
  const double rest = M::to_double(r2) - M::to_double(base);
  int64_t w = static_cast<int64_t>(std::sqrt(rest / m.weight(axis)));
  while (w > 0 && !(norm(w) < r2)) --w;
  while (norm(w + 1) < r2) ++w;
  return w;
}

// ⌊√rest⌋ from a float estimate of √rest within 0.5 of it: the truncated estimate is then
// off by at most one, corrected each way in 32 bits (w² must fit: w ≤ 65535).
PF_HD uint32_t corrected_root(uint32_t rest, float estimate) {
  uint32_t w = estimate > 0.0f ? static_cast<uint32_t>(estimate) : 0u;
  if (w > 65535u) w = 65535u;  // √rest < 65536
  if (w * w > rest) --w;
  else if (w < 65535u && (w + 1u) * (w + 1u) <= rest) ++w;
  return w;
}

// The same answer for integer squared distances, by an integer square root (a float estimate
// corrected exactly): the CUDA painter runs this per row. All in 32 bits, which hold every
// value here (offsets below 2^15, squared distances below 2^32): 64-bit products and a 64-bit
// conversion made it a sixth of the painter's instructions at 1000³ (docs/performance.md).
// The estimate: on the device x·rsqrt(x) — the hardware's approximate reciprocal
// root (relative error below 2^-22.9, PTX rsqrt.approx.f32) and a product, within 0.02 of √x
// below 2^32 — where a correctly rounded sqrtf is that root refined, a range check and a
// branch to a slow path (nine instructions of the painter's row against two); on the host
// the correctly rounded root (within 0.01).
PF_HD int64_t chord_half_width(const VoxelMetric&, uint32_t r2, int axis, int64_t a, int64_t b) {
  const int ia = int(a), ib = int(b);
  const uint32_t base = axis == 0 ? uint32_t(ia * ia) + uint32_t(ib * ib) : axis == 1 ? uint32_t(ib * ib) : 0u;
  if (base >= r2) return -1;
  const uint32_t rest = r2 - base - 1u;  // w² ≤ rest  ⇔  w² + base < r2
  const float x = static_cast<float>(rest);
#ifdef __CUDA_ARCH__
  const float estimate = rest == 0u ? 0.0f : x * rsqrtf(x);
#else
  const float estimate = std::sqrt(x);
#endif
  return int64_t(corrected_root(rest, estimate));
}

}  // namespace poreforge::detail
