// Two-point correlation through the periodic autocorrelation: C(Δ) = IFFT(|FFT(I)|²)/N is
// the share of voxels v with I(v) = I(v + Δ) = 1, for every lattice vector Δ at once.
#include "poreforge/correlation.hpp"

#include <unsupported/Eigen/FFT>

#include <algorithm>
#include <bitset>
#include <cmath>
#include <complex>
#include <cstdint>
#include <vector>

#include "poreforge/error.hpp"

namespace poreforge {
namespace {

using Complex = std::complex<double>;

// The lines of a volume along one axis: line l's voxel p is start(l) + p · stride.
struct Lines {
  Lines(const Shape& s, int a)
      : shape(s), axis(a), n(s.extent(a)), stride(a == 0 ? 1 : a == 1 ? s.nx : s.nx * s.ny), count(s.voxels() / n) {}
  int64_t start(int64_t l) const {
    return axis == 0 ? l * shape.nx : axis == 1 ? (l / shape.nx) * shape.nx * shape.ny + l % shape.nx : l;
  }
  Shape shape;
  int axis;
  int64_t n, stride, count;  // a line's voxels, the step between them, the lines
};

// In-place 1D transforms of every line along `axis` (inverse ones scaled by 1/n, Eigen's way).
void transform_along(std::vector<Complex>& data, const Shape& s, int axis, bool inverse) {
  const Lines lines(s, axis);
  const int64_t n = lines.n, stride = lines.stride;
  if (n == 1) return;
#pragma omp parallel
  {
    Eigen::FFT<double> fft;
    std::vector<Complex> in(static_cast<std::size_t>(n)), out(static_cast<std::size_t>(n));
#pragma omp for schedule(static)
    for (int64_t l = 0; l < lines.count; ++l) {
      const int64_t start = lines.start(l);
      for (int64_t p = 0; p < n; ++p) in[p] = data[start + p * stride];
      if (inverse)
        fft.inv(out.data(), in.data(), n);
      else
        fft.fwd(out.data(), in.data(), n);
      for (int64_t p = 0; p < n; ++p) data[start + p * stride] = out[p];
    }
  }
}

}  // namespace

TwoPointCorrelation two_point_correlation(const Mask& phase) {
  const Shape s = phase.shape();
  validate_shape(s);
  validate_spacing(phase.spacing());
  const int64_t n = s.voxels();
  std::vector<Complex> data(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) data[i] = phase[i] ? 1.0 : 0.0;
  for (int axis = 0; axis < 3; ++axis) transform_along(data, s, axis, false);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) data[i] = std::norm(data[i]);
  for (int axis = 0; axis < 3; ++axis) transform_along(data, s, axis, true);  // scaled by 1/N in all
  // data[Δ] is now Σ_v I(v) I(v + Δ); divide by N for a probability.
  auto c = [&](int64_t dx, int64_t dy, int64_t dz) { return data[(dz * s.ny + dy) * s.nx + dx].real() / double(n); };

  TwoPointCorrelation out;
  for (int64_t r = 0; r <= s.nx / 2; ++r) out.directional.x.push_back(c(r, 0, 0));
  for (int64_t r = 0; r <= s.ny / 2; ++r) out.directional.y.push_back(c(0, r, 0));
  for (int64_t r = 0; r <= s.nz / 2; ++r) out.directional.z.push_back(c(0, 0, r));

  // Radial average over minimal-image vectors, bins of width h centred on k·h.
  const Spacing sp = phase.spacing();
  double h = 0, reach = 0;  // bin width; the largest radius every direction reaches
  for (int a = 0; a < 3; ++a)
    if (s.extent(a) > 1) {
      const double half = double(s.extent(a) / 2) * sp.along(a);
      h = h == 0 ? sp.along(a) : std::min(h, sp.along(a));
      reach = reach == 0 ? half : std::min(reach, half);
    }
  if (h == 0) h = sp.x;  // a single voxel: only r = 0
  const int64_t bins = static_cast<int64_t>(std::floor(reach / h + 1e-9)) + 1;
  std::vector<double> sum(static_cast<std::size_t>(bins), 0.0);
  std::vector<int64_t> count(static_cast<std::size_t>(bins), 0);
  auto minimal = [](int64_t d, int64_t e) { return d > e / 2 ? d - e : d; };
  for (int64_t z = 0; z < s.nz; ++z)
    for (int64_t y = 0; y < s.ny; ++y)
      for (int64_t x = 0; x < s.nx; ++x) {
        const double dx = double(minimal(x, s.nx)) * sp.x, dy = double(minimal(y, s.ny)) * sp.y,
                     dz = double(minimal(z, s.nz)) * sp.z;
        const int64_t k = std::llround(std::sqrt(dx * dx + dy * dy + dz * dz) / h);
        if (k >= bins) continue;
        sum[k] += c(x, y, z);
        ++count[k];
      }
  for (int64_t k = 0; k < bins; ++k) {
    if (!count[k]) continue;  // no lattice vector rounds to this radius (anisotropic spacing)
    out.radial.r.push_back(double(k) * h);
    out.radial.s2.push_back(sum[k] / double(count[k]));
    out.radial.vectors.push_back(count[k]);
  }
  return out;
}

