#include "poreforge/annealer/annealer.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <stdexcept>

#include "poreforge/correlation.hpp"
#include "poreforge/error.hpp"
#include "poreforge/io.hpp"
#include "poreforge/local_thickness.hpp"
#include "poreforge/measures.hpp"
#include "poreforge/memory.hpp"

#include "device_loop.hpp"
#ifdef POREFORGE_HAVE_CUDA
#include "poreforge/cuda_engine.hpp"
#endif
#include "poreforge/annealer/connectivity.hpp"

namespace poreforge::anneal {
namespace {

// Trial moves for T0 draw from steps far past any run's end, so they never reuse a run's draws.
constexpr uint64_t kTrialStepBase = uint64_t(1) << 62;

}  // namespace

namespace {

// The count terms' values of a structure from scratch (Objective::attach_counts's layout; 0
// for a term that is off): χ of the pore, the quanta of its interface's area over the cells
// inside the box, those cells by interface pattern, and the voxels by local porosity bin.
std::vector<int64_t> count_values(const Mask& pore, const Objective& o) {
  std::vector<int64_t> v(Objective::kCountValues, 0);
  if (o.euler.entries) v[0] = euler_characteristic(pore);
  if (o.surface.entries || o.patterns.entries) {
    const ConfigurationHistogram h = interior_configuration_histogram(pore);
    for (std::size_t c = 0; c < 256; ++c) {
      if (o.surface.entries) v[1] += h[c] * o.surface.quanta[c];
      if (o.patterns.entries && o.patterns.class_of[c] >= 0)
        v[Objective::kPatternsAt + std::size_t(o.patterns.class_of[c])] += h[c];
    }
  }
  if (o.local_porosity.entries) {
    const LocalPorosityHistogram h = local_porosity_histogram(pore);
    std::copy(h.counts.begin(), h.counts.end(), v.begin() + Objective::kLocalPorosityAt);
  }
  return v;
}

// Physical volume of the cells inside the box (their corners at the voxel centres): the
// surface term's count is over these.
double interior_volume(const Shape& s, const Spacing& sp) {
  return double(s.nx - 1) * double(s.ny - 1) * double(s.nz - 1) * sp.x * sp.y * sp.z;
}

// The chords term's layout on `shape` (no counts or target attached); `on`: the term is weighted
// (else it holds no entries and nothing is counted).
terms::Chords chord_layout(const Shape& shape, bool on) {
  terms::Chords ch;
  for (int a = 0; a < 3; ++a) {
    ch.extent[a] = shape.extent(a);
    ch.step[a] = a == 0 ? 1 : a == 1 ? shape.nx : shape.nx * shape.ny;
    ch.stride = std::max<int>(ch.stride, int(std::max<int64_t>(shape.extent(a) - 1, 1)));
  }
  ch.entries = on ? 6 * ch.stride : 0;
  return ch;
}

// The chords term's histograms of a structure from scratch, in terms::Chords's layout (empty
// when the term is off).
std::vector<int64_t> chord_counts(const Mask& pore, const terms::Chords& layout) {
  if (!layout.entries) return {};
  std::vector<int64_t> out(std::size_t(6 * layout.stride), 0);
  for (int p = 0; p < 2; ++p) {
    const ChordLengths chords = chord_lengths(pore, uint8_t(p));
    for (int a = 0; a < 3; ++a) {
      int64_t* h = out.data() + (2 * a + p) * layout.stride;
      const auto& from = chords.histogram[a];
      for (std::size_t l = 1; l < from.size() && l < std::size_t(layout.stride); ++l) {
        h[l] = from[l];
        h[0] += from[l];
      }
    }
  }
  return out;
}

// The voxels proposals leave alone when they keep the pore connected: every pore cluster but
// the largest (6-connected in the box) and the voxels around one (its 26-neighbourhood). Swaps
// then only reshape the largest, so the clusters the start holds apart stay as they are (a
// real sample's isolated pores and specks): none merges into the largest, none comes to touch
// it at an edge or corner either (26-connected, as `compare` also counts them, they would be
// one cluster) nor stops touching it where the start placed it so, and the sizes stay the
// same: a snapshot's structure gives the same set again.
// Empty when there is nothing to freeze.
std::vector<uint8_t> frozen_voxels(const Mask& pore, bool keep_pore_connected) {
  if (!keep_pore_connected) return {};
  const ComponentLabels c = label_components(pore, Adjacency::face6, Backend::cpu);
  if (c.count < 2) return {};
  const uint32_t largest = largest_component(c);
  const Shape shape = pore.shape();
  const int64_t extent[3] = {shape.nx, shape.ny, shape.nz};
  std::vector<uint8_t> frozen(std::size_t(shape.voxels()), 0);
  for (int64_t i = 0; i < shape.voxels(); ++i) {
    const uint32_t l = c.labels[std::size_t(i)];
    if (l && l != largest) for_each_in_cube(extent, i, [&](int64_t u) { frozen[std::size_t(u)] = 1; });
  }
  return frozen;
}

// Term k's normaliser from its squared error at the start: 1 where the start matches; for the
// count terms at least (1 %)² of relative error, so that a start that happens to sit on a
// count's target does not make a change of a few voxels outweigh every other term.
double normaliser(int k, double square) {
  if (k == kEuler || k == kSurface) return std::max(square, 1e-4);
  return square > 0 ? square : 1.0;
}

}  // namespace

Targets Targets::from_image(const Mask& pore, Boundary boundary, int bins, bool log, Backend backend) {
  Targets t;
  t.porosity = double(count_phase(pore)) / double(pore.voxels());
  const Mask solid = complement(pore);
  for (int phase = 0; phase < 2; ++phase) {
    const Mask& m = phase ? solid : pore;
    const Volume<float> map = local_thickness(m, boundary, backend);
    const Bins b = default_bins(map, m, bins, log);
    const auto psd = psd_from_thickness(map, m, b);
    (phase ? t.solid_edges : t.pore_edges) = psd.edges;
    (phase ? t.solid_psd : t.pore_psd) = psd.fraction;
    if (!phase && pore.shape().nx > 1 && pore.shape().ny > 1 && pore.shape().nz > 1) {
      // χ of the pore's openings at its PSD's edges, per volume of the inner cells.
      const double volume = interior_volume(pore.shape(), pore.spacing());
      for (int64_t eight : inner_euler8_of_openings(map, psd.edges))
        t.opening_euler_density.push_back(double(eight) / 8 / volume);
    }
  }
  const auto s2 = two_point_correlation(pore);
  t.s2 = {s2.directional.x, s2.directional.y, s2.directional.z};
  t.spacing = pore.spacing();
  t.largest_cluster_share = cluster_statistics(label_components(pore, Adjacency::face6, backend)).largest_share;
  const Spacing sp = pore.spacing();
  const Shape shape = pore.shape();
  t.euler_density = double(euler_characteristic(pore)) / (double(shape.voxels()) * sp.x * sp.y * sp.z);
  t.euler_occupancy = pattern_occupancy(pore);
  if (shape.nx > 1 && shape.ny > 1 && shape.nz > 1) {
    const ConfigurationHistogram h = interior_configuration_histogram(pore);
    double area = 0;
    for (std::size_t c = 0; c < 256; ++c) area += double(h[c]) * marching_cubes_area(int(c), sp);
    t.surface_density = area / interior_volume(shape, sp);
    const auto shares = interface_pattern_shares(h);
    t.pattern_shares.assign(shares.begin(), shares.end());
    double cells = 0, interface = 0;
    for (std::size_t c = 0; c < 256; ++c) {
      cells += double(h[c]);
      if (c != 0 && c != 255) interface += double(h[c]);
    }
    t.interface_cell_share = interface / cells;
  }
  if (shape.nx > 2 && shape.ny > 2 && shape.nz > 2) {
    const LocalPorosityHistogram h = local_porosity_histogram(pore);
    for (int64_t n : h.counts) t.local_porosity_shares.push_back(double(n) / double(h.voxels));
  }
  t.chord_spacing = sp;
  for (int p = 0; p < 2; ++p) {
    const ChordLengths chords = chord_lengths(pore, uint8_t(p));
    for (int a = 0; a < 3; ++a) {
      const int64_t n = pore.shape().extent(a);
      std::vector<double>& f = t.chords[a][p];
      f.assign(std::size_t(std::max<int64_t>(n - 1, 1)), 0.0);
      double sum = 0;
      for (int64_t l = 1; l + 2 <= n && l < int64_t(chords.histogram[a].size()); ++l) {
        f[std::size_t(l)] = double(chords.histogram[a][std::size_t(l)]) / double(n - 1 - l);
        sum += f[std::size_t(l)];
      }
      if (sum > 0)
        for (double& x : f) x /= sum;
    }
  }
  return t;
}

Targets Targets::from_descriptor_file(const std::string& path, const std::string& group,
                                      const std::string& porosity_attribute, const std::string& spacing_attribute) {
  Targets t;
  auto v = [&](const std::string& name) { return read_hdf5_vector(path, group + name); };
  if (!hdf5_has_object(path, group + "/psd/pore/edges"))
    throw InputError("'" + path + "' is not a descriptor file (it has no " + group +
                     "/psd/pore/edges; `poreforge describe` writes one)");
  t.porosity = read_hdf5_attribute(path, porosity_attribute);
  if (hdf5_has_attribute(path, spacing_attribute)) {  // files written before it was recorded: unit spacing
    const std::string spacing = read_hdf5_string_attribute(path, spacing_attribute);
    double xyz[3];
    if (std::sscanf(spacing.c_str(), "%lf,%lf,%lf", &xyz[0], &xyz[1], &xyz[2]) != 3)
      throw InputError("descriptor file '" + path + "': attribute '" + spacing_attribute + "' is not 'sx,sy,sz' (got '" +
                       spacing + "')");
    t.spacing = {xyz[0], xyz[1], xyz[2]};
    validate_spacing(t.spacing);
  }
  t.pore_edges = v("/psd/pore/edges");
  t.pore_psd = v("/psd/pore/fraction");
  t.solid_edges = v("/psd/solid/edges");
  t.solid_psd = v("/psd/solid/fraction");
  t.s2 = {v("/s2/directional/x"), v("/s2/directional/y"), v("/s2/directional/z")};
  if (group.empty() && hdf5_has_object(path, "/measures/largest_cluster_share_6"))
    t.largest_cluster_share = read_hdf5_vector(path, "/measures/largest_cluster_share_6").at(0);
  if (group.empty() && hdf5_has_object(path, "/measures/euler_density"))
    t.euler_density = read_hdf5_vector(path, "/measures/euler_density").at(0);
  if (group.empty() && hdf5_has_object(path, "/measures/specific_surface"))
    t.surface_density = read_hdf5_vector(path, "/measures/specific_surface").at(0);
  if (t.pore_edges.size() != t.pore_psd.size() + 1 || t.solid_edges.size() != t.solid_psd.size() + 1)
    throw InputError("descriptor file '" + path + "': PSD edges and fractions do not match in length");
  return t;
}

Targets Targets::at_spacing(const Spacing& grid) const {
  validate_spacing(grid);
  Targets t = *this;
  for (int a = 0; a < 3; ++a) {
    const double from = spacing.along(a), to = grid.along(a);
    if (from == to || s2[a].empty()) continue;
    const double last = double(s2[a].size() - 1);  // the reference's last lag, in its voxels
    std::vector<double> resampled;
    for (int64_t r = 0;; ++r) {
      const double at = double(r) * to / from;  // the grid's lag r in reference lags
      if (at > last) break;
      const auto below = std::size_t(at);
      const double frac = at - double(below);
      resampled.push_back(below + 1 < s2[a].size() ? (1 - frac) * s2[a][below] + frac * s2[a][below + 1] : s2[a][below]);
    }
    t.s2[a] = std::move(resampled);
  }
  if (!(grid == spacing)) {  // occupancies and patterns are the reference grid's
    t.euler_occupancy = PatternOccupancy{};
    t.pattern_shares.clear();
    t.interface_cell_share = 0;
    t.local_porosity_shares.clear();
  }
  t.spacing = grid;
  return t;
}

void validate(const Config& c) {
  validate_shape(c.shape);
  validate_spacing(c.spacing);
  const auto& s = c.schedule;
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw InputError(what);
  };
  require(c.targets.porosity > 0 && c.targets.porosity < 1,
          "target porosity must lie strictly between 0 and 1 (got " + std::to_string(c.targets.porosity) + ")");
  require(c.batch >= 0 && c.batch <= 4096,
          "annealing batch must lie in [0, 4096] (0: chosen as the run goes; got " + std::to_string(c.batch) + ")");
  Bins::from_edges(c.targets.pore_edges);  // strictly increasing, at least two
  if (!c.targets.solid_edges.empty()) Bins::from_edges(c.targets.solid_edges);
  require(c.targets.pore_psd.size() + 1 == c.targets.pore_edges.size(), "pore PSD target and its edges differ in length");
  const Weights& w = c.weights;
  require(w.pore_psd >= 0 && w.solid_psd >= 0 && w.s2 >= 0 && w.euler >= 0 && w.surface >= 0 && w.chords >= 0 &&
              w.openings >= 0 && w.patterns >= 0 && w.local_porosity >= 0,
          "weights must not be negative");
  require(w.pore_psd + w.solid_psd + w.s2 + w.euler + w.surface + w.chords + w.openings + w.patterns + w.local_porosity > 0,
          "at least one weight must be positive");
  // The texture terms: targets counted on the reference's grid, windows of `least` voxels a side.
  auto require_texture = [&](double weight, bool known, const std::string& name, const std::string& what,
                             int64_t least, const std::string& window) {
    require(weight == 0 || known, "a " + name + " weight needs the reference's " + what +
                                      " on the domain's grid: a 3D target image at the domain's voxel size (the "
                                      "domain has " + to_string(c.spacing) +
                                      "; descriptor files hold none, and a domain at another voxel size has none "
                                      "to count)");
    require(weight == 0 || (c.shape.nx >= least && c.shape.ny >= least && c.shape.nz >= least),
            "a " + name + " weight needs a domain of at least " + std::to_string(least) +
                " voxels along each axis (the term counts the box's " + window + ")");
  };
  require_texture(w.patterns, c.targets.pattern_shares.size() == std::size_t(kInterfacePatterns), "patterns",
                  "interface patterns", 2, "2x2x2 cells");
  // A box thinner than the neighbourhoods is counted too (its faces' voxels read again), but it
  // holds no cell of the reference's kind to aim at.
  require_texture(w.local_porosity, c.targets.local_porosity_shares.size() == std::size_t(kLocalPorosityBins),
                  "local_porosity", "local porosity", 3, "3x3x3 neighbourhoods");
  require(w.openings == 0 || c.targets.opening_euler_density.size() == c.targets.pore_edges.size(),
          "an openings weight needs the reference's Euler characteristic of its openings at the pore-PSD edges: a "
          "3D target image (descriptor files hold none)");
  require(w.euler == 0 || std::isfinite(c.targets.euler_density),
          "an Euler weight needs the reference's Euler characteristic (a target image, or a descriptor file from "
          "`describe --measures`)");
  require(w.surface == 0 || std::isfinite(c.targets.surface_density),
          "a surface weight needs the reference's specific surface (a target image, or a descriptor file from "
          "`describe --measures`)");
  require(w.surface == 0 || (c.shape.nx > 1 && c.shape.ny > 1 && c.shape.nz > 1),
          "a surface weight needs a 3D domain (the term is the interface's area over the box's 2x2x2 cells)");
  if (w.chords > 0) {
    bool known = true;
    for (const auto& axis : c.targets.chords) known = known && !axis[0].empty() && !axis[1].empty();
    require(known, "a chords weight needs the reference's chord lengths: a target image (descriptor files hold none)");
    for (int a = 0; a < 3; ++a)
      require(std::fabs(c.spacing.along(a) / c.targets.chord_spacing.along(a) - 1) < 1e-9,
              "a chords weight needs the domain's spacing equal to the reference's (chords are counted in voxels; "
              "the domain has " + to_string(c.spacing) + ", the reference " + to_string(c.targets.chord_spacing) + ")");
  }
  require(c.weights.solid_psd == 0 || !c.targets.solid_edges.empty(), "a solid-PSD weight needs a solid-PSD target");
  require(s.alpha > 0 && s.alpha < 1, "schedule alpha must lie strictly between 0 and 1 (got " + std::to_string(s.alpha) + ")");
  require(s.t0 >= 0, "schedule T0 must not be negative");
  require(s.t0 > 0 || (s.initial_acceptance > 0 && s.initial_acceptance < 1),
          "initial acceptance must lie strictly between 0 and 1 (got " + std::to_string(s.initial_acceptance) + ")");
  require(s.stage_length >= 1, "stage length must be at least 1");
  require(s.trial_moves >= 1, "trial moves must be at least 1");
  require(s.delta > 0, "Aarts-Korst delta must be positive");
  require(c.stopping.max_evaluations >= 1, "max evaluations must be at least 1");
  require(c.stopping.stall_stages >= 1, "stall stages must be at least 1");
  require(c.moves.interface_bias >= 0, "interface bias must not be negative");
  const int64_t pore = std::llround(c.targets.porosity * double(c.shape.voxels()));
  require(pore > 0 && pore < c.shape.voxels(), "the target porosity leaves one phase empty at shape " + to_string(c.shape));
  if (c.initial) {
    require(c.initial->shape() == c.shape, "the initial structure is " + to_string(c.initial->shape()) +
                                               ", not the configured shape " + to_string(c.shape));
    const int64_t have = count_phase(*c.initial);
    require(have == pore, "the initial structure has porosity " + std::to_string(double(have) / double(c.shape.voxels())) +
                              ", the target " + std::to_string(c.targets.porosity) + " (" + std::to_string(have) +
                              " pore voxels where " + std::to_string(pore) + " are needed)");
  }
}

