// The bad-input table: every way a user was seen to feed poreforge something wrong, with what
// must happen — the exit status, words the one `poreforge: error:` line must hold, and no
// file left behind or changed. One row a case; the table grows with each case found.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "poreforge/generators.hpp"
#include "poreforge/io.hpp"
#include "support/cli.hpp"

using namespace poreforge;
using testing::Workspace;
namespace fs = std::filesystem;

namespace {

struct BadInput {
  const char* name;
  std::string args;  // "{ws}" stands for the workspace folder
  int status;        // the exit status expected (2: bad input)
  std::string words; // a fragment the error line must hold
  std::function<void(const Workspace&)> setup = {};  // extra files this case needs
};

// Files every case may use: a 10³ noise volume (raw and HDF5), its descriptor file, and a
// minimal run configuration aimed at it.
void common_fixtures(const Workspace& ws) {
  const Mask m = generate_noise({10, 10, 10}, 0.4, 1);
  write_raw(ws / "m.raw", m);
  {
    OutputFile f(ws / "m.h5", false);
    f.write_volume("/volume", m);
    f.commit();
  }
  std::ofstream(ws / "run.yaml") << "name: r\ntarget:\n  image: m.h5\ndomain:\n  shape: [8, 8, 8]\n"
                                    "annealing:\n  max_evaluations: 10\n";
}

std::string expand(std::string s, const Workspace& ws) {
  for (std::size_t at; (at = s.find("{ws}")) != std::string::npos;) s.replace(at, 4, ws.dir.string());
  return s;
}

// Every regular file under `dir` with its size and time: what a refused command must leave as
// it was.
std::map<std::string, std::pair<std::uintmax_t, fs::file_time_type>> listing(const fs::path& dir) {
  std::map<std::string, std::pair<std::uintmax_t, fs::file_time_type>> out;
  for (auto& e : fs::recursive_directory_iterator(dir))
    out[fs::relative(e.path(), dir).string()] =
        e.is_regular_file() ? std::make_pair(e.file_size(), e.last_write_time()) : std::make_pair(std::uintmax_t(0), fs::file_time_type{});
  return out;
}

const std::vector<BadInput>& table() {
  static const std::vector<BadInput> rows = {
      // Engine commands: files and their layout.
      {"missing input", "thickness {ws}/nope.h5 -o {ws}/out.h5", 2, "does not exist"},
      {"raw without shape", "thickness {ws}/m.raw -o {ws}/out.h5", 2, "--shape"},
      // Run, resume and sweep.
      {"run: missing config", "run {ws}/nope.yaml", 2, "nope.yaml"},
  };
  return rows;
}

}  // namespace

TEST_CASE("cli.bad_input.table") {
  for (const BadInput& row : table()) {
    Workspace ws;
    common_fixtures(ws);
    if (row.setup) row.setup(ws);
    const auto before = listing(ws.dir);
    const std::string args = expand(row.args, ws);
    const std::string name = row.name;
    CAPTURE(name);
    CAPTURE(args);
    const testing::CliResult r = testing::run_cli(args, "2>&1 >/dev/null");
    CAPTURE(r.output);
    CHECK(r.status == row.status);
    CHECK(r.output.rfind("poreforge: error: ", 0) == 0);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
    CHECK(r.output.find(expand(row.words, ws)) != std::string::npos);
    CHECK(listing(ws.dir) == before);  // nothing written, nothing removed, nothing changed
  }
}
