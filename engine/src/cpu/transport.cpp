// Transport measures on the CPU (OpenMP), and the host steps both backends share.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "../transport_backends.hpp"
#include "multigrid.hpp"
#include "poreforge/error.hpp"

namespace poreforge {

int parse_axis(std::string_view text) {
  if (text == "x") return 0;
  if (text == "y") return 1;
  if (text == "z") return 2;
  throw InputError("unknown axis '" + std::string(text) + "' (expected x, y or z)");
}

namespace detail {
namespace {

void validate_axis(int axis) {
  if (axis < 0 || axis > 2) throw InputError("flow axis must be 0, 1 or 2 (x, y or z), got " + std::to_string(axis));
}

// Marks the pore voxels 6-connected to the face at index `face` along `axis`.
std::vector<uint8_t> reach_from_face(const Mask& pore, int axis, int64_t face) {
  const Shape s = pore.shape();
  const int64_t n[3] = {s.nx, s.ny, s.nz};
  const int64_t stride[3] = {1, s.nx, s.nx * s.ny};
  std::vector<uint8_t> seen(static_cast<std::size_t>(s.voxels()), 0);
  std::vector<int64_t> queue;
  const int a1 = (axis + 1) % 3, a2 = (axis + 2) % 3;
  for (int64_t v = 0; v < n[a2]; ++v)
    for (int64_t u = 0; u < n[a1]; ++u) {
      const int64_t i = face * stride[axis] + u * stride[a1] + v * stride[a2];
      if (pore[std::size_t(i)] && !seen[std::size_t(i)]) {
        seen[std::size_t(i)] = 1;
        queue.push_back(i);
      }
    }
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const int64_t i = queue[head];
    const int64_t c[3] = {i % s.nx, (i / s.nx) % s.ny, i / (s.nx * s.ny)};
    for (int a = 0; a < 3; ++a)
      for (int step = -1; step <= 1; step += 2) {
        const int64_t to = c[a] + step;
        if (to < 0 || to >= n[a]) continue;
        const int64_t j = i + step * stride[a];
        if (pore[std::size_t(j)] && !seen[std::size_t(j)]) {
          seen[std::size_t(j)] = 1;
          queue.push_back(j);
        }
      }
  }
  return seen;
}

void validate_mask(const Mask& pore, int axis) {
  validate_shape(pore.shape());
  validate_spacing(pore.spacing());
  validate_axis(axis);
  if (std::size_t(pore.voxels()) != pore.values().size())
    throw InputError("mask holds " + std::to_string(pore.values().size()) + " values for shape " +
                     to_string(pore.shape()));
}

}  // namespace

SpanningCluster spanning_cluster(const Mask& pore, int axis) {
  SpanningCluster out;
  out.cluster = reach_from_face(pore, axis, 0);
  const std::vector<uint8_t> outlet = reach_from_face(pore, axis, pore.shape().extent(axis) - 1);
  for (std::size_t i = 0; i < out.cluster.size(); ++i) {
    out.cluster[i] = out.cluster[i] && outlet[i];
    out.voxels += out.cluster[i];
  }
  return out;
}

SpanningCluster spanning_cluster(const ComponentLabels& components6, int axis) {
  const std::vector<uint32_t>& labels = components6.labels.values();
  SpanningCluster out;
  out.cluster.resize(labels.size());
  int64_t voxels = 0;
#pragma omp parallel for reduction(+ : voxels) schedule(static)
  for (int64_t i = 0; i < int64_t(labels.size()); ++i) {
    const uint32_t l = labels[std::size_t(i)];
    const bool spans = l != 0 && spans_axis(components6.faces[l - 1], axis);
    out.cluster[std::size_t(i)] = spans;
    voxels += spans;
  }
  out.voxels = voxels;
  return out;
}

SpanningCluster spanning_cluster(const Mask& pore, int axis, const ComponentLabels* components6) {
  return components6 ? spanning_cluster(*components6, axis) : spanning_cluster(pore, axis);
}

void validate_components6(const Mask& pore, const ComponentLabels* c) {
  if (!c) return;
  if (c->adjacency != Adjacency::face6)
    throw InputError("the transport measures need the pore's 6-connected components (these are 26-connected)");
  if (c->labels.shape() != pore.shape() || c->faces.size() != std::size_t(c->count))
    throw InputError("the components given are of a " + to_string(c->labels.shape()) + " volume, the pore is " +
                     to_string(pore.shape()));
}

void validate_formation_factor(const Mask& pore, int axis, const FormationFactorOptions& options) {
  validate_mask(pore, axis);
  if (!(options.tolerance > 0 && options.tolerance < 1))
    throw InputError("formation factor tolerance must lie in (0, 1), got " + std::to_string(options.tolerance));
  if (options.max_iterations < 0) throw InputError("formation factor max_iterations must be ≥ 0");
  if (pore.voxels() >= int64_t(std::numeric_limits<int32_t>::max()))
    throw InputError("formation factor: volumes of 2^31 voxels or more are not supported");
}

void validate_permeability(const Mask& pore, int axis, const PermeabilityOptions& o) {
  validate_mask(pore, axis);
  if (!pore.spacing().isotropic())
    throw InputError("permeability needs cubic voxels (the lattice-Boltzmann lattice is isotropic), got spacing " +
                     to_string(pore.spacing()));
  if (!(std::isfinite(o.voxel_size_m) && o.voxel_size_m >= 0))
    throw InputError("permeability voxel_size_m must be a finite length ≥ 0 in metres");
  if (!(o.tau > 0.5 && std::isfinite(o.tau))) throw InputError("permeability tau must be finite and > 1/2");
  if (!(o.sound_speed_squared > 0 && o.sound_speed_squared < 0.75))
    throw InputError("permeability sound_speed_squared must lie in (0, 3/4)");
  if (!(o.body_force > 0 && std::isfinite(o.body_force)))
    throw InputError("permeability body_force must be finite and > 0");
  if (!(o.tolerance > 0 && o.tolerance < 1)) throw InputError("permeability tolerance must lie in (0, 1)");
  if (o.check_every < 1) throw InputError("permeability check_every must be ≥ 1");
  if (o.max_steps < 1) throw InputError("permeability max_steps must be ≥ 1");
}

LaplaceGrid laplace_grid(const Mask& pore, int axis) {
  const Spacing& sp = pore.spacing();
  LaplaceGrid g;
  g.nx = pore.shape().nx, g.ny = pore.shape().ny, g.nz = pore.shape().nz;
  g.axis = axis;
  g.g[0] = sp.y * sp.z / sp.x;
  g.g[1] = sp.x * sp.z / sp.y;
  g.g[2] = sp.x * sp.y / sp.z;
  return g;
}

double open_conductance(const Mask& pore, int axis) {
  const Shape& s = pore.shape();
  const Spacing& sp = pore.spacing();
  const double length[3] = {double(s.nx) * sp.x, double(s.ny) * sp.y, double(s.nz) * sp.z};
  return length[(axis + 1) % 3] * length[(axis + 2) % 3] / length[axis];
}

int64_t max_cg_iterations(const Mask& pore, int axis, const FormationFactorOptions& options) {
  if (options.max_iterations > 0) return options.max_iterations;
  const Shape& s = pore.shape();
  (void)axis;
  return 20 * std::max({s.nx, s.ny, s.nz}) + 10000;
}

namespace {

// Where a population arriving at x along an axis of n voxels comes from (x − c), −1 when
// that is beyond a face that is not periodic.
int64_t upstream(int64_t x, int c, int64_t n, bool periodic) {
  const int64_t s = x - c;
  if (s < 0) return periodic ? s + n : -1;
  if (s >= n) return periodic ? s - n : -1;
  return s;
}

}  // namespace

LatticeSetup lattice_setup(const Mask& pore, int axis, const PermeabilityOptions& o) {
  LatticeSetup l;
  const Shape s = pore.shape();
  const int64_t n[3] = {s.nx, s.ny, s.nz};
  // Along the flow the faces are mirror planes or periodic. Sideways, a flat axis (a 2D
  // image) has no sides: the flow is two-dimensional there.
  bool periodic[3];
  for (int a = 0; a < 3; ++a)
    periodic[a] = a == axis ? !o.mirror : n[a] == 1 || o.lateral == LateralBoundary::periodic;
  const int64_t voxels = n[0] * n[1] * n[2];
  l.voxels = voxels;

  // Number the fluid voxels in index order, a z-plane's count at a time.
  std::vector<int32_t> node(static_cast<std::size_t>(voxels), -1);
  std::vector<int64_t> first(static_cast<std::size_t>(n[2] + 1), 0);
#pragma omp parallel for schedule(static)
  for (int64_t z = 0; z < n[2]; ++z) {
    int64_t count = 0;
    for (int64_t y = 0; y < n[1]; ++y)
      for (int64_t x = 0; x < n[0]; ++x) count += pore(x, y, z) != 0;
    first[std::size_t(z + 1)] = count;
  }
  for (int64_t z = 0; z < n[2]; ++z) first[std::size_t(z + 1)] += first[std::size_t(z)];
  const int64_t nodes = first[std::size_t(n[2])];
  // Sources are int32, a mirror source −2 − node: node ≤ 2^31 − 2 still fits.
  if (nodes >= int64_t(std::numeric_limits<int32_t>::max()))
    throw InputError("permeability: lattices of 2^31 − 1 fluid voxels or more are not supported");
#pragma omp parallel for schedule(static)
  for (int64_t z = 0; z < n[2]; ++z) {
    int64_t k = first[std::size_t(z)];
    for (int64_t y = 0; y < n[1]; ++y)
      for (int64_t x = 0; x < n[0]; ++x)
        if (pore(x, y, z)) node[std::size_t(x + n[0] * (y + n[1] * z))] = int32_t(k++);
  }

  // Each fluid node's sources (lbm::node_step): the node one step upstream along each
  // velocity; −1 where that is solid or beyond a wall face (the population bounces back); and
  // across a mirror plane, the reflection's node inside the volume, as −2 − node.
  l.source.resize(static_cast<std::size_t>((lbm::Q - 1) * nodes));
  // Away from every face the node upstream lies at a fixed index offset: most nodes need
  // neither the faces' rules below nor the coordinates' arithmetic.
  int64_t offset[lbm::Q];
  for (int q = 1; q < lbm::Q; ++q) offset[q] = lbm::cx(q) + n[0] * (lbm::cy(q) + n[1] * lbm::cz(q));
#pragma omp parallel for schedule(static)
  for (int64_t z = 0; z < n[2]; ++z)
    for (int64_t y = 0; y < n[1]; ++y)
      for (int64_t x = 0; x < n[0]; ++x) {
        const int64_t i = x + n[0] * (y + n[1] * z);
        const int32_t k = node[std::size_t(i)];
        if (k < 0) continue;
        if (x > 0 && x < n[0] - 1 && y > 0 && y < n[1] - 1 && z > 0 && z < n[2] - 1) {
          for (int q = 1; q < lbm::Q; ++q)
            l.source[std::size_t((q - 1) * nodes + k)] = node[std::size_t(i - offset[q])];
          continue;
        }
        for (int q = 1; q < lbm::Q; ++q) {
          int64_t u[3] = {upstream(x, lbm::cx(q), n[0], periodic[0]), upstream(y, lbm::cy(q), n[1], periodic[1]),
                          upstream(z, lbm::cz(q), n[2], periodic[2])};
          // Beyond a mirror plane lies the image of the plane's own voxels: the one at the
          // same place along the axis.
          const bool mirrored = o.mirror && u[axis] < 0;
          if (mirrored) u[axis] = axis == 0 ? x : axis == 1 ? y : z;
          const int32_t from = (u[0] < 0 || u[1] < 0 || u[2] < 0) ? -1 : node[std::size_t(u[0] + n[0] * (u[1] + n[1] * u[2]))];
          l.source[std::size_t((q - 1) * nodes + k)] = mirrored && from >= 0 ? -2 - from : from;
        }
      }

  l.params.nodes = nodes;
  l.params.axis = axis;
  for (int q = 0; q < lbm::Q; ++q) l.params.reflection[q] = int8_t(lbm::reflected(q, axis));
  l.params.force = o.body_force;
  const double lambda = 3.0 / 16;  // the magic parameter: walls half-way, k free of ν
  const double half_plus = o.tau - 0.5;
  l.params.omega_plus = 1 / o.tau;
  l.params.omega_minus = 1 / (lambda / half_plus + 0.5);
  l.params.sound_speed_squared = o.sound_speed_squared;
  return l;
}

double lattice_viscosity(const PermeabilityOptions& o) { return (o.tau - 0.5) / 3; }

void finish_permeability(PermeabilityResult& r, const PermeabilityOptions& o) {
  r.k_voxels = lattice_viscosity(o) * r.mean_velocity / o.body_force;
  if (o.voxel_size_m > 0) {
    r.k_m2 = r.k_voxels * o.voxel_size_m * o.voxel_size_m;
    r.k_millidarcy = r.k_m2 / (darcy_m2 * 1e-3);
  } else {
    r.k_m2 = r.k_millidarcy = std::numeric_limits<double>::quiet_NaN();
  }
}

bool permeability_check(PermeabilityResult& r, double momentum, int64_t voxels, SteadyState& state,
                        const PermeabilityOptions& options) {
  r.steps += options.check_every;
  r.mean_velocity = momentum / double(voxels);
  // A lattice that blew up never settles: stop, not converged, rather than run max_steps.
  if (!std::isfinite(r.mean_velocity)) {
    r.relative_error = std::numeric_limits<double>::infinity();
    return true;
  }
  const double change = r.mean_velocity - state.velocity;
  // The distance left needs two changes: changes that shrink by a ratio rho a check have
  // rho / (1 − rho) of the last one still to come (at least the last one: the estimate is
  // never below the change itself), alternating ones that shrink at most the last one, and
  // growing ones an unknown amount.
  if (std::isfinite(state.change) && r.mean_velocity != 0) {
    double remaining = std::abs(change);
    if (change != 0) {
      const double rho = state.change != 0 ? change / state.change : std::numeric_limits<double>::infinity();
      if (rho >= 1 || rho <= -1) remaining = std::numeric_limits<double>::infinity();
      else if (rho > 0) remaining *= std::max(1.0, rho / (1 - rho));
    }
    r.relative_error = remaining / std::abs(r.mean_velocity);
    if (r.relative_error < options.tolerance) r.converged = true;
  }
  if (std::isfinite(state.velocity)) state.change = change;
  state.velocity = r.mean_velocity;
  return r.converged;
}

bool start_permeability(PermeabilityResult& r, const Mask& pore, int axis, const PermeabilityOptions& options,
                        Backend backend, const ComponentLabels* components6) {
  validate_permeability(pore, axis, options);
  r.backend = backend;
  r.porosity = double(count_phase(pore)) / double(pore.voxels());
  if (components6) {  // the components' face bits answer, no voxel is read
    r.spans = std::any_of(components6->faces.begin(), components6->faces.end(),
                          [axis](uint8_t faces) { return spans_axis(faces, axis); });
  } else {
    r.spans = spanning_cluster(pore, axis).voxels > 0;
  }
  r.relative_error = std::numeric_limits<double>::infinity();  // until the flow's checks say
  if (!r.spans) {
    r.relative_error = 0;
    r.converged = true;
    finish_permeability(r, options);
  }
  return r.spans;
}

std::optional<SpanningCluster> start_formation_factor(FormationFactorResult& r, const Mask& pore, int axis,
                                                      const FormationFactorOptions& options, Backend backend,
                                                      const ComponentLabels* components6) {
  validate_formation_factor(pore, axis, options);
  r.backend = backend;
  r.porosity = double(count_phase(pore)) / double(pore.voxels());
  r.open_conductance = open_conductance(pore, axis);
  SpanningCluster sc = spanning_cluster(pore, axis, components6);
  if (sc.voxels == 0) {
    r.formation_factor = std::numeric_limits<double>::infinity();
    r.converged = true;
    return std::nullopt;
  }
  r.spanning_porosity = double(sc.voxels) / double(pore.voxels());
  return sc;
}

void finish_formation_factor(FormationFactorResult& r, double current, int64_t iterations, double residual_norm,
                             double b_norm, const FormationFactorOptions& options) {
  r.iterations = iterations;
  r.relative_residual = residual_norm / b_norm;
  r.converged = residual_norm <= options.tolerance * b_norm;
  r.pore_conductance = current;
  r.formation_factor = r.open_conductance / current;
}

LaplaceSystem laplace_system(const Mask& pore, const SpanningCluster& sc, int axis, const float* radius) {
  const LaplaceGrid grid = laplace_grid(pore, axis);
  const Shape s = pore.shape();
  const int64_t N = s.voxels(), n = sc.voxels;
  const std::size_t un = static_cast<std::size_t>(n);
  const int64_t stride[3] = {1, s.nx, s.nx * s.ny};
  const int64_t extent[3] = {s.nx, s.ny, s.nz};
  // The operator is applied from the neighbours and conductances, without a stored matrix.
  LaplaceSystem system;
  cpu::CellOperator& op = system.op;
  op.extent = {s.nx, s.ny, s.nz};
  op.cell.resize(un);
  std::vector<int32_t> compact(static_cast<std::size_t>(N), -1);
  {
    int32_t k = 0;
    for (int64_t i = 0; i < N; ++i)
      if (sc.cluster[std::size_t(i)]) op.cell[std::size_t(k)] = i, compact[std::size_t(i)] = k++;
  }
  op.nb.resize(6 * un);
  op.w.resize(6 * un);
  op.diag.resize(un);
  system.b.assign(un, 0.0);
  const double g_res = grid.g_reservoir();
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < n; ++k) {
    const int64_t i = op.cell[std::size_t(k)];
    const int64_t c[3] = {i % s.nx, (i / s.nx) % s.ny, i / (s.nx * s.ny)};
    for (int a = 0; a < 3; ++a) {
      const int32_t lo = c[a] > 0 ? compact[std::size_t(i - stride[a])] : -1;
      const int32_t hi = c[a] < extent[a] - 1 ? compact[std::size_t(i + stride[a])] : -1;
      op.nb[std::size_t(6 * k + 2 * a)] = lo;
      op.nb[std::size_t(6 * k + 2 * a + 1)] = hi;
      op.w[std::size_t(6 * k + 2 * a)] = lo >= 0 ? grid.g[a] : 0.0;
      op.w[std::size_t(6 * k + 2 * a + 1)] = hi >= 0 ? grid.g[a] : 0.0;
    }
    if (!radius) {
      op.diag[std::size_t(k)] = laplace_diagonal(grid, sc.cluster.data(), c[0], c[1], c[2]);
      if (c[axis] == 0) system.b[std::size_t(k)] = g_res;
      continue;
    }
    // Each voxel conducts as a tube of its radius (r² / 8); two in series across a face give
    // the harmonic mean, and a face voxel meets its reservoir through its own half.
    const auto sigma = [&](int64_t v) { return double(radius[v]) * double(radius[v]) / 8; };
    const double own = sigma(i);
    double diag = 0;
    for (int e = 0; e < 6; ++e) {
      const int32_t j = op.nb[std::size_t(6 * k + e)];
      if (j < 0) continue;
      const double other = sigma(op.cell[std::size_t(j)]);
      double& w = op.w[std::size_t(6 * k + e)];
      w *= 2 * own * other / (own + other);
      diag += w;
    }
    if (c[axis] == 0) system.b[std::size_t(k)] = g_res * own;
    if (c[axis] == 0) diag += g_res * own;
    if (c[axis] == extent[axis] - 1) diag += g_res * own;
    op.diag[std::size_t(k)] = diag;
  }
  return system;
}

}  // namespace detail

