// A reconstruction in progress — its folder, lock, history, checkpoints and outputs — for
// `poreforge run` and `poreforge resume`.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "run_session.hpp"
#include "run_signals.hpp"
#include "poreforge/annealer/annealer.hpp"
#include "poreforge/annealer/start.hpp"
#include "poreforge/backend.hpp"
#include "poreforge/memory.hpp"
#include "poreforge/correlation.hpp"
#include "poreforge/durable_file.hpp"
#include "poreforge/error.hpp"
#include "poreforge/generators.hpp"
#include "poreforge/io.hpp"
#include "poreforge/local_thickness.hpp"
#include "poreforge/realism.hpp"
#include "poreforge/transport.hpp"
#include "checkpoint.hpp"
#include "checksum.hpp"
#include "run_config.hpp"
#include "run_folder.hpp"

namespace poreforge::app {
namespace {

namespace fs = std::filesystem;

std::string xdmf_for(const Shape& s, const Spacing& sp, const std::string& h5, const std::string& dataset) {
  std::ostringstream x;
  x << "<?xml version=\"1.0\" ?>\n<Xdmf Version=\"3.0\">\n <Domain>\n  <Grid Name=\"structure\" GridType=\"Uniform\">\n"
    << "   <Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"" << s.nz + 1 << " " << s.ny + 1 << " " << s.nx + 1
    << "\"/>\n   <Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n"
    << "    <DataItem Dimensions=\"3\" NumberType=\"Float\" Format=\"XML\">0 0 0</DataItem>\n"
    << "    <DataItem Dimensions=\"3\" NumberType=\"Float\" Format=\"XML\">" << sp.z << " " << sp.y << " " << sp.x
    << "</DataItem>\n   </Geometry>\n   <Attribute Name=\"pore\" AttributeType=\"Scalar\" Center=\"Cell\">\n"
    << "    <DataItem Dimensions=\"" << s.nz << " " << s.ny << " " << s.nx
    << "\" NumberType=\"UChar\" Precision=\"1\" Format=\"HDF\">" << h5 << ":" << dataset << "</DataItem>\n"
    << "   </Attribute>\n  </Grid>\n </Domain>\n</Xdmf>\n";
  return x.str();
}

// A spacing for people to read (to_string keeps every digit, for files).
std::string spacing_text(const Spacing& s) {
  char text[96];
  std::snprintf(text, sizeof text, "%.6g,%.6g,%.6g", s.x, s.y, s.z);
  return text;
}

std::string hms(double seconds) {
  const int64_t s = std::llround(std::max(0.0, seconds));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600), static_cast<long long>(s / 60 % 60),
                static_cast<long long>(s % 60));
  return buf;
}

// Text outputs go to disk as the HDF5 ones do: temporary, fsync, rename, directory fsync.
void write_text(const fs::path& path, const std::string& text) { write_text_file(path.string(), text); }

// A signal before the run folder exists: the run ends there, nothing written.
struct Interrupted {
  int signal;
};
void stop_if_signalled() {
  if (const int sig = caught_signal()) throw Interrupted{sig};
}

// Evaluations a loop is advanced by between looks at the clock, signals and the screen: on
// the host loop as many as it takes at once (one, or a pipelined run of speculative batches,
// a fraction of a second); on the device loop a short run of steps enqueued at once, its
// progress read back at its end.
int64_t steps_at_once(const anneal::Annealer& a) { return a.device_loop() ? 256 : a.proposals_at_once(); }

// The backend of a run's loop (and of its start and measures): `auto` takes the GPU where there
// is one, but not for a loop only the CPU runs, or runs faster (auto_host_loop_reason, said in
// `reason`).
Backend run_backend(const std::string& requested, const anneal::Config& loop, std::string* reason) {
  const Backend b = resolve_backend(parse_backend(requested), Operation::pore_size_distribution);
  *reason = requested == "auto" && b == Backend::cuda ? auto_host_loop_reason(loop) : std::string();
  return reason->empty() ? b : Backend::cpu;
}

// A run in progress: its folder, its history and its checkpoints.
struct Session {
  RunConfig rc;  // rc.loop: the annealer's configuration, its targets and start filled in here
  Backend backend = Backend::cpu;
  std::string host_loop_reason;  // why `auto` chose the CPU although a GPU is there (empty: it did not)
  std::optional<anneal::BlobCandidate> blob_start;  // a blobs start: its size and how near the target
  bool blob_size_searched = false;                   // `blobiness: auto`
  fs::path dir;
  FolderLock lock;  // held from the claim of the folder to the exit
  std::vector<HistoryRow> history;
  std::string command_line;
  bool quiet = false;
  std::string progress = "auto";  // live | plain | json | none (auto: live on a terminal, else plain)
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  int64_t first_evaluation = 0;  // where this session's loop began (0, or a resume's step)
  anneal::Quality start_quality;  // of the structure this session's loop began from
  std::optional<anneal::Quality> run_start;  // of the run's first structure (a resume: from the checkpoint)
  std::ofstream log;
  /// The loop's wall-clock limit this session when coarser levels (annealing.levels) took
  /// part of rc.max_seconds; < 0: rc.max_seconds itself (0 there: none).
  double loop_seconds = -1;
  std::vector<Mask> coarse_levels;        // annealing.levels: each coarser level's result, coarsest first
  std::vector<std::string> early_lines;   // said before run.log was open

  // Informational lines; with --progress json they go to stderr so stdout stays JSON lines.
  std::FILE* text_stream() const { return progress == "json" ? stderr : stdout; }
  void say(const std::string& line) {
    if (!quiet) {
      std::fprintf(text_stream(), "%s\n", line.c_str());
      std::fflush(text_stream());
    }
    log << line << "\n";
    log.flush();
  }
  double seconds_limit() const { return loop_seconds >= 0 ? loop_seconds : rc.max_seconds; }
  // A line said before the run folder exists: on screen now, into run.log once it is open.
  void note(const std::string& line) {
    if (!quiet) {
      std::fprintf(text_stream(), "%s\n", line.c_str());
      std::fflush(text_stream());
    }
    early_lines.push_back(line);
  }

  // Returns the checkpoint's path.
  fs::path checkpoint(const anneal::Annealer& a) {
    const fs::path folder = dir / "checkpoints";
    fs::create_directories(folder);
    char name[64];
    std::snprintf(name, sizeof name, "evaluation-%012lld.h5", static_cast<long long>(a.progress().evaluations));
    write_checkpoint((folder / name).string(),
                     {kCheckpointSchema, rc.to_yaml(), rc.loop.targets, a.snapshot(), history, run_start}, command_line);
    // Keep the newest `keep`, by the evaluations in their names (`step-N.h5`: a folder of a
    // poreforge that named checkpoints so, resumed).
    std::vector<std::pair<long long, fs::path>> all;
    for (auto& e : fs::directory_iterator(folder)) {
      const std::string file = e.path().filename().string();
      if (e.path().extension() != ".h5") continue;
      for (const char* prefix : {"evaluation-", "step-"})
        if (file.rfind(prefix, 0) == 0) all.push_back({std::atoll(file.c_str() + std::strlen(prefix)), e.path()});
    }
    std::sort(all.begin(), all.end());
    for (std::size_t k = 0; k + std::size_t(rc.checkpoint_keep) < all.size(); ++k) fs::remove(all[k].second);
    return folder / name;
  }

  // annealing.verify_every: the running energy against every term recounted from scratch.
  void verify(const anneal::Annealer& a) {
    static const char* const names[anneal::kTermCount] = {"pore_psd", "solid_psd", "s2",       "euler",
                                                          "surface",  "chords",    "openings", "patterns",
                                                          "local_porosity"};
    const anneal::Energy& running = a.progress().energy;
    const anneal::Energy scratch = a.evaluate_from_scratch();
    for (int k = 0; k < anneal::kTermCount; ++k) {
      const double x = running.term(k), y = scratch.term(k);
      if (std::fabs(x - y) > 1e-9 * std::max(1.0, std::fabs(y))) {
        char line[256];
        std::snprintf(line, sizeof line,
                      "annealing.verify_every: at %lld evaluations the running energy's %s term is %.17g, a recount "
                      "gives %.17g",
                      static_cast<long long>(a.progress().evaluations), names[k], x, y);
        throw RuntimeError(line);
      }
    }
    log << "verified  " << a.progress().evaluations << " evaluations: the running energy equals a recount\n";
    log.flush();
  }

