#include "options.hpp"

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>

#include "poreforge/error.hpp"

namespace poreforge::app {

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
Shape parse_shape(const std::string& text, const std::string& what) {
  const auto v = parse_numbers(text, what);
  if (v.size() != 2 && v.size() != 3) throw InputError(what + ": expected NX,NY,NZ or NX,NY (got '" + text + "')");
  for (double d : v)
    if (d < 1 || d != std::floor(d)) throw InputError(what + ": extents must be positive integers (got '" + text + "')");
  // Checked before the conversion: 1e30 does not fit an int64_t.
  for (double d : v)
    if (d > 32767) throw InputError(what + ": extents above 32767 voxels are not supported (got '" + text + "')");
  Shape s{int64_t(v[0]), int64_t(v[1]), v.size() == 3 ? int64_t(v[2]) : 1};
  validate_shape(s);
  return s;
}

// "S" (isotropic) or "SX,SY,SZ".
Spacing parse_spacing(const std::string& text, const std::string& what) {
  const auto v = parse_numbers(text, what);
  if (v.size() != 1 && v.size() != 3) throw InputError(what + ": expected S or SX,SY,SZ (got '" + text + "')");
  Spacing s = v.size() == 1 ? Spacing{v[0], v[0], v[0]} : Spacing{v[0], v[1], v[2]};
  validate_spacing(s);
  return s;
}

void InputOptions::add_to(CLI::App* cmd, const std::string& name, const std::string& help) {
  const std::string o = "--" + prefix;
  if (name.empty()) {
  } else if (prefix.empty()) {
    cmd->add_option(name, path, help)->required();
  } else {
    cmd->add_option("--" + name, path, help)->required();
  }
  cmd->add_option(o + "format", format, "Format: auto (by extension), hdf5, raw, tiff")
      ->check(CLI::IsMember({"auto", "hdf5", "raw", "tiff"}));
  cmd->add_option(o + "dataset", dataset, "HDF5 dataset path (default: the only 2D/3D dataset)");
  cmd->add_option(o + "shape", shape, "Raw input shape NX,NY,NZ (x fastest)");
  cmd->add_option(o + "dtype", dtype, "Raw input element type: u8, u16, i32, f32")
      ->check(CLI::IsMember({"u8", "u16", "i32", "f32"}));
  cmd->add_option(o + "spacing", spacing, "Voxel spacing S or SX,SY,SZ in physical units (overrides the file's)");
}

LabelImage InputOptions::read(const std::function<MemoryEstimate(const Shape&, std::size_t, const Spacing&)>& estimate) const {
  ReadOptions o;
  o.format = format;
  o.dataset = dataset;
  o.dtype = parse_dtype(dtype);
  if (!shape.empty()) o.shape = parse_shape(shape, "--" + prefix + "shape");
  const std::optional<Spacing> given = spacing.empty() ? std::nullopt : std::optional<Spacing>(parse_spacing(spacing, "--" + prefix + "spacing"));
  o.before_read = [&](const Shape& s, DType t, const Spacing& file_spacing) {
    require_memory(estimate ? estimate(s, dtype_size(t), given.value_or(file_spacing))
                            : MemoryEstimate{"reading " + to_string(s), double(s.voxels()) * double(dtype_size(t)), 0});
  };
  LabelImage image = read_image(path, o);
  if (given) {  // the file's unit was its spacing's, not this one's
    image.spacing = *given;
    image.spacing_unit.clear();
  }
  return image;
}

void EngineOptions::add_to(CLI::App* cmd, const std::string& phase_help, const std::string& bins_help) {
  cmd->add_option("--phase", phase, phase_help);
  cmd->add_option("--boundary", boundary, "Beyond the faces: open (nothing), wall (other phase), periodic")
      ->check(CLI::IsMember({"open", "wall", "periodic"}));
  auto* bins_option = cmd->add_option("--bins", bins, bins_help)->check(CLI::Range(1, 100000));
  cmd->add_option("--edges", edges, "Explicit PSD bin edges E1,E2,... (physical units)")->excludes(bins_option);
  cmd->add_flag("--log-bins", log_bins, "Log-spaced bins")->excludes(cmd->get_option("--edges"));
  cmd->add_option("--backend", backend, "Engine backend: auto, cpu, cuda")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd->add_flag("--force", force, "Overwrite an existing output file");
}

void RealismCliOptions::add_to(CLI::App* cmd, CLI::Option* needs) {
  CLI::Option* k = cmd->add_option("--permeability", permeability,
                                   "Lattice-Boltzmann permeability along x, y, z: off (default; seconds on a GPU for "
                                   "128^3 against 12 sub-volumes, hours on a few CPU cores), on, or auto (on with the "
                                   "CUDA backend)")
                       ->check(CLI::IsMember({"auto", "on", "off"}));
  CLI::Option* tolerance =
      cmd->add_option("--permeability-tolerance", permeability_tolerance,
                      "The flows' steady state: their mean velocity's estimated distance from its limit, relative "
                      "(default 1e-3; each tenfold tighter costs more lattice steps)")
          ->check(CLI::Validator(
              [](std::string& text) {
                char* end = nullptr;
                const double v = std::strtod(text.c_str(), &end);
                return end != text.c_str() && *end == '\0' && v > 0 && v <= 0.1
                           ? std::string()
                           : "must be a number above 0 and at most 0.1, not '" + text + "'";
              },
              "in (0, 0.1]"));
  CLI::Option* unit = cmd->add_option("--length-unit", length_unit,
                                      "Unit of the spacing (m, mm, um, nm), for the permeability in mD (default: the "
                                      "file's spacing_unit; without one, in squared spacing units)");
  if (needs) {
    k->needs(needs);
    tolerance->needs(needs);
    unit->needs(needs);
  }
}

void RealismCliOptions::check() const {
  if (!length_unit.empty() && unit_in_metres(length_unit) == 0)
    throw InputError("--length-unit: '" + length_unit + "' is not a length unit (m, mm, um, nm)");
}

bool RealismCliOptions::permeability_on(Backend backend) const {
  return permeability == "on" || (permeability == "auto" && backend == Backend::cuda);
}

void RealismCliOptions::require_cubic_voxels(Backend backend, const Spacing& spacing) const {
  if (permeability_on(backend) && !spacing.isotropic())
    throw InputError("the permeability needs cubic voxels (spacing " + to_string(spacing) +
                     "): use --permeability off");
}

std::string RealismCliOptions::unit(const LabelImage& image) const {
  return length_unit.empty() ? image.spacing_unit : length_unit;
}

RealismOptions RealismCliOptions::realism_options(Backend backend, const std::string& unit) const {
  RealismOptions o;
  o.backend = backend;
  o.permeability = permeability_on(backend);
  o.permeability_tolerance = permeability_tolerance;
  o.unit_metres = unit_in_metres(unit);
  o.length_unit = unit;
  return o;
}

void require_writable_folder(const std::string& output) {
  const std::filesystem::path parent = std::filesystem::path(output).parent_path();
  const std::string folder = parent.empty() ? "." : parent.string();
  if (!std::filesystem::is_directory(folder))
    throw InputError("cannot write '" + output + "': directory '" + folder + "' does not exist");
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    throw InputError("cannot write '" + output + "': " + std::strerror(errno) + " (directory '" + folder + "')");
}

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

// The phase mask of a labelled image, refused unless the image is binary and the phase
// neither empty nor everything.
Mask binary_phase(const LabelImage& image, double label, const std::string& what) {
  const LabelCounts labels = count_labels(image, 3);
  std::string list;
  for (const auto& entry : labels.counts) list += (list.empty() ? "" : ", ") + format_number(entry.first);
  if (labels.truncated || labels.counts.size() > 2)
    throw InputError(what + " is not a binary image (labels " + list + (labels.truncated ? ", …" : "") +
                     "): the realism measures take pore/solid images");
  const bool present = std::any_of(labels.counts.begin(), labels.counts.end(),
                                   [&](const auto& entry) { return entry.first == label; });
  if (!present)
    throw InputError(what + " has no voxel of label " + format_number(label) + " (labels present: " + list + ")");
  Mask phase = phase_mask(image, label);
  const int64_t n = count_phase(phase);
  if (n == phase.voxels())
    throw InputError(what + " is all phase (label " + format_number(label) + "): nothing to measure");
  return phase;
}

}  // namespace poreforge::app
