#include "commands.hpp"

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <filesystem>
#include <cstdio>
#include <memory>
#include <sstream>

#include "poreforge/backend.hpp"
#include "poreforge/correlation.hpp"
#include "poreforge/error.hpp"
#include "poreforge/generators.hpp"
#include "poreforge/io.hpp"
#include "poreforge/local_thickness.hpp"
#include "poreforge/memory.hpp"
#include "poreforge/morphology.hpp"
#include "poreforge/psd.hpp"

namespace poreforge::app {
namespace {

std::vector<double> parse_numbers(const std::string& text, const std::string& what) {
  std::vector<double> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    // strtod, not stod: a number too small or large for a double (1e-320, 1e400) is still a
    // number, refused by the range check of whoever takes it rather than called "not a number".
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || end != item.c_str() + item.size() || std::isspace(static_cast<unsigned char>(item[0])))
      throw InputError(what + ": '" + item + "' is not a number");
    out.push_back(v);
  }
  return out;
}

// "NX,NY,NZ" or "NX,NY" (a 2D image, nz = 1).
Shape parse_shape(const std::string& text) {
  const auto v = parse_numbers(text, "--shape");
  if (v.size() != 2 && v.size() != 3) throw InputError("--shape: expected NX,NY,NZ or NX,NY (got '" + text + "')");
  for (double d : v)
    if (d < 1 || d != std::floor(d)) throw InputError("--shape: extents must be positive integers (got '" + text + "')");
  // Checked before the conversion: 1e30 does not fit an int64_t.
  for (double d : v)
    if (d > 32767) throw InputError("--shape: extents above 32767 voxels are not supported (got '" + text + "')");
  Shape s{int64_t(v[0]), int64_t(v[1]), v.size() == 3 ? int64_t(v[2]) : 1};
  validate_shape(s);
  return s;
}

// "S" (isotropic) or "SX,SY,SZ".
Spacing parse_spacing(const std::string& text) {
  const auto v = parse_numbers(text, "--spacing");
  if (v.size() != 1 && v.size() != 3) throw InputError("--spacing: expected S or SX,SY,SZ (got '" + text + "')");
  Spacing s = v.size() == 1 ? Spacing{v[0], v[0], v[0]} : Spacing{v[0], v[1], v[2]};
  validate_spacing(s);
  return s;
}

struct InputOptions {
  std::string path, format = "auto", dataset, shape, dtype = "u8", spacing;

  void add_to(CLI::App* cmd) {
    cmd->add_option("input", path, "Input image: HDF5 (.h5), raw (.raw, needs --shape) or TIFF stack (.tif)")
        ->required();
    cmd->add_option("--format", format, "Input format: auto (by extension), hdf5, raw, tiff")
        ->check(CLI::IsMember({"auto", "hdf5", "raw", "tiff"}));
    cmd->add_option("--dataset", dataset, "HDF5 dataset path (default: the only 2D/3D dataset)");
    cmd->add_option("--shape", shape, "Raw input shape NX,NY,NZ (x fastest)");
    cmd->add_option("--dtype", dtype, "Raw input element type: u8, u16, i32, f32")
        ->check(CLI::IsMember({"u8", "u16", "i32", "f32"}));
    cmd->add_option("--spacing", spacing, "Voxel spacing S or SX,SY,SZ in physical units (overrides the file's)");
  }

  /// Reads the image; `estimate` (given the declared shape, element size and the spacing the
  /// command will use) is checked against the memory available before the voxels are read.
  LabelImage read(const std::function<MemoryEstimate(const Shape&, std::size_t, const Spacing&)>& estimate = {}) const {
    ReadOptions o;
    o.format = format;
    o.dataset = dataset;
    o.dtype = parse_dtype(dtype);
    if (!shape.empty()) o.shape = parse_shape(shape);
    const std::optional<Spacing> given = spacing.empty() ? std::nullopt : std::optional<Spacing>(parse_spacing(spacing));
    o.before_read = [&](const Shape& s, DType t, const Spacing& file_spacing) {
      require_memory(estimate ? estimate(s, dtype_size(t), given.value_or(file_spacing))
                              : MemoryEstimate{"reading " + to_string(s), double(s.voxels()) * double(dtype_size(t)), 0});
    };
    LabelImage image = read_image(path, o);
    if (given) image.spacing = *given;
    return image;
  }
};

// The options `thickness` and `describe` share: phase, boundary, bins, backend, --force.
struct EngineOptions {
  std::string boundary = "open", backend = "auto", edges;
  double phase = 1;
  int bins = 20;
  bool log_bins = false, force = false;