std::string to_string(StopReason r) {
  switch (r) {
    case StopReason::none: return "running";
    case StopReason::max_evaluations: return "max_evaluations";
    case StopReason::energy_tolerance: return "energy_tolerance";
    case StopReason::no_improvement: return "no_improvement";
    case StopReason::time_limit: return "time_limit";
  }
  return "?";
}

Annealer::Annealer(Config config)
    : m_config((validate(config), std::move(config))),
      m_random(m_config.seed),
      m_pore(m_config.shape, m_config.spacing),
      m_pore_bins(Bins::from_edges(m_config.targets.pore_edges)) {
  if (!m_config.targets.solid_edges.empty()) m_solid_bins = Bins::from_edges(m_config.targets.solid_edges);
  const int64_t n = m_pore.voxels();
  if (m_config.initial) {
    for (int64_t i = 0; i < n; ++i) m_pore[i] = (*m_config.initial)[i] ? 1 : 0;
  } else {
    m_pore = random_start();
  }
  m_slot.resize(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    auto& list = m_voxels[m_pore[i]];
    m_slot[i] = int64_t(list.size());
    list.push_back(i);
  }
  make_evaluators();
  make_step();

  // Normalisers: each term's squared error at the start (1 where the start already matches).
  Objective& o = m_step.objective;
  const Energy start = score();  // normalisers still 1: the raw squared errors
  for (int k = 0; k < kTermCount; ++k) o.norm[k] = normaliser(k, start.term(k));
  Progress& p = m_state.progress;
  p.energy = score();
  p.best = p.energy;
  if (m_config.initial) {
    m_random_norm = normalisers(random_start());
  } else {
    for (int k = 0; k < kTermCount; ++k) m_random_norm[k] = o.norm[k];
  }

  // T0: given, or from the mean uphill ΔE of trial moves at the start (every trial undone).
  double t0 = m_config.schedule.t0;
  if (t0 == 0) {
    double uphill = 0;
    int count = 0;
    for (int k = 0; k < m_config.schedule.trial_moves; ++k) {
      const uint64_t step = kTrialStepBase + uint64_t(k);
      const int64_t to_solid = propose(m_step, 1, step, 0), to_pore = propose(m_step, 0, step, 1, to_solid);
      swap(to_solid, to_pore);
      const double de = score().total - p.energy.total;
      undo(to_solid, to_pore);
      if (de > 0) {
        uphill += de;
        ++count;
      }
    }
    t0 = count ? -(uphill / count) / std::log(m_config.schedule.initial_acceptance) : 1e-6;
  }
  p.temperature = t0;
  start_device_loop();
}

