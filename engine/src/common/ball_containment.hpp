#pragma once
// Exact test "is the lattice ball of c inside the lattice ball of its neighbour c'?"
//
// A centre whose ball lies inside a neighbour's ball adds nothing to local thickness (the
// neighbour's ball is at least as large and covers everything it covers), so it need not be
// painted. Comparing continuous balls (√R'² ≥ √R² + |c − c'|) almost never holds on a lattice
// (only along axis-aligned flat walls), so we compare the lattice point sets themselves:
//
//   ball(0, r2) ⊆ ball(δ, big2)  ⇔  big2 > reach_δ(r2) = max { |x − δ|² : |x|² < r2 }.
//
// By the sign symmetry of the metric, reach depends on δ only through which components are
// non-zero (7 classes) and the maximum takes x in the octant opposite δ, so the table is built
// from the points x ≥ 0 sorted by norm: reach over all shells below r2 is a prefix maximum.
// Norms are formed by squared_norm, as everywhere, so the test decides exactly what
// the ball-membership predicate decides.
#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "poreforge/host_device.hpp"
#include "metric.hpp"

namespace poreforge::detail {

// The tables of a BallContainment as plain pointers (host or device memory).
template <class M>
struct ContainmentView {
  using V = typename M::value_type;
  M metric;
  V limit{};                            // tables cover squared radii ≤ limit
  std::size_t shells = 0;
  const V* shell = nullptr;             // sorted shell norms
  const V* reach = nullptr;             // 7 per shell: reach of the 7 neighbour classes
  const uint32_t* shell_below = nullptr;  // integer metrics: r2 → last shell below r2

  // Index of the first of the 7 thresholds for a ball of squared radius r2, or −1 when r2 is
  // beyond the tables (then the continuous test decides).
  PF_HD int64_t thresholds(V r2) const {
    if (r2 > limit) return -1;
    if constexpr (std::is_integral_v<V>) {
      return 7 * static_cast<int64_t>(shell_below[r2]);
    } else {
      std::size_t lo = 0, hi = shells;  // first shell ≥ r2
      while (lo < hi) {
        const std::size_t mid = (lo + hi) / 2;
        if (shell[mid] < r2) lo = mid + 1; else hi = mid;
      }
      return 7 * static_cast<int64_t>(lo - 1);  // the last shell strictly below r2 (shell 0 is 0)
    }
  }

  // Is the ball (r2) inside the ball (big2) of the neighbour at offset (dx, dy, dz) ∈ {−1,0,1}³?
  // `t` is thresholds(r2), computed once per ball.
  PF_HD bool inside(V r2, int64_t t, V big2, int dx, int dy, int dz) const {
    if (!(big2 > r2)) return false;
    if (t < 0) return M::ball_inside(r2, big2, squared_norm(metric, dx, dy, dz));
    return big2 > reach[t + ((dx != 0) | ((dy != 0) << 1) | ((dz != 0) << 2)) - 1];
  }
};

template <class M>
class BallContainment {
 public:
  using V = typename M::value_type;

  // Tables cover every squared radius up to `max_r2`, or as far as `max_points` octant points
  // reach; beyond that, the view falls back to the conservative continuous test.
  BallContainment(const M& m, V max_r2, std::size_t max_points = std::size_t(1) << 22) : m_metric(m) {
    struct Point {
      V norm;
      std::array<V, 7> reach;
    };
    std::vector<Point> points;
    // Enumerate x ≥ 0 with |x|² ≤ max_r2, shrinking the limit if there would be too many.
    V limit = max_r2;
    for (;;) {
      points.clear();
      bool overflow = false;
      for (int64_t z = 0; !overflow && squared_norm(m, 0, 0, z) <= limit; ++z)
        for (int64_t y = 0; !overflow && squared_norm(m, 0, y, z) <= limit; ++y)
          for (int64_t x = 0; squared_norm(m, x, y, z) <= limit; ++x) {
            Point p;
            p.norm = squared_norm(m, x, y, z);
            for (int k = 1; k < 8; ++k)
              p.reach[k - 1] = squared_norm(m, x + (k & 1), y + ((k >> 1) & 1), z + ((k >> 2) & 1));
            points.push_back(p);
            if (points.size() > max_points) {
              overflow = true;
              break;
            }
          }
      if (!overflow) break;
      limit = static_cast<V>(M::to_double(limit) / 2);  // too many: halve the range covered
    }
    m_limit = limit;
    std::sort(points.begin(), points.end(), [](const Point& a, const Point& b) { return a.norm < b.norm; });
    std::array<V, 7> running{};
    for (std::size_t i = 0; i < points.size(); ++i) {
      for (int k = 0; k < 7; ++k) running[k] = std::max(running[k], points[i].reach[k]);
      // One entry per shell, recorded once the shell's last point is in.
      if (i + 1 == points.size() || points[i + 1].norm != points[i].norm) {
        m_shell.push_back(points[i].norm);
        m_reach.push_back(running);
      }
    }
    if constexpr (std::is_integral_v<V>) {  // integer radii: index the shell directly
      m_shell_below.resize(static_cast<std::size_t>(m_limit) + 1);
      std::size_t j = 0;
      for (V r2 = 1; r2 <= m_limit; ++r2) {
        while (j + 1 < m_shell.size() && m_shell[j + 1] < r2) ++j;
        m_shell_below[r2] = static_cast<uint32_t>(j);
      }
    }
  }

  // Plain-array view of the tables, usable on the host or (copied) on the device.
  ContainmentView<M> view() const {
    ContainmentView<M> v;
    v.metric = m_metric;
    v.limit = m_limit;
    v.shells = m_shell.size();
    v.shell = m_shell.data();
    v.reach = m_reach.empty() ? nullptr : m_reach.front().data();
    v.shell_below = m_shell_below.empty() ? nullptr : m_shell_below.data();
    return v;
  }
  const std::vector<V>& shells() const { return m_shell; }
  const std::vector<std::array<V, 7>>& reaches() const { return m_reach; }
  const std::vector<uint32_t>& shell_below() const { return m_shell_below; }

 private:
  M m_metric;
  V m_limit{};
  std::vector<V> m_shell;
  std::vector<std::array<V, 7>> m_reach;
  std::vector<uint32_t> m_shell_below;  // integer metrics: r2 → the last shell below it
};

}  // namespace poreforge::detail
