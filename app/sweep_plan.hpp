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

/// More runs than this in one sweep file are refused as it is read (before the grid is
/// expanded in memory); `sweep --max-runs` sets a lower limit for the command.
constexpr long long kMaxSweepRuns = 1000000;

/// Parses a sweep file; `source` names it in errors (key and line, as for run configs). The
/// base config path is resolved relative to the sweep file.
Sweep parse_sweep(const std::string& text, const std::string& source, const std::string& folder);
Sweep load_sweep(const std::string& path);
/// Reads every combination's run configuration (the base file with its overrides) before a
/// sweep writes anything: an error of the base file names its line, an error a combination's
/// override causes names the run and the override (`source`: the sweep file), a missing input
/// file is named, and two runs that would share a name are refused.
void validate_sweep(const Sweep& sweep, const std::string& source);

/// The Slurm job-array script running one combination per task (sbatch --array=0-(n-1)).
std::string slurm_script(const Sweep& sweep, const std::string& poreforge, const std::string& combinations_file);
/// One line per combination: the `--set` arguments of `poreforge run`, shell-quoted.
std::string combination_lines(const Sweep& sweep);

}  // namespace poreforge::app
