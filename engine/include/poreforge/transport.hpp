#pragma once
/// Transport measures of a pore phase (DESIGN §1 "Realism measures"): the formation factor
/// (electrical conduction through the pore, Laplace's equation) and the absolute permeability
/// (creeping flow, lattice Boltzmann), along one axis, on the CPU (OpenMP) or CUDA backend.
/// No CUDA types appear here.
#include <cstdint>
#include <string_view>

#include "poreforge/backend.hpp"
#include "poreforge/measures.hpp"
#include "poreforge/volume.hpp"

namespace poreforge {

/// 1 darcy in m² (API RP 40).
inline constexpr double darcy_m2 = 9.869233e-13;

/// Parses "x", "y" or "z" into the axis number 0, 1 or 2; throws InputError otherwise.
int parse_axis(std::string_view text);

struct FormationFactorOptions {
  /// Conjugate gradients stop when ‖r‖₂ ≤ tolerance · ‖b‖₂ (relative residual).
  double tolerance = 1e-8;
  /// Iteration cap; 0: 20 × the longest extent + 10,000. Reaching it is reported through
  /// `converged`, not thrown.
  int64_t max_iterations = 0;
};

struct FormationFactorResult {
  /// F = G_open / G_pore, dimensionless; +infinity when no pore cluster joins the inlet and
  /// outlet faces (then every other figure but the porosity is 0).
  double formation_factor = 0;
  double porosity = 0;           ///< pore voxels / box voxels
  double spanning_porosity = 0;  ///< voxels of the spanning cluster / box voxels
  /// Conductance of the pore for a unit conductivity, current / potential difference, in the
  /// mask's spacing units (area / length): Σ over inlet voxels of g_in (1 − V).
  double pore_conductance = 0;
  /// The same for the all-pore box: its cross-section area / its length (spacing units).
  double open_conductance = 0;
  int64_t iterations = 0;          ///< conjugate-gradient iterations
  double relative_residual = 0;    ///< ‖r‖₂ / ‖b‖₂ at the end
  bool converged = false;          ///< the tolerance was met (true when nothing spans)
  Backend backend = Backend::cpu;  ///< the backend that ran
};

/// Formation factor of the pore phase (mask value nonzero = pore) along `axis` (0 = x, 1 = y,
/// 2 = z). Laplace's equation by finite volumes on the spanning 6-connected pore — the pore
/// voxels 6-connected to both the inlet face (index 0 along the axis) and the outlet face
/// (index n−1); dead ends kept, isolated clusters dropped. Face neighbours along axis d are
/// joined by conductance g_d = (area of the face normal to d) / (spacing along d), in the
/// mask's spacing; a voxel on the inlet (outlet) face is joined to a reservoir at potential
/// 1 (0) half a voxel outside by 2·g_axis; no flux crosses any other face. The linear system
/// (symmetric positive definite) is solved by preconditioned conjugate gradients in double
/// precision — CPU: matrix-free over the cluster's voxels, OpenMP, preconditioned by one
/// aggregation multigrid V-cycle (2×2×2 blocks, Galerkin coarse operators; tens of
/// iterations); CUDA: the same cells, hierarchy and V-cycle on the device, a kernel a step of
/// it (its coarsest level smaller, solved by a dense inverse). F = 1/φ for straight tubes
/// along the axis, 1 for an all-pore box. Cost: O(cluster voxels) per iteration; memory about
/// 210 bytes a cluster voxel and 6 a box voxel (CUDA: about 170 bytes a cluster voxel on the
/// host, 180 on the device).
/// `components6`, when given, are the pore's 6-connected components
/// (label_components(pore, Adjacency::face6)): the spanning cluster is read from them instead
/// of searched for, which saves most of the host's set-up when several axes or measures
/// share them; InputError when they are not of this mask's shape or 6-connected.
/// Synchronous. Throws InputError for a bad shape or spacing, a bad axis or options; a mask
/// without pore is +infinity.
FormationFactorResult formation_factor(const Mask& pore, int axis, const FormationFactorOptions& options = {},
                                       Backend backend = Backend::automatic,
                                       const ComponentLabels* components6 = nullptr);

/// Permeability along `axis` estimated from the local thickness (`radius`: local_thickness of
/// the pore with Boundary::open, the mask's shape, spacing units): Darcy's law through the
/// spanning 6-connected pore in which each voxel conducts as a tube of its radius r does,
/// r² / 8 (Poiseuille), two voxels across a face in series (the harmonic mean), the reservoirs
/// and finite volumes of the formation factor. The result is the medium's effective
/// permeability along the axis, in the spacing's units squared (µm² for micrometres; 0 when
/// nothing spans). A solve of the formation factor's size where the lattice-Boltzmann flow
/// takes thousands of steps: on sandstone it follows that flow's k sub-volume by sub-volume to
/// a few per cent of a common factor (docs/realism.md), so it ranks structures by their flow,
/// not a figure to report as k. Same backends, cost and errors as formation_factor; InputError
/// also when `radius` is not of the mask's shape or not a positive number on every pore voxel.
struct PoiseuillePermeabilityResult {
  double permeability = 0;  ///< spacing units squared; 0 when no pore cluster joins the faces
  int64_t iterations = 0;          ///< conjugate-gradient iterations
  double relative_residual = 0;    ///< ‖r‖₂ / ‖b‖₂ at the end
  bool converged = false;          ///< the tolerance was met (true when nothing spans)
  Backend backend = Backend::cpu;  ///< the backend that ran
};
PoiseuillePermeabilityResult poiseuille_permeability(const Mask& pore, const Volume<float>& radius, int axis,
                                                     const FormationFactorOptions& options = {},
                                                     Backend backend = Backend::automatic,
                                                     const ComponentLabels* components6 = nullptr);

/// What lies beyond the faces parallel to the flow axis, for the permeability.
enum class LateralBoundary {
  wall,      ///< solid (no-slip, bounce-back): no flux leaves the sides, as for F
  periodic,  ///< the volume tiles space sideways
};

struct PermeabilityOptions {
  /// Edge of a (cubic) voxel in metres (Berea: 5.345e-6). 0: the physical figures are NaN and
  /// only `k_voxels` is given.
  double voxel_size_m = 0;
  /// Mirror the sample along the flow axis (the flow of 2n voxels: the volume, then its
  /// reflection, periodic) so that each face meets its own image, the usual treatment of a
  /// body-force-driven periodic LBM on a non-periodic rock sample (no spurious constriction
  /// where outlet meets inlet). The image is not stored: by symmetry its populations are the
  /// volume's reflected and negated (lbm::node_step), so the cost is the volume's.
  /// false: the volume itself is periodic along the flow axis (right for periodic samples).
  bool mirror = true;
  LateralBoundary lateral = LateralBoundary::wall;
  /// Relaxation time of the symmetric TRT mode, τ+ > 1/2: kinematic viscosity
  /// ν = (τ+ − ½)/3 (lattice units). With Λ = 3/16 the permeability does not depend on it,
  /// but the steps to steady state do: the flow settles once the pressure has spread through
  /// the sample, a diffusion of coefficient ∝ c_s² k/ν, so a lower viscosity settles sooner,
  /// until the slower antisymmetric relaxation (τ− = Λ/(τ+ − ½) + ½) and the viscous time
  /// across a pore hold it back (docs/performance.md has the steps measured).
  double tau = 0.55;
  /// c_s², the squared sound speed of the equilibrium (lattice units; the usual D3Q19 value is
  /// 1/3), in (0, 3/4). A free parameter of the equilibrium (Ginzburg 2008): the steady flow,
  /// hence k, does not depend on it — at steady state the rest population equals its
  /// equilibrium, so the moving ones obey equations in which c_s² does not appear, and what
  /// those leave free (a uniform density in each cluster, without momentum) the lattice's mass,
  /// conserved from rest, fixes — but the pressure spreads through the sample faster as it
  /// grows. Beyond 3/4 the lattice is unstable (von Neumann analysis of the bulk lattice, τ
  /// from 0.51 to 1; docs/performance.md).
  double sound_speed_squared = 2.0 / 3;
  /// Body force per unit volume along the axis, lattice units; small enough that the flow
  /// is creeping (the equilibrium is the Stokes one, so k is exactly linear in it anyway).
  double body_force = 1e-6;
  /// Steady when the mean velocity's distance from its steady value, estimated from its
  /// changes over the last two spans of `check_every` steps, is below tolerance (relative).
  /// Changes that shrink by a ratio 0 < ρ < 1 leave max(1, ρ / (1 − ρ)) times the last change
  /// to come; alternating ones that shrink, the last change; growing ones (|ρ| ≥ 1), an
  /// unknown amount (not steady). So the first verdict comes at the third check.
  double tolerance = 1e-6;
  int check_every = 100;
  int64_t max_steps = 200000;  ///< cap; reaching it is reported through `converged`
};

struct PermeabilityResult {
  double k_voxels = 0;      ///< permeability in voxel² (lattice units); 0 when nothing spans
  double k_m2 = 0;          ///< k_voxels × voxel_size_m² (NaN without voxel_size_m)
  double k_millidarcy = 0;  ///< k_m2 / 9.869233e-16 (NaN without voxel_size_m)
  /// Mean velocity along the axis over the whole volume (its image's the same), solid counted as 0,
  /// lattice units: the Darcy velocity.
  double mean_velocity = 0;
  double porosity = 0;
  bool spans = false;      ///< a 6-connected pore cluster joins the inlet and outlet faces
  int64_t steps = 0;
  bool converged = false;  ///< the steady-state test passed before max_steps
  /// The mean velocity's estimated distance from steady, relative (see `tolerance`): infinite
  /// while the changes grow or the flow blew up, and until two changes are known.
  double relative_error = 0;
  Backend backend = Backend::cpu;
};

/// Absolute permeability of the pore phase (nonzero = pore) along `axis` (0, 1, 2): a
/// lattice-Boltzmann D3Q19 flow with two-relaxation-time collision (magic parameter
/// Λ = (τ+ − ½)(τ− − ½) = 3/16, so that halfway bounce-back puts the no-slip wall exactly
/// half-way between a fluid and a solid voxel and k does not depend on the viscosity), the
/// Stokes (linear) equilibrium, halfway bounce-back on solid voxels (and on the sides with
/// LateralBoundary::wall), driven by a uniform body force F along the axis, periodic along
/// it (see `mirror`), run to steady state. Darcy: k = ν ⟨u⟩ / F with ⟨u⟩ the mean velocity
/// over the whole volume, solid included (k in voxel²; × voxel_size_m² in m²). The voxels
/// must be cubes (isotropic spacing). CPU: two lattices, OpenMP; CUDA: the same in one fused
/// stream-collide kernel. Each step computes in double; the populations are stored in float
/// until the flow has settled to max(tolerance, 1e-5) (224 bytes a node a step against 376),
/// then, the checks started afresh, in double to `tolerance` (in float from a tolerance of
/// 1e-4, where float's roundings stay well inside it).
/// When no 6-connected pore cluster spans the axis the result is 0 without a flow run. Only
/// fluid voxels are stored: 19 × 2 populations and 18 int32 sources a fluid voxel, at most
/// 19 × 2 doubles (the mirror adds none); a step costs O(fluid voxels).
/// `components6` as for formation_factor: whether a cluster spans is read from them.
/// Synchronous. Throws InputError for a bad mask, axis or options.
PermeabilityResult permeability(const Mask& pore, int axis, const PermeabilityOptions& options = {},
                                Backend backend = Backend::automatic, const ComponentLabels* components6 = nullptr);

}  // namespace poreforge
