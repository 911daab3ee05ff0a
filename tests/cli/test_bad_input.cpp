// The bad-input table: every way a user was seen to feed poreforge something wrong, with what
// must happen — the exit status, words the one `poreforge: error:` line must hold, and no
// file left behind or changed. One row a case; the table grows with each case found.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
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

// A raw u8 image `name` of `voxels` voxels holding the labels 0 … labels − 1 in turn.
void cycling_labels(const Workspace& ws, const std::string& name, std::size_t voxels, int labels) {
  std::vector<char> bytes(voxels);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = char(i % std::size_t(labels));
  std::ofstream(ws / name, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
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

const char* kCheckpoint10 = "{ws}/results/r/checkpoints/evaluation-000000000010.h5";

void sweep_file(const Workspace& ws, const std::string& body) {
  std::ofstream(ws / "sweep.yaml") << "base: run.yaml\noutput: " << ws / "results" << "\n" << body;
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
      {"run: connect and planting together",
       "run {ws}/run.yaml --set initial.structure=blobs --set initial.connect=true --set initial.plant_large_pores=true "
       "--output {ws}/results",
       2, "connect and plant_large_pores both on: they exclude each other"},
      {"run: chords on another grid than the reference's",
       "run {ws}/run.yaml --set descriptors.weights.chords=1 --set domain.spacing=[2,2,2] --output {ws}/results", 2,
       "a chords weight needs the domain's spacing equal to the reference's"},
      {"run: grains larger than the domain",
       "run {ws}/run.yaml --set initial.structure=grains --set initial.grain_radius=1000 --output {ws}/results", 2,
       "grains of radius 1000 voxels leave no pore"},
      {"run: a negative Euler weight", "run {ws}/run.yaml --set descriptors.weights.euler=-1 --output {ws}/results", 2,
       "descriptors.weights.euler must lie in"},
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
      {"range printed short", "run {ws}/run.yaml --max-seconds -1", 2, "Value -1 not in range"},
      {"run: missing config says so", "run {ws}/nope.yaml", 2, "config '{ws}/nope.yaml' does not exist"},
      // compare: shapes that do not fit, images that are not pore/solid, outputs that exist.
      {"compare: a reference declaring 20000^3 voxels", "compare {ws}/m.h5 --reference {ws}/big.h5", 2,
       "compare: reading the reference (20000x20000x20000)",
       [](const Workspace& ws) { declaring_hdf5(ws / "big.h5", {20000, 20000, 20000}, true); }},
      {"compare: reconstruction larger than the reference", "compare {ws}/big.h5 --reference {ws}/m.h5", 2,
       "does not fit inside the reference",
       [](const Workspace& ws) {
         OutputFile f(ws / "big.h5", false);
         f.write_volume("/volume", generate_noise({12, 10, 10}, 0.4, 2));
         f.commit();
       }},
      {"compare: a reference of three labels", "compare {ws}/m.h5 --reference {ws}/l.raw --reference-shape 10,10,10", 2,
       "is not a binary image (labels 0, 1, 2",
       [](const Workspace& ws) { cycling_labels(ws, "l.raw", 1000, 3); }},
      {"compare: a reconstruction all pore", "compare {ws}/full.raw --shape 10,10,10 --reference {ws}/m.h5", 2,
       "is all phase",
       [](const Workspace& ws) { write_raw(ws / "full.raw", Mask({10, 10, 10}, {}, 1)); }},
      {"compare: a phase that does not occur", "compare {ws}/m.h5 --phase 7 --reference {ws}/m.h5", 2,
       "the reconstruction '{ws}/m.h5' has no voxel of label 7 (labels present: 0, 1)"},
      {"compare: permeability on voxels that are not cubes",
       "compare {ws}/m.h5 --reference {ws}/m.h5 --spacing 1,1,2 --reference-spacing 1,1,2 --permeability on", 2,
       "the permeability needs cubic voxels"},
      {"compare: a permeability tolerance of 0",
       "compare {ws}/m.h5 --reference {ws}/m.h5 --permeability on --permeability-tolerance 0", 2,
       "--permeability-tolerance"},
      {"describe: a permeability tolerance without the measures",
       "describe {ws}/m.h5 -o {ws}/d.h5 --permeability-tolerance 1e-4", 2, "--permeability-tolerance requires --measures"},
      {"describe: permeability on voxels that are not cubes",
       "describe {ws}/m.h5 -o {ws}/d.h5 --spacing 1,1,2 --measures --permeability on", 2,
       "the permeability needs cubic voxels"},
      {"describe: the realism measures of an image of 256 labels", "describe {ws}/g.raw --shape 16,16,16 -o {ws}/d.h5 --measures", 2,
       "the image '{ws}/g.raw' is not a binary image (labels 0, 1, 2, …)",
       [](const Workspace& ws) { cycling_labels(ws, "g.raw", 4096, 256); }},
      {"compare: --seed -1", "compare {ws}/m.h5 --reference {ws}/m.h5 --seed -1", 2, "--seed must be a non-negative"},
      {"compare: the report is a directory", "compare {ws}/m.h5 --reference {ws}/m.h5 -o {ws}", 2, "is a directory"},
      {"compare: voxels of another size", "compare {ws}/m.h5 --spacing 2 --reference {ws}/m.h5", 2,
       "are not the reference's"},
      {"describe: an unknown length unit", "describe {ws}/m.h5 -o {ws}/d.h5 --measures --length-unit furlong", 2,
       "'furlong' is not a length unit"},
      {"resume: a checkpoint outside a run folder", "resume {ws}/loose/evaluation-000000000010.h5", 2,
       "is not a poreforge run folder",
       [](const Workspace& ws) {
         finished_run(ws);
         fs::create_directories(ws / "loose");
         fs::copy_file(expand(kCheckpoint10, ws), ws / "loose/evaluation-000000000010.h5");
       }},
      {"compare: the report exists", "compare {ws}/m.h5 --reference {ws}/m.h5 -o {ws}/run.yaml", 2,
       "already exists (use --force"},
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
    // No number in an error line runs to 16 digits (CLI11 writes a double's range as 309).
    std::string line = r.output;  // without the workspace's path, whose name is a long number
    for (std::size_t at; (at = line.find(ws.dir.string())) != std::string::npos;) line.replace(at, ws.dir.string().size(), "{ws}");
    CHECK_FALSE(std::regex_search(line, std::regex("[0-9]{16,}")));
    CHECK(listing(ws.dir) == before);  // nothing written, nothing removed, nothing changed
  }
}
