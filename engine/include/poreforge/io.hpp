#pragma once
/// Reading label images (HDF5, raw, TIFF stacks) and writing results (HDF5).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "poreforge/volume.hpp"

namespace H5 {
class H5File;
}

namespace poreforge {

/// Element types of label images, as files store them.
enum class DType { u8, u16, i32, f32 };
std::string to_string(DType t);
/// Parses "u8", "u16", "i32" or "f32"; throws InputError otherwise.
DType parse_dtype(std::string_view text);
std::size_t dtype_size(DType t);

/// A label image as read from a file: shape, spacing (physical units per voxel) and the raw
/// values in their own type, C order, x fastest.
struct LabelImage {
  Shape shape;
  Spacing spacing;
  DType dtype = DType::u8;
  std::vector<unsigned char> bytes;
  /// The spacing's unit as the file names it (HDF5 attribute `spacing_unit`, e.g.
  /// "micrometre"); empty when the file does not say.
  std::string spacing_unit;

  double value(std::size_t i) const;  ///< voxel i as a double
};

/// Labels present with their voxel counts, ascending. Stops collecting after `max_labels`
/// distinct values and sets `truncated` (a grey-level image, not a label image).
struct LabelCounts {
  std::vector<std::pair<double, int64_t>> counts;
  bool truncated = false;
};
LabelCounts count_labels(const LabelImage& image, std::size_t max_labels = 256);

/// Mask of the voxels equal to `label`. Throws InputError naming the labels present when the
/// label does not occur.
Mask phase_mask(const LabelImage& image, double label);

/// Called by the readers with what a file declares (shape, element type, spacing) once its
/// header has been read and checked against the file's size, before the voxels are allocated:
/// the place for a memory check.
using DeclaredImage = std::function<void(const Shape& shape, DType dtype, const Spacing& spacing)>;

/// How to read a file. `format` "auto" picks by extension: .h5/.hdf5/.hdf → hdf5,
/// .raw/.bin/.dat → raw, .tif/.tiff → tiff.
struct ReadOptions {
  std::string format = "auto";
  std::string dataset;          ///< HDF5: dataset path; empty = the only 2D/3D dataset
  std::optional<Shape> shape;   ///< raw: required
  DType dtype = DType::u8;      ///< raw
  DeclaredImage before_read;    ///< optional: see DeclaredImage
};

/// Metres per unit of a length unit's name ("m", "mm", "um", "µm", "micrometre", "nm", …);
/// 0 when the name is empty or unknown.
double unit_in_metres(const std::string& unit);

/// Reads a label image; every failure is an InputError naming the file and the problem
/// (a directory, a size the file cannot hold, a truncated stack). A failed allocation is a
/// RuntimeError naming the bytes.
LabelImage read_image(const std::string& path, const ReadOptions& options);
/// HDF5 dataset (2D or 3D). A contiguous dataset must store every byte its shape declares;
/// an optional `spacing` attribute (on the dataset, else on the root group) must hold three
/// positive numbers (x, y, z); `spacing_unit` (likewise) names its unit.
LabelImage read_hdf5(const std::string& path, const std::string& dataset, const DeclaredImage& before_read = {});
/// Raw bytes, x fastest, little-endian; the file's size must equal the shape's.
LabelImage read_raw(const std::string& path, Shape shape, DType dtype, const DeclaredImage& before_read = {});
/// Multi-page TIFF stack (one page per z-slice; 8/16/32-bit integer or 32-bit float, one
/// sample per pixel, strips or tiles). Every strip must lie inside the file (uncompressed:
/// hold its page's bytes), and a stack whose chain of pages breaks, or that holds fewer pages
/// than its first page's PageNumber tag says, is refused as truncated. Throws InputError when
/// built without libtiff.
LabelImage read_tiff(const std::string& path, const DeclaredImage& before_read = {});
bool tiff_supported();
/// Writes a mask as a multi-page 8-bit TIFF stack (one page per z-slice, values 0/1), through
/// a temporary file renamed into place. Throws InputError when built without libtiff.
void write_tiff(const std::string& path, const Mask& mask);

/// A 1D dataset of an HDF5 file as doubles (descriptor files). InputError naming the file and
/// dataset when either is missing or the dataset is not 1D.
std::vector<double> read_hdf5_vector(const std::string& path, const std::string& dataset);
/// The same for 64-bit integers.
std::vector<int64_t> read_hdf5_vector_int64(const std::string& path, const std::string& dataset);
/// A numeric attribute of the file's root group.
double read_hdf5_attribute(const std::string& path, const std::string& name);
/// A string attribute of the file's root group.
std::string read_hdf5_string_attribute(const std::string& path, const std::string& name);
/// Whether the file holds an object (group or dataset) at `name`, checked link by link.
bool hdf5_has_object(const std::string& path, const std::string& name);
/// Whether the file's root group has the attribute (errors as above for a missing or non-HDF5 file).
bool hdf5_has_attribute(const std::string& path, const std::string& name);

/// Resizes `bytes` to `count`, turning a failed allocation into a RuntimeError naming the size
/// and the file whose voxels they were for.
void allocate_bytes(std::vector<unsigned char>& bytes, std::size_t count, const std::string& path);

/// Writes a mask or label-free image as raw bytes (for tests and exchange).
void write_raw(const std::string& path, const Mask& mask);

/// An HDF5 result written atomically: created as a temporary file beside `path` and renamed
/// over it by commit(). Destroying an uncommitted file removes the temporary, so a failed run
/// leaves nothing behind. Refuses an existing `path` unless `overwrite`.
class OutputFile {
 public:
  OutputFile(std::string path, bool overwrite);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  /// Chunked, gzip-compressed 3D dataset ([nz][ny][nx]) with a `spacing` attribute (x, y, z).
  void write_volume(const std::string& name, const Volume<float>& v);
  void write_volume(const std::string& name, const Mask& v);
  void write_vector(const std::string& name, const std::vector<double>& v);
  void write_vector(const std::string& name, const std::vector<int64_t>& v);
  /// String attribute on the file root (or on dataset `object` when given).
  void set_attribute(const std::string& name, const std::string& value, const std::string& object = "/");
  void set_attribute(const std::string& name, double value, const std::string& object = "/");
  /// version, git hash, command line, creation time (UTC).
  void set_provenance(const std::string& command_line);

  /// Flushes, closes and renames into place.
  void commit();
  const std::string& path() const { return m_path; }

 private:
  std::string m_path, m_temp;
  std::unique_ptr<H5::H5File> m_file;
  bool m_committed = false;
};

/// poreforge's version and the git hash it was built from.
std::string version_string();

}  // namespace poreforge
