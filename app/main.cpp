// poreforge: command-line entry point. Turns every error into one line and a non-zero exit.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <regex>
#include <stdexcept>
#include <string>

#include "commands.hpp"
#include "poreforge/error.hpp"
#include "poreforge/io.hpp"
#include "poreforge/memory.hpp"
#include "poreforge/volume.hpp"

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
  const Runner compare = poreforge::app::add_compare_command(app, command_line);
  const Runner run = poreforge::app::add_run_command(app, command_line);
  const Runner resume = poreforge::app::add_resume_command(app, command_line);
  const Runner sweep = poreforge::app::add_sweep_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the error and a second line pointing at --help; one line, like every
    // other refusal, and the exit status of bad input.
    std::string what = e.what();
    for (char& c : what)
      if (c == '\n') c = ' ';
    // CLI11 writes the bounds of its range checks in full: DBL_MAX as 309 digits.
    static const std::regex long_number("[0-9]{16,}(\\.[0-9]+)?");
    std::string short_form;
    std::sregex_iterator it(what.begin(), what.end(), long_number), end;
    std::size_t from = 0;
    for (; it != end; ++it) {
      short_form += what.substr(from, std::size_t(it->position()) - from) + poreforge::format_number(std::strtod(it->str().c_str(), nullptr));
      from = std::size_t(it->position() + it->length());
    }
    what = short_form + what.substr(from);
    std::fprintf(stderr, "poreforge: error: %s (see --help)\n", what.c_str());
    return 2;
  }
  try {
    if (app.got_subcommand("thickness")) return thickness();
    else if (app.got_subcommand("describe")) return describe();
    else if (app.got_subcommand("generate")) return generate();
    else if (app.got_subcommand("info")) return info();
    else if (app.got_subcommand("morph")) return morph();
    else if (app.got_subcommand("compare")) return compare();
    else if (app.got_subcommand("run")) return run();
    else if (app.got_subcommand("resume")) return resume();
    else if (app.got_subcommand("sweep")) return sweep();
    return 0;
  } catch (const poreforge::InputError& e) {
    std::fprintf(stderr, "poreforge: error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    // The allocation's own size is gone by now; the estimate checked before the work names it.
    std::fprintf(stderr, "poreforge: error: %s\n", poreforge::out_of_memory_message().c_str());
    return 3;
  } catch (const std::length_error&) {  // a size beyond what a vector can hold: the same failure
    std::fprintf(stderr, "poreforge: error: %s\n", poreforge::out_of_memory_message().c_str());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "poreforge: error: %s\n", e.what());
    return 3;
  } catch (...) {
    std::fprintf(stderr, "poreforge: error: an unknown failure\n");
    return 3;
  }
}
