#pragma once
// Kernels of the CUDA morphology (see poreforge/cuda_morphology.hpp for the method).
//
// Bit-packed layout: a row of nx voxels is `wpr` = ⌈nx/32⌉ words, bit b of word w holding
// voxel x = 32·w + b; rows follow each other (row = y + ny·z). Bits past nx are always 0, so
// a dilation never sees a voxel outside the image. Every pass is a dilation (OR); erosion
// complements its input on the first pass and its output on the last.
#include <cuda_runtime.h>

#include <cstdint>

namespace poreforge::cuda::kernels {

// The valid bits of word w of a row (only the last word of a row has padding).
__device__ __forceinline__ uint32_t valid_bits(int64_t w, int64_t wpr, uint32_t tail) {
  return w == wpr - 1 ? tail : 0xFFFFFFFFu;
}

// Bytes (nonzero = set) → bits, optionally complemented. A warp per word: lane x reads voxel
// 32·w + x (coalesced) and a ballot gathers the word.
__global__ void pack_bits(const uint8_t* __restrict__ in, uint32_t* __restrict__ bits, int64_t nx, int64_t rows,
                          int64_t wpr, bool invert) {
  const int lane = threadIdx.x & 31;
  const int64_t words = rows * wpr, warps = (int64_t(gridDim.x) * blockDim.x) >> 5;
  for (int64_t i = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; i < words; i += warps) {
    const int64_t row = i / wpr, x = (i - row * wpr) * 32 + lane;
    const bool inside = x < nx;
    const bool set = inside && ((in[row * nx + x] != 0) != invert);
    const uint32_t word = __ballot_sync(0xFFFFFFFFu, set);
    if (lane == 0) bits[i] = word;
  }
}

// Bits → bytes (0 or 1).
__global__ void unpack_bits(const uint32_t* __restrict__ bits, uint8_t* __restrict__ out, int64_t nx, int64_t rows,
                            int64_t wpr) {
  const int lane = threadIdx.x & 31;
  const int64_t words = rows * wpr, warps = (int64_t(gridDim.x) * blockDim.x) >> 5;
  for (int64_t i = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; i < words; i += warps) {
    const int64_t row = i / wpr, x = (i - row * wpr) * 32 + lane;
    if (x < nx) out[row * nx + x] = uint8_t((bits[i] >> lane) & 1u);
  }
}

// Bits o … o+31 of a row held in g[−pad … wpr) (stored from g[0]); zeros outside.
__device__ __forceinline__ uint32_t bits_at(const uint32_t* g, int64_t pad, int64_t wpr, int64_t o) {
  const int64_t q = o >> 5;  // floor division, also for negative o
  const int s = int(o & 31);
  const uint32_t lo = q >= -pad && q < wpr ? g[q + pad] : 0u;
  const uint32_t hi = q + 1 >= -pad && q + 1 < wpr ? g[q + 1 + pad] : 0u;
  return __funnelshift_r(lo, hi, s);
}

// Dilation along x by a window [x − anchor, x − anchor + k − 1], k ≥ 2. A block per row: the
// row goes to shared memory with `pad` words of zeros before it (room for windows that start
// left of the row); m = ⌊log2 k⌋ doubling steps make G(p) = OR of bits p … p + 2^m − 1; each
// output is G(x − anchor) | G(x − anchor + k − 2^m), two windows that cover the whole one.
__global__ void dilate_rows(const uint32_t* __restrict__ in, uint32_t* __restrict__ out, int64_t rows, int64_t wpr,
                            uint32_t tail, int k, int anchor, int64_t pad, bool invert_in, bool invert_out) {
  extern __shared__ uint32_t row_words[];
  uint32_t* a = row_words;
  uint32_t* b = row_words + pad + wpr;
  const int m = 31 - __clz(k);
  const int64_t span = int64_t(1) << m, total = pad + wpr;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const uint32_t* src = in + row * wpr;
    for (int64_t j = threadIdx.x; j < total; j += blockDim.x) {
      const int64_t w = j - pad;
      uint32_t v = 0;
      if (w >= 0) {
        v = src[w];
        if (invert_in) v = ~v & valid_bits(w, wpr, tail);
      }
      a[j] = v;
    }
    __syncthreads();
    for (int i = 0; i < m; ++i) {
      for (int64_t j = threadIdx.x; j < total; j += blockDim.x)
        b[j] = a[j] | bits_at(a, pad, wpr, 32 * (j - pad) + (int64_t(1) << i));
      __syncthreads();
      uint32_t* t = a;
      a = b;
      b = t;
    }
    for (int64_t w = threadIdx.x; w < wpr; w += blockDim.x) {
      const int64_t start = 32 * w - anchor;
      uint32_t v = bits_at(a, pad, wpr, start) | bits_at(a, pad, wpr, start + k - span);
      if (invert_out) v = ~v;
      out[row * wpr + w] = v & valid_bits(w, wpr, tail);
    }
    __syncthreads();  // the next row reuses the shared arrays
  }
}

