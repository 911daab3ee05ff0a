// The bad-input table: every way a user was seen to feed poreforge something wrong, with what
// must happen — the exit status, words the one `poreforge: error:` line must hold, and no
// file left behind or changed. One row a case; the table grows with each case found.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <tuple>
#include <string>
#include <vector>

#include <H5Cpp.h>
#include <unistd.h>
#ifdef POREFORGE_HAVE_TIFF
#include <tiffio.h>
#endif

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

// An HDF5 file with one u8 dataset /volume of `dims` ([nz][ny][nx]) that is never written: a
// file of a few kB declaring as much as it likes. Chunked (no storage until written) or
// contiguous (the storage is never allocated).
void declaring_hdf5(const std::string& path, std::vector<hsize_t> dims, bool chunked) {
  H5::H5File file(path, H5F_ACC_TRUNC);
  H5::DSetCreatPropList props;
  if (chunked) {
    const hsize_t chunk[3] = {64, 64, 64};
    props.setChunk(3, chunk);
    props.setDeflate(4);
  }
  file.createDataSet("/volume", H5::PredType::STD_U8LE, H5::DataSpace(3, dims.data()), props);
}

// A 10³ HDF5 image with a `spacing` attribute of the given type and values.
void hdf5_with_spacing(const std::string& path, const std::function<void(H5::DataSet&)>& add_spacing) {
  const Mask m = generate_noise({10, 10, 10}, 0.4, 1);
  H5::H5File file(path, H5F_ACC_TRUNC);
  const hsize_t dims[3] = {10, 10, 10};
  H5::DataSet ds = file.createDataSet("/volume", H5::PredType::STD_U8LE, H5::DataSpace(3, dims));
  ds.write(m.data(), H5::PredType::NATIVE_UINT8);
  add_spacing(ds);
}

// A 210-byte uncompressed TIFF whose one page declares 60000x60000 pixels in a 100-byte strip.
void declaring_tiff(const std::string& path) {
  std::string b = std::string("II*\0", 4);
  auto u16 = [&](uint16_t v) { b += char(v & 0xff), b += char(v >> 8); };
  auto u32 = [&](uint32_t v) { u16(uint16_t(v & 0xffff)), u16(uint16_t(v >> 16)); };
  u32(8);
  u16(8);  // entries: tag, type (3 short, 4 long), count, value
  for (auto [tag, type, value] : std::vector<std::tuple<uint16_t, uint16_t, uint32_t>>{
           {256, 4, 60000}, {257, 4, 60000}, {258, 3, 8}, {259, 3, 1}, {262, 3, 1}, {273, 4, 110}, {278, 4, 60000},
           {279, 4, 100}}) {
    u16(tag), u16(type), u32(1);
    if (type == 3) u16(uint16_t(value)), u16(0);
    else u32(value);
  }
  u32(0);
  b += std::string(100, '\1');
  std::ofstream(path, std::ios::binary) << b;
}

