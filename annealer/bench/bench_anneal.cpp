// Annealer benchmark: evaluations per second on a backend, and a reconstruction from the Berea
// sample's descriptors with its quality figures next to those of the random start. The run
// ends synchronised (the host loop waits for every evaluation; the device loop waits at the
// end of every batch of steps), so the wall clock around it is the true time of the
// evaluations, host overhead included.
//
//   bench_anneal [--backend cpu|cuda] [--loop device|host] [--size N] [--evaluations E] [--seed S]
//                [--json PATH] [--berea PATH] [--initial noise|blobs|berea] [--blobiness B] [--batch K] [--t0 T]
//                [--energy psd_s2|reconstruct] [--evaluation local|full] [--openings W]
//
// --energy reconstruct: configs/reconstruct.yaml's energy and moves — pore PSD, S2, Euler
// characteristic, specific surface, chord lengths, interface patterns and local porosity
// against the Berea 400³ image (--reference) at its voxel size, the domain's faces open,
// interface-biased moves that keep the pore connected, T0 1e-6. --initial berea starts from the
// real image itself (its centre at the size, mirrored at its faces beyond 400), a rock-like
// structure where a swap's region is a rock's.
// --openings W (reconstruct, the CPU backend): the openings term weighted W as well.
// --evaluation local: the device loop scores swaps in speculative batches, each swap's PSD
// re-evaluated around it (Config::local_evaluation); full, the default: over the whole
// structure, one swap at a time.
//
// --t0: the initial temperature (0, the default: from the trial moves); a low one shows the
// rate where most proposals are rejected.
// --batch (the host loop): Config::batch, proposals scored at once on the threads (0, the
// default: chosen as the run goes; 1: one at a time). The run is the same for every value.
// --loop (CUDA): the whole loop on the device (default), or driven from the host with the PSD
// on the device, one round trip per step.
//
// The start matters for the speed on the CUDA backend: the PSD path paints the kept balls
// of the structure, few and small in white noise, more and larger in a pore-like structure
// (porosity-matched blobs).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

#include "bench_record.hpp"
#include "poreforge/annealer/annealer.hpp"
#include "poreforge/correlation.hpp"
#include "poreforge/generators.hpp"
#include "poreforge/io.hpp"
#include "poreforge/local_thickness.hpp"
#include "poreforge/psd.hpp"

using namespace poreforge;
using namespace poreforge::anneal;

