#pragma once
// `poreforge run` and `poreforge resume`: a reconstruction from a configuration, or continued
// from a checkpoint, into its run folder (locked while it runs), with progress, checkpoints,
// signals and the final outputs.
#include <cstdint>
#include <string>
#include <vector>

#include "poreforge/annealer/annealer.hpp"
#include "poreforge/volume.hpp"

namespace poreforge::app {

struct RunOptions {
  std::string config, output, backend;
  /// The configuration's YAML itself (the Python module's dict, as JSON); `config` then only
  /// names it in messages, and input paths are relative to the working directory.
  std::string config_text;
  std::vector<std::string> sets;  ///< `--set KEY=VALUE` overrides
  double max_seconds = -1;        ///< < 0: the configuration's
  bool force = false, quiet = false;
  std::string progress = "auto";  ///< auto, live, plain, json
};

struct ResumeOptions {
  std::string checkpoint;
  int64_t max_evaluations = 0;  ///< 0: the stored budget
  double max_seconds = -1;      ///< < 0: the stored limit, counted afresh
  bool quiet = false;
  std::string progress = "auto";
};

/// Why `backend: auto` puts a run's annealing loop on the CPU although a GPU is there; empty
/// where it does not. The openings term, which only the CPU's evaluation counts; or cubic
/// voxels, where the CPU's local evaluation outruns the device loop, which evaluates the whole
/// structure each step (docs/local-evaluation.md). Anisotropic voxels keep the GPU: the CPU
/// evaluates those from scratch.
std::string auto_host_loop_reason(const anneal::Config& loop);

/// Runs a reconstruction; returns the exit status (0, or 128 + a signal that stopped it) and,
/// in `folder` when given, the run folder (once it exists). The SIGINT and SIGTERM handlers it
/// installs are put back as they were when it returns.
int start_run(const RunOptions& options, const std::string& command_line, std::string* folder = nullptr);
/// Continues one exactly where its checkpoint left it, or finishes the outputs of a run that
/// met its budget before writing them; returns the exit status.
int resume_run(const ResumeOptions& options, const std::string& command_line);

}  // namespace poreforge::app
