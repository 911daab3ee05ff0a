// poreforge generate blobs|spheres: seeded test structures.
#include "commands.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <cstdio>
#include <memory>

#include "poreforge/error.hpp"
#include "poreforge/generators.hpp"
#include "poreforge/io.hpp"
#include "poreforge/memory.hpp"

#include "options.hpp"

namespace poreforge::app {

Runner add_generate_command(CLI::App& app, const std::string& command_line) {
  struct Options {
    std::string kind, shape, output, spacing;
    double porosity = 0.4, blobiness = 1.0, radius = 5.0, radius_spread = 0.0;
    int64_t seed = 1;
    bool force = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate a seeded test structure (phase = 1)");
  cmd->add_option("kind", o->kind, "blobs (Gaussian-filtered noise) or spheres (overlapping solid spheres)")
      ->required()
      ->check(CLI::IsMember({"blobs", "spheres"}));
  cmd->add_option("--shape", o->shape, "Shape NX,NY,NZ")->required();
  cmd->add_option("--porosity", o->porosity, "Fraction of phase voxels, in (0, 1) (default 0.4)");
  cmd->add_option("--blobiness", o->blobiness, "blobs: larger gives smaller features (default 1)");
  cmd->add_option("--radius", o->radius, "spheres: sphere radius in voxels (default 5; the mean with --radius-spread)");
  cmd->add_option("--radius-spread", o->radius_spread,
                  "spheres: log-normal radii with this coefficient of variation (default 0: one radius)");
  // Signed, so that -1 is refused instead of wrapping to 2^64 - 1.
  cmd->add_option("--seed", o->seed, "Random seed, a non-negative integer (default 1)");
  cmd->add_option("--spacing", o->spacing, "Voxel spacing S or SX,SY,SZ stored with the volume");
  cmd->add_option("-o,--output", o->output, "Output HDF5 file (dataset /volume)")->required();
  cmd->add_flag("--force", o->force, "Overwrite an existing output file");

  return [o, command_line] {
    const Shape shape = parse_shape(o->shape);
    const bool blobs = o->kind == "blobs";
    const std::optional<Spacing> spacing =
        o->spacing.empty() ? std::nullopt : std::optional<Spacing>(parse_spacing(o->spacing));
    if (o->seed < 0) throw InputError("--seed must be a non-negative integer (got " + std::to_string(o->seed) + ")");
    // A sphere wider than the volume wraps onto itself and leaves no pore to match a porosity.
    const int64_t largest = std::max({shape.nx, shape.ny, shape.nz});
    if (!blobs && o->radius > double(largest))
      throw InputError("--radius: sphere radius " + format_number(o->radius) + " voxels exceeds the volume's largest "
                       "extent (" + std::to_string(largest) + " voxels)");
    OutputFile out(o->output, o->force);
    require_memory(generate_memory(shape, blobs));
    const auto start = std::chrono::steady_clock::now();
    const uint64_t seed = static_cast<uint64_t>(o->seed);
    Mask volume = blobs ? generate_blobs(shape, o->porosity, o->blobiness, seed)
                        : generate_spheres(shape, o->porosity, o->radius, seed, o->radius_spread);
    if (spacing) volume.set_spacing(*spacing);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double porosity = double(count_phase(volume)) / double(volume.voxels());
    // Blobs hit the asked porosity to the voxel; spheres overshoot by at most one sphere.
    const double slack = blobs ? 1.0 / double(volume.voxels()) + 1e-12 : 0.05;
    if (std::abs(porosity - o->porosity) > slack) {
      if (blobs)
        throw RuntimeError("generated porosity " + format_number(porosity) + " where " + format_number(o->porosity) +
                           " was asked (blobiness " + format_number(o->blobiness) + ")");
      std::fprintf(stderr, "poreforge: warning: porosity %.4f where %g was asked: one sphere of radius %g covers "
                   "much of a %s volume\n", porosity, o->porosity, o->radius, to_string(shape).c_str());
    }
    out.write_volume("/volume", volume);
    out.set_attribute("generator", o->kind);
    out.set_attribute("seed", static_cast<double>(o->seed));
    out.set_attribute("porosity", porosity);
    out.set_attribute(o->kind == "blobs" ? "blobiness" : "radius", o->kind == "blobs" ? o->blobiness : o->radius);
    if (!blobs) out.set_attribute("radius_spread", o->radius_spread);
    out.set_attribute("labels", std::string("1 = phase (pore), 0 = other"));
    out.set_provenance(command_line);
    out.commit();
    std::printf("generated %s %s, porosity %.4f, seed %llu in %.2f s\nwrote %s\n", o->kind.c_str(),
                to_string(shape).c_str(), porosity, static_cast<unsigned long long>(seed), seconds,
                o->output.c_str());
    return 0;
  };
}

}  // namespace poreforge::app
