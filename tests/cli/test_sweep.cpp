// Sweeps: expansion of grids and lists, the Slurm script, and a local sweep in which one
// combination fails while the others go on.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "poreforge/error.hpp"
#include "support/random.hpp"
#include "sweep_plan.hpp"

using namespace poreforge;
using namespace poreforge::app;
namespace fs = std::filesystem;

TEST_CASE("sweep.expansion") {
  const Sweep s = parse_sweep("name: s\nbase: run.yaml\ngrid:\n  annealing.alpha: [0.8, 0.9]\n  seed: [1, 2, 3]\n"
                              "list:\n  - {moves.interface_bias: 2}\n",
                              "sweep.yaml", "/cfg");
  REQUIRE(s.combinations.size() == 7);
  CHECK(s.base_config == "/cfg/run.yaml");
  CHECK(s.combinations[0].name == "s-000");
  CHECK(s.combinations[0].sets == std::vector<std::pair<std::string, std::string>>{{"annealing.alpha", "0.8"}, {"seed", "1"}});
  CHECK(s.combinations[1].sets[1].second == "2");  // the last key varies fastest
  CHECK(s.combinations[3].sets[0].second == "0.9");
  CHECK(s.combinations[6].sets == std::vector<std::pair<std::string, std::string>>{{"moves.interface_bias", "2"}});
  auto refused = [](const std::string& yaml, const char* fragment) {
    CHECK_THROWS_WITH_AS(parse_sweep(yaml, "sweep.yaml", "."), doctest::Contains(fragment), InputError);
  };
  refused("name: s\nbase: r.yaml\ngird:\n  seed: [1]\n", "sweep.yaml:3: gird is not a known key");
  refused("name: s\nbase: r.yaml\ngrid:\n  seed: []\n", "grid.seed must be a non-empty list");
  refused("name: s\ngrid:\n  seed: [1]\n", "base");
  refused("name: s\nbase: r.yaml\n", "needs a grid or a list");
}

TEST_CASE("sweep.slurm_script") {
  const Sweep s = parse_sweep("name: gpu\nbase: /abs/run.yaml\noutput: /data/results\ngrid:\n  seed: [1, 2, 3]\n",
                              "sweep.yaml", ".");
  const std::string script = slurm_script(s, "/opt/poreforge", "/data/results/gpu/combinations.txt");
  CHECK(script.rfind("#!/bin/bash", 0) == 0);
  CHECK(script.find("#SBATCH --array=0-2\n") != std::string::npos);
  CHECK(script.find("#SBATCH --job-name=gpu\n") != std::string::npos);
  CHECK(script.find("'/opt/poreforge' run '/abs/run.yaml' \"$@\" --set 'output.directory=/data/results/gpu'") !=
        std::string::npos);
  CHECK(script.find("SLURM_ARRAY_TASK_ID") != std::string::npos);
  const std::string lines = combination_lines(s);
  CHECK(lines == "--set 'name=gpu-000' --set 'seed=1'\n--set 'name=gpu-001' --set 'seed=2'\n"
                 "--set 'name=gpu-002' --set 'seed=3'\n");
}

