#include "poreforge/durable_file.hpp"
#include "poreforge/error.hpp"
#include "poreforge/io.hpp"

#ifdef POREFORGE_HAVE_TIFF
#include <tiffio.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <vector>
#include <cstring>
#include <filesystem>
#include <unistd.h>
#include <memory>
#endif

namespace poreforge {

#ifndef POREFORGE_HAVE_TIFF

bool tiff_supported() { return false; }

LabelImage read_tiff(const std::string& path, const DeclaredImage&) {
  throw InputError("cannot read '" + path + "': this build has no TIFF support (libtiff was not found "
                   "when it was configured); convert the stack to HDF5 or raw");
}

void write_tiff(const std::string& path, const Mask&) {
  throw InputError("cannot write '" + path + "': this build has no TIFF support (libtiff was not found "
                   "when it was configured)");
}

#else

bool tiff_supported() { return true; }

namespace {

// libtiff reports through global handlers; keep its last message for our one-line error.
thread_local std::string tiff_message;

void on_tiff_error(const char* module, const char* fmt, va_list ap) {
  char buf[512];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  tiff_message = std::string(module ? module : "libtiff") + ": " + buf;
}

void on_tiff_warning(const char*, const char*, va_list) {}

struct TiffCloser {
  void operator()(TIFF* t) const { TIFFClose(t); }
};

DType page_dtype(TIFF* tif, const std::string& where) {
  uint16_t bits = 0, format = SAMPLEFORMAT_UINT, samples = 1;
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &format);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &samples);
  if (samples != 1)
    throw InputError(where + ": " + std::to_string(samples) + " samples per pixel; expected a grey-level stack");
  if (format == SAMPLEFORMAT_UINT && bits == 8) return DType::u8;
  if (format == SAMPLEFORMAT_UINT && bits == 16) return DType::u16;
  if (format == SAMPLEFORMAT_INT && bits == 32) return DType::i32;
  if (format == SAMPLEFORMAT_IEEEFP && bits == 32) return DType::f32;
  throw InputError(where + ": " + std::to_string(bits) + "-bit samples of format " + std::to_string(format) +
                   " are not supported (expected u8, u16, i32 or f32)");
}

// Reads the current page into `dst` (width × height samples of `size` bytes).
void read_page(TIFF* tif, unsigned char* dst, uint32_t width, uint32_t height, std::size_t size,
               const std::string& where) {
  const std::size_t row_bytes = width * size;
  if (TIFFIsTiled(tif)) {
    uint32_t tw = 0, th = 0;
    TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tw);
    TIFFGetField(tif, TIFFTAG_TILELENGTH, &th);
    std::vector<unsigned char> tile(TIFFTileSize(tif));
    for (uint32_t y0 = 0; y0 < height; y0 += th)
      for (uint32_t x0 = 0; x0 < width; x0 += tw) {
        if (TIFFReadTile(tif, tile.data(), x0, y0, 0, 0) < 0)
          throw InputError(where + ": " + tiff_message);
        for (uint32_t y = y0; y < std::min(height, y0 + th); ++y) {
          const uint32_t cols = std::min(width - x0, tw);
          std::memcpy(dst + y * row_bytes + x0 * size, tile.data() + (y - y0) * tw * size, cols * size);
        }
      }
    return;
  }
  for (uint32_t y = 0; y < height; ++y)
    if (TIFFReadScanline(tif, dst + y * row_bytes, y, 0) < 0) throw InputError(where + ": " + tiff_message);
}

// Every strip (or tile) of the current page must lie inside the file, and uncompressed ones
// must hold the page's bytes: a few-hundred-byte file that declares a 60000x60000 page is
// refused here, before the page is allocated.
void check_strips(TIFF* tif, uint64_t file_size, uint64_t page_bytes, const std::string& where) {
  const uint32_t count = TIFFIsTiled(tif) ? TIFFNumberOfTiles(tif) : TIFFNumberOfStrips(tif);
  uint16_t compression = COMPRESSION_NONE;
  TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
  uint64_t stored = 0;
  for (uint32_t i = 0; i < count; ++i) {
    int err = 0;
    const uint64_t offset = TIFFGetStrileOffsetWithErr(tif, i, &err);
    const uint64_t bytes = err ? 0 : TIFFGetStrileByteCountWithErr(tif, i, &err);
    if (err) throw InputError(where + ": cannot read where its data lies: " + tiff_message);
    if (offset > file_size || bytes > file_size - offset)
      throw InputError(where + ": its data (" + std::to_string(bytes) + " bytes at " + std::to_string(offset) +
                       ") lies beyond the end of the file (" + std::to_string(file_size) + " bytes): truncated?");
    stored += bytes;
  }
  // Tiles may pad the page; strips of an uncompressed page hold it exactly.
  if (compression == COMPRESSION_NONE && stored < page_bytes)
    throw InputError(where + ": declares " + std::to_string(page_bytes) + " bytes of uncompressed pixels, but its " +
                     "data holds " + std::to_string(stored) + " bytes");
}

}  // namespace