namespace cpu {
namespace {
// Below this many voxels a loop runs on one thread: a parallel region per solver iteration or
// lattice step would cost more than the work it shares (and spins on busy machines).
constexpr int64_t kParallelVoxels = 1 << 15;
}  // namespace

FormationFactorResult formation_factor(const Mask& pore, int axis, const FormationFactorOptions& options,
                                       const ComponentLabels* components6, const float* radius) {
  FormationFactorResult r;
  const std::optional<detail::SpanningCluster> spanning =
      detail::start_formation_factor(r, pore, axis, options, Backend::cpu, components6);
  if (!spanning) return r;
  const int64_t n = spanning->voxels;
  const std::size_t un = static_cast<std::size_t>(n);
  detail::LaplaceSystem system = detail::laplace_system(pore, *spanning, axis, radius);
  const std::vector<double>& b = system.b;
  const Multigrid mg(std::move(system.op));
  const CellOperator& a = mg.fine();

  // Conjugate gradients preconditioned by one multigrid V-cycle.
  std::vector<double> x(un, 0.0), res = b, z(un), p(un), q(un);
  mg.apply(res.data(), z.data());
  double rz = 0, bb = 0;
#pragma omp parallel for reduction(+ : rz, bb) schedule(static) if (n >= kParallelVoxels)
  for (int64_t k = 0; k < n; ++k) {
    p[std::size_t(k)] = z[std::size_t(k)];
    rz += res[std::size_t(k)] * z[std::size_t(k)];
    bb += b[std::size_t(k)] * b[std::size_t(k)];
  }
  const double b_norm = std::sqrt(bb);
  const int64_t max_iterations = detail::max_cg_iterations(pore, axis, options);
  double rr = bb;
  int64_t it = 0;
  while (std::sqrt(rr) > options.tolerance * b_norm && it < max_iterations) {
    a.apply(p.data(), q.data());
    double pq = 0;
#pragma omp parallel for reduction(+ : pq) schedule(static) if (n >= kParallelVoxels)
    for (int64_t k = 0; k < n; ++k) pq += p[std::size_t(k)] * q[std::size_t(k)];
    const double alpha = rz / pq;
    double rr_new = 0;
#pragma omp parallel for reduction(+ : rr_new) schedule(static) if (n >= kParallelVoxels)
    for (int64_t k = 0; k < n; ++k) {
      x[std::size_t(k)] += alpha * p[std::size_t(k)];
      const double rk = res[std::size_t(k)] - alpha * q[std::size_t(k)];
      res[std::size_t(k)] = rk;
      rr_new += rk * rk;
    }
    mg.apply(res.data(), z.data());
    double rz_new = 0;
#pragma omp parallel for reduction(+ : rz_new) schedule(static) if (n >= kParallelVoxels)
    for (int64_t k = 0; k < n; ++k) rz_new += res[std::size_t(k)] * z[std::size_t(k)];
    const double beta = rz_new / rz;
    rz = rz_new;
    rr = rr_new;
#pragma omp parallel for schedule(static) if (n >= kParallelVoxels)
    for (int64_t k = 0; k < n; ++k) p[std::size_t(k)] = z[std::size_t(k)] + beta * p[std::size_t(k)];
    ++it;
  }
  double current = 0;
#pragma omp parallel for reduction(+ : current) schedule(static) if (n >= kParallelVoxels)
  for (int64_t k = 0; k < n; ++k)
    current += b[std::size_t(k)] * (1 - x[std::size_t(k)]);
  detail::finish_formation_factor(r, current, it, std::sqrt(rr), b_norm, options);
  return r;
}

namespace {

// The lattice's two copies of the populations (pull: read one, write the other), in float,
// then in double once widened.
class HostLattice {
 public:
  explicit HostLattice(const detail::LatticeSetup& setup)
      : setup_(setup), narrow_{std::vector<float>(populations(), 0.0f), std::vector<float>(populations(), 0.0f)} {}

