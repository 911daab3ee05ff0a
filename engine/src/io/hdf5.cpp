#include <H5Cpp.h>
#include <fcntl.h>
#include <omp.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <vector>

#include "poreforge/durable_file.hpp"
#include "poreforge/error.hpp"
#include "poreforge/io.hpp"
#include "poreforge_git_hash.hpp"  // generated at every build (cmake/git_hash.cmake)

#ifndef POREFORGE_VERSION
#define POREFORGE_VERSION "0.0.0"
#endif

namespace poreforge {

std::string version_string() { return std::string(POREFORGE_VERSION) + " (" + POREFORGE_GIT_HASH + ")"; }

namespace {

// HDF5 prints its own error stack by default; we report one line instead.
struct QuietHdf5 {
  QuietHdf5() { H5::Exception::dontPrint(); }
};
const QuietHdf5 quiet_hdf5;

// Every 2D/3D dataset in the file, by path.
void collect_datasets(const H5::Group& g, const std::string& prefix, std::vector<std::string>& out) {
  for (hsize_t i = 0; i < g.getNumObjs(); ++i) {
    const std::string name = g.getObjnameByIdx(i);
    const std::string path = prefix + "/" + name;
    const H5G_obj_t type = g.getObjTypeByIdx(i);
    if (type == H5G_GROUP) {
      collect_datasets(g.openGroup(name), path, out);
    } else if (type == H5G_DATASET) {
      const int rank = g.openDataSet(name).getSpace().getSimpleExtentNdims();
      if (rank == 2 || rank == 3) out.push_back(path);
    }
  }
}

DType dtype_for(const H5::DataSet& ds, const std::string& where) {
  const H5T_class_t cls = ds.getTypeClass();
  if (cls == H5T_INTEGER) {
    const H5::IntType t = ds.getIntType();
    const bool is_signed = t.getSign() != H5T_SGN_NONE;
    if (t.getSize() == 1 && !is_signed) return DType::u8;
    if (t.getSize() == 2 && !is_signed) return DType::u16;
    if (t.getSize() <= 4) return DType::i32;
    throw InputError(where + ": 64-bit integer labels are not supported");
  }
  if (cls == H5T_FLOAT) return DType::f32;
  throw InputError(where + ": dataset is neither integer nor floating point");
}

H5::PredType native_type(DType t) {
  switch (t) {
    case DType::u8: return H5::PredType::NATIVE_UINT8;
    case DType::u16: return H5::PredType::NATIVE_UINT16;
    case DType::i32: return H5::PredType::NATIVE_INT32;
    case DType::f32: return H5::PredType::NATIVE_FLOAT;
  }
  return H5::PredType::NATIVE_UINT8;
}

// Whether `name` exists, asking link by link: H5Lexists fails (instead of answering no) when
// a group on the way is missing.
bool has_path(const H5::H5File& file, const std::string& name) {
  if (name.empty() || name == "/") return true;
  for (std::size_t pos = name.find('/', 1);; pos = name.find('/', pos + 1)) {
    const std::string prefix = name.substr(0, pos);
    if (!file.nameExists(prefix)) return false;
    if (pos == std::string::npos) return true;
    if (file.childObjType(prefix) != H5O_TYPE_GROUP) return false;
  }
}

void require_hdf5_file(const std::string& path, const std::string& what) {
  if (!std::filesystem::exists(path)) throw InputError(what + " '" + path + "' does not exist");
  if (std::filesystem::is_directory(path)) throw InputError(what + " '" + path + "' is a directory, not an HDF5 file");
}

// The `spacing` attribute of an image dataset: three positive numbers (x, y, z). Any other
// type or length is refused rather than ignored, since a wrong spacing changes every number.
Spacing spacing_attribute(const H5::H5Object& holder, const std::string& where) {
  const H5::Attribute a = holder.openAttribute("spacing");
  const H5T_class_t cls = a.getTypeClass();
  const hssize_t n = a.getSpace().getSimpleExtentNpoints();
  if (cls != H5T_FLOAT && cls != H5T_INTEGER)
    throw InputError(where + ": attribute 'spacing' is not numeric (expected three numbers: x, y, z)");
  if (n != 3)
    throw InputError(where + ": attribute 'spacing' holds " + std::to_string(n) +
                     " values (expected three numbers: x, y, z)");
  double v[3];
  a.read(H5::PredType::NATIVE_DOUBLE, v);
  const Spacing spacing{v[0], v[1], v[2]};
  try {
    validate_spacing(spacing);
  } catch (const InputError& e) {
    throw InputError(where + ": attribute 'spacing': " + e.what());
  }
  return spacing;
}

// A string attribute, or "" when there is none or it is not a string.
std::string string_attribute(const H5::H5Object& holder, const std::string& name) {
  if (!holder.attrExists(name)) return "";
  const H5::Attribute a = holder.openAttribute(name);
  if (a.getTypeClass() != H5T_STRING || a.getSpace().getSimpleExtentNpoints() != 1) return "";
  std::string value;
  a.read(a.getStrType(), value);
  return value;
}

}  // namespace

LabelImage read_hdf5(const std::string& path, const std::string& dataset, const DeclaredImage& before_read) {
  require_hdf5_file(path, "input file");
  try {
    if (!H5::H5File::isHdf5(path)) throw InputError("'" + path + "' is not an HDF5 file");
    H5::H5File file(path, H5F_ACC_RDONLY);
    std::string name = dataset;
    if (name.empty()) {
      std::vector<std::string> found;
      collect_datasets(file.openGroup("/"), "", found);
      if (found.empty()) throw InputError("'" + path + "' holds no 2D or 3D dataset");
      if (found.size() > 1) {
        std::string list;
        for (auto& f : found) list += (list.empty() ? "" : ", ") + f;
        throw InputError("'" + path + "' holds several datasets (" + list + "); name one with --dataset");
      }
      name = found.front();
    }
    if (!has_path(file, name)) throw InputError("'" + path + "' has no dataset '" + name + "'");
    const H5::DataSet ds = file.openDataSet(name);
    const H5::DataSpace space = ds.getSpace();
    const int rank = space.getSimpleExtentNdims();
    if (rank != 2 && rank != 3)
      throw InputError("'" + path + ":" + name + "' has rank " + std::to_string(rank) + "; expected 2 or 3");
    hsize_t dims[3] = {1, 1, 1};
    space.getSimpleExtentDims(rank == 3 ? dims : dims + 1);
    LabelImage image;
    image.shape = {static_cast<int64_t>(dims[2]), static_cast<int64_t>(dims[1]), static_cast<int64_t>(dims[0])};
    validate_shape(image.shape);
    const std::string where = "'" + path + ":" + name + "'";
    image.dtype = dtype_for(ds, where);
    // The dataset's own spacing, else the file's (images written by other tools often keep
    // it, and its unit, on the root group).
    const H5::Group root = file.openGroup("/");
    // The unit is the spacing's: read with it, from the same place.
    if (ds.attrExists("spacing")) {
      image.spacing = spacing_attribute(ds, where);
      image.spacing_unit = string_attribute(ds, "spacing_unit");
    } else if (root.attrExists("spacing")) {
      image.spacing = spacing_attribute(root, "'" + path + "'");
      image.spacing_unit = string_attribute(root, "spacing_unit");
    }
    // A contiguous dataset stores every byte of its shape: one that stores less (never
    // written, or cut off with the file) declares a size the file does not hold.
    const std::size_t stored_bytes = static_cast<std::size_t>(image.shape.voxels()) * ds.getDataType().getSize();
    if (ds.getCreatePlist().getLayout() == H5D_CONTIGUOUS) {
      const hsize_t storage = ds.getStorageSize();
      const haddr_t offset = H5Dget_offset(ds.getId());  // the C call: HADDR_UNDEF, not an exception
      const auto file_size = std::filesystem::file_size(path);
      if (storage < stored_bytes || offset == HADDR_UNDEF || offset + stored_bytes > file_size)
        throw InputError(where + " declares " + to_string(image.shape) + " voxels (" +
                         std::to_string(stored_bytes) + " bytes), but the file (" + std::to_string(file_size) +
                         " bytes) does not hold them (truncated, or never written?)");
    }
    if (before_read) before_read(image.shape, image.dtype, image.spacing);
    allocate_bytes(image.bytes, static_cast<std::size_t>(image.shape.voxels()) * dtype_size(image.dtype), path);
    ds.read(image.bytes.data(), native_type(image.dtype));
    return image;
  } catch (const H5::Exception& e) {
    throw InputError("cannot read '" + path + "' as HDF5: " + e.getDetailMsg());
  }
}

namespace {

template <class T>
std::vector<T> read_1d(const std::string& path, const std::string& dataset, const H5::PredType& type) {
  require_hdf5_file(path, "file");
  try {
    if (!H5::H5File::isHdf5(path)) throw InputError("'" + path + "' is not an HDF5 file");
    H5::H5File file(path, H5F_ACC_RDONLY);
    if (!has_path(file, dataset)) throw InputError("'" + path + "' has no dataset '" + dataset + "'");
    const H5::DataSet ds = file.openDataSet(dataset);
    if (ds.getSpace().getSimpleExtentNdims() != 1)
      throw InputError("'" + path + ":" + dataset + "' is not a 1D dataset");
    std::vector<T> v(static_cast<std::size_t>(ds.getSpace().getSimpleExtentNpoints()));
    ds.read(v.data(), type);
    return v;
  } catch (const H5::Exception& e) {
    throw InputError("cannot read '" + path + ":" + dataset + "': " + e.getDetailMsg());
  }
}

H5::Attribute root_attribute(H5::H5File& file, const std::string& path, const std::string& name) {
  const H5::Group root = file.openGroup("/");
  if (!root.attrExists(name)) throw InputError("'" + path + "' has no attribute '" + name + "'");
  return root.openAttribute(name);
}

}  // namespace

std::vector<double> read_hdf5_vector(const std::string& path, const std::string& dataset) {
  return read_1d<double>(path, dataset, H5::PredType::NATIVE_DOUBLE);
}

std::vector<int64_t> read_hdf5_vector_int64(const std::string& path, const std::string& dataset) {
  return read_1d<int64_t>(path, dataset, H5::PredType::NATIVE_INT64);
}

std::string read_hdf5_string_attribute(const std::string& path, const std::string& name) {
  require_hdf5_file(path, "file");
  try {
    if (!H5::H5File::isHdf5(path)) throw InputError("'" + path + "' is not an HDF5 file");
    H5::H5File file(path, H5F_ACC_RDONLY);
    const H5::Attribute a = root_attribute(file, path, name);
    std::string value;
    a.read(a.getStrType(), value);
    return value;
  } catch (const H5::Exception& e) {
    throw InputError("cannot read attribute '" + name + "' of '" + path + "': " + e.getDetailMsg());
  }
}

bool hdf5_has_object(const std::string& path, const std::string& name) {
  require_hdf5_file(path, "file");
  try {
    if (!H5::H5File::isHdf5(path)) throw InputError("'" + path + "' is not an HDF5 file");
    H5::H5File file(path, H5F_ACC_RDONLY);
    return has_path(file, name);
  } catch (const H5::Exception& e) {
    throw InputError("cannot read '" + path + "': " + e.getDetailMsg());
  }
}

bool hdf5_has_attribute(const std::string& path, const std::string& name) {
  require_hdf5_file(path, "file");
  try {
    if (!H5::H5File::isHdf5(path)) throw InputError("'" + path + "' is not an HDF5 file");
    H5::H5File file(path, H5F_ACC_RDONLY);
    return file.openGroup("/").attrExists(name);
  } catch (const H5::Exception& e) {
    throw InputError("cannot read '" + path + "': " + e.getDetailMsg());
  }
}

double read_hdf5_attribute(const std::string& path, const std::string& name) {
  require_hdf5_file(path, "file");
  try {
    if (!H5::H5File::isHdf5(path)) throw InputError("'" + path + "' is not an HDF5 file");
    H5::H5File file(path, H5F_ACC_RDONLY);
    double v = 0;
    root_attribute(file, path, name).read(H5::PredType::NATIVE_DOUBLE, &v);
    return v;
  } catch (const H5::Exception& e) {
    throw InputError("cannot read attribute '" + name + "' of '" + path + "': " + e.getDetailMsg());
  }
}

OutputFile::OutputFile(std::string path, bool overwrite) : m_path(std::move(path)) {
  namespace fs = std::filesystem;
  if (m_path.empty()) throw InputError("the output path is empty");
  if (fs::is_directory(m_path)) throw InputError("output '" + m_path + "' is a directory");
  if (fs::exists(m_path) && !overwrite)
    throw InputError("output '" + m_path + "' already exists (use --force to overwrite it)");
  const fs::path parent = fs::path(m_path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent))
    throw InputError("cannot write '" + m_path + "': directory '" + parent.string() + "' does not exist");
  m_temp = m_path + ".tmp-" + std::to_string(::getpid());
  // Made here first so that a refusal (a read-only folder, a full disk) says why: HDF5 only
  // reports that its create call failed.
  const int fd = ::open(m_temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
  if (fd < 0) throw InputError("cannot write '" + m_path + "': " + std::strerror(errno));
  ::close(fd);
  try {
    m_file = std::make_unique<H5::H5File>(m_temp, H5F_ACC_TRUNC);
  } catch (const H5::Exception& e) {
    std::error_code ec;
    std::filesystem::remove(m_temp, ec);
    throw InputError("cannot create '" + m_temp + "': " + e.getDetailMsg());
  }
}

OutputFile::~OutputFile() {
  if (m_committed) return;
  try {
    if (m_file) m_file->close();
  } catch (...) {
  }
  std::error_code ec;
  std::filesystem::remove(m_temp, ec);
}

namespace {

// zlib levels, measured on the Berea 400³ thickness map (float32, 80 % zeros, radii from a
// small set of values), 64³ chunks, one core: level 4 with the byte shuffle wrote 26.0 MiB in
// 2.98 s, level 1 without the shuffle 15.9 MiB in 1.15 s (the shuffle splits each value's
// bytes and hides its repeats from zlib); the Berea mask (u8) at level 4 takes 3.4 MiB in
// 0.59 s, at level 1 4.9 MiB in 0.34 s.
constexpr int kMapLevel = 1, kMaskLevel = 4;

// A volume as a chunked dataset with the deflate filter, readable by any HDF5 reader, its
// chunks compressed by every core and written as they are (H5Dwrite_chunk; the bytes as in
// memory: `disk` is the little-endian type of a little-endian host): the library's
// own filter pipeline compresses one chunk at a time on one core, and took most of the time
// of `poreforge thickness` on a large image.
template <class T>
void write_3d(H5::H5File& file, const std::string& name, const Volume<T>& v, const H5::PredType& disk, int level) {
  const Shape& s = v.shape();
  const hsize_t dims[3] = {hsize_t(s.nz), hsize_t(s.ny), hsize_t(s.nx)};
  // Chunks of about 64³, never larger than the volume.
  const hsize_t chunk[3] = {std::min<hsize_t>(dims[0], 64), std::min<hsize_t>(dims[1], 64),
                            std::min<hsize_t>(dims[2], 64)};
  H5::DSetCreatPropList props;
  props.setChunk(3, chunk);
  props.setDeflate(level);
  H5::DataSpace space(3, dims);
  H5::DataSet ds = file.createDataSet(name, disk, space, props);

  hsize_t count[3];
  for (int a = 0; a < 3; ++a) count[a] = (dims[a] + chunk[a] - 1) / chunk[a];
  const int64_t chunks = int64_t(count[0] * count[1] * count[2]);
  const std::size_t chunk_values = std::size_t(chunk[0] * chunk[1] * chunk[2]);
  // A batch of chunks at a time: the compressed bytes held stay small beside the volume.
  const int64_t batch = std::max<int64_t>(64, 4 * int64_t(omp_get_max_threads()));
  std::vector<std::vector<Bytef>> packed(std::size_t(std::min(batch, chunks)));
  std::vector<int> failed(packed.size());
  for (int64_t first = 0; first < chunks; first += batch) {
    const int64_t n = std::min(batch, chunks - first);
#pragma omp parallel
    {
      std::vector<T> raw(chunk_values);
#pragma omp for schedule(dynamic)
      for (int64_t k = 0; k < n; ++k) {
        const int64_t c = first + k;
        const hsize_t cz = hsize_t(c) / (count[1] * count[2]), cy = hsize_t(c) / count[2] % count[1],
                      cx = hsize_t(c) % count[2];
        // The chunk's voxels, padded with zeros past the volume's faces (HDF5 stores whole chunks).
        std::fill(raw.begin(), raw.end(), T{});
        for (hsize_t z = 0; z < chunk[0] && cz * chunk[0] + z < dims[0]; ++z)
          for (hsize_t y = 0; y < chunk[1] && cy * chunk[1] + y < dims[1]; ++y) {
            const hsize_t x0 = cx * chunk[2], width = std::min(chunk[2], dims[2] - x0);
            const T* from = v.data() + ((cz * chunk[0] + z) * dims[1] + cy * chunk[1] + y) * dims[2] + x0;
            std::copy(from, from + width, raw.data() + (z * chunk[1] + y) * chunk[2]);
          }
        auto& out = packed[std::size_t(k)];
        uLongf size = compressBound(uLong(chunk_values * sizeof(T)));
        out.resize(size);
        failed[std::size_t(k)] = compress2(out.data(), &size, reinterpret_cast<const Bytef*>(raw.data()),
                                           uLong(chunk_values * sizeof(T)), level) != Z_OK;
        out.resize(size);
      }
    }
    for (int64_t k = 0; k < n; ++k) {
      if (failed[std::size_t(k)]) throw RuntimeError("zlib could not compress a chunk of " + name);
      const int64_t c = first + k;
      const hsize_t offset[3] = {hsize_t(c) / (count[1] * count[2]) * chunk[0],
                                 hsize_t(c) / count[2] % count[1] * chunk[1], hsize_t(c) % count[2] * chunk[2]};
      const auto& bytes = packed[std::size_t(k)];
      if (H5Dwrite_chunk(ds.getId(), H5P_DEFAULT, 0, offset, bytes.size(), bytes.data()) < 0)
        throw RuntimeError("HDF5 could not write a chunk of " + name);
    }
  }
  const double spacing[3] = {v.spacing().x, v.spacing().y, v.spacing().z};
  const hsize_t three = 3;
  H5::Attribute a = ds.createAttribute("spacing", H5::PredType::NATIVE_DOUBLE, H5::DataSpace(1, &three));
  a.write(H5::PredType::NATIVE_DOUBLE, spacing);
}

void ensure_parent_groups(H5::H5File& file, const std::string& name) {
  for (std::size_t pos = name.find('/', 1); pos != std::string::npos; pos = name.find('/', pos + 1)) {
    const std::string group = name.substr(0, pos);
    if (!file.nameExists(group)) file.createGroup(group);
  }
}

}  // namespace

void OutputFile::write_volume(const std::string& name, const Volume<float>& v) {
  try {
    ensure_parent_groups(*m_file, name);
    write_3d(*m_file, name, v, H5::PredType::IEEE_F32LE, kMapLevel);
  } catch (const H5::Exception& e) {
    throw RuntimeError("writing " + name + " to '" + m_path + "': " + e.getDetailMsg());
  }
}

void OutputFile::write_volume(const std::string& name, const Mask& v) {
  try {
    ensure_parent_groups(*m_file, name);
    write_3d(*m_file, name, v, H5::PredType::STD_U8LE, kMaskLevel);
  } catch (const H5::Exception& e) {
    throw RuntimeError("writing " + name + " to '" + m_path + "': " + e.getDetailMsg());
  }
}

void OutputFile::write_vector(const std::string& name, const std::vector<double>& v) {
  try {
    ensure_parent_groups(*m_file, name);
    const hsize_t n = v.size();
    H5::DataSet ds = m_file->createDataSet(name, H5::PredType::IEEE_F64LE, H5::DataSpace(1, &n));
    if (n) ds.write(v.data(), H5::PredType::NATIVE_DOUBLE);
  } catch (const H5::Exception& e) {
    throw RuntimeError("writing " + name + " to '" + m_path + "': " + e.getDetailMsg());
  }
}

void OutputFile::write_vector(const std::string& name, const std::vector<int64_t>& v) {
  try {
    ensure_parent_groups(*m_file, name);
    const hsize_t n = v.size();
    H5::DataSet ds = m_file->createDataSet(name, H5::PredType::STD_I64LE, H5::DataSpace(1, &n));
    if (n) ds.write(v.data(), H5::PredType::NATIVE_INT64);
  } catch (const H5::Exception& e) {
    throw RuntimeError("writing " + name + " to '" + m_path + "': " + e.getDetailMsg());
  }
}

void OutputFile::set_attribute(const std::string& name, const std::string& value, const std::string& object) {
  try {
    H5::StrType type(H5::PredType::C_S1, value.empty() ? 1 : value.size());
    H5::DataSpace scalar(H5S_SCALAR);
    if (object == "/") {
      m_file->openGroup("/").createAttribute(name, type, scalar).write(type, value);
    } else {
      m_file->openDataSet(object).createAttribute(name, type, scalar).write(type, value);
    }
  } catch (const H5::Exception& e) {
    throw RuntimeError("writing attribute " + name + " to '" + m_path + "': " + e.getDetailMsg());
  }
}

void OutputFile::set_attribute(const std::string& name, double value, const std::string& object) {
  try {
    H5::DataSpace scalar(H5S_SCALAR);
    if (object == "/") {
      m_file->openGroup("/").createAttribute(name, H5::PredType::NATIVE_DOUBLE, scalar)
          .write(H5::PredType::NATIVE_DOUBLE, &value);
    } else {
      m_file->openDataSet(object).createAttribute(name, H5::PredType::NATIVE_DOUBLE, scalar)
          .write(H5::PredType::NATIVE_DOUBLE, &value);
    }
  } catch (const H5::Exception& e) {
    throw RuntimeError("writing attribute " + name + " to '" + m_path + "': " + e.getDetailMsg());
  }
}

void OutputFile::set_provenance(const std::string& command_line) {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  set_attribute("poreforge_version", std::string(POREFORGE_VERSION));
  set_attribute("git_hash", std::string(POREFORGE_GIT_HASH));
  set_attribute("command_line", command_line);
  set_attribute("created_utc", std::string(stamp));
}

void OutputFile::commit() {
  try {
    m_file->flush(H5F_SCOPE_GLOBAL);
    m_file->close();
  } catch (const H5::Exception& e) {
    throw RuntimeError("finishing '" + m_temp + "': " + e.getDetailMsg());
  }
  // Data on disk before the rename makes it visible: a crash leaves the old file or the new.
  commit_file(m_temp, m_path);
  m_committed = true;
}

}  // namespace poreforge
