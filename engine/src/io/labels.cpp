#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "poreforge/durable_file.hpp"
#include "poreforge/error.hpp"
#include "poreforge/io.hpp"
#include "poreforge/memory.hpp"

namespace poreforge {

std::string to_string(DType t) {
  switch (t) {
    case DType::u8: return "u8";
    case DType::u16: return "u16";
    case DType::i32: return "i32";
    case DType::f32: return "f32";
  }
  return "?";
}

double unit_in_metres(const std::string& name) {
  // Trimmed (HDF5 fixed-length strings are padded), lower case, a plural 's' dropped; the
  // micro sign and the Greek mu both spell µ.
  std::string unit;
  for (char c : name)
    if (!std::isspace(static_cast<unsigned char>(c))) unit += char(std::tolower(static_cast<unsigned char>(c)));
  for (const char* mu : {"\u03bc", "\u00b5"})
    if (unit.rfind(mu, 0) == 0) unit = "u" + unit.substr(std::string(mu).size());
  if (unit.size() > 2 && unit.back() == 's') unit.pop_back();
  static const std::pair<const char*, double> units[] = {
      {"m", 1},       {"metre", 1},        {"meter", 1},        {"mm", 1e-3},       {"millimetre", 1e-3},
      {"millimeter", 1e-3}, {"um", 1e-6},  {"micron", 1e-6},    {"micrometre", 1e-6},
      {"micrometer", 1e-6}, {"nm", 1e-9},  {"nanometre", 1e-9}, {"nanometer", 1e-9}};
  for (const auto& [known, metres] : units)
    if (unit == known) return metres;
  return 0;
}

DType parse_dtype(std::string_view text) {
  if (text == "u8" || text == "uint8") return DType::u8;
  if (text == "u16" || text == "uint16") return DType::u16;
  if (text == "i32" || text == "int32") return DType::i32;
  if (text == "f32" || text == "float32") return DType::f32;
  throw InputError("unknown dtype '" + std::string(text) + "' (expected u8, u16, i32 or f32)");
}

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::u8: return 1;
    case DType::u16: return 2;
    case DType::i32:
    case DType::f32: return 4;
  }
  return 1;
}

double LabelImage::value(std::size_t i) const {
  const unsigned char* p = bytes.data() + i * dtype_size(dtype);
  switch (dtype) {
    case DType::u8: return *p;
    case DType::u16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::i32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::f32: { float v; std::memcpy(&v, p, 4); return v; }
  }
  return 0;
}

LabelCounts count_labels(const LabelImage& image, std::size_t max_labels) {
  LabelCounts out;
  const std::size_t n = static_cast<std::size_t>(image.shape.voxels());
  if (image.dtype == DType::u8) {  // the common case, without a map
    std::vector<int64_t> h(256, 0);
    for (std::size_t i = 0; i < n; ++i) ++h[image.bytes[i]];
    for (int v = 0; v < 256; ++v) {
      if (!h[v]) continue;
      if (out.counts.size() < max_labels) out.counts.emplace_back(v, h[v]);
      else out.truncated = true;
    }
    return out;
  }
  std::map<double, int64_t> counts;
  for (std::size_t i = 0; i < n; ++i) {
    const double v = image.value(i);
    auto it = counts.find(v);
    if (it != counts.end()) {
      ++it->second;
    } else if (counts.size() < max_labels) {
      counts.emplace(v, 1);
    } else {
      out.truncated = true;
    }
  }
  out.counts.assign(counts.begin(), counts.end());
  return out;
}

namespace {
std::string format_label(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}
}  // namespace

namespace {
// The mask of one element type, on every core: the per-voxel decode of LabelImage::value
// would cost more than the rest of a one-shot thickness run's host work.
template <typename T>
int64_t mark_label(const unsigned char* bytes, int64_t n, double label, uint8_t* mask) {
  int64_t hits = 0;
#pragma omp parallel for reduction(+ : hits)
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, bytes + i * int64_t(sizeof(T)), sizeof(T));
    const bool in = double(v) == label;
    mask[i] = in;
    hits += in;
  }
  return hits;
}
}  // namespace

