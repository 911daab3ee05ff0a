// CPU engine benchmark: EDT, local-thickness map and PSD-only path on blobs and the Berea
// sample, against the one-EDT-per-integer-radius baseline measured in the same run.
// Prints a table and writes JSON. Timed with a steady clock: the CPU backend is synchronous.
//
//   bench_engine_cpu [--size N] [--reps R] [--berea PATH] [--json PATH]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <malloc.h>
#include <sstream>
#include <string>
#include <vector>

#include "poreforge/backend.hpp"
#include "poreforge/edt.hpp"
#include "poreforge/generators.hpp"
#include "bench_record.hpp"
#include "poreforge/io.hpp"
#include "poreforge/local_thickness.hpp"

using namespace poreforge;

namespace {

// Resident-set figures from /proc (kB). Writing 5 to clear_refs resets the high-water mark,
// so each measured call gets its own peak.
long proc_status_kb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return std::stol(line.substr(std::strlen(key)));
  return -1;
}
void reset_peak() { std::ofstream("/proc/self/clear_refs") << "5"; }

struct Measure {
  std::vector<double> seconds;
  double peak_bytes_per_voxel = 0;
  double median() const {
    std::vector<double> s = seconds;
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
  }
};

// Runs `f` reps times; peak memory = the high-water mark above the resident set before the
// call, plus the input mask (1 byte per voxel) which every method needs.
Measure measure(int reps, int64_t voxels, const std::function<void()>& f) {
  Measure m;
  for (int r = 0; r < reps; ++r) {
    const long before = proc_status_kb("VmRSS:");
    reset_peak();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    m.seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    const long peak = proc_status_kb("VmHWM:");
    m.peak_bytes_per_voxel = std::max(m.peak_bytes_per_voxel, (double(peak - before) * 1024.0 + double(voxels)) / double(voxels));
  }
  return m;
}

// The baseline every GPU/CPU peer uses: for each integer radius r, seeds = {dt ≥ r}; one EDT
// of the seeds' complement gives the dilation of the seeds by the ball of radius r; voxels it
// reaches get thickness r. Rmax EDTs, approximate (integer radii only).
Volume<float> baseline_thickness(const Mask& phase, Boundary boundary) {
  const Volume<float> dt = distance_transform(phase, boundary, Backend::cpu);
  const float max_dt = *std::max_element(dt.values().begin(), dt.values().end());
  Volume<float> lt(phase.shape(), phase.spacing(), 0.0f);
  Mask not_seed(phase.shape(), phase.spacing());
  for (int r = 1; r <= int(max_dt); ++r) {
    for (int64_t i = 0; i < phase.voxels(); ++i) not_seed[i] = dt[i] < float(r);
    const Volume<uint32_t> d2 = squared_distance_voxels(not_seed, boundary);
    for (int64_t i = 0; i < phase.voxels(); ++i)
      if (phase[i] && d2[i] < uint32_t(r * r)) lt[i] = float(r);
  }
  return lt;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

struct Row {
  std::string name;
  Shape shape;
  double porosity;
  float max_radius;
  Measure edt, lt, psd, baseline;
};

}  // namespace

