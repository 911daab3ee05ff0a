// File round trips, real data and bad files.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "poreforge/edt.hpp"
#include "poreforge/error.hpp"
#include "poreforge/generators.hpp"
#include "poreforge/io.hpp"
#include "poreforge/local_thickness.hpp"
#include "poreforge/memory.hpp"
#include "support/random.hpp"

#include <H5Cpp.h>

#ifdef POREFORGE_HAVE_TIFF
#include <tiffio.h>
#endif

using namespace poreforge;
namespace fs = std::filesystem;

namespace {

// A fresh temporary directory, removed afterwards.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("poreforge-test-" + std::to_string(testing::fresh_seed()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

}  // namespace

TEST_CASE("io.hdf5_round_trip") {
  TempDir dir;
  const uint64_t seed = testing::fresh_seed();
  Mask m = generate_noise({13, 7, 5}, 0.5, seed);
  m.set_spacing({0.5, 0.25, 2.0});
  {
    OutputFile out(dir / "a.h5", false);
    out.write_volume("/volume", m);
    out.set_provenance("test");
    CHECK_FALSE(fs::exists(dir / "a.h5"));  // nothing visible before commit
    out.commit();
  }
  const LabelImage back = read_hdf5(dir / "a.h5", "");
  CHECK(back.shape == m.shape());
  CHECK(back.spacing == m.spacing());
  CHECK(back.dtype == DType::u8);
  CHECK(phase_mask(back, 1).values() == m.values());
  CHECK_THROWS_WITH_AS(OutputFile(dir / "a.h5", false), doctest::Contains("already exists"), InputError);
}

TEST_CASE("io.uncommitted_output_leaves_nothing") {
  TempDir dir;
  {
    OutputFile out(dir / "b.h5", false);
    out.write_volume("/volume", Mask({4, 4, 4}));
  }  // destroyed without commit, as when a run fails
  CHECK(fs::is_empty(dir.path));
}

TEST_CASE("io.raw") {
  TempDir dir;
  const Mask m = generate_noise({9, 8, 7}, 0.3, testing::fresh_seed());
  write_raw(dir / "m.raw", m);
  const LabelImage back = read_raw(dir / "m.raw", {9, 8, 7}, DType::u8);
  CHECK(phase_mask(back, 1).values() == m.values());
  CHECK_THROWS_WITH_AS(read_raw(dir / "m.raw", {9, 8, 8}, DType::u8), doctest::Contains("needs 576 bytes"), InputError);
  CHECK_THROWS_WITH_AS(read_raw(dir / "m.raw", {9, 8, 7}, DType::u16), doctest::Contains("holds 504 bytes"),
                       InputError);
  CHECK_THROWS_WITH_AS(phase_mask(back, 7), doctest::Contains("labels present: 0, 1"), InputError);
}

TEST_CASE("io.bad_files") {
  TempDir dir;
  CHECK_THROWS_WITH_AS(read_image(dir / "missing.h5", {}), doctest::Contains("does not exist"), InputError);
  std::ofstream(dir / "junk.h5") << "this is not hdf5";
  CHECK_THROWS_WITH_AS(read_image(dir / "junk.h5", {}), doctest::Contains("not an HDF5 file"), InputError);
  std::ofstream(dir / "junk.tif") << "this is not a tiff";
  CHECK_THROWS_AS(read_image(dir / "junk.tif", {}), InputError);
  std::ofstream(dir / "x.xyz") << "?";
  CHECK_THROWS_WITH_AS(read_image(dir / "x.xyz", {}), doctest::Contains("--format"), InputError);
  // Truncated HDF5: the first half of a real file.
  {
    OutputFile out(dir / "full.h5", false);
    out.write_volume("/volume", generate_noise({32, 32, 32}, 0.5, 3));
    out.commit();
  }
  std::ifstream in(dir / "full.h5", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::ofstream(dir / "cut.h5", std::ios::binary).write(bytes.data(), std::streamsize(bytes.size() / 2));
  CHECK_THROWS_AS(read_image(dir / "cut.h5", {}), InputError);
}

#ifdef POREFORGE_HAVE_TIFF
TEST_CASE("io.tiff_stack") {
  TempDir dir;
  const Shape shape{11, 6, 4};
  std::vector<uint16_t> values(shape.voxels());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<uint16_t>((i * 7919) % 3 * 1000);
  {  // written with libtiff directly, page per z-slice, as micro-CT software does
    TIFF* tif = TIFFOpen((dir / "stack.tif").c_str(), "w");
    REQUIRE(tif);
    for (int64_t z = 0; z < shape.nz; ++z) {
      TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, uint32_t(shape.nx));
      TIFFSetField(tif, TIFFTAG_IMAGELENGTH, uint32_t(shape.ny));
      TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 16);
      TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 1);
      TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
      TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
      TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, 2);
      TIFFSetField(tif, TIFFTAG_SUBFILETYPE, FILETYPE_PAGE);
      for (int64_t y = 0; y < shape.ny; ++y)
        REQUIRE(TIFFWriteScanline(tif, values.data() + (z * shape.ny + y) * shape.nx, uint32_t(y), 0) == 1);
      TIFFWriteDirectory(tif);
    }
    TIFFClose(tif);
  }
  const LabelImage image = read_image(dir / "stack.tif", {});
  CHECK(image.shape == shape);
  CHECK(image.dtype == DType::u16);
  const Mask m = phase_mask(image, 2000);
  int64_t mismatches = 0;
  for (int64_t i = 0; i < shape.voxels(); ++i) mismatches += m[i] != (values[i] == 2000);
  CHECK(mismatches == 0);
}
#else
TEST_CASE("io.tiff_unsupported_build") {
  CHECK_FALSE(tiff_supported());
  CHECK_THROWS_WITH_AS(read_tiff("x.tif"), doctest::Contains("no TIFF support"), InputError);
}
#endif

