#pragma once
// The poreforge subcommands, one file each. Each registers its options on a CLI11 app and
// returns the function that runs it once the command line has been parsed.
#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace poreforge::app {

/// Runs the command once the command line is parsed and returns its exit status (a signal,
/// failed runs of a sweep), so destructors (folder locks) run before the exit. Errors are
/// thrown: main turns them into one line.
using Runner = std::function<int()>;

Runner add_thickness_command(CLI::App& app, const std::string& command_line);
Runner add_describe_command(CLI::App& app, const std::string& command_line);
Runner add_generate_command(CLI::App& app, const std::string& command_line);
Runner add_info_command(CLI::App& app);
Runner add_morph_command(CLI::App& app, const std::string& command_line);
Runner add_compare_command(CLI::App& app, const std::string& command_line);
Runner add_run_command(CLI::App& app, const std::string& command_line);
Runner add_resume_command(CLI::App& app, const std::string& command_line);
Runner add_sweep_command(CLI::App& app);

}  // namespace poreforge::app
