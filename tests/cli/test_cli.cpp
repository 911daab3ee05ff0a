// The poreforge program end to end: outputs, and one clear line plus a non-zero exit for
// every kind of bad input, with no output file left behind.
#include <H5Cpp.h>
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "poreforge/annealer/annealer.hpp"
#include "poreforge/backend.hpp"
#include "poreforge/error.hpp"
#include "poreforge/generators.hpp"
#include "poreforge/io.hpp"
#include "poreforge/memory.hpp"
#include "support/cli.hpp"
#include "support/random.hpp"

using namespace poreforge;
namespace fs = std::filesystem;

using testing::check_error;
using testing::Workspace;

namespace {

testing::CliResult run(const std::string& args, const std::string& streams = "2>&1") {
  return testing::run_cli(args, streams);
}

}  // namespace

TEST_CASE("cli.thickness.writes_results") {
  Workspace ws;
  REQUIRE(run("generate blobs --shape 32,24,20 --porosity 0.45 --seed 5 -o " + ws / "in.h5").status == 0);
  const testing::CliResult r = run("thickness " + ws / "in.h5" + " -o " + ws / "out.h5 --bins 6 --boundary periodic");
  CAPTURE(r.output);
  REQUIRE(r.status == 0);
  // auto runs an image this small on the CPU, GPU or not, and says why.
  CHECK(r.output.find("backend   cpu") != std::string::npos);
  CHECK(r.output.find("(auto: ") != std::string::npos);
  CHECK(r.output.find("computed in") != std::string::npos);
  const LabelImage lt = read_hdf5(ws / "out.h5", "/thickness");
  CHECK(lt.shape == Shape{32, 24, 20});
  CHECK(lt.dtype == DType::f32);
  CHECK(read_hdf5(ws / "in.h5", "").shape == lt.shape);
  CHECK(ws.holds_only({"in.h5", "out.h5"}));

  // Existing output: refused, untouched; --force replaces it.
  const auto before = fs::last_write_time(ws / "out.h5");
  check_error(("thickness " + ws / "in.h5" + " -o " + ws / "out.h5"), "already exists");
  CHECK(fs::last_write_time(ws / "out.h5") == before);
  CHECK(run("thickness " + ws / "in.h5" + " -o " + ws / "out.h5 --force --diameter --log-bins").status == 0);
}

// Several inputs in one process: one file each in the -o folder, the same map as one at a
// time; every output checked before the first image is measured.
TEST_CASE("cli.thickness.several_inputs") {
  Workspace ws;
  for (const char* seed : {"1", "2", "3"})
    REQUIRE(run("generate blobs --shape 24,20,16 --porosity 0.4 --seed " + std::string(seed) + " -o " + ws / "b" +
                seed + ".h5")
                .status == 0);
  const std::string inputs = ws / "b1.h5" + " " + ws / "b2.h5" + " " + ws / "b3.h5";
  const testing::CliResult r = run("thickness " + inputs + " -o " + ws / "maps" + " --backend cpu");
  CAPTURE(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("[3/3] ") != std::string::npos);
  CHECK(r.output.find("wrote 3 files to") != std::string::npos);
  REQUIRE(run("thickness " + ws / "b2.h5" + " -o " + ws / "one.h5 --backend cpu").status == 0);
  CHECK(read_hdf5(ws / "maps/b2.h5", "/thickness").bytes == read_hdf5(ws / "one.h5", "/thickness").bytes);
  CHECK(read_hdf5(ws / "maps/b3.h5", "/thickness").shape == Shape{24, 20, 16});
  // An existing output stops the batch before any image: nothing rewritten.
  const auto before = fs::last_write_time(ws / "maps/b1.h5");
  REQUIRE(fs::remove(ws / "maps/b3.h5"));
  check_error("thickness " + inputs + " -o " + ws / "maps", "maps/b1.h5' already exists (use --force");
  CHECK(fs::last_write_time(ws / "maps/b1.h5") == before);
  CHECK(!fs::exists(ws / "maps/b3.h5"));
  // Two inputs of one name, and a file where the folder should be.
  REQUIRE(fs::create_directories(ws / "sub"));
  fs::copy_file(ws / "b1.h5", ws / "sub/b1.h5");
  check_error("thickness " + ws / "b1.h5" + " " + ws / "sub/b1.h5" + " -o " + ws / "other", "would both write");
  check_error("thickness " + inputs + " -o " + ws / "one.h5", "is a file: with several inputs -o names a folder");
  check_error("thickness " + inputs + " -o " + ws / "new.h5", "with several inputs -o names a folder");
  CHECK(!fs::exists(ws / "new.h5"));
  // A missing input stops the batch before the first image; an output that is an input is
  // refused even with --force.
  check_error("thickness " + inputs + " " + ws / "nope.h5" + " -o " + ws / "fresh", "nope.h5' does not exist");
  CHECK(!fs::exists(ws / "fresh"));
  check_error("thickness " + ws / "b1.h5" + " " + ws / "b2.h5" + " -o " + ws.dir.string() + " --force",
              "is the input");
  check_error("thickness " + ws / "b1.h5" + " -o " + ws / "b1.h5 --force", "is the input");
  CHECK(read_hdf5(ws / "b1.h5", "").dtype == DType::u8);
  CHECK(run("thickness " + inputs + " -o " + ws / "maps --force --backend cpu").status == 0);
}