Annealer::Annealer(Config config, Snapshot snap)
    : m_config((validate(config), std::move(config))),
      m_random(m_config.seed),
      m_pore(std::move(snap.pore)),
      m_pore_bins(Bins::from_edges(m_config.targets.pore_edges)) {
  if (!m_config.targets.solid_edges.empty()) m_solid_bins = Bins::from_edges(m_config.targets.solid_edges);
  const int64_t n = m_config.shape.voxels();
  const int64_t pore = std::llround(m_config.targets.porosity * double(n));
  if (m_pore.shape() != m_config.shape || int64_t(snap.pore_voxels.size()) != pore ||
      int64_t(snap.solid_voxels.size()) != n - pore || count_phase(m_pore) != pore)
    throw InputError("the snapshot does not match the configuration (shape or porosity differ)");
  m_pore.set_spacing(m_config.spacing);
  m_voxels = {std::move(snap.solid_voxels), std::move(snap.pore_voxels)};
  m_slot.assign(static_cast<std::size_t>(n), -1);
  for (int which = 0; which < 2; ++which)
    for (std::size_t k = 0; k < m_voxels[which].size(); ++k) {
      const int64_t v = m_voxels[which][k];
      if (v < 0 || v >= n || m_pore[v] != which || m_slot[v] >= 0)
        throw InputError("the snapshot's voxel lists do not match its structure");
      m_slot[v] = int64_t(k);
    }
  make_evaluators();
  m_stage_energies = std::move(snap.stage_energies);
  make_step();
  m_state.progress = snap.progress;
  m_state.progress.stopped = StopReason::none;  // a new evaluation budget may let it go on
  m_state.stall = snap.stall;
  for (int k = 0; k < kTermCount; ++k) m_step.objective.norm[k] = snap.norm[k];
  m_random_norm = normalisers(random_start());
  start_device_loop();
}

Annealer::~Annealer() = default;
#ifndef POREFORGE_HAVE_CUDA
// A build without CUDA never makes a device loop, but the pointer that would hold one still
// names its destructor.
struct detail::DeviceLoop::Impl {};
detail::DeviceLoop::~DeviceLoop() = default;
#endif
Annealer::Annealer(Annealer&&) = default;
Annealer& Annealer::operator=(Annealer&&) = default;

bool Annealer::runs_on_device() const { return m_backend == Backend::cuda && !m_config.host_loop; }

void Annealer::start_device_loop() {
  if (!runs_on_device()) return;
#ifdef POREFORGE_HAVE_CUDA
  // The evaluators (the start's energy and the trial moves) hand their engine contexts to the
  // device loop, which goes on with them.
  m_device = std::make_unique<detail::DeviceLoop>(m_config, snapshot(), counts(), m_step, std::move(m_pore_evaluator),
                                                  std::move(m_solid_evaluator));
#endif
}

const Mask& Annealer::structure() const {
#ifdef POREFORGE_HAVE_CUDA
  if (m_device && m_stale) {
    m_pore = m_device->structure();
    m_counts = m_device->counts();
    m_stale = false;
  }
#endif
  return m_pore;
}

const DirectionalCounts& Annealer::counts() const {
  if (m_device) {
    structure();  // refreshes both host copies
    return m_counts;
  }
  const terms::S2& t = m_step.objective.s2;
  std::array<std::vector<int64_t>, 3> axes;
  for (int a = 0; a < 3; ++a) {
    const auto from = m_s2_counts.begin() + t.offset[a];
    axes[a].assign(from, from + (t.extent[a] / 2 + 1));
  }
  m_counts = DirectionalCounts(m_config.shape, std::move(axes));
  return m_counts;
}

Snapshot Annealer::snapshot() const {
#ifdef POREFORGE_HAVE_CUDA
  if (m_device) return m_device->snapshot();
#endif
  Snapshot s;
  s.pore = m_pore;
  s.solid_voxels = m_voxels[0];
  s.pore_voxels = m_voxels[1];
  s.progress = m_state.progress;
  s.stall = m_state.stall;
  s.stage_energies.assign(m_stage_energies.begin(), m_stage_energies.begin() + std::ptrdiff_t(m_state.stage_count));
  for (int k = 0; k < kTermCount; ++k) s.norm[k] = m_step.objective.norm[k];
  return s;
}

