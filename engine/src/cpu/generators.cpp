#include "poreforge/generators.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "poreforge/error.hpp"

namespace poreforge {
namespace {

// Uniform in (0, 1) for stream `stream` of `seed`, draw n.
double uniform(uint64_t seed, uint64_t stream, uint64_t n) {
  const uint64_t h = splitmix64(splitmix64(seed ^ splitmix64(stream)) + n);
  return (static_cast<double>(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

// A standard normal value from two uniforms in (0, 1) (Box–Muller).
double box_muller(double u1, double u2) { return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2); }

void check_porosity(double porosity) {
  if (!(porosity > 0 && porosity < 1))
    throw InputError("porosity must lie strictly between 0 and 1 (got " + format_number(porosity) + ")");
}

// scipy's 'reflect' border (d c b a | a b c d | d c b a), for any offset.
int64_t reflect(int64_t i, int64_t n) {
  const int64_t period = 2 * n;
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - 1 - i;
}

// In-place 1D Gaussian filter along `axis`. Each output sums its taps in kernel order (the
// same order for every output, so the loop vectorises across outputs without changing a bit).
void gaussian_along(std::vector<float>& v, const Shape& s, int axis, const std::vector<float>& kernel) {
  const int64_t n = s.extent(axis);
  if (n == 1) return;
  const int64_t plane = s.nx * s.ny;
  const int64_t stride = axis == 0 ? 1 : axis == 1 ? s.nx : plane;
  const int64_t lines = s.voxels() / n;
  const int64_t radius = static_cast<int64_t>(kernel.size() / 2);
#pragma omp parallel
  {
    std::vector<float> padded(static_cast<std::size_t>(n + 2 * radius)), out(static_cast<std::size_t>(n));
#pragma omp for schedule(static)
    for (int64_t l = 0; l < lines; ++l) {
      const int64_t start = axis == 0 ? l * s.nx : axis == 1 ? (l / s.nx) * plane + l % s.nx : l;
      float* line = v.data() + start;
      for (int64_t p = -radius; p < n + radius; ++p) padded[p + radius] = line[reflect(p, n) * stride];
      std::fill(out.begin(), out.end(), 0.0f);
      for (std::size_t k = 0; k < kernel.size(); ++k) {
        const float w = kernel[k];
        const float* src = padded.data() + k;
        for (int64_t p = 0; p < n; ++p) out[p] += w * src[p];
      }
      for (int64_t p = 0; p < n; ++p) line[p * stride] = out[p];
    }
  }
}

// Blobiness sets the Gaussian's width: too large and sigma² underflows (a NaN kernel that
// thresholds to no phase at all); too small and the kernel outgrows the volume (and memory).
void check_blobiness(const Shape& shape, double blobiness) {
  if (!(blobiness > 0) || !std::isfinite(blobiness))
    throw InputError("blobiness must be positive and finite (got " + format_number(blobiness) + ")");
  if (blobiness > max_blobiness)
    throw InputError("blobiness " + format_number(blobiness) + " is above " + format_number(max_blobiness) +
                     " (features far below a voxel: the structure is white noise from blobiness 10 on)");
  const double sigma = blob_sigma(shape, blobiness);
  int64_t largest = 1;
  for (int a = 0; a < 3; ++a) largest = std::max(largest, shape.extent(a));
  if (sigma > double(largest))
    throw InputError("blobiness " + format_number(blobiness) + " makes features wider than the volume (sigma " +
                     format_number(sigma) + " voxels, largest extent " + std::to_string(largest) + ")");
}

}  // namespace

Mask generate_noise(Shape shape, double porosity, uint64_t seed) {
  validate_shape(shape);
  check_porosity(porosity);
  Mask mask(shape);
  const int64_t n = shape.voxels();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) mask[i] = uniform(seed, 0, i) < porosity ? 1 : 0;
  return mask;
}

std::vector<float> blob_field(Shape shape, double blobiness, uint64_t seed) {
  validate_shape(shape);
  check_blobiness(shape, blobiness);
  const int64_t n = shape.voxels();
  std::vector<float> v(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(box_muller(uniform(seed, 1, i), uniform(seed, 2, i)));
  const double sigma = blob_sigma(shape, blobiness);
  const int64_t radius = static_cast<int64_t>(4.0 * sigma + 0.5);  // scipy's truncate = 4
  std::vector<float> kernel(static_cast<std::size_t>(2 * radius + 1));
  double sum = 0;
  for (int64_t k = -radius; k <= radius; ++k) {
    const double x = static_cast<double>(k);
    sum += kernel[k + radius] = static_cast<float>(std::exp(-0.5 * x * x / (sigma * sigma)));
  }
  for (auto& k : kernel) k = static_cast<float>(k / sum);
  for (int axis = 0; axis < 3; ++axis) gaussian_along(v, shape, axis, kernel);
  return v;
}

Mask lowest_values(const std::vector<float>& v, Shape shape, int64_t keep) {
  if (v.size() != static_cast<std::size_t>(shape.voxels()))
    throw InputError("lowest_values: " + std::to_string(v.size()) + " values for a " + to_string(shape) + " volume");
  if (keep < 0 || keep > shape.voxels())
    throw InputError("lowest_values: " + std::to_string(keep) + " phase voxels asked of " + std::to_string(shape.voxels()));
  Mask mask(shape);
  if (keep == 0) return mask;
  std::vector<float> sorted(v);
  std::nth_element(sorted.begin(), sorted.begin() + (keep - 1), sorted.end());
  const float t = sorted[keep - 1];
  int64_t taken = 0;
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i] < t) {
      mask[i] = 1;
      ++taken;
    }
  for (std::size_t i = 0; i < v.size() && taken < keep; ++i)
    if (v[i] == t) {
      mask[i] = 1;
      ++taken;
    }
  return mask;
}

Mask generate_blobs(Shape shape, double porosity, double blobiness, uint64_t seed) {
  validate_shape(shape);
  check_porosity(porosity);
  return lowest_values(blob_field(shape, blobiness, seed), shape, std::llround(porosity * static_cast<double>(shape.voxels())));
}

double blob_sigma(Shape shape, double blobiness) {
  // PoreSpy: sigma = mean(shape) / 40 / blobiness, over the axes the image has.
  double extent_sum = 0;
  int dims = 0;
  for (int a = 0; a < 3; ++a)
    if (shape.extent(a) > 1) {
      extent_sum += static_cast<double>(shape.extent(a));
      ++dims;
    }
  return dims ? extent_sum / dims / 40.0 / blobiness : 1.0;
}

Mask generate_spheres(Shape shape, double porosity, double radius, uint64_t seed, double radius_spread,
                      const std::array<double, 3>& stretch) {
  validate_shape(shape);
  check_porosity(porosity);
  if (!(radius >= 1)) throw InputError("sphere radius must be at least 1 voxel (got " + format_number(radius) + ")");
  if (!std::isfinite(radius)) throw InputError("sphere radius must be finite (got " + format_number(radius) + ")");
  if (!(radius_spread >= 0 && radius_spread <= 10))
    throw InputError("sphere radius spread must lie in [0, 10] (got " + format_number(radius_spread) + ")");
  for (const double s : stretch)
    if (!(s >= 0.1 && s <= 10))
      throw InputError("sphere stretch must lie in [0.1, 10] along each axis (got " + format_number(s) + ")");
  Mask mask(shape, {}, 1);
  int64_t pore = shape.voxels();
  const int64_t target = std::llround(porosity * static_cast<double>(shape.voxels()));
  // Offsets beyond the volume's diagonal wrap onto voxels a smaller ball already covers (a
  // ball that wide covers every voxel), so the walk stops there: the same volume, and a
  // radius of 1e9 no longer visits 1e27 offsets.
  const double diagonal = std::sqrt(double(shape.nx * shape.nx + shape.ny * shape.ny + shape.nz * shape.nz));
  // Log-normal radii of mean `radius` and coefficient of variation `radius_spread`.
  const double log_sd = std::sqrt(std::log1p(radius_spread * radius_spread));
  const double log_mean = std::log(radius) - 0.5 * log_sd * log_sd;
  auto wrap = [](int64_t v, int64_t n) { v %= n; return v < 0 ? v + n : v; };
  for (uint64_t k = 0; pore > target; ++k) {
    const int64_t cx = static_cast<int64_t>(uniform(seed, 3, 3 * k) * static_cast<double>(shape.nx));
    const int64_t cy = static_cast<int64_t>(uniform(seed, 3, 3 * k + 1) * static_cast<double>(shape.ny));
    const int64_t cz = static_cast<int64_t>(uniform(seed, 3, 3 * k + 2) * static_cast<double>(shape.nz));
    double rk = radius;
    if (radius_spread > 0)  // a stream of its own: the centres stay those of one radius
      rk = std::max(1.0, std::exp(log_mean + log_sd * box_muller(uniform(seed, 4, 2 * k), uniform(seed, 4, 2 * k + 1))));
    int64_t r[3];
    for (int a = 0; a < 3; ++a) r[a] = static_cast<int64_t>(std::floor(std::min(rk * stretch[a], diagonal + 1)));
    const double r2 = rk * rk;
    // (dx / stretch_x)² + … ≤ rk²: with a stretch of 1 the sums are the integers' exactly.
    const double sx2 = stretch[0] * stretch[0], sy2 = stretch[1] * stretch[1], sz2 = stretch[2] * stretch[2];
    for (int64_t dz = shape.nz > 1 ? -r[2] : 0; dz <= (shape.nz > 1 ? r[2] : 0); ++dz)
      for (int64_t dy = shape.ny > 1 ? -r[1] : 0; dy <= (shape.ny > 1 ? r[1] : 0); ++dy)
        for (int64_t dx = -r[0]; dx <= r[0]; ++dx) {
          if (double(dx * dx) / sx2 + double(dy * dy) / sy2 + double(dz * dz) / sz2 > r2) continue;
          auto& voxel = mask(wrap(cx + dx, shape.nx), wrap(cy + dy, shape.ny), wrap(cz + dz, shape.nz));
          if (voxel) {
            voxel = 0;
            --pore;
          }
        }
  }
  return mask;
}

}  // namespace poreforge
