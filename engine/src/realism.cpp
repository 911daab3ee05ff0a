// The realism profile of one structure: the engine's measures gathered under stable names.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include <omp.h>

#include "poreforge/correlation.hpp"
#include "poreforge/error.hpp"
#include "poreforge/local_thickness.hpp"
#include "poreforge/measures.hpp"
#include "poreforge/memory.hpp"
#include "poreforge/realism.hpp"
#include "poreforge/transport.hpp"
#include "poreforge/workspace.hpp"

namespace poreforge {
namespace {

constexpr const char* kAxis = "xyz";

// A chord histogram (index = length in voxels) as the share of chords of each length, on
// lengths 1 … extent in physical units.
CurveMeasure chord_curve(const std::string& name, const ChordLengths& chords, int axis, double spacing,
                         const std::string& unit) {
  CurveMeasure c;
  c.name = name;
  c.x_unit = unit;
  c.distance = CurveMeasure::Distance::l1;
  const std::vector<int64_t>& h = chords.histogram[std::size_t(axis)];
  const double total = double(std::max<int64_t>(1, chords.count[std::size_t(axis)]));
  for (std::size_t l = 1; l < h.size(); ++l) {
    c.x.push_back(double(l) * spacing);
    c.y.push_back(double(h[l]) / total);
  }
  return c;
}

// A distribution over numbered classes or bins (x the index), `weights` scaled to sum to 1.
CurveMeasure shares_curve(const std::string& name, const std::string& x_unit, const std::vector<double>& weights) {
  CurveMeasure c;
  c.name = name;
  c.x_unit = x_unit;
  c.distance = CurveMeasure::Distance::l1;
  double sum = 0;
  for (double w : weights) sum += w;
  for (std::size_t k = 0; k < weights.size(); ++k) {
    c.x.push_back(double(k));
    c.y.push_back(sum > 0 ? weights[k] / sum : 0.0);
  }
  return c;
}

CurveMeasure lineal_curve(const std::string& name, const std::vector<double>& along, double spacing,
                          const std::string& unit) {
  CurveMeasure c;
  c.name = name;
  c.x_unit = unit;
  for (std::size_t r = 0; r < along.size(); ++r) {
    c.x.push_back(double(r) * spacing);
    c.y.push_back(along[r]);
  }
  return c;
}

// `workspace` keeps the engine's device context between the profiles of one job: made anew
// for every volume, its set-up costs far more than a map of a sub-volume's size.
RealismProfile profile_in(const Mask& pore, const RealismOptions& options, Workspace& workspace) {
  const Spacing& sp = pore.spacing();
  const std::string u = options.length_unit.empty() ? "unit" : options.length_unit;
  RealismProfile p;
  auto scalar = [&](const std::string& name, const std::string& unit, double value) {
    p.scalars.push_back({name, unit, value});
  };
  // Each stage's calls return host results, so they have synchronized when the clock is read.
  auto clock = std::chrono::steady_clock::now();
  auto stage = [&](const char* name) {
    const auto now = std::chrono::steady_clock::now();
    p.seconds.emplace_back(name, std::chrono::duration<double>(now - clock).count());
    clock = now;
  };

  // One local-thickness map gives both the pore PSD and the openings' χ (measure_structure
  // would make its own for the openings, so it is asked for none).
  MeasureOptions mo;
  mo.speck_voxels = options.speck_voxels;
  mo.keep_components6 = true;  // the transport measures' spanning clusters
  const StructureMeasures m = measure_structure(pore, mo, options.backend);
  if (m.phase_voxels == 0) throw InputError("the structure has no pore voxel: nothing to profile");
  stage("structure");
  const Volume<float> thickness = workspace.local_thickness(pore, Boundary::open);
  stage("thickness");

  scalar("porosity", "1", m.porosity);
  scalar("specific_surface", "1/" + u, m.surface.area_per_volume);
  scalar("euler_density", "1/" + u + "^3", m.euler_density);
  scalar("clusters_per_million_6", "1/1e6 vox", m.clusters6.clusters_per_million);
  scalar("largest_cluster_share_6", "1", m.clusters6.largest_share);
  for (int a = 0; a < 3; ++a)
    scalar(std::string("spanning_share_") + kAxis[a], "1", m.clusters6.spanning_share[std::size_t(a)]);
  scalar("speck_share_6", "1", m.clusters6.speck_share);
  scalar("clusters_per_million_26", "1/1e6 vox", m.clusters26.clusters_per_million);
  scalar("largest_cluster_share_26", "1", m.clusters26.largest_share);
  for (int a = 0; a < 3; ++a) {
    FormationFactorOptions fo;
    fo.tolerance = options.formation_factor_tolerance;
    const FormationFactorResult f = formation_factor(pore, a, fo, options.backend, &*m.components6);
    scalar(std::string("formation_factor_") + kAxis[a], "1", f.formation_factor);
  }
  stage("formation_factor");
  if (options.permeability) {
    if (!sp.isotropic()) throw InputError("the permeability needs cubic voxels (spacing " + to_string(sp) + ")");
    PermeabilityOptions po;
    po.voxel_size_m = options.unit_metres > 0 ? sp.x * options.unit_metres : 0;
    po.tolerance = options.permeability_tolerance;
    po.tau = options.permeability_tau;
    for (int a = 0; a < 3; ++a) {
      const PermeabilityResult k = permeability(pore, a, po, options.backend, &*m.components6);
      if (k.spans && !k.converged) {
        char line[200];
        std::snprintf(line, sizeof line,
                      "permeability_%c did not settle in %lld lattice steps (estimated error %.1e, tolerance %.0e)",
                      kAxis[a], static_cast<long long>(k.steps), k.relative_error, po.tolerance);
        p.warnings.push_back(line);
      }
      if (options.unit_metres > 0) scalar(std::string("permeability_") + kAxis[a], "mD", k.k_millidarcy);
      else scalar(std::string("permeability_") + kAxis[a], u + "^2", k.k_voxels * sp.x * sp.x);
    }
    stage("permeability");
  }
  for (int a = 0; a < 3; ++a)
    scalar(std::string("mean_chord_pore_") + kAxis[a], u, m.chords.mean[std::size_t(a)]);
  for (int a = 0; a < 3; ++a)
    scalar(std::string("mean_chord_solid_") + kAxis[a], u, m.complement_chords.mean[std::size_t(a)]);

  // Curves.
  {
    const PoreSizeDistribution psd = psd_from_thickness(thickness, pore, options.psd_bins);
    CurveMeasure c;
    c.name = "pore_psd";
    c.x_unit = u + " (radius)";
    c.distance = CurveMeasure::Distance::l1;
    for (std::size_t i = 0; i < psd.fraction.size(); ++i) {
      c.x.push_back(0.5 * (psd.edges[i] + psd.edges[i + 1]));
      c.y.push_back(psd.fraction[i]);
    }
    p.curves.push_back(std::move(c));
  }
  stage("psd");
  const DirectionalS2 s2 = directional_s2(pore);
  for (int a = 0; a < 3; ++a)
    p.curves.push_back(lineal_curve(std::string("s2_") + kAxis[a], s2.along(a), sp.along(a), u));
  stage("s2");
  for (int a = 0; a < 3; ++a)
    p.curves.push_back(chord_curve(std::string("chords_pore_") + kAxis[a], m.chords, a, sp.along(a), u));
  for (int a = 0; a < 3; ++a)
    p.curves.push_back(chord_curve(std::string("chords_solid_") + kAxis[a], m.complement_chords, a, sp.along(a), u));
  for (int a = 0; a < 3; ++a)
    p.curves.push_back(lineal_curve(std::string("lineal_path_pore_") + kAxis[a], m.lineal.along[std::size_t(a)],
                                    sp.along(a), u));
  for (int a = 0; a < 3; ++a)
    p.curves.push_back(lineal_curve(std::string("lineal_path_solid_") + kAxis[a],
                                    m.complement_lineal.along[std::size_t(a)], sp.along(a), u));
  {
    CurveMeasure c;
    c.name = "euler_of_openings";
    c.x_unit = u + " (radius r of {LT >= r})";
    const double volume = double(m.voxels) * sp.x * sp.y * sp.z;
    const std::vector<double>& radii = options.psd_bins.edges();
    const std::vector<int64_t> euler = euler_of_openings(thickness, radii);
    for (std::size_t i = 0; i < radii.size(); ++i) {
      c.x.push_back(radii[i]);
      c.y.push_back(double(euler[i]) / volume);
    }
    p.curves.push_back(std::move(c));
  }
  stage("openings");
  // Over the cells inside the box, as the annealer's patterns term counts them.
  const auto patterns = interface_pattern_shares(interior_configuration_histogram(pore));
  p.curves.push_back(shares_curve("interface_patterns", "class (interface_pattern)",
                                  std::vector<double>(patterns.begin(), patterns.end())));
  // The spikes of either phase and how outlines bend: the voxels whose 3×3×3 cell or 3×3 or 5×5
  // squares hold both phases, by bin.
  const LocalPorosityHistogram local = local_porosity_histogram(pore);
  p.curves.push_back(shares_curve("local_porosity",
                                  "bin (local_porosity_bin, local_porosity_square_bin, local_porosity_wide_square_bin)",
                                  std::vector<double>(local.counts.begin(), local.counts.end())));
  stage("patterns");
  return p;
}

}  // namespace

RealismProfile realism_profile(const Mask& pore, const RealismOptions& options) {
  Workspace workspace(options.backend);
  return profile_in(pore, options, workspace);
}

std::vector<RealismProfile> realism_profiles(const std::vector<const Mask*>& volumes, const RealismOptions& options,
                                             int jobs, const std::function<void(std::size_t)>& done) {
  std::vector<RealismProfile> profiles(volumes.size());
  jobs = int(std::clamp<std::size_t>(std::size_t(std::max(jobs, 1)), 1, std::max<std::size_t>(volumes.size(), 1)));
  const int threads = std::max(1, omp_get_max_threads() / jobs);
  std::mutex mutex;  // guards next, error and the calls of done
  std::size_t next = 0;
  std::exception_ptr error;
  auto work = [&] {
    if (jobs > 1) omp_set_num_threads(threads);  // this thread's OpenMP loops
    std::optional<Workspace> workspace;
    for (;;) {
      std::size_t k;
      {
        const std::lock_guard<std::mutex> lock(mutex);
        if (error || next == volumes.size()) return;
        k = next++;
      }
      try {
        if (!workspace) workspace.emplace(options.backend);
        profiles[k] = profile_in(*volumes[k], options, *workspace);
        const std::lock_guard<std::mutex> lock(mutex);
        if (done) done(k);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(mutex);
        if (!error) error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  try {
    if (jobs == 1) work();  // on the calling thread
    else
      for (int j = 0; j < jobs; ++j) pool.emplace_back(work);
  } catch (...) {  // no thread to be had: the ones started stop after their volume
    const std::lock_guard<std::mutex> lock(mutex);
    if (!error) error = std::current_exception();
  }
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  return profiles;
}

int realism_jobs(Backend backend, const MemoryEstimate& each, std::size_t volumes) {
  if (backend != Backend::cuda) return 1;
  int jobs = int(std::min<std::size_t>(4, std::max<std::size_t>(volumes, 1)));
  const double host = host_memory_available(), device = double(cuda_memory_available());
  while (jobs > 1 && (jobs * each.host_bytes > host || jobs * each.device_bytes > device)) --jobs;
  return jobs;
}

}  // namespace poreforge
