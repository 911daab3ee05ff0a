// poreforge thickness IN -o OUT.h5: the exact local thickness of one phase and its PSD; of
// several images, IN... -o FOLDER, in one process through one engine workspace.
#include "commands.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "poreforge/backend.hpp"
#include "poreforge/error.hpp"
#include "poreforge/io.hpp"
#include "poreforge/local_thickness.hpp"
#include "poreforge/memory.hpp"
#include "poreforge/psd.hpp"
#include "poreforge/workspace.hpp"

#include "options.hpp"

namespace poreforge::app {

namespace {

struct ThicknessOptions : EngineOptions {
  InputOptions input;  // the layout options; the paths are `inputs`
  std::vector<std::string> inputs;
  std::string output;
  bool diameter = false;
};

// The engine of a command: its backend chosen for the first image's size (`auto`: the one that
// should finish first, the device's start-up counted), a device chosen starting on another
// thread while that image is read, and one workspace for every image.
class Engine {
 public:
  Engine(Backend requested, std::size_t images) : m_requested(requested), m_images(images) {}

  // Before the first image is read.
  Backend choose(const Shape& shape) {
    if (!m_chosen) {
      const BackendChoice c = choose_backend(m_requested, Operation::local_thickness, shape.voxels(), int64_t(m_images));
      m_backend = c.backend;
      m_description = backend_description(c.backend);
      if (m_requested == Backend::automatic) m_description += " (auto: " + c.reason + ")";
      if (m_backend == Backend::cuda) start_device_in_background();
      m_chosen = true;
    }
    return m_backend;
  }
  Workspace& workspace() {
    if (!m_workspace) m_workspace.emplace(m_backend);
    return *m_workspace;
  }
  const std::string& description() const { return m_description; }

 private:
  Backend m_requested;
  std::size_t m_images;
  bool m_chosen = false;
  Backend m_backend = Backend::cpu;
  std::optional<Workspace> m_workspace;
  std::string m_description;
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// One image's map and PSD into `out_path`. `detail`: the full report (one input), else one
// line. Returns the engine's seconds.
double measure(const ThicknessOptions& o, const std::string& in_path, const std::string& out_path, OutputFile& out,
               Engine& engine, Boundary boundary, const std::vector<double>& edges, const std::string& batch_prefix,
               const std::string& command_line) {
  const bool detail = batch_prefix.empty();
  InputOptions input = o.input;
  input.path = in_path;
  const auto reading = std::chrono::steady_clock::now();
  Backend backend = Backend::cpu;
  const LabelImage image = input.read([&](const Shape& s, std::size_t bytes, const Spacing& spacing) {
    backend = engine.choose(s);
    MemoryEstimate host = thickness_memory(s, bytes, spacing, boundary, backend);
    host.device_bytes = 0;  // asked once the image is read: the question waits for the device's start-up
    return host;
  });
  const double read_seconds = seconds_since(reading);
  Workspace& workspace = engine.workspace();
  if (backend == Backend::cuda && !workspace.holds(image.shape, image.spacing, boundary)) {
    MemoryEstimate device = thickness_memory(image.shape, dtype_size(image.dtype), image.spacing, boundary, backend);
    device.host_bytes = 0;
    require_memory(device);
  }
  const Mask phase = phase_mask(image, o.phase);
  const int64_t phase_voxels = count_phase(phase);
  if (detail) {
    std::printf("input     %s: %s %s, spacing %g,%g,%g, read in %.3f s\n", in_path.c_str(),
                to_string(image.shape).c_str(), to_string(image.dtype).c_str(), image.spacing.x, image.spacing.y,
                image.spacing.z, read_seconds);
    std::printf("phase     label %s: %lld voxels (%.4f of the volume), boundary %s\n", format_number(o.phase).c_str(),
                static_cast<long long>(phase_voxels), double(phase_voxels) / double(image.shape.voxels()),
                to_string(boundary).c_str());
    std::printf("backend   %s\n", engine.description().c_str());
    std::fflush(stdout);
  }

  const auto start = std::chrono::steady_clock::now();
  Volume<float> map = workspace.local_thickness(phase, boundary);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.diameter) {
    float* v = map.data();
    const int64_t n = map.voxels();
#pragma omp parallel for
    for (int64_t i = 0; i < n; ++i) v[i] *= 2.0f;
  }
  const std::string quantity = o.diameter ? "diameter" : "radius";

  const ThicknessRange range = thickness_range(map, phase);  // the map is 0 outside the phase
  const Bins bins = edges.empty() ? default_bins(range.lo, range.hi, o.bins, o.log_bins) : Bins::from_edges(edges);
  const PoreSizeDistribution psd = psd_from_thickness(map, phase, bins);
  const double max_value = range.hi;
  if (detail) {
    std::printf("thickness %s, max %.6g (physical units), computed in %.3f s\n", quantity.c_str(), max_value, seconds);
    print_psd(psd, quantity);
  }

