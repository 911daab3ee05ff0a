// File round trips, real data and bad files.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "poreforge/edt.hpp"
#include "poreforge/error.hpp"
#include "poreforge/generators.hpp"
#include "poreforge/io.hpp"
#include "poreforge/local_thickness.hpp"
#include "support/random.hpp"

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
