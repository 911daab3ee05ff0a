// The CPU evaluator. On a volume large beside its structure it keeps the exact local-thickness
// map and re-evaluates only around the voxels that changed (docs/local-evaluation.md); where
// those boxes would not be small beside the volume, it evaluates from scratch.
//
// Why the region is exact. The thickness at y is the largest d(c) over the voxels c with
// |y − c| < d(c); pruning ball centres (a ball inside a neighbour's) does not change it. Let
// `grown` bound how much a distance can grow: for each voxel that joined the phase, its own new
// distance (a voxel whose nearest background was that one is now at most that much farther).
// The kept map bounds every old distance (a voxel's own ball is among those its thickness is
// the largest of). Around a changed voxel p:
// - distances change only at voxels x with d(x) ≥ |x − p| (a voxel whose nearest background
//   left, or that a new background voxel is nearer to); d1 bounds |x − p| for them;
// - the balls of those voxels, before and after, reach less than rho (their largest thickness
//   plus `grown`), so the thickness changes only within R2 = d1 + rho − 1 (Chebyshev);
// - the balls reaching R2 have distances at most sigma (the largest thickness, plus `grown`,
//   where such a ball's centre can lie), so their centres lie within sigma − 1 of R2, with their
//   nearest background within sigma of them.
// So the engine run on E = R2 + 2 sigma − 2, with a background layer beyond E's cut faces (and
// beyond the volume's faces where the boundary is a wall; wrapped where periodic), gives the
// exact thickness in R2: the layer is no nearer than sigma to those centres, and it only ever
// shortens the distances of the others, whose balls then cannot reach R2.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "../common/messages.hpp"
#include "ball_centres.hpp"
#include "cpu_backend.hpp"
#include "poreforge/error.hpp"
#include "poreforge/evaluator.hpp"

namespace poreforge::cpu {
namespace {

// Boxes of fewer voxels than this run on the calling thread (reevaluate); larger ones on every
// core. 2^17: about 10 ms of engine work on one core, against the ~1 ms a dozen parallel
// regions cost to start and end.
constexpr int64_t kOneThreadBoxVoxels = int64_t(1) << 17;

// The calling thread's OpenMP team size set to 1 while it lives, when `voxels` < `limit`.
class OneThreadBelow {
 public:
  OneThreadBelow(int64_t voxels, int64_t limit) : m_before(voxels < limit ? omp_get_max_threads() : 0) {
    if (m_before) omp_set_num_threads(1);
  }
  ~OneThreadBelow() {
    if (m_before) omp_set_num_threads(m_before);
  }
  OneThreadBelow(const OneThreadBelow&) = delete;
  OneThreadBelow& operator=(const OneThreadBelow&) = delete;

 private:
  int m_before;
};

class CpuPsdEvaluator final : public PsdEvaluator {
 public:
  // Local re-evaluation needs a voxel metric (isotropic spacing); whether it pays is decided
  // at the first evaluation, which computes the map anyway.
  CpuPsdEvaluator(const Mask& phase, Boundary boundary, const Bins& bins)
      : m_phase(phase), m_boundary(boundary), m_bins(bins), m_local(phase.spacing().isotropic()) {}

  void set(int64_t index, uint8_t value) override {
    m_phase[index] = value;
    if (m_local && !m_stale && m_touched.size() < kMostTouched) m_touched.push_back(index);
    else if (m_local) m_stale = true;  // more changes than pay locally: the next evaluation starts afresh
  }

  PsdCounts counts() override {
    if (!m_local) return psd_counts(m_phase, m_boundary, m_bins);
    if (m_stale) {
      // Many voxels set since the last evaluation (a start's candidate), or that one threw: the
      // plain path, the map dropped; the next evaluation after a few changes makes it anew.
      m_evaluated = Mask();
      m_touched.clear();
      const PsdCounts c = psd_counts(m_phase, m_boundary, m_bins);
      m_stale = false;
      return c;
    }
    m_stale = true;  // until this evaluation completes: one that throws leaves the next to start afresh
    std::vector<int64_t> changed;
    const bool afresh = m_evaluated.voxels() == 0;
    if (!afresh) collect_changes(changed);
    if (afresh || changed.size() > kMostChanges || !update(changed)) {
      refresh();
      if (!pays()) {  // the structure is too large beside the volume: from scratch from now on
        const PsdCounts c = tally();
        m_local = false;
        clear_tallies();
        m_thickness = Volume<float>();
        m_evaluated = Mask();
        m_touched.clear();
        m_stale = false;
        return c;
      }
    }
    m_touched.clear();
    m_stale = false;
    return tally();
  }