LabelImage read_tiff(const std::string& path, const DeclaredImage& before_read) {
  TIFFSetErrorHandler(on_tiff_error);
  TIFFSetWarningHandler(on_tiff_warning);
  tiff_message = "unreadable TIFF";
  std::unique_ptr<TIFF, TiffCloser> tif(TIFFOpen(path.c_str(), "r"));
  if (!tif) throw InputError("cannot read '" + path + "' as TIFF: " + tiff_message);
  std::error_code ec;
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  if (ec) throw InputError("cannot read '" + path + "': " + ec.message());
  // Pages the stack says it has: the chain of pages and, when written, page 0's PageNumber.
  const int64_t chained = TIFFNumberOfDirectories(tif.get());
  uint16_t page_number = 0, declared_pages = 0;
  TIFFGetField(tif.get(), TIFFTAG_PAGENUMBER, &page_number, &declared_pages);
  LabelImage image;
  uint32_t width = 0, height = 0;
  int64_t pages = 0;
  do {
    const std::string where = "'" + path + "' page " + std::to_string(pages);
    uint32_t w = 0, h = 0;
    TIFFGetField(tif.get(), TIFFTAG_IMAGEWIDTH, &w);
    TIFFGetField(tif.get(), TIFFTAG_IMAGELENGTH, &h);
    const DType t = page_dtype(tif.get(), where);
    if (pages == 0) {
      width = w;
      height = h;
      image.dtype = t;
    } else if (w != width || h != height || t != image.dtype) {
      throw InputError(where + " is " + std::to_string(w) + "x" + std::to_string(h) + " " + to_string(t) +
                       ", unlike page 0 (" + std::to_string(width) + "x" + std::to_string(height) + " " +
                       to_string(image.dtype) + ")");
    }
    const std::size_t size = dtype_size(t), page_bytes = std::size_t(w) * h * size;
    check_strips(tif.get(), file_size, page_bytes, where);
    if (pages == 0) {
      const Shape declared{int64_t(w), int64_t(h), std::max<int64_t>(chained, 1)};
      validate_shape(declared);
      if (before_read) before_read(declared, t, Spacing{});
      try {
        image.bytes.reserve(static_cast<std::size_t>(declared.voxels()) * size);
      } catch (const std::exception&) {
      }  // reserving is only a hint; the resize below names the size if it fails
    }
    allocate_bytes(image.bytes, image.bytes.size() + page_bytes, path);
    read_page(tif.get(), image.bytes.data() + pages * page_bytes, w, h, size, where);
    ++pages;
    if (TIFFLastDirectory(tif.get())) break;
    // A page the chain points to but that cannot be read: the file was cut short.
    if (!TIFFReadDirectory(tif.get()))
      throw InputError("'" + path + "' is truncated: page " + std::to_string(pages) + " cannot be read after " +
                       std::to_string(pages) + " pages (" + tiff_message + ")");
  } while (true);
  if (declared_pages > pages)
    throw InputError("'" + path + "' holds " + std::to_string(pages) + " pages, but its first page says the stack has " +
                     std::to_string(declared_pages) + ": truncated?");
  image.shape = {width, height, pages};
  validate_shape(image.shape);
  return image;
}

void write_tiff(const std::string& path, const Mask& mask) {
  TIFFSetErrorHandler(on_tiff_error);
  TIFFSetWarningHandler(on_tiff_warning);
  // This process's temporary, removed if the write fails part-way.
  const std::string temp = path + ".tmp-" + std::to_string(::getpid());
  struct RemoveUnlessCommitted {
    const std::string& temp;
    bool committed = false;
    ~RemoveUnlessCommitted() {
      std::error_code ec;
      if (!committed) std::filesystem::remove(temp, ec);
    }
  } guard{temp};
  {
    std::unique_ptr<TIFF, TiffCloser> tif(TIFFOpen(temp.c_str(), "w"));
    if (!tif) throw RuntimeError("cannot create '" + temp + "': " + tiff_message);
    const Shape s = mask.shape();
    for (int64_t z = 0; z < s.nz; ++z) {
      TIFFSetField(tif.get(), TIFFTAG_IMAGEWIDTH, uint32_t(s.nx));
      TIFFSetField(tif.get(), TIFFTAG_IMAGELENGTH, uint32_t(s.ny));
      TIFFSetField(tif.get(), TIFFTAG_BITSPERSAMPLE, 8);
      TIFFSetField(tif.get(), TIFFTAG_SAMPLESPERPIXEL, 1);
      TIFFSetField(tif.get(), TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
      TIFFSetField(tif.get(), TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
      TIFFSetField(tif.get(), TIFFTAG_COMPRESSION, COMPRESSION_DEFLATE);
      TIFFSetField(tif.get(), TIFFTAG_ROWSPERSTRIP, uint32_t(s.ny));
      TIFFSetField(tif.get(), TIFFTAG_SUBFILETYPE, FILETYPE_PAGE);
      TIFFSetField(tif.get(), TIFFTAG_PAGENUMBER, uint16_t(z), uint16_t(s.nz));
      std::vector<unsigned char> row(static_cast<std::size_t>(s.nx));
      for (int64_t y = 0; y < s.ny; ++y) {
        for (int64_t x = 0; x < s.nx; ++x) row[x] = mask(x, y, z);
        if (TIFFWriteScanline(tif.get(), row.data(), uint32_t(y), 0) != 1)
          throw RuntimeError("writing '" + temp + "': " + tiff_message);
      }
      if (!TIFFWriteDirectory(tif.get())) throw RuntimeError("writing '" + temp + "': " + tiff_message);
    }
  }
  commit_file(temp, path);
  guard.committed = true;
}

#endif

}  // namespace poreforge