  const auto writing = std::chrono::steady_clock::now();
  out.write_volume("/thickness", map);
  out.set_attribute("quantity", quantity, "/thickness");
  out.set_attribute("units", std::string("physical (voxel spacing units)"), "/thickness");
  out.write_vector("/psd/edges", psd.edges);
  out.write_vector("/psd/fraction", psd.fraction);
  out.write_vector("/psd/cumulative", psd.cumulative);
  out.set_attribute("fraction_below_edges", psd.below);
  out.set_attribute("fraction_above_edges", psd.above);
  out.set_attribute("input", in_path);
  out.set_attribute("phase_label", o.phase);
  out.set_attribute("boundary", to_string(boundary));
  out.set_attribute("backend", to_string(backend));
  out.set_attribute("seconds", seconds);
  out.set_provenance(command_line);
  out.commit();
  const double write_seconds = seconds_since(writing);
  if (detail) {
    std::printf("\nwrote %s in %.3f s\n", out_path.c_str(), write_seconds);
  } else {
    std::printf("%s%s: %s, phase %.4f of the volume, max %s %.6g; read %.3f s, engine %.3f s, write %.3f s -> %s\n",
                batch_prefix.c_str(), in_path.c_str(), to_string(image.shape).c_str(),
                double(phase_voxels) / double(image.shape.voxels()), quantity.c_str(), max_value, read_seconds, seconds,
                write_seconds, out_path.c_str());
    if (batch_prefix.rfind("[1/", 0) == 0) std::printf("backend   %s\n", engine.description().c_str());
  }
  std::fflush(stdout);
  return seconds;
}

}  // namespace

Runner add_thickness_command(CLI::App& app, const std::string& command_line) {
  auto o = std::make_shared<ThicknessOptions>();
  CLI::App* cmd = app.add_subcommand("thickness", "Exact local thickness map and pore-size distribution of a phase");
  cmd->add_option("inputs", o->inputs,
                  "Input images: HDF5 (.h5), raw (.raw, needs --shape) or TIFF stack (.tif); several share the "
                  "options and one process (no start-up per image)")
      ->required();
  o->input.add_to(cmd, "");
  cmd->add_option("-o,--output", o->output,
                  "Output HDF5 file; with several inputs a folder (made if missing), one INPUT-STEM.h5 each")
      ->required();
  o->add_to(cmd, "Label of the phase to measure (default 1)", "Number of PSD bins over [min, max] thickness (default 20)");
  cmd->add_flag("--diameter", o->diameter, "Report diameter (2 x radius), as Fiji/BoneJ do");

  return [o, command_line] {
    namespace fs = std::filesystem;
    const Boundary boundary = parse_boundary(o->boundary);
    Engine engine(parse_backend(o->backend), o->inputs.size());
    const std::vector<double> edges = checked_edges(*o);  // before any work; used once the map exists
    // An output that is an input is refused, --force or not: the image would be lost.
    auto never_the_input = [&](const std::string& out) {
      std::error_code ec;
      for (const std::string& in : o->inputs)
        if (fs::equivalent(in, out, ec))
          throw InputError("output '" + out + "' is the input '" + in + "': it would be overwritten");
    };
    if (o->inputs.size() == 1) {
      never_the_input(o->output);
      OutputFile out(o->output, o->force);  // refuses an existing file before any work
      measure(*o, o->inputs.front(), o->output, out, engine, boundary, edges, "", command_line);
      return 0;
    }
    // Several: every output named and checked before the first is measured, so a clash or an
    // existing file stops the batch before any work.
    const fs::path folder(o->output);
    if (fs::exists(folder) && !fs::is_directory(folder))
      throw InputError("output '" + o->output + "' is a file: with several inputs -o names a folder");
    if (!fs::exists(folder) && folder.extension() == ".h5")
      throw InputError("with several inputs -o names a folder, not a file like '" + o->output + "'");
    std::vector<std::string> outputs;
    for (const std::string& in : o->inputs) {
      if (!fs::is_regular_file(in))
        throw InputError("input '" + in + "' " + (fs::exists(in) ? "is not a file" : "does not exist") +
                         " (no image measured)");
      const std::string out = (folder / (fs::path(in).stem().string() + ".h5")).string();
      for (std::size_t k = 0; k < outputs.size(); ++k)
        if (outputs[k] == out)
          throw InputError("inputs '" + o->inputs[k] + "' and '" + in + "' would both write '" + out +
                           "': give inputs of different names");
      if (fs::exists(out) && !o->force) throw InputError("output '" + out + "' already exists (use --force to replace it)");
      never_the_input(out);
      outputs.push_back(out);
    }
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (ec) throw InputError("cannot create the output folder '" + o->output + "': " + ec.message());
    std::printf("thickness of %zu images\n", o->inputs.size());
    double engine_seconds = 0;
    const auto started = std::chrono::steady_clock::now();
    for (std::size_t k = 0; k < o->inputs.size(); ++k) {
      OutputFile out(outputs[k], o->force);
      const std::string prefix = "[" + std::to_string(k + 1) + "/" + std::to_string(o->inputs.size()) + "] ";
      engine_seconds += measure(*o, o->inputs[k], outputs[k], out, engine, boundary, edges, prefix, command_line);
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::printf("wrote %zu files to %s in %.2f s (%.2f s in the engine)\n", outputs.size(), o->output.c_str(), wall,
                engine_seconds);
    return 0;
  };
}

}  // namespace poreforge::app