  void add_to(CLI::App* cmd, const std::string& phase_help, const std::string& bins_help) {
    cmd->add_option("--phase", phase, phase_help);
    cmd->add_option("--boundary", boundary, "Beyond the faces: open (nothing), wall (other phase), periodic")
        ->check(CLI::IsMember({"open", "wall", "periodic"}));
    auto* bins_option = cmd->add_option("--bins", bins, bins_help)->check(CLI::Range(1, 100000));
    cmd->add_option("--edges", edges, "Explicit PSD bin edges E1,E2,... (physical units)")->excludes(bins_option);
    cmd->add_flag("--log-bins", log_bins, "Log-spaced bins")->excludes(cmd->get_option("--edges"));
    cmd->add_option("--backend", backend, "Engine backend: auto, cpu, cuda")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
    cmd->add_flag("--force", force, "Overwrite an existing output file");
  }
};

// The folder an output goes into must exist and take a new file, checked before any work
// (with the system's reason: "Permission denied", "Read-only file system").
void require_writable_folder(const std::string& output) {
  const std::filesystem::path parent = std::filesystem::path(output).parent_path();
  const std::string folder = parent.empty() ? "." : parent.string();
  if (!std::filesystem::is_directory(folder))
    throw InputError("cannot write '" + output + "': directory '" + folder + "' does not exist");
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    throw InputError("cannot write '" + output + "': " + std::strerror(errno) + " (directory '" + folder + "')");
}

// Explicit edges, checked before any work (empty: default bins from the map).
std::vector<double> checked_edges(const EngineOptions& e) {
  std::vector<double> edges;
  if (!e.edges.empty()) Bins::from_edges(edges = parse_numbers(e.edges, "--edges"));
  return edges;
}

void print_psd(const PoreSizeDistribution& psd, const std::string& quantity) {
  std::printf("\n  %-27s  %9s  %10s\n", (quantity + " bin (physical units)").c_str(), "fraction", "F(>=lo)");
  for (std::size_t i = 0; i < psd.fraction.size(); ++i) {
    const bool last = i + 1 == psd.fraction.size();
    std::printf("  [%11.4g, %11.4g%c  %9.5f  %10.5f\n", psd.edges[i], psd.edges[i + 1], last ? ']' : ')',
                psd.fraction[i], psd.cumulative[i]);
  }
  if (psd.below > 0 || psd.above > 0)
    std::printf("  outside the edges: %.5f below, %.5f above\n", psd.below, psd.above);
}

}  // namespace

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
    std::printf("backend   %s\n", backend == Backend::cuda ? ("cuda: " + cuda_device_description()).c_str()
                                                          : ("cpu: " + std::to_string(cpu_threads()) + " threads").c_str());
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
  };
}

