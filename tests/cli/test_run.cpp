// YAML run configurations (every error class names the key and its line) and `poreforge run`
// end to end: the run directory's files, ParaView's sidecar, refusal to overwrite.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <algorithm>
#include <array>
#include <chrono>
#include <fstream>
#include <functional>
#include <tuple>
#include <sstream>

#include "poreforge/annealer/annealer.hpp"
#include "poreforge/error.hpp"
#include "poreforge/generators.hpp"
#include "poreforge/io.hpp"
#include "checkpoint.hpp"
#include "run_config.hpp"
#include "run_folder.hpp"
#include "run_session.hpp"
#include "run_signals.hpp"
#include "support/hdf5_edit.hpp"
#include "support/random.hpp"

using namespace poreforge;
using poreforge::app::caught_signal;
using poreforge::app::parse_run_config;
using poreforge::app::RunSignals;
namespace fs = std::filesystem;

namespace {

const char* minimal = "target:\n  descriptors: d.h5\n";

void refused(const std::string& yaml, const std::string& fragment, std::vector<std::string> sets = {}) {
  CAPTURE(yaml);
  CHECK_THROWS_WITH_AS(parse_run_config(yaml, "run.yaml", sets), doctest::Contains(fragment.c_str()), InputError);
}

int shell(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A generated blobs reference (dir/ref.h5) and its descriptor file with 6 bins (dir/desc.h5);
// `generate_options` e.g. "--shape 20,20,20 --porosity 0.4 --seed 9".
void described_reference(const fs::path& dir, const std::string& generate_options) {
  const std::string cli = POREFORGE_CLI;
  REQUIRE(shell(cli + " generate blobs " + generate_options + " -o " + (dir / "ref.h5").string() + " > /dev/null") == 0);
  REQUIRE(shell(cli + " describe " + (dir / "ref.h5").string() + " -o " + (dir / "desc.h5").string() +
                " --bins 6 --backend cpu > /dev/null") == 0);
}

}  // namespace

TEST_CASE("config.defaults_and_overrides") {
  const auto c = parse_run_config(minimal, "run.yaml",
                                  {"annealing.alpha=0.97", "domain.shape=[32, 16, 8]", "annealing.host_loop=false"});
  CHECK(c.loop.schedule.alpha == 0.97);
  CHECK(c.loop.shape == Shape{32, 16, 8});
  CHECK(c.loop.boundary == Boundary::periodic);
  CHECK(c.loop.stopping.max_evaluations == 200000);
  CHECK(c.initial == "noise");
  // The resolved config parses back to the same values.
  const auto again = parse_run_config(c.to_yaml(), "resolved.yaml");
  CHECK(again.loop.schedule.alpha == 0.97);
  CHECK(again.loop.shape == c.loop.shape);
  CHECK(again.target_descriptors == "d.h5");
  CHECK(again.to_yaml().find("host_loop") == std::string::npos);
  const auto automatic = parse_run_config(minimal, "run.yaml", {"initial.structure=blobs", "initial.blobiness=auto"});
  CHECK(automatic.initial_blobiness_auto);
  CHECK(parse_run_config(automatic.to_yaml(), "resolved.yaml").initial_blobiness_auto);
  CHECK_FALSE(automatic.initial_plant_large_pores);
  const auto planted =
      parse_run_config(minimal, "run.yaml", {"initial.structure=blobs", "initial.plant_large_pores=true"});
  CHECK(planted.initial_plant_large_pores);
  CHECK(parse_run_config(planted.to_yaml(), "resolved.yaml").initial_plant_large_pores);
  // Grains stretched as the reference's chords say unless three factors are given.
  const auto grains = parse_run_config(minimal, "run.yaml", {"initial.structure=grains"});
  CHECK(grains.initial_grain_stretch_auto);
  CHECK(parse_run_config(grains.to_yaml(), "resolved.yaml").initial_grain_stretch_auto);
  const auto stretched =
      parse_run_config(minimal, "run.yaml", {"initial.structure=grains", "initial.grain_stretch=[1.2, 1, 0.8]"});
  CHECK_FALSE(stretched.initial_grain_stretch_auto);
  CHECK(stretched.initial_grain_stretch == std::array<double, 3>{1.2, 1.0, 0.8});
  const auto again_stretched = parse_run_config(stretched.to_yaml(), "resolved.yaml");
  CHECK_FALSE(again_stretched.initial_grain_stretch_auto);
  CHECK(again_stretched.initial_grain_stretch == stretched.initial_grain_stretch);
  // One start unless more draws are asked for; the resolved config names them.
  CHECK(grains.initial_draws == 1);
  const auto drawn = parse_run_config(minimal, "run.yaml", {"initial.structure=grains", "initial.draws=6"});
  CHECK(drawn.initial_draws == 6);
  CHECK(parse_run_config(drawn.to_yaml(), "resolved.yaml").initial_draws == 6);
}

TEST_CASE("config.committed_examples_parse") {
  // Every configuration under configs/ is one a user may run as it stands.
  int parsed = 0;
  for (const auto& entry : fs::directory_iterator(POREFORGE_CONFIGS)) {
    if (entry.path().extension() != ".yaml") continue;
    CAPTURE(entry.path().string());
    CHECK_NOTHROW(app::load_run_config(entry.path().string()));
    ++parsed;
  }
  CHECK(parsed >= 5);
}

TEST_CASE("config.errors_name_key_and_line") {
  refused(std::string(minimal) + "annealing:\n  alpah: 0.9\n", "run.yaml:4: annealing.alpah is not a known key");
  refused(std::string(minimal) + "annealing:\n  alpha: 1.5\n", "run.yaml:4: annealing.alpha must lie in (0, 1)");
  refused(std::string(minimal) + "annealing:\n  stage_length: fast\n", "annealing.stage_length must be an integer");
  refused(std::string(minimal) + "domain:\n  shape: [0, 4, 4]\n", "domain.shape extents must lie in 1");
  refused(std::string(minimal) + "domain:\n  boundary: mirror\n", "must be one of open, wall, periodic");
  refused(std::string(minimal) + "descriptors:\n  weights:\n    s2: -1\n", "run.yaml:5: descriptors.weights.s2 must lie in");
  refused("domain:\n  shape: [8, 8, 8]\n", "needs exactly one of target.image and target.descriptors");
  refused("target:\n  image: a.raw\n  descriptors: d.h5\n", "needs exactly one");
  refused(std::string(minimal) + "seed: -3\n", "seed must be a non-negative integer");
  refused(minimal, "moves.bias is not a known key", {"moves.bias=2"});
  refused("target: [1, 2]\n", "target must be a mapping");
  refused("target:\n  descriptors: [d.h5\n", "not valid YAML");
  refused(std::string(minimal) + "initial:\n  structure: spheres\n", "initial.structure must be one of noise, blobs");
  refused(std::string(minimal) + "initial:\n  blobiness: 0\n", "initial.blobiness must lie in (0");
  refused(std::string(minimal) + "initial:\n  draws: 0\n", "run.yaml:4: initial.draws must lie in [1, 64] (got 0)");
  refused(std::string(minimal) + "initial:\n  draws: 65\n", "initial.draws must lie in [1, 64] (got 65)");
  refused(std::string(minimal) + "initial:\n  draws: many\n", "initial.draws must be a whole number");
  refused(std::string(minimal) + "annealing:\n  host_loop: sometimes\n", "annealing.host_loop must be true or false");
  refused(std::string(minimal) + "annealing:\n  host_loop: true\n", "annealing.host_loop is not a setting");
  refused(std::string(minimal) + "initial:\n  blobiness: large\n", "initial.blobiness must be a number or auto");
  refused(std::string(minimal) + "initial:\n  grain_stretch: [1, 1]\n", "initial.grain_stretch must be auto or [SX, SY, SZ]");
  refused(std::string(minimal) + "initial:\n  grain_stretch: long\n", "initial.grain_stretch must be auto or [SX, SY, SZ]");
  refused(std::string(minimal) + "initial:\n  grain_stretch: [1, 20, 1]\n", "initial.grain_stretch must lie in [0.1, 10]");
  refused(std::string(minimal) + "initial:\n  plant_large_pores: true\n",
          "initial.plant_large_pores plants into a blobs or file start (initial.structure: blobs or file)");
  refused(std::string(minimal) + "initial:\n  structure: blobs\n  plant_large_pores: 3\n",
          "initial.plant_large_pores must be true or false");
  refused(std::string(minimal) + "annealing:\n  max_seconds: -1\n", "run.yaml:4: annealing.max_seconds must lie in [0");
  refused(std::string(minimal) + "initial:\n  structure: file\n", "initial structure: file needs initial.file");
  refused(std::string(minimal) + "initial:\n  file: a.h5\n", "initial.file is read for initial.structure: file");
  refused(std::string(minimal) + "annealing:\n  levels: 2\n",
          "run.yaml:4: annealing.levels = 2 needs target.image: the coarser levels' targets come from the reference");
  const std::string image = "target:\n  image: a.h5\n";
  refused(image + "domain:\n  shape: [64, 64, 30]\nannealing:\n  levels: 4\n",
          "annealing.levels = 4 halves the domain 3 times: each extent of domain.shape must be at least 32 (got 30 "
          "along z)");
  CHECK(parse_run_config(image + "domain:\n  shape: [66, 65, 33]\nannealing:\n  levels: 3\n", "run.yaml", {}).levels == 3);
  refused(image + "domain:\n  shape: [8, 8, 8]\nannealing:\n  levels: 3\n", "at least 16 (got 8 along x)");
  refused(image, "annealing.levels = 3 halves", {"annealing.levels=3", "domain.shape=[16,16,12]"});
  refused(image + "annealing:\n  levels: 7\n", "annealing.levels must lie in [1, 6]");
  refused(image + "annealing:\n  levels: 2\ninitial:\n  structure: file\n  file: b.h5\n",
          "annealing.levels = 2 builds its own coarse-to-fine chain");
  CHECK(parse_run_config(image + "domain:\n  shape: [16, 16, 1]\nannealing:\n  levels: 3\n", "run.yaml", {}).levels == 3);
  // levels: auto weighs two levels against the domain grid's own grains or blobs.
  const std::string grains = image + "initial:\n  structure: grains\n";
  const app::RunConfig chosen = parse_run_config(grains + "domain:\n  shape: [32, 32, 32]\nannealing:\n  levels: auto\n",
                                            "run.yaml", {});
  CHECK(chosen.levels_auto);
  CHECK(chosen.to_yaml().find("levels: auto") != std::string::npos);
  const app::RunConfig small = parse_run_config(grains + "domain:\n  shape: [32, 6, 32]\nannealing:\n  levels: auto\n",
                                           "run.yaml", {});  // too small to coarsen: one level
  CHECK_FALSE(small.levels_auto);
  CHECK(small.levels == 1);
  refused(image + "annealing:\n  levels: many\n", "annealing.levels must be a whole number or auto");
  refused(std::string(minimal) + "initial:\n  structure: grains\nannealing:\n  levels: auto\n",
          "annealing.levels = auto needs target.image");
  refused(image + "annealing:\n  levels: auto\n", "annealing.levels = auto weighs a coarser level against the grains or "
                                                   "blobs chosen on the domain's grid: initial.structure must be grains or blobs");
}

TEST_CASE("config.repeated_keys_and_whole_documents") {
  // yaml-cpp keeps both entries of a repeated key and reads the first: refused with both lines.
  refused("target:\n  descriptors: d.h5\nseed: 1\nseed: 2\n", "run.yaml:4: seed appears twice (lines 3 and 4)");
  refused("target:\n  descriptors: d.h5\n  descriptors: e.h5\n", "target.descriptors appears twice");
  refused("just a sentence\n", "the document must be a mapping of keys");
  refused("- 1\n- 2\n", "not a list", {"seed=3"});
  refused(minimal, "seed must be a non-negative integer (got '-1')", {"seed=-1"});
  refused(minimal, "domain.spacing must lie in [1e-30", {"domain.spacing=[1e-320, 1, 1]"});
}

// annealing.verify_every: the running energy is recounted every K evaluations (a mismatch
// stops the run with an error), and the check leaves the chain as it was.
// `backend: auto` hands the loop to the CPU's local evaluation for cubic voxels (the device loop
// evaluates the whole structure) and whenever the openings term is weighted (only the CPU's
// evaluation counts it); anisotropic voxels, which the CPU evaluates from scratch, keep the GPU.
TEST_CASE("cli.run.auto_host_loop_reason") {
  const Spacing cubic{5.345, 5.345, 5.345};
  const auto reason = [](const Shape& shape, const Spacing& spacing, double openings = 0) {
    anneal::Config c;
    c.shape = shape;
    c.spacing = spacing;
    c.weights.openings = openings;
    return app::auto_host_loop_reason(c);
  };
  for (const Shape& s : {Shape{64, 64, 64}, Shape{128, 128, 128}, Shape{256, 256, 256}, Shape{4096, 4096, 1}}) {
    CAPTURE(to_string(s));
    CHECK(reason(s, cubic).find("outruns") != std::string::npos);
    CHECK(reason(s, Spacing{1, 1, 2}).empty());
    CHECK(reason(s, Spacing{1, 1, 2}, 1.0).find("openings") != std::string::npos);
    CHECK(reason(s, cubic, 1.0).find("openings") != std::string::npos);
  }
}

TEST_CASE("cli.run.verify_every") {
  const fs::path dir = fs::temp_directory_path() / ("poreforge-verify-" + std::to_string(testing::fresh_seed()));
  fs::create_directories(dir);
  const std::string cli = POREFORGE_CLI;
  described_reference(dir, "--shape 24,24,24 --porosity 0.35 --seed 4");
  std::ofstream(dir / "v.yaml") << "name: v\nbackend: cpu\ntarget:\n  descriptors: desc.h5\n"
                                   "domain:\n  shape: [16, 16, 16]\nannealing:\n  trial_moves: 20\n"
                                   "  max_evaluations: 400\n  stage_length: 50\noutput:\n  report_every: 100\n";
  const std::string run = cli + " run " + (dir / "v.yaml").string() + " --quiet";
  REQUIRE(shell(run + " --output " + (dir / "plain").string() + " > /dev/null") == 0);
  REQUIRE(shell(run + " --output " + (dir / "checked").string() + " --set annealing.verify_every=150 > /dev/null") == 0);
  const std::string log = slurp(dir / "checked" / "v" / "run.log");
  CHECK(log.find("verified  150 evaluations: the running energy equals a recount") != std::string::npos);
  CHECK(log.find("verified  300 evaluations") != std::string::npos);
  CHECK(read_hdf5((dir / "checked" / "v" / "final.h5").string(), "/volume").bytes ==
        read_hdf5((dir / "plain" / "v" / "final.h5").string(), "/volume").bytes);
  CHECK(slurp(dir / "checked" / "v" / "config.yaml").find("verify_every: 150") != std::string::npos);
  fs::remove_all(dir);
}

// annealing.levels: the same box on a grid twice as coarse first, its targets from the
// reference coarsened, then the domain's grid from it refined; the coarse result kept beside.
TEST_CASE("cli.run.levels") {
  const fs::path dir = fs::temp_directory_path() / ("poreforge-levels-" + std::to_string(testing::fresh_seed()));
  fs::create_directories(dir);
  const std::string cli = POREFORGE_CLI;
  REQUIRE(shell(cli + " generate blobs --shape 32,32,32 --porosity 0.3 --seed 4 -o " + (dir / "ref.h5").string() +
                " > /dev/null") == 0);
  std::ofstream(dir / "lv.yaml") << "name: lv\nbackend: cpu\ntarget:\n  image: ref.h5\ndomain:\n  shape: [16, 16, 16]\n"
                                    "annealing:\n  levels: 2\n  max_evaluations: 400\n  stage_length: 50\n"
                                    "initial:\n  structure: grains\noutput:\n  report_every: 100\n";
  const std::string run = cli + " run " + (dir / "lv.yaml").string() + " --output " + (dir / "results").string();
  REQUIRE(shell(run + " > " + (dir / "out.txt").string()) == 0);
  const fs::path rd = dir / "results" / "lv";
  const std::string log = slurp(rd / "run.log");
  CHECK(log.find("level     1 of 2: 8x8x8 at spacing 2,2,2, the reference coarsened 2x") != std::string::npos);
  CHECK(log.find("level     1 of 2: max_evaluations after 200 evaluations") != std::string::npos);
  CHECK(log.find("refined   onto 16x16x16: largest pore cluster") != std::string::npos);
  CHECK(log.find("at the coarsest level") != std::string::npos);
  const LabelImage level = read_hdf5((rd / "levels" / "level-1.h5").string(), "/volume");
  CHECK(level.shape == Shape{8, 8, 8});
  CHECK(level.spacing == Spacing{2, 2, 2});
  CHECK(count_phase(phase_mask(level, 1)) == std::llround(0.3 * 512));
  const LabelImage final_volume = read_hdf5((rd / "final.h5").string(), "/volume");
  CHECK(final_volume.shape == Shape{16, 16, 16});
  CHECK(count_phase(phase_mask(final_volume, 1)) == std::llround(0.3 * 4096));
  CHECK(slurp(rd / "config.yaml").find("levels: 2") != std::string::npos);
  CHECK(slurp(rd / "config.yaml").find("grain_stretch: [") != std::string::npos);  // the stretch chosen, named
  // The resolved config makes the same run again.
  REQUIRE(shell(cli + " run " + (rd / "config.yaml").string() + " --output " + (dir / "again").string() +
                " --quiet > /dev/null") == 0);
  CHECK(read_hdf5((dir / "again" / "lv" / "final.h5").string(), "/volume").bytes == final_volume.bytes);
  // Odd extents: the coarser box rounds down, the refinement stretches it back onto the domain.
  REQUIRE(shell(run + " --set name=odd --set domain.shape=[17,16,15] --quiet > /dev/null") == 0);
  CHECK(read_hdf5((dir / "results" / "odd" / "levels" / "level-1.h5").string(), "/volume").shape == Shape{8, 8, 7});
  const LabelImage odd = read_hdf5((dir / "results" / "odd" / "final.h5").string(), "/volume");
  CHECK(odd.shape == Shape{17, 16, 15});
  CHECK(count_phase(phase_mask(odd, 1)) == std::llround(0.3 * 17 * 16 * 15));
  // An existing folder is refused before any level runs, and left as it was.
  const auto before = fs::last_write_time(rd / "final.h5");
  CHECK(shell(run + " > " + (dir / "again.txt").string() + " 2>&1") != 0);
  CHECK(slurp(dir / "again.txt").find("already exists (use --force to replace it)") != std::string::npos);
  CHECK(slurp(dir / "again.txt").find("level ") == std::string::npos);
  CHECK(fs::last_write_time(rd / "final.h5") == before);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// annealing.levels: auto keeps a coarser level where the reference survives the round trip of
// coarsening and refining, as Berea's grains and pores do at 32^3, and not where they are a few
// voxels across (a pack of spheres 1.5 voxels in radius). The resolved config names the levels
// chosen (and the single level's grains) and makes the same run again.
TEST_CASE("cli.run.levels_auto") {
  const fs::path dir = fs::temp_directory_path() / ("poreforge-levels-auto-" + std::to_string(testing::fresh_seed()));
  fs::create_directories(dir);
  const std::string cli = POREFORGE_CLI;
  REQUIRE(shell(cli + " generate spheres --shape 64,64,64 --porosity 0.3 --radius 1.5 --seed 4 -o " +
                (dir / "fine.h5").string() + " > /dev/null") == 0);
  const std::string body = "domain:\n  shape: [32, 32, 32]\nannealing:\n  levels: auto\n  max_evaluations: 400\n"
                           "  stage_length: 50\ninitial:\n  structure: grains\noutput:\n  report_every: 100\n";
  std::ofstream(dir / "berea.yaml") << "name: berea\nbackend: cpu\ntarget:\n  image: " POREFORGE_DATA_DIR
                                       "/berea_110.raw\n  shape: [110, 110, 110]\n  dtype: u8\n  phase: 0\n" + body;
  std::ofstream(dir / "fine.yaml") << "name: fine\nbackend: cpu\ntarget:\n  image: fine.h5\n" + body;
  for (const std::string name : {"berea", "fine"}) {
    CAPTURE(name);
    REQUIRE(shell(cli + " run " + (dir / (name + ".yaml")).string() + " --output " + (dir / "results").string() +
                  " --quiet > /dev/null") == 0);
    const fs::path rd = dir / "results" / name;
    const std::string log = slurp(rd / "run.log");
    const bool two = name == "berea";
    CHECK(log.find("levels    auto: the reference coarsened 2x and refined back keeps its chord lengths to L1 ") !=
          std::string::npos);
    CHECK(log.find(two ? ": 2 levels" : ": 1 level, from that start") != std::string::npos);
    CHECK(fs::exists(rd / "levels" / "level-1.h5") == two);
    const std::string resolved = slurp(rd / "config.yaml");
    CHECK(resolved.find(two ? "levels: 2" : "levels: 1") != std::string::npos);
    CHECK(resolved.find("grain_radius: auto") == std::string::npos);
    REQUIRE(shell(cli + " run " + (rd / "config.yaml").string() + " --output " + (dir / "again").string() +
                  " --quiet > /dev/null") == 0);
    CHECK(read_hdf5((dir / "again" / name / "final.h5").string(), "/volume").bytes ==
          read_hdf5((rd / "final.h5").string(), "/volume").bytes);
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// initial.draws: several grains starts of the same sizes, pilots of the run from them, and the
// first whose pilot ends inside the middle half of the reference's sub-volumes' F (on the
// domain's grid) and Poiseuille permeability (on the level's) kept — with one level and with a
// coarser level; without sub-volumes of the domain's size,
// the draw whose F carried by the one pilot lies nearest the reference's. What is printed must
// follow the rule, one draw must be the run's own start, and the resolved config must make the
// same start again.
TEST_CASE("cli.run.start_draws") {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  const fs::path dir = fs::temp_directory_path() / ("poreforge-draws-" + std::to_string(seed));
  fs::create_directories(dir);
  const std::string cli = POREFORGE_CLI;
  auto numbers = [](const std::string& text) {  // "a / b / c"
    std::array<double, 3> f{};
    CHECK(std::sscanf(text.c_str(), "%lf / %lf / %lf", &f[0], &f[1], &f[2]) == 3);
    return f;
  };
  for (const int levels : {1, 2}) {
    CAPTURE(levels);
    const std::string name = "d" + std::to_string(levels);
    std::ofstream(dir / (name + ".yaml"))
        << "name: " << name << "\nseed: " << seed % 1000000
        << "\nbackend: cpu\ntarget:\n  image: " POREFORGE_DATA_DIR "/berea_110.raw\n  shape: [110, 110, 110]\n"
           "  dtype: u8\n  phase: 0\ndomain:\n  shape: [32, 32, 32]\nannealing:\n  levels: "
        << levels << "\n  max_evaluations: 400\n  stage_length: 20\ninitial:\n  structure: grains\n"
                     "  grain_radius: 3\n  draws: 4\noutput:\n  report_every: 20\n";
    const std::string out = (dir / (name + ".txt")).string();
    REQUIRE(shell(cli + " run " + (dir / (name + ".yaml")).string() + " --output " + (dir / "results").string() +
                  " > " + out) == 0);
    const std::string text = slurp(out);
    const std::string said = "draws     the reference's formation factors: ";
    const std::size_t at = text.find(said);
    REQUIRE(at != std::string::npos);
    const std::array<double, 3> reference = numbers(text.substr(at + said.size()));
    // The range of F along each axis of the reference's sub-volumes of the domain's size, and
    // their middle half.
    const std::string range_said = " sub-volumes of the domain's size (32x32x32): formation factors ";
    const std::size_t r = text.find(range_said);
    REQUIRE(r != std::string::npos);
    std::array<double, 3> least{}, greatest{}, low{}, high{};
    REQUIRE(std::sscanf(text.c_str() + r + range_said.size(), "%lf-%lf / %lf-%lf / %lf-%lf", &least[0], &greatest[0],
                        &least[1], &greatest[1], &least[2], &greatest[2]) == 6);
    const std::string half_said = ", their middle half ";
    const std::size_t h = text.find(half_said, r);
    REQUIRE(h != std::string::npos);
    REQUIRE(std::sscanf(text.c_str() + h + half_said.size(), "%lf-%lf / %lf-%lf / %lf-%lf", &low[0], &high[0],
                        &low[1], &high[1], &low[2], &high[2]) == 6);
    // The same of their Poiseuille permeabilities, on the grid the pilots end on (the domain's
    // with one level, half as fine with two).
    const std::size_t k_of = text.find("; Poiseuille permeabilities of ", h);
    REQUIRE(k_of != std::string::npos);
    const std::string k_said = std::string(" on the level's grid (") + (levels > 1 ? "16x16x16" : "32x32x32") + "): ";
    const std::size_t kr = text.find(k_said, k_of);
    REQUIRE(kr != std::string::npos);
    CHECK(kr < text.find('\n', k_of));
    CHECK(std::atoi(text.c_str() + k_of + 31) >= 2);
    std::array<double, 3> k_least{}, k_greatest{}, k_low{}, k_high{};
    REQUIRE(std::sscanf(text.c_str() + kr + k_said.size(), "%lf-%lf / %lf-%lf / %lf-%lf", &k_least[0],
                        &k_greatest[0], &k_least[1], &k_greatest[1], &k_least[2], &k_greatest[2]) == 6);
    const std::size_t kh = text.find(half_said, kr);
    REQUIRE(kh != std::string::npos);
    REQUIRE(std::sscanf(text.c_str() + kh + half_said.size(), "%lf-%lf / %lf-%lf / %lf-%lf", &k_low[0], &k_high[0],
                        &k_low[1], &k_high[1], &k_low[2], &k_high[2]) == 6);
    for (std::size_t a = 0; a < 3; ++a) {
      CHECK(least[a] <= low[a]);
      CHECK(low[a] <= high[a]);
      CHECK(high[a] <= greatest[a]);
      CHECK(k_least[a] <= k_low[a]);
      CHECK(k_low[a] <= k_high[a]);
      CHECK(k_high[a] <= k_greatest[a]);
    }
    // Draws come in batches of 4 (up to 4 of them).
    std::vector<std::array<double, 3>> drawn;
    std::vector<std::string> draw_lines;
    for (int k = 1;; ++k) {
      const std::string head = "draw      " + std::to_string(k) + " of " + std::to_string((k + 3) / 4 * 4) +
                               ": formation factors ";
      const std::size_t d = text.find(head);
      if (d == std::string::npos) break;
      const std::string line = text.substr(d + head.size(), text.find('\n', d) - d - head.size());
      const std::array<double, 3> f = numbers(line);
      double printed = -1;
      REQUIRE(std::sscanf(line.c_str() + line.find("ratio ") + 6, "%lf", &printed) == 1);
      // The rule, from the printed factors and the reference's: 4 significant digits each (up
      // to 5e-4 of each off), so each log ratio within 1e-3, the largest too, and the print's 5e-6.
      double expected = 0;
      for (int a = 0; a < 3; ++a)
        expected = std::max(expected, std::abs(std::log(f[std::size_t(a)] / reference[std::size_t(a)])));
      if (std::isinf(expected)) CHECK(std::isinf(printed));  // a draw whose pore does not cross an axis
      else CHECK(std::abs(printed - expected) <= 1e-3 + 1e-5);
      drawn.push_back(f);
      draw_lines.push_back(text.substr(d, text.find('\n', d) - d));
    }
    REQUIRE(drawn.size() >= 4);
    CHECK(drawn.size() % 4 == 0);
    CHECK(drawn.size() <= 16);
    // Each pilot's carry: its F on the domain's grid (refined there from a coarser level) over
    // the F of the draw it started from (4 significant digits each printed); whether it ends
    // inside the middle half, from the printed figures where not within their rounding of an end.
    const std::string refined = "refined onto the domain's grid ";
    std::vector<int> piloted;
    std::vector<bool> inside;
    for (std::size_t p = text.find("pilot     draw "); p != std::string::npos; p = text.find("pilot     draw ", p + 1)) {
      const int k = std::atoi(text.c_str() + p + 15);
      REQUIRE((k >= 1 && k <= int(drawn.size())));
      const std::string line = text.substr(p, text.find('\n', p) - p);
      if (line.find(" ends ") != std::string::npos) {
        REQUIRE(!piloted.empty());
        CHECK(k == piloted.back());
        inside.push_back(line.find(" ends inside ") != std::string::npos);
        CHECK((inside.back() || line.find(" ends outside ") != std::string::npos));
        continue;
      }
      piloted.push_back(k);
      const std::string carried = "; carried x ";
      REQUIRE(line.find(carried) != std::string::npos);
      const std::array<double, 3> carry = numbers(line.substr(line.find(carried) + carried.size()));
      CHECK((line.find(refined) != std::string::npos) == (levels > 1));
      const std::array<double, 3> pilot_f = numbers(levels > 1 ? line.substr(line.find(refined) + refined.size())
                                                               : line.substr(line.find("formation factors ") + 18));
      const std::string k_of = "; Poiseuille permeabilities ";
      REQUIRE(line.find(k_of) != std::string::npos);
      const std::array<double, 3> pilot_k = numbers(line.substr(line.find(k_of) + k_of.size()));
      bool clear = true, within = true;
      for (std::size_t a = 0; a < 3; ++a) {
        const double ratio = pilot_f[a] / drawn[std::size_t(k - 1)][a];
        if (std::isfinite(ratio) && ratio > 0) CHECK(carry[a] == doctest::Approx(ratio).epsilon(2e-3));
        else CHECK(carry[a] == 1.0);  // a pore that does not cross the axis: no carry measured
        clear = clear && std::abs(std::log(pilot_f[a] / low[a])) > 1e-3 && std::abs(std::log(pilot_f[a] / high[a])) > 1e-3;
        within = within && pilot_f[a] >= low[a] && pilot_f[a] <= high[a];
        clear = clear && std::abs(std::log(pilot_k[a] / k_low[a])) > 1e-3 &&
                std::abs(std::log(pilot_k[a] / k_high[a])) > 1e-3;
        within = within && pilot_k[a] >= k_low[a] && pilot_k[a] <= k_high[a];
      }
      if (clear) {
        const std::size_t e = text.find("pilot     draw " + std::to_string(k) + " ends ", p);
        REQUIRE(e != std::string::npos);
        CHECK((text.compare(e, 15 + std::to_string(k).size() + 12, "pilot     draw " + std::to_string(k) +
                                                                   " ends inside") == 0) == within);
      }
    }
    REQUIRE(!piloted.empty());
    REQUIRE(inside.size() == piloted.size());
    CHECK(piloted.size() <= 4);
    // The first pilot starts from the draw of the first batch nearest as drawn (a tie within the
    // prints' digits may go either way).
    std::vector<double> as_drawn;
    for (std::size_t k = 0; k < 4; ++k) {
      double m = 0;
      for (std::size_t a = 0; a < 3; ++a) m = std::max(m, std::abs(std::log(drawn[k][a] / reference[a])));
      as_drawn.push_back(m);
    }
    CHECK(as_drawn[std::size_t(piloted.front() - 1)] <= *std::min_element(as_drawn.begin(), as_drawn.end()) + 2e-3);
    // The kept draw was piloted: one that ended inside the middle half where any did, else the
    // one least outside it after every pilot was spent or every draw made.
    const fs::path rd = dir / "results" / name;
    const std::string log = slurp(rd / "run.log");
    const std::size_t said_kept = log.find(" of " + std::to_string(drawn.size()) + " kept: formation factors ");
    REQUIRE(said_kept != std::string::npos);
    const int kept = std::atoi(log.c_str() + log.rfind("draws     ", said_kept) + 10);
    const std::string kept_line = log.substr(said_kept, log.find('\n', said_kept) - said_kept);
    CHECK(kept_line.find(" by its own pilot") != std::string::npos);
    CHECK(kept_line.find(std::to_string(piloted.size()) + " piloted)") != std::string::npos);
    const auto at_kept = std::find(piloted.begin(), piloted.end(), kept);
    REQUIRE(at_kept != piloted.end());
    const bool any_inside = std::find(inside.begin(), inside.end(), true) != inside.end();
    CHECK((kept_line.find("none inside") == std::string::npos) == any_inside);
    if (any_inside) {  // the first inside ends the pilots
      CHECK(kept == piloted.back());
      CHECK(std::count(inside.begin(), inside.end(), true) == 1);
    } else {
      CHECK(piloted.size() == 4);
      CHECK(!inside[std::size_t(at_kept - piloted.begin())]);
    }
    CHECK(log.find(text.substr(at, text.find('\n', at) - at)) != std::string::npos);  // the reference's F logged
    for (const std::string& line : draw_lines) CHECK(log.find(line) != std::string::npos);  // and each draw's
    CHECK(slurp(rd / "config.yaml").find("draws: 4") != std::string::npos);
    // Draw 1 is the run's own start: a run of one draw ends where this one does exactly when it
    // kept draw 1.
    REQUIRE(shell(cli + " run " + (dir / (name + ".yaml")).string() + " --set initial.draws=1 --set name=one" +
                  " --output " + (dir / "results").string() + " > " + (dir / "one.txt").string()) == 0);
    const std::string one = slurp(dir / "one.txt");
    CHECK(one.find("draws ") == std::string::npos);
    CHECK(one.find("draw  ") == std::string::npos);
    const auto final_of = [&](const fs::path& folder) { return read_hdf5((folder / "final.h5").string(), "/volume").bytes; };
    CHECK((final_of(dir / "results" / "one") == final_of(rd)) == (kept == 1));
    fs::remove_all(dir / "results" / "one");
    // The resolved config draws the same starts and keeps the same.
    REQUIRE(shell(cli + " run " + (rd / "config.yaml").string() + " --output " + (dir / "again").string() +
                  " --quiet > /dev/null") == 0);
    CHECK(final_of(dir / "again" / name) == final_of(rd));
  }
  {
    // A domain larger than the reference (32 voxels of 4): no sub-volumes to range F over. One
    // pilot, and the draw nearest the reference's F once carried by it kept (ranked at full
    // precision: a tie within the prints' last digits — each factor's, the carry's and the
    // reference's, so a log ratio within 1.5e-3 — may go either way).
    const std::string out = (dir / "wide.txt").string();
    REQUIRE(shell(cli + " run " + (dir / "d1.yaml").string() + " --set name=wide --set 'domain.spacing=[4,4,4]'" +
                  " --output " + (dir / "results").string() + " > " + out) == 0);
    const std::string text = slurp(out);
    CHECK(text.find(" sub-volumes of the domain's size") == std::string::npos);
    const std::string said = "draws     the reference's formation factors: ";
    REQUIRE(text.find(said) != std::string::npos);
    const std::array<double, 3> reference = numbers(text.substr(text.find(said) + said.size()));
    std::vector<std::array<double, 3>> drawn;
    for (int k = 1; k <= 4; ++k) {
      const std::string head = "draw      " + std::to_string(k) + " of 4: formation factors ";
      REQUIRE(text.find(head) != std::string::npos);
      drawn.push_back(numbers(text.substr(text.find(head) + head.size())));
    }
    CHECK(text.find("draw      5 ") == std::string::npos);
    const std::size_t p = text.find("pilot     draw ");
    REQUIRE(p != std::string::npos);
    CHECK(text.find("pilot     draw ", p + 1) == std::string::npos);
    const std::string carried = "; carried x ";
    REQUIRE(text.find(carried, p) != std::string::npos);
    const std::array<double, 3> carry = numbers(text.substr(text.find(carried, p) + carried.size()));
    std::vector<double> mismatch;
    for (const auto& f : drawn) {
      double m = 0;
      for (std::size_t a = 0; a < 3; ++a) m = std::max(m, std::abs(std::log(f[a] * carry[a] / reference[a])));
      mismatch.push_back(m);
    }
    const std::size_t said_kept = text.find(" of 4 kept: ");
    REQUIRE(said_kept != std::string::npos);
    const int kept = std::atoi(text.c_str() + text.rfind("draws     ", said_kept) + 10);
    REQUIRE((kept >= 1 && kept <= 4));
    CHECK(text.find("1 piloted)", said_kept) != std::string::npos);
    CHECK(mismatch[std::size_t(kept - 1)] <= *std::min_element(mismatch.begin(), mismatch.end()) + 3e-3 + 1e-5);
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST_CASE("cli.run.end_to_end") {
  const fs::path dir = fs::temp_directory_path() / ("poreforge-run-" + std::to_string(testing::fresh_seed()));
  fs::create_directories(dir);
  const std::string cli = POREFORGE_CLI;
  described_reference(dir, "--shape 24,24,24 --porosity 0.35 --seed 4");
  std::ofstream(dir / "tiny.yaml") << "name: tiny\nbackend: cpu\ntarget:\n  descriptors: desc.h5\n"
                                      "domain:\n  shape: [16, 16, 16]\nannealing:\n  trial_moves: 20\n"
                                      "  max_evaluations: 300\n  stage_length: 50\noutput:\n  report_every: 100\n";
  const std::string run = cli + " run " + (dir / "tiny.yaml").string() + " --output " + (dir / "results").string();
  REQUIRE(shell(run + " --quiet > " + (dir / "out.txt").string()) == 0);
  const fs::path rd = dir / "results" / "tiny";
  for (const char* f : {"config.yaml", "final.h5", "final.xdmf", "descriptors.h5", "energy.csv", "summary.json", "run.log"})
    CHECK_MESSAGE(fs::exists(rd / f), f);
  // The structure keeps the target porosity exactly; ParaView's sidecar points at it.
  const LabelImage final_volume = read_hdf5((rd / "final.h5").string(), "/volume");
  CHECK(final_volume.shape == Shape{16, 16, 16});
  const double porosity = read_hdf5_attribute((dir / "desc.h5").string(), "porosity");
  CHECK(count_phase(phase_mask(final_volume, 1)) == std::llround(porosity * 4096));
  const std::string xdmf = slurp(rd / "final.xdmf");
  CHECK(xdmf.find("final.h5:/volume") != std::string::npos);
  CHECK(xdmf.find("Dimensions=\"16 16 16\"") != std::string::npos);
  CHECK(slurp(rd / "summary.json").find("\"stop_reason\": \"max_evaluations\"") != std::string::npos);
  CHECK(slurp(rd / "summary.json").find("\"quality\": {\"start\": {\"pore_psd_l1\": ") != std::string::npos);
  CHECK(slurp(rd / "energy.csv").find("evaluations,stage,temperature,energy") == 0);
  // An existing run is refused and left alone; --force replaces it; no temporaries remain.
  const auto before = fs::last_write_time(rd / "final.h5");
  CHECK(shell(run + " --quiet > /dev/null 2>&1") != 0);
  CHECK(fs::last_write_time(rd / "final.h5") == before);
  CHECK(shell(run + " --quiet --force > /dev/null") == 0);
  // The optional TIFF stack holds the same structure (where the build has libtiff).
  if (tiff_supported()) {
    REQUIRE(shell(run + " --quiet --force --set output.tiff=true > /dev/null") == 0);
    CHECK(read_tiff((rd / "final.tif").string()).bytes == read_hdf5((rd / "final.h5").string(), "/volume").bytes);
  } else {
    CHECK(shell(run + " --quiet --force --set output.tiff=true > /dev/null 2>&1") == 2);
  }
  // --progress json: stdout holds only JSON objects, one per line.
  REQUIRE(shell(run + " --force --progress json > " + (dir / "json.txt").string() + " 2> /dev/null") == 0);
  std::istringstream lines(slurp(dir / "json.txt"));
  int objects = 0;
  for (std::string line; std::getline(lines, line); ++objects) {
    CAPTURE(line);
    CHECK(line.front() == '{');
    CHECK(line.back() == '}');
    CHECK(line.find("\"evaluations\": ") != std::string::npos);
  }
  CHECK(objects == 4);  // at 0, 100, 200 and 300 evaluations
  int entries = 0;
  for (auto& e : fs::directory_iterator(dir / "results")) entries += e.is_directory();
  CHECK(entries == 1);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST_CASE("cli.run.coarser_grid_than_the_reference") {
  // A reference at spacing 0.5 described, then reconstructed on a grid of spacing 1: the
  // describe file records the spacing, the run says it resampled the target S2, and the
  // checkpoint keeps the resampled targets with the grid's spacing.
  const fs::path dir = fs::temp_directory_path() / ("poreforge-coarse-" + std::to_string(testing::fresh_seed()));
  fs::create_directories(dir);
  const std::string cli = POREFORGE_CLI;
  described_reference(dir, "--shape 32,32,32 --porosity 0.35 --seed 5 --spacing 0.5");
  const anneal::Targets reference = anneal::Targets::from_descriptor_file((dir / "desc.h5").string());
  CHECK(reference.spacing == Spacing{0.5, 0.5, 0.5});
  std::ofstream(dir / "coarse.yaml") << "name: coarse\nbackend: cpu\ntarget:\n  descriptors: desc.h5\n"
                                        "domain:\n  shape: [16, 16, 16]\n  spacing: [1, 1, 1]\nannealing:\n"
                                        "  trial_moves: 20\n  max_evaluations: 200\n  stage_length: 50\n"
                                        "checkpoint:\n  every_evaluations: 100\n";
  REQUIRE(shell(cli + " run " + (dir / "coarse.yaml").string() + " --output " + (dir / "results").string() + " > " +
                (dir / "out.txt").string()) == 0);
  CHECK(slurp(dir / "out.txt").find("target S2 resampled from the reference's spacing 0.5,0.5,0.5 to the domain's 1,1,1") !=
        std::string::npos);
  fs::path checkpoint;
  for (auto& e : fs::directory_iterator(dir / "results" / "coarse" / "checkpoints")) checkpoint = e.path();
  REQUIRE(!checkpoint.empty());
  const anneal::Targets kept =
      anneal::Targets::from_descriptor_file(checkpoint.string(), "/targets", "target_porosity", "target_spacing");
  CHECK(kept.spacing == Spacing{});
  for (int a = 0; a < 3; ++a) {
    REQUIRE(kept.s2[a].size() == (reference.s2[a].size() - 1) / 2 + 1);
    CHECK(kept.s2[a][1] == reference.s2[a][2]);  // lag 1 here is lag 2 of the reference
  }
  // The coarse result seeds a run on the reference's own grid (the same region): resampled,
  // with the target's pore count.
  const fs::path coarse_final = dir / "results" / "coarse" / "final.h5";
  REQUIRE(shell(cli + " run " + (dir / "coarse.yaml").string() + " --output " + (dir / "results").string() +
                " --set name=fine --set domain.shape=[32,32,32] --set domain.spacing=[0.5,0.5,0.5]" +
                " --set initial.structure=file --set initial.file=" + coarse_final.string() + " > " +
                (dir / "fine.txt").string()) == 0);
  CHECK(slurp(dir / "fine.txt").find("(16x16x16, spacing 1,1,1, porosity ") != std::string::npos);
  CHECK(slurp(dir / "fine.txt").find("resampled to 32x32x32") != std::string::npos);
  const LabelImage fine = read_hdf5((dir / "results" / "fine" / "final.h5").string(), "/volume");
  CHECK(fine.shape == Shape{32, 32, 32});
  CHECK(count_phase(phase_mask(fine, 1)) == std::llround(reference.porosity * 32 * 32 * 32));
  // The same start with balls planted for the large-pore bins it lacks: the run says what it
  // planted and keeps the pore count.
  REQUIRE(shell(cli + " run " + (dir / "coarse.yaml").string() + " --output " + (dir / "results").string() +
                " --set name=planted --set domain.shape=[32,32,32] --set domain.spacing=[0.5,0.5,0.5]" +
                " --set initial.structure=file --set initial.plant_large_pores=true --set initial.file=" +
                coarse_final.string() + " > " + (dir / "planted.txt").string()) == 0);
  CHECK(slurp(dir / "planted.txt").find("balls for the large-pore bins (") != std::string::npos);
  const LabelImage planted = read_hdf5((dir / "results" / "planted" / "final.h5").string(), "/volume");
  CHECK(count_phase(phase_mask(planted, 1)) == std::llround(reference.porosity * 32 * 32 * 32));
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST_CASE("cli.run.resume_and_signals") {
  const fs::path dir = fs::temp_directory_path() / ("poreforge-resume-" + std::to_string(testing::fresh_seed()));
  fs::create_directories(dir);
  const std::string cli = POREFORGE_CLI;
  described_reference(dir, "--shape 20,20,20 --porosity 0.4 --seed 9");
  // endless: nothing but the evaluation budget or a signal stops it (a run this small stalls
  // within a second, before the signal the test sends).
  auto config = [&](const std::string& name, int64_t evals, bool endless = false) {
    const fs::path p = dir / (name + ".yaml");
    std::ofstream(p) << "name: " << name << "\nbackend: cpu\nseed: 5\ntarget:\n  descriptors: desc.h5\n"
                     << "domain:\n  shape: [14, 14, 14]\nannealing:\n  trial_moves: 20\n  stage_length: 70\n"
                     << (endless ? "  stall_stages: 1000000000\n  energy_tolerance: 0\n" : "")
                     << "  max_evaluations: " << evals << "\nmoves:\n  interface_bias: 1.5\n"
                     << "output:\n  directory: " << (dir / "results").string() << "\n  report_every: 50\n"
                     << "checkpoint:\n  every_evaluations: 100\n  keep: 2\n";
    return p.string();
  };
  // Straight to 600, and 250 then resumed to 600: the same structure and the same history.
  REQUIRE(shell(cli + " run " + config("straight", 600) + " --quiet > /dev/null") == 0);
  REQUIRE(shell(cli + " run " + config("halves", 250) + " --quiet > /dev/null") == 0);
  const fs::path ckpt = dir / "results/halves/checkpoints/evaluation-000000000250.h5";
  REQUIRE(fs::exists(ckpt));
  int kept = 0;
  for (auto& e : fs::directory_iterator(dir / "results/halves/checkpoints")) kept += e.path().extension() == ".h5";
  CHECK(kept == 2);  // keep: 2
  REQUIRE(shell(cli + " resume " + ckpt.string() + " --max-evals 600 --quiet > /dev/null") == 0);
  CHECK(read_hdf5((dir / "results/halves/final.h5").string(), "/volume").bytes ==
        read_hdf5((dir / "results/straight/final.h5").string(), "/volume").bytes);
  CHECK(slurp(dir / "results/halves/energy.csv") == slurp(dir / "results/straight/energy.csv"));
  // The resumed run's summary still measures from the run's start, and says where it resumed.
  auto quality_of = [&](const std::string& run, const std::string& key) {
    const std::string text = slurp(dir / "results" / run / "summary.json");
    const auto at = text.find("\"" + key + "\": {");
    return at == std::string::npos ? std::string() : text.substr(at, text.find('}', at) - at);
  };
  CHECK(!quality_of("straight", "start").empty());
  CHECK(quality_of("halves", "start") == quality_of("straight", "start"));
  CHECK(quality_of("halves", "final") == quality_of("straight", "final"));
  CHECK(!quality_of("halves", "resumed_from").empty());
  CHECK(quality_of("straight", "resumed_from").empty());
  // A budget already spent, a truncated file and a foreign file are refused.
  CHECK(shell(cli + " resume " + ckpt.string() + " --max-evals 200 > /dev/null 2>&1") != 0);
  {
    const std::string bytes = slurp(ckpt);
    std::ofstream(dir / "cut.h5", std::ios::binary).write(bytes.data(), std::streamsize(bytes.size() / 2));
  }
  CHECK(shell(cli + " resume " + (dir / "cut.h5").string() + " > /dev/null 2>&1") != 0);
  CHECK(shell(cli + " resume " + (dir / "ref.h5").string() + " > /dev/null 2>&1") != 0);

  // SIGINT to a running child: it finishes the step, writes a checkpoint and its history and
  // exits 130; the checkpoint resumes.
  const std::string long_run = cli + " run " + config("interrupted", 100000000, true) + " --quiet > /dev/null 2>&1";
  const int status = std::system(("( " + long_run + " ) & pid=$!; "
                                  "for i in $(seq 1 200); do [ -d " + (dir / "results/interrupted/checkpoints").string() +
                                  " ] && break; sleep 0.05; done; sleep 0.3; kill -INT $pid; wait $pid")
                                     .c_str());
  CHECK(WEXITSTATUS(status) == 130);
  // The history so far is written too (the energy plot of an interrupted run).
  const std::string history = slurp(dir / "results/interrupted/energy.csv");
  CHECK(history.find("evaluations,stage,temperature,energy,") == 0);
  CHECK(history.find("\n0,") != std::string::npos);
  std::vector<fs::path> ckpts;
  for (auto& e : fs::directory_iterator(dir / "results/interrupted/checkpoints")) ckpts.push_back(e.path());
  REQUIRE(!ckpts.empty());
  std::sort(ckpts.begin(), ckpts.end());
  CHECK(shell(cli + " resume " + ckpts.back().string() + " --max-evals 100000000 --quiet > /dev/null 2>&1 & "
              "sleep 0.5; kill -TERM $! ; wait $!; test $? -eq 143") == 0);

  // Interrupted in the loop, the run's last line names the checkpoint it wrote (the message is
  // the check: a run the second signal killed says nothing and exits 130 just the same). The
  // signal comes twice, as `timeout` sends it; whether the two merge depends on the scheduler,
  // so the rule for a second signal is tested in-process (cli.run.signals).
  const fs::path said = dir / "twice.txt";
  const std::string twice_run = cli + " run " + config("twice", 100000000, true) + " > " + said.string() + " 2>&1";
  const int twice = std::system(("( " + twice_run + " ) & pid=$!; "
                                 "for i in $(seq 1 200); do [ -d " + (dir / "results/twice/checkpoints").string() +
                                 " ] && break; sleep 0.05; done; sleep 0.3; kill -INT $pid; kill -INT $pid; wait $pid")
                                    .c_str());
  CHECK(WEXITSTATUS(twice) == 130);
  const std::string told = slurp(said);
  const std::string resume_with = "resume with `poreforge resume ";
  const auto named = told.find(resume_with);
  REQUIRE_MESSAGE(named != std::string::npos, told);
  const std::string rest = told.substr(named + resume_with.size());
  const fs::path written = rest.substr(0, rest.find('`'));
  CHECK(written.parent_path() == dir / "results/twice/checkpoints");
  CHECK(fs::exists(written));
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST_CASE("cli.run.signals") {
  // Each case in a child process, which a signal may end without ending the tests; the child
  // calls only async-signal-safe functions after the fork (the test runner has threads).
  const auto in_child = [](const auto& body) {
    const pid_t pid = fork();
    if (pid == 0) {
      body();
      _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
  };
  // Two signals at once are one request: the first is caught and the process goes on to its
  // checkpoint.
  for (const auto& [first, second] : {std::pair{SIGINT, SIGINT}, std::pair{SIGTERM, SIGINT}}) {
    CAPTURE(first);
    CAPTURE(second);
    const int status = in_child([first = first, second = second] {
      const RunSignals signals;
      std::raise(first);
      std::raise(second);
      _exit(caught_signal() == first ? 7 : 1);
    });
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 7);
  }
  // A second one more than a second after the first is the user insisting: the process ends
  // by it, as the default action ends it.
  const int status = in_child([] {
    const RunSignals signals;
    std::raise(SIGINT);
    usleep(1'300'000);
    std::raise(SIGINT);
    _exit(7);
  });
  CHECK(WIFSIGNALED(status));
  CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGINT));
  // No signal, nothing caught; the handlers the process had are put back after the run.
  struct sigaction before {}, after {};
  sigaction(SIGINT, nullptr, &before);
  {
    const RunSignals signals;
    CHECK(caught_signal() == 0);
    struct sigaction during {};
    sigaction(SIGINT, nullptr, &during);
    CHECK((during.sa_handler != before.sa_handler));
    CHECK_THROWS_AS(RunSignals(), InputError);  // one run at a time in a process
  }
  sigaction(SIGINT, nullptr, &after);
  CHECK((after.sa_handler == before.sa_handler));
  CHECK(after.sa_flags == before.sa_flags);
}

TEST_CASE("cli.run.wall_clock_limit") {
  // A budget of evaluations no run here reaches, cut by --max-seconds: exit 0, the full
  // outputs, stop reason time_limit; a resume gets a fresh limit and goes on from there.
  const fs::path dir = fs::temp_directory_path() / ("poreforge-clock-" + std::to_string(testing::fresh_seed()));
  fs::create_directories(dir);
  const std::string cli = POREFORGE_CLI;
  described_reference(dir, "--shape 20,20,20 --porosity 0.4 --seed 3");
  std::ofstream(dir / "clock.yaml") << "name: clock\nbackend: cpu\ntarget:\n  descriptors: desc.h5\n"
                                       "domain:\n  shape: [16, 16, 16]\nannealing:\n  trial_moves: 20\n"
                                       "  max_evaluations: 1000000000\n  stage_length: 1000\n  stall_stages: 1000000\n"
                                       "  energy_tolerance: 0\noutput:\n  report_every: 100\n";
  const auto started = std::chrono::steady_clock::now();
  REQUIRE(shell(cli + " run " + (dir / "clock.yaml").string() + " --output " + (dir / "results").string() +
                " --max-seconds 1 --quiet > /dev/null") == 0);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(60));
  const fs::path rd = dir / "results" / "clock";
  for (const char* f : {"final.h5", "descriptors.h5", "energy.csv", "summary.json"}) CHECK_MESSAGE(fs::exists(rd / f), f);
  const std::string summary = slurp(rd / "summary.json");
  CHECK(summary.find("\"stop_reason\": \"time_limit\"") != std::string::npos);
  CHECK(read_hdf5_attribute((rd / "final.h5").string(), "evaluations") < 1e9);
  CHECK(slurp(rd / "config.yaml").find("max_seconds: 1") != std::string::npos);
  std::vector<fs::path> ckpts;
  for (auto& e : fs::directory_iterator(rd / "checkpoints")) ckpts.push_back(e.path());
  REQUIRE(!ckpts.empty());
  std::sort(ckpts.begin(), ckpts.end());
  const double first = read_hdf5_attribute((rd / "final.h5").string(), "evaluations");
  REQUIRE(shell(cli + " resume " + ckpts.back().string() + " --max-seconds 0.5 --quiet > /dev/null") == 0);
  CHECK(read_hdf5_attribute((rd / "final.h5").string(), "evaluations") > first);
  CHECK(slurp(rd / "summary.json").find("\"stop_reason\": \"time_limit\"") != std::string::npos);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

namespace {

// A run folder under `dir`/results from a 12³ domain and few evaluations (a second or two);
// `name` and any extra "--set" options appended.
struct TinyRuns {
  fs::path dir;
  std::string cli = POREFORGE_CLI;
  explicit TinyRuns(const std::string& tag) {
    dir = fs::temp_directory_path() / ("poreforge-" + tag + "-" + std::to_string(testing::fresh_seed()));
    fs::create_directories(dir);
    described_reference(dir, "--shape 16,16,16 --porosity 0.4 --seed 6");
    std::ofstream(dir / "tiny.yaml") << "name: tiny\nbackend: cpu\nseed: 3\ntarget:\n  descriptors: desc.h5\n"
                                        "domain:\n  shape: [12, 12, 12]\nannealing:\n  trial_moves: 10\n"
                                        "  max_evaluations: 100\n  stage_length: 25\noutput:\n  report_every: 25\n"
                                        "checkpoint:\n  every_evaluations: 50\n";
  }
  ~TinyRuns() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string run(const std::string& options) const {
    return cli + " run " + (dir / "tiny.yaml").string() + " --output " + (dir / "results").string() + " --quiet " +
           options;
  }
  fs::path folder(const std::string& name) const { return dir / "results" / name; }
};

// The one error line of a command that must fail, and its status.
std::pair<int, std::string> failing(const std::string& cmd, const fs::path& dir) {
  const int status = shell(cmd + " > /dev/null 2> " + (dir / "err.txt").string());
  return {status, slurp(dir / "err.txt")};
}

}  // namespace

TEST_CASE("cli.run.force_never_deletes_what_poreforge_did_not_make") {
  TinyRuns t("force");
  fs::create_directories(t.folder("other"));
  std::ofstream(t.folder("other") / "keep.txt") << "a sibling\n";
  REQUIRE(shell(t.run("--set name=a > /dev/null")) == 0);
  CHECK(fs::exists(t.folder("a") / ".poreforge-run"));
  // `.`, `..` and paths are refused as names, --force or not; the siblings and the folder
  // above stay.
  for (const char* name : {".", "..", "../results", "a/../..", ".hidden"}) {
    CAPTURE(name);
    const auto [status, err] = failing(t.run("--force --set 'name=" + std::string(name) + "'"), t.dir);
    CHECK(status == 2);
    CHECK(err.find("name must be one folder name") != std::string::npos);
  }
  CHECK(slurp(t.folder("other") / "keep.txt") == "a sibling\n");
  CHECK(fs::exists(t.folder("a") / "final.h5"));
  CHECK(fs::exists(t.dir / "tiny.yaml"));
  // --force replaces a folder poreforge made, and only that one.
  std::ofstream(t.folder("a") / "stray.txt") << "from the old run\n";
  REQUIRE(shell(t.run("--set name=a --force > /dev/null")) == 0);
  CHECK_FALSE(fs::exists(t.folder("a") / "stray.txt"));
  CHECK(fs::exists(t.folder("a") / "final.h5"));
  CHECK(slurp(t.folder("other") / "keep.txt") == "a sibling\n");
  // A folder without the marker, or a link to one, is refused and left as it was.
  auto [status, err] = failing(t.run("--set name=other --force"), t.dir);
  CHECK(status == 2);
  CHECK(err.find("was not made by poreforge (no .poreforge-run inside)") != std::string::npos);
  fs::create_directory_symlink(t.folder("a"), t.folder("link"));
  std::tie(status, err) = failing(t.run("--set name=link --force"), t.dir);
  CHECK(status == 2);
  CHECK(err.find("is a symbolic link") != std::string::npos);
  CHECK(slurp(t.folder("other") / "keep.txt") == "a sibling\n");
  CHECK(fs::exists(t.folder("a") / "final.h5"));
}

TEST_CASE("cli.run.lock") {
  TinyRuns t("lock");
  // A run that goes on until stopped, with a checkpoint early that no later one rotates out
  // before the test is done with it, even on a fast machine (a larger domain, every
  // checkpoint kept, no stopping rule but the budget).
  const std::string long_run = t.run("--set name=busy --set annealing.max_evaluations=100000000 "
                                     "--set checkpoint.every_evaluations=20 --set checkpoint.keep=1000 "
                                     "--set domain.shape=[32,32,32] --set annealing.stall_stages=1000000000 "
                                     "--set annealing.energy_tolerance=0");
  const fs::path pid_file = t.dir / "pid";
  REQUIRE(shell("( " + long_run + " > /dev/null 2>&1 & echo $! > " + pid_file.string() + " )") == 0);
  const fs::path ckpt = t.folder("busy") / "checkpoints" / "evaluation-000000000020.h5";
  for (int i = 0; i < 1200 && !fs::exists(ckpt); ++i) shell("sleep 0.05");  // up to a minute on a loaded machine
  REQUIRE(fs::exists(ckpt));
  const std::string pid = [&] {
    std::string s = slurp(pid_file);
    return s.substr(0, s.find('\n'));
  }();
  // The same name with --force, and a resume of its checkpoint, are refused while it runs.
  auto [status, err] = failing(t.run("--set name=busy --force"), t.dir);
  CHECK(status == 2);
  CHECK(err.find("is in use by process " + pid) != std::string::npos);
  std::tie(status, err) = failing(t.cli + " resume " + ckpt.string() + " --quiet", t.dir);
  CHECK(status == 2);
  CHECK(err.find("is in use by process " + pid) != std::string::npos);
  CHECK(fs::exists(ckpt));
  // Killed outright, it leaves its PID in the lock file: the next run takes the lock over.
  REQUIRE(shell("kill -KILL " + pid + "; while kill -0 " + pid + " 2> /dev/null; do sleep 0.05; done") == 0);
  CHECK(slurp(t.folder("busy") / ".poreforge-lock") == pid + "\n");
  REQUIRE(shell(t.run("--set name=busy --force > /dev/null")) == 0);
  CHECK(slurp(t.folder("busy") / "run.log").find("lock      taken over from process " + pid) != std::string::npos);
  CHECK(slurp(t.folder("busy") / ".poreforge-lock").empty());  // released cleanly
}

TEST_CASE("cli.resume.finishes_an_interrupted_run") {
  // Killed after its last checkpoint but before its outputs: a plain resume writes them (the
  // same structure), and the temporaries killed writes left are removed.
  TinyRuns t("finish");
  REQUIRE(shell(t.run("--set name=done > /dev/null")) == 0);
  const fs::path rd = t.folder("done");
  const auto structure = read_hdf5((rd / "final.h5").string(), "/volume").bytes;
  const std::string energy = slurp(rd / "energy.csv");
  for (const char* f : {"final.h5", "final.xdmf", "descriptors.h5", "summary.json"}) fs::remove(rd / f);
  std::ofstream(rd / "checkpoints" / "evaluation-000000000150.h5.tmp-4242") << "half a checkpoint";
  std::ofstream(rd / "summary.json.tmp-4242") << "{";
  const fs::path last = rd / "checkpoints" / "evaluation-000000000100.h5";
  REQUIRE(shell(t.cli + " resume " + last.string() + " --quiet > /dev/null") == 0);
  for (const char* f : {"final.h5", "final.xdmf", "descriptors.h5", "summary.json"}) CHECK_MESSAGE(fs::exists(rd / f), f);
  CHECK(read_hdf5((rd / "final.h5").string(), "/volume").bytes == structure);
  CHECK(slurp(rd / "energy.csv") == energy);
  CHECK(slurp(rd / "summary.json").find("\"stop_reason\": \"max_evaluations\"") != std::string::npos);
  CHECK_FALSE(fs::exists(rd / "checkpoints" / "evaluation-000000000150.h5.tmp-4242"));
  CHECK_FALSE(fs::exists(rd / "summary.json.tmp-4242"));
  CHECK(slurp(rd / "run.log").find("(stopped: max_evaluations), writing the outputs") != std::string::npos);
  // A new budget still goes on from there.
  REQUIRE(shell(t.cli + " resume " + last.string() + " --max-evals 150 --quiet > /dev/null") == 0);
  CHECK(read_hdf5_attribute((rd / "final.h5").string(), "evaluations") == 150);
}

TEST_CASE("cli.resume.keeps_the_newest_checkpoints_of_either_name") {
  // A run folder whose checkpoints are named step-N.h5 (as poreforge once named them) resumes,
  // and the newest checkpoint.keep of both names stay, by their evaluations.
  TinyRuns t("rotation");
  REQUIRE(shell(t.run("--set name=r --set checkpoint.keep=3 > /dev/null")) == 0);
  const fs::path ck = t.folder("r") / "checkpoints";
  fs::rename(ck / "evaluation-000000000050.h5", ck / "step-000000000050.h5");
  fs::rename(ck / "evaluation-000000000100.h5", ck / "step-000000000100.h5");
  REQUIRE(shell(t.cli + " resume " + (ck / "step-000000000100.h5").string() +
                " --max-evals 200 --quiet > /dev/null") == 0);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(ck)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"evaluation-000000000150.h5", "evaluation-000000000200.h5",
                                          "step-000000000100.h5"});
}

// Schema 3's surface term counted voxel faces: a run that weighs the surface does not go on from
// such a checkpoint (its target and energies meant another measure) and says why; a run that
// does not weigh it does.
TEST_CASE("cli.resume.older_surface_term") {
  TinyRuns t("surface");
  std::ofstream(t.dir / "surface.yaml") << "name: s\nbackend: cpu\nseed: 3\ntarget:\n  image: ref.h5\n"
                                           "domain:\n  shape: [12, 12, 12]\nannealing:\n  trial_moves: 10\n"
                                           "  max_evaluations: 100\n  stage_length: 25\n"
                                           "descriptors:\n  weights:\n    surface: 1\n"
                                           "checkpoint:\n  every_evaluations: 50\n";
  REQUIRE(shell(t.cli + " run " + (t.dir / "surface.yaml").string() + " --output " + (t.dir / "results").string() +
                " --quiet > /dev/null") == 0);
  REQUIRE(shell(t.run("--set name=c > /dev/null")) == 0);
  for (const std::string name : {"s", "c"}) {
    CAPTURE(name);
    const fs::path dir = t.folder(name) / "checkpoints";
    fs::copy_file(dir / "evaluation-000000000050.h5", dir / "older.h5");
    REQUIRE(shell(t.cli + " resume " + (dir / "evaluation-000000000050.h5").string() +
                  " --max-evals 75 --quiet > /dev/null") == 0);
    testing::set_hdf5_attribute((dir / "older.h5").string(), "schema", 3);
    const auto [status, err] = failing(t.cli + " resume " + (dir / "older.h5").string() + " --max-evals 80 --quiet", t.dir);
    if (name == "s") {
      CHECK(status == 2);
      CHECK(err.find("whose surface term counted voxel faces") != std::string::npos);
    } else {
      CHECK(status == 0);
    }
  }
}

// A checkpoint an earlier poreforge wrote (schema 4: Euler, marching-cubes surface and chord
// terms, no openings term; tests/fixtures/checkpoint_schema4 says how it was made) resumes to
// the structure and the history that poreforge's own straight run reached.
TEST_CASE("cli.resume.schema4_checkpoint_from_an_earlier_poreforge") {
  const fs::path fixture = fs::path(POREFORGE_TEST_FIXTURES) / "checkpoint_schema4";
  const fs::path dir = fs::temp_directory_path() / ("poreforge-schema4-" + std::to_string(testing::fresh_seed()));
  const fs::path run = dir / "old";
  fs::create_directories(run / "checkpoints");
  std::ofstream(run / app::kRunMarker) << "made by poreforge: --force may replace this run folder\n";
  const fs::path ckpt = run / "checkpoints" / "evaluation-000000000050.h5";
  fs::copy_file(fixture / "evaluation-000000000050.h5", ckpt);
  REQUIRE(read_hdf5_attribute(ckpt.string(), "schema") == 4);
  REQUIRE(shell(std::string(POREFORGE_CLI) + " resume " + ckpt.string() + " --quiet > /dev/null") == 0);
  CHECK(read_hdf5((run / "final.h5").string(), "/volume").bytes ==
        read_hdf5((fixture / "final.h5").string(), "/volume").bytes);
  // The earlier run's history row for row, with this poreforge's openings, patterns and local
  // porosity columns (0: off).
  std::istringstream earlier(slurp(fixture / "energy.csv")), resumed(slurp(run / "energy.csv"));
  std::string want, got;
  int rows = 0;
  while (std::getline(earlier, want)) {
    REQUIRE(std::getline(resumed, got));
    CHECK(got == want + (rows++ == 0 ? ",openings,patterns,local_porosity" : ",0,0,0"));
  }
  CHECK(rows == 6);  // the header and the evaluations 0, 25, 50, 75 and 100
  CHECK(!std::getline(resumed, got));
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// The openings term resumes exactly: its target, normaliser and energies come back from the
// checkpoint, so a resume from the middle ends where the straight run did, history and all.
TEST_CASE("cli.resume.openings_term") {
  TinyRuns t("openings");
  std::ofstream(t.dir / "openings.yaml") << "name: o\nseed: 5\ntarget:\n  image: ref.h5\n"
                                            "domain:\n  shape: [12, 12, 12]\nannealing:\n  trial_moves: 10\n"
                                            "  max_evaluations: 100\n  stage_length: 25\n  energy_tolerance: 0\n"
                                            "descriptors:\n  weights:\n    openings: 1\n"
                                            "checkpoint:\n  every_evaluations: 50\n  keep: 4\n";
  REQUIRE(shell(t.cli + " run " + (t.dir / "openings.yaml").string() + " --output " + (t.dir / "results").string() +
                " --quiet > /dev/null") == 0);
  const fs::path rd = t.folder("o");
  const auto structure = read_hdf5((rd / "final.h5").string(), "/volume").bytes;
  const std::string energy = slurp(rd / "energy.csv");
  REQUIRE(energy.find(",openings,") != std::string::npos);
  CHECK(read_hdf5_vector((rd / "checkpoints" / "evaluation-000000000050.h5").string(),
                         "/targets/openings/euler_density").size() == 21);  // the default 20 bins' edges
  REQUIRE(shell(t.cli + " resume " + (rd / "checkpoints" / "evaluation-000000000050.h5").string() +
                " --quiet > /dev/null") == 0);
  CHECK(read_hdf5((rd / "final.h5").string(), "/volume").bytes == structure);
  CHECK(slurp(rd / "energy.csv") == energy);
}

// The Euler term's target for the domain's box comes from the reference's occupancies, and the
// patterns and local porosity terms' from its shares, which the checkpoint keeps: a resume goes
// on to the same structure and energies as the run.
TEST_CASE("cli.resume.euler_patterns_and_local_porosity_targets") {
  TinyRuns t("euler");
  std::ofstream(t.dir / "euler.yaml") << "name: e\nbackend: cpu\nseed: 4\ntarget:\n  image: ref.h5\n"
                                         "domain:\n  shape: [12, 12, 12]\nannealing:\n  trial_moves: 10\n"
                                         "  max_evaluations: 100\n  stage_length: 25\n  energy_tolerance: 0\n"
                                         "descriptors:\n  weights:\n    euler: 1\n    patterns: 1\n"
                                         "    local_porosity: 1\n"
                                         "checkpoint:\n  every_evaluations: 50\n  keep: 4\n";
  REQUIRE(shell(t.cli + " run " + (t.dir / "euler.yaml").string() + " --output " + (t.dir / "results").string() +
                " --quiet > /dev/null") == 0);
  const fs::path rd = t.folder("e");
  const auto structure = read_hdf5((rd / "final.h5").string(), "/volume").bytes;
  const std::string energy = slurp(rd / "energy.csv");
  const fs::path middle = rd / "checkpoints" / "evaluation-000000000050.h5";
  CHECK(read_hdf5_attribute(middle.string(), "schema") == app::kCheckpointSchema);
  CHECK(read_hdf5_vector(middle.string(), "/targets/euler/occupancy").size() == 8);
  CHECK(read_hdf5_vector(middle.string(), "/targets/patterns/shares").size() == kInterfacePatterns + 1);
  CHECK(read_hdf5_vector(middle.string(), "/targets/local_porosity/shares").size() == kLocalPorosityBins);
  CHECK(energy.find(",patterns,local_porosity\n") != std::string::npos);
  for (const int schema : {7, 8}) {  // an earlier poreforge's local porosity term counted other cells
    CAPTURE(schema);
    const fs::path older = rd / "checkpoints" / "older.h5";
    fs::copy_file(middle, older);
    testing::set_hdf5_attribute(older.string(), "schema", schema);
    const auto [status, err] = failing(t.cli + " resume " + older.string() + " --quiet", t.dir);
    CHECK(status == 2);
    CHECK(err.find("whose local porosity term counted other neighbourhoods") != std::string::npos);
    fs::remove(older);
  }
  REQUIRE(shell(t.cli + " resume " + middle.string() + " --quiet > /dev/null") == 0);
  CHECK(read_hdf5((rd / "final.h5").string(), "/volume").bytes == structure);
  CHECK(slurp(rd / "energy.csv") == energy);
}

TEST_CASE("cli.resume.checksums") {
  // Edits that keep the checkpoint self-consistent (so the annealer's own checks pass) are
  // found by the checksums, and the part that differs is named.
  TinyRuns t("checksum");
  REQUIRE(shell(t.run("--set name=c > /dev/null")) == 0);
  const fs::path original = t.folder("c") / "checkpoints" / "evaluation-000000000050.h5";
  REQUIRE(shell(t.cli + " resume " + original.string() + " --max-evals 75 --quiet > /dev/null") == 0);
  auto tampered = [&](const std::string& part, const std::function<void(const std::string&)>& edit) {
    CAPTURE(part);
    const fs::path copy = t.folder("c") / "checkpoints" / "edited.h5";
    fs::copy_file(original, copy, fs::copy_options::overwrite_existing);
    edit(copy.string());
    const auto [status, err] = failing(t.cli + " resume " + copy.string() + " --max-evals 75 --quiet", t.dir);
    CHECK(status == 2);
    CHECK(err.find("the stored checksum of " + part + " does not match (changed or corrupt)") != std::string::npos);
    CHECK(err.find(copy.string()) != std::string::npos);
  };
  // A pore and a solid voxel traded in the volume and in both voxel lists.
  tampered("/state/volume", [](const std::string& path) {
    const auto solid = read_hdf5_vector_int64(path, "/state/solid_voxels");
    const auto pore = read_hdf5_vector_int64(path, "/state/pore_voxels");
    const int64_t s = solid[0], p = pore[0];
    testing::edit_hdf5_dataset<uint8_t>(path, "/state/volume", H5::PredType::NATIVE_UINT8, [&](std::vector<uint8_t>& v) {
      v[std::size_t(s)] = 1;
      v[std::size_t(p)] = 0;
    });
    testing::edit_hdf5_dataset<int64_t>(path, "/state/solid_voxels", H5::PredType::NATIVE_INT64,
                                        [&](std::vector<int64_t>& v) { v[0] = p; });
    testing::edit_hdf5_dataset<int64_t>(path, "/state/pore_voxels", H5::PredType::NATIVE_INT64,
                                        [&](std::vector<int64_t>& v) { v[0] = s; });
  });
  tampered("@energy_total", [](const std::string& path) {
    testing::set_hdf5_attribute(path, "energy_total", 10 * read_hdf5_attribute(path, "energy_total"));
  });
  tampered("@temperature", [](const std::string& path) {
    testing::set_hdf5_attribute(path, "temperature", 2 * read_hdf5_attribute(path, "temperature"));
  });
  tampered("/targets/psd/pore/fraction", [](const std::string& path) {
    testing::edit_hdf5_dataset<double>(path, "/targets/psd/pore/fraction", H5::PredType::NATIVE_DOUBLE,
                                       [](std::vector<double>& v) { std::swap(v[0], v[1]); });
  });
  tampered("/history/energy", [](const std::string& path) {
    testing::edit_hdf5_dataset<double>(path, "/history/energy", H5::PredType::NATIVE_DOUBLE,
                                       [](std::vector<double>& v) { v.back() *= 0.5; });
  });
}
