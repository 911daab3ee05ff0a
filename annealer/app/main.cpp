// poreforge: command-line entry point. Turns every error into one line and a non-zero exit.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>

#include "commands.hpp"
#include "poreforge/error.hpp"
#include "poreforge/io.hpp"

int main(int argc, char** argv) {
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);

  CLI::App app{"poreforge: exact local thickness, pore-size distributions and microstructure reconstruction"};
  app.set_version_flag("--version", "poreforge " + poreforge::version_string());
  app.require_subcommand(1);
  using poreforge::app::Runner;
  const Runner thickness = poreforge::app::add_thickness_command(app, command_line);
  const Runner describe = poreforge::app::add_describe_command(app, command_line);
  const Runner generate = poreforge::app::add_generate_command(app, command_line);
  const Runner info = poreforge::app::add_info_command(app);
  const Runner morph = poreforge::app::add_morph_command(app, command_line);
  const poreforge::app::StatusRunner run = poreforge::app::add_run_command(app, command_line);
  const poreforge::app::StatusRunner resume = poreforge::app::add_resume_command(app, command_line);
  const poreforge::app::StatusRunner sweep = poreforge::app::add_sweep_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (app.got_subcommand("thickness")) thickness();
    else if (app.got_subcommand("describe")) describe();
    else if (app.got_subcommand("generate")) generate();
    else if (app.got_subcommand("info")) info();
    else if (app.got_subcommand("morph")) morph();
    else if (app.got_subcommand("run")) return run();
    else if (app.got_subcommand("resume")) return resume();
    else if (app.got_subcommand("sweep")) return sweep();
    return 0;
  } catch (const poreforge::InputError& e) {
    std::fprintf(stderr, "poreforge: error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "poreforge: error: out of memory\n");
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "poreforge: error: %s\n", e.what());
    return 3;
  }
}