// A 12-page stack cut where page 6's directory begins: pages 0–5 whole, the chain broken. Read
// page by page until the chain ends, it looked like a 6-slice stack.
void stack_cut_between_pages(const std::string& path) {
  write_tiff(path, generate_noise({16, 16, 12}, 0.4, 1));
#ifdef POREFORGE_HAVE_TIFF
  uint64_t cut = 0;
  {
    TIFF* tif = TIFFOpen(path.c_str(), "r");
    REQUIRE(tif);
    REQUIRE(TIFFSetDirectory(tif, 6));
    cut = TIFFCurrentDirOffset(tif);
    TIFFClose(tif);
  }
  fs::resize_file(path, cut);
#endif
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
      // Engine commands: sizes a file declares but does not hold, and memory.
      {"hdf5 declaring 20000^3 voxels", "thickness {ws}/big.h5 -o {ws}/out.h5", 2, "of memory; ",
       [](const Workspace& ws) { declaring_hdf5(ws / "big.h5", {20000, 20000, 20000}, true); }},
      {"hdf5 contiguous, never written", "info {ws}/empty.h5", 2, "does not hold them",
       [](const Workspace& ws) { declaring_hdf5(ws / "empty.h5", {100, 100, 100}, false); }},
      {"describe of a huge declared volume", "describe {ws}/big.h5 -o {ws}/out.h5", 2, "describe of 20000x20000x20000",
       [](const Workspace& ws) { declaring_hdf5(ws / "big.h5", {20000, 20000, 20000}, true); }},
      {"morph of a huge declared volume", "morph {ws}/big.h5 --op erode --element ball:1 -o {ws}/out.h5", 2,
       "morph of 20000x20000x20000",
       [](const Workspace& ws) { declaring_hdf5(ws / "big.h5", {20000, 20000, 20000}, true); }},
      {"generate at 30000^3", "generate blobs --shape 30000,30000,30000 -o {ws}/g.h5", 2, "needs about 270 TB of memory"},
      {"run on a 30000^3 domain", "run {ws}/huge.yaml --output {ws}/results", 2, "run on a 30000x30000x30000 domain",
       [](const Workspace& ws) {
         std::ofstream(ws / "huge.yaml") << "name: h\ntarget:\n  image: m.h5\ndomain:\n  shape: [30000, 30000, 30000]\n";
       }},
      // Engine commands: values accepted silently before.
      {"hdf5 spacing of two values", "info {ws}/s.h5", 2, "attribute 'spacing' holds 2 values",
       [](const Workspace& ws) {
         hdf5_with_spacing(ws / "s.h5", [](H5::DataSet& ds) {
           const hsize_t two = 2;
           const double v[2] = {1, 2};
           ds.createAttribute("spacing", H5::PredType::NATIVE_DOUBLE, H5::DataSpace(1, &two))
               .write(H5::PredType::NATIVE_DOUBLE, v);
         });
       }},
      {"hdf5 spacing as a string", "info {ws}/s.h5", 2, "attribute 'spacing' is not numeric",
       [](const Workspace& ws) {
         hdf5_with_spacing(ws / "s.h5", [](H5::DataSet& ds) {
           H5::StrType type(H5::PredType::C_S1, 5);
           ds.createAttribute("spacing", type, H5::DataSpace(H5S_SCALAR)).write(type, std::string("1,1,1"));
         });
       }},
      {"--log-bins with --edges", "thickness {ws}/m.h5 -o {ws}/out.h5 --edges 1,2,3 --log-bins", 2, "excludes"},
      {"--seed -1", "generate blobs --shape 8,8,8 --seed -1 -o {ws}/g.h5", 2, "--seed must be a non-negative integer"},
      {"run: seed -1", "run {ws}/run.yaml --set seed=-1 --output {ws}/results", 2, "seed must be a non-negative"},
      {"--blobiness 1e300", "generate blobs --shape 8,8,8 --blobiness 1e300 -o {ws}/g.h5", 2, "blobiness 1e+300"},
      {"--blobiness 1e-300", "generate blobs --shape 8,8,8 --blobiness 1e-300 -o {ws}/g.h5", 2, "wider than the volume"},
      {"spheres of radius 1e9", "generate spheres --shape 8,8,8 --radius 1e9 -o {ws}/g.h5", 2,
       "radius 1000000000 voxels exceeds"},
      {"--shape 1e30,1,1", "generate blobs --shape 1e30,1,1 -o {ws}/g.h5", 2, "above 32767"},
      {"--spacing 1e-320", "generate blobs --shape 8,8,8 --spacing 1e-320 -o {ws}/g.h5", 2, "must lie in [1e-30, 1e+30]"},
      {"--spacing 1e308", "thickness {ws}/m.h5 --spacing 1e308 -o {ws}/out.h5", 2, "invalid spacing 1e+308,1e+308,1e+308"},
      {"run: domain spacing 1e-320", "run {ws}/run.yaml --set domain.spacing=[1e-320,1,1] --output {ws}/results", 2,
       "domain.spacing must lie in [1e-30"},
      {"run: duplicate key", "run {ws}/dup.yaml --output {ws}/results", 2, "dup.yaml:6: domain appears twice (lines 4 and 6)",
       [](const Workspace& ws) {
         std::ofstream(ws / "dup.yaml") << "name: r\ntarget:\n  image: m.h5\ndomain:\n  shape: [8, 8, 8]\n"
                                           "domain:\n  shape: [6, 6, 6]\n";
       }},
      {"run: duplicate nested key", "run {ws}/dup.yaml --output {ws}/results", 2, "annealing.alpha appears twice",
       [](const Workspace& ws) {
         std::ofstream(ws / "dup.yaml") << "name: r\ntarget:\n  image: m.h5\nannealing:\n  alpha: 0.9\n  alpha: 0.5\n";
       }},
      // Engine commands: messages that name the problem.
      {"config that is one value", "run {ws}/s.yaml", 2, "the document must be a mapping of keys",
       [](const Workspace& ws) { std::ofstream(ws / "s.yaml") << "just words\n"; }},
      {"config that is a list", "run {ws}/s.yaml --set seed=3", 2, "not a list",
       [](const Workspace& ws) { std::ofstream(ws / "s.yaml") << "- name: r\n- seed: 2\n"; }},
      {"directory as input", "thickness {ws}/d.h5 -o {ws}/out.h5", 2, "is a directory",
       [](const Workspace& ws) { fs::create_directory(ws / "d.h5"); }},
      {"directory as config", "run {ws}", 2, "is a directory"},
      {"output into /proc", "thickness {ws}/m.h5 -o /proc/self/out.h5", 2, "cannot write '/proc/self/out.h5': No such"},
      {"morph output into /proc", "morph {ws}/m.h5 --op erode --element ball:1 -o /proc/self/out.raw", 2,
       "cannot write '/proc/self/out.raw': "},
      {"descriptors that are an image", "run {ws}/desc.yaml --output {ws}/results", 2, "is not a descriptor file",
       [](const Workspace& ws) {
         {
           OutputFile f(ws / "g.h5", false);  // an image with a porosity attribute, as generate writes
           f.write_volume("/volume", generate_noise({8, 8, 8}, 0.4, 1));
           f.set_attribute("porosity", 0.4);
           f.commit();
         }
         std::ofstream(ws / "desc.yaml") << "name: r\ntarget:\n  descriptors: g.h5\n";
       }},
      {"-o ''", "thickness {ws}/m.h5 -o ''", 2, "the output path is empty"},
      {"generate -o ''", "generate blobs --shape 8,8,8 -o ''", 2, "the output path is empty"},
      {"parse error on one line", "thickness {ws}/m.h5 -o {ws}/out.h5 --bogus", 2, "not expected: --bogus (see --help)"},
      {"missing required option", "thickness {ws}/m.h5", 2, "--output is required"},
      {"range printed short", "run {ws}/run.yaml --max-seconds -1", 2, "1.797693135e+308"},
      {"run: missing config says so", "run {ws}/nope.yaml", 2, "config '{ws}/nope.yaml' does not exist"},
      // Run, resume and sweep.
      {"run: missing config", "run {ws}/nope.yaml", 2, "nope.yaml"},
  };
  // TIFF rows need a build with libtiff.
  static const std::vector<BadInput> tiff_rows = {
      {"tiff declaring 60000x60000 in 210 bytes", "info {ws}/big.tif", 2, "beyond the end of the file (210 bytes)",
       [](const Workspace& ws) { declaring_tiff(ws / "big.tif"); }},
      {"tiff stack cut between pages", "info {ws}/cut.tif", 2, "is truncated: page 6 cannot be read after 6 pages",
       [](const Workspace& ws) { stack_cut_between_pages(ws / "cut.tif"); }},
      {"tiff stack cut inside a page", "info {ws}/cut.tif", 2, "truncated",
       [](const Workspace& ws) {
         write_tiff(ws / "cut.tif", generate_noise({16, 16, 12}, 0.4, 1));
         fs::resize_file(ws / "cut.tif", fs::file_size(ws / "cut.tif") * 2 / 3);
       }},
  };
  static const std::vector<BadInput> all = [] {
    std::vector<BadInput> v = rows;
    if (tiff_supported()) v.insert(v.end(), tiff_rows.begin(), tiff_rows.end());
    return v;
  }();
  return all;
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
