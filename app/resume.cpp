// poreforge resume CHECKPOINT.h5: a run continued exactly where its checkpoint left it.
#include <CLI/CLI.hpp>

#include <memory>

#include "commands.hpp"
#include "run_session.hpp"

namespace poreforge::app {

Runner add_resume_command(CLI::App& app, const std::string& command_line) {
  auto o = std::make_shared<ResumeOptions>();
  CLI::App* cmd = app.add_subcommand("resume", "Continue a run from a checkpoint, exactly where it stopped");
  cmd->add_option("checkpoint", o->checkpoint, "Checkpoint file (results/<name>/checkpoints/evaluation-*.h5)")->required();
  cmd->add_option("--max-evals", o->max_evaluations,
                  "New evaluation budget (a resume may change this and --max-seconds, nothing else)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-seconds", o->max_seconds, "Wall-clock limit of this session of the loop (0: none; "
                  "default: the stored annealing.max_seconds, counted afresh)")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--quiet", o->quiet, "Print only the summary");
  cmd->add_option("--progress", o->progress, "auto, live, plain, json (as for run)")
      ->check(CLI::IsMember({"auto", "live", "plain", "json"}));
  return [o, command_line] { return resume_run(*o, command_line); };
}

}  // namespace poreforge::app
