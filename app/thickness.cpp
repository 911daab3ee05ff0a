// poreforge thickness IN -o OUT.h5: the exact local thickness of one phase and its PSD.
#include "commands.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "poreforge/backend.hpp"
#include "poreforge/io.hpp"
#include "poreforge/local_thickness.hpp"
#include "poreforge/memory.hpp"
#include "poreforge/psd.hpp"

#include "options.hpp"

namespace poreforge::app {

Runner add_thickness_command(CLI::App& app, const std::string& command_line) {
  struct Options : EngineOptions {
    InputOptions input;
    std::string output;
    bool diameter = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("thickness", "Exact local thickness map and pore-size distribution of a phase");
  o->input.add_to(cmd);
  cmd->add_option("-o,--output", o->output, "Output HDF5 file")->required();
  o->add_to(cmd, "Label of the phase to measure (default 1)", "Number of PSD bins over [min, max] thickness (default 20)");
  cmd->add_flag("--diameter", o->diameter, "Report diameter (2 x radius), as Fiji/BoneJ do");

  return [o, command_line] {
    const Boundary boundary = parse_boundary(o->boundary);
    const Backend backend = resolve_backend(parse_backend(o->backend), Operation::local_thickness);
    const std::vector<double> edges = checked_edges(*o);  // before any work; used once the map exists
    OutputFile out(o->output, o->force);  // refuses an existing file before any work
    const LabelImage image = o->input.read([&](const Shape& s, std::size_t bytes, const Spacing& spacing) {
      return thickness_memory(s, bytes, spacing, boundary, backend);
    });
    const Mask phase = phase_mask(image, o->phase);
    std::printf("input     %s: %s %s, spacing %g,%g,%g\n", o->input.path.c_str(), to_string(image.shape).c_str(),
                to_string(image.dtype).c_str(), image.spacing.x, image.spacing.y, image.spacing.z);
    const int64_t phase_voxels = count_phase(phase);
    std::printf("phase     label %s: %lld voxels (%.4f of the volume), boundary %s\n",
                format_number(o->phase).c_str(), static_cast<long long>(phase_voxels),
                double(phase_voxels) / double(image.shape.voxels()), to_string(boundary).c_str());
    std::printf("backend   %s\n", backend_description(backend).c_str());
    std::fflush(stdout);

    const auto start = std::chrono::steady_clock::now();
    Volume<float> map = local_thickness(phase, boundary, backend);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (o->diameter)
      for (auto& v : map.values()) v *= 2.0f;
    const std::string quantity = o->diameter ? "diameter" : "radius";

    const Bins bins = edges.empty() ? default_bins(map, phase, o->bins, o->log_bins) : Bins::from_edges(edges);
    const PoreSizeDistribution psd = psd_from_thickness(map, phase, bins);
    float max_value = 0;
    for (float v : map.values()) max_value = std::max(max_value, v);
    std::printf("thickness %s, max %.6g (physical units), computed in %.3f s\n", quantity.c_str(), max_value, seconds);
    print_psd(psd, quantity);

    out.write_volume("/thickness", map);
    out.set_attribute("quantity", quantity, "/thickness");
    out.set_attribute("units", std::string("physical (voxel spacing units)"), "/thickness");
    out.write_vector("/psd/edges", psd.edges);
    out.write_vector("/psd/fraction", psd.fraction);
    out.write_vector("/psd/cumulative", psd.cumulative);
    out.set_attribute("fraction_below_edges", psd.below);
    out.set_attribute("fraction_above_edges", psd.above);
    out.set_attribute("input", o->input.path);
    out.set_attribute("phase_label", o->phase);
    out.set_attribute("boundary", to_string(boundary));
    out.set_attribute("backend", to_string(backend));
    out.set_attribute("seconds", seconds);
    out.set_provenance(command_line);
    out.commit();
    std::printf("\nwrote %s\n", o->output.c_str());
    return 0;
  };
}

}  // namespace poreforge::app
