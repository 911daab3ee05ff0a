#include "sweep_plan.hpp"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "poreforge/error.hpp"
#include "run_config.hpp"
#include "run_folder.hpp"

namespace poreforge::app {
namespace {

[[noreturn]] void fail(const std::string& source, const YAML::Node& at, const std::string& what) {
  const int line = at.IsDefined() ? at.Mark().line + 1 : 0;
  throw InputError(source + (line > 0 ? ":" + std::to_string(line) : "") + ": " + what);
}

std::string scalar_text(const YAML::Node& v) {
  YAML::Emitter e;
  e << YAML::Flow << v;
  return e.c_str();
}

// The sweep places its runs itself: <output>/<name>/<name>-NNN.
void refuse_key(const std::string& source, const YAML::Node& key, const std::string& where) {
  const std::string k = key.as<std::string>();
  if (k == "output.directory" || k == "output")
    fail(source, key, where + ": the sweep puts its runs in <output>/<name>; set output in the sweep file instead");
}

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

Sweep parse_sweep(const std::string& text, const std::string& source, const std::string& folder) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(source + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  if (!root.IsMap()) fail(source, root, "a sweep file must be a mapping");
  Sweep sweep;
  std::vector<std::pair<std::string, std::vector<std::string>>> grid;
  std::vector<std::vector<std::pair<std::string, std::string>>> listed;
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    if (key == "name") {
      sweep.name = v.as<std::string>();
      // The sweep's folder: `.` or `..` here once let --force empty the folder above it.
      if (const std::string problem = folder_name_problem(sweep.name); !problem.empty()) fail(source, v, "name " + problem);
    } else if (key == "base") {
      sweep.base_config = v.as<std::string>();
    } else if (key == "output") {
      sweep.output = v.as<std::string>();
    } else if (key == "grid") {
      if (!v.IsMap()) fail(source, v, "grid must map dotted keys to lists of values");
      for (const auto& g : v) {
        if (!g.second.IsSequence() || g.second.size() == 0)
          fail(source, g.second, "grid." + g.first.as<std::string>() + " must be a non-empty list");
        refuse_key(source, g.first, "grid." + g.first.as<std::string>());
        std::vector<std::string> values;
        for (const auto& x : g.second) values.push_back(scalar_text(x));
        grid.emplace_back(g.first.as<std::string>(), values);
      }
    } else if (key == "list") {
      if (!v.IsSequence()) fail(source, v, "list must be a list of mappings of dotted keys to values");
      for (const auto& item : v) {
        if (!item.IsMap()) fail(source, item, "each list entry must be a mapping");
        std::vector<std::pair<std::string, std::string>> sets;
        for (const auto& kv2 : item) {
          refuse_key(source, kv2.first, "list." + kv2.first.as<std::string>());
          sets.emplace_back(kv2.first.as<std::string>(), scalar_text(kv2.second));
        }
        listed.push_back(sets);
      }
    } else {
      fail(source, kv.first, key + " is not a known key (expected name, base, output, grid, list)");
    }
  }
  if (sweep.name.empty()) fail(source, root, "name is required");
  if (sweep.base_config.empty()) fail(source, root, "base (the run configuration to vary) is required");
  if (grid.empty() && listed.empty()) fail(source, root, "a sweep needs a grid or a list of overrides");
  if (std::filesystem::path(sweep.base_config).is_relative())
    sweep.base_config = (std::filesystem::path(folder) / sweep.base_config).lexically_normal().string();

  // Grid: the cartesian product, the last key varying fastest; then the listed entries.
  double runs = double(listed.size()), product = grid.empty() ? 0 : 1;
  for (const auto& g : grid) product *= double(g.second.size());
  runs += product;
  if (runs > double(kMaxSweepRuns))
    fail(source, root, "the grid and list make " + std::to_string(static_cast<long long>(runs)) + " runs, more than " +
                           std::to_string(kMaxSweepRuns) + " (split the sweep)");
  std::vector<std::vector<std::pair<std::string, std::string>>> all;
  if (!grid.empty()) {
    std::vector<std::size_t> at(grid.size(), 0);
    for (;;) {
      std::vector<std::pair<std::string, std::string>> sets;
      for (std::size_t k = 0; k < grid.size(); ++k) sets.emplace_back(grid[k].first, grid[k].second[at[k]]);
      all.push_back(sets);
      std::size_t k = grid.size();
      while (k > 0 && ++at[k - 1] == grid[k - 1].second.size()) at[--k] = 0;
      if (k == 0) break;
    }
  }
  all.insert(all.end(), listed.begin(), listed.end());
  for (std::size_t i = 0; i < all.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "-%03zu", i);
    sweep.combinations.push_back({sweep.name + name, all[i]});
  }
  return sweep;
}