TEST_CASE("io.berea_sample") {
  // The real Berea sandstone crop: 0 = pore. Largest LT equals the largest distance (the
  // deepest ball covers its own centre and no ball is larger), and the PSD sums to 1.
  const std::string path = POREFORGE_DATA_DIR "/berea_110.raw";
  REQUIRE_MESSAGE(fs::exists(path), "the Berea sample is missing at " << path);
  const LabelImage image = read_raw(path, {110, 110, 110}, DType::u8);
  const Mask pore = phase_mask(image, 0);
  CHECK(double(count_phase(pore)) / double(pore.voxels()) == doctest::Approx(0.178).epsilon(0.01));
  const auto dt = distance_transform(pore, Boundary::open, Backend::cpu);
  const auto lt = local_thickness(pore, Boundary::open, Backend::cpu);
  float dt_max = 0, lt_max = 0;
  int64_t below_dt = 0;
  for (int64_t i = 0; i < pore.voxels(); ++i) {
    dt_max = std::max(dt_max, dt[i]);
    lt_max = std::max(lt_max, lt[i]);
    below_dt += lt[i] < dt[i];
    if (pore[i]) below_dt += lt[i] <= 0;
  }
  CHECK(lt_max == dt_max);
  CHECK(below_dt == 0);
  const auto psd = pore_size_distribution(pore, Boundary::open, Bins::linear(0.0, double(lt_max), 12), Backend::cpu);
  double sum = 0;
  for (double f : psd.fraction) sum += f;
  CHECK(sum == doctest::Approx(1.0).epsilon(1e-12));
  CHECK(psd.cumulative.front() == 1.0);
}

TEST_CASE("memory.estimates_and_refusals") {
  // One figure per command per voxel, plus the input's element size.
  const Shape s{100, 100, 100};
  CHECK(thickness_memory(s, 1, {}, Boundary::open, Backend::cpu).host_bytes == 1e6 * (1 + memory_per_voxel::thickness_cpu));
  CHECK(thickness_memory(s, 2, {1, 1, 2}, Boundary::open, Backend::cpu).host_bytes ==
        1e6 * (2 + memory_per_voxel::thickness_cpu_anisotropic));
  CHECK(thickness_memory(s, 1, {}, Boundary::open, Backend::cpu, true).host_bytes == 1e6 * (1 + memory_per_voxel::describe_cpu));
  CHECK(thickness_memory(s, 1, {}, Boundary::open, Backend::cpu).device_bytes == 0);
  CHECK(generate_memory(s, true).host_bytes == 1e6 * memory_per_voxel::generate_blobs);
  CHECK(generate_memory(s, false).host_bytes == 1e6 * memory_per_voxel::generate_spheres);
  // compare: the formation factor's share grows with the pore, the permeability's lattice
  // comes on top, and on CUDA both sit on the device.
  const MemoryEstimate sparse = compare_memory(s, {}, 0.2, false, Backend::cpu);
  const MemoryEstimate dense = compare_memory(s, {}, 0.8, false, Backend::cpu);
  CHECK(dense.host_bytes - sparse.host_bytes ==
        doctest::Approx(1e6 * 0.6 * memory_per_voxel::formation_factor_cluster_cpu));
  // The lattice holds the fluid nodes only: its share grows with the pore too.
  CHECK(compare_memory(s, {}, 0.2, true, Backend::cpu).host_bytes - sparse.host_bytes ==
        doctest::Approx(1e6 * (memory_per_voxel::permeability_numbering + 0.2 * memory_per_voxel::permeability_pore)));
  CHECK(compare_memory(s, {}, 0.2, true, Backend::cuda).device_bytes -
            compare_memory(s, {}, 0.2, false, Backend::cuda).device_bytes ==
        doctest::Approx(1e6 * 0.2 * memory_per_voxel::permeability_pore));
  CHECK(sparse.device_bytes == 0);
  CHECK(morph_memory(s, 4, Backend::cpu).host_bytes == 1e6 * (4 + memory_per_voxel::morph_cpu));
  CHECK(run_memory(s, {}, Boundary::periodic, Backend::cpu).host_bytes == 1e6 * memory_per_voxel::run_cpu);
  CHECK(format_bytes(512) == "512 bytes");
  CHECK(format_bytes(2.7e14) == "270 TB");
  CHECK(format_bytes(21.3e9) == "21.3 GB");

  std::string source;
  const double available = host_memory_available(&source);
  CHECK(available > 0);
  CHECK(std::isfinite(available));
  CHECK(!source.empty());
  CHECK_NOTHROW(require_memory({"a small thing", 1000, 0}));
  CHECK_THROWS_WITH_AS(require_memory({"thickness of 30000x30000x30000", 4.6e14, 0}),
                       doctest::Contains("thickness of 30000x30000x30000 needs about 460 TB of memory; "), InputError);
  // Out-of-memory messages name a size: the allocation's, or else the last estimate's.
  CHECK(out_of_memory_message(3.6e9).find("3.6 GB") != std::string::npos);
  CHECK(out_of_memory_message().find("460 TB") != std::string::npos);
  if (!has_cuda_device()) CHECK(cuda_memory_available() == 0);
}