TEST_CASE("cli.thickness.bad_input") {
  Workspace ws;
  write_raw(ws / "m.raw", generate_noise({10, 10, 10}, 0.5, 1));
  write_raw(ws / "full.raw", Mask({10, 10, 10}, {}, 1));
  std::ofstream(ws / "junk.h5") << "garbage";
  const std::string out = " -o " + ws / "out.h5";

  SUBCASE("missing file") { check_error(("thickness " + ws / "nope.h5" + out), "does not exist"); }
  SUBCASE("corrupt file") { check_error(("thickness " + ws / "junk.h5" + out), "not an HDF5 file"); }
  SUBCASE("raw without shape") { check_error(("thickness " + ws / "m.raw" + out), "--shape"); }
  SUBCASE("raw size mismatch") {
    check_error(("thickness " + ws / "m.raw --shape 10,10,11" + out), "needs 1100 bytes");
  }
  SUBCASE("unknown label") {
    check_error(("thickness " + ws / "m.raw --shape 10,10,10 --phase 3" + out), "label 3 does not occur");
  }
  SUBCASE("no background with open boundary") {
    check_error(("thickness " + ws / "full.raw --shape 10,10,10" + out), "fills the whole volume");
  }
  SUBCASE("empty phase") {
    check_error(("thickness " + ws / "full.raw --shape 10,10,10 --phase 0" + out), "does not occur");
  }
  SUBCASE("bad spacing") {
    check_error(("thickness " + ws / "m.raw --shape 10,10,10 --spacing 1,0,1" + out), "spacing");
    check_error(("thickness " + ws / "m.raw --shape 10,10,10 --spacing 1,x,1" + out), "not a number");
  }
  SUBCASE("bad edges") {
    check_error(("thickness " + ws / "m.raw --shape 10,10,10 --edges 1,3,2" + out), "strictly increasing");
  }
  SUBCASE("missing output directory") {
    check_error(("thickness " + ws / "m.raw --shape 10,10,10 -o " + ws / "no/such/dir/out.h5"),
                "does not exist");
  }
  CHECK_FALSE(fs::exists(ws / "out.h5"));
  CHECK(ws.holds_only({"m.raw", "full.raw", "junk.h5"}));
}

TEST_CASE("cli.info_and_generate") {
  Workspace ws;
  REQUIRE(run("generate spheres --shape 30,30,30 --porosity 0.5 --radius 3 --seed 2 -o " + ws / "s.h5").status == 0);
  const testing::CliResult r = run("info " + ws / "s.h5");
  CAPTURE(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("30x30x30") != std::string::npos);
  CHECK(r.output.find("u8") != std::string::npos);
  check_error(("generate blobs --shape 10,10,10 --porosity 1.5 -o " + ws / "b.h5"), "porosity");
  CHECK_FALSE(fs::exists(ws / "b.h5"));
  check_error(("generate blobs --shape 10,0,10 -o " + ws / "b.h5"), "--shape");
}

