#pragma once
// The per-voxel arithmetic of the transport measures, written once for both backends: the
// finite-volume Laplace stencil of the formation factor and the D3Q19 two-relaxation-time
// lattice-Boltzmann node update of the permeability.
#include <cstdint>

#include "poreforge/host_device.hpp"

namespace poreforge::detail {

// ---------------------------------------------------------------------------------------------
// Formation factor: Laplace's equation on the cluster (mask nonzero), unit conductivity.

struct LaplaceGrid {
  int64_t nx = 0, ny = 0, nz = 0;
  int axis = 0;
  double g[3] = {1, 1, 1};  // conductance between face neighbours along x, y, z

  PF_HD int64_t extent(int d) const { return d == 0 ? nx : d == 1 ? ny : nz; }
  PF_HD int64_t stride(int d) const { return d == 0 ? 1 : d == 1 ? nx : nx * ny; }
  // The reservoir conductance of a voxel on the inlet or outlet face: half a voxel of length.
  PF_HD double g_reservoir() const { return 2 * g[axis]; }
};

// Diagonal of the system at voxel (x, y, z) of the cluster: its conductances to cluster
// neighbours and reservoirs. Both reservoirs count when the axis has one voxel.
PF_HD double laplace_diagonal(const LaplaceGrid& grid, const uint8_t* cluster, int64_t x, int64_t y, int64_t z) {
  const int64_t c[3] = {x, y, z};
  const int64_t i = x + grid.nx * (y + grid.ny * z);
  double d = 0;
  for (int a = 0; a < 3; ++a) {
    const int64_t s = grid.stride(a);
    if (c[a] > 0 && cluster[i - s]) d += grid.g[a];
    if (c[a] < grid.extent(a) - 1 && cluster[i + s]) d += grid.g[a];
  }
  if (c[grid.axis] == 0) d += grid.g_reservoir();
  if (c[grid.axis] == grid.extent(grid.axis) - 1) d += grid.g_reservoir();
  return d;
}

// Row k of an operator on cells (the formation factor's system and its multigrid levels):
// diag_k x_k − Σ_e w[6k + e] · x[nb[6k + e]] over the faces e = x−, x+, y−, y+, z−, z+, where
// nb is −1 for a face without a neighbouring unknown.
PF_HD double cell_row(const int32_t* __restrict__ nb, const double* __restrict__ w, const double* __restrict__ diag,
                      const double* __restrict__ x, int64_t k) {
  double v = diag[k] * x[k];
  for (int e = 0; e < 6; ++e) {
    const int32_t j = nb[6 * k + e];
    if (j >= 0) v -= w[6 * k + e] * x[j];
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// Permeability: D3Q19, pull scheme on two lattices (populations after collision stored at
// their node), halfway bounce-back, TRT collision with the Stokes (linear) equilibrium, its
// sound speed a free parameter (Ginzburg 2008), and the body force as Guo's source term
// restricted to that equilibrium. Only fluid nodes are stored, in index order, each with the
// nodes its populations stream from: rock is mostly solid, and a dense lattice would move
// every solid voxel's populations through memory too.
//
// The populations are stored as their departure from the fluid at rest (f_q minus its equilibrium
// at density 1), and every step computes in double. The collision is linear in the populations
// and the rest state is its fixed point without force, so the departures obey the same update,
// with ρ read as the density's departure. A creeping flow moves the populations (1/18 to 1/9 at
// rest) by ~1e-6 of themselves: stored whole, float would keep about one digit of that motion;
// stored as departures, it keeps 7, and a step moves 224 bytes a node against double's 376. The
// roundings of a float lattice add up through the slow modes, though (a slit of 13 voxels settled
// 3e-5 from its exact k), so a run settles in float and finishes in double, or in float where the
// tolerance is wide enough to hold them (run_to_steady_state).

namespace lbm {

constexpr int Q = 19;

// Velocities: rest, the 6 faces, the 12 edges; each moving one followed by its opposite.
// The host reads tables at namespace scope (a local array would be rebuilt on every call);
// device code cannot, and its loops are unrolled, so its local arrays fold to constants.
#define PF_LBM_CX {0, 1, -1, 0, 0, 0, 0, 1, -1, 1, -1, 1, -1, 1, -1, 0, 0, 0, 0}
#define PF_LBM_CY {0, 0, 0, 1, -1, 0, 0, 1, -1, -1, 1, 0, 0, 0, 0, 1, -1, 1, -1}
#define PF_LBM_CZ {0, 0, 0, 0, 0, 1, -1, 0, 0, 0, 0, 1, -1, -1, 1, 1, -1, -1, 1}
#if defined(__CUDA_ARCH__)
PF_HD int cx(int q) {
  constexpr int v[Q] = PF_LBM_CX;
  return v[q];
}
PF_HD int cy(int q) {
  constexpr int v[Q] = PF_LBM_CY;
  return v[q];
}
PF_HD int cz(int q) {
  constexpr int v[Q] = PF_LBM_CZ;
  return v[q];
}
#else
inline constexpr int host_cx[Q] = PF_LBM_CX;
inline constexpr int host_cy[Q] = PF_LBM_CY;
inline constexpr int host_cz[Q] = PF_LBM_CZ;
PF_HD int cx(int q) { return host_cx[q]; }
PF_HD int cy(int q) { return host_cy[q]; }
PF_HD int cz(int q) { return host_cz[q]; }
#endif
#undef PF_LBM_CX
#undef PF_LBM_CY
#undef PF_LBM_CZ
PF_HD int c_along(int q, int axis) { return axis == 0 ? cx(q) : axis == 1 ? cy(q) : cz(q); }
PF_HD int opposite(int q) { return q == 0 ? 0 : (q % 2 ? q + 1 : q - 1); }
PF_HD double weight(int q) { return q == 0 ? 1.0 / 3 : q < 7 ? 1.0 / 18 : 1.0 / 36; }
// The velocity q reflected in a plane across `axis`: its component along the axis negated.
PF_HD int reflected(int q, int axis) {
  for (int r = 1; r < Q; ++r)
    if (c_along(r, axis) == -c_along(q, axis) && c_along(r, (axis + 1) % 3) == c_along(q, (axis + 1) % 3) &&
        c_along(r, (axis + 2) % 3) == c_along(q, (axis + 2) % 3))
      return r;
  return q;
}

struct Params {
  int64_t nodes = 0;                       // fluid nodes: the populations are f[q · nodes + k]
  int axis = 0;                            // of the body force and the mirror planes
  double force = 0;                        // body force per unit volume along the axis
  double omega_plus = 1, omega_minus = 1;  // relaxation rates of the symmetric and antisymmetric modes
  double sound_speed_squared = 1.0 / 3;    // c_s² of the equilibrium (PermeabilityOptions)
  // reflected(q, axis) for each q, looked up rather than searched in the step: the axis is
  // known only at run time, so the compiler cannot fold a search, and it slows the CUDA step
  // several-fold (docs/performance.md).
  int8_t reflection[Q] = {};
};

// One stream-collide step of fluid node k: pulls the populations that arrive there from `in`
// (post-collision departures from rest, q-major over the fluid nodes: in[q · nodes + k]),
// collides them and writes `out`, float or double (T). `source[(q − 1) · nodes + k]` is the
// node that q's population streams from, −1 where it would come from a solid voxel or from
// beyond a wall face, and −2 − m where it crosses a mirror plane from the image of node m.
// Returns the node's momentum along the axis, the half-step average Σ f c + F/2 (the rest
// state carries none). A lattice starts at rest: every departure 0.
//
// The mirror: a sample followed by its reflection along the flow axis, periodic, is the usual
// lattice for a body-force-driven flow through a non-periodic sample, and it holds the sample
// twice. The update is linear in the departures and its force term odd in the axis velocity,
// so reflecting a departure field (M: the position mirrored, q → reflected(q)) and negating
// it maps the flow driven by F to itself: the doubled lattice, started at rest, keeps
// f_q(M x) = −f_reflected(q)(x) at every step. So the image is not stored: what crosses a
// mirror plane from the image of node m is −f_reflected(q)(m), and the sample alone holds the
// same flow, its mean velocity the doubled lattice's.
template <class T>
PF_HD double node_step(const Params& p, const int32_t* __restrict__ source, const T* __restrict__ in,
                       T* __restrict__ out, int64_t k) {
  const int64_t n = p.nodes;
  double f[Q];
  f[0] = in[k];
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int q = 1; q < Q; ++q) {
    const int32_t s = source[(q - 1) * n + k];
    // Halfway bounce-back: what left towards a wall last step comes back reversed.
    // One load a velocity from a selected address, no branch around it: branches keep the
    // CUDA step from issuing its 18 gathers together (docs/performance.md).
    const int r = p.reflection[q];
    const int velocity = s >= 0 ? q : s == -1 ? opposite(q) : r;
    const int64_t node = s >= 0 ? int64_t(s) : s == -1 ? k : -2 - int64_t(s);
    const double v = in[velocity * n + node];
    f[q] = s < -1 ? -v : v;
  }
  double rho = 0, j[3] = {0, 0, 0};  // the density's departure from 1, the momentum
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int q = 0; q < Q; ++q) {
    rho += f[q];
    j[0] += cx(q) * f[q];
    j[1] += cy(q) * f[q];
    j[2] += cz(q) * f[q];
  }
  j[p.axis] += 0.5 * p.force;
  const double wp = p.omega_plus, wm = p.omega_minus;
  // The density the moving velocities' equilibria see, c_s² ρ over the lattice's usual 1/3:
  // each one's symmetric part is w_q ρ_s, the rest velocity's what is left of ρ.
  const double rho_s = 3 * p.sound_speed_squared * rho;
  out[k] = T(f[0] - wp * (f[0] - (rho - (1 - weight(0)) * rho_s)));
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int q = 1; q < Q; q += 2) {
    const double w = weight(q);
    const double cj = cx(q) * j[0] + cy(q) * j[1] + cz(q) * j[2];
    const double plus = 0.5 * (f[q] + f[q + 1]) - w * rho_s;
    const double minus = 0.5 * (f[q] - f[q + 1]) - 3 * w * cj;
    const double source_term = (1 - 0.5 * wm) * 3 * w * c_along(q, p.axis) * p.force;
    out[q * n + k] = T(f[q] - wp * plus - wm * minus + source_term);
    out[(q + 1) * n + k] = T(f[q + 1] - wp * plus + wm * minus - source_term);
  }
  return j[p.axis];
}

}  // namespace lbm
}  // namespace poreforge::detail
