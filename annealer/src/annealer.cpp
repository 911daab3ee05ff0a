#include "poreforge/annealer/annealer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "poreforge/correlation.hpp"
#include "poreforge/error.hpp"
#include "poreforge/io.hpp"
#include "poreforge/local_thickness.hpp"

#include "device_loop.hpp"

namespace poreforge::anneal {
namespace {

using detail::kAcceptLane;
// Trial moves for T0 draw from steps far past any run's end, so they never reuse a run's draws.
constexpr uint64_t kTrialStepBase = uint64_t(1) << 62;

double squared_error(const std::vector<double>& a, const std::vector<double>& b) {
  double e = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) e += (a[i] - b[i]) * (a[i] - b[i]);
  return e;
}

std::vector<double> concat_s2(const std::array<std::vector<double>, 3>& s2, const std::array<std::size_t, 3>& len) {
  std::vector<double> out;
  for (int a = 0; a < 3; ++a) out.insert(out.end(), s2[a].begin(), s2[a].begin() + std::ptrdiff_t(len[a]));
  return out;
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
  }
  const auto s2 = two_point_correlation(pore);
  t.s2 = {s2.directional.x, s2.directional.y, s2.directional.z};
  t.spacing = pore.spacing();
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
  Bins::from_edges(c.targets.pore_edges);  // strictly increasing, at least two
  if (!c.targets.solid_edges.empty()) Bins::from_edges(c.targets.solid_edges);
  require(c.targets.pore_psd.size() + 1 == c.targets.pore_edges.size(), "pore PSD target and its edges differ in length");
  require(c.weights.pore_psd >= 0 && c.weights.solid_psd >= 0 && c.weights.s2 >= 0,
          "weights must not be negative");
  require(c.weights.pore_psd + c.weights.solid_psd + c.weights.s2 > 0, "at least one weight must be positive");
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
  m_counts = DirectionalCounts(m_pore);
  make_evaluators();

  // Normalisers: each term's squared error at the start (1 where the start already matches).
  const Descriptors d = describe_current();
  m_norm = normalisers(d);
  m_random_norm = m_config.initial ? normalisers(describe_from_scratch(random_start())) : m_norm;
  m_progress.energy = energy_of(d);
  m_progress.best = m_progress.energy;

