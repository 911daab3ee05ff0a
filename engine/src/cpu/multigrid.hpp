#pragma once
// An aggregation multigrid preconditioner for the formation factor's conjugate gradients on the
// CPU. Jacobi-preconditioned CG needs about 15 n iterations on an n³ pore space (2,000 at
// 128³), each a sweep over every unknown: most of `compare`'s time. One V-cycle of this
// hierarchy costs a few sweeps and takes the count to tens. No packaged library does it
// (Debian has no AMG package; Eigen's preconditioners are diagonal and incomplete
// factorisations, serial), and the grid gives the hierarchy for free: the unknowns of 2×2×2
// blocks of cells form one coarse unknown, whose operator P^T A P is again a 7-point
// operator on the coarse grid (a face between two blocks carries the sum of the conductances
// of the fine faces between them), symmetric positive definite as A is.
#include <array>
#include <cstdint>
#include <vector>

namespace poreforge::cpu {

/// A symmetric positive definite operator on some cells of a grid:
/// (A x)_k = diag_k x_k − Σ_e w[6k + e] · x[nb[6k + e]], faces e = x−, x+, y−, y+, z−, z+.
struct CellOperator {
  std::array<int64_t, 3> extent{0, 0, 0};
  std::vector<int64_t> cell;  ///< unknown k's cell, x + nx (y + ny z)
  std::vector<int32_t> nb;    ///< the unknown across each face, −1 where none
  std::vector<double> w;      ///< each face's conductance (0 where none)
  std::vector<double> diag;
  int64_t size() const { return int64_t(diag.size()); }
  void apply(const double* x, double* y) const;
};

/// The V-cycle's constants, shared by the CUDA backend's cycle (cuda/transport.cu).
namespace multigrid {
/// Damped Jacobi sweeps before and after the coarse correction (the first sweep before it
/// starts from zero), and their damping (below 1, so that each sweep converges on its own
/// and the cycle stays positive definite).
inline constexpr int sweeps = 2;
inline constexpr double damping = 0.9;
/// Unsmoothed aggregation's coarse correction is too small on smooth errors: scaled up, as
/// Braess and Notay scale it (any scale keeps the cycle positive definite; past about 2 it
/// over-corrects and the conditioning worsens). Measured on a 128³ sandstone: 80 iterations
/// unscaled, 38 at 1.8 (one sweep: 69; three: no faster).
inline constexpr double correction = 1.8;
/// The CPU solves the coarsest level by a dense Cholesky factor of at most this many unknowns.
inline constexpr int64_t coarsest_unknowns = 800;
}  // namespace multigrid

/// z = M⁻¹ r by one V-cycle from zero: damped Jacobi pre- and post-smoothing (the same, so M
/// is symmetric and CG may use it), the coarse correction scaled up as unsmoothed aggregation
/// needs, a dense Cholesky solve on the coarsest level (at most `coarsest_unknowns`).
class Multigrid {
 public:
  explicit Multigrid(CellOperator fine, int64_t coarsest_unknowns = multigrid::coarsest_unknowns);
  void apply(const double* r, double* z) const;
  const CellOperator& fine() const { return m_levels.front(); }
  int levels() const { return int(m_levels.size()); }
  const CellOperator& level(int l) const { return m_levels[std::size_t(l)]; }
  /// Level l's unknown → the unknown of its block on level l + 1 (l < levels() − 1).
  const std::vector<int32_t>& parent(int l) const { return m_parent[std::size_t(l)]; }
  /// Level l + 1's unknown c → its unknowns on level l: children(l)[first(l)[c] … first(l)[c + 1]).
  const std::vector<int32_t>& first(int l) const { return m_first[std::size_t(l)]; }
  const std::vector<int32_t>& children(int l) const { return m_children[std::size_t(l)]; }
  /// The coarsest operator's inverse, dense (symmetric, so row- and column-major alike).
  std::vector<double> coarsest_inverse() const;

 private:
  void cycle(int level, const double* b, double* x) const;

  std::vector<CellOperator> m_levels;
  std::vector<std::vector<int32_t>> m_parent;  ///< level l's unknown → its unknown on level l + 1
  /// Level l + 1's unknown c → its unknowns on level l: m_children[l][m_first[l][c] …
  /// m_first[l][c + 1]), so that the restriction runs in parallel over the coarse unknowns.
  std::vector<std::vector<int32_t>> m_first, m_children;
  std::vector<double> m_coarsest;              ///< the coarsest operator's Cholesky factor, dense, column-major
  /// Per-level work: apply() is not re-entrant (one solve, one thread calling it).
  mutable std::vector<std::vector<double>> m_r, m_b, m_x;
};

}  // namespace poreforge::cpu
