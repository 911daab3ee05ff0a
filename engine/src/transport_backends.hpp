#pragma once
// The transport measures' backend twins and the host steps both share (spanning cluster,
// validation, the lattice set-up); the public functions of transport.hpp dispatch here.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "common/transport_stencils.hpp"
#include "cpu/multigrid.hpp"
#include "poreforge/transport.hpp"

namespace poreforge::detail {

// The pore voxels 6-connected to both the inlet face (index 0 along `axis`) and the outlet
// face (index n − 1): 1 in `cluster`, 0 elsewhere. Two breadth-first searches, O(N).
struct SpanningCluster {
  std::vector<uint8_t> cluster;
  int64_t voxels = 0;
};
SpanningCluster spanning_cluster(const Mask& pore, int axis);
// The same read from the pore's 6-connected components: the components touching both faces.
// O(N), no search.
SpanningCluster spanning_cluster(const ComponentLabels& components6, int axis);
// Read from `components6` when given, else searched for.
SpanningCluster spanning_cluster(const Mask& pore, int axis, const ComponentLabels* components6);
// InputError unless `components6` is null or the 6-connected components of a mask of pore's shape.
void validate_components6(const Mask& pore, const ComponentLabels* components6);

// Throws InputError for a bad shape, spacing, axis or options.
void validate_formation_factor(const Mask& pore, int axis, const FormationFactorOptions& options);
void validate_permeability(const Mask& pore, int axis, const PermeabilityOptions& options);

// The Laplace grid of a mask: its shape, the axis and the face conductances area / length.
LaplaceGrid laplace_grid(const Mask& pore, int axis);
// The formation factor's system on the spanning cluster, both backends' unknowns: the
// operator on the cluster's cells in index order (neighbours, face conductances, diagonal)
// and the right-hand side, the inlet reservoirs' conductance on the inlet face's cells.
// `radius` (null: a unit conductivity) gives each voxel a conductivity r² / 8, a tube of that
// radius (poiseuille_permeability's medium; the box's voxels, spacing units).
struct LaplaceSystem {
  cpu::CellOperator op;
  std::vector<double> b;
};
LaplaceSystem laplace_system(const Mask& pore, const SpanningCluster& cluster, int axis,
                             const float* radius = nullptr);
// The conductance of the all-pore box: cross-section area / length, spacing units.
double open_conductance(const Mask& pore, int axis);
int64_t max_cg_iterations(const Mask& pore, int axis, const FormationFactorOptions& options);

// The lattice a permeability run works on, the pore's fluid nodes in index order (its image
// across the mirror planes, when asked, is implied: lbm::node_step): each one's 18 sources,
// the kernel parameters, and the lattice's voxels, solid included (the Darcy velocity's
// volume).
struct LatticeSetup {
  std::vector<int32_t> source;
  int64_t voxels = 0;
  lbm::Params params;
};
LatticeSetup lattice_setup(const Mask& pore, int axis, const PermeabilityOptions& options);

// Darcy's law and the unit conversions of a finished run.
void finish_permeability(PermeabilityResult& r, const PermeabilityOptions& options);
/// The mean velocity at the last check and its change since the one before.
struct SteadyState {
  double velocity = std::numeric_limits<double>::quiet_NaN();
  double change = std::numeric_limits<double>::quiet_NaN();
};
/// Either backend's check after `check_every` steps: records the mean velocity (`momentum`
/// over `voxels`) and the estimated distance from its steady value (from its last two
/// changes, as PermeabilityOptions::tolerance says; `state` updated); true once that is below
/// the tolerance (r.converged set), or when the mean velocity is not finite (not converged).
bool permeability_check(PermeabilityResult& r, double momentum, int64_t voxels, SteadyState& state,
                        const PermeabilityOptions& options);
/// The mean velocity's relative error to which a lattice settles in float before it goes on
/// in double. Float rounds each population to 6e-8 of itself, far below it; the roundings
/// that pile up through the slow modes can reach it (3e-5 on a slit, the worst case met:
/// every row the same, so their roundings add up coherently; on rock they cancel, 1e-8 on a
/// Berea crop), and the double finish removes them. The lower it is, the more of the run's
/// slow tail goes at float's cost.
constexpr double kFloatTolerance = 1e-5;
/// A tolerance from which a run finishes in float: three times the largest pile-up of float's
/// roundings met (the slit's 3e-5), so that double would move k by less than a third of what
/// the tolerance allows (`compare`'s and `describe`'s are looser: RealismOptions).
constexpr double kFloatFinish = 1e-4;

/// Both backends' run to steady state on `lattice`, which holds the fluid nodes at rest in
/// float and offers `double run(int steps)` (steps in its current precision; the momentum
/// along the axis at the last one) and `void widen()` (to double, populations kept). Float
/// first, to max(tolerance, kFloatTolerance); then the finish, its checks started afresh, to
/// the tolerance: in double, or from kFloatFinish on in float. The finish also confirms the
/// first settling: the estimate is not a bound, and early in a run a pause in the mean
/// velocity's sloshing can pass it (a 64³ Berea crop settled in float alone at 500 steps 0.9 %
/// from its limit). Cap, blow-up and the error as permeability_check says; a float phase that
/// settles at the cap stands where the tolerance asked for no more than it reached.
template <class Lattice>
void run_to_steady_state(PermeabilityResult& r, Lattice& lattice, int64_t voxels, const PermeabilityOptions& options) {
  PermeabilityOptions in_float = options;
  in_float.tolerance = std::max(options.tolerance, kFloatTolerance);
  SteadyState steady;
  while (r.steps < options.max_steps)
    if (permeability_check(r, lattice.run(options.check_every), voxels, steady, in_float)) break;
  if (!r.converged || r.steps >= options.max_steps) {  // the cap, or a flow that blew up
    r.converged = r.converged && options.tolerance >= kFloatTolerance;
    return;
  }
  if (options.tolerance < kFloatFinish) lattice.widen();
  r.converged = false;
  r.relative_error = std::numeric_limits<double>::infinity();  // until the finish's checks say
  steady = SteadyState{};
  while (r.steps < options.max_steps)
    if (permeability_check(r, lattice.run(options.check_every), voxels, steady, options)) break;
}

/// The start of either backend's permeability: options checked, porosity, whether a pore
/// cluster spans; when none does, `r` is the final (zero) result and false is returned.
bool start_permeability(PermeabilityResult& r, const Mask& pore, int axis, const PermeabilityOptions& options,
                        Backend backend, const ComponentLabels* components6);
/// The start of either backend's formation factor: options checked, porosity, the open box's
/// conductance and the spanning cluster; when none spans, `r` is the final (infinite) result
/// and nothing comes back.
std::optional<SpanningCluster> start_formation_factor(FormationFactorResult& r, const Mask& pore, int axis,
                                                      const FormationFactorOptions& options, Backend backend,
                                                      const ComponentLabels* components6);
/// A formation factor from the solve's end: the inlet current, the iterations and residuals.
void finish_formation_factor(FormationFactorResult& r, double current, int64_t iterations, double residual_norm,
                             double b_norm, const FormationFactorOptions& options);
// ν = (τ+ − ½)/3, lattice units.
double lattice_viscosity(const PermeabilityOptions& options);

}  // namespace poreforge::detail

// `components6` may be null (the spanning cluster is searched for) or validated ones;
// `radius` as laplace_system's (then the result's conductances are in its medium's units).
namespace poreforge::cpu {
FormationFactorResult formation_factor(const Mask& pore, int axis, const FormationFactorOptions& options,
                                       const ComponentLabels* components6, const float* radius = nullptr);
PermeabilityResult permeability(const Mask& pore, int axis, const PermeabilityOptions& options,
                                const ComponentLabels* components6);
}  // namespace poreforge::cpu

namespace poreforge::cuda {
FormationFactorResult formation_factor(const Mask& pore, int axis, const FormationFactorOptions& options,
                                       const ComponentLabels* components6, const float* radius = nullptr);
PermeabilityResult permeability(const Mask& pore, int axis, const PermeabilityOptions& options,
                                const ComponentLabels* components6);
}  // namespace poreforge::cuda
