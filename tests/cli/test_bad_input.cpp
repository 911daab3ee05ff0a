// The bad-input table: every way a user was seen to feed poreforge something wrong, with what
// must happen — the exit status, words the one `poreforge: error:` line must hold, and no
// file left behind or changed. One row a case; the table grows with each case found.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "poreforge/generators.hpp"
#include "poreforge/io.hpp"
#include "support/cli.hpp"
#include "support/hdf5_edit.hpp"

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

// A sibling run folder and the file in it: what a refused name or --force must not touch.
void sibling(const Workspace& ws) {
  fs::create_directories(ws / "results/other");
  std::ofstream(ws / "results/other/keep.txt") << "not poreforge's to remove\n";
}

// A finished run of run.yaml with checkpoints at 5 and 10 evaluations.
void finished_run(const Workspace& ws) {
  const auto r = testing::run_cli("run " + ws / "run.yaml" + " --output " + ws / "results" +
                                  " --quiet --set backend=cpu --set checkpoint.every_evaluations=5");
  REQUIRE(r.status == 0);
}

const char* kCheckpoint10 = "{ws}/results/r/checkpoints/step-000000000010.h5";

void sweep_file(const Workspace& ws, const std::string& body) {
  std::ofstream(ws / "sweep.yaml") << "base: run.yaml\noutput: " << ws / "results" << "\n" << body;
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
      // A run's name is its folder: `.` and `..` once let --force remove the runs beside it or
      // the folder above.
      {"run: name .", "run {ws}/run.yaml --set name=. --output {ws}/results --force", 2,
       "--set name=.: name must be one folder name", sibling},
      {"run: name ..", "run {ws}/run.yaml --set name=.. --output {ws}/results --force", 2,
       "--set name=..: name must be one folder name", sibling},
      {"run: name with a slash in the file", "run {ws}/slash.yaml --output {ws}/results --force", 2,
       "slash.yaml:1: name must be one folder name",
       [](const Workspace& ws) {
         sibling(ws);
         std::ofstream(ws / "slash.yaml") << "name: ../results\ntarget:\n  image: m.h5\n";
       }},
      {"run: hidden name", "run {ws}/run.yaml --set name=.r --output {ws}/results", 2, "not starting with '.'"},
      {"run: --force on a folder poreforge did not make", "run {ws}/run.yaml --output {ws}/results --force", 2,
       "was not made by poreforge",
       [](const Workspace& ws) {
         fs::create_directories(ws / "results/r");
         std::ofstream(ws / "results/r/notes.txt") << "mine\n";
       }},
      {"run: --force on a symbolic link", "run {ws}/run.yaml --output {ws}/results --force", 2, "is a symbolic link",
       [](const Workspace& ws) {
         sibling(ws);
         fs::create_directory_symlink("other", ws / "results/r");
       }},
      {"run: --max-seconds nan", "run {ws}/run.yaml --output {ws}/results --max-seconds nan", 2, "--max-seconds"},
      {"run: a --set error names the --set", "run {ws}/run.yaml --output {ws}/results --set annealing.alpha=2", 2,
       "--set annealing.alpha=2: annealing.alpha must lie in (0, 1)"},
      {"run: a --set value that is not YAML", "run {ws}/run.yaml --output {ws}/results --set 'seed=[1'", 2,
       "--set seed=[1: the value is not valid YAML"},
      {"run: a --set with an empty key", "run {ws}/run.yaml --output {ws}/results --set annealing..alpha=0.5", 2,
       "--set annealing..alpha=0.5: expected KEY.PATH=VALUE"},
      {"resume: --max-seconds nan", std::string("resume ") + kCheckpoint10 + " --max-seconds nan", 2, "--max-seconds",
       finished_run},
      {"resume: NaN evaluations", std::string("resume ") + kCheckpoint10 + " --quiet", 2,
       "evaluations must be a whole number, 0 or more (got nan)",
       [](const Workspace& ws) {
         finished_run(ws);
         testing::set_hdf5_attribute(expand(kCheckpoint10, ws), "evaluations", std::nan(""));
       }},
      {"resume: negative accepted count", std::string("resume ") + kCheckpoint10 + " --max-evals 20 --quiet", 2,
       "accepted must be a whole number, 0 or more (got -3",
       [](const Workspace& ws) {
         finished_run(ws);
         testing::set_hdf5_attribute(expand(kCheckpoint10, ws), "accepted", -3);
       }},
      // Sweeps: every run's configuration is read before a file is written.
      {"sweep: name ..", "sweep {ws}/sweep.yaml --force", 2, "name must be one folder name",
       [](const Workspace& ws) {
         sibling(ws);
         sweep_file(ws, "name: ..\ngrid:\n  seed: [1, 2]\n");
       }},
      {"sweep --slurm: an unknown grid key", "sweep {ws}/sweep.yaml --slurm", 2,
       "run s-000 (annealing.alpah=0.5): annealing.alpah is not a known key",
       [](const Workspace& ws) { sweep_file(ws, "name: s\ngrid:\n  annealing.alpah: [0.5, 0.9]\n"); }},
      {"sweep --slurm: an override's error is the override's", "sweep {ws}/sweep.yaml --slurm", 2,
       "sweep.yaml: run s-001 (annealing.alpha=7): annealing.alpha must lie in (0, 1)",
       [](const Workspace& ws) { sweep_file(ws, "name: s\nlist:\n  - {annealing.alpha: 0.5}\n  - {annealing.alpha: 7}\n"); }},
      {"sweep --slurm: the base file's error is the base file's", "sweep {ws}/sweep.yaml --slurm", 2,
       "bad.yaml:4: annealing.alpah is not a known key",
       [](const Workspace& ws) {
         std::ofstream(ws / "bad.yaml") << "target:\n  image: m.h5\nannealing:\n  alpah: 0.5\n";
         std::ofstream(ws / "sweep.yaml") << "name: s\nbase: bad.yaml\noutput: " << ws / "results"
                                          << "\ngrid:\n  seed: [1, 2]\n";
       }},
      {"sweep --slurm: a missing base file", "sweep {ws}/sweep.yaml --slurm", 2, "nope.yaml",
       [](const Workspace& ws) {
         std::ofstream(ws / "sweep.yaml") << "name: s\nbase: nope.yaml\noutput: " << ws / "results"
                                          << "\ngrid:\n  seed: [1, 2]\n";
       }},
      {"sweep --slurm: a missing target file", "sweep {ws}/sweep.yaml --slurm", 2,
       "run s-001 (target.image=gone.h5): target.image",
       [](const Workspace& ws) { sweep_file(ws, "name: s\nlist:\n  - {seed: 3}\n  - {target.image: gone.h5}\n"); }},
      {"sweep: two runs named alike", "sweep {ws}/sweep.yaml --slurm", 2, "runs s-000 and s-001 would both be named 'x'",
       [](const Workspace& ws) { sweep_file(ws, "name: s\ngrid:\n  name: [x, x]\n"); }},
      {"sweep: a grid key that moves the runs elsewhere", "sweep {ws}/sweep.yaml --slurm", 2,
       "grid.output.directory: the sweep puts its runs in <output>/<name>",
       [](const Workspace& ws) { sweep_file(ws, "name: s\ngrid:\n  output.directory: [/tmp, /]\n"); }},
      {"sweep --slurm: more runs than --max-runs", "sweep {ws}/sweep.yaml --slurm", 2, "more than --max-runs 10000",
       [](const Workspace& ws) {
         std::string a, b;
         for (int k = 0; k < 101; ++k) a += (k ? ", " : "") + std::to_string(k + 1);
         for (int k = 0; k < 100; ++k) b += (k ? ", " : "") + std::to_string(0.001 * (k + 1));
         sweep_file(ws, "name: s\ngrid:\n  seed: [" + a + "]\n  annealing.alpha: [" + b + "]\n");
       }},
      {"sweep: --force on a folder poreforge did not make", "sweep {ws}/sweep.yaml --slurm --force", 2,
       "was not made by poreforge",
       [](const Workspace& ws) {
         sweep_file(ws, "name: s\ngrid:\n  seed: [1, 2]\n");
         fs::create_directories(ws / "results/s");
         std::ofstream(ws / "results/s/notes.txt") << "mine\n";
       }},
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