Runner add_describe_command(CLI::App& app, const std::string& command_line) {
  struct Options : EngineOptions {
    InputOptions input;
    std::string output;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "describe", "Descriptors of an image for reconstruction targets: PSD of both phases, directional and radial S2");
  o->input.add_to(cmd);
  cmd->add_option("-o,--output", o->output, "Output HDF5 descriptor file")->required();
  o->add_to(cmd, "Label of the pore phase (default 1); the solid is everything else",
            "PSD bins per phase over [min, max] thickness (default 20); --edges apply to both phases");

  return [o, command_line] {
    const Boundary boundary = parse_boundary(o->boundary);
    const Backend backend = resolve_backend(parse_backend(o->backend), Operation::local_thickness);
    const std::vector<double> edges = checked_edges(*o);
    OutputFile out(o->output, o->force);
    const LabelImage image = o->input.read([&](const Shape& s, std::size_t bytes, const Spacing& spacing) {
      return thickness_memory(s, bytes, spacing, boundary, backend, true);
    });
    const Mask pore = phase_mask(image, o->phase);
    const Mask solid = complement(pore);
    const double porosity = double(count_phase(pore)) / double(pore.voxels());
    std::printf("input     %s: %s %s, porosity %.4f (label %s)\n", o->input.path.c_str(), to_string(image.shape).c_str(),
                to_string(image.dtype).c_str(), porosity, format_number(o->phase).c_str());
    const auto start = std::chrono::steady_clock::now();
    for (const auto& [name, phase] : {std::pair<const char*, const Mask*>{"pore", &pore}, {"solid", &solid}}) {
      const Volume<float> map = local_thickness(*phase, boundary, backend);
      const Bins bins = edges.empty() ? default_bins(map, *phase, o->bins, o->log_bins) : Bins::from_edges(edges);
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
  };
}

Runner add_morph_command(CLI::App& app, const std::string& command_line) {
  struct Options {
    InputOptions input;
    std::string output, op, element, backend = "auto";
    double phase = 1;
    int iterations = 1;
    bool force = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("morph", "Binary erosion, dilation, opening or closing of an image or volume");
  o->input.add_to(cmd);
  cmd->add_option("-o,--output", o->output, "Output: HDF5 (.h5, dataset /volume), raw (.raw) or TIFF stack (.tif)")
      ->required();
  cmd->add_option("--op", o->op, "erode, dilate, open or close")->required()->check(CLI::IsMember({"erode", "dilate", "open", "close"}));
  cmd->add_option("--element", o->element, "box:KXxKY, box:KXxKYxKZ (anchor at the centre, as OpenCV) or ball:R (physical units)")
      ->required();
  cmd->add_option("--iterations", o->iterations, "Times to apply (open/close: each half)")->check(CLI::Range(1, 100000));
  cmd->add_option("--phase", o->phase, "Label of the foreground (default 1)");
  cmd->add_option("--backend", o->backend, "auto, cpu or cuda")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd->add_flag("--force", o->force, "Overwrite an existing output file");

  return [o, command_line] {
    const StructuringElement element = StructuringElement::parse(o->element);
    const MorphOp op = parse_morph_op(o->op);
    const Backend backend = resolve_backend(parse_backend(o->backend), Operation::morphology);
    const std::string ext = std::filesystem::path(o->output).extension().string();
    if (o->output.empty()) throw InputError("the output path is empty");
    if (std::filesystem::exists(o->output) && !o->force)
      throw InputError("output '" + o->output + "' already exists (use --force to overwrite it)");
    if (ext == ".tif" || ext == ".tiff") {
      if (!tiff_supported()) throw InputError("cannot write '" + o->output + "': this build has no TIFF support");
    } else if (ext != ".raw" && ext != ".h5" && ext != ".hdf5") {
      throw InputError("output '" + o->output + "': expected .h5, .raw or .tif");
    }
    require_writable_folder(o->output);
    const LabelImage image = o->input.read([&](const Shape& s, std::size_t bytes, const Spacing&) {
      return morph_memory(s, bytes, backend);
    });
    const Mask in = phase_mask(image, o->phase);
    const auto start = std::chrono::steady_clock::now();
    const Mask out = morphology(in, op, element, o->iterations, backend);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (ext == ".raw") {
      const std::string temp = o->output + ".tmp";
      write_raw(temp, out);
      std::filesystem::rename(temp, o->output);
    } else if (ext == ".tif" || ext == ".tiff") {
      write_tiff(o->output, out);
    } else {
      OutputFile h5(o->output, o->force);
      h5.write_volume("/volume", out);
      h5.set_attribute("operation", o->op);
      h5.set_attribute("element", element.to_string());
      h5.set_attribute("iterations", double(o->iterations));
      h5.set_attribute("backend", to_string(backend));
      h5.set_provenance(command_line);
      h5.commit();
    }
    std::printf("%s %s x%d on %s (%s): %lld -> %lld foreground voxels in %.3f s (%s)\nwrote %s\n", o->op.c_str(),
                element.to_string().c_str(), o->iterations, to_string(image.shape).c_str(), o->input.path.c_str(),
                static_cast<long long>(count_phase(in)), static_cast<long long>(count_phase(out)), seconds,
                to_string(backend).c_str(), o->output.c_str());
  };
}

Runner add_generate_command(CLI::App& app, const std::string& command_line) {
  struct Options {
    std::string kind, shape, output, spacing;
    double porosity = 0.4, blobiness = 1.0, radius = 5.0;
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
  cmd->add_option("--radius", o->radius, "spheres: sphere radius in voxels (default 5)");
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
                        : generate_spheres(shape, o->porosity, o->radius, seed);
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
    out.set_attribute("labels", std::string("1 = phase (pore), 0 = other"));
    out.set_provenance(command_line);
    out.commit();
    std::printf("generated %s %s, porosity %.4f, seed %llu in %.2f s\nwrote %s\n", o->kind.c_str(),
                to_string(shape).c_str(), porosity, static_cast<unsigned long long>(seed), seconds,
                o->output.c_str());
  };
}

Runner add_info_command(CLI::App& app) {
  auto input = std::make_shared<InputOptions>();
  CLI::App* cmd = app.add_subcommand("info", "Shape, element type, spacing and label counts of an image");
  input->add_to(cmd);
  return [input] {
    const LabelImage image = input->read([](const Shape& s, std::size_t bytes, const Spacing&) {
      return MemoryEstimate{"info of " + to_string(s), double(s.voxels()) * double(bytes) * 1.1, 0};
    });
    std::printf("file      %s\nshape     %s (x, y, z)\ndtype     %s\nspacing   %g, %g, %g\n", input->path.c_str(),
                to_string(image.shape).c_str(), to_string(image.dtype).c_str(), image.spacing.x, image.spacing.y,
                image.spacing.z);
    const LabelCounts labels = count_labels(image, 32);
    const double total = double(image.shape.voxels());
    std::printf("labels    %s\n", labels.truncated ? "(more than 32 distinct values: a grey-level image?)" : "");
    for (auto& [value, count] : labels.counts)
      std::printf("  %-12s %12lld  %.4f\n", format_number(value).c_str(), static_cast<long long>(count),
                  double(count) / total);
  };
}

}  // namespace poreforge::app