  // The loop: reports, checkpoints, signals; then the final outputs. Returns the exit code.
  int drive(anneal::Annealer& a) {
    // The handlers are RunSignals'; a signal caught during the start or the coarser levels' last
    // steps is still seen (caught_signal is not cleared).
    const auto loop_start = std::chrono::steady_clock::now();
    auto last_checkpoint = loop_start;
    const int64_t first = first_evaluation = a.progress().evaluations;
    start_quality = anneal::quality(a.structure(), rc.loop.targets, rc.loop.boundary, backend);
    if (first == 0) run_start = start_quality;
    started = loop_start;
    const std::string mode = quiet ? "none" : progress == "auto" ? (::isatty(1) ? "live" : "plain") : progress;
    auto last_shown = loop_start - std::chrono::hours(1);
    // The progress line: evaluations, temperature, energy, acceptance rate, rate, ETA.
    auto line_of = [&](const anneal::Progress& p, bool json) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
      const double rate = elapsed > 0 ? double(p.evaluations - first) / elapsed : 0;
      const double share = p.evaluations ? double(p.accepted) / double(p.evaluations) : 0;
      double eta = rate > 0 ? double(rc.loop.stopping.max_evaluations - p.evaluations) / rate : 0;
      if (seconds_limit() > 0) eta = std::min(eta, seconds_limit() - elapsed);
      char line[320];
      if (json)
        std::snprintf(line, sizeof line,
                      "{\"evaluations\": %lld, \"stage\": %lld, \"temperature\": %.6e, \"energy\": %.8f, "
                      "\"acceptance\": %.5f, \"evaluations_per_second\": %.2f, \"eta_seconds\": %.1f}",
                      static_cast<long long>(p.evaluations), static_cast<long long>(p.stage), p.temperature,
                      p.energy.total, share, rate, eta);
      else
        std::snprintf(line, sizeof line, "%10lld evaluations  T %.3e  E %.5f  accepted %.3f  %.0f eval/s  ETA %s",
                      static_cast<long long>(p.evaluations), p.temperature, p.energy.total, share, rate, hms(eta).c_str());
      return std::string(line);
    };
    // On screen: a live line (at most 5 per second), a plain line every 5 s, or JSON per record.
    auto show = [&](const anneal::Progress& p, bool at_record, bool final) {
      const auto now = std::chrono::steady_clock::now();
      const double since = std::chrono::duration<double>(now - last_shown).count();
      if (mode == "live" && (final || since >= 0.2)) {
        std::printf("\r%s   %s", line_of(p, false).c_str(), final ? "\n" : "");
      } else if (mode == "plain" && (final || since >= 5.0)) {
        std::printf("%s\n", line_of(p, false).c_str());
      } else if (mode == "json" && at_record) {
        std::printf("%s\n", line_of(p, true).c_str());
      } else {
        return;
      }
      std::fflush(stdout);
      last_shown = now;
    };
    // History (energy.csv) and run.log take a row every report_every evaluations.
    auto record = [&](const anneal::Progress& p) {
      history.push_back({double(p.evaluations), double(p.stage), p.temperature, p.energy.total, p.energy.pore_psd,
                         p.energy.solid_psd, p.energy.s2, double(p.accepted), double(p.rejected), p.energy.euler,
                         p.energy.surface, p.energy.chords, p.energy.openings, p.energy.patterns,
                         p.energy.local_porosity});
      log << line_of(p, false) << "\n";
      log.flush();
    };
    if (history.empty()) record(a.progress());
    show(a.progress(), true, false);
    int64_t reported = a.progress().evaluations;
    while (a.progress().stopped == anneal::StopReason::none) {
      // A run of steps_at_once ends at the next record or count checkpoint, so the screen, the
      // time checkpoints and a signal are still seen often.
      const int64_t done = a.progress().evaluations;
      int64_t steps = std::min(steps_at_once(a), rc.report_every - done % rc.report_every);
      if (rc.checkpoint_every_evaluations > 0)
        steps = std::min(steps, rc.checkpoint_every_evaluations - done % rc.checkpoint_every_evaluations);
      if (rc.verify_every > 0) steps = std::min(steps, rc.verify_every - done % rc.verify_every);
      a.advance(steps);
      const auto& p = a.progress();
      if (rc.verify_every > 0 && p.evaluations % rc.verify_every == 0) verify(a);
      if (seconds_limit() > 0 && p.stopped == anneal::StopReason::none &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count() >= seconds_limit())
        a.stop(anneal::StopReason::time_limit);
      const bool at_record = p.evaluations % rc.report_every == 0;
      if (at_record) {
        record(p);
        reported = p.evaluations;
      }
      if (p.stopped == anneal::StopReason::none) show(p, at_record, false);
      const auto now = std::chrono::steady_clock::now();
      const bool by_count = rc.checkpoint_every_evaluations > 0 && p.evaluations % rc.checkpoint_every_evaluations == 0;
      const bool by_time = rc.checkpoint_every_seconds > 0 &&
                           std::chrono::duration<double>(now - last_checkpoint).count() >= rc.checkpoint_every_seconds;
      if ((by_count || by_time) && p.stopped == anneal::StopReason::none) {
        checkpoint(a);
        last_checkpoint = now;
      }
      if (const int sig = caught_signal()) {
        if (mode == "live") std::printf("\n");
        const fs::path written = checkpoint(a);
        write_history();
        const int code = 128 + sig;
        say("interrupted by signal " + std::to_string(sig) + " after " + std::to_string(p.evaluations) +
            " evaluations; checkpoint written: resume with `poreforge resume " + written.string() + "`");
        return code;
      }
    }
    const auto& p = a.progress();
    if (reported != p.evaluations) record(p);
    show(p, true, true);
    checkpoint(a);
    write_outputs(a);
    return 0;
  }

  // energy.csv: the history so far (at the end, and when a signal stops the run).
  void write_history() {
    std::ostringstream csv;
    csv << "evaluations,stage,temperature,energy,pore_psd,solid_psd,s2,accepted,rejected,euler,surface,chords,"
           "openings,patterns,local_porosity\n";
    for (const auto& r : history)
      csv << int64_t(r[0]) << "," << int64_t(r[1]) << "," << r[2] << "," << r[3] << "," << r[4] << "," << r[5] << ","
          << r[6] << "," << int64_t(r[7]) << "," << int64_t(r[8]) << "," << r[9] << "," << r[10] << "," << r[11] << ","
          << r[12] << "," << r[13] << "," << r[14] << "\n";
    write_text(dir / "energy.csv", csv.str());
  }

  void write_outputs(const anneal::Annealer& a) {
    const anneal::Progress& p = a.progress();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    write_history();
    {
      OutputFile final_h5((dir / "final.h5").string(), true);
      final_h5.write_volume("/volume", a.structure());
      final_h5.set_attribute("energy", p.energy.total);
      final_h5.set_attribute("stop_reason", to_string(p.stopped));
      final_h5.set_attribute("evaluations", double(p.evaluations));
      final_h5.set_attribute("seed", double(rc.loop.seed));
      final_h5.set_attribute("labels", std::string("1 = pore, 0 = solid"));
      final_h5.set_provenance(command_line);
      final_h5.commit();
    }
    write_text(dir / "final.xdmf", xdmf_for(rc.loop.shape, rc.loop.spacing, "final.h5", "/volume"));
    if (rc.tiff) write_tiff((dir / "final.tif").string(), a.structure());
    {
      OutputFile d((dir / "descriptors.h5").string(), true);
      const Mask& m = a.structure();
      const auto& t = rc.loop.targets;
      d.write_vector("/target/psd/pore/edges", t.pore_edges);
      d.write_vector("/target/psd/pore/fraction", t.pore_psd);
      d.write_vector("/achieved/psd/pore/edges", t.pore_edges);
      d.write_vector("/achieved/psd/pore/fraction",
                     pore_size_distribution(m, rc.loop.boundary, Bins::from_edges(t.pore_edges), backend).fraction);
      if (!t.solid_edges.empty()) {
        d.write_vector("/target/psd/solid/edges", t.solid_edges);
        d.write_vector("/target/psd/solid/fraction", t.solid_psd);
        d.write_vector("/achieved/psd/solid/fraction",
                       pore_size_distribution(complement(m), rc.loop.boundary, Bins::from_edges(t.solid_edges), backend)
                           .fraction);
      }
      const auto s2 = two_point_correlation(m).directional;
      const char* axes[3] = {"x", "y", "z"};
      for (int k = 0; k < 3; ++k) {
        d.write_vector(std::string("/target/s2/") + axes[k], t.s2[k]);
        d.write_vector(std::string("/achieved/s2/") + axes[k], s2.along(k));
      }
      d.set_provenance(command_line);
      d.commit();
    }
    const anneal::Quality final_quality = anneal::quality(a.structure(), rc.loop.targets, rc.loop.boundary, backend);
    auto quality_json = [](const anneal::Quality& q) {
      std::ostringstream o;
      o << "{\"pore_psd_l1\": " << q.pore_psd_l1 << ", \"s2_rms\": " << q.s2_rms << "}";
      return o.str();
    };
    std::ostringstream j;
    j << "{\n  \"name\": \"" << rc.name << "\",\n  \"version\": \"" << version_string() << "\",\n  \"backend\": \""
      << to_string(backend) << "\",\n  \"device\": \""
      << backend_description(backend)
      << "\",\n  \"seed\": " << rc.loop.seed << ",\n  \"evaluations\": " << p.evaluations << ",\n  \"accepted\": "
      << p.accepted << ",\n  \"stop_reason\": \"" << to_string(p.stopped) << "\",\n  \"energy\": " << p.energy.total
      << ",\n  \"best_energy\": " << p.best.total << ",\n  \"energy_against_random_start\": "
      << a.energy_against_random_start() << ",\n  \"loop_seconds_this_session\": " << seconds
      << ",\n  \"evaluations_per_second\": " << (seconds > 0 ? double(p.evaluations - first_evaluation) / seconds : 0)
      << ",\n  \"quality\": {";
    if (run_start) j << "\"start\": " << quality_json(*run_start) << ", ";
    if (first_evaluation > 0) j << "\"resumed_from\": " << quality_json(start_quality) << ", ";
    j << "\"final\": " << quality_json(final_quality) << "}\n}\n";
    write_text(dir / "summary.json", j.str());
    const anneal::Quality& from = run_start.value_or(start_quality);
    std::fprintf(text_stream(),
                 "stopped   %s after %lld evaluations, energy %.5f (best %.5f; %.5f against a random start)\n"
                 "quality   pore PSD L1 %.4f -> %.4f, S2 RMS %.5f -> %.5f (%s -> final)\nwrote     %s\n",
                 to_string(p.stopped).c_str(), static_cast<long long>(p.evaluations), p.energy.total, p.best.total,
                 a.energy_against_random_start(), from.pore_psd_l1, final_quality.pore_psd_l1, from.s2_rms, final_quality.s2_rms,
                 run_start ? "the run's start" : "this resume's start", dir.string().c_str());
  }
};

// What a connected start placed of the reference's small clusters, for the run's log.
std::string placed_clusters(const anneal::ConnectedStart& cs, const anneal::ClusterSample& sample) {
  char text[240];
  std::snprintf(text, sizeof text,
                "%lld of the reference's small clusters placed (%lld in its own shapes), %lld of them touching the "
                "largest at an edge or corner (it has %.1f on average, %.1f touching)",
                static_cast<long long>(cs.clusters_placed), static_cast<long long>(cs.clusters_as_sampled),
                static_cast<long long>(cs.clusters_touching), sample.others, sample.touching);
  return text;
}

// The domain's physical size in the reference's voxels: the shape of the reference's
// sub-volumes a run samples (its clusters, its F) and `compare` judges it against.
Shape domain_in_reference_voxels(const anneal::Config& loop, const Mask& reference) {
  int64_t sub[3];
  for (int a = 0; a < 3; ++a)
    sub[a] = std::max<int64_t>(1, std::llround(double(loop.shape.extent(a)) * loop.spacing.along(a) /
                                               reference.spacing().along(a)));
  return Shape{sub[0], sub[1], sub[2]};
}

