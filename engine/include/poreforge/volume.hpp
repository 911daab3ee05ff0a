#pragma once
/// Volumes, spacing, boundary modes and phase masks (DESIGN §1).
/// Layout: nx × ny × nz voxels, x fastest (C order [z][y][x]).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace poreforge {

/// Extent in voxels along x, y, z. An axis of extent 1 is *flat*: the volume has no extent
/// along it, so boundary modes do not apply along it (a 2D image, nz = 1, is a 2D image).
struct Shape {
  int64_t nx = 0, ny = 0, nz = 0;

  int64_t voxels() const { return nx * ny * nz; }
  int64_t extent(int axis) const { return axis == 0 ? nx : axis == 1 ? ny : nz; }
  bool operator==(const Shape& o) const { return nx == o.nx && ny == o.ny && nz == o.nz; }
  bool operator!=(const Shape& o) const { return !(*this == o); }
};

/// Voxel spacing in physical units (default 1 along every axis).
struct Spacing {
  double x = 1.0, y = 1.0, z = 1.0;

  double along(int axis) const { return axis == 0 ? x : axis == 1 ? y : z; }
  bool isotropic() const { return x == y && y == z; }
  bool operator==(const Spacing& o) const { return x == o.x && y == o.y && z == o.z; }
};

/// What lies beyond the faces of the volume.
enum class Boundary {
  open,      ///< nothing: distances only see voxels inside (scipy, PoreSpy, Fiji)
  wall,      ///< the other phase, one voxel beyond each face
  periodic,  ///< the volume tiles space
};

std::string to_string(Boundary b);
/// Parses "open", "wall" or "periodic"; throws InputError naming the accepted values.
Boundary parse_boundary(std::string_view text);

std::string to_string(const Shape& s);  ///< "NXxNYxNZ"
std::string to_string(const Spacing& s);  ///< "SX,SY,SZ", each to full double precision

/// Throws InputError unless every extent is positive and the product fits the index type.
void validate_shape(const Shape& s);
/// Spacings accepted, in physical units. Thickness maps are float32 in physical units and
/// squared distances are formed in double: a spacing outside this range would overflow or
/// underflow them (1e308 squared is infinite, 1e-320 is a denormal whose square is 0).
inline constexpr double min_spacing = 1e-30, max_spacing = 1e30;
/// Throws InputError unless every spacing is finite and lies in [min_spacing, max_spacing].
void validate_spacing(const Spacing& s);
/// A number as printf's %.10g writes it ("1e+308", not 309 digits), for messages.
std::string format_number(double v);

/// A dense volume of T with its shape and spacing. Plain value type (host memory).
template <class T>
class Volume {
 public:
  using value_type = T;

  Volume() = default;
  explicit Volume(Shape shape, Spacing spacing = {}, T fill = T{})
      : m_shape(shape), m_spacing(spacing), m_data(static_cast<std::size_t>(shape.voxels()), fill) {}
  Volume(Shape shape, Spacing spacing, std::vector<T> data)
      : m_shape(shape), m_spacing(spacing), m_data(std::move(data)) {}

  const Shape& shape() const { return m_shape; }
  const Spacing& spacing() const { return m_spacing; }
  void set_spacing(const Spacing& s) { m_spacing = s; }
  int64_t voxels() const { return m_shape.voxels(); }

  std::size_t index(int64_t x, int64_t y, int64_t z) const {
    return static_cast<std::size_t>((z * m_shape.ny + y) * m_shape.nx + x);
  }
  T& operator()(int64_t x, int64_t y, int64_t z) { return m_data[index(x, y, z)]; }
  const T& operator()(int64_t x, int64_t y, int64_t z) const { return m_data[index(x, y, z)]; }
  T& operator[](std::size_t i) { return m_data[i]; }
  const T& operator[](std::size_t i) const { return m_data[i]; }

  T* data() { return m_data.data(); }
  const T* data() const { return m_data.data(); }
  std::vector<T>& values() { return m_data; }
  const std::vector<T>& values() const { return m_data; }

 private:
  Shape m_shape;
  Spacing m_spacing;
  std::vector<T> m_data;
};

/// A phase mask: 1 where the voxel is in the phase, 0 elsewhere.
using Mask = Volume<uint8_t>;

/// Number of phase voxels in a mask.
int64_t count_phase(const Mask& phase);

/// The complement of a mask (the other phase), same shape and spacing.
Mask complement(const Mask& phase);

}  // namespace poreforge
