// poreforge run CONFIG.yaml: a reconstruction from a YAML configuration into results/<name>/.
#include <CLI/CLI.hpp>

#include <memory>

#include "commands.hpp"
#include "run_session.hpp"

namespace poreforge::app {

Runner add_run_command(CLI::App& app, const std::string& command_line) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Reconstruct a structure from a YAML configuration (results/<name>/)");
  cmd->add_option("config", o->config, "YAML run configuration (see configs/)")->required();
  cmd->add_option("--set", o->sets, "Override a key: --set annealing.alpha=0.95 (repeatable)");
  cmd->add_option("--output", o->output, "Parent folder of the run directory (overrides output.directory)");
  cmd->add_option("--backend", o->backend, "Engine backend: auto, cpu, cuda")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd->add_option("--max-seconds", o->max_seconds, "Stop the loop after this many seconds of wall clock, with the "
                  "full outputs (overrides annealing.max_seconds; 0: no limit)")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--force", o->force, "Replace an existing run directory");
  cmd->add_flag("--quiet", o->quiet, "Print only the summary");
  cmd->add_option("--progress", o->progress, "auto (a live line on a terminal, else a line every 5 s), live, plain, json")
      ->check(CLI::IsMember({"auto", "live", "plain", "json"}));
  return [o, command_line] { return start_run(*o, command_line); };
}

}  // namespace poreforge::app