  Backend backend() const override { return Backend::cpu; }

  EvaluationTally tally_of_evaluations() const { return {m_local_count, m_full}; }

 private:
  // Changed voxels beyond which an evaluation starts afresh (the annealer changes two), and
  // voxels set between evaluations beyond which they are not even looked at (it sets four: a
  // swap undone and the next swap).
  static constexpr std::size_t kMostChanges = 8, kMostTouched = 64;

  struct Axis {
    int64_t start = 0, length = 1, pad_low = 0, pad_high = 0;  // E along one axis (start unwrapped)
    int64_t r_start = 0, r_length = 1;                        // R2 along it
  };

  // The voxels whose value differs from the evaluated mask (a voxel set and set back does not).
  void collect_changes(std::vector<int64_t>& changed) const {
    for (int64_t p : m_touched)
      if (m_phase[std::size_t(p)] != m_evaluated[std::size_t(p)] &&
          std::find(changed.begin(), changed.end(), p) == changed.end())
        changed.push_back(p);
  }

  // The whole map afresh.
  void refresh() {
    ++m_full;
    m_touched.clear();
    clear_tallies();
    m_thickness = local_thickness(m_phase, m_boundary);
    m_evaluated = m_phase;
    for (int64_t i = 0; i < m_phase.voxels(); ++i) add(m_thickness[std::size_t(i)], +1);
  }

  void clear_tallies() {
    m_hits.assign(m_bins.edges().size() + 1, 0);
    m_by_voxels.clear();
    m_above = m_phase_voxels = 0;
  }

  // Counts a thickness value in (+1) or out (−1) of the tallies; 0 (outside the phase) is not
  // counted. hits[k]: values with exactly k edges at or below them (psd_from_thickness's
  // rule); by_voxels[c]: values whose ceiling in voxels is c (the largest distance).
  void add(float value, int64_t sign) {
    if (value <= 0) return;
    const auto& e = m_bins.edges();
    const double v = value;
    m_hits[std::size_t(std::upper_bound(e.begin(), e.end(), v) - e.begin())] += sign;
    if (v > e.back()) m_above += sign;
    const std::size_t c = std::size_t(ceil_voxels(value));
    if (c >= m_by_voxels.size()) m_by_voxels.resize(c + 1, 0);
    m_by_voxels[c] += sign;
    m_phase_voxels += sign;
  }

  // The largest distance now, in voxels, rounded up. The map holds float32 radii in physical
  // units: the relative margin absorbs their rounding (a distance is the root of an integer,
  // never within 1e-6 of an integer above it below 700 voxels).
  int64_t largest_distance() const {
    for (std::size_t c = m_by_voxels.size(); c-- > 0;)
      if (m_by_voxels[c] > 0) return int64_t(c);
    return 0;
  }

  // The kept map's thickness at `x` in voxels, rounded up: a bound on its distance (a voxel's
  // own ball is among those the thickness is the largest of).
  int64_t ceil_voxels(int64_t x) const { return ceil_voxels(m_thickness[std::size_t(x)]); }
  int64_t ceil_voxels(float value) const {
    return int64_t(std::ceil(double(value) / m_phase.spacing().x * (1.0 - 1e-6)));
  }