TEST_CASE("cli.describe") {
  Workspace ws;
  REQUIRE(run("generate blobs --shape 24,20,16 --porosity 0.4 --seed 3 -o " + ws / "in.h5").status == 0);
  const testing::CliResult r = run("describe " + ws / "in.h5 -o " + ws / "desc.h5 --bins 5 --backend cpu");
  CAPTURE(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("porosity 0.4000") != std::string::npos);
  H5::H5File file(ws / "desc.h5", H5F_ACC_RDONLY);
  auto vector = [&](const std::string& name) {
    const H5::DataSet ds = file.openDataSet(name);
    std::vector<double> v(static_cast<std::size_t>(ds.getSpace().getSimpleExtentNpoints()));
    ds.read(v.data(), H5::PredType::NATIVE_DOUBLE);
    return v;
  };
  const double porosity = double(count_phase(phase_mask(read_hdf5(ws / "in.h5", ""), 1))) / (24.0 * 20 * 16);
  CHECK(vector("/s2/radial/s2").front() == doctest::Approx(porosity));
  CHECK(vector("/s2/directional/z").size() == 9);
  for (const char* phase : {"/psd/pore/fraction", "/psd/solid/fraction"}) {
    double sum = 0;
    for (double f : vector(phase)) sum += f;
    CHECK(sum == doctest::Approx(1.0));
  }
  CHECK(vector("/psd/solid/edges").size() == 6);
  file.close();
  // A descriptor dataset is 1D: reading one as an image is refused with its rank.
  CHECK_THROWS_WITH_AS(read_hdf5(ws / "desc.h5", "/s2/radial/s2"), doctest::Contains("rank 1"), InputError);
  check_error("describe " + ws / "in.h5 -o " + ws / "desc.h5", "already exists");
  check_error("describe " + ws / "in.h5 -o " + ws / "d2.h5 --phase 5", "label 5 does not occur");
  CHECK(ws.holds_only({"in.h5", "desc.h5"}));
}

TEST_CASE("cli.morph") {
  Workspace ws;
  write_raw(ws / "m.raw", generate_noise({20, 16, 1}, 0.5, 4));
  const testing::CliResult r = run("morph " + ws / "m.raw --shape 20,16,1 --op dilate --element box:3x3 --iterations 2 -o " +
                       ws / "d.h5");
  CAPTURE(r.output);
  REQUIRE(r.status == 0);
  CHECK(read_hdf5(ws / "d.h5", "").shape == Shape{20, 16, 1});
  REQUIRE(run("morph " + ws / "m.raw --shape 20,16,1 --op close --element ball:1.5 -o " + ws / "c.raw").status == 0);
  CHECK(read_raw(ws / "c.raw", {20, 16, 1}, DType::u8).bytes.size() == 320);
  check_error("morph " + ws / "m.raw --shape 20,16,1 --op erode --element box:0x3 -o " + ws / "e.h5", "box sizes");
  check_error("morph " + ws / "m.raw --shape 20,16,1 --op erode --element disk:3 -o " + ws / "e.h5", "expected box");
  check_error("morph " + ws / "m.raw --shape 20,16,1 --op erode --element box:3x3 -o " + ws / "d.h5", "already exists");
  CHECK(ws.holds_only({"m.raw", "d.h5", "c.raw"}));
}

TEST_CASE("cli.help_and_version") {
  // Help and version are not errors: printed in full, exit 0, while a parse error is one
  // line and exit 2 (the bad-input table).
  const testing::CliResult help = testing::run_cli("--help");
  CHECK(help.status == 0);
  CHECK(help.output.find("thickness") != std::string::npos);
  const testing::CliResult sub = testing::run_cli("thickness --help");
  CHECK(sub.status == 0);
  CHECK(sub.output.find("--log-bins") != std::string::npos);
  const testing::CliResult version = testing::run_cli("--version");
  CHECK(version.status == 0);
  CHECK(version.output.rfind("poreforge ", 0) == 0);
}

TEST_CASE("cli.out_of_memory_names_the_size") {
  // An address-space limit below what generate needs, while MemAvailable says it fits: the
  // allocation fails, and the one line names the estimate instead of a bare "out of memory".
  if (host_memory_available() < 2e9) return;  // refused up front there, which the table tests
  Workspace ws;
  const std::string cmd = "ulimit -v 400000; " + std::string(POREFORGE_CLI) + " generate blobs --shape 500,500,500 -o " +
                          ws / "g.h5" + " 2>&1 >/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe);
  std::string out;
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  CAPTURE(out);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 3);
  CHECK(out.rfind("poreforge: error: out of memory during generate blobs of 500x500x500 (estimated 1.25 GB", 0) == 0);
  CHECK(std::count(out.begin(), out.end(), '\n') == 1);
  CHECK(ws.holds_only({}));
}

