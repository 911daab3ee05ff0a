#include "multigrid.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "../common/transport_stencils.hpp"

namespace poreforge::cpu {
namespace {

// Below this many unknowns a loop runs on one thread (a parallel region per sweep would cost
// more than the sweep).
constexpr int64_t kParallelUnknowns = 1 << 15;
using multigrid::correction;
using multigrid::damping;
using multigrid::sweeps;

CellOperator coarsen(const CellOperator& fine, std::vector<int32_t>& parent) {
  CellOperator c;
  for (int a = 0; a < 3; ++a) c.extent[std::size_t(a)] = (fine.extent[std::size_t(a)] + 1) / 2;
  const int64_t fnx = fine.extent[0], fny = fine.extent[1];
  const int64_t cnx = c.extent[0], cny = c.extent[1];
  std::vector<int32_t> index(std::size_t(cnx * cny * c.extent[2]), -1);
  const int64_t n = fine.size();
  parent.assign(std::size_t(n), -1);
  for (int64_t k = 0; k < n; ++k) {
    const int64_t i = fine.cell[std::size_t(k)];
    const int64_t x = i % fnx, y = (i / fnx) % fny, z = i / (fnx * fny);
    const int64_t ci = x / 2 + cnx * (y / 2 + cny * (z / 2));
    int32_t& slot = index[std::size_t(ci)];
    if (slot < 0) {
      slot = int32_t(c.cell.size());
      c.cell.push_back(ci);
    }
    parent[std::size_t(k)] = slot;
  }
  const int64_t m = int64_t(c.cell.size());
  c.nb.assign(std::size_t(6 * m), -1);
  c.w.assign(std::size_t(6 * m), 0.0);
  c.diag.assign(std::size_t(m), 0.0);
  // Serial: faces of one block's unknowns add into the same coarse entries.
  for (int64_t k = 0; k < n; ++k) {
    const int32_t p = parent[std::size_t(k)];
    c.diag[std::size_t(p)] += fine.diag[std::size_t(k)];
    for (int e = 0; e < 6; ++e) {
      const int32_t j = fine.nb[std::size_t(6 * k + e)];
      if (j < 0) continue;
      const int32_t q = parent[std::size_t(j)];
      const double g = fine.w[std::size_t(6 * k + e)];
      if (q == p) {
        c.diag[std::size_t(p)] -= g;  // a face inside the block: P^T A P's diagonal loses it
      } else {
        c.nb[std::size_t(6 * int64_t(p) + e)] = q;
        c.w[std::size_t(6 * int64_t(p) + e)] += g;
      }
    }
  }
  return c;
}

}  // namespace

void CellOperator::apply(const double* x, double* y) const {
  const int64_t n = size();
#pragma omp parallel for schedule(static) if (n >= kParallelUnknowns)
  for (int64_t k = 0; k < n; ++k) y[k] = detail::cell_row(nb.data(), w.data(), diag.data(), x, k);
}

Multigrid::Multigrid(CellOperator fine, int64_t coarsest_unknowns) {
  m_levels.push_back(std::move(fine));
  while (m_levels.back().size() > coarsest_unknowns) {
    const CellOperator& f = m_levels.back();
    if (f.extent[0] <= 1 && f.extent[1] <= 1 && f.extent[2] <= 1) break;
    std::vector<int32_t> parent;
    CellOperator c = coarsen(f, parent);
    std::vector<int32_t> first(std::size_t(c.size()) + 1, 0), children(parent.size());
    for (int32_t p : parent) ++first[std::size_t(p) + 1];
    for (std::size_t k = 1; k < first.size(); ++k) first[k] += first[k - 1];
    std::vector<int32_t> next(first.begin(), first.end() - 1);
    for (std::size_t k = 0; k < parent.size(); ++k) children[std::size_t(next[std::size_t(parent[k])]++)] = int32_t(k);
    m_parent.push_back(std::move(parent));
    m_first.push_back(std::move(first));
    m_children.push_back(std::move(children));
    m_levels.push_back(std::move(c));
  }
  const CellOperator& last = m_levels.back();
  const int64_t m = last.size();
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(m, m);
  for (int64_t k = 0; k < m; ++k) {
    a(k, k) = last.diag[std::size_t(k)];
    for (int e = 0; e < 6; ++e) {
      const int32_t j = last.nb[std::size_t(6 * k + e)];
      if (j >= 0) a(k, j) -= last.w[std::size_t(6 * k + e)];
    }
  }
  Eigen::LLT<Eigen::MatrixXd> llt(a);
  if (llt.info() != Eigen::Success) throw std::runtime_error("multigrid: the coarsest operator is not positive definite");
  const Eigen::MatrixXd l = llt.matrixL();
  m_coarsest.assign(l.data(), l.data() + l.size());  // column-major, as Eigen keeps it
  m_r.resize(m_levels.size());
  m_b.resize(m_levels.size());
  m_x.resize(m_levels.size());
  for (std::size_t k = 0; k < m_levels.size(); ++k) {
    m_r[k].resize(std::size_t(m_levels[k].size()));
    m_b[k].resize(std::size_t(m_levels[k].size()));
    m_x[k].resize(std::size_t(m_levels[k].size()));
  }
}

void Multigrid::apply(const double* r, double* z) const { cycle(0, r, z); }

std::vector<double> Multigrid::coarsest_inverse() const {
  const int64_t m = m_levels.back().size();
  const Eigen::Map<const Eigen::MatrixXd> l(m_coarsest.data(), m, m);
  const Eigen::MatrixXd l_inv = l.triangularView<Eigen::Lower>().solve(Eigen::MatrixXd::Identity(m, m));
  const Eigen::MatrixXd inv = l_inv.transpose() * l_inv;
  return std::vector<double>(inv.data(), inv.data() + inv.size());
}

void Multigrid::cycle(int level, const double* b, double* x) const {
  const CellOperator& a = m_levels[std::size_t(level)];
  const int64_t n = a.size();
  if (level + 1 == int(m_levels.size())) {
    const Eigen::Map<const Eigen::MatrixXd> l(m_coarsest.data(), n, n);
    Eigen::Map<Eigen::VectorXd> out(x, n);
    out = Eigen::Map<const Eigen::VectorXd>(b, n);
    l.triangularView<Eigen::Lower>().solveInPlace(out);
    l.transpose().triangularView<Eigen::Upper>().solveInPlace(out);
    return;
  }
  std::vector<double>& r = m_r[std::size_t(level)];
  auto smooth = [&] {
    a.apply(x, r.data());
#pragma omp parallel for schedule(static) if (n >= kParallelUnknowns)
    for (int64_t k = 0; k < n; ++k) x[k] += damping * (b[k] - r[std::size_t(k)]) / a.diag[std::size_t(k)];
  };
#pragma omp parallel for schedule(static) if (n >= kParallelUnknowns)
  for (int64_t k = 0; k < n; ++k) x[k] = damping * b[k] / a.diag[std::size_t(k)];
  for (int s = 1; s < sweeps; ++s) smooth();
  // The residual, summed over each block: the coarse right-hand side.
  a.apply(x, r.data());
  const std::vector<int32_t>& parent = m_parent[std::size_t(level)];
  std::vector<double>& bc = m_b[std::size_t(level) + 1];
  std::vector<double>& xc = m_x[std::size_t(level) + 1];
  const std::vector<int32_t>& first = m_first[std::size_t(level)];
  const std::vector<int32_t>& children = m_children[std::size_t(level)];
  const int64_t m = int64_t(bc.size());
#pragma omp parallel for schedule(static) if (n >= kParallelUnknowns)
  for (int64_t c = 0; c < m; ++c) {
    double sum = 0;
    for (int32_t j = first[std::size_t(c)]; j < first[std::size_t(c) + 1]; ++j) {
      const int32_t k = children[std::size_t(j)];
      sum += b[k] - r[std::size_t(k)];
    }
    bc[std::size_t(c)] = sum;
  }
  cycle(level + 1, bc.data(), xc.data());
#pragma omp parallel for schedule(static) if (n >= kParallelUnknowns)
  for (int64_t k = 0; k < n; ++k) x[k] += correction * xc[std::size_t(parent[std::size_t(k)])];
  for (int s = 0; s < sweeps; ++s) smooth();
}

}  // namespace poreforge::cpu