Mask phase_mask(const LabelImage& image, double label) {
  Mask mask(image.shape, image.spacing);
  const int64_t n = image.shape.voxels();
  const unsigned char* bytes = image.bytes.data();
  int64_t hits = 0;
  switch (image.dtype) {
    case DType::u8: hits = mark_label<uint8_t>(bytes, n, label, mask.data()); break;
    case DType::u16: hits = mark_label<uint16_t>(bytes, n, label, mask.data()); break;
    case DType::i32: hits = mark_label<int32_t>(bytes, n, label, mask.data()); break;
    case DType::f32: hits = mark_label<float>(bytes, n, label, mask.data()); break;
  }
  if (hits == 0) {
    const LabelCounts present = count_labels(image, 16);
    std::string list;
    for (auto& [v, c] : present.counts) list += (list.empty() ? "" : ", ") + format_label(v);
    if (present.truncated) list += ", ...";
    throw InputError("label " + format_label(label) + " does not occur in the image (labels present: " +
                     list + ")");
  }
  return mask;
}

void allocate_bytes(std::vector<unsigned char>& bytes, std::size_t count, const std::string& path) {
  try {
    bytes.resize(count);
  } catch (const std::bad_alloc&) {
    throw RuntimeError(out_of_memory_message(double(count)) + " for the voxels of '" + path + "'");
  } catch (const std::length_error&) {
    throw RuntimeError(out_of_memory_message(double(count)) + " for the voxels of '" + path + "'");
  }
}

namespace {
std::string extension_of(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}
}  // namespace

LabelImage read_image(const std::string& path, const ReadOptions& options) {
  if (path.empty()) throw InputError("the input path is empty");
  if (!std::filesystem::exists(path)) throw InputError("input file '" + path + "' does not exist");
  if (std::filesystem::is_directory(path))
    throw InputError("input '" + path + "' is a directory, not an image file");
  std::string format = options.format;
  if (format == "auto") {
    const std::string ext = extension_of(path);
    if (ext == ".h5" || ext == ".hdf5" || ext == ".hdf") format = "hdf5";
    else if (ext == ".raw" || ext == ".bin" || ext == ".dat") format = "raw";
    else if (ext == ".tif" || ext == ".tiff") format = "tiff";
    else
      throw InputError("cannot tell the format of '" + path + "' from its extension '" + ext +
                       "' (use --format hdf5|raw|tiff)");
  }
  if (format == "hdf5") return read_hdf5(path, options.dataset, options.before_read);
  if (format == "tiff") return read_tiff(path, options.before_read);
  if (format == "raw") {
    if (!options.shape) throw InputError("reading raw file '" + path + "' needs --shape NX,NY,NZ");
    return read_raw(path, *options.shape, options.dtype, options.before_read);
  }
  throw InputError("unknown format '" + format + "' (expected auto, hdf5, raw or tiff)");
}

LabelImage read_raw(const std::string& path, Shape shape, DType dtype, const DeclaredImage& before_read) {
  validate_shape(shape);
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw InputError("cannot read raw file '" + path + "': " + ec.message());
  const std::size_t need = static_cast<std::size_t>(shape.voxels()) * dtype_size(dtype);
  if (size != need)
    throw InputError("raw file '" + path + "' holds " + std::to_string(size) + " bytes, but shape " +
                     to_string(shape) + " of " + to_string(dtype) + " needs " + std::to_string(need) +
                     " bytes");
  if (before_read) before_read(shape, dtype, Spacing{});
  LabelImage image;
  image.shape = shape;
  image.dtype = dtype;
  allocate_bytes(image.bytes, need, path);
  std::ifstream in(path, std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(image.bytes.data()), static_cast<std::streamsize>(need)))
    throw InputError("cannot read raw file '" + path + "': short read");
  return image;
}

void write_raw(const std::string& path, const Mask& mask) {
  // A temporary of this process beside the file, moved into place once on disk: a failure or
  // a kill leaves the old file, or none, never a torn one.
  const std::string temp = path + ".tmp-" + std::to_string(::getpid());
  try {
    {
      std::ofstream out(temp, std::ios::binary);
      if (!out) throw RuntimeError("cannot create '" + temp + "': " + std::strerror(errno));
      out.write(reinterpret_cast<const char*>(mask.data()), static_cast<std::streamsize>(mask.voxels()));
      out.flush();
      if (!out) throw RuntimeError("cannot write '" + temp + "': " + std::strerror(errno));
    }
    commit_file(temp, path);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(temp, ec);
    throw;
  }
}

}  // namespace poreforge
