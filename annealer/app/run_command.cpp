// poreforge run CONFIG.yaml: a reconstruction from a YAML configuration into results/<name>/.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "commands.hpp"
#include "poreforge/annealer/annealer.hpp"
#include "poreforge/backend.hpp"
#include "poreforge/correlation.hpp"
#include "poreforge/error.hpp"
#include "poreforge/io.hpp"
#include "poreforge/local_thickness.hpp"
#include "run_config.hpp"

namespace poreforge::app {
namespace {

namespace fs = std::filesystem;

std::string xdmf_for(const Shape& s, const Spacing& sp, const std::string& h5, const std::string& dataset) {
  std::ostringstream x;
  x << "<?xml version=\"1.0\" ?>\n<Xdmf Version=\"3.0\">\n <Domain>\n  <Grid Name=\"structure\" GridType=\"Uniform\">\n"
    << "   <Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"" << s.nz + 1 << " " << s.ny + 1 << " " << s.nx + 1
    << "\"/>\n   <Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n"
    << "    <DataItem Dimensions=\"3\" NumberType=\"Float\" Format=\"XML\">0 0 0</DataItem>\n"
    << "    <DataItem Dimensions=\"3\" NumberType=\"Float\" Format=\"XML\">" << sp.z << " " << sp.y << " " << sp.x
    << "</DataItem>\n   </Geometry>\n   <Attribute Name=\"pore\" AttributeType=\"Scalar\" Center=\"Cell\">\n"
    << "    <DataItem Dimensions=\"" << s.nz << " " << s.ny << " " << s.nx
    << "\" NumberType=\"UChar\" Precision=\"1\" Format=\"HDF\">" << h5 << ":" << dataset << "</DataItem>\n"
    << "   </Attribute>\n  </Grid>\n </Domain>\n</Xdmf>\n";
  return x.str();
}

std::string hms(double seconds) {
  const int64_t s = std::llround(std::max(0.0, seconds));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600), static_cast<long long>(s / 60 % 60),
                static_cast<long long>(s % 60));
  return buf;
}

// The run's folder, built under a temporary name and moved into place only when complete.
class RunDirectory {
 public:
  RunDirectory(const fs::path& final_path, bool force) : m_final(final_path) {
    if (fs::exists(m_final) && !force)
      throw InputError("run directory '" + m_final.string() + "' already exists (use --force to replace it)");
    m_temp = m_final.string() + ".tmp-" + std::to_string(::getpid());
    fs::create_directories(m_temp);
  }
  ~RunDirectory() {
    if (!m_committed) {
      std::error_code ec;
      fs::remove_all(m_temp, ec);
    }
  }
  fs::path file(const std::string& name) const { return m_temp / name; }
  void commit() {
    std::error_code ec;
    const fs::path old = m_final.string() + ".old-" + std::to_string(::getpid());
    if (fs::exists(m_final)) fs::rename(m_final, old);
    fs::rename(m_temp, m_final);
    fs::remove_all(old, ec);
    m_committed = true;
  }

 private:
  fs::path m_final, m_temp;
  bool m_committed = false;
};

}  // namespace

