#pragma once
// The YAML run configuration: schema, defaults, validation with the dotted path and line of
// every offending key, read straight into the annealer's configuration (RunConfig::loop).
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "poreforge/annealer/annealer.hpp"
#include "poreforge/io.hpp"

namespace poreforge::app {

struct RunConfig {
  std::string name = "run";
  // target: a reference image or a descriptor file
  std::string target_image, target_descriptors, target_format = "auto", target_dataset;
  std::optional<Shape> target_shape;
  std::string target_dtype = "u8";
  double target_phase = 1;
  std::string target_boundary = "open";
  // descriptors
  int bins = 20;
  bool log_bins = false;
  /// The loop's configuration — descriptors.weights, domain (shape, spacing, boundary),
  /// annealing, moves and seed as read; the targets, the start and the backend once resolved.
  anneal::Config loop = [] {
    anneal::Config c;
    c.shape = {64, 64, 64};
    return c;
  }();
  bool spacing_given = false;  ///< false: the reference's spacing, set once the target is read
  bool keep_pore_connected_given = false;  ///< false: on exactly for a connected blobs or grains start
  /// Wall-clock limit of one session of the loop (run, or each resume), 0: none. Stops with
  /// `time_limit` and the full outputs; the seed's run is then cut where the clock says.
  double max_seconds = 0;
  /// A check while the loop runs (0: off): every this many evaluations the running energy, kept
  /// by each term's incremental update, is compared with every term recounted from scratch,
  /// and the run stops with an error naming the term when they differ.
  int64_t verify_every = 0;
  /// Coarse-to-fine levels (1: none). With n levels the run first reconstructs the same box
  /// (odd extents rounded down) on grids 2^(n−1), …, 2 times coarser, each level's targets from the reference coarsened as
  /// much and each level started from the one before, refined; the start named under
  /// `initial` is built at the coarsest level. Each coarser level runs max_evaluations / n
  /// evaluations at most and an even share of what is left of max_seconds (its start
  /// counted); the finest level has what they leave.
  int levels = 1;
  /// `levels: auto`: two levels where the reference survives being coarsened, else one
  /// (run_session.cpp's choose_levels); the run resolves it before its start.
  bool levels_auto = false;
  std::string initial = "noise";  ///< noise | blobs | file: the starting structure, porosity-matched
  double initial_blobiness = 1.0; ///< blobs: PoreSpy's blobiness (larger, smaller features)
  bool initial_blobiness_auto = false;  ///< blobs, `blobiness: auto`: the size nearest the target PSD
  double initial_grain_radius = 0;      ///< grains: the spheres' radius in voxels
  bool initial_grain_radius_auto = true;  ///< grains, `grain_radius: auto`: the radius nearest the targets
  /// grains: the radii's coefficient of variation (log-normal; 0: one radius)
  double initial_grain_spread = 0;
  /// grains, `grain_spread: auto`: chosen with an auto radius; with a radius given, 0
  bool initial_grain_spread_auto = true;
  /// grains: the spheres' stretch along x, y, z (ellipsoids; 1, 1, 1: spheres)
  std::array<double, 3> initial_grain_stretch{1.0, 1.0, 1.0};
  /// grains, `grain_stretch: auto`: as elongated as the reference's solid chords (grain_stretch)
  bool initial_grain_stretch_auto = true;
  /// blobs: the start's clusters made the reference's (connect_largest_cluster; read for blobs
  /// only); default: on unless large pores are planted
  bool initial_connect = true;
  /// blobs or grains: starts drawn (from seeds mixed from the run's), the one whose formation
  /// factors along x, y, z lie nearest the reference's kept (run_session.cpp's
  /// choose_start_draw); 1: the run's seed's own. Read for blobs and grains only.
  int initial_draws = 1;
  bool initial_plant_large_pores = false;  ///< blobs or file: balls for the target's PSD bins the start misses
  /// file: a structure to start from (HDF5 or TIFF; a coarser run's final.h5), resampled to
  /// the domain and cut at the target's pore count; its dataset and the label of its pores.
  std::string initial_file, initial_dataset;
  double initial_phase = 1;
  std::string backend = "auto";
  // output
  std::string output_directory = "results";
  int64_t report_every = 1000;
  bool tiff = false;  ///< also write final.tif (needs a build with libtiff)
  // checkpoint
  int64_t checkpoint_every_evaluations = 10000;  ///< 0: only at the end and on a signal
  double checkpoint_every_seconds = 600;         ///< 0: off
  int checkpoint_keep = 3;

  /// The resolved configuration as YAML (every key, defaults filled in).
  std::string to_yaml() const;
};

/// Parses a YAML document (its text) with `--set a.b=value` overrides applied. Throws
/// InputError naming `source`, the dotted key and the line for an unknown key, a wrong type,
/// an out-of-range value or a missing required key.
RunConfig parse_run_config(const std::string& text, const std::string& source,
                           const std::vector<std::string>& overrides = {});
RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides = {});

}  // namespace poreforge::app