int main(int argc, char** argv) {
  int64_t size = 64, evaluations = 20000;
  uint64_t seed = 1;
  std::string json, berea = POREFORGE_DATA_DIR "/berea_110.raw", backend_name = "cpu", initial = "noise",
              loop = "device", energy = "psd_s2", evaluation = "full",
              reference = POREFORGE_DATA_DIR "/berea_400.h5";
  double blobiness = 0.5;
  int batch = 0;
  double temperature = 0, openings = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--size") size = std::stoll(argv[i + 1]);
    else if (a == "--evaluations") evaluations = std::stoll(argv[i + 1]);
    else if (a == "--seed") seed = std::stoull(argv[i + 1]);
    else if (a == "--json") json = argv[i + 1];
    else if (a == "--backend") backend_name = argv[i + 1];
    else if (a == "--berea") berea = argv[i + 1];
    else if (a == "--initial") initial = argv[i + 1];
    else if (a == "--blobiness") blobiness = std::stod(argv[i + 1]);
    else if (a == "--loop") loop = argv[i + 1];
    else if (a == "--batch") batch = std::stoi(argv[i + 1]);
    else if (a == "--t0") temperature = std::stod(argv[i + 1]);
    else if (a == "--energy") energy = argv[i + 1];
    else if (a == "--evaluation") evaluation = argv[i + 1];
    else if (a == "--reference") reference = argv[i + 1];
    else if (a == "--openings") openings = std::stod(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: bench_anneal [--backend cpu|cuda] [--loop device|host] [--size N] [--evaluations E] [--seed S] [--json PATH] [--berea PATH] [--initial noise|blobs|berea] [--blobiness B] [--batch K] [--t0 T] [--energy psd_s2|reconstruct] [--evaluation local|full] [--reference PATH] [--openings W]\n");
      return 2;
    }
  }
  if (!bench::record_path_usable("bench_anneal", json)) return 2;
  if (openings > 0 && energy != "reconstruct") {
    std::fprintf(stderr, "bench_anneal: --openings goes with --energy reconstruct\n");
    return 2;
  }
  if ((energy != "psd_s2" && energy != "reconstruct") || (evaluation != "local" && evaluation != "full")) {
    std::fprintf(stderr, "bench_anneal: --energy must be psd_s2 or reconstruct, --evaluation local or full\n");
    return 2;
  }
  if (loop != "device" && loop != "host") {
    std::fprintf(stderr, "bench_anneal: --loop must be device or host (got %s)\n", loop.c_str());
    return 2;
  }
  const Backend backend = resolve_backend(parse_backend(backend_name), Operation::pore_size_distribution);
  const std::string where = backend == Backend::cuda ? cuda_device_description()
                                                     : "CPU, " + std::to_string(cpu_threads()) + " threads";
  Config c;
  c.shape = {size, size, size};
  c.backend = backend;
  c.host_loop = loop == "host";
  c.seed = seed;
  c.batch = batch;
  c.local_evaluation = evaluation == "local";
  c.schedule.t0 = temperature;
  c.schedule.stage_length = std::max<int64_t>(100, evaluations / 60);
  c.schedule.alpha = 0.9;
  c.stopping.max_evaluations = evaluations;
  c.stopping.stall_stages = 1000;
  const bool rock = energy == "reconstruct";
  // The real image, read when the energy or the start needs it (1 = pore, its own spacing).
  Mask image;
  if (rock || initial == "berea") image = phase_mask(read_hdf5(reference, "/volume"), 1);
  if (rock) {
    c.spacing = image.spacing();
    c.targets = Targets::from_image(image, Boundary::open, 20, false, Backend::cpu);
    c.boundary = Boundary::open;
    c.weights.euler = c.weights.surface = c.weights.chords = c.weights.patterns = c.weights.local_porosity = 1.0;
    c.weights.openings = openings;
    c.moves.interface_bias = 8.0;
    c.moves.keep_pore_connected = true;
    c.schedule.t0 = temperature > 0 ? temperature : 1e-6;
    c.schedule.stage_length = 20000;
    c.stopping.energy_tolerance = 0;
  } else {
    const Mask pore = phase_mask(read_raw(berea, {110, 110, 110}, DType::u8), 0);
    c.targets = Targets::from_image(pore, Boundary::open, 20, false, Backend::cpu);
    c.boundary = Boundary::periodic;
  }
  if (initial == "blobs") {
    c.initial = generate_blobs(c.shape, c.targets.porosity, blobiness, seed);
  } else if (initial == "berea") {
    // The image's centre at this size, reflected at its faces where the size is larger.
    Mask start(c.shape, c.spacing);
    const Shape from = image.shape();
    const auto reflect = [](int64_t v, int64_t n) {
      v %= 2 * n;
      if (v < 0) v += 2 * n;
      return v < n ? v : 2 * n - 1 - v;
    };
    for (int64_t z = 0; z < size; ++z)
      for (int64_t y = 0; y < size; ++y)
        for (int64_t x = 0; x < size; ++x)
          start(x, y, z) = image(reflect(x + (from.nx - size) / 2, from.nx), reflect(y + (from.ny - size) / 2, from.ny),
                                 reflect(z + (from.nz - size) / 2, from.nz));
    c.targets.porosity = double(count_phase(start)) / double(start.voxels());  // its own, exactly
    c.initial = std::move(start);
  } else if (initial != "noise") {
    std::fprintf(stderr, "bench_anneal: --initial must be noise, blobs or berea (got %s)\n", initial.c_str());
    return 2;
  }

  const auto t0 = std::chrono::steady_clock::now();
  Annealer a(c);
  const double initial_energy = a.progress().energy.total;
  const Quality start = quality(a.structure(), c.targets, c.boundary, Backend::cpu);
  const double setup = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // The start's largest pore radius (voxels): a local evaluation's boxes grow with it.
  const double largest_radius = std::max(
      0.0, thickness_range(local_thickness(a.structure(), c.boundary, Backend::cpu), a.structure()).hi / c.spacing.x);
  const auto t1 = std::chrono::steady_clock::now();
  const Progress p = a.run([](const Progress& pr) {
    std::fprintf(stderr, "  %8lld evaluations  T %.3g  E %.4f  accepted %lld\n", static_cast<long long>(pr.evaluations),
                 pr.temperature, pr.energy.total, static_cast<long long>(pr.accepted));
  }, std::max<int64_t>(1, evaluations / 10));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  const Quality end = quality(a.structure(), c.targets, c.boundary, Backend::cpu);

  const std::string loop_ran = a.device_loop() ? "device" : "host";
  const std::string scoring = a.device_loop() ? evaluation + " evaluation" : "the evaluators' own scoring";
  std::printf("\nannealer, %s, %s loop, %s, %lldx%lldx%lld, %s energy, targets from the Berea pore phase\n",
              where.c_str(), loop_ran.c_str(), scoring.c_str(), static_cast<long long>(size),
              static_cast<long long>(size), static_cast<long long>(size), energy.c_str());
  std::printf("%-14s %12s %10s %10s %10s\n", "", "energy", "PSD L1", "S2 RMS", "");
  std::printf("%-14s %12.4f %10.4f %10.5f\n", (initial + " start").c_str(), initial_energy, start.pore_psd_l1,
              start.s2_rms);
  std::printf("%-14s %12.4f %10.4f %10.5f   (%s after %lld evaluations)\n", "reconstruction", p.energy.total, end.pore_psd_l1,
              end.s2_rms, to_string(p.stopped).c_str(), static_cast<long long>(p.evaluations));
  std::printf("evaluations per second: %.1f (setup %.2f s, run %.2f s); the start's largest pore radius %.1f voxels\n",
              double(p.evaluations) / seconds, setup, seconds, largest_radius);
  const Annealer::BatchTally tally = a.batch_tally();
  if (!a.device_loop())
    std::printf("pipelined runs of speculative batches: %lld, scoring %lld proposals, %lld of them dropped (batch %s); "
                "accepted swaps taken in by the state and its replicas: %lld, %lld of them from their scoring's "
                "findings\n",
                static_cast<long long>(tally.batches), static_cast<long long>(tally.scored),
                static_cast<long long>(tally.dropped), batch ? std::to_string(batch).c_str() : "auto",
                static_cast<long long>(tally.taken), static_cast<long long>(tally.taken_from_findings));
  std::ostringstream out;
  out << "{\n  \"benchmark\": \"anneal\",\n  \"version\": \"" << version_string() << "\",\n  \"backend\": \""
      << to_string(backend) << "\",\n  \"device\": \"" << where << "\",\n  \"loop\": \"" << loop_ran << "\",\n  \"timer\": \"wall clock around the run, which ends synchronised\",\n  \"threads\": "
      << cpu_threads() << ",\n  \"shape\": [" << size << ", " << size << ", " << size << "],\n  \"initial\": \""
      << initial << "\",\n  \"blobiness\": " << (initial == "blobs" ? blobiness : 0.0) << ",\n  \"seed\": " << seed
      << ",\n  \"evaluations\": " << p.evaluations << ",\n  \"evaluations_per_second\": "
      << double(p.evaluations) / seconds << ",\n  \"stop_reason\": \"" << to_string(p.stopped)
      << "\",\n  \"energy\": \"" << energy << "\",\n  \"openings_weight\": " << openings
      << ",\n  \"evaluation\": \"" << (a.device_loop() ? evaluation : "evaluators")
      << "\",\n  \"accepted\": " << p.accepted << ",\n  \"initial_energy\": " << initial_energy << ",\n  \"final_energy\": "
      << p.energy.total << ",\n  \"start\": {\"psd_l1\": " << start.pore_psd_l1 << ", \"s2_rms\": " << start.s2_rms
      << "},\n  \"final\": {\"psd_l1\": " << end.pore_psd_l1 << ", \"s2_rms\": " << end.s2_rms
      << "},\n  \"start_largest_radius\": " << largest_radius << ",\n  \"batch\": " << batch << ",\n  \"batches\": " << tally.batches << ",\n  \"batched_proposals\": "
      << tally.scored << ",\n  \"dropped_proposals\": " << tally.dropped << ",\n  \"taken_swaps\": " << tally.taken
      << ",\n  \"taken_from_findings\": " << tally.taken_from_findings << "\n}\n";
  return bench::write_record("bench_anneal", json, out.str());
}
