#pragma once
// The poreforge subcommands. Each registers its options on a CLI11 app and returns the
// function that runs it once the command line has been parsed.
#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace poreforge::app {

using Runner = std::function<void()>;
/// A command whose outcome is more than success or an error (a signal, failed runs of a
/// sweep): returns the exit status, so destructors (folder locks) run before the exit.
using StatusRunner = std::function<int()>;

Runner add_thickness_command(CLI::App& app, const std::string& command_line);
Runner add_describe_command(CLI::App& app, const std::string& command_line);
Runner add_generate_command(CLI::App& app, const std::string& command_line);
Runner add_info_command(CLI::App& app);
Runner add_morph_command(CLI::App& app, const std::string& command_line);
StatusRunner add_run_command(CLI::App& app, const std::string& command_line);
StatusRunner add_resume_command(CLI::App& app, const std::string& command_line);
StatusRunner add_sweep_command(CLI::App& app);

}  // namespace poreforge::app
