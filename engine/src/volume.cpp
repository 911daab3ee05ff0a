#include "poreforge/volume.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "poreforge/error.hpp"

namespace poreforge {

std::string to_string(Boundary b) {
  switch (b) {
    case Boundary::open: return "open";
    case Boundary::wall: return "wall";
    case Boundary::periodic: return "periodic";
  }
  return "?";
}

Boundary parse_boundary(std::string_view text) {
  if (text == "open") return Boundary::open;
  if (text == "wall") return Boundary::wall;
  if (text == "periodic") return Boundary::periodic;
  throw InputError("unknown boundary '" + std::string(text) + "' (expected open, wall or periodic)");
}

std::string to_string(const Shape& s) {
  return std::to_string(s.nx) + "x" + std::to_string(s.ny) + "x" + std::to_string(s.nz);
}

std::string to_string(const Spacing& s) {
  // The shortest text that reads back as the same double: 5.345, not 5.3449999999999998.
  std::string text;
  for (const double v : {s.x, s.y, s.z}) {
    char digits[32];
    const auto end = std::to_chars(digits, digits + sizeof digits, v).ptr;
    text += (text.empty() ? "" : ",") + std::string(digits, end);
  }
  return text;
}

void validate_shape(const Shape& s) {
  if (s.nx < 1 || s.ny < 1 || s.nz < 1)
    throw InputError("invalid shape " + to_string(s) + ": every extent must be at least 1");
  // Squared voxel distances are 32-bit and rows index x with 32 bits: 3·32767² < 2^32.
  constexpr int64_t max_extent = 32767;
  if (s.nx > max_extent || s.ny > max_extent || s.nz > max_extent)
    throw InputError("invalid shape " + to_string(s) + ": extents above " +
                     std::to_string(max_extent) + " voxels are not supported");
}

std::string format_number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.10g", v);
  return text;
}

void validate_spacing(const Spacing& s) {
  const std::string given = format_number(s.x) + "," + format_number(s.y) + "," + format_number(s.z);
  for (double v : {s.x, s.y, s.z}) {
    if (!std::isfinite(v) || v <= 0)
      throw InputError("invalid spacing " + given + ": every spacing must be finite and positive");
    if (v < min_spacing || v > max_spacing)
      throw InputError("invalid spacing " + given + ": every spacing must lie in [" + format_number(min_spacing) +
                       ", " + format_number(max_spacing) + "] physical units");
  }
}

int64_t count_phase(const Mask& phase) {
  int64_t count = 0;
  const uint8_t* p = phase.data();
  const int64_t n = phase.voxels();
#pragma omp parallel for reduction(+ : count)
  for (int64_t i = 0; i < n; ++i) count += p[i] != 0;
  return count;
}

Mask complement(const Mask& phase) {
  Mask out(phase.shape(), phase.spacing());
  const int64_t n = phase.voxels();
  for (int64_t i = 0; i < n; ++i) out[i] = phase[i] ? 0 : 1;
  return out;
}

}  // namespace poreforge