  // The largest of f(voxel, offset) over the Chebyshev box of half-width h around c (wrapped
  // where periodic, clipped otherwise).
  template <class F>
  int64_t box_max(const int64_t c[3], int64_t h, F&& f) const {
    const Shape& s = m_phase.shape();
    int64_t lo[3], hi[3];
    for (int a = 0; a < 3; ++a) {
      const int64_t n = s.extent(a), r = n > 1 ? h : 0;
      lo[a] = m_boundary == Boundary::periodic ? c[a] - std::min(r, (n - 1) / 2) : std::max<int64_t>(c[a] - r, 0);
      hi[a] = m_boundary == Boundary::periodic ? c[a] + std::min(r, n / 2) : std::min(c[a] + r, n - 1);
    }
    int64_t best = 0;
    for (int64_t z = lo[2]; z <= hi[2]; ++z)
      for (int64_t y = lo[1]; y <= hi[1]; ++y)
        for (int64_t x = lo[0]; x <= hi[0]; ++x) {
          const int64_t i = (wrap(z, s.nz) * s.ny + wrap(y, s.ny)) * s.nx + wrap(x, s.nx);
          best = std::max(best, f(i, (x - c[0]) * (x - c[0]) + (y - c[1]) * (y - c[1]) + (z - c[2]) * (z - c[2])));
        }
    return best;
  }

  // R2 and E around a changed voxel p from the kept map rather than the volume's largest
  // distance d: distances change only at voxels x with d(x) ≥ |x − p| (the farthest at d1);
  // their balls reach less than rho, the most their distances can be after the change (at most
  // `grown` more than the map says); the balls reaching R2 have distances at most sigma, the
  // most in the region any ball reaching R2 can come from (d + grown of it).
  std::pair<int64_t, int64_t> local_half_widths(int64_t p, int64_t d, int64_t grown) const {
    const Shape& s = m_phase.shape();
    const int64_t c[3] = {p % s.nx, (p / s.nx) % s.ny, p / (s.nx * s.ny)};
    const int64_t d1 = box_max(c, d, [&](int64_t i, int64_t r2) {
      const int64_t t = ceil_voxels(i);
      return t * t >= r2 ? int64_t(std::ceil(std::sqrt(double(r2)))) : int64_t(0);
    });
    const int64_t rho = box_max(c, d1, [&](int64_t i, int64_t) { return ceil_voxels(i); }) + grown;
    const int64_t r2 = std::max<int64_t>(d1 + rho - 1, 0);
    const int64_t sigma = box_max(c, r2 + d + grown, [&](int64_t i, int64_t) { return ceil_voxels(i); }) + grown;
    return {r2, r2 + std::max<int64_t>(2 * sigma - 2, 0)};
  }

  // Whether boxes around changed voxels are small beside the volume: over a sample of phase
  // voxels on the interface (where swaps fall), one voxel's box takes a fifth of the volume
  // at most on average (larger ones, two to a swap with their bookkeeping, measured no faster
  // than one whole evaluation), a box that would wrap onto itself along a periodic axis
  // counting as the whole volume.
  bool pays() const {
    const Shape& s = m_phase.shape();
    const int64_t d = largest_distance(), n = m_phase.voxels();
    const int64_t step = std::max<int64_t>(1, n / 4096);
    double total = 0;
    int samples = 0;
    for (int64_t i = 0; i < n && samples < 16; i += step) {
      if (!m_phase[std::size_t(i)] || ceil_voxels(i) > 1) continue;  // interface voxels only
      const auto [r2, half] = local_half_widths(i, d, 1);
      double f = 1;
      for (int a = 0; a < 3; ++a) {
        const int64_t e = s.extent(a);
        if (e == 1) continue;
        if (m_boundary == Boundary::periodic && 2 * half + 1 >= e) f = 1e9;
        f *= std::min(1.0, double(2 * half + 1) / double(e));
      }
      total += std::min(f, 1.0);
      ++samples;
    }
    return samples > 0 && total / samples <= 0.2;
  }

