#pragma once
// Running the poreforge program from tests: its exit status and output, a scratch folder per
// test, and the check that a refusal is one `poreforge: error:` line.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <string>

#include "support/random.hpp"

namespace poreforge::testing {

struct CliResult {
  int status;          // the exit status; -1 when the program died of a signal
  std::string output;  // what `streams` captured
};

/// Runs poreforge with `args` through the shell; `streams` picks what is captured ("2>&1":
/// both, "2>&1 >/dev/null": stderr alone).
inline CliResult run_cli(const std::string& args, const std::string& streams = "2>&1") {
  const std::string cmd = std::string(POREFORGE_CLI) + " " + args + " " + streams;
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe);
  std::string out;
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

/// A fresh folder under the system's temporary directory, removed with everything in it.
struct Workspace {
  std::filesystem::path dir;
  Workspace() {
    dir = std::filesystem::temp_directory_path() / ("poreforge-cli-" + std::to_string(fresh_seed()));
    std::filesystem::create_directories(dir);
  }
  ~Workspace() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  std::string operator/(const std::string& name) const { return (dir / name).string(); }
  /// Only the given entries exist in the folder (no temporaries, no partial outputs).
  bool holds_only(std::initializer_list<std::string> names) const {
    std::size_t count = 0;
    for (auto& e : std::filesystem::directory_iterator(dir)) {
      (void)e;
      ++count;
    }
    for (auto& n : names)
      if (!std::filesystem::exists(dir / n)) return false;
    return count == names.size();
  }
};

/// Runs a command that must fail: one line on stderr, "poreforge: error: ...", a non-zero
/// status, and `fragment` in the line.
inline void check_error(const std::string& args, const std::string& fragment) {
  const CliResult r = run_cli(args, "2>&1 >/dev/null");
  CAPTURE(args);
  CAPTURE(r.output);
  CHECK(r.status > 0);
  CHECK(r.output.rfind("poreforge: error: ", 0) == 0);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK(r.output.find(fragment) != std::string::npos);
}

}  // namespace poreforge::testing