void Annealer::make_evaluators() {
  const auto& w = m_config.weights;
  // The openings term reads the pore evaluator's counts too, which only the CPU keeps: `automatic`
  // takes the CPU for it.
  const bool pore_counts = w.pore_psd > 0 || w.openings > 0;
  const Backend asked = w.openings > 0 && m_config.backend == Backend::automatic ? Backend::cpu : m_config.backend;
  m_backend = pore_counts || w.solid_psd > 0 ? resolve_backend(asked, Operation::pore_size_distribution) : Backend::cpu;
  if (w.openings > 0 && m_backend != Backend::cpu)
    throw InputError("an openings weight needs the CPU backend: its counts are kept by the CPU's local evaluation "
                     "only (backend cpu or auto)");
  const auto make = [&](const Mask& phase, const Bins& bins) {
#ifdef POREFORGE_HAVE_CUDA
    // The device loop goes on with these evaluators' contexts, which must then have room for
    // any structure the loop may reach (start_device_loop).
    if (runs_on_device()) return cuda::make_psd_evaluator(phase, m_config.boundary, bins, 1.0);
#endif
    return make_psd_evaluator(phase, m_config.boundary, bins, m_backend);
  };
  if (pore_counts) m_pore_evaluator = make(m_pore, m_pore_bins);
  if (w.openings > 0) m_pore_evaluator->count_openings();
  if (w.solid_psd > 0) m_solid_evaluator = make(complement(m_pore), *m_solid_bins);
}

Step detail::step_of(const Config& c) {
  Step st;
  const Shape shape = c.shape;
  st.extent[0] = shape.nx;
  st.extent[1] = shape.ny;
  st.extent[2] = shape.nz;
  st.stride[0] = 1;
  st.stride[1] = shape.nx;
  st.stride[2] = shape.nx * shape.ny;
  st.periodic = c.boundary == Boundary::periodic;
  st.interface_bias = c.moves.interface_bias;
  st.keep_pore_connected = c.moves.keep_pore_connected;
  st.random = Philox(c.seed);
  const auto& t = c.targets;
  const auto& w = c.weights;
  Objective& o = st.objective;
  o.weight[kPorePsd] = w.pore_psd;
  o.weight[kSolidPsd] = w.solid_psd;
  o.weight[kS2] = w.s2;
  o.weight[kEuler] = w.euler;
  o.weight[kSurface] = w.surface;
  o.weight[kChords] = w.chords;
  o.weight[kOpenings] = w.openings;
  o.weight[kPatterns] = w.patterns;
  o.weight[kLocalPorosity] = w.local_porosity;
  o.chords = chord_layout(shape, w.chords > 0);
  o.openings.entries = w.openings > 0 ? int(t.pore_edges.size()) : 0;
  // The count terms' targets on this grid: the χ a box of this shape holds, or the reference's
  // density times its volume; the surface's density times its inner cells' volume, in the
  // table's quanta.
  const Spacing sp = c.spacing;
  const double volume = double(shape.voxels()) * sp.x * sp.y * sp.z;
  o.euler.entries = w.euler > 0 ? 1 : 0;
  if (w.euler > 0)
    o.euler.target = t.euler_occupancy.known ? expected_euler_characteristic(t.euler_occupancy, shape)
                                             : t.euler_density * volume;
  o.surface.entries = w.surface > 0 ? 1 : 0;
  o.surface.target = w.surface > 0 ? t.surface_density * interior_volume(shape, sp) / surface_quanta(sp).quantum : 0.0;
  terms::Patterns& pt = o.patterns;
  pt.entries = w.patterns > 0 ? kInterfacePatterns : 0;
  for (int k = 0; k < 256; ++k) pt.class_of[k] = int8_t(interface_pattern(k));
  if (w.patterns > 0) {
    // The reference's shares of its interface cells, of its inner cells, times this box's.
    const double cells = double(shape.nx - 1) * double(shape.ny - 1) * double(shape.nz - 1);
    double sum = 0;
    for (int k = 0; k < kInterfacePatterns; ++k)
      sum += pt.target[k] = t.pattern_shares[std::size_t(k)] * t.interface_cell_share * cells;
    pt.scale = sum > 0 ? sum : 1.0;
  }
  terms::LocalPorosity& lp = o.local_porosity;
  lp.entries = w.local_porosity > 0 ? kLocalPorosityBins : 0;
  if (w.local_porosity > 0) {
    const double voxels = double(shape.voxels());
    double sum = 0;
    for (int b = 0; b < kLocalPorosityBins; ++b) sum += lp.target[b] = t.local_porosity_shares[std::size_t(b)] * voxels;
    lp.scale = sum > 0 ? sum : 1.0;
  }
  o.pore_psd.bins = int(t.pore_edges.size()) - 1;
  o.pore_psd.entries = w.pore_psd > 0 ? std::min(o.pore_psd.bins, int(t.pore_psd.size())) : 0;
  o.solid_psd.bins = t.solid_edges.empty() ? 0 : int(t.solid_edges.size()) - 1;
  o.solid_psd.entries = w.solid_psd > 0 ? std::min(o.solid_psd.bins, int(t.solid_psd.size())) : 0;
  terms::S2& s2 = o.s2;
  s2 = terms::s2_layout(shape);
  for (int a = 0; a < 3; ++a)
    s2.len[a] = int(std::min<std::size_t>(t.s2[a].size(), std::size_t(shape.extent(a) / 2 + 1)));
  s2.entries = w.s2 > 0 ? s2.len[0] + s2.len[1] + s2.len[2] : 0;
  Cooling& k = st.cooling;
  k.aarts_korst = c.schedule.kind == Schedule::Kind::aarts_korst;
  k.alpha = c.schedule.alpha;
  k.log_one_plus_delta = std::log(1 + c.schedule.delta);
  k.stage_length = c.schedule.stage_length;
  k.max_evaluations = c.stopping.max_evaluations;
  k.stall_stages = c.stopping.stall_stages;
  k.energy_tolerance = c.stopping.energy_tolerance;
  return st;
}

detail::SurfaceQuanta detail::surface_quanta(const Spacing& spacing) {
  SurfaceQuanta q;
  q.quantum = std::min({spacing.x * spacing.y, spacing.y * spacing.z, spacing.x * spacing.z}) / 65536.0;
  q.quanta.resize(256);
  for (int c = 0; c < 256; ++c) q.quanta[std::size_t(c)] = std::llround(marching_cubes_area(c, spacing) / q.quantum);
  return q;
}

std::vector<double> detail::chord_target(const Targets& targets, const terms::Chords& layout) {
  // The reference's frequencies times the chances n − 1 − l that a chord of l voxels fits
  // between this box's faces, as shares of each (axis, phase)'s chords.
  if (!layout.entries) return {};
  std::vector<double> out(std::size_t(6 * layout.stride), 0.0);
  for (int a = 0; a < 3; ++a)
    for (int p = 0; p < 2; ++p) {
      const std::vector<double>& f = targets.chords[a][p];
      double* t = out.data() + (2 * a + p) * layout.stride;
      const int64_t n = layout.extent[a];
      double sum = 0;
      for (int64_t l = 1; l + 2 <= n && l < int64_t(f.size()); ++l) sum += t[l] = f[std::size_t(l)] * double(n - 1 - l);
      if (sum > 0)
        for (int64_t l = 1; l < layout.stride; ++l) t[l] /= sum;
    }
  return out;
}

std::vector<double> detail::s2_target(const Config& c, const terms::S2& s2) {
  std::vector<double> out;
  for (int a = 0; a < 3; ++a) out.insert(out.end(), c.targets.s2[a].begin(), c.targets.s2[a].begin() + s2.len[a]);
  return out;
}

