#pragma once
// What the engine commands share: numbers, shapes and spacings from the command line, the
// options that read an input image, and the options of the commands that measure a phase.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "poreforge/backend.hpp"
#include "poreforge/io.hpp"
#include "poreforge/memory.hpp"
#include "poreforge/psd.hpp"
#include "poreforge/realism.hpp"
#include "poreforge/volume.hpp"

namespace CLI {
class App;
class Option;
}

namespace poreforge::app {

/// Comma-separated numbers; `what` names the option in the error.
std::vector<double> parse_numbers(const std::string& text, const std::string& what);
/// "NX,NY,NZ" or "NX,NY" (a 2D image, nz = 1); `what` names the option in the error.
Shape parse_shape(const std::string& text, const std::string& what = "--shape");
/// "S" (isotropic) or "SX,SY,SZ"; `what` names the option in the error.
Spacing parse_spacing(const std::string& text, const std::string& what = "--spacing");

/// How to read one input image: its path and layout options. `prefix` (e.g. "reference-")
/// names a second image's options (--reference-format, …) beside a first one's.
struct InputOptions {
  std::string path, format = "auto", dataset, shape, dtype = "u8", spacing;
  std::string prefix;

  /// Registers the path (positional `name` without a prefix, else the option --`name`; none
  /// when `name` is empty: the command registers its own) and the layout options.
  void add_to(CLI::App* cmd, const std::string& name = "input",
              const std::string& help = "Input image: HDF5 (.h5), raw (.raw, needs --shape) or TIFF stack (.tif)");

  /// Reads the image; `estimate` (given the declared shape, element size and the spacing the
  /// command will use) is checked against the memory available before the voxels are read.
  LabelImage read(const std::function<MemoryEstimate(const Shape&, std::size_t, const Spacing&)>& estimate = {}) const;
};

/// The options of the commands that measure a phase (thickness, describe): phase, boundary,
/// bins, backend, --force.
struct EngineOptions {
  std::string boundary = "open", backend = "auto", edges;
  double phase = 1;
  int bins = 20;
  bool log_bins = false, force = false;

  void add_to(CLI::App* cmd, const std::string& phase_help, const std::string& bins_help);
};

/// The options of the commands that take the realism measures (compare, describe --measures):
/// whether to run the costly permeability, and the spacing's unit for it.
struct RealismCliOptions {
  std::string permeability = "off", length_unit;
  double permeability_tolerance = RealismOptions{}.permeability_tolerance;

  /// Registers --permeability, --permeability-tolerance and --length-unit; with `needs`, only
  /// beside that option.
  void add_to(CLI::App* cmd, CLI::Option* needs = nullptr);
  /// Refuses an unknown --length-unit; call before any work.
  void check() const;
  /// Whether the permeability runs on `backend` ("auto": on the CUDA backend).
  bool permeability_on(Backend backend) const;
  /// Refuses a permeability that would run on voxels that are not cubes (the lattice needs
  /// them); call before any work.
  void require_cubic_voxels(Backend backend, const Spacing& spacing) const;
  /// The spacing's unit: --length-unit, else the one `image`'s file gives.
  std::string unit(const LabelImage& image) const;
  /// The measures' options these set, for `backend` and a spacing in `unit`.
  RealismOptions realism_options(Backend backend, const std::string& unit) const;
};

/// The folder an output goes into must exist and take a new file, checked before any work
/// (with the system's reason: "Permission denied", "Read-only file system").
void require_writable_folder(const std::string& output);

/// The phase mask of a labelled image for the realism measures, refused (InputError naming
/// `what`, e.g. "the reference 'r.h5'") unless the image is binary, the label occurs and the
/// phase is not everything.
Mask binary_phase(const LabelImage& image, double label, const std::string& what);
/// Explicit edges, checked before any work (empty: default bins from the map).
std::vector<double> checked_edges(const EngineOptions& e);
/// A PSD as a table on stdout.
void print_psd(const PoreSizeDistribution& psd, const std::string& quantity);

}  // namespace poreforge::app