// Dilation along y (axis 1) or z (axis 2) by a window [p − anchor, p − anchor + k − 1],
// van Herk / Gil–Werman on whole words. Thread (column, j) writes outputs j·k … j·k + k − 1:
// their windows start in the input block B = [j·k − anchor, j·k − anchor + k); the suffix OR
// of B from each start, then the prefix OR of the next block up to each end, one OR each.
__global__ void dilate_lines(const uint32_t* __restrict__ in, uint32_t* __restrict__ out, int64_t wpr, int64_t ny,
                             int64_t columns, int64_t n, int64_t stride, int axis, uint32_t tail, int k, int anchor,
                             bool invert_in, bool invert_out) {
  const int64_t blocks = (n + k - 1) / k, total = columns * blocks;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t column = t % columns, j = t / columns;
    const int64_t w = column % wpr;
    const int64_t base = axis == 1 ? (column / wpr) * ny * wpr + w : column;
    const uint32_t valid = valid_bits(w, wpr, tail);
    auto load = [&](int64_t p) -> uint32_t {
      if (p < 0 || p >= n) return 0u;
      const uint32_t v = in[base + p * stride];
      return invert_in ? ~v & valid : v;
    };
    auto finish = [&](uint32_t v) { return (invert_out ? ~v : v) & valid; };
    const int64_t first = j * k, start = first - anchor;
    uint32_t suffix = 0;
    for (int i = k - 1; i >= 0; --i) {
      suffix |= load(start + i);
      const int64_t p = first + i;
      if (p < n) out[base + p * stride] = i == 0 ? finish(suffix) : suffix;  // i = 0: the window is B itself
    }
    uint32_t prefix = 0;
    for (int i = 0; i + 1 < k; ++i) {
      prefix |= load(start + k + i);
      const int64_t p = first + i + 1;
      if (p < n) out[base + p * stride] = finish(out[base + p * stride] | prefix);
    }
  }
}

// Ball step, after the distance transform `d` of `image` (bytes 0/1): the new state as bits.
// Erosion keeps set voxels farther than r from the complement; dilation adds voxels within r
// of the set. `r2` is compared exactly as on the CPU (as doubles).
template <class V>
__global__ void threshold_pack(const uint8_t* __restrict__ image, const V* __restrict__ d, uint32_t* __restrict__ bits,
                               int64_t nx, int64_t rows, int64_t wpr, double r2, bool erosion) {
  const int lane = threadIdx.x & 31;
  const int64_t words = rows * wpr, warps = (int64_t(gridDim.x) * blockDim.x) >> 5;
  for (int64_t i = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; i < words; i += warps) {
    const int64_t row = i / wpr, x = (i - row * wpr) * 32 + lane;
    bool set = false;
    if (x < nx) {
      const int64_t v = row * nx + x;
      const double dist2 = double(d[v]);
      set = erosion ? (image[v] != 0 && dist2 > r2) : (image[v] != 0 || dist2 <= r2);
    }
    const uint32_t word = __ballot_sync(0xFFFFFFFFu, set);
    if (lane == 0) bits[i] = word;
  }
}

}  // namespace poreforge::cuda::kernels