int main(int argc, char** argv) {
  // Fixed mmap threshold: large buffers are mapped and unmapped, never kept in the heap, so the
  // resident set before each call holds no freed buffers and the peak figures are honest.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  int64_t size = 250;
  int reps = 3;
  std::string berea = POREFORGE_DATA_DIR "/berea_110.raw", json;  // --json: the record (none without it)
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--size") size = std::stoll(argv[i + 1]);
    else if (a == "--reps") reps = std::stoi(argv[i + 1]);
    else if (a == "--berea") berea = argv[i + 1];
    else if (a == "--json") json = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: bench_engine_cpu [--size N] [--reps R] [--berea PATH] [--json PATH]\n");
      return 2;
    }
  }
  if (!bench::record_path_usable("bench_engine_cpu", json)) return 2;

  std::vector<std::pair<std::string, Mask>> cases;
  cases.emplace_back("blobs p=0.4 seed=1", generate_blobs({size, size, size}, 0.4, 1.0, 1));
  cases.emplace_back("berea pore", phase_mask(read_raw(berea, {110, 110, 110}, DType::u8), 0));

  std::vector<Row> rows;
  for (auto& [name, phase] : cases) {
    std::fprintf(stderr, "measuring %s %s ...\n", name.c_str(), to_string(phase.shape()).c_str());
    Row row{name, phase.shape(), double(count_phase(phase)) / double(phase.voxels()), 0, {}, {}, {}, {}};
    const int64_t n = phase.voxels();
    Volume<float> lt;
    row.edt = measure(reps, n, [&] { distance_transform(phase, Boundary::open, Backend::cpu); });
    row.lt = measure(reps, n, [&] { lt = local_thickness(phase, Boundary::open, Backend::cpu); });
    row.max_radius = *std::max_element(lt.values().begin(), lt.values().end());
    lt = {};
    const Bins bins = Bins::linear(0.0, double(row.max_radius), 20);
    row.psd = measure(reps, n, [&] { pore_size_distribution(phase, Boundary::open, bins, Backend::cpu); });
    row.baseline = measure(1, n, [&] { baseline_thickness(phase, Boundary::open); });
    rows.push_back(row);
  }

  std::printf("\nCPU: %s, %d threads\n\n", cpu_model().c_str(), cpu_threads());
  std::printf("%-20s %-12s %8s %9s %9s %9s %11s %9s %10s %10s\n", "case", "shape", "max r", "EDT s", "LT map s",
              "PSD s", "baseline s", "speed-up", "LT B/vox", "PSD B/vox");
  for (const Row& r : rows)
    std::printf("%-20s %-12s %8.3f %9.3f %9.3f %9.3f %11.3f %8.1fx %10.2f %10.2f\n", r.name.c_str(),
                to_string(r.shape).c_str(), r.max_radius, r.edt.median(), r.lt.median(), r.psd.median(),
                r.baseline.median(), r.baseline.median() / r.lt.median(), r.lt.peak_bytes_per_voxel,
                r.psd.peak_bytes_per_voxel);

  std::ostringstream js;
  auto list = [](const std::vector<double>& v) {
    std::ostringstream s;
    for (std::size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
    return "[" + s.str() + "]";
  };
  js << "{\n  \"benchmark\": \"engine_cpu\",\n  \"version\": \"" << version_string() << "\",\n  \"cpu\": \""
     << cpu_model() << "\",\n  \"threads\": " << cpu_threads() << ",\n  \"reps\": " << reps
     << ",\n  \"timer\": \"steady_clock, median\",\n  \"cases\": [\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    js << "    {\"name\": \"" << r.name << "\", \"shape\": [" << r.shape.nx << ", " << r.shape.ny << ", " << r.shape.nz
       << "], \"porosity\": " << r.porosity << ", \"max_radius\": " << r.max_radius
       << ",\n     \"edt_s\": " << list(r.edt.seconds) << ", \"lt_map_s\": " << list(r.lt.seconds)
       << ", \"psd_only_s\": " << list(r.psd.seconds) << ", \"baseline_one_edt_per_radius_s\": "
       << list(r.baseline.seconds) << ",\n     \"lt_map_median_s\": " << r.lt.median()
       << ", \"speedup_vs_baseline\": " << r.baseline.median() / r.lt.median()
       << ", \"peak_bytes_per_voxel\": {\"edt\": " << r.edt.peak_bytes_per_voxel << ", \"lt_map\": "
       << r.lt.peak_bytes_per_voxel << ", \"psd_only\": " << r.psd.peak_bytes_per_voxel << ", \"baseline\": "
       << r.baseline.peak_bytes_per_voxel << "}}" << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  js << "  ]\n}\n";
  return bench::write_record("bench_engine_cpu", json, js.str());
}