TEST_CASE("cli.generate.porosity_missed_is_said") {
  // One sphere of radius 10 covers a 10³ volume: written (spheres overshoot by design), but a
  // warning says the porosity is not what was asked.
  Workspace ws;
  const testing::CliResult r =
      testing::run_cli("generate spheres --shape 10,10,10 --radius 10 -o " + ws / "s.h5", "2>&1 >/dev/null");
  CAPTURE(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.rfind("poreforge: warning: porosity 0.0000 where 0.4 was asked", 0) == 0);
}

TEST_CASE("cli.compare") {
  Workspace ws;
  // A 48³ blobs "reference" and a 20³ "reconstruction" of much finer blobs, far from the
  // reference's sub-volumes on most measures.
  REQUIRE(run("generate blobs --shape 48,48,48 --porosity 0.3 --seed 4 -o " + ws / "ref.h5").status == 0);
  REQUIRE(run("generate blobs --shape 20,20,20 --porosity 0.3 --blobiness 4 --seed 5 -o " + ws / "noise.h5").status == 0);
  const testing::CliResult r = run("compare " + ws / "noise.h5 --reference " + ws / "ref.h5 --subvolumes 4 --backend cpu -o " +
                                   ws / "report.json");
  CAPTURE(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("formation_factor_x") != std::string::npos);
  CHECK(r.output.find("outside the real range on ") != std::string::npos);
  std::ifstream in(ws / "report.json");
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(json.find("\"subvolume_corners\": [[") != std::string::npos);
  CHECK(json.find("\"name\": \"euler_density\"") != std::string::npos);
  CHECK(json.find("\"typical_real_outside\"") != std::string::npos);
  // The same corners from the same seed: the same table twice.
  const std::string args = "compare " + ws / "noise.h5 --reference " + ws / "ref.h5 --subvolumes 4 --backend cpu";
  const testing::CliResult first = run(args, "2>/dev/null"), second = run(args, "2>/dev/null");
  CHECK(first.status == 0);
  CHECK(first.output == second.output);
  // A reference of the reconstruction's own shape: side by side, nothing judged.
  const testing::CliResult alone = run("compare " + ws / "noise.h5 --reference " + ws / "noise.h5 --backend cpu");
  CHECK(alone.status == 0);
  CHECK(alone.output.find("compared with it alone") != std::string::npos);
  CHECK(ws.holds_only({"ref.h5", "noise.h5", "report.json"}));
}

TEST_CASE("cli.describe.measures") {
  Workspace ws;
  REQUIRE(run("generate blobs --shape 24,20,16 --porosity 0.4 --seed 3 -o " + ws / "in.h5").status == 0);
  const testing::CliResult r = run("describe " + ws / "in.h5 -o " + ws / "d.h5 --bins 5 --backend cpu --measures");
  CAPTURE(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("formation_factor_x") != std::string::npos);
  const double porosity = double(count_phase(phase_mask(read_hdf5(ws / "in.h5", ""), 1))) / (24.0 * 20 * 16);
  CHECK(read_hdf5_vector(ws / "d.h5", "/measures/porosity").front() == doctest::Approx(porosity));
  // The measures' PSD shares the pore PSD's bins: its curve has as many points as bins.
  CHECK(read_hdf5_vector(ws / "d.h5", "/measures/curves/pore_psd/y").size() == 5);
  // The file is a run's target for the Euler and surface terms: its specific surface is the
  // density the surface term aims at from the image itself (`compare`'s estimate, the cells cut
  // by the box's faces counted in part: near, not equal).
  const anneal::Targets described = anneal::Targets::from_descriptor_file(ws / "d.h5");
  CHECK(described.surface_density == read_hdf5_vector(ws / "d.h5", "/measures/specific_surface").front());
  const anneal::Targets direct =
      anneal::Targets::from_image(phase_mask(read_hdf5(ws / "in.h5", ""), 1), Boundary::open, 5, false, Backend::cpu);
  CHECK(described.surface_density == doctest::Approx(direct.surface_density).epsilon(0.05));
  CHECK(std::isfinite(described.euler_density));
  // --permeability belongs to --measures.
  CHECK(run("describe " + ws / "in.h5 -o " + ws / "e.h5 --permeability on", "2>&1 >/dev/null").status == 2);
  CHECK(ws.holds_only({"in.h5", "d.h5"}));
}
