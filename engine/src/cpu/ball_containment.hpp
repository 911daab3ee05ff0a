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
// Norms are formed by detail::squared_norm, as everywhere, so the test decides exactly what
// the ball-membership predicate decides.
#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "../common/metric.hpp"

namespace poreforge::cpu {

template <class M>
class BallContainment {
 public:
  using V = typename M::value_type;

  // Tables cover every squared radius up to `max_r2`, or as far as `max_points` octant points
  // reach; beyond that, contains() falls back to the conservative continuous test.
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
      for (int64_t z = 0; !overflow && detail::squared_norm(m, 0, 0, z) <= limit; ++z)
        for (int64_t y = 0; !overflow && detail::squared_norm(m, 0, y, z) <= limit; ++y)
          for (int64_t x = 0; detail::squared_norm(m, x, y, z) <= limit; ++x) {
            Point p;
            p.norm = detail::squared_norm(m, x, y, z);
            for (int k = 1; k < 8; ++k)
              p.reach[k - 1] = detail::squared_norm(m, x + (k & 1), y + ((k >> 1) & 1), z + ((k >> 2) & 1));
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

  // The containment thresholds of one ball (squared radius r2) against its 26 neighbours.
  class Probe {
   public:
    // True when the ball is inside the ball (squared radius big2) of the neighbour at offset
    // (dx, dy, dz) ∈ {−1, 0, 1}³.
    bool inside(V big2, int dx, int dy, int dz) const {
      if (!(big2 > m_r2)) return false;
      if (!m_reach) return M::ball_inside(m_r2, big2, detail::squared_norm(*m_metric, dx, dy, dz));
      return big2 > (*m_reach)[((dx != 0) | ((dy != 0) << 1) | ((dz != 0) << 2)) - 1];
    }

   private:
    friend class BallContainment;
    V m_r2{};
    const std::array<V, 7>* m_reach = nullptr;  // null beyond the tables
    const M* m_metric = nullptr;
  };

  Probe probe(V r2) const {
    Probe p;
    p.m_r2 = r2;
    p.m_metric = &m_metric;
    if (r2 <= m_limit) {  // beyond the tables continuous containment (which implies lattice) is used
      if constexpr (std::is_integral_v<V>) {
        p.m_reach = &m_reach[m_shell_below[r2]];
      } else {
        // The last shell strictly below r2 (shell 0, the centre itself, always is).
        const auto j = std::lower_bound(m_shell.begin(), m_shell.end(), r2) - m_shell.begin() - 1;
        p.m_reach = &m_reach[static_cast<std::size_t>(j)];
      }
    }
    return p;
  }

 private:
  M m_metric;
  V m_limit{};
  std::vector<V> m_shell;
  std::vector<std::array<V, 7>> m_reach;
  std::vector<uint32_t> m_shell_below;  // integer metrics: r2 → the last shell below it
};

}  // namespace poreforge::cpu