  // The distance (voxels) from `p` to the nearest background of the current mask, searched in
  // growing cube shells (only the shell's surface: O(r²) a shell); -1 when none lies within
  // `limit`.
  double nearest_background(int64_t p, int64_t limit) const {
    const Shape& s = m_phase.shape();
    const int64_t c[3] = {p % s.nx, (p / s.nx) % s.ny, p / (s.nx * s.ny)};
    double best = -1;
    if (m_boundary == Boundary::wall)
      for (int a = 0; a < 3; ++a) {
        const int64_t n = s.extent(a);
        if (n == 1) continue;
        const double w = double(std::min(c[a] + 1, n - c[a]));
        if (best < 0 || w < best) best = w;
      }
    for (int64_t r = 1; r <= limit; ++r) {
      if (best >= 0 && double(r) >= best) break;
      for (int64_t dz = -r; dz <= r; ++dz)
        for (int64_t dy = -r; dy <= r; ++dy) {
          // On a face of the shell along z or y every x belongs to it; inside, only x = ±r.
          const bool face = std::abs(dz) == r || std::abs(dy) == r;
          const int64_t dx_step = face ? 1 : 2 * r;
          for (int64_t dx = -r; dx <= r; dx += dx_step) {
            int64_t q[3] = {c[0] + dx, c[1] + dy, c[2] + dz};
            bool inside = true;
            for (int a = 0; a < 3 && inside; ++a) {
              const int64_t n = s.extent(a);
              if (q[a] >= 0 && q[a] < n) continue;
              if (m_boundary == Boundary::periodic && n > 1) q[a] = wrap(q[a], n);
              else inside = false;
            }
            if (!inside || m_phase[(q[2] * s.ny + q[1]) * s.nx + q[0]]) continue;
            const double d = std::sqrt(double(dx * dx + dy * dy + dz * dz));
            if (best < 0 || d < best) best = d;
          }
        }
    }
    return best;
  }

  // Re-evaluates around each changed voxel; false when a box would wrap onto itself along a
  // periodic axis, the boxes together hold the volume or more, or a voxel that joined the
  // phase has no background to measure from, so the caller evaluates from scratch.
  bool update(const std::vector<int64_t>& changed) {
    if (changed.empty()) return true;
    const int64_t d_old = largest_distance();
    int64_t d_new = d_old;
    const Shape& s = m_phase.shape();
    const int64_t extent = std::max({s.nx, s.ny, s.nz});
    for (int64_t p : changed)
      if (m_phase[p]) {  // joined the phase: distances near it may grow by its own distance
        const double d = nearest_background(p, extent);
        if (d < 0) return false;
        d_new = std::max(d_new, d_old + int64_t(std::ceil(d)));
      }
    std::vector<std::array<Axis, 3>> boxes;
    for (int64_t p : changed) {
      const auto [r2, half] = local_half_widths(p, d_old, d_new - d_old);
      const int64_t c[3] = {p % s.nx, (p / s.nx) % s.ny, p / (s.nx * s.ny)};
      std::array<Axis, 3> box;
      for (int a = 0; a < 3; ++a) {
        const int64_t n = s.extent(a);
        Axis& ax = box[std::size_t(a)];
        if (n == 1) continue;  // a flat axis: nothing beyond it, nothing to pad
        if (m_boundary == Boundary::periodic) {
          if (2 * half + 1 >= n) return false;  // the box would wrap onto itself
          ax = {c[a] - half, 2 * half + 1, 1, 1, c[a] - r2, 2 * r2 + 1};
        } else {
          const int64_t lo = c[a] - half, hi = c[a] + half;
          ax.start = std::max<int64_t>(lo, 0);
          ax.length = std::min(hi, n - 1) - ax.start + 1;
          ax.pad_low = lo > 0 || m_boundary == Boundary::wall ? 1 : 0;
          ax.pad_high = hi < n - 1 || m_boundary == Boundary::wall ? 1 : 0;
          ax.r_start = std::max<int64_t>(c[a] - r2, 0);
          ax.r_length = std::min(c[a] + r2, n - 1) - ax.r_start + 1;
        }
      }
      boxes.push_back(box);
    }
    // Boxes that together hold the volume or more cost more than the whole map afresh.
    double voxels = 0;
    for (const auto& box : boxes) {
      double v = 1;
      for (const Axis& ax : box) v *= double(ax.length + ax.pad_low + ax.pad_high);
      voxels += v;
    }
    if (voxels >= double(m_phase.voxels())) return false;
    for (const auto& box : boxes) reevaluate(box);
    for (int64_t p : changed) m_evaluated[p] = m_phase[p];
    ++m_local_count;
    return true;
  }