void Annealer::make_step() {
  m_step = detail::step_of(m_config);
  Objective& o = m_step.objective;
  // S2 counts from scratch, flat.
  const DirectionalCounts counts(m_pore);
  m_s2_counts.clear();
  for (int a = 0; a < 3; ++a) m_s2_counts.insert(m_s2_counts.end(), counts.counts(a).begin(), counts.counts(a).end());
  m_s2_delta.assign(m_s2_counts.size(), 0);
  m_s2_target = detail::s2_target(m_config, o.s2);
  o.s2.counts = m_s2_counts.data();
  o.s2.delta = m_s2_delta.data();
  o.s2.target = m_s2_target.data();
  m_surface_quanta = detail::surface_quanta(m_config.spacing).quanta;
  o.surface.quanta = m_surface_quanta.data();
  m_count_values = count_values(m_pore, o);
  o.attach_counts(m_count_values.data());
  m_chord_counts = chord_counts(m_pore, o.chords);
  m_chord_target = detail::chord_target(m_config.targets, o.chords);
  o.chords.counts = m_chord_counts.empty() ? nullptr : m_chord_counts.data();
  o.chords.target = m_chord_target.data();
  // The openings' targets on this grid: the reference's densities times this box's inner cells'
  // volume, in eighths as the pore evaluator counts them (score_of).
  const double volume = interior_volume(m_config.shape, m_config.spacing);
  m_opening_target.clear();
  if (o.openings.entries)
    for (double density : m_config.targets.opening_euler_density) m_opening_target.push_back(8 * density * volume);
  m_opening_values.assign(std::size_t(o.openings.entries), 0);
  o.openings.value = m_opening_values.data();
  o.openings.target = m_opening_target.data();
  m_frozen = frozen_voxels(m_pore, m_config.moves.keep_pore_connected);
  m_step.frozen = m_frozen.empty() ? nullptr : m_frozen.data();
  // A phase with every voxel frozen could never be proposed: refuse rather than search forever.
  if (!m_frozen.empty())
    for (int which = 0; which < 2; ++which) {
      const auto& list = m_voxels[std::size_t(which)];
      if (std::all_of(list.begin(), list.end(), [&](int64_t v) { return m_frozen[std::size_t(v)] != 0; }))
        throw InputError(std::string("keep_pore_connected: every ") + (which ? "pore" : "solid") +
                         " voxel touches a pore cluster other than the largest, so no swap can keep the clusters "
                         "apart (a start of many small clusters, such as white noise or a checkerboard); use a "
                         "connected start or moves.keep_pore_connected: false");
    }
  terms::Psd* psd[2] = {&o.pore_psd, &o.solid_psd};
  const std::vector<double>* target[2] = {&m_config.targets.pore_psd, &m_config.targets.solid_psd};
  for (int k = 0; k < 2; ++k) {
    m_psd_counts[k].assign(std::size_t(terms::psd_count_entries(psd[k]->bins)), 0);
    psd[k]->counts = m_psd_counts[k].data();
    psd[k]->target = target[k]->data();
  }
  m_squares.assign(std::size_t(o.entries()), 0.0);
  const std::size_t in_stage = m_stage_energies.size();  // a snapshot's, when resuming
  m_stage_energies.resize(std::size_t(m_config.schedule.stage_length) + in_stage);
  m_state.stage_count = int64_t(in_stage);
  m_step.pore = m_pore.data();
  m_step.solid = nullptr;  // the evaluators keep their own masks
  for (int which = 0; which < 2; ++which) {
    m_step.list[which] = m_voxels[which].data();
    m_step.list_size[which] = int64_t(m_voxels[which].size());
  }
  m_step.slot = m_slot.data();
  m_step.stage_energies = m_stage_energies.data();
}

// The host loop's state as a step changes and scores it: an annealer's own, or a replica's
// (host_batch). The functions below are the host side of step.hpp's.
struct detail::HostState {
  Step* step;
  PsdEvaluator* evaluator[2];  // pore, solid; null when the term is off
  int64_t* psd_counts[2];
  int64_t* opening_values;  // null when the openings term is off
  double* squares;
};

namespace {

// The two voxels that changed phase, told to the evaluators.
void tell_evaluators(const detail::HostState& c, int64_t now_solid, int64_t now_pore) {
  if (c.evaluator[0]) {
    c.evaluator[0]->set(now_solid, 0);
    c.evaluator[0]->set(now_pore, 1);
  }
  if (c.evaluator[1]) {
    c.evaluator[1]->set(now_solid, 1);
    c.evaluator[1]->set(now_pore, 0);
  }
}

void swap_in(const detail::HostState& c, int64_t to_solid, int64_t to_pore) {
  apply_swap(*c.step, to_solid, to_pore);
  const terms::S2& s2 = c.step->objective.s2;
  for (int e = 0; e < s2.count_entries; ++e) s2.apply(c.step->pore, e, to_solid, to_pore);
  tell_evaluators(c, to_solid, to_pore);
}

// A replica takes the swap the chain accepted (scored on another thread): its evaluators keep
// it as their new state, from what the scoring evaluators found where that was from this state
// (`scoring`, pore and solid), else evaluating it. Counted in `taken`.
void take_in(const detail::HostState& c, const detail::TakenSwap& swap, detail::Takes& taken) {
  swap_in(c, swap.to_solid, swap.to_pore);
  bool written = true;
  for (int k = 0; k < 2; ++k)
    if (c.evaluator[k]) written = c.evaluator[k]->settle_with(swap.scoring[std::size_t(k)]) && written;
  ++taken.swaps;
  taken.from_findings += written;
}

// The swap `c` just scored, with what its evaluators found.
detail::TakenSwap scored_swap(const detail::HostState& c, int64_t to_solid, int64_t to_pore) {
  detail::TakenSwap swap{to_solid, to_pore, {}};
  for (int k = 0; k < 2; ++k)
    if (c.evaluator[k]) swap.scoring[std::size_t(k)] = c.evaluator[k]->last_scoring();
  return swap;
}

void undo_in(const detail::HostState& c, int64_t to_solid, int64_t to_pore) {
  undo_swap(*c.step, to_solid, to_pore);
  const terms::S2& s2 = c.step->objective.s2;
  for (int e = 0; e < s2.count_entries; ++e) s2.undo(e);
  tell_evaluators(c, to_pore, to_solid);
}

Energy score_of(const detail::HostState& c) {
  for (int k = 0; k < 2; ++k) {
    if (!c.evaluator[k]) continue;
    const PsdCounts counts = c.evaluator[k]->counts();
    terms::flatten(counts, c.psd_counts[k]);
    if (k == 0 && c.opening_values) std::copy(counts.opening_euler.begin(), counts.opening_euler.end(), c.opening_values);
  }
  const Objective& o = c.step->objective;
  const int n = o.entries();
  for (int j = 0; j < n; ++j) c.squares[j] = o.square(j);
  return o.combine(c.squares);
}

// The candidate's energy with the swap made; a throw while scoring leaves the state as before.
Energy swap_and_score(const detail::HostState& c, int64_t to_solid, int64_t to_pore) {
  swap_in(c, to_solid, to_pore);
  try {
    return score_of(c);
  } catch (...) {
    undo_in(c, to_solid, to_pore);
    throw;
  }
}

// When the batch size is automatic (batch_size), batches are tried only on more than one
// thread and while the expected run of rejections is at least kBatchedRun (shorter, a batch
// takes little more than its first proposal). Then whichever of one at a time and batches has
// been faster lately (wall time per evaluation the chain took) is taken, and the other for the
// last kProbeLength of every kProbeEvery choices so that its figure keeps up: measured, not
// modelled, because where batches pay depends on the cores, the volume and the structure
// (docs/local-evaluation.md has the figures). The first kWarmChoices after a change of way are
// not timed (the way left out has its tables out of the caches).
constexpr double kBatchedRun = 4;
// Automatic batches: at most this many threads (they share the caches), and as many
// proposals ahead of the chain as twice the expected run of rejections, at least two a thread
// (a thread that finds every proposal within the window claimed waits: fewer, and the threads
// wait behind a slow one; more, and most are dropped), at most kMostAutomaticWindow
// (docs/local-evaluation.md has the measurements).
constexpr int kMostAutomaticThreads = 8;
constexpr int64_t kMostAutomaticWindow = 64;
// A pipeline runs for this many batches' proposals before the way is chosen again: its start
// and its end (the proposals in flight, dropped) cost about one proposal a thread.
constexpr int64_t kPipelineWindows = 64;
constexpr int64_t kProbeEvery = 1024, kProbeLength = 64, kWarmChoices = 16;
// A proposal's cost is heavy-tailed (most regions are small, a few span large pores): each way's
// figure is its time over its evaluations, both sums fading by this factor a sample, not an
// average of per-sample rates that one slow proposal would swing.
constexpr double kTimeKept = 0.98;
// Swaps accepted one at a time that the replicas may fall behind by before they are dropped:
// catching up costs a few writes a swap (a local evaluation where its findings were let go),
// and beyond this many, copying the state again (its maps and voxel lists) likely costs less.
constexpr int64_t kMostBehind = 1024;

}  // namespace