// A connected start's clusters: those of the reference's sub-volumes of this domain's physical
// size (as `compare` draws them), or a descriptor file's largest share alone; none when the
// start is not connected.
std::optional<anneal::ClusterSample> cluster_sample(Session& run, const anneal::Config& loop, const Mask* reference,
                                                    bool quiet) {
  std::optional<anneal::ClusterSample> clusters;
  if (run.rc.initial_connect && reference) {
    clusters = anneal::sample_clusters(*reference, domain_in_reference_voxels(loop, *reference), 12, loop.seed,
                                       run.backend);
    // Sizes in the domain's voxels: the same physical volume on another grid; clusters below
    // half a voxel of it do not show there, and their share of the count goes with them.
    const Spacing rs = reference->spacing(), ds = loop.spacing;
    const double scale = (rs.x * rs.y * rs.z) / (ds.x * ds.y * ds.z);
    if (scale != 1.0) {
      std::vector<int64_t> shown;
      std::vector<uint8_t> shown_touching;
      for (std::size_t k = 0; k < clusters->other_sizes.size(); ++k)
        if (const int64_t s = std::llround(double(clusters->other_sizes[k]) * scale); s > 0) {
          shown.push_back(s);
          shown_touching.push_back(clusters->other_touching[k]);
        }
      if (!clusters->other_sizes.empty()) {
        // Each pooled cluster stands for this many in a box of the domain's size.
        const double each = clusters->others / double(clusters->other_sizes.size());
        clusters->others = each * double(shown.size());
        clusters->touching = each * double(std::count(shown_touching.begin(), shown_touching.end(), 1));
      }
      clusters->other_sizes = std::move(shown);
      clusters->other_touching = std::move(shown_touching);
      if (clusters->other_sizes.empty()) clusters->others = clusters->touching = 0;
    }
    // Shapes lie on the reference's grid: on another (any axis's spacing, even at the same
    // voxel volume) they would come out stretched, so the clusters grow compact there.
    if (rs.x != ds.x || rs.y != ds.y || rs.z != ds.z) clusters->other_shapes.clear();
  } else if (run.rc.initial_connect && loop.targets.largest_cluster_share > 0) {
    clusters = anneal::ClusterSample{};
    clusters->largest_share = loop.targets.largest_cluster_share;
  } else if (run.rc.initial_connect && !quiet) {
    std::fprintf(run.text_stream(), "initial.connect: the target names no largest-cluster share (a descriptor file "
                                    "without `describe --measures`); the blobs start as drawn\n");
  }
  return clusters;
}

// A blobs or grains start of the sizes run.rc names (none `auto`) from `seed`, connected with
// `clusters`.
Mask make_start(const Session& run, const anneal::Config& loop, const anneal::ClusterSample* clusters, uint64_t seed,
                anneal::BlobCandidate* report) {
  if (run.rc.initial == "grains") {
    std::optional<std::array<double, 3>> stretch;  // none: as the targets' chords say
    if (!run.rc.initial_grain_stretch_auto) stretch = run.rc.initial_grain_stretch;
    return anneal::make_grain_start(loop.shape, loop.spacing, loop.targets, loop.boundary, run.rc.initial_grain_radius,
                                    seed, run.backend, report, clusters,
                                    run.rc.initial_grain_spread_auto ? 0.0 : run.rc.initial_grain_spread, stretch);
  }
  return anneal::make_blob_start(loop.shape, loop.spacing, loop.targets, loop.boundary, run.rc.initial_blobiness,
                                 run.rc.initial_plant_large_pores, seed, run.backend, report, clusters);
}

// A blobs or grains start at `loop`'s grid, connected as the reference's clusters are
// (initial.connect); `auto` sizes chosen by the targets and written back into run.rc, so the
// resolved config makes the same start again.
void build_start(Session& run, anneal::Config& loop, const Mask* reference, bool quiet) {
  const bool grains = run.rc.initial == "grains";
  const bool plant = run.rc.initial_plant_large_pores;
  const std::optional<anneal::ClusterSample> clusters = cluster_sample(run, loop, reference, quiet);
  const anneal::ClusterSample* cl = clusters ? &*clusters : nullptr;
  anneal::BlobCandidate chosen;
  std::optional<std::array<double, 3>> stretch;  // none: as the targets' chords say
  if (!run.rc.initial_grain_stretch_auto) stretch = run.rc.initial_grain_stretch;
  anneal::StartWeights start_weights;  // relative to the PSD's, as the run weighs them
  if (loop.weights.pore_psd > 0) {
    start_weights.s2 = loop.weights.s2 / loop.weights.pore_psd;
    start_weights.chords = loop.weights.chords / loop.weights.pore_psd;
  }
  if (grains ? run.rc.initial_grain_radius_auto : run.rc.initial_blobiness_auto) {
    if (!quiet)
      std::fprintf(run.text_stream(), "choosing the %s by the targets:\n", grains ? "grain radius" : "blob size");
    anneal::BlobStart start = anneal::choose_blob_start(
        loop.shape, loop.spacing, loop.targets, loop.boundary, loop.seed, plant, run.backend,
        [&](const anneal::BlobCandidate& c) {
          stop_if_signalled();  // each size tried takes a while at large domains
          if (quiet) return;
          if (grains)
            std::fprintf(run.text_stream(), "  grain radius %.3g voxels, spread %.2g: pore-PSD L1 %.4f", c.radius,
                         c.radius_spread, c.blobs_psd_l1);
          else
            std::fprintf(run.text_stream(), "  blobiness %.4g (sigma %.3g voxels): pore-PSD L1 %.4f", c.blobiness,
                         c.sigma, c.blobs_psd_l1);
          if (c.connected.voxels_grown) std::fprintf(run.text_stream(), ", %.4f connected", c.pore_psd_l1);
          if (c.s2_rms > 0) std::fprintf(run.text_stream(), ", S2 RMS %.4g", c.s2_rms);
          if (c.chords_l1 > 0) std::fprintf(run.text_stream(), ", chords L1 %.4f", c.chords_l1);
          if (c.planted_balls)
            std::fprintf(run.text_stream(), ", %.4f with %d large pores planted", c.pore_psd_l1, c.planted_balls);
          std::fprintf(run.text_stream(), "\n");
        },
        cl, start_weights, grains, run.rc.initial_grain_spread_auto ? -1.0 : run.rc.initial_grain_spread, stretch);
    loop.initial = std::move(start.structure);
    chosen = start.chosen;
    if (grains) {
      run.rc.initial_grain_radius = chosen.radius;
      run.rc.initial_grain_radius_auto = false;
      run.rc.initial_grain_spread = chosen.radius_spread;
      run.rc.initial_grain_spread_auto = false;
      run.rc.initial_grain_stretch = chosen.stretch;
      run.rc.initial_grain_stretch_auto = false;
    } else {
      run.rc.initial_blobiness = chosen.blobiness;
      run.rc.initial_blobiness_auto = false;
    }
    run.blob_size_searched = true;
  } else {
    loop.initial = make_start(run, loop, cl, loop.seed, &chosen);
    if (grains) {
      run.rc.initial_grain_stretch = chosen.stretch;
      run.rc.initial_grain_stretch_auto = false;
    }
  }
  run.blob_start = chosen;
  const anneal::ConnectedStart& cs = chosen.connected;
  if (cl && !quiet) {
    std::fprintf(run.text_stream(),
                 "connected start: largest pore cluster %.4f -> %.4f of the pore (reference %.4f), %lld other "
                 "clusters made solid, ",
                 cs.largest_share_before, cs.largest_share_after, cl->largest_share,
                 static_cast<long long>(cs.clusters_dropped));
    if (cl->other_sizes.empty())
      std::fprintf(run.text_stream(), "the blobs' smaller ones kept (the target names the share only)");
    else
      std::fprintf(run.text_stream(), "%s", placed_clusters(cs, *cl).c_str());
    if (cs.voxels_peeled) std::fprintf(run.text_stream(), ", %lld voxels peeled", static_cast<long long>(cs.voxels_peeled));
    std::fprintf(run.text_stream(), ", %lld voxels grown\n", static_cast<long long>(cs.voxels_grown));
  }
}

// initial.draws: the formation factors a reconstruction ends with are set by its start. The
// annealing reshapes pores and throats voxel by voxel but keeps the pore space's paths (the
// moves keep it connected), and a grains start's F along each axis comes through the levels,
// moved by a few per cent in a way a pilot of the run measures (draw_carry), while the grains'
// sizes and stretch (from the PSD, S2 and mean chords) set it only on average: one draw of
// grains in a box a few dozen grains across can leave an axis a fifth harder to cross than the
// reference's. So several starts are drawn with the same sizes and one whose F along x, y, z,
// carried, lies where the reference's sub-volumes' do is kept (choose_start_draw; in
// logarithm: a ratio off either way counts alike). The reference's F is taken on its own
// grid, where the finest level is judged, whatever level the start is drawn for: a coarser
// level's start is the grains that level refines and the finest reshapes, and its F is
// measured at its grid.
constexpr double kDrawTolerance = 1e-6;  // conjugate gradients' relative residual: far more digits than a rank needs

// The start's flow measures solve a system of the pore's size: refused, naming `what_of` (the
// measure and the structure), before anything of that size is made where memory cannot hold it.
void require_flow_memory(const Mask& pore, Backend backend, const std::string& what_of) {
  MemoryEstimate need = compare_memory(pore.shape(), pore.spacing(),
                                       double(count_phase(pore)) / double(std::max<int64_t>(1, pore.voxels())), false,
                                       backend);
  need.what = what_of;
  require_memory(need);
}

// The frame the start's per-axis flow measures share: the pore's 6-connected clusters
// (labelled here unless `components` gives them) and `solve(axis, components)` along each axis
// the structure is more than one voxel long in, NaN along the others.
template <class Solve>
std::array<double, 3> per_axis(const Mask& pore, Backend backend, const ComponentLabels* components, Solve&& solve) {
  std::optional<ComponentLabels> labelled;
  if (!components) components = &labelled.emplace(label_components(pore, Adjacency::face6, backend));
  std::array<double, 3> v{};
  for (int a = 0; a < 3; ++a)
    v[std::size_t(a)] = pore.shape().extent(a) <= 1 ? std::numeric_limits<double>::quiet_NaN() : solve(a, *components);
  return v;
}

// F along x, y, z of `what` (NaN along an axis of one voxel, +infinity where no pore cluster
// crosses); `converged` (optional) hears whether every solve met its tolerance.
std::array<double, 3> formation_factors(const Mask& pore, Backend backend, const std::string& what,
                                        bool* converged = nullptr, const ComponentLabels* components = nullptr) {
  require_flow_memory(pore, backend, "the formation factors of " + what);
  FormationFactorOptions fo;
  fo.tolerance = kDrawTolerance;
  if (converged) *converged = true;
  return per_axis(pore, backend, components, [&](int axis, const ComponentLabels& c) {
    const FormationFactorResult r = formation_factor(pore, axis, fo, backend, &c);
    if (converged && !r.converged) *converged = false;
    return r.formation_factor;
  });
}