// Σ over the lines along `axis` of Σ_p I(p) I((p + r) mod n), r = 0 … n/2. Each line goes
// into words twice over (bits 0 … 2n − 1: the line, then the line again), so that the line
// rotated by r is the window of bits r … r + n − 1, read a word at a time.
std::vector<int64_t> directional_counts(const Mask& phase, int axis) {
  validate_shape(phase.shape());
  if (axis < 0 || axis > 2) throw InputError("directional_counts: axis must be 0, 1 or 2");
  const Lines lines(phase.shape(), axis);
  const int64_t n = lines.n, stride = lines.stride;
  const int64_t half = n / 2;
  const int64_t words = (n + 63) / 64;              // a line's words
  const int64_t doubled = (2 * n + 63) / 64 + 1;  // the doubled line's, one spare for the window's reach
  std::vector<int64_t> total(static_cast<std::size_t>(half + 1), 0);
#pragma omp parallel
  {
    std::vector<uint64_t> bits(static_cast<std::size_t>(doubled));
    std::vector<int64_t> count(static_cast<std::size_t>(half + 1), 0);
#pragma omp for schedule(static)
    for (int64_t l = 0; l < lines.count; ++l) {
      const int64_t start = lines.start(l);
      std::fill(bits.begin(), bits.end(), 0);
      for (int64_t w = 0; w < words; ++w) {  // a word at a time in a register, no branch on the voxels
        uint64_t word = 0;
        for (int64_t b = 0, p = 64 * w; b < 64 && p < n; ++b, ++p)
          word |= uint64_t(phase[std::size_t(start + p * stride)] != 0) << b;
        bits[std::size_t(w)] |= word;
        bits[std::size_t(n / 64 + w)] |= word << (n % 64);  // the second copy, from bit n on
        if (n % 64) bits[std::size_t(n / 64 + w + 1)] |= word >> (64 - n % 64);
      }
      const uint64_t last = n % 64 ? (uint64_t(1) << (n % 64)) - 1 : ~uint64_t(0);  // the line's last word
      for (int64_t r = 0; r <= half; ++r) {
        const int64_t w0 = r / 64, shift = r % 64;
        int64_t hits = 0;
        for (int64_t w = 0; w < words; ++w) {
          const uint64_t lo = bits[std::size_t(w0 + w)], hi = bits[std::size_t(w0 + w + 1)];
          const uint64_t window = shift ? (lo >> shift) | (hi << (64 - shift)) : lo;
          const uint64_t both = bits[std::size_t(w)] & window & (w + 1 == words ? last : ~uint64_t(0));
          hits += int64_t(std::bitset<64>(both).count());
        }
        count[std::size_t(r)] += hits;
      }
    }
#pragma omp critical
    for (int64_t r = 0; r <= half; ++r) total[std::size_t(r)] += count[std::size_t(r)];
  }
  return total;
}

DirectionalS2 directional_s2(const Mask& phase) {
  DirectionalS2 out;
  for (int axis = 0; axis < 3; ++axis) {
    const std::vector<int64_t> counts = directional_counts(phase, axis);
    std::vector<double>& s2 = axis == 0 ? out.x : axis == 1 ? out.y : out.z;
    s2.resize(counts.size());
    for (std::size_t r = 0; r < counts.size(); ++r) s2[r] = double(counts[r]) / double(phase.voxels());
  }
  return out;
}

}  // namespace poreforge