detail::HostState Annealer::host_state() {
  return {&m_step,
          {m_pore_evaluator.get(), m_solid_evaluator.get()},
          {m_psd_counts[0].data(), m_psd_counts[1].data()},
          m_opening_values.empty() ? nullptr : m_opening_values.data(),
          m_squares.data()};
}

Energy Annealer::score() { return score_of(host_state()); }

Energy Annealer::energy_from_scratch(const Mask& pore, const Norms& norm) const {
  // Every term recounted: S2 and the count terms counted afresh, PSDs by a fresh evaluator of
  // the structure.
  Objective o = m_step.objective;
  for (int k = 0; k < kTermCount; ++k) o.norm[k] = norm[k];
  std::vector<int64_t> values = count_values(pore, o);
  o.attach_counts(values.data());
  std::vector<int64_t> chords = chord_counts(pore, o.chords);
  o.chords.counts = chords.empty() ? nullptr : chords.data();
  const DirectionalCounts counts(pore);
  std::vector<int64_t> s2;
  for (int a = 0; a < 3; ++a) s2.insert(s2.end(), counts.counts(a).begin(), counts.counts(a).end());
  o.s2.counts = s2.data();
  std::array<std::vector<int64_t>, 2> psd;
  std::vector<int64_t> openings;
  terms::Psd* term[2] = {&o.pore_psd, &o.solid_psd};
  for (int k = 0; k < 2; ++k) {
    const bool with_openings = k == 0 && o.openings.entries;
    if (!term[k]->entries && !with_openings) continue;
    const Bins& bins = k ? *m_solid_bins : m_pore_bins;
    const auto e = make_psd_evaluator(k ? complement(pore) : pore, m_config.boundary, bins, backend());
    if (with_openings) e->count_openings();
    const PsdCounts evaluated = e->counts();
    psd[k].resize(std::size_t(terms::psd_count_entries(term[k]->bins)));
    terms::flatten(evaluated, psd[k].data());
    term[k]->counts = psd[k].data();
    if (with_openings) {
      openings = evaluated.opening_euler;
      o.openings.value = openings.data();
    }
  }
  std::vector<double> squares(std::size_t(o.entries()));
  for (std::size_t j = 0; j < squares.size(); ++j) squares[j] = o.square(int(j));
  return o.combine(squares.data());
}

Energy Annealer::evaluate_from_scratch() const {
  const Objective& o = m_step.objective;
  Norms norm;
  for (int k = 0; k < kTermCount; ++k) norm[k] = o.norm[k];
  return energy_from_scratch(structure(), norm);
}

Norms Annealer::normalisers(const Mask& pore) const {
  const Energy e = energy_from_scratch(pore, unit_norms());
  Norms norm;
  for (int k = 0; k < kTermCount; ++k) norm[k] = normaliser(k, e.term(k));
  return norm;
}

Mask Annealer::random_start() const {
  // A seeded shuffle (Fisher–Yates on Philox draws of counters below the trial moves'), exact
  // porosity: the same structure for the same seed, whenever it is drawn.
  const int64_t n = m_config.shape.voxels();
  const int64_t pore = std::llround(m_config.targets.porosity * double(n));
  std::vector<int64_t> order(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  for (int64_t i = n - 1; i > 0; --i) {
    const PhiloxBlock w = m_random.draw(kTrialStepBase - 1 - uint64_t(i), 0);
    std::swap(order[i], order[Philox::below(w[0], w[1], uint64_t(i + 1))]);
  }
  Mask m(m_config.shape, m_config.spacing);
  for (int64_t k = 0; k < pore; ++k) m[order[k]] = 1;
  return m;
}

double Annealer::energy_against_random_start() const {
  const Energy& e = m_state.progress.energy;
  const Objective& o = m_step.objective;
  double total = 0;
  for (int k = 0; k < kTermCount; ++k) total += o.weight[k] * e.term(k) * o.norm[k] / m_random_norm[k];
  return total;
}

void Annealer::swap(int64_t to_solid, int64_t to_pore) { swap_in(host_state(), to_solid, to_pore); }

void Annealer::undo(int64_t to_solid, int64_t to_pore) { undo_in(host_state(), to_solid, to_pore); }

// A copy of the host loop's state with buffers of its own (the targets and the frozen voxels,
// which never change, are shared): its Step scores proposals on another thread.
struct Annealer::Replica {
  Mask pore;
  std::array<std::vector<int64_t>, 2> voxels;
  std::vector<int64_t> slot, s2_counts, s2_delta, count_values, chord_counts, opening_values;
  std::array<std::vector<int64_t>, 2> psd_counts;
  std::vector<double> squares;
  std::unique_ptr<PsdEvaluator> evaluator[2];
  Step step;
  int64_t upto = 0;  // the backlog's swaps it has taken: those numbered below this
  detail::Takes taken;

  detail::HostState host_state() {
    return {&step,
            {evaluator[0].get(), evaluator[1].get()},
            {psd_counts[0].data(), psd_counts[1].data()},
            opening_values.empty() ? nullptr : opening_values.data(),
            squares.data()};
  }
};

std::unique_ptr<Annealer::Replica> Annealer::replica() const {
  auto r = std::make_unique<Replica>();
  r->upto = m_backlog.pushed();  // this state as it is now
  r->pore = m_pore;
  r->voxels = m_voxels;
  r->slot = m_slot;
  r->s2_counts = m_s2_counts;
  r->s2_delta = m_s2_delta;
  r->count_values = m_count_values;
  r->chord_counts = m_chord_counts;
  r->opening_values = m_opening_values;
  r->psd_counts = m_psd_counts;
  r->squares = m_squares;
  // CPU evaluators whatever the run's backend (the counts are the same exact integers on both):
  // copies of this state's, maps and all, where those are CPU ones (one made afresh evaluates
  // the whole structure at its first proposal: seconds at 256³).
  const auto cpu_evaluator = [&](const PsdEvaluator& own, bool solid, const Bins& bins) {
    std::unique_ptr<PsdEvaluator> e = own.backend() == Backend::cpu ? own.copy() : nullptr;
    if (e) return e;
    e = make_psd_evaluator(solid ? complement(r->pore) : r->pore, m_config.boundary, bins, Backend::cpu);
    if (!solid && m_step.objective.openings.entries) e->count_openings();
    return e;
  };
  if (m_pore_evaluator) r->evaluator[0] = cpu_evaluator(*m_pore_evaluator, false, m_pore_bins);
  if (m_solid_evaluator) r->evaluator[1] = cpu_evaluator(*m_solid_evaluator, true, *m_solid_bins);
  Step& st = r->step;
  st = m_step;
  st.pore = r->pore.data();
  for (int which = 0; which < 2; ++which) st.list[which] = r->voxels[std::size_t(which)].data();
  st.slot = r->slot.data();
  st.stage_energies = nullptr;  // the chain's bookkeeping stays with the annealer
  Objective& o = st.objective;
  o.s2.counts = r->s2_counts.data();
  o.s2.delta = r->s2_delta.data();
  o.attach_counts(r->count_values.data());
  o.chords.counts = r->chord_counts.empty() ? nullptr : r->chord_counts.data();
  o.openings.value = r->opening_values.data();
  o.pore_psd.counts = r->psd_counts[0].data();
  o.solid_psd.counts = r->psd_counts[1].data();
  return r;
}

void Annealer::stop(StopReason reason) {
  if (reason == StopReason::none) throw std::invalid_argument("Annealer::stop needs a reason");
  if (m_state.progress.stopped == StopReason::none) m_state.progress.stopped = reason;
}

bool Annealer::step() {
  if (!m_device) return host_step();
  const int64_t accepted = m_state.progress.accepted;
  advance(1);
  return m_state.progress.accepted > accepted;
}

const Progress& Annealer::advance(int64_t steps) {
  Progress& p = m_state.progress;
  if (p.stopped != StopReason::none) return p;  // the device loop's own state may not know
#ifdef POREFORGE_HAVE_CUDA
  if (m_device) {
    m_device->advance(steps);
    p = m_device->progress();
    m_stale = true;
    return p;
  }
#endif
  for (int64_t k = 0; k < steps && p.stopped == StopReason::none;) k += host_batch(steps - k);
  return p;
}

int64_t Annealer::proposals_at_once() const {
  if (m_device) return 1;
  const int64_t k = batch_size();
  return k > 1 ? pipeline_length(k) : 1;
}

bool Annealer::batches_faster() const {
  if (m_batched.evaluations == 0) return true;  // not timed yet: tried
  return m_batched.per_evaluation() < m_one_at_a_time.per_evaluation();
}

// A pipeline runs kPipelineWindows windows, or one while batches are the slower way (a probe
// of them, which should cost the run as little as the probes of one at a time do).
int64_t Annealer::pipeline_length(int64_t window) const {
  return batches_faster() ? kPipelineWindows * window : window;
}

int64_t Annealer::batch_size() const {
  if (m_config.batch > 0) return m_config.batch;
  // One at a time a proposal has the one thread; in batches each has its own, and every replica
  // takes each accepted swap from what its scoring found. Batches when they have been the
  // faster lately.
  const int threads = std::min(omp_get_max_threads(), kMostAutomaticThreads);
  const double run = 1.0 / std::max(m_acceptance, 1e-9);
  if (threads < 2 || run < kBatchedRun || m_most_replicas == 0) return 1;
  const int64_t k = std::clamp<int64_t>(int64_t(2 * run), 2 * threads, kMostAutomaticWindow);
  if (m_batched.evaluations == 0) return k;  // not timed yet: tried
  const bool probe = m_batch_choices % kProbeEvery >= kProbeEvery - kProbeLength;
  return batches_faster() != probe ? k : 1;
}

int64_t Annealer::host_batch(int64_t most) {
  // The way chosen, not the size `most` cuts it to (a report due): a batch cut to one proposal
  // is not a change of way, nor timed.
  const int64_t size = batch_size(), k = std::min(size, most);
  const bool batched = size > 1, after_single_steps = batched && !m_last_batched;
  m_same_way = m_batch_choices > 0 && batched == m_last_batched ? m_same_way + 1 : 0;
  m_last_batched = batched;
  ++m_batch_choices;
  const bool warm = m_same_way >= kWarmChoices && k == size;
  // Wall time per evaluation taken, one at a time and in batches: batch_size's choice (never
  // the chain's, which is the same either way).
  const auto started = std::chrono::steady_clock::now();
  const auto timed = [&](WallTime& w, int64_t evaluations) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    w.seconds = kTimeKept * w.seconds + s;
    w.evaluations = kTimeKept * w.evaluations + double(evaluations);
  };
  if (k > 1) {
    // A thread a replica (this annealer's own state the first), as many as the batch and half
    // the host's free memory allow (unknown memory: no limit).
    if (m_most_replicas < 0) {
      const double room = 0.5 * host_memory_available() /
                          (memory_per_voxel::run_cpu_replica * double(m_config.shape.voxels()));
      m_most_replicas = int64_t(std::clamp(room, 0.0, double(omp_get_max_threads())));
    }
    const int64_t most_threads = m_config.batch > 0 ? k : kMostAutomaticThreads;
    const int threads = int(std::min<int64_t>({k, most_threads, omp_get_max_threads(), m_most_replicas + 1}));
    if (threads > 1) {
      // Batches that make replicas (a copy of the maps each, or a first evaluation from scratch
      // on the CUDA backend's host loop), or whose replicas first catch up on swaps taken one at
      // a time, are not timed: that cost is neither way's own.
      const bool made = int64_t(m_replicas.size()) < threads - 1;
      while (int64_t(m_replicas.size()) < threads - 1) m_replicas.push_back(replica());
      const int64_t taken = pipeline(std::min(most, pipeline_length(k)), k, threads);
      if (warm && !made && !after_single_steps) timed(m_batched, taken);
      return taken;
    }
  }
  note_acceptance(host_step());
  if (warm) timed(m_one_at_a_time, 1);
  return 1;
}

