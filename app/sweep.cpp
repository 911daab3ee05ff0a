// poreforge sweep SWEEP.yaml: many runs of one base configuration, locally in parallel or as a
// Slurm job array; a summary CSV gathers them.
#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "commands.hpp"
#include "poreforge/backend.hpp"
#include "poreforge/durable_file.hpp"
#include "poreforge/error.hpp"
#include "poreforge/io.hpp"
#include "run_folder.hpp"
#include "sweep_plan.hpp"

namespace poreforge::app {
namespace {

namespace fs = std::filesystem;

std::string self_executable() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "poreforge" : p.string();
}

// Final energy and stop reason from summary.json (written by `run`; flat, so a scan will do).
std::string json_field(const std::string& text, const std::string& key) {
  const auto at = text.find("\"" + key + "\": ");
  if (at == std::string::npos) return "";
  auto start = at + key.size() + 4;
  auto end = text.find_first_of(",\n}", start);
  std::string v = text.substr(start, end - start);
  if (!v.empty() && v.front() == '"') v = v.substr(1, v.size() - 2);
  return v;
}

// Pore-PSD L1 distance and directional-S2 RMS error, target against achieved.
std::pair<double, double> descriptor_errors(const std::string& path) {
  const auto t = read_hdf5_vector(path, "/target/psd/pore/fraction");
  const auto a = read_hdf5_vector(path, "/achieved/psd/pore/fraction");
  double l1 = 0;
  for (std::size_t i = 0; i < std::min(t.size(), a.size()); ++i) l1 += std::abs(t[i] - a[i]);
  double sum = 0;
  int64_t n = 0;
  for (const char* axis : {"x", "y", "z"}) {
    const auto ts = read_hdf5_vector(path, std::string("/target/s2/") + axis);
    const auto as = read_hdf5_vector(path, std::string("/achieved/s2/") + axis);
    for (std::size_t r = 0; r < std::min(ts.size(), as.size()); ++r, ++n) sum += (ts[r] - as[r]) * (ts[r] - as[r]);
  }
  return {l1, n ? std::sqrt(sum / double(n)) : 0.0};
}

struct Job {
  const SweepCombination* combination = nullptr;
  pid_t pid = -1;
  std::chrono::steady_clock::time_point start;
  double seconds = 0;
  int exit_code = -1;
};

}  // namespace