Runner add_run_command(CLI::App& app, const std::string& command_line) {
  struct Options {
    std::string config, output, backend;
    std::vector<std::string> sets;
    bool force = false, quiet = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("run", "Reconstruct a structure from a YAML configuration (results/<name>/)");
  cmd->add_option("config", o->config, "YAML run configuration (see configs/)")->required();
  cmd->add_option("--set", o->sets, "Override a key: --set annealing.alpha=0.95 (repeatable)");
  cmd->add_option("--output", o->output, "Parent folder of the run directory (overrides output.directory)");
  cmd->add_option("--backend", o->backend, "Engine backend: auto, cpu, cuda")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd->add_flag("--force", o->force, "Replace an existing run directory");
  cmd->add_flag("--quiet", o->quiet, "Print only the summary");

  return [o, command_line] {
    std::vector<std::string> sets = o->sets;
    if (!o->backend.empty()) sets.push_back("backend=" + o->backend);
    if (!o->output.empty()) sets.push_back("output.directory=" + o->output);
    const RunConfig rc = load_run_config(o->config, sets);
    const Backend backend = resolve_backend(parse_backend(rc.backend), Operation::pore_size_distribution);
    const std::string resolved = rc.to_yaml();
    if (!o->quiet) std::printf("resolved configuration:\n%s\n", resolved.c_str());
    RunDirectory dir(fs::path(rc.output_directory) / rc.name, o->force);
    std::ofstream(dir.file("config.yaml")) << resolved;
    std::ofstream log(dir.file("run.log"));
    auto say = [&](const std::string& line) {
      if (!o->quiet) std::printf("%s\n", line.c_str());
      std::fflush(stdout);
      log << line << "\n";
    };

    anneal::Config c;
    c.shape = rc.shape;
    c.spacing = rc.spacing;
    c.boundary = parse_boundary(rc.boundary);
    c.weights = rc.weights;
    c.schedule = rc.schedule;
    c.stopping = rc.stopping;
    c.moves = rc.moves;
    c.seed = rc.seed;
    c.backend = backend;
    const auto start = std::chrono::steady_clock::now();
    if (!rc.target_image.empty()) {
      ReadOptions ro;
      ro.format = rc.target_format;
      ro.dataset = rc.target_dataset;
      ro.shape = rc.target_shape;
      ro.dtype = parse_dtype(rc.target_dtype);
      const Mask pore = phase_mask(read_image(rc.target_image, ro), rc.target_phase);
      c.targets = anneal::Targets::from_image(pore, parse_boundary(rc.target_boundary), rc.bins, rc.log_bins, backend);
      say("target    " + rc.target_image);
    } else {
      c.targets = anneal::Targets::from_descriptor_file(rc.target_descriptors);
      say("target    " + rc.target_descriptors);
    }
    say("backend   " + (backend == Backend::cuda ? "cuda: " + cuda_device_description()
                                                 : "cpu: " + std::to_string(cpu_threads()) + " threads"));
    anneal::Annealer annealer(c);
    char start_line[128];
    std::snprintf(start_line, sizeof start_line, "start     T0 %.4g, energy %.5f, porosity %.4f",
                  annealer.progress().temperature, annealer.progress().energy.total, c.targets.porosity);
    say(start_line);

    std::ofstream csv(dir.file("energy.csv"));
    csv << "evaluations,stage,temperature,energy,pore_psd,solid_psd,s2,accepted,rejected\n";
    const auto loop_start = std::chrono::steady_clock::now();
    auto record = [&](const anneal::Progress& p) {
      csv << p.evaluations << "," << p.stage << "," << p.temperature << "," << p.energy.total << "," << p.energy.pore_psd
          << "," << p.energy.solid_psd << "," << p.energy.s2 << "," << p.accepted << "," << p.rejected << "\n";
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
      const double rate = elapsed > 0 ? double(p.evaluations) / elapsed : 0;
      const double share = p.evaluations ? double(p.accepted) / double(p.evaluations) : 0;
      char line[256];
      std::snprintf(line, sizeof line, "%10lld evaluations  T %.3e  E %.5f  accepted %.3f  %.0f eval/s  ETA %s",
                    static_cast<long long>(p.evaluations), p.temperature, p.energy.total, share, rate,
                    hms(rate > 0 ? double(c.stopping.max_evaluations - p.evaluations) / rate : 0).c_str());
      say(line);
    };
    record(annealer.progress());
    const anneal::Progress p = annealer.run(record, rc.report_every);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    csv.close();

    // final.h5 + its ParaView sidecar; descriptors.h5 with target and achieved.
    {
      OutputFile final_h5(dir.file("final.h5").string(), false);
      final_h5.write_volume("/volume", annealer.structure());
      final_h5.set_attribute("energy", p.energy.total);
      final_h5.set_attribute("stop_reason", to_string(p.stopped));
      final_h5.set_attribute("evaluations", double(p.evaluations));
      final_h5.set_attribute("seed", double(rc.seed));
      final_h5.set_attribute("labels", std::string("1 = pore, 0 = solid"));
      final_h5.set_provenance(command_line);
      final_h5.commit();
    }
    std::ofstream(dir.file("final.xdmf")) << xdmf_for(c.shape, c.spacing, "final.h5", "/volume");
    {
      OutputFile d(dir.file("descriptors.h5").string(), false);
      const Mask& m = annealer.structure();
      d.write_vector("/target/psd/pore/edges", c.targets.pore_edges);
      d.write_vector("/target/psd/pore/fraction", c.targets.pore_psd);
      d.write_vector("/achieved/psd/pore/edges", c.targets.pore_edges);
      d.write_vector("/achieved/psd/pore/fraction",
                     pore_size_distribution(m, c.boundary, Bins::from_edges(c.targets.pore_edges), backend).fraction);
      if (!c.targets.solid_edges.empty()) {
        d.write_vector("/target/psd/solid/edges", c.targets.solid_edges);
        d.write_vector("/target/psd/solid/fraction", c.targets.solid_psd);
        d.write_vector("/achieved/psd/solid/fraction",
                       pore_size_distribution(complement(m), c.boundary, Bins::from_edges(c.targets.solid_edges), backend).fraction);
      }
      const auto s2 = two_point_correlation(m).directional;
      const char* axes[3] = {"x", "y", "z"};
      for (int a = 0; a < 3; ++a) {
        d.write_vector(std::string("/target/s2/") + axes[a], c.targets.s2[a]);
        d.write_vector(std::string("/achieved/s2/") + axes[a], s2.along(a));
      }
      d.set_provenance(command_line);
      d.commit();
    }
    {
      std::ofstream j(dir.file("summary.json"));
      j << "{\n  \"name\": \"" << rc.name << "\",\n  \"version\": \"" << version_string() << "\",\n  \"backend\": \""
        << to_string(backend) << "\",\n  \"device\": \""
        << (backend == Backend::cuda ? cuda_device_description() : "cpu, " + std::to_string(cpu_threads()) + " threads")
        << "\",\n  \"seed\": " << rc.seed << ",\n  \"evaluations\": " << p.evaluations << ",\n  \"accepted\": "
        << p.accepted << ",\n  \"stop_reason\": \"" << to_string(p.stopped) << "\",\n  \"energy\": " << p.energy.total
        << ",\n  \"best_energy\": " << p.best.total << ",\n  \"seconds\": " << seconds << "\n}\n";
    }
    log.close();
    dir.commit();
    std::printf("stopped   %s after %lld evaluations, energy %.5f (best %.5f), %.1f s\nwrote     %s\n",
                to_string(p.stopped).c_str(), static_cast<long long>(p.evaluations), p.energy.total, p.best.total, seconds,
                (fs::path(rc.output_directory) / rc.name).string().c_str());
  };
}

}  // namespace poreforge::app