// Proposals first, first + 1, … (first: the evaluations so far) are claimed in order by the
// threads, each scored by its thread's state (this annealer's own the first, then the replicas)
// as the chain stands when it is claimed, at most `window` ahead of the chain, and undone. The
// thread that posts a score takes the chain on as far as the scores in order allow, as one at a
// time would take it (Metropolis, then end_evaluation); an accepted swap goes into the
// backlog, the scores after it (made on the state before it) are dropped, and the claims start
// again after it. A state takes the backlog's swaps it has not (from their scorings' findings)
// when it claims. No thread waits for a batch's slowest proposal, only for a proposal to claim:
// a proposal's cost is heavy-tailed, and a barrier after every batch kept every thread waiting
// on its slowest region (docs/local-evaluation.md has the measurements).
int64_t Annealer::pipeline(int64_t length, int64_t window, int threads) {
  struct Scored {
    int64_t proposal = -1;  // -1: an empty slot
    int64_t to_solid = -1, to_pore = -1;
    Energy energy;
    detail::TakenSwap taken;  // with its scoring, should the chain take it
  };
  struct Worker {
    detail::HostState state;
    detail::Takes* takes;
    int64_t* upto;  // the backlog's swaps its state has taken: those numbered below this
    bool failed = false;
  };
  int64_t own_upto = m_backlog.pushed();  // this state's: it is behind only within a pipeline
  std::vector<Worker> workers;
  workers.push_back({host_state(), &m_taken, &own_upto});
  for (int t = 1; t < threads; ++t) {
    Replica& r = *m_replicas[std::size_t(t - 1)];
    workers.push_back({r.host_state(), &r.taken, &r.upto});
  }
  // The replicas without a thread this time (a smaller batch than before) keep their backlog.
  int64_t idle_upto = m_backlog.pushed();
  for (std::size_t i = std::size_t(threads - 1); i < m_replicas.size(); ++i)
    idle_upto = std::min(idle_upto, m_replicas[i]->upto);

  std::mutex mutex;  // guards everything below and the chain's state (m_state, the backlog)
  std::condition_variable wake;
  std::vector<Scored> slots(static_cast<std::size_t>(window));  // proposal p in slot p % window
  std::vector<int64_t> orphans;  // claims of replicas that failed, to be claimed again
  int64_t next = 0, chain = 0, scored = 0;
  bool done = false;
  std::exception_ptr error;
  const uint64_t first = uint64_t(m_state.progress.evaluations);
  StepState& s = m_state;

  // Under the lock: the chain takes the scores in order, up to the first missing one.
  const auto take_chain_on = [&] {
    for (;;) {
      Scored& slot = slots[std::size_t(chain % window)];
      if (done || slot.proposal != chain) return;
      // The slot emptied, its findings let go unless the chain takes them: an evaluator reuses
      // its findings' buffers only where nobody else holds them.
      Scored p = std::move(slot);
      slot = Scored{};
      s.to_solid = p.to_solid;
      s.to_pore = p.to_pore;
      const bool accepted = accept(m_step, s, p.energy);
      if (accepted) {
        m_backlog.push_kept(std::move(p.taken));
        next = chain + 1;
        orphans.clear();
        for (Scored& q : slots) q = Scored{};  // scored on the state before the swap
        int64_t upto = idle_upto;
        for (const Worker& w : workers)
          if (!w.failed) upto = std::min(upto, *w.upto);
        m_backlog.drop_below(upto);
      }
      note_acceptance(accepted);
      end_evaluation(m_step.cooling, s, m_step.stage_energies);
      ++chain;
      if (s.progress.stopped != StopReason::none || chain == length) done = true;
    }
  };

  const auto work = [&](int t) {
    Worker& w = workers[std::size_t(t)];
    std::vector<const detail::TakenSwap*> behind;
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      wake.wait(lock, [&] { return done || !orphans.empty() || (next < chain + window && next < length); });
      if (done) return;
      int64_t j = next;
      if (orphans.empty()) ++next;
      else {
        j = orphans.back();
        orphans.pop_back();
      }
      // The swaps accepted so far: a claim's score stands while no other is.
      const int64_t upto = m_backlog.pushed();
      behind.clear();
      for (int64_t n = *w.upto; n < upto; ++n) behind.push_back(&m_backlog.numbered(n));
      lock.unlock();

      Scored out;
      std::size_t taken = 0;  // counted before each is taken: one that throws is part-way in
      std::exception_ptr failure;
      try {
        while (taken < behind.size()) take_in(w.state, *behind[taken++], *w.takes);
        const uint64_t step = first + uint64_t(j);
        out.proposal = j;
        out.to_solid = propose(*w.state.step, 1, step, 0);
        out.to_pore = propose(*w.state.step, 0, step, 1, out.to_solid);
        out.energy = swap_and_score(w.state, out.to_solid, out.to_pore);
        out.taken = scored_swap(w.state, out.to_solid, out.to_pore);
        undo_in(w.state, out.to_solid, out.to_pore);
      } catch (...) {
        failure = std::current_exception();
      }

      lock.lock();
      *w.upto += int64_t(taken);
      ++scored;
      if (failure) {
        // A replica that fails is only a speed-up lost (its claim goes to the others); this
        // state's failure ends the run.
        if (t == 0 && !error) error = failure;
        if (t == 0) done = true;
        else if (upto == m_backlog.pushed()) orphans.push_back(j);
        w.failed = true;
        wake.notify_all();
        return;
      }
      if (upto == m_backlog.pushed() && !done) {
        slots[std::size_t(j % window)] = std::move(out);
        take_chain_on();
      }
      wake.notify_all();
    }
  };