// The Poiseuille permeability (poiseuille_permeability) along x, y, z of `what`, spacing
// units squared: the flow a start's paths carry for their widths, which F alone does not see
// (structures of one F differ in k as their throats differ in width). NaN along
// an axis of one voxel, 0 where no pore cluster crosses.
std::array<double, 3> poiseuille_permeabilities(const Mask& pore, Backend backend, const std::string& what,
                                                const ComponentLabels* components = nullptr) {
  require_flow_memory(pore, backend, "the Poiseuille permeabilities of " + what);
  if (const int64_t n = count_phase(pore); n == 0 || n == pore.voxels()) {  // no radius without both phases
    std::array<double, 3> k{};
    k.fill(n == 0 ? 0.0 : std::numeric_limits<double>::quiet_NaN());
    return k;
  }
  const Volume<float> radius = local_thickness(pore, Boundary::open, backend);
  FormationFactorOptions fo;
  fo.tolerance = kDrawTolerance;
  return per_axis(pore, backend, components, [&](int axis, const ComponentLabels& c) {
    return poiseuille_permeability(pore, radius, axis, fo, backend, &c).permeability;
  });
}

// The largest |ln(F_a / F_reference,a)| over the axes both have: 0 for the reference's own;
// infinite where the draw's pore does not cross an axis the reference's does. The worst axis,
// not a mean over them: a reconstruction is judged axis by axis (each F inside the real
// sub-volumes' range), and a mean lets two axes near the reference hide a third far from it.
double flow_mismatch(const std::array<double, 3>& f, const std::array<double, 3>& reference) {
  double worst = 0;
  for (std::size_t a = 0; a < 3; ++a) {
    if (std::isnan(f[a]) || std::isnan(reference[a]) || std::isinf(reference[a])) continue;
    if (std::isinf(f[a])) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, std::abs(std::log(f[a] / reference[a])));
  }
  return worst;
}

// The seed of draw k of a run's start: draw 0 is the run's own; the others are mixed
// (splitmix64) so that a run's draws are not another seed's.
uint64_t draw_seed(uint64_t seed, int k) {
  if (k == 0) return seed;
  return mix64(seed + golden_gamma * uint64_t(k));
}

std::string factors_text(const std::array<double, 3>& f) {
  char text[96];
  std::snprintf(text, sizeof text, "%.4g / %.4g / %.4g", f[0], f[1], f[2]);
  return text;
}

// The reference's formation factors along x, y, z: of `reference` on its grid, or from a
// descriptor file's /measures (`describe --measures`); nullopt where neither holds them.
std::optional<std::array<double, 3>> reference_formation_factors(const Session& run, const Mask* reference) {
  if (reference) return formation_factors(*reference, run.backend, "reference (" + to_string(reference->shape()) + ")");
  const std::string& path = run.rc.target_descriptors;
  std::array<double, 3> f{};
  for (int a = 0; a < 3; ++a) {
    const std::string name = std::string("/measures/formation_factor_") + "xyz"[a];
    if (path.empty() || !hdf5_has_object(path, name)) return std::nullopt;
    f[std::size_t(a)] = read_hdf5_vector(path, name).at(0);
  }
  return f;
}

// A structure of the level the start is drawn for, as the domain's grid will start from it:
// itself on a run of one level, else refined through the finer levels (refine_start).
using OntoDomain = std::function<Mask(const Mask&)>;

// initial.draws' pilot: a start's F is not the F its run ends with. The annealing moves F
// along each axis by a few per cent, not alike along every axis (it evens out some of the
// start's anisotropy), and a finer level refined from a coarser one lowers it along all of
// them (docs/realism.md, "Why z"); a draw that starts nearest the reference can end farther
// from it than another. Those moves are the run's own — its targets, terms and grids — and
// alike for every draw of it to a few per cent, so a pilot measures them: the level's
// annealing for a kPilotShare of its evaluations from `start` (draw number `draw`), its end
// refined onto the domain's grid (`onto_domain`), F there, and over `start_f` axis by axis
// (1 where either is not finite). A pilot ends within a few per cent of where its run ends.
// With `measure_k` (a band to judge it by), also the Poiseuille permeability of its end on
// the level's own grid (FlowBand says why there); NaN without. `level_seconds` (0: none) is
// what the level has left of annealing.max_seconds; the pilot's annealing takes at most a
// kPilotShare of it. Adds the pilot's seconds to `*seconds`. A signal ends the run (the pilot
// keeps nothing).
constexpr int64_t kPilotShare = 8;

struct PilotEnd {
  std::array<double, 3> carry{};     // F on the domain's grid over the draw's F (1 where either is not finite)
  std::array<double, 3> domain_f{};  // F on the domain's grid
  std::array<double, 3> level_k{};   // the Poiseuille permeability on the level's grid (NaN: not measured)
};

PilotEnd draw_carry(Session& run, const anneal::Config& loop, const Mask& start, const std::array<double, 3>& start_f,
                    const OntoDomain& onto_domain, double level_seconds, bool quiet, double* seconds, int draw,
                    bool measure_k) {
  anneal::Config pilot = loop;
  pilot.initial = start;
  pilot.stopping.max_evaluations = std::max<int64_t>(1, loop.stopping.max_evaluations / kPilotShare);
  const auto began = std::chrono::steady_clock::now();
  const auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  std::optional<Mask> annealed;
  int64_t evaluations = 0;
  {  // the pilot's annealer is freed before the refinement and the solves, which need the room
    anneal::Annealer a(pilot);
    auto shown = began;
    while (a.progress().stopped == anneal::StopReason::none) {
      a.advance(steps_at_once(a));
      if (level_seconds > 0 && a.progress().stopped == anneal::StopReason::none &&
          since(began) >= level_seconds / double(kPilotShare))
        a.stop(anneal::StopReason::time_limit);
      stop_if_signalled();
      if (!quiet && since(shown) >= 5.0) {
        std::fprintf(run.text_stream(), "  pilot: %lld evaluations  E %.5f\n",
                     static_cast<long long>(a.progress().evaluations), a.progress().energy.total);
        std::fflush(run.text_stream());
        shown = std::chrono::steady_clock::now();
      }
    }
    annealed = a.structure();
    evaluations = a.progress().evaluations;
  }
  const Mask& end = *annealed;
  const Mask refined = onto_domain(end);
  const std::string end_name = "the pilot's end (" + to_string(end.shape()) + ")";
  require_flow_memory(end, run.backend, "the formation factors of " + end_name);  // before the labels are made
  const ComponentLabels end_components = label_components(end, Adjacency::face6, run.backend);
  const std::array<double, 3> level_f = formation_factors(end, run.backend, end_name, nullptr, &end_components);
  const std::array<double, 3> domain_f =
      refined.shape() == end.shape()
          ? level_f
          : formation_factors(refined, run.backend, "the pilot refined (" + to_string(refined.shape()) + ")");
  std::array<double, 3> level_k;
  level_k.fill(std::numeric_limits<double>::quiet_NaN());
  if (measure_k) level_k = poiseuille_permeabilities(end, run.backend, end_name, &end_components);
  std::array<double, 3> carry{};
  for (std::size_t i = 0; i < 3; ++i) {
    const double c = domain_f[i] / start_f[i];
    carry[i] = std::isfinite(c) && c > 0 ? c : 1.0;
  }
  *seconds += since(began);
  char line[480];
  std::snprintf(line, sizeof line,
                "pilot     draw %d: %lld evaluations in %.1f s: formation factors %s%s%s; carried x %.4f / %.4f / %.4f%s%s",
                draw + 1, static_cast<long long>(evaluations), since(began), factors_text(level_f).c_str(),
                refined.shape() == end.shape() ? "" : ", refined onto the domain's grid ",
                refined.shape() == end.shape() ? "" : factors_text(domain_f).c_str(), carry[0], carry[1], carry[2],
                measure_k ? "; Poiseuille permeabilities " : "", measure_k ? factors_text(level_k).c_str() : "");
  run.note(line);
  return PilotEnd{carry, domain_f, level_k};
}

// Where the reference's flow lies at the domain's size: F and the Poiseuille permeability
// along each axis of kBandCount sub-volumes of the reference of the domain's physical size
// (cut as `compare` cuts them, from corners of a seed mixed from the run's, so a run does not
// aim at the sub-volumes its judge draws from the same seed), their least and greatest and
// their middle half (the quartiles). A reconstruction is judged axis by axis against the
// range of such a set, for F and for the permeability; its ends are themselves drawn (two
// sets of overlapping sub-volumes differ most there: docs/realism.md), so a start is kept by
// the middle half, which any such range holds but by chance. None where the domain does not
// fit in the reference or is the reference's size (or an axis is one voxel), or fewer than
// two sub-volumes hold both phases.
constexpr int kBandCount = 12;

struct Quartiles {
  std::array<double, 3> least{}, greatest{};
  std::array<double, 3> low{}, high{};  // the middle half
};

struct FlowBand {
  Quartiles f;  // the formation factors, of the reference's sub-volumes
  // The Poiseuille permeabilities, of the level's reference's sub-volumes of the same physical
  // size: a pilot's end is measured on its level's grid, against the reference coarsened as
  // much, which its annealing fitted. Refined onto a finer grid, a coarse structure's widths
  // are its grid's, which the finer level's annealing then narrows to the finer reference's
  // (alike for every draw; docs/realism.md has the figures), so a pilot's k is not judged
  // where F is. None where fewer than two of those sub-volumes hold both phases: F alone.
  std::optional<Quartiles> k;
  Shape subvolume, level_subvolume;
  // Of two phases (one of a phase alone is skipped, as compare refuses it): F's, k's.
  int subvolumes = 0, level_subvolumes = 0;
};

// Each axis's least, greatest and quartiles of `values` (NaN skipped); nullopt where an axis
// has fewer than two. A quartile beside a sub-volume whose pore does not cross (F infinite, k
// 0) is that value: a crossing is not interpolated with its absence.
std::optional<Quartiles> quartiles(std::array<std::vector<double>, 3> values) {
  Quartiles q;
  for (std::size_t a = 0; a < 3; ++a) {
    std::vector<double>& v = values[a];
    v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
    if (v.size() < 2) return std::nullopt;
    std::sort(v.begin(), v.end());  // +infinity (no crossing) last
    auto quantile = [&](double at_share) {
      const double at = at_share * double(v.size() - 1);
      const std::size_t i = std::size_t(at);
      const double t = at - double(i);
      if (t == 0 || i + 1 >= v.size() || std::isinf(v[i]) || v[i] == 0) return v[i];
      return std::isinf(v[i + 1]) ? v[i + 1] : v[i] + t * (v[i + 1] - v[i]);
    };
    q.least[a] = v.front();
    q.greatest[a] = v.back();
    q.low[a] = quantile(0.25);
    q.high[a] = quantile(0.75);
  }
  return q;
}