TEST_CASE("io.declared_size_checked_before_allocation") {
  TempDir dir;
  // A chunked dataset declaring 20000³ voxels in a few kB: the hook sees the declared shape
  // before anything is allocated, and refusing there ends the read.
  {
    H5::H5File file(dir / "big.h5", H5F_ACC_TRUNC);
    H5::DSetCreatPropList props;
    const hsize_t chunk[3] = {64, 64, 64}, dims[3] = {20000, 20000, 20000};
    props.setChunk(3, chunk);
    file.createDataSet("/volume", H5::PredType::STD_U8LE, H5::DataSpace(3, dims), props);
  }
  ReadOptions o;
  Shape seen;
  o.before_read = [&](const Shape& shape, DType, const Spacing&) {
    seen = shape;
    throw InputError("refused by the hook");
  };
  CHECK_THROWS_WITH_AS(read_image(dir / "big.h5", o), "refused by the hook", InputError);
  CHECK(seen == Shape{20000, 20000, 20000});
  o.shape = Shape{4, 4, 4};
  write_raw(dir / "m.raw", generate_noise({4, 4, 4}, 0.5, 1));
  CHECK_THROWS_WITH_AS(read_image(dir / "m.raw", o), "refused by the hook", InputError);
  CHECK(seen == Shape{4, 4, 4});
  // A directory is named as one.
  fs::create_directory(dir / "d.h5");
  CHECK_THROWS_WITH_AS(read_image(dir / "d.h5", {}), doctest::Contains("is a directory"), InputError);
  // Spacings a float map cannot carry.
  CHECK_THROWS_WITH_AS(validate_spacing({1e308, 1, 1}), doctest::Contains("1e+308"), InputError);
  CHECK_THROWS_AS(validate_spacing({1e-320, 1, 1}), InputError);
  CHECK_NOTHROW(validate_spacing({1e-6, 2.5, 1e6}));
}

TEST_CASE("io.length_units_and_root_spacing") {
  CHECK(unit_in_metres("micrometre") == 1e-6);
  CHECK(unit_in_metres("\u00b5m") == 1e-6);  // the micro sign
  CHECK(unit_in_metres("\u03bcm") == 1e-6);  // the Greek mu
  CHECK(unit_in_metres(" um  ") == 1e-6);    // padded, as fixed-length HDF5 strings are
  CHECK(unit_in_metres("Microns") == 1e-6);
  CHECK(unit_in_metres("MM") == 1e-3);
  CHECK(unit_in_metres("m") == 1);
  CHECK(unit_in_metres("furlong") == 0);
  CHECK(unit_in_metres("") == 0);
  // The Berea 400³ image keeps its spacing and unit on the root group, not on /volume.
  const LabelImage berea = read_hdf5(POREFORGE_DATA_DIR "/berea_400.h5", "/volume");
  CHECK(berea.spacing == Spacing{5.345, 5.345, 5.345});
  CHECK(berea.spacing_unit == "micrometre");
}