  // T0: given, or from the mean uphill ΔE of trial moves at the start (every trial undone).
  double t0 = m_config.schedule.t0;
  if (t0 == 0) {
    double uphill = 0;
    int count = 0;
    for (int k = 0; k < m_config.schedule.trial_moves; ++k) {
      const uint64_t step = kTrialStepBase + uint64_t(k);
      const int64_t p = propose(1, step, 0), q = propose(0, step, 1);
      swap(p, q);
      const double de = energy_of(describe_current()).total - m_progress.energy.total;
      swap(q, p);
      if (de > 0) {
        uphill += de;
        ++count;
      }
    }
    t0 = count ? -(uphill / count) / std::log(m_config.schedule.initial_acceptance) : 1e-6;
  }
  m_progress.temperature = t0;
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
  m_counts = DirectionalCounts(m_pore);
  make_evaluators();
  m_progress = snap.progress;
  m_progress.stopped = StopReason::none;  // a new evaluation budget may let it go on
  m_stall = snap.stall;
  m_stage_energies = std::move(snap.stage_energies);
  m_norm = snap.norm;
  m_random_norm = normalisers(describe_from_scratch(random_start()));
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

void Annealer::start_device_loop() {
  if (m_backend != Backend::cuda || m_config.host_loop) return;
#ifdef POREFORGE_HAVE_CUDA
  m_device = std::make_unique<detail::DeviceLoop>(m_config, snapshot(), m_counts);
  // The device loop has its own engine contexts; the host loop's are not needed any more.
  m_pore_evaluator.reset();
  m_solid_evaluator.reset();
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
  structure();  // refreshes both host copies
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
  s.progress = m_progress;
  s.stall = m_stall;
  s.stage_energies = m_stage_energies;
  s.norm = m_norm;
  return s;
}

void Annealer::make_evaluators() {
  const auto& w = m_config.weights;
  if (w.pore_psd > 0) m_pore_evaluator = make_psd_evaluator(m_pore, m_config.boundary, m_pore_bins, m_config.backend);
  if (w.solid_psd > 0)
    m_solid_evaluator = make_psd_evaluator(complement(m_pore), m_config.boundary, *m_solid_bins, m_config.backend);
  const PsdEvaluator* e = m_pore_evaluator ? m_pore_evaluator.get() : m_solid_evaluator.get();
  m_backend = e ? e->backend() : Backend::cpu;
}

std::vector<double> Annealer::s2_of(const DirectionalCounts& counts) const {
  std::array<std::vector<double>, 3> s2 = {counts.s2(0), counts.s2(1), counts.s2(2)};
  std::array<std::size_t, 3> len;
  for (int a = 0; a < 3; ++a) len[a] = std::min(m_config.targets.s2[a].size(), s2[a].size());
  return concat_s2(s2, len);
}

Annealer::Descriptors Annealer::describe_current() {
  Descriptors d;
  if (m_pore_evaluator) d.pore_psd = psd_from_counts(m_pore_evaluator->counts(), m_pore_bins).fraction;
  if (m_solid_evaluator) d.solid_psd = psd_from_counts(m_solid_evaluator->counts(), *m_solid_bins).fraction;
  if (m_config.weights.s2 > 0) d.s2 = s2_of(m_counts);
  return d;
}

Energy Annealer::energy_of(const Descriptors& d) const {
  const auto& t = m_config.targets;
  const auto& w = m_config.weights;
  Energy e;
  if (w.pore_psd > 0) e.pore_psd = squared_error(d.pore_psd, t.pore_psd) / m_norm[0];
  if (w.solid_psd > 0) e.solid_psd = squared_error(d.solid_psd, t.solid_psd) / m_norm[1];
  if (w.s2 > 0) {
    std::array<std::size_t, 3> len;
    for (int a = 0; a < 3; ++a) len[a] = std::min(t.s2[a].size(), m_counts.counts(a).size());
    e.s2 = squared_error(d.s2, concat_s2(t.s2, len)) / m_norm[2];
  }
  e.total = w.pore_psd * e.pore_psd + w.solid_psd * e.solid_psd + w.s2 * e.s2;
  return e;
}

Energy Annealer::evaluate_from_scratch() const { return energy_of(describe_from_scratch(structure())); }

Annealer::Descriptors Annealer::describe_from_scratch(const Mask& pore) const {
  // Everything recomputed: S2 counted afresh, PSDs by one-shot engine calls (not the evaluators).
  const auto& w = m_config.weights;
  Descriptors d;
  if (w.pore_psd > 0) d.pore_psd = pore_size_distribution(pore, m_config.boundary, m_pore_bins, backend()).fraction;
  if (w.solid_psd > 0)
    d.solid_psd = pore_size_distribution(complement(pore), m_config.boundary, *m_solid_bins, backend()).fraction;
  if (w.s2 > 0) d.s2 = s2_of(DirectionalCounts(pore));
  return d;
}

std::array<double, 3> Annealer::normalisers(const Descriptors& d) const {
  const auto& t = m_config.targets;
  std::array<std::size_t, 3> len;
  for (int a = 0; a < 3; ++a) len[a] = std::min(t.s2[a].size(), m_counts.counts(a).size());
  const double e[3] = {squared_error(d.pore_psd, t.pore_psd), squared_error(d.solid_psd, t.solid_psd),
                       squared_error(d.s2, concat_s2(t.s2, len))};
  std::array<double, 3> norm;
  for (int k = 0; k < 3; ++k) norm[k] = e[k] > 0 ? e[k] : 1.0;
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
  const Energy& e = m_progress.energy;
  const auto& w = m_config.weights;
  const double terms[3] = {e.pore_psd, e.solid_psd, e.s2}, weights[3] = {w.pore_psd, w.solid_psd, w.s2};
  double total = 0;
  for (int k = 0; k < 3; ++k) total += weights[k] * terms[k] * m_norm[k] / m_random_norm[k];
  return total;
}

int64_t Annealer::propose(int which, uint64_t step, uint32_t lane_base) const {
  const auto& list = m_voxels[which];
  const double bias = m_config.moves.interface_bias;
  for (uint32_t attempt = 0;; attempt += 2) {
    const PhiloxBlock w = m_random.draw(step, lane_base + attempt);
    const int64_t v = list[Philox::below(w[0], w[1], list.size())];
    if (bias == 0) return v;
    // Rejection: accept with probability (1 + bias·k) / (1 + 6·bias), k = other-phase neighbours.
    const Shape s = m_pore.shape();
    const int64_t c[3] = {v % s.nx, (v / s.nx) % s.ny, v / (s.nx * s.ny)};
    int k = 0;
    for (int a = 0; a < 3; ++a) {
      const int64_t n = s.extent(a), stride = a == 0 ? 1 : a == 1 ? s.nx : s.nx * s.ny;
      if (n == 1) continue;
      for (int side = -1; side <= 1; side += 2) {
        int64_t p = c[a] + side;
        if (p < 0 || p >= n) {
          if (m_config.boundary != Boundary::periodic) continue;
          p = (p + n) % n;
        }
        k += m_pore[v + (p - c[a]) * stride] != which;
      }
    }
    if (Philox::unit(w[2]) * (1 + 6 * bias) < 1 + bias * k) return v;
  }
}

void Annealer::swap(int64_t pore_voxel, int64_t solid_voxel) {
  m_counts.flip(m_pore, pore_voxel, 0);
  m_counts.flip(m_pore, solid_voxel, 1);
  if (m_pore_evaluator) {
    m_pore_evaluator->set(pore_voxel, 0);
    m_pore_evaluator->set(solid_voxel, 1);
  }
  if (m_solid_evaluator) {
    m_solid_evaluator->set(pore_voxel, 1);
    m_solid_evaluator->set(solid_voxel, 0);
  }
  const int64_t a = m_slot[pore_voxel], b = m_slot[solid_voxel];
  m_voxels[1][a] = solid_voxel;
  m_voxels[0][b] = pore_voxel;
  m_slot[solid_voxel] = a;
  m_slot[pore_voxel] = b;
}

void Annealer::stop(StopReason reason) {
  if (reason == StopReason::none) throw std::invalid_argument("Annealer::stop needs a reason");
  if (m_progress.stopped == StopReason::none) m_progress.stopped = reason;
}

bool Annealer::step() {
  if (!m_device) return host_step();
  const int64_t accepted = m_progress.accepted;
  advance(1);
  return m_progress.accepted > accepted;
}

const Progress& Annealer::advance(int64_t steps) {
  if (m_progress.stopped != StopReason::none) return m_progress;  // the device loop's own state may not know
#ifdef POREFORGE_HAVE_CUDA
  if (m_device) {
    m_device->advance(steps);
    m_progress = m_device->progress();
    m_stale = true;
    return m_progress;
  }
#endif
  for (int64_t k = 0; k < steps && m_progress.stopped == StopReason::none; ++k) host_step();
  return m_progress;
}

bool Annealer::host_step() {
  const uint64_t step = uint64_t(m_progress.evaluations);
  const int64_t p = propose(1, step, 0), q = propose(0, step, 1);
  swap(p, q);
  const Energy candidate = energy_of(describe_current());
  const double de = candidate.total - m_progress.energy.total;
  m_progress.last_delta = de;
  const double u = Philox::unit(m_random.draw(step, kAcceptLane)[0]);
  const bool accept = de <= 0 || u < std::exp(-de / m_progress.temperature);
  if (accept) {
    m_progress.energy = candidate;
    ++m_progress.accepted;
    if (candidate.total < m_progress.best.total) {
      m_progress.best = candidate;
      m_stall = -1;  // a new best in this stage
    }
  } else {
    swap(q, p);  // roll back: q (pore now) and p (solid now) trade back, counts included
    ++m_progress.rejected;
  }
  m_stage_energies.push_back(m_progress.energy.total);
  ++m_progress.evaluations;
  const auto& stop = m_config.stopping;
  if (m_progress.energy.total <= stop.energy_tolerance) m_progress.stopped = StopReason::energy_tolerance;
  else if (m_progress.evaluations >= stop.max_evaluations) m_progress.stopped = StopReason::max_evaluations;
  if (m_progress.evaluations % m_config.schedule.stage_length == 0) end_stage();
  return accept;
}

void Annealer::end_stage() {
  m_stall = m_stall < 0 ? 0 : m_stall + 1;
  if (m_stall >= m_config.stopping.stall_stages && m_progress.stopped == StopReason::none)
    m_progress.stopped = StopReason::no_improvement;
  const auto& s = m_config.schedule;
  if (s.kind == Schedule::Kind::exponential) {
    m_progress.temperature *= s.alpha;
  } else {  // Aarts–Korst: cool by the spread of the energies seen in the stage
    double mean = 0, var = 0;
    for (double e : m_stage_energies) mean += e;
    mean /= double(m_stage_energies.size());
    for (double e : m_stage_energies) var += (e - mean) * (e - mean);
    const double sigma = std::sqrt(var / double(m_stage_energies.size()));
    if (sigma > 0) m_progress.temperature /= 1 + m_progress.temperature * std::log(1 + s.delta) / (3 * sigma);
  }
  m_stage_energies.clear();
  ++m_progress.stage;
}

Progress Annealer::run(const std::function<void(const Progress&)>& report, int64_t every) {
  int64_t reported = -1;
  while (m_progress.stopped == StopReason::none) {
    advance(every > 0 ? every - m_progress.evaluations % every : m_config.stopping.max_evaluations);
    if (report && every > 0 && m_progress.evaluations % every == 0) {
      report(m_progress);
      reported = m_progress.evaluations;
    }
  }
  if (report && reported != m_progress.evaluations) report(m_progress);  // the end, once
  return m_progress;
}

double pore_psd_l1(const std::vector<double>& fraction, const Targets& targets) {
  double l1 = 0;
  for (std::size_t i = 0; i < fraction.size() && i < targets.pore_psd.size(); ++i)
    l1 += std::abs(fraction[i] - targets.pore_psd[i]);
  return l1;
}

Quality quality(const Mask& pore, const Targets& targets, Boundary boundary, Backend backend) {
  Quality q;
  q.pore_psd_l1 =
      pore_psd_l1(pore_size_distribution(pore, boundary, Bins::from_edges(targets.pore_edges), backend).fraction, targets);
  const auto s2 = two_point_correlation(pore).directional;
  double sum = 0;
  int64_t n = 0;
  for (int a = 0; a < 3; ++a)
    for (std::size_t r = 0; r < std::min(s2.along(a).size(), targets.s2[a].size()); ++r, ++n)
      sum += (s2.along(a)[r] - targets.s2[a][r]) * (s2.along(a)[r] - targets.s2[a][r]);
  q.s2_rms = n ? std::sqrt(sum / double(n)) : 0.0;
  return q;
}

}  // namespace poreforge::anneal