// `level_reference`: the reference of the level the start is for (the reference itself on a
// run of one level).
std::optional<FlowBand> flow_band(Session& run, const anneal::Config& loop, const Mask& reference,
                                  const Mask& level_reference) {
  FlowBand band;
  band.subvolume = domain_in_reference_voxels(loop, reference);
  band.level_subvolume = domain_in_reference_voxels(loop, level_reference);
  for (int a = 0; a < 3; ++a)
    if (band.subvolume.extent(a) > reference.shape().extent(a) || band.subvolume.extent(a) <= 1 ||
        band.level_subvolume.extent(a) > level_reference.shape().extent(a) || band.level_subvolume.extent(a) <= 1)
      return std::nullopt;
  if (band.subvolume == reference.shape()) return std::nullopt;  // one sub-volume: the reference
  const uint64_t seed = mix64(loop.seed ^ 0x46454e56u);  // a lane of its own: not compare's corners
  // The corners are drawn on each image's own grid: on a run of one level both sets are the
  // same sub-volumes; with coarser levels two sets alike in law, not cut from one place.
  auto measured = [&](const Mask& image, const Shape& subvolume, auto&& measure) {
    std::array<std::vector<double>, 3> values;
    int parts = 0;
    for (const Shape& corner : subvolume_corners(image.shape(), subvolume, kBandCount, seed)) {
      stop_if_signalled();
      const Mask part = crop(image, corner, subvolume);
      if (const int64_t pore = count_phase(part); pore == 0 || pore == part.voxels()) continue;  // compare refuses
      ++parts;
      const std::array<double, 3> v = measure(part, "a reference sub-volume (" + to_string(subvolume) + ")");
      for (std::size_t a = 0; a < 3; ++a) values[a].push_back(v[a]);
    }
    return std::make_pair(parts, values);
  };
  auto [parts_f, f] = measured(reference, band.subvolume, [&](const Mask& m, const std::string& what) {
    return formation_factors(m, run.backend, what);
  });
  band.subvolumes = parts_f;
  if (parts_f < 2) return std::nullopt;
  std::optional<Quartiles> qf = quartiles(std::move(f));
  if (!qf) return std::nullopt;
  band.f = *qf;
  auto [parts_k, k] = measured(level_reference, band.level_subvolume, [&](const Mask& m, const std::string& what) {
    return poiseuille_permeabilities(m, run.backend, what);
  });
  band.level_subvolumes = parts_k;
  if (parts_k >= 2) band.k = quartiles(std::move(k));
  return band;
}

// How far `v` lies outside the middle half: the largest log ratio past its low or high end
// over the axes (0 inside it along every axis). A flow that crosses nowhere (F infinite, k 0)
// is infinitely far unless the middle half's end does not cross either.
double band_distance(const std::array<double, 3>& v, const Quartiles& q) {
  double worst = 0;
  for (std::size_t a = 0; a < 3; ++a) {
    if (std::isnan(v[a])) continue;
    if (std::isinf(v[a]) || v[a] == 0) {
      const double end = std::isinf(v[a]) ? q.high[a] : q.low[a];
      if (end != v[a]) return std::numeric_limits<double>::infinity();
      continue;
    }
    if (v[a] > q.high[a]) worst = std::max(worst, std::log(v[a] / q.high[a]));
    if (v[a] < q.low[a]) worst = std::max(worst, std::log(q.low[a] / v[a]));
  }
  return worst;
}

// A pilot's end against the band: the farther of its F and its Poiseuille permeability (F
// alone where the band holds no k).
double band_distance(const std::array<double, 3>& f, const std::array<double, 3>& k, const FlowBand& band) {
  return std::max(band_distance(f, band.f), band.k ? band_distance(k, *band.k) : 0.0);
}

std::string band_text(const std::array<double, 3>& low, const std::array<double, 3>& high) {
  char text[160];
  std::snprintf(text, sizeof text, "%.4g-%.4g / %.4g-%.4g / %.4g-%.4g", low[0], high[0], low[1], high[1], low[2],
                high[2]);
  return text;
}

// initial.draws > 1: loop.initial (draw 1, built by build_start) and draws 2, 3, … of the same
// sizes from seeds mixed from the run's, connected with the clusters of `level_reference` (the
// reference of the level the start is for; null: descriptor-file targets). A draw's F is
// carried as the pilots say the run will move it (draw_carry; a piloted draw's own end, for
// the others the pilots' carries' geometric mean). The first pilot starts from the draw
// nearest the reference's F (`reference`, on its own grid) as drawn (flow_mismatch). Where
// the reference holds sub-volumes of the domain's size (flow_band), a draw is kept only when
// its own pilot ends inside their middle half along every axis, for F and for the Poiseuille
// permeability (paths of one F can be wider or narrower: the permeability is judged too), and
// one draw's F carry stands for another's to a few per cent, about the width of that half.
// The next piloted is the draw carried nearest F's half (k is known only after a pilot; then
// nearest the reference's F); while none not yet piloted is carried inside it, more are drawn
// (up to kDrawBatches × initial.draws). After kPilots pilots, or a quarter of `level_seconds`
// (what the level has left of annealing.max_seconds; 0: none) spent on them, the piloted draw
// least outside is kept. Without sub-volumes, the draw carried nearest the reference's F is
// kept. Returns the seconds the pilots took.
constexpr int kPilots = 4;
constexpr int kDrawBatches = 4;

double choose_start_draw(Session& run, anneal::Config& loop, const Mask* level_reference, const Mask* reference,
                         const OntoDomain& onto_domain, double level_seconds, bool quiet) {
  const int batch = run.rc.initial_draws;
  if (batch <= 1 || !loop.initial) return 0;
  if (!quiet)
    std::fprintf(run.text_stream(), "drawing %d starts (more if none is carried where the reference's sub-volumes "
                                    "lie), pilots of the annealing from the likeliest, the first that ends there kept\n",
                 batch);
  const std::optional<std::array<double, 3>> target = reference_formation_factors(run, reference);
  if (!target) {
    run.note("draws     the targets hold no formation factors (a descriptor file without `describe --measures`): "
             "the run's own draw kept");
    return 0;
  }
  run.note("draws     the reference's formation factors: " + factors_text(*target));
  std::optional<FlowBand> band;
  if (reference) band = flow_band(run, loop, *reference, level_reference ? *level_reference : *reference);
  if (band) {
    const std::string k_text =
        band->k ? "; Poiseuille permeabilities of " + std::to_string(band->level_subvolumes) +
                      " on the level's grid (" + to_string(band->level_subvolume) +
                      "): " + band_text(band->k->least, band->k->greatest) + ", their middle half " +
                      band_text(band->k->low, band->k->high)
                : "; no Poiseuille permeabilities (fewer than two of the level's sub-volumes of two phases): F alone";
    run.note("draws     its " + std::to_string(band->subvolumes) + " sub-volumes of the domain's size (" +
             to_string(band->subvolume) + "): formation factors " + band_text(band->f.least, band->f.greatest) +
             ", their middle half " + band_text(band->f.low, band->f.high) + k_text);
  }
  stop_if_signalled();
  const std::optional<anneal::ClusterSample> clusters = cluster_sample(run, loop, level_reference, true);
  const anneal::ClusterSample* cl = clusters ? &*clusters : nullptr;
  // Draw 1 is build_start's (its size search's own structure) and kept; any other is made
  // again from its seed when piloted or kept, and checked against the draw measured.
  const Mask first = *loop.initial;
  std::vector<std::array<double, 3>> drawn_f;
  std::vector<anneal::BlobCandidate> reports;  // make_start fills them for draws 2, 3, …
  std::vector<uint64_t> keys;
  std::vector<std::optional<std::array<double, 3>>> own;  // a piloted draw's F on the domain's grid
  std::vector<std::array<double, 3>> own_k;                // its Poiseuille permeability on the level's grid
  std::vector<std::array<double, 3>> carries;
  auto draw_batch = [&] {
    const int from = int(drawn_f.size()), to = from + batch;
    for (int k = from; k < to; ++k) {
      stop_if_signalled();
      anneal::BlobCandidate report;
      std::optional<Mask> drawn;
      if (k > 0) drawn = make_start(run, loop, cl, draw_seed(loop.seed, k), &report);
      const Mask& m = drawn ? *drawn : first;
      bool converged = true;
      const std::array<double, 3> f =
          formation_factors(m, run.backend, "start drawn (" + to_string(loop.shape) + ")", &converged);
      drawn_f.push_back(f);
      reports.push_back(report);
      keys.push_back(Fnv1a().add(m.values()).value());
      own.emplace_back();
      own_k.emplace_back();
      char line[220];
      std::snprintf(line, sizeof line, "draw      %d of %d: formation factors %s, largest log ratio %.5f%s", k + 1,
                    to, factors_text(f).c_str(), flow_mismatch(f, *target),
                    converged ? "" : " (a solve stopped short of its tolerance: F estimated)");
      run.note(line);
    }
  };
  auto start_of = [&](int k) {
    if (k == 0) return first;
    Mask m = make_start(run, loop, cl, draw_seed(loop.seed, k), &reports[std::size_t(k)]);
    if (Fnv1a().add(m.values()).value() != keys[std::size_t(k)])
      throw RuntimeError("initial.draws: draw " + std::to_string(k + 1) +
                         " made again from its seed is not the start that was measured");
    return m;
  };
  // What the run is expected to make of draw k on the domain's grid.
  auto carried = [&](int k) {
    if (own[std::size_t(k)]) return *own[std::size_t(k)];
    std::array<double, 3> f = drawn_f[std::size_t(k)];
    for (std::size_t a = 0; a < 3; ++a) {
      double log_sum = 0;
      for (const auto& c : carries) log_sum += std::log(c[a]);
      f[a] *= std::exp(log_sum / double(carries.size()));
    }
    return f;
  };
  // A piloted draw's end against the band (its F and its Poiseuille permeability).
  auto piloted_distance = [&](int k) {
    return band_distance(*own[std::size_t(k)], own_k[std::size_t(k)], *band);
  };
  double pilot_seconds = 0;
  std::optional<std::pair<int, Mask>> last_piloted;  // the kept draw is most often the last piloted
  auto pilot = [&](int k) {
    const double left = level_seconds > 0 ? std::max(1e-9, level_seconds - pilot_seconds) : 0.0;
    last_piloted.reset();
    Mask start = start_of(k);
    const PilotEnd end = draw_carry(run, loop, start, drawn_f[std::size_t(k)], onto_domain, left, quiet, &pilot_seconds, k,
                                    band && band->k);
    last_piloted.emplace(k, std::move(start));
    carries.push_back(end.carry);
    own[std::size_t(k)] = end.domain_f;
    own_k[std::size_t(k)] = end.level_k;
    if (!band) return false;
    const double out = piloted_distance(k);
    char line[240];
    if (out == 0)
      std::snprintf(line, sizeof line, "pilot     draw %d ends inside the sub-volumes' middle half", k + 1);
    else if (band->k)
      std::snprintf(line, sizeof line,
                    "pilot     draw %d ends outside the sub-volumes' middle half (log ratio %.5f past it: formation "
                    "factors %.5f, Poiseuille permeabilities %.5f)",
                    k + 1, out, band_distance(end.domain_f, band->f), band_distance(end.level_k, *band->k));
    else
      std::snprintf(line, sizeof line, "pilot     draw %d ends outside the sub-volumes' middle half (log ratio "
                                       "%.5f past it)", k + 1, out);
    run.note(line);
    return out == 0;
  };

  draw_batch();
  int nearest = 0;
  for (int k = 1; k < batch; ++k)
    if (flow_mismatch(drawn_f[std::size_t(k)], *target) < flow_mismatch(drawn_f[std::size_t(nearest)], *target))
      nearest = k;
  int kept = pilot(nearest) ? nearest : -1;
  if (!band) {  // nothing to check a pilot's end against: the draw carried nearest the reference's F
    for (int k = 0; k < int(drawn_f.size()); ++k)
      if (kept < 0 || flow_mismatch(carried(k), *target) < flow_mismatch(carried(kept), *target)) kept = k;
  }
  while (kept < 0) {
    int next = -1;  // not yet piloted: carried nearest the middle half, then nearest the reference's F
    std::pair<double, double> next_rank;
    for (int k = 0; k < int(drawn_f.size()); ++k) {
      if (own[std::size_t(k)]) continue;
      const std::array<double, 3> f = carried(k);
      const std::pair<double, double> rank{band_distance(f, band->f), flow_mismatch(f, *target)};
      if (next < 0 || rank < next_rank) {
        next = k;
        next_rank = rank;
      }
    }
    if ((next < 0 || next_rank.first > 0) && int(drawn_f.size()) < kDrawBatches * batch) {
      draw_batch();
      continue;
    }
    if (next < 0 || int(carries.size()) >= kPilots || (level_seconds > 0 && pilot_seconds >= level_seconds / 4)) break;
    if (pilot(next)) kept = next;
  }
  if (kept < 0) {  // no pilot ended inside the middle half: the piloted draw least outside it
    for (int k = 0; k < int(drawn_f.size()); ++k)
      if (own[std::size_t(k)] && (kept < 0 || piloted_distance(k) < piloted_distance(kept)))
        kept = k;
  }
  loop.initial = last_piloted && last_piloted->first == kept ? std::move(last_piloted->second) : start_of(kept);
  if (kept > 0) run.blob_start = reports[std::size_t(kept)];
  char line[480];
  std::snprintf(line, sizeof line,
                "draws     %d of %d kept: formation factors %s, carried %s%s, against the reference's %s (largest log "
                "ratio %.5f; draw %d nearest as drawn, %d piloted)%s",
                kept + 1, int(drawn_f.size()), factors_text(drawn_f[std::size_t(kept)]).c_str(),
                factors_text(carried(kept)).c_str(), own[std::size_t(kept)] ? " by its own pilot" : "",
                factors_text(*target).c_str(), flow_mismatch(carried(kept), *target), nearest + 1,
                int(carries.size()),
                band && own[std::size_t(kept)] && piloted_distance(kept) > 0 ? "; none inside the sub-volumes' middle half"
                                                                               : "");
  run.note(line);
  return pilot_seconds;
}