  // The engine on one box E (padded, open beyond), its thickness copied into R2.
  void reevaluate(const std::array<Axis, 3>& box) {
    const Shape& s = m_phase.shape();
    const Shape e{box[0].length + box[0].pad_low + box[0].pad_high, box[1].length + box[1].pad_low + box[1].pad_high,
                  box[2].length + box[2].pad_low + box[2].pad_high};
    auto volume_index = [&](int64_t x, int64_t y, int64_t z) {  // unwrapped coordinates
      const int64_t q[3] = {x, y, z};
      int64_t v[3];
      for (int a = 0; a < 3; ++a) v[a] = s.extent(a) > 1 ? wrap(q[a], s.extent(a)) : 0;
      return (v[2] * s.ny + v[1]) * s.nx + v[0];
    };
    Mask region(e, m_phase.spacing());  // the padding stays 0: background
    int64_t phase = 0;
    for (int64_t z = 0; z < box[2].length; ++z)
      for (int64_t y = 0; y < box[1].length; ++y)
        for (int64_t x = 0; x < box[0].length; ++x) {
          const uint8_t v = m_phase[volume_index(box[0].start + x, box[1].start + y, box[2].start + z)];
          region(x + box[0].pad_low, y + box[1].pad_low, z + box[2].pad_low) = v;
          phase += v;
        }
    Volume<float> map;
    if (phase > 0) {
      // A small box on this thread alone: the engine's parallel regions would each cost the
      // wake-up of the other threads (tens of µs with OMP_WAIT_POLICY=passive), more than their
      // share of a box of a few thousand voxels (white noise at 64³ on 2 cores: 460 evaluations/s
      // with them, 6,330 without).
      const OneThreadBelow one(e.voxels(), kOneThreadBoxVoxels);
      map = local_thickness(region, Boundary::open);
    }
    for (int64_t z = 0; z < box[2].r_length; ++z)
      for (int64_t y = 0; y < box[1].r_length; ++y)
        for (int64_t x = 0; x < box[0].r_length; ++x) {
          const int64_t ux = box[0].r_start + x, uy = box[1].r_start + y, uz = box[2].r_start + z;
          const int64_t i = volume_index(ux, uy, uz);
          const float now = phase > 0 ? map(ux - box[0].start + box[0].pad_low, uy - box[1].start + box[1].pad_low,
                                            uz - box[2].start + box[2].pad_low)
                                      : 0.0f;
          // A phase voxel's thickness is positive, any other's 0: the map says what is counted.
          const float before = m_thickness[i];
          if (now == before) continue;
          add(before, -1);
          add(now, +1);
          m_thickness[i] = now;
        }
  }

  // The PSD counts of the kept map, as psd_from_thickness counts a map.
  PsdCounts tally() const {
    if (m_phase_voxels == 0) throw InputError(detail::empty_phase_message());
    PsdCounts c;
    c.phase_voxels = m_phase_voxels;
    c.above = m_above;
    c.at_least.assign(m_bins.edges().size(), 0);
    int64_t suffix = 0;
    for (std::size_t k = m_hits.size() - 1; k >= 1; --k) {
      suffix += m_hits[k];
      c.at_least[k - 1] = suffix;
    }
    return c;
  }

  Mask m_phase;      // as set() leaves it
  Mask m_evaluated;  // the mask m_thickness is of (empty before the first evaluation)
  Boundary m_boundary;
  Bins m_bins;
  bool m_local;        // re-evaluates locally (until it stops paying)
  bool m_stale = false;  // the kept map is not to be trusted: the next evaluation starts afresh
  Volume<float> m_thickness;
  std::vector<int64_t> m_hits, m_by_voxels;  // the map's tallies (add())
  int64_t m_above = 0, m_phase_voxels = 0;
  std::vector<int64_t> m_touched;  // voxels set() changed since the last evaluation
  int64_t m_full = 0, m_local_count = 0;
};

}  // namespace

EvaluationTally evaluation_tally(const PsdEvaluator& evaluator) {
  const auto* cpu = dynamic_cast<const CpuPsdEvaluator*>(&evaluator);
  return cpu ? cpu->tally_of_evaluations() : EvaluationTally{};
}

std::unique_ptr<PsdEvaluator> make_psd_evaluator(const Mask& phase, Boundary boundary, const Bins& bins) {
  return std::make_unique<CpuPsdEvaluator>(phase, boundary, bins);
}

}  // namespace poreforge::cpu