Runner add_sweep_command(CLI::App& app) {
  struct Options {
    std::string file;
    int jobs = 1;
    bool slurm = false, force = false;
    long long max_runs = 10000;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("sweep", "Run a base configuration over a grid or list of overrides");
  cmd->add_option("sweep", o->file, "Sweep file (YAML: name, base, grid and/or list, output)")->required();
  cmd->add_option("--jobs", o->jobs, "Runs at a time (GPUs are assigned round-robin)")->check(CLI::Range(1, 1024));
  cmd->add_flag("--slurm", o->slurm, "Write a Slurm job-array script instead of running");
  cmd->add_flag("--force", o->force, "Replace an existing sweep folder (one poreforge made)");
  cmd->add_option("--max-runs", o->max_runs, "Refuse a sweep of more runs than this (default 10000)")
      ->check(CLI::Range(1LL, kMaxSweepRuns));

  return [o] {
    const Sweep sweep = load_sweep(o->file);
    if (sweep.combinations.size() > std::size_t(o->max_runs))
      throw InputError(o->file + ": the sweep makes " + std::to_string(sweep.combinations.size()) +
                       " runs, more than --max-runs " + std::to_string(o->max_runs) +
                       " (give a larger --max-runs if that many are meant)");
    // Every run's configuration is read before anything is written or started.
    validate_sweep(sweep, o->file);
    const fs::path folder = fs::path(sweep.output) / sweep.name;
    OwnedFolder owned = claim_folder(sweep.output, sweep.name, "name", kSweepMarker, "sweep", o->force);
    const std::string exe = self_executable();
    write_text_file((folder / "combinations.txt").string(), combination_lines(sweep));
    if (o->slurm) {
      const fs::path script = folder / (sweep.name + ".slurm");
      write_text_file(script.string(), slurm_script(sweep, exe, fs::absolute(folder / "combinations.txt").string()));
      std::printf("wrote %s (%zu tasks); submit with: sbatch %s\n", script.string().c_str(), sweep.combinations.size(),
                  script.string().c_str());
      return 0;
    }

    const int gpus = cuda_device_count();
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const int threads_per_run = int(std::max(1u, cores / unsigned(std::min<std::size_t>(o->jobs, sweep.combinations.size()))));
    std::printf("sweep %s: %zu runs, %d at a time%s\n", sweep.name.c_str(), sweep.combinations.size(), o->jobs,
                gpus > 1 ? (", over " + std::to_string(gpus) + " GPUs").c_str() : "");
    std::vector<Job> jobs;
    for (const auto& c : sweep.combinations) {
      Job job;
      job.combination = &c;
      jobs.push_back(job);
    }
    std::size_t next = 0, running = 0, done = 0, launched = 0;
    auto launch = [&](Job& job) {
      std::vector<std::string> args = {exe, "run", sweep.base_config, "--quiet", "--set", "name=" + job.combination->name,
                                       "--set", "output.directory=" + folder.string()};
      for (const auto& [k, v] : job.combination->sets) {
        args.push_back("--set");
        args.push_back(k + "=" + v);
      }
      const std::string log = (folder / (job.combination->name + ".log")).string();
      const int device = gpus > 1 ? int(launched % gpus) : -1;
      job.start = std::chrono::steady_clock::now();
      job.pid = fork();
      if (job.pid == 0) {
        const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
          dup2(fd, 1);
          dup2(fd, 2);
        }
        if (device >= 0) setenv("CUDA_VISIBLE_DEVICES", std::to_string(device).c_str(), 1);
        // Share the cores: several OpenMP runs each spinning on every core slow to a crawl.
        setenv("OMP_NUM_THREADS", std::to_string(threads_per_run).c_str(), 0);
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        execv(exe.c_str(), argv.data());
        _exit(127);
      }
      if (job.pid < 0) throw RuntimeError("cannot start a run: fork failed");
      ++launched;
      ++running;
    };
    while (done < jobs.size()) {
      while (running < std::size_t(o->jobs) && next < jobs.size()) launch(jobs[next++]);
      int status = 0;
      const pid_t pid = wait(&status);
      if (pid < 0) break;
      for (auto& job : jobs)
        if (job.pid == pid) {
          job.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
          job.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - job.start).count();
          --running;
          ++done;
          std::printf("  [%zu/%zu] %s %s (%.1f s)\n", done, jobs.size(), job.combination->name.c_str(),
                      job.exit_code == 0 ? "done" : ("FAILED, exit " + std::to_string(job.exit_code) + ", see " +
                                                     job.combination->name + ".log").c_str(),
                      job.seconds);
          std::fflush(stdout);
        }
    }

    // summary.csv: one row per combination, its overrides as columns.
    std::vector<std::string> keys;
    for (const auto& c : sweep.combinations)
      for (const auto& [k, v] : c.sets)
        if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    std::ostringstream csv;
    csv << "name";
    for (const auto& k : keys) csv << "," << k;
    csv << ",status,exit_code,seconds,stop_reason,final_energy,energy_against_random_start,pore_psd_l1,s2_rms\n";
    int failed = 0;
    for (const auto& job : jobs) {
      std::map<std::string, std::string> values(job.combination->sets.begin(), job.combination->sets.end());
      csv << job.combination->name;
      for (const auto& k : keys) csv << ",\"" << values[k] << "\"";
      const fs::path run = folder / job.combination->name;
      std::string stop, energy, against_random, l1, rms;
      if (job.exit_code == 0) {
        std::ifstream in(run / "summary.json");
        std::stringstream text;
        text << in.rdbuf();
        stop = json_field(text.str(), "stop_reason");
        energy = json_field(text.str(), "energy");
        against_random = json_field(text.str(), "energy_against_random_start");
        const auto [e1, e2] = descriptor_errors((run / "descriptors.h5").string());
        l1 = std::to_string(e1);
        rms = std::to_string(e2);
      } else {
        ++failed;
      }
      csv << "," << (job.exit_code == 0 ? "ok" : "failed") << "," << job.exit_code << "," << job.seconds << "," << stop
          << "," << energy << "," << against_random << "," << l1 << "," << rms << "\n";
    }
    write_text_file((folder / "summary.csv").string(), csv.str());
    std::printf("wrote %s (%zu runs, %d failed)\n", (folder / "summary.csv").string().c_str(), jobs.size(), failed);
    std::fflush(stdout);
    return failed ? 4 : 0;  // every run was tried; say so to scripts
  };
}

}  // namespace poreforge::app