// A finer level's start: the coarser level's structure refined onto `loop`'s grid
// (anneal::refine_field), cut at the target's pore count, and connected as the reference's
// clusters are on this grid — clusters too small to show on the coarser grid placed here.
// `report`: say what was placed in the run's log (not for a pilot's structure).
Mask refine_start(Session& run, const anneal::Config& loop, const Mask& coarser, const Mask& reference, bool quiet,
                  bool report = true) {
  // The field, its smoothing scratch, lowest_values' sorted copy, the start and its labels.
  require_memory({"refining the coarser level onto " + to_string(loop.shape), 24.0 * double(loop.shape.voxels()), 0});
  const std::vector<float> field = anneal::refine_field(coarser, loop.shape, loop.boundary == Boundary::periodic);
  const int64_t pore_voxels = std::llround(loop.targets.porosity * double(loop.shape.voxels()));
  Mask start = lowest_values(field, loop.shape, pore_voxels);
  start.set_spacing(loop.spacing);
  const std::optional<anneal::ClusterSample> clusters = cluster_sample(run, loop, &reference, quiet);
  if (!clusters) return start;
  anneal::ConnectedStart cs;
  Mask connected = anneal::connect_largest_cluster(start, field, *clusters, loop.seed, run.backend, &cs);
  connected.set_spacing(loop.spacing);
  if (!report) return connected;
  char line[160];
  std::snprintf(line, sizeof line, "refined   onto %s: largest pore cluster %.4f -> %.4f of the pore (reference %.4f), ",
                to_string(loop.shape).c_str(), cs.largest_share_before, cs.largest_share_after, clusters->largest_share);
  run.note(line + placed_clusters(cs, *clusters));
  return connected;
}

// annealing.levels: auto. A coarser level can hand the domain's grid only what survives being
// coarsened, and grain packs whose pores and throats are a few voxels across do not survive
// it: their chords change most (on a generated pack of spheres seven voxels in radius, the
// coarse level left every solid chord distribution outside the real range, where one level
// kept them inside). So the reference itself goes through the levels' round trip — a crop of
// the domain's shape coarsened 2x as a coarser level's targets are, refined back as a finer
// level's start is — and its chord lengths (anneal::chords_l1, both phases along x, y, z) are
// set beside those of the start this grid can build on its own (the grains or blobs chosen by
// the targets): two levels where the round trip is nearer, else one. The start is built in a
// box of the domain's shape clipped to kLevelsTrialExtent a side, so that a large domain's
// choice costs no search of grain sizes at its own size (a domain that fits keeps the start),
// and the round trip in the reference's window of that box (smaller where the reference is).
// Chord lengths are counted in voxels: on a grid other than the reference's the two cannot be
// compared, and the run keeps the two levels the config had before `auto`.
constexpr int64_t kLevelsTrialExtent = 128;  // holds a granular rock's chords many times over

void choose_levels(Session& run, anneal::Config& loop, const Mask& reference, bool quiet) {
  run.rc.levels_auto = false;
  if (!(loop.spacing == reference.spacing())) {
    run.rc.levels = 2;
    run.note("levels    auto: the domain's grid is not the reference's, where chord lengths compare: 2 levels");
    return;
  }
  const RunConfig before = run.rc;  // the start's choices are kept only where it is the run's
  anneal::Config trial = loop;
  Shape sub = reference.shape(), corner{0, 0, 0};
  for (int a = 0; a < 3; ++a) {
    const int64_t extent = std::min(loop.shape.extent(a), kLevelsTrialExtent);
    (a == 0 ? trial.shape.nx : a == 1 ? trial.shape.ny : trial.shape.nz) = extent;
    const int64_t n = std::min(reference.shape().extent(a), extent);
    (a == 0 ? sub.nx : a == 1 ? sub.ny : sub.nz) = n;
    (a == 0 ? corner.nx : a == 1 ? corner.ny : corner.nz) = (reference.shape().extent(a) - n) / 2;
  }
  const Mask window = crop(reference, corner, sub);
  // The field, its smoothing scratch, lowest_values' sorted copy and the round trip.
  require_memory({"coarsening the reference's " + to_string(sub) + " and refining it back", 24.0 * double(sub.voxels()), 0});
  const Mask coarse = anneal::coarsen(window, 2);
  // The window is cut from the reference: its faces do not wrap, whatever the domain's do.
  Mask round_trip = lowest_values(anneal::refine_field(coarse, sub, false), sub, count_phase(window));
  round_trip.set_spacing(window.spacing());
  const double kept = anneal::chords_l1(round_trip, loop.targets);
  stop_if_signalled();
  build_start(run, trial, &reference, quiet);
  const double own = anneal::chords_l1(*trial.initial, trial.targets);
  const bool coarser = kept < own;
  const bool same_box = trial.shape == loop.shape;
  char line[320];
  std::snprintf(line, sizeof line,
                "levels    auto: the reference coarsened 2x and refined back keeps its chord lengths to L1 %.4f, "
                "the %s start on this grid to %.4f%s: %s",
                kept, run.rc.initial.c_str(), own, same_box ? "" : (" (both " + to_string(trial.shape) + ")").c_str(),
                coarser ? "2 levels" : same_box ? "1 level, from that start" : "1 level");
  run.note(line);
  // loop is run.rc.loop: restored, it has no start, and the coarsest level or the domain's box
  // chooses its own.
  if (coarser || !same_box) run.rc = before;
  else loop.initial = std::move(trial.initial);
  run.rc.levels = coarser ? 2 : 1;
}

// Level j (> 0) of annealing.levels: the domain's box on a grid 2^j times coarser, against
// `level_reference` (the reference coarsened 2^j times), with an even share of the evaluations.
anneal::Config level_config(const Session& run, const anneal::Config& loop, const Mask& level_reference, int j) {
  const int factor = 1 << j;
  anneal::Config lc = loop;
  for (int a = 0; a < 3; ++a) {
    const int64_t n = loop.shape.extent(a);
    (a == 0 ? lc.shape.nx : a == 1 ? lc.shape.ny : lc.shape.nz) = n > 1 ? n / factor : 1;
    (a == 0 ? lc.spacing.x : a == 1 ? lc.spacing.y : lc.spacing.z) = loop.spacing.along(a) * (n > 1 ? factor : 1);
  }
  lc.targets = anneal::Targets::from_image(level_reference, parse_boundary(run.rc.target_boundary), run.rc.bins,
                                           run.rc.log_bins, run.backend);
  if (!(lc.targets.spacing == lc.spacing)) lc.targets = lc.targets.at_spacing(lc.spacing);
  lc.stopping.max_evaluations = std::max<int64_t>(1, loop.stopping.max_evaluations / run.rc.levels);
  return lc;
}

