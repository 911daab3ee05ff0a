#pragma once
// Parameter sweeps: a base run configuration and overrides (dotted keys) combined as a grid
// (every combination) and/or listed one by one.
#include <string>
#include <utility>
#include <vector>

namespace poreforge::app {

struct SweepCombination {
  std::string name;                                        ///< the run's name: <sweep>-NNN
  std::vector<std::pair<std::string, std::string>> sets;   ///< dotted key → YAML value
};

struct Sweep {
  std::string name, base_config, output = "results";
  std::vector<SweepCombination> combinations;
};

/// Parses a sweep file; `source` names it in errors (key and line, as for run configs). The
/// base config path is resolved relative to the sweep file.
Sweep parse_sweep(const std::string& text, const std::string& source, const std::string& folder);
Sweep load_sweep(const std::string& path);

/// The Slurm job-array script running one combination per task (sbatch --array=0-(n-1)).
std::string slurm_script(const Sweep& sweep, const std::string& poreforge, const std::string& combinations_file);
/// One line per combination: the `--set` arguments of `poreforge run`, shell-quoted.
std::string combination_lines(const Sweep& sweep);

}  // namespace poreforge::app