#pragma omp parallel num_threads(threads)
  {
    omp_set_num_threads(1);  // the evaluators' own parallel regions kept to their thread
    try {
      work(omp_get_thread_num());
    } catch (...) {
      // Outside a scoring (memory for the bookkeeping): the run ends; no throw may leave the
      // OpenMP region.
      const std::lock_guard<std::mutex> lock(mutex);
      if (!error) error = std::current_exception();
      workers[std::size_t(omp_get_thread_num())].failed = true;
      done = true;
      wake.notify_all();
    }
  }

  // This state takes the swaps accepted since its thread last claimed (not after a failure of
  // its own, part-way through a swap: the run ends with the error); the replicas take theirs
  // at their next claim, and are dropped (remade from this state when next needed) after any
  // failure.
  bool replica_failed = false;
  for (int t = 1; t < threads; ++t) replica_failed = replica_failed || workers[std::size_t(t)].failed;
  try {
    if (!workers[0].failed)
      for (int64_t n = own_upto; n < m_backlog.pushed(); ++n) take_in(host_state(), m_backlog.numbered(n), m_taken);
  } catch (...) {
    if (!error) error = std::current_exception();
  }
  if (replica_failed || error || int64_t(m_backlog.size()) > kMostBehind) drop_replicas();
  else {
    trim_backlog();
    m_backlog.keep_within_bytes();  // no other thread reads the findings now
  }
  if (error) std::rethrow_exception(error);

  ++m_batch_tally.batches;
  m_batch_tally.scored += scored;
  m_batch_tally.dropped += scored - chain;
  return chain;
}

void Annealer::note_acceptance(bool accepted) { m_acceptance = 0.99 * m_acceptance + (accepted ? 0.01 : 0.0); }

namespace {
std::size_t findings_bytes(const detail::TakenSwap& swap) {
  std::size_t b = 0;
  for (const auto& f : swap.scoring)
    if (f) b += f->bytes();
  return b;
}
}  // namespace

void detail::Backlog::push(TakenSwap swap) {
  push_kept(std::move(swap));
  keep_within_bytes();
}

void detail::Backlog::keep_within_bytes() {
  for (; m_bytes > kMostBytes && m_let_go < m_swaps.size(); ++m_let_go) {
    TakenSwap& oldest = m_swaps[m_let_go];
    m_bytes -= findings_bytes(oldest);
    oldest.scoring = {};
  }
}

void detail::Backlog::push_kept(TakenSwap swap) {
  m_bytes += findings_bytes(swap);
  m_swaps.push_back(std::move(swap));
}

void detail::Backlog::drop_oldest(std::size_t n) {
  for (std::size_t i = m_let_go; i < n; ++i) m_bytes -= findings_bytes(m_swaps[i]);
  m_swaps.erase(m_swaps.begin(), m_swaps.begin() + std::ptrdiff_t(n));
  m_let_go = n < m_let_go ? m_let_go - n : 0;
  m_dropped += int64_t(n);
}

void detail::Backlog::clear() {
  m_dropped += int64_t(m_swaps.size());
  m_swaps.clear();
  m_bytes = 0;
  m_let_go = 0;
}

// The backlog's swaps that every replica has taken, dropped.
void Annealer::trim_backlog() {
  int64_t upto = m_backlog.pushed();
  for (const auto& r : m_replicas) upto = std::min(upto, r->upto);
  m_backlog.drop_below(upto);
}

Annealer::BatchTally Annealer::batch_tally() const {
  detail::Takes all = m_taken;
  for (const auto& r : m_replicas) all += r->taken;
  BatchTally t = m_batch_tally;
  t.taken = all.swaps;
  t.taken_from_findings = all.from_findings;
  return t;
}

void Annealer::drop_replicas() {
  for (const auto& r : m_replicas) m_taken += r->taken;
  m_replicas.clear();
  m_backlog.clear();
}

bool Annealer::host_step() {
  StepState& s = m_state;
  const uint64_t step = uint64_t(s.progress.evaluations);
  s.to_solid = propose(m_step, 1, step, 0);
  s.to_pore = propose(m_step, 0, step, 1, s.to_solid);
  const bool accepted = accept(m_step, s, swap_and_score(host_state(), s.to_solid, s.to_pore));
  if (accepted) {
    // The replicas take it when they next claim a proposal, from what this scoring found, so
    // that one proposal at a time costs the same with or without them; so far behind, remaking
    // them costs less.
    if (!m_replicas.empty()) m_backlog.push(scored_swap(host_state(), s.to_solid, s.to_pore));
    if (int64_t(m_backlog.size()) > kMostBehind) drop_replicas();
  } else {
    undo(s.to_solid, s.to_pore);
  }
  end_evaluation(m_step.cooling, s, m_step.stage_energies);
  return accepted;
}

Progress Annealer::run(const std::function<void(const Progress&)>& report, int64_t every) {
  int64_t reported = -1;
  while (m_state.progress.stopped == StopReason::none) {
    advance(every > 0 ? every - m_state.progress.evaluations % every : m_config.stopping.max_evaluations);
    if (report && every > 0 && m_state.progress.evaluations % every == 0) {
      report(m_state.progress);
      reported = m_state.progress.evaluations;
    }
  }
  if (report && reported != m_state.progress.evaluations) report(m_state.progress);  // the end, once
  return m_state.progress;
}

double pore_psd_l1(const std::vector<double>& fraction, const Targets& targets) {
  double l1 = 0;
  for (std::size_t i = 0; i < fraction.size() && i < targets.pore_psd.size(); ++i)
    l1 += std::abs(fraction[i] - targets.pore_psd[i]);
  return l1;
}

double s2_rms(const Mask& pore, const Targets& targets) {
  const auto s2 = two_point_correlation(pore).directional;
  double sum = 0;
  int64_t n = 0;
  for (int a = 0; a < 3; ++a)
    for (std::size_t r = 0; r < std::min(s2.along(a).size(), targets.s2[a].size()); ++r, ++n)
      sum += (s2.along(a)[r] - targets.s2[a][r]) * (s2.along(a)[r] - targets.s2[a][r]);
  return n ? std::sqrt(sum / double(n)) : 0.0;
}

double chords_l1(const Mask& pore, const Targets& targets) {
  for (const auto& axis : targets.chords)
    if (axis[0].empty() || axis[1].empty()) return 0;
  const terms::Chords layout = chord_layout(pore.shape(), true);
  const std::vector<int64_t> counts = chord_counts(pore, layout);
  const std::vector<double> target = detail::chord_target(targets, layout);
  double l1 = 0;
  for (int j = 0; j < 6; ++j) {
    const int64_t* h = counts.data() + j * layout.stride;
    const double* t = target.data() + j * layout.stride;
    for (int l = 1; l < layout.stride; ++l) l1 += std::abs((h[0] > 0 ? double(h[l]) / double(h[0]) : 0.0) - t[l]);
  }
  return l1 / 6;
}

Quality quality(const Mask& pore, const Targets& targets, Boundary boundary, Backend backend) {
  Quality q;
  q.pore_psd_l1 =
      pore_psd_l1(pore_size_distribution(pore, boundary, Bins::from_edges(targets.pore_edges), backend).fraction, targets);
  q.s2_rms = s2_rms(pore, targets);
  return q;
}

}  // namespace poreforge::anneal
