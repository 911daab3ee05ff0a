// poreforge describe IMAGE -o DESC.h5: the descriptors a reconstruction targets.
#include "commands.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <memory>

#include "poreforge/backend.hpp"
#include "poreforge/correlation.hpp"
#include "poreforge/error.hpp"
#include "poreforge/io.hpp"
#include "poreforge/local_thickness.hpp"
#include "poreforge/memory.hpp"
#include "poreforge/psd.hpp"

#include "options.hpp"
#include "poreforge/realism.hpp"

namespace poreforge::app {

Runner add_describe_command(CLI::App& app, const std::string& command_line) {
  struct Options : EngineOptions {
    InputOptions input;
    RealismCliOptions realism;
    std::string output;
    bool measures = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "describe", "Descriptors of an image for reconstruction targets: PSD of both phases, directional and radial S2");
  o->input.add_to(cmd);
  cmd->add_option("-o,--output", o->output, "Output HDF5 descriptor file")->required();
  o->add_to(cmd, "Label of the pore phase (default 1); the solid is everything else",
            "PSD bins per phase over [min, max] thickness (default 20); --edges apply to both phases");
  CLI::Option* measures = cmd->add_flag("--measures", o->measures,
                "Also the realism measures of `compare` (Euler density, clusters, spanning, formation factors, "
                "chords, lineal paths, …) under /measures, the targets a realism term of the annealer would use");
  o->realism.add_to(cmd, measures);

  return [o, command_line] {
    const Boundary boundary = parse_boundary(o->boundary);
    const Backend backend = resolve_backend(parse_backend(o->backend), Operation::local_thickness);
    const std::vector<double> edges = checked_edges(*o);
    o->realism.check();
    OutputFile out(o->output, o->force);
    const LabelImage image = o->input.read([&](const Shape& s, std::size_t bytes, const Spacing& spacing) {
      return thickness_memory(s, bytes, spacing, boundary, backend, true);
    });
    // The realism measures take pore/solid images, and the permeability cubic voxels: both
    // refused before any work.
    const Mask pore = o->measures ? binary_phase(image, o->phase, "the image '" + o->input.path + "'")
                                  : phase_mask(image, o->phase);
    if (o->measures) o->realism.require_cubic_voxels(backend, image.spacing);
    const Mask solid = complement(pore);
    const double porosity = double(count_phase(pore)) / double(pore.voxels());
    std::printf("input     %s: %s %s, porosity %.4f (label %s)\n", o->input.path.c_str(), to_string(image.shape).c_str(),
                to_string(image.dtype).c_str(), porosity, format_number(o->phase).c_str());
    const auto start = std::chrono::steady_clock::now();
    Bins pore_bins = Bins::linear(0, 1, 1);
    for (const auto& [name, phase] : {std::pair<const char*, const Mask*>{"pore", &pore}, {"solid", &solid}}) {
      const Volume<float> map = local_thickness(*phase, boundary, backend);
      const Bins bins = edges.empty() ? default_bins(map, *phase, o->bins, o->log_bins) : Bins::from_edges(edges);
      if (phase == &pore) pore_bins = bins;  // the realism measures' PSD shares them
      const PoreSizeDistribution psd = psd_from_thickness(map, *phase, bins);
      const std::string group = std::string("/psd/") + name;
      out.write_vector(group + "/edges", psd.edges);
      out.write_vector(group + "/fraction", psd.fraction);
      out.write_vector(group + "/cumulative", psd.cumulative);
      double mean = 0;
      for (std::size_t i = 0; i < psd.fraction.size(); ++i) mean += psd.fraction[i] * 0.5 * (psd.edges[i] + psd.edges[i + 1]);
      std::printf("psd       %-5s radius %.4g … %.4g, mean %.4g (physical units, %d bins)\n", name, psd.edges.front(),
                  psd.edges.back(), mean, bins.count());
    }
    const TwoPointCorrelation s2 = two_point_correlation(pore);
    out.write_vector("/s2/directional/x", s2.directional.x);
    out.write_vector("/s2/directional/y", s2.directional.y);
    out.write_vector("/s2/directional/z", s2.directional.z);
    out.write_vector("/s2/radial/r", s2.radial.r);
    out.write_vector("/s2/radial/s2", s2.radial.s2);
    out.write_vector("/s2/radial/vectors", std::vector<double>(s2.radial.vectors.begin(), s2.radial.vectors.end()));
    if (o->measures) {
      // The realism profile, each scalar an attribute-bearing dataset of one value and each
      // curve its x and y, under the names `compare` reports.
      const std::string unit = o->realism.unit(image);
      RealismOptions ro = o->realism.realism_options(backend, unit);
      ro.psd_bins = pore_bins;
      const RealismProfile profile = realism_profile(pore, ro);
      for (const std::string& w : profile.warnings) std::fprintf(stderr, "poreforge: warning: %s\n", w.c_str());
      for (const ScalarMeasure& m : profile.scalars) {
        out.write_vector("/measures/" + m.name, std::vector<double>{m.value});
        out.set_attribute("unit", m.unit, "/measures/" + m.name);
        std::printf("measure   %-26s %12.6g %s\n", m.name.c_str(), m.value, m.unit.c_str());
      }
      for (const CurveMeasure& c : profile.curves) {
        out.write_vector("/measures/curves/" + c.name + "/x", c.x);
        out.write_vector("/measures/curves/" + c.name + "/y", c.y);
        out.set_attribute("x_unit", c.x_unit, "/measures/curves/" + c.name + "/x");
      }
      if (!unit.empty()) out.set_attribute("spacing_unit", unit);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("s2        S2(0) %.4f, radial to r = %.4g (%zu bins), directional to %zu/%zu/%zu voxels\n",
                s2.radial.s2.front(), s2.radial.r.back(), s2.radial.r.size(), s2.directional.x.size() - 1,
                s2.directional.y.size() - 1, s2.directional.z.size() - 1);
    out.set_attribute("input", o->input.path);
    out.set_attribute("phase_label", o->phase);
    out.set_attribute("porosity", porosity);
    out.set_attribute("boundary", to_string(boundary));
    out.set_attribute("shape", to_string(image.shape));
    out.set_attribute("spacing", to_string(image.spacing));
    out.set_attribute("backend", to_string(backend));
    out.set_provenance(command_line);
    out.commit();
    std::printf("described in %.2f s\nwrote %s\n", seconds, o->output.c_str());
    return 0;
  };
}

}  // namespace poreforge::app
