// poreforge compare RECON --reference REF: is a reconstruction rock? Its realism measures
// against the natural envelope of real sub-volumes of the reference (DESIGN §1).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <memory>
#include <sstream>

#include "commands.hpp"
#include "options.hpp"
#include "progress.hpp"
#include "poreforge/backend.hpp"
#include "poreforge/durable_file.hpp"
#include "poreforge/edt.hpp"
#include "poreforge/error.hpp"
#include "poreforge/io.hpp"
#include "poreforge/memory.hpp"
#include "poreforge/realism.hpp"

namespace poreforge::app {
namespace {

// JSON numbers; the non-finite ones (a formation factor where nothing spans) as strings,
// which JSON lacks numbers for.
std::string json_number(double v) {
  if (std::isnan(v)) return "\"nan\"";
  if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

template <class T, class F>
std::string json_array(const std::vector<T>& v, F&& each) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + each(v[i]);
  return out + "]";
}

std::string json_numbers(const std::vector<double>& v) { return json_array(v, json_number); }

// A measure's value for the table: 4 significant digits, "inf" where nothing spans.
std::string cell(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

}  // namespace

Runner add_compare_command(CLI::App& app, const std::string& command_line) {
  struct Options {
    InputOptions recon, reference;
    RealismCliOptions realism;
    std::string output, backend = "auto";
    double phase = 1;
    std::optional<double> reference_phase;
    int subvolumes = 12, bins = 20, jobs = 0;
    int64_t seed = 1;
    bool force = false;
  };
  auto o = std::make_shared<Options>();
  o->reference.prefix = "reference-";
  CLI::App* cmd = app.add_subcommand(
      "compare", "A reconstruction's realism measures against real sub-volumes of a reference image");
  o->recon.add_to(cmd, "reconstruction", "The structure to judge: HDF5, raw (with --shape) or TIFF stack");
  o->reference.add_to(cmd, "reference", "The real image it is judged against (same formats, --reference-… options)");
  cmd->add_option("--subvolumes", o->subvolumes, "Real sub-volumes of the reconstruction's shape (default 12)")
      ->check(CLI::Range(2, 10000));
  cmd->add_option("--seed", o->seed, "Seed of the sub-volumes' corners (default 1)");
  cmd->add_option("-o,--output", o->output, "JSON report (scripts/plot_compare.py draws it)");
  cmd->add_option("--phase", o->phase, "Pore label of the reconstruction (default 1)");
  cmd->add_option("--reference-phase", o->reference_phase, "Pore label of the reference (default: --phase)");
  cmd->add_option("--bins", o->bins, "Pore-PSD bins shared by every volume (default 20)")->check(CLI::Range(1, 10000));
  o->realism.add_to(cmd);
  cmd->add_option("--backend", o->backend, "Engine backend: auto, cpu, cuda")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd->add_option("--jobs", o->jobs,
                  "Volumes measured at once (default: up to 4 on CUDA as memory allows, 1 on the CPU)")
      ->check(CLI::Range(1, 64));
  cmd->add_flag("--force", o->force, "Replace an existing report");

  return [o, command_line] {
    const auto started = std::chrono::steady_clock::now();
    const Backend backend = resolve_backend(parse_backend(o->backend), Operation::local_thickness);
    if (o->seed < 0) throw InputError("--seed must be a non-negative integer (got " + std::to_string(o->seed) + ")");
    if (!o->output.empty()) {  // refused before any work: an existing report, a folder that takes none
      if (std::filesystem::is_directory(o->output))
        throw InputError("report '" + o->output + "' is a directory: give a file name");
      if (std::filesystem::exists(o->output) && !o->force)
        throw InputError("report '" + o->output + "' already exists (use --force to replace it)");
      require_writable_folder(o->output);
    }
    o->realism.check();
    // Each image and its mask, refused before it is read when they would not fit.
    auto reading = [](const std::string& which) {
      return [which](const Shape& shape, std::size_t bytes, const Spacing&) {
        MemoryEstimate e;
        e.what = "compare: reading the " + which + " (" + to_string(shape) + ")";
        e.host_bytes = double(shape.voxels()) * (double(bytes) + 1);
        return e;
      };
    };
    // Where the time goes: reading, planning, then each profile stage summed over the volumes.
    std::vector<std::pair<std::string, double>> stage_seconds;
    auto clock = std::chrono::steady_clock::now();
    auto add_stage = [&stage_seconds](const std::string& name, double s) {
      for (auto& [n, total] : stage_seconds)
        if (n == name) return void(total += s);
      stage_seconds.emplace_back(name, s);
    };
    auto lap = [&](const std::string& name) {
      const auto now = std::chrono::steady_clock::now();
      add_stage(name, std::chrono::duration<double>(now - clock).count());
      clock = now;
    };
    const LabelImage recon_image = o->recon.read(reading("reconstruction"));
    const LabelImage ref_image = o->reference.read(reading("reference"));
    Mask recon = binary_phase(recon_image, o->phase, "the reconstruction '" + o->recon.path + "'");
    const Mask reference =
        binary_phase(ref_image, o->reference_phase.value_or(o->phase), "the reference '" + o->reference.path + "'");
    const Shape shape = recon.shape();
    // Sub-volumes are cut voxel for voxel, so both images must share a voxel size. A
    // reconstruction whose file holds none (unit spacing) and no --spacing takes the
    // reference's; one at another voxel size is refused.
    const bool recon_has_spacing = !o->recon.spacing.empty() || !(recon.spacing() == Spacing{});
    if (recon_has_spacing && !(recon.spacing() == reference.spacing()))
      throw InputError("the reconstruction's voxels (spacing " + to_string(recon.spacing()) +
                       ") are not the reference's (" + to_string(reference.spacing()) +
                       "): compare cuts sub-volumes voxel for voxel; reconstruct at the reference's spacing, or "
                       "give --spacing / --reference-spacing if a file's is wrong");
    const Spacing spacing = reference.spacing();
    recon.set_spacing(spacing);
    const std::string unit = o->realism.unit(ref_image);

    o->realism.require_cubic_voxels(backend, spacing);
    // The natural envelope: sub-volumes of the reconstruction's shape, or the reference alone
    // when it has that shape (then nothing is judged: one real volume has no range).
    lap("reading");
    const EnvelopePlan plan = plan_envelope(recon, reference, o->subvolumes, uint64_t(o->seed), o->bins, backend);
    lap("planning");
    const bool same_size = plan.whole_reference;
    const std::vector<Shape>& corners = plan.corners;
    const std::vector<Mask>& real = plan.real;
    RealismOptions options = o->realism.realism_options(backend, unit);
    options.psd_bins = plan.psd_bins;
    const MemoryEstimate estimate =
        compare_memory(shape, spacing, plan.largest_pore_fraction, options.permeability, backend);
    require_memory(estimate);

    std::fprintf(stderr, "compare   %s (%s, spacing %s%s%s) against %s of %s (%s), backend %s%s\n",
                 o->recon.path.c_str(), to_string(shape).c_str(),
                 (cell(spacing.x) + "," + cell(spacing.y) + "," + cell(spacing.z)).c_str(),
                 unit.empty() ? "" : (" " + unit).c_str(), recon_has_spacing ? "" : ", the reference's: its file has none",
                 same_size ? "the whole" : (std::to_string(real.size()) + " sub-volumes").c_str(),
                 o->reference.path.c_str(), to_string(reference.shape()).c_str(), to_string(backend).c_str(),
                 options.permeability ? ", with permeability" : "");
    std::vector<RealismProfile> profiles;
    RealismProfile candidate;
    int jobs = 1;
    {
      std::vector<const Mask*> volumes{&recon};
      for (const Mask& m : real) volumes.push_back(&m);
      jobs = o->jobs > 0 ? o->jobs : realism_jobs(backend, estimate, volumes.size());
      ProgressBar bar("measuring", volumes.size());  // half a minute or more with permeability on the CPU
      profiles = realism_profiles(volumes, options, jobs, [&](std::size_t k) {
        bar.step(k == 0 ? std::string("measured  the reconstruction")
                        : "measured  real volume " + std::to_string(k) + " of " + std::to_string(real.size()));
      });
      candidate = std::move(profiles.front());
      profiles.erase(profiles.begin());
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    for (const auto& [name, s] : candidate.seconds) add_stage(name, s);
    for (const RealismProfile& p : profiles)
      for (const auto& [name, s] : p.seconds) add_stage(name, s);
    {
      // With several jobs the stages overlap: their sums exceed the wall time.
      std::string line = "time      " + cell(seconds) + " s, " + std::to_string(jobs) +
                         (jobs == 1 ? " volume" : " volumes") + " at a time; stages summed over the volumes:";
      for (std::size_t i = 0; i < stage_seconds.size(); ++i)
        line += (i ? ", " : " ") + stage_seconds[i].first + " " + cell(stage_seconds[i].second);
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    // Each volume's warnings, named: on the terminal and in the report.
    std::vector<std::string> warnings;
    for (const std::string& w : candidate.warnings) warnings.push_back("the reconstruction: " + w);
    for (std::size_t k = 0; k < profiles.size(); ++k)
      for (const std::string& w : profiles[k].warnings)
        warnings.push_back("real volume " + std::to_string(k + 1) + ": " + w);
    for (const std::string& w : warnings) std::fprintf(stderr, "poreforge: warning: %s\n", w.c_str());

    std::ostringstream j;  // the JSON report, built beside the table
    j << "{\n  \"reconstruction\": " << json_string(o->recon.path) << ",\n  \"reference\": "
      << json_string(o->reference.path) << ",\n  \"shape\": [" << shape.nx << ", " << shape.ny << ", " << shape.nz
      << "],\n  \"spacing\": [" << json_number(spacing.x) << ", " << json_number(spacing.y) << ", "
      << json_number(spacing.z) << "],\n  \"length_unit\": " << json_string(unit) << ",\n  \"reference_shape\": ["
      << reference.shape().nx << ", " << reference.shape().ny << ", " << reference.shape().nz
      << "],\n  \"seed\": " << o->seed << ",\n  \"subvolume_corners\": "
      << json_array(corners, [](const Shape& c) {
           return "[" + std::to_string(c.nx) + ", " + std::to_string(c.ny) + ", " + std::to_string(c.nz) + "]";
         })
      << ",\n  \"backend\": " << json_string(to_string(backend)) << ",\n  \"device\": "
      << json_string(backend_description(backend))
      << ",\n  \"permeability\": " << (options.permeability ? "true" : "false")
      << ",\n  \"permeability_tolerance\": " << json_number(options.permeability_tolerance)
      << ",\n  \"seconds\": " << json_number(seconds) << ",\n  \"jobs\": " << jobs
      << ",\n  \"seconds_by_stage\": {"
      << [&] {
           std::string out;
           for (std::size_t i = 0; i < stage_seconds.size(); ++i)
             out += (i ? ", " : "") + json_string(stage_seconds[i].first) + ": " + json_number(stage_seconds[i].second);
           return out;
         }()
      << "},\n  \"warnings\": " << json_array(warnings, json_string)
      << ",\n  \"judged\": " << (same_size ? "false" : "true");

    if (same_size) {
      // One real volume: the two side by side, nothing judged.
      const RealismProfile& ref = profiles.front();
      std::printf("%-26s %-10s %12s %12s\n", "measure", "unit", "recon", "reference");
      for (std::size_t m = 0; m < candidate.scalars.size(); ++m)
        std::printf("%-26s %-10s %12s %12s\n", candidate.scalars[m].name.c_str(), candidate.scalars[m].unit.c_str(),
                    cell(candidate.scalars[m].value).c_str(), cell(ref.scalars[m].value).c_str());
      std::printf("\nthe reference has the reconstruction's shape: compared with it alone, nothing judged (a "
                  "larger reference gives sub-volumes, whose range is the judge)\n");
      j << ",\n  \"scalars\": [";
      for (std::size_t m = 0; m < candidate.scalars.size(); ++m)
        j << (m ? "," : "") << "\n    {\"name\": " << json_string(candidate.scalars[m].name)
          << ", \"unit\": " << json_string(candidate.scalars[m].unit)
          << ", \"value\": " << json_number(candidate.scalars[m].value)
          << ", \"real\": [" << json_number(ref.scalars[m].value) << "]}";
      j << "\n  ],\n  \"curves\": []";
    } else {
      const EnvelopeComparison cmp = compare_with_envelope(candidate, profiles);
      std::printf("%-26s %-10s %10s %10s %10s %10s %10s %8s  %s\n", "measure", "unit", "recon", "real mean", "sd",
                  "min", "max", "z", "inside");
      for (const ScalarComparison& c : cmp.scalars)
        std::printf("%-26s %-10s %10s %10s %10s %10s %10s %8s  %s\n", c.name.c_str(), c.unit.c_str(),
                    cell(c.value).c_str(), cell(c.mean).c_str(), cell(c.sd).c_str(), cell(c.min).c_str(),
                    cell(c.max).c_str(), cell(c.z).c_str(), c.inside ? "yes" : "NO");
      std::printf("\n%-26s %-8s %10s   %-23s  %s\n", "curve", "distance", "recon", "real, leave one out", "inside");
      for (const CurveComparison& c : cmp.curves) {
        const auto [lo, hi] = std::minmax_element(c.real_distances.begin(), c.real_distances.end());
        std::printf("%-26s %-8s %10s   %10s to %-9s  %s\n", c.name.c_str(),
                    c.distance_kind == CurveMeasure::Distance::l1 ? "L1" : "RMS", cell(c.distance).c_str(),
                    cell(*lo).c_str(), cell(*hi).c_str(), c.inside ? "yes" : "NO");
      }
      const auto [fewest, most] = std::minmax_element(cmp.real_outside.begin(), cmp.real_outside.end());
      std::printf("\noutside the real range on %d of %d measures; a real sub-volume is on %s (the median; each "
                  "against the other %zu: %d to %d)\n",
                  cmp.outside, cmp.measures, cell(cmp.typical_real_outside).c_str(), real.size() - 1, *fewest, *most);
      j << ",\n  \"scalars\": [";
      for (std::size_t i = 0; i < cmp.scalars.size(); ++i) {
        const ScalarComparison& c = cmp.scalars[i];
        j << (i ? "," : "") << "\n    {\"name\": " << json_string(c.name) << ", \"unit\": " << json_string(c.unit)
          << ", \"value\": " << json_number(c.value) << ", \"real_mean\": " << json_number(c.mean)
          << ", \"real_sd\": " << json_number(c.sd) << ", \"real_min\": " << json_number(c.min)
          << ", \"real_max\": " << json_number(c.max) << ", \"z\": " << json_number(c.z)
          << ", \"inside\": " << (c.inside ? "true" : "false") << ", \"real\": " << json_numbers(c.real) << "}";
      }
      j << "\n  ],\n  \"curves\": [";
      for (std::size_t i = 0; i < cmp.curves.size(); ++i) {
        const CurveComparison& c = cmp.curves[i];
        j << (i ? "," : "") << "\n    {\"name\": " << json_string(c.name) << ", \"x_unit\": " << json_string(c.x_unit)
          << ", \"distance_kind\": \"" << (c.distance_kind == CurveMeasure::Distance::l1 ? "L1" : "RMS")
          << "\", \"distance\": " << json_number(c.distance)
          << ", \"real_distances\": " << json_numbers(c.real_distances)
          << ", \"inside\": " << (c.inside ? "true" : "false") << ",\n     \"x\": " << json_numbers(c.x)
          << ",\n     \"value\": " << json_numbers(c.value) << ",\n     \"real_mean\": " << json_numbers(c.mean)
          << ",\n     \"real_min\": " << json_numbers(c.min) << ",\n     \"real_max\": " << json_numbers(c.max) << "}";
      }
      j << "\n  ],\n  \"outside\": " << cmp.outside << ",\n  \"measures\": " << cmp.measures
        << ",\n  \"real_outside\": " << json_array(cmp.real_outside, [](int v) { return std::to_string(v); })
        << ",\n  \"typical_real_outside\": " << json_number(cmp.typical_real_outside);
    }
    j << ",\n  \"version\": " << json_string(version_string()) << ",\n  \"command_line\": "
      << json_string(command_line) << "\n}\n";
    if (!o->output.empty()) {
      write_text_file(o->output, j.str());
      std::printf("wrote     %s\n", o->output.c_str());
    }
    return 0;
  };
}

}  // namespace poreforge::app