// annealing.levels: the coarser levels, coarsest first, each its own annealing of the same box
// on a grid 2^j times coarser against the reference coarsened as much, the coarsest started
// as `initial` says and each other from the one before; the finest level's start goes into
// `loop.initial`. They keep no checkpoint (they are the finest level's start, minutes at most),
// so a signal ends the run before anything is written (Interrupted).
void run_coarse_levels(Session& run, anneal::Config& loop, const Mask& reference, bool quiet) {
  const int levels = run.rc.levels;
  const auto began = std::chrono::steady_clock::now();
  auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  auto number_left = [](int j) { return j + 1; };  // level j and the finer ones, the domain's included
  std::optional<Mask> previous;
  for (int j = levels - 1; j >= 1; --j) {
    stop_if_signalled();
    const Mask level_reference = anneal::coarsen(reference, 1 << j);
    anneal::Config lc = level_config(run, loop, level_reference, j);
    stop_if_signalled();
    const int number = levels - j;
    char line[320];
    std::snprintf(line, sizeof line, "level     %d of %d: %s at spacing %s, the reference coarsened %dx (porosity %.4f)",
                  number, levels, to_string(lc.shape).c_str(), spacing_text(lc.spacing).c_str(), 1 << j,
                  lc.targets.porosity);
    run.note(line);
    // This level's share of the time: an even part of what is left for it and the finer
    // levels, its start (a search of grain sizes can take a while) counted.
    const auto level_began = std::chrono::steady_clock::now();
    const double budget =
        run.rc.max_seconds > 0 ? std::max(0.0, run.rc.max_seconds - since(began)) / double(number_left(j)) : 0;
    if (previous) lc.initial = refine_start(run, lc, *previous, level_reference, quiet);
    else if (run.rc.initial == "blobs" || run.rc.initial == "grains") {
      build_start(run, lc, &level_reference, quiet);
      // The draws' pilots refine their ends through the finer levels, as the run will.
      const OntoDomain onto_domain = [&, j](const Mask& coarse) {
        Mask m = coarse;
        for (int i = j - 1; i >= 0; --i) {
          stop_if_signalled();
          if (i == 0) {
            m = refine_start(run, loop, m, reference, true, false);
          } else {
            const Mask finer_reference = anneal::coarsen(reference, 1 << i);
            m = refine_start(run, level_config(run, loop, finer_reference, i), m, finer_reference, true, false);
          }
        }
        return m;
      };
      const double left = budget > 0 ? std::max(1e-9, budget - since(level_began)) : 0.0;
      choose_start_draw(run, lc, &level_reference, &reference, onto_domain, left, quiet);
    }
    anneal::Annealer a(lc);
    auto shown = level_began;
    while (a.progress().stopped == anneal::StopReason::none) {
      a.advance(steps_at_once(a));
      if (budget > 0 && a.progress().stopped == anneal::StopReason::none && since(level_began) >= budget)
        a.stop(anneal::StopReason::time_limit);
      stop_if_signalled();  // the coarser levels keep no checkpoint
      if (!quiet && since(shown) >= 5.0) {
        const anneal::Progress& p = a.progress();
        std::fprintf(run.text_stream(), "  level %d: %lld evaluations  E %.5f  %.0f eval/s\n", number,
                     static_cast<long long>(p.evaluations), p.energy.total, double(p.evaluations) / since(level_began));
        std::fflush(run.text_stream());
        shown = std::chrono::steady_clock::now();
      }
    }
    const anneal::Progress& p = a.progress();
    std::snprintf(line, sizeof line, "level     %d of %d: %s after %lld evaluations in %.1f s, energy %.5f", number, levels,
                  to_string(p.stopped).c_str(), static_cast<long long>(p.evaluations), since(level_began),
                  p.energy.total);
    run.note(line);
    previous = a.structure();
    run.coarse_levels.push_back(*previous);
  }
  char line[160];
  std::snprintf(line, sizeof line, "level     %d of %d: %s at spacing %s", levels, levels, to_string(loop.shape).c_str(),
                spacing_text(loop.spacing).c_str());
  run.note(line);
  loop.initial = refine_start(run, loop, *previous, reference, quiet);
  // max_seconds bounds the whole run: the finest level has what the coarser ones left.
  if (run.rc.max_seconds > 0) run.loop_seconds = std::max(1.0, run.rc.max_seconds - since(began));
}

// start_run once its signals are set: the start, the coarser levels, the folder, the loop.
int run_from_config(const RunOptions& o, const std::string& command_line, std::string* folder_out) {
  std::vector<std::string> sets = o.sets;
  if (!o.backend.empty()) sets.push_back("backend=" + o.backend);
  if (!o.output.empty()) sets.push_back("output.directory=" + o.output);
  if (o.max_seconds >= 0) sets.push_back("annealing.max_seconds=" + std::to_string(o.max_seconds));
  Session run;
  run.rc = o.config_text.empty() ? load_run_config(o.config, sets)
                                 : parse_run_config(o.config_text, o.config.empty() ? "the configuration" : o.config, sets);
  anneal::Config& loop = run.rc.loop;
  run.quiet = o.quiet;
  run.progress = o.progress;
  run.command_line = command_line;
  // The start (and any coarser levels) takes minutes: they must not end at a folder that was
  // there all along. claim_folder checks again, and what --force may replace, once they are done.
  if (const fs::path folder = fs::path(run.rc.output_directory) / run.rc.name; !o.force) {
    std::error_code ec;
    if (fs::exists(fs::symlink_status(folder, ec)))
      throw InputError("run folder '" + folder.string() + "' already exists (use --force to replace it)");
  }
  run.backend = run_backend(run.rc.backend, loop, &run.host_loop_reason);
  loop.backend = run.backend;
  require_memory(run_memory(loop.shape, loop.spacing, loop.boundary, run.backend));
  // Targets first: a bad reference fails before anything is written.
  std::optional<Mask> reference;  // kept for the clusters of a connected start
  if (!run.rc.target_image.empty()) {
    ReadOptions ro;
    ro.format = run.rc.target_format;
    ro.dataset = run.rc.target_dataset;
    ro.shape = run.rc.target_shape;
    ro.dtype = parse_dtype(run.rc.target_dtype);
    ro.before_read = [&](const Shape& shape, DType t, const Spacing& spacing) {  // the target's descriptors
      require_memory(thickness_memory(shape, dtype_size(t), spacing, parse_boundary(run.rc.target_boundary),
                                      run.backend, true));
    };
    reference = phase_mask(read_image(run.rc.target_image, ro), run.rc.target_phase);
    stop_if_signalled();
    loop.targets = anneal::Targets::from_image(*reference, parse_boundary(run.rc.target_boundary), run.rc.bins,
                                               run.rc.log_bins, run.backend);
  } else {
    loop.targets = anneal::Targets::from_descriptor_file(run.rc.target_descriptors);
  }
  stop_if_signalled();
  if (!run.rc.spacing_given) {  // the reference's voxel size unless the domain names its own
    loop.spacing = loop.targets.spacing;
    run.rc.spacing_given = true;
  }
  if (!o.quiet) std::fprintf(run.text_stream(), "resolved configuration:\n%s\n", run.rc.to_yaml().c_str());
  // A grid finer or coarser than the reference: the PSDs compare in physical units, the
  // target S2 is resampled at this grid's lags (the checkpoint keeps the resampled one).
  if (!(loop.targets.spacing == loop.spacing)) {
    const Spacing from = loop.targets.spacing;
    loop.targets = loop.targets.at_spacing(loop.spacing);
    if (!o.quiet)
      std::fprintf(run.text_stream(), "target S2 resampled from the reference's spacing %s to the domain's %s\n",
                   spacing_text(from).c_str(), spacing_text(loop.spacing).c_str());
  }
  // Blobs and grains are seeded from the run's seed (the other draws from seeds mixed from
  // it), with exactly the target's pore count. `auto` measures a range of sizes against the
  // targets and keeps the nearest; the resolved config written with the run then names the
  // size chosen, so it makes the same start again (planting, if asked, is a function of the
  // same seed and targets).
  if (run.rc.levels_auto) choose_levels(run, loop, *reference, o.quiet);
  if (run.rc.levels > 1) {
    run_coarse_levels(run, loop, *reference, o.quiet);
  } else if (run.rc.initial == "blobs" || run.rc.initial == "grains") {
    if (!loop.initial) build_start(run, loop, reference ? &*reference : nullptr, o.quiet);  // else choose_levels' trial's
    const OntoDomain as_is = [](const Mask& m) { return m; };
    const double pilot = choose_start_draw(run, loop, reference ? &*reference : nullptr,
                                           reference ? &*reference : nullptr, as_is, run.rc.max_seconds, o.quiet);
    // max_seconds bounds the annealing, the pilots' included (as the coarser levels' are).
    if (run.rc.max_seconds > 0 && pilot > 0) run.loop_seconds = std::max(1.0, run.rc.max_seconds - pilot);
  }
  // A structure from a file (a coarser run's final.h5: multi-scale reconstruction), resampled
  // onto this grid and cut at the target's pore count.
  std::string file_start;
  if (run.rc.initial == "file") {
    ReadOptions ro;
    ro.dataset = run.rc.initial_dataset;
    const LabelImage image = read_image(run.rc.initial_file, ro);
    const Mask given = phase_mask(image, run.rc.initial_phase);
    const int64_t pore_voxels = std::llround(loop.targets.porosity * double(loop.shape.voxels()));
    loop.initial = anneal::resample_start(given, loop.shape, loop.spacing, pore_voxels);
    const double given_porosity = double(count_phase(given)) / double(given.voxels());
    char line[512];
    std::snprintf(line, sizeof line, "initial   %s (%s, spacing %s, porosity %.4f)%s, porosity %.4f",
                  run.rc.initial_file.c_str(), to_string(given.shape()).c_str(), spacing_text(given.spacing()).c_str(),
                  given_porosity,
                  given.shape() == loop.shape ? "" : (" resampled to " + to_string(loop.shape)).c_str(),
                  loop.targets.porosity);
    file_start = line;
    if (run.rc.initial_plant_large_pores) {
      if (!o.quiet) std::fprintf(run.text_stream(), "planting balls for the large-pore bins the structure lacks:\n");
      const anneal::RefinedStart refined = anneal::plant_into_structure(
          *loop.initial, loop.targets, loop.boundary, loop.seed, run.backend,
          [&](const anneal::RefinedStart& r) {
            if (o.quiet) return;
            const anneal::PlantedBall& b = r.balls.back();
            std::fprintf(run.text_stream(), "  ball of radius %.4g at (%lld, %lld, %lld), %lld voxels inside: pore-PSD L1 %.4f\n",
                         b.radius, static_cast<long long>(b.centre[0]), static_cast<long long>(b.centre[1]),
                         static_cast<long long>(b.centre[2]), static_cast<long long>(b.inside), r.pore_psd_l1_after);
          });
      loop.initial = refined.structure;
      std::snprintf(line, sizeof line,
                    "\nplanted   %zu balls for the large-pore bins (%lld voxels made pore, as many of the thinnest given "
                    "up; %d candidates tried): pore-PSD L1 %.4f -> %.4f",
                    refined.balls.size(), static_cast<long long>(refined.planted_voxels), refined.candidates_tried,
                    refined.pore_psd_l1_before, refined.pore_psd_l1_after);
      file_start += line;
    }
    // Resampling maps box onto box: say so when the two boxes differ in physical size.
    for (int a = 0; a < 3; ++a) {
      const double size = double(given.shape().extent(a)) * given.spacing().along(a);
      const double domain = double(loop.shape.extent(a)) * loop.spacing.along(a);
      if (std::abs(size - domain) > 0.01 * domain) {
        std::snprintf(line, sizeof line,
                      "\nnote      along %c the file's box is %g long, the domain's %g: resampled box onto box, "
                      "so stretched", "xyz"[a], size, domain);
        file_start += line;
        break;
      }
    }
  }
  anneal::Annealer annealer(loop);  // validates before the run directory exists
  stop_if_signalled();

  OwnedFolder folder = claim_folder(run.rc.output_directory, run.rc.name, "name", kRunMarker, "run", o.force);
  run.dir = fs::path(run.rc.output_directory) / run.rc.name;
  if (folder_out) *folder_out = run.dir.string();
  run.lock = std::move(folder.lock);
  write_text(run.dir / "config.yaml", run.rc.to_yaml());  // with a chosen blob size, if any
  run.log.open(run.dir / "run.log");
  for (const std::string& line : run.early_lines) run.log << line << "\n";
  // Each coarser level's result beside the run's, for a look at what the finer ones began from.
  for (std::size_t k = 0; k < run.coarse_levels.size(); ++k) {
    const Mask& level = run.coarse_levels[k];
    fs::create_directories(run.dir / "levels");
    const std::string file = "level-" + std::to_string(k + 1) + ".h5";
    OutputFile out((run.dir / "levels" / file).string(), true);
    out.write_volume("/volume", level);
    out.set_attribute("level", double(k + 1));
    out.set_attribute("levels", double(run.rc.levels));
    out.set_attribute("labels", std::string("1 = pore, 0 = solid"));
    out.set_provenance(command_line);
    out.commit();
    run.say("wrote     levels/" + file + " (" + to_string(level.shape()) + ", level " + std::to_string(k + 1) + " of " +
            std::to_string(run.rc.levels) + ")");
  }
  run.say("target    " + (run.rc.target_image.empty() ? run.rc.target_descriptors : run.rc.target_image));
  run.say("backend   " + backend_description(run.backend) +
          (annealer.device_loop() ? ", the loop on the device" : ", the loop on the host") +
          (run.host_loop_reason.empty() ? "" : " (auto: " + run.host_loop_reason + ")"));
  if (!file_start.empty()) run.say(file_start);
  if (run.blob_start) {
    const anneal::BlobCandidate& b = *run.blob_start;
    char line[256];
    char size[128];
    if (b.radius > 0)
      std::snprintf(size, sizeof size, "grains, radius %.3g voxels (spread %.2g, stretched %.3g / %.3g / %.3g)",
                    b.radius, b.radius_spread, b.stretch[0], b.stretch[1], b.stretch[2]);
    else std::snprintf(size, sizeof size, "blobs, blobiness %.4g (sigma %.3g voxels)", b.blobiness, b.sigma);
    int n = std::snprintf(line, sizeof line, "initial   %s%s%s: pore-PSD L1 %.4f", size,
                          run.blob_size_searched ? " chosen by the targets" : "",
                          run.rc.levels > 1 ? " at the coarsest level" : "", b.blobs_psd_l1);
    if (b.planted_balls)
      std::snprintf(line + n, sizeof line - std::size_t(n), "; %d large pores planted (%lld voxels): L1 %.4f",
                    b.planted_balls, static_cast<long long>(b.planted_voxels), b.pore_psd_l1);
    run.say(line);
  }
  char start_line[128];
  std::snprintf(start_line, sizeof start_line, "start     T0 %.4g, energy %.5f, porosity %.4f",
                annealer.progress().temperature, annealer.progress().energy.total, loop.targets.porosity);
  run.say(start_line);
  if (run.lock.taken_over())
    run.say("lock      taken over from process " + std::to_string(run.lock.taken_over()) + ", no longer running");
  return run.drive(annealer);
}

}  // namespace