void validate_sweep(const Sweep& sweep, const std::string& source) {
  const std::string folder = (std::filesystem::path(sweep.output) / sweep.name).string();
  // The base file alone first: its own mistakes are blamed on its own lines.
  load_run_config(sweep.base_config, {"output.directory=" + folder});
  std::map<std::string, std::string> named;  // run name -> the combination that named it
  for (const auto& c : sweep.combinations) {
    std::vector<std::string> sets = {"name=" + c.name, "output.directory=" + folder};
    std::string given;
    for (const auto& [k, v] : c.sets) {
      sets.push_back(k + "=" + v);
      given += (given.empty() ? "" : ", ") + k + "=" + v;
    }
    RunConfig rc;
    const std::string blame = source + ": run " + c.name + " (" + given + "): ";
    try {
      rc = load_run_config(sweep.base_config, sets);
    } catch (const InputError& e) {
      // The override is the sweep's (named in `blame`), not a --set of the command line.
      std::string what = e.what();
      for (const auto& s : sets)
        if (what.rfind("--set " + s + ": ", 0) == 0) what = what.substr(8 + s.size());
      throw InputError(blame + what);
    }
    for (const auto& [key, path] : {std::pair<const char*, const std::string*>{"target.image", &rc.target_image},
                                    {"target.descriptors", &rc.target_descriptors}, {"initial.file", &rc.initial_file}})
      if (!path->empty() && !std::filesystem::exists(*path))
        throw InputError(blame + key + " '" + *path + "' does not exist");
    const auto [at, fresh] = named.emplace(rc.name, c.name);
    if (!fresh)
      throw InputError(source + ": runs " + at->second + " and " + c.name + " would both be named '" + rc.name +
                       "' (one folder for two runs)");
  }
}

Sweep load_sweep(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("sweep file '" + path + "' cannot be read (missing?)");
  std::stringstream text;
  text << in.rdbuf();
  return parse_sweep(text.str(), path, std::filesystem::path(path).parent_path().string());
}

std::string combination_lines(const Sweep& sweep) {
  std::ostringstream out;
  for (const auto& c : sweep.combinations) {
    out << "--set " << quoted("name=" + c.name);
    for (const auto& [k, v] : c.sets) out << " --set " << quoted(k + "=" + v);
    out << "\n";
  }
  return out.str();
}

std::string slurm_script(const Sweep& sweep, const std::string& poreforge, const std::string& combinations_file) {
  std::ostringstream s;
  s << "#!/bin/bash\n"
    << "# Slurm job array for sweep '" << sweep.name << "': one task per combination.\n"
    << "# Submit with: sbatch " << sweep.name << ".slurm\n"
    << "#SBATCH --job-name=" << sweep.name << "\n"
    << "#SBATCH --array=0-" << sweep.combinations.size() - 1 << "\n"
    << "#SBATCH --gpus=1\n"
    << "#SBATCH --output=" << sweep.name << "-%a.out\n"
    << "set -euo pipefail\n"
    << "line=$(sed -n \"$((SLURM_ARRAY_TASK_ID + 1))p\" " << quoted(combinations_file) << ")\n"
    << "eval \"set -- $line\"\n"
    << "exec " << quoted(poreforge) << " run " << quoted(std::filesystem::absolute(sweep.base_config).string())
    << " \"$@\" --set "
    << quoted("output.directory=" + std::filesystem::absolute(std::filesystem::path(sweep.output) / sweep.name).string())
    << " --quiet\n";
  return s.str();
}

}  // namespace poreforge::app