  double run(int steps) { return wide_[0].empty() ? run_in(narrow_, steps) : run_in(wide_, steps); }

  // A step writes every population of its output, so only the current copy is converted;
  // the floats go before the second double copy comes, keeping the peak at double's.
  void widen() {
    wide_[0].assign(narrow_[0].begin(), narrow_[0].end());
    std::vector<float>().swap(narrow_[0]);  // `= {}` would clear them and keep their memory
    std::vector<float>().swap(narrow_[1]);
    wide_[1].resize(wide_[0].size());
  }

 private:
  std::size_t populations() const { return std::size_t(setup_.params.nodes * detail::lbm::Q); }

  template <class T>
  double run_in(std::vector<T> (&lattice)[2], int steps) {
    const detail::lbm::Params& P = setup_.params;
    const int64_t M = P.nodes;
    const int32_t* source = setup_.source.data();
    double momentum = 0;
    for (int s = 0; s < steps; ++s) {
      double sum = 0;
      const T* in = lattice[0].data();
      T* out = lattice[1].data();
#pragma omp parallel for reduction(+ : sum) schedule(static) if (M >= kParallelVoxels)
      for (int64_t k = 0; k < M; ++k) sum += detail::lbm::node_step(P, source, in, out, k);
      std::swap(lattice[0], lattice[1]);
      momentum = sum;
    }
    return momentum;
  }

  const detail::LatticeSetup& setup_;
  std::vector<float> narrow_[2];
  std::vector<double> wide_[2];
};

}  // namespace

PermeabilityResult permeability(const Mask& pore, int axis, const PermeabilityOptions& options,
                                const ComponentLabels* components6) {
  PermeabilityResult r;
  if (!detail::start_permeability(r, pore, axis, options, Backend::cpu, components6)) return r;
  const detail::LatticeSetup setup = detail::lattice_setup(pore, axis, options);
  HostLattice lattice(setup);
  detail::run_to_steady_state(r, lattice, setup.voxels, options);
  detail::finish_permeability(r, options);
  return r;
}

}  // namespace cpu
}  // namespace poreforge