TEST_CASE("cli.sweep.local_with_a_failure") {
  const fs::path dir = fs::temp_directory_path() / ("poreforge-sweep-" + std::to_string(testing::fresh_seed()));
  fs::create_directories(dir);
  const std::string cli = POREFORGE_CLI;
  auto sh = [](const std::string& cmd) {
    const int st = std::system(cmd.c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  };
  REQUIRE(sh(cli + " generate blobs --shape 16,16,16 --seed 2 -o " + (dir / "ref.h5").string() + " > /dev/null") == 0);
  REQUIRE(sh(cli + " describe " + (dir / "ref.h5").string() + " -o " + (dir / "desc.h5").string() +
             " --bins 5 --backend cpu > /dev/null") == 0);
  std::ofstream(dir / "base.yaml") << "name: base\nbackend: cpu\ntarget:\n  descriptors: desc.h5\ndomain:\n"
                                      "  shape: [10, 10, 10]\nannealing:\n  trial_moves: 10\n  max_evaluations: 100\n";
  std::ofstream(dir / "sweep.yaml") << "name: t\nbase: base.yaml\noutput: " << (dir / "results").string()
                                    << "\ngrid:\n  seed: [1, 2]\nlist:\n  - {target.descriptors: base.yaml}\n";
  CHECK(sh(cli + " sweep " + (dir / "sweep.yaml").string() + " --jobs 2 > /dev/null") == 4);  // one failed
  std::ifstream in(dir / "results/t/summary.csv");
  std::stringstream csv;
  csv << in.rdbuf();
  const std::string text = csv.str();
  CAPTURE(text);
  CHECK(text.rfind("name,seed,target.descriptors,status,exit_code,seconds,stop_reason,final_energy,energy_against_random_start,pore_psd_l1,s2_rms\n", 0) == 0);
  CHECK(text.find("t-000,\"1\",\"\",ok,0,") != std::string::npos);
  CHECK(text.find("t-001,\"2\",\"\",ok,0,") != std::string::npos);
  CHECK(text.find("t-002,\"\",\"base.yaml\",failed,2,") != std::string::npos);
  CHECK(fs::exists(dir / "results/t/t-001/final.h5"));
  CHECK(sh(cli + " sweep " + (dir / "sweep.yaml").string() + " > /dev/null 2>&1") == 2);  // the folder exists
  CHECK(fs::exists(dir / "results/t/.poreforge-sweep"));
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST_CASE("cli.sweep.force_and_lock") {
  // A sweep folder is replaced only when poreforge made it and no sweep holds it; `..` as a
  // name never reaches the file system. Slurm mode, so no run starts.
  const fs::path dir = fs::temp_directory_path() / ("poreforge-sweeplock-" + std::to_string(testing::fresh_seed()));
  fs::create_directories(dir / "results/other");
  std::ofstream(dir / "results/other/keep.txt") << "a sibling\n";
  const std::string cli = POREFORGE_CLI;
  auto sh = [&](const std::string& cmd) {
    const int st = std::system((cmd + " > /dev/null 2> " + (dir / "err.txt").string()).c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  };
  auto err = [&] {
    std::ifstream in(dir / "err.txt");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  std::ofstream(dir / "base.yaml") << "target:\n  descriptors: base.yaml\n";
  auto sweep_named = [&](const std::string& name) {
    std::ofstream(dir / "sweep.yaml") << "name: " << name << "\nbase: base.yaml\noutput: " << (dir / "results").string()
                                      << "\ngrid:\n  seed: [1, 2]\n";
    return cli + " sweep " + (dir / "sweep.yaml").string() + " --slurm";
  };
  for (const char* name : {"..", "."}) {
    CHECK(sh(sweep_named(name) + " --force") == 2);
    CHECK(err().find("name must be one folder name") != std::string::npos);
  }
  CHECK(fs::exists(dir / "results/other/keep.txt"));
  REQUIRE(sh(sweep_named("s")) == 0);
  CHECK(fs::exists(dir / "results/s/.poreforge-sweep"));
  // Held by another process (here, this one): refused with its PID, nothing removed.
  const int fd = ::open((dir / "results/s/.poreforge-lock").c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
  const std::string pid = std::to_string(::getpid()) + "\n";
  REQUIRE(::pwrite(fd, pid.data(), pid.size(), 0) == ssize_t(pid.size()));
  CHECK(sh(sweep_named("s") + " --force") == 2);
  CHECK(err().find("is in use by process " + std::to_string(::getpid())) != std::string::npos);
  CHECK(fs::exists(dir / "results/s/combinations.txt"));
  ::close(fd);  // released without emptying the file: as a process killed while holding it
  std::ofstream(dir / "results/s/stray.txt") << "old\n";
  CHECK(sh(sweep_named("s") + " --force") == 0);
  CHECK_FALSE(fs::exists(dir / "results/s/stray.txt"));
  CHECK(fs::exists(dir / "results/s/s.slurm"));
  // A folder poreforge did not make is not replaced.
  CHECK(sh(sweep_named("other") + " --force") == 2);
  CHECK(err().find("was not made by poreforge") != std::string::npos);
  CHECK(fs::exists(dir / "results/other/keep.txt"));
  std::error_code ec;
  fs::remove_all(dir, ec);
}