int start_run(const RunOptions& o, const std::string& command_line, std::string* folder_out) {
  if (std::isnan(o.max_seconds)) throw InputError("--max-seconds must be a number of seconds, 0 or more (got nan)");
  const RunSignals signals;
  try {
    return run_from_config(o, command_line, folder_out);
  } catch (const Interrupted& stop) {
    if (!o.quiet)
      std::fprintf(o.progress == "json" ? stderr : stdout,
                   "interrupted by signal %d before the run folder was made: nothing was written\n", stop.signal);
    return 128 + stop.signal;
  }
}

int resume_run(const ResumeOptions& o, const std::string& command_line) {
  if (std::isnan(o.max_seconds)) throw InputError("--max-seconds must be a number of seconds, 0 or more (got nan)");
  const RunSignals signals;
  Checkpoint ck = read_checkpoint(o.checkpoint);
  Session run;
  std::vector<std::string> sets;
  if (o.max_evaluations) sets.push_back("annealing.max_evaluations=" + std::to_string(o.max_evaluations));
  if (o.max_seconds >= 0) sets.push_back("annealing.max_seconds=" + std::to_string(o.max_seconds));
  // A stored config without moves.keep_pore_connected ran with free moves: today's default
  // must not change its chain. One with `host_loop: true` ran the same chain as the device
  // loop does (the key is no longer a setting).
  if (ck.config_yaml.find("keep_pore_connected:") == std::string::npos)
    sets.insert(sets.begin(), "moves.keep_pore_connected=false");
  sets.insert(sets.begin(), "annealing.host_loop=false");
  run.rc = parse_run_config(ck.config_yaml, o.checkpoint + " (stored config)", sets);
  const int64_t at = ck.snapshot.progress.evaluations;
  // A run that met its budget or a stop rule before its outputs were written (killed
  // between its last checkpoint and its results): a plain resume finishes the outputs.
  anneal::StopReason finished = ck.snapshot.progress.stopped;
  if (finished == anneal::StopReason::time_limit) finished = anneal::StopReason::none;  // counted afresh
  if (at >= run.rc.loop.stopping.max_evaluations) finished = anneal::StopReason::max_evaluations;
  if (o.max_evaluations) {
    if (o.max_evaluations <= at)
      throw InputError("the checkpoint is at " + std::to_string(at) + " evaluations already; give a larger --max-evals");
    finished = anneal::StopReason::none;  // a new budget lets it go on
  }
  run.quiet = o.quiet;
  run.progress = o.progress;
  run.command_line = command_line;
  run.backend = run_backend(run.rc.backend, run.rc.loop, &run.host_loop_reason);
  run.rc.loop.backend = run.backend;
  run.rc.loop.targets = ck.targets;
  if (ck.schema < 4 && run.rc.loop.weights.surface > 0)
    throw InputError("'" + o.checkpoint + "' was written by a poreforge whose surface term counted voxel faces; this " +
                     "one measures the interface's marching-cubes area, so the run cannot go on: start it again");
  if (ck.schema < 9 && run.rc.loop.weights.local_porosity > 0)
    throw InputError("'" + o.checkpoint + "' was written by a poreforge whose local porosity term counted other " +
                     "neighbourhoods; this one counts every voxel's 3x3x3 cell and its 3x3 and 5x5 squares, so the " +
                     "run cannot go on: start it again");
  run.history = ck.history;
  run.run_start = ck.run_start;
  anneal::Annealer annealer(run.rc.loop, std::move(ck.snapshot));
  if (finished != anneal::StopReason::none) annealer.stop(finished);
  const fs::path parent = fs::absolute(o.checkpoint).parent_path();
  run.dir = parent.filename() == "checkpoints" ? parent.parent_path() : parent;
  // A resume writes its outputs beside the checkpoint: only into a folder poreforge made.
  if (!fs::is_regular_file(run.dir / kRunMarker))
    throw InputError("'" + run.dir.string() + "' is not a poreforge run folder (no " + kRunMarker +
                     " inside): resume a checkpoint from its run's checkpoints/ folder");
  run.lock = FolderLock(run.dir, "run");
  const auto stale = remove_stale_temporaries(run.dir);
  write_text(run.dir / "config.yaml", run.rc.to_yaml());
  run.log.open(run.dir / "run.log", std::ios::app);
  run.say("resumed   " + o.checkpoint + " at " + std::to_string(at) + " evaluations" +
          (finished != anneal::StopReason::none ? " (stopped: " + to_string(finished) + "), writing the outputs" : ""));
  if (run.lock.taken_over())
    run.say("lock      taken over from process " + std::to_string(run.lock.taken_over()) + ", no longer running");
  for (const auto& p : stale) run.say("removed   " + p.string() + ", left by an interrupted write");
  return run.drive(annealer);
}

// The device loop evaluates the whole structure each step; the CPU's local evaluation only the
// region a swap reaches, which follows the pores' width, not the volume, and outruns it on the
// GPU machine's own cores (results/bench/anneal_host.txt, docs/local-evaluation.md).
// Anisotropic voxels leave the CPU evaluating from scratch: the GPU keeps those.
std::string auto_host_loop_reason(const anneal::Config& loop) {
  if (loop.weights.openings > 0) return "the openings term is counted by the CPU's evaluation only";
  if (loop.spacing.isotropic())
    return "the CPU's local evaluation outruns the GPU's loop, which evaluates the whole structure";
  return "";
}

}  // namespace poreforge::app
