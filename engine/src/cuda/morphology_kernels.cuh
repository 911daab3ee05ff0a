#pragma once
// Kernels of the CUDA morphology (see poreforge/cuda_morphology.hpp for the method).
//
// Bit-packed layout: a row of nx voxels is `wpr` = ⌈nx/32⌉ words, bit b of word w holding
// voxel x = 32·w + b; rows follow each other (row = y + ny·z). Bits past nx are always 0, so
// a dilation never sees a voxel outside the image. Every pass is a dilation (OR); erosion
// complements its input on the first pass and its output on the last.
#include <cuda_runtime.h>

#include <cstdint>

#include "edt_kernels.cuh"

namespace poreforge::cuda::kernels {

// The valid bits of word w of a row (only the last word of a row has padding).
__device__ __forceinline__ uint32_t valid_bits(int64_t w, int64_t wpr, uint32_t tail) {
  return w == wpr - 1 ? tail : 0xFFFFFFFFu;
}

// 4 bytes → 4 bits (byte i nonzero → bit i).
__device__ __forceinline__ uint32_t nibble_of(uint32_t four_bytes) {
  const uint32_t b = __vcmpne4(four_bytes, 0u) & 0x08040201u;
  return (b | b >> 8 | b >> 16 | b >> 24) & 0xFu;
}

// 4 bits → 4 bytes of 0 or 1.
__device__ __forceinline__ uint32_t bytes_of(uint32_t nibble) {
  return (nibble & 1u) | (nibble & 2u) << 7 | (nibble & 4u) << 14 | (nibble & 8u) << 21;
}

// Rows are walked by blockIdx.y, the words of a row by the x threads: no index division.
// With `vector` (the host's finding that every row starts 16-byte aligned: a 16-aligned buffer
// and rows a multiple of 16 long) 16 bytes move per load or store; otherwise byte by byte.

// Bytes (nonzero = set) → bits.
__global__ void pack_bits(const uint8_t* __restrict__ in, uint32_t* __restrict__ bits, int64_t nx, int64_t rows,
                          int64_t wpr, bool vector) {
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const uint8_t* src = in + row * nx;
    for (int64_t w = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; w < wpr; w += int64_t(gridDim.x) * blockDim.x) {
      const int64_t x0 = 32 * w;
      uint32_t word = 0;
      if (vector) {
        const uint4* p = reinterpret_cast<const uint4*>(src + x0);
        const int chunks = nx - x0 >= 32 ? 2 : 1;
        for (int c = 0; c < chunks; ++c) {
          const uint4 v = p[c];
          word |= (nibble_of(v.x) | nibble_of(v.y) << 4 | nibble_of(v.z) << 8 | nibble_of(v.w) << 12) << (16 * c);
        }
      } else {
        const int count = int(nx - x0 < 32 ? nx - x0 : 32);
        for (int b = 0; b < count; ++b) word |= uint32_t(src[x0 + b] != 0) << b;
      }
      bits[row * wpr + w] = word;
    }
  }
}

// Bits → bytes (0 or 1).
__global__ void unpack_bits(const uint32_t* __restrict__ bits, uint8_t* __restrict__ out, int64_t nx, int64_t rows,
                            int64_t wpr, bool vector) {
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    uint8_t* dst = out + row * nx;
    for (int64_t w = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; w < wpr; w += int64_t(gridDim.x) * blockDim.x) {
      const int64_t x0 = 32 * w;
      const uint32_t word = bits[row * wpr + w];
      if (vector) {
        uint4* p = reinterpret_cast<uint4*>(dst + x0);
        const int chunks = nx - x0 >= 32 ? 2 : 1;
        for (int c = 0; c < chunks; ++c) {
          const uint32_t h = word >> (16 * c);
          p[c] = make_uint4(bytes_of(h & 0xF), bytes_of(h >> 4 & 0xF), bytes_of(h >> 8 & 0xF), bytes_of(h >> 12 & 0xF));
        }
      } else {
        const int count = int(nx - x0 < 32 ? nx - x0 : 32);
        for (int b = 0; b < count; ++b) dst[x0 + b] = uint8_t(word >> b & 1u);
      }
    }
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

// Ball step, after the distance transform `d` of `image` (bytes 0/1): the new state as bytes,
// element by element (so `out` may be `image`). Erosion keeps set voxels farther than r from
// the complement; dilation adds voxels within r of the set. `r2` is compared as on the CPU.
template <class V>
__global__ void threshold_ball(const uint8_t* image, const V* __restrict__ d, uint8_t* out, int64_t voxels, double r2,
                               bool erosion) {
  for (int64_t v = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; v < voxels; v += int64_t(gridDim.x) * blockDim.x) {
    const double dist2 = double(d[v]);
    const bool set = image[v] != 0;
    out[v] = uint8_t(erosion ? (set && dist2 > r2) : (set || dist2 <= r2));
  }
}

// A line pass of the EDT (y or z) that never needs a value at or above `cap`: each block
// owns `segment` outputs of 32 adjacent lines and loads them with `reach` voxels either side
// (every offset whose term is below the cap), so tiles are small and blocks many. Out of place
// (neighbouring blocks read each other's rows as halos). Open boundary (morphology).
template <class M>
__global__ void edt_lines_capped(const typename M::value_type* __restrict__ in, typename M::value_type* __restrict__ out,
                                 Geometry g, int axis, M m, typename M::value_type cap, int reach, int segment) {
  using V = typename M::value_type;
  extern __shared__ unsigned char shared_raw[];
  V* tile = reinterpret_cast<V*>(shared_raw);
  const int64_t n = g.extent(axis);
  const int tx = threadIdx.x, width = blockDim.x;
  const int64_t x = int64_t(blockIdx.x) * width + tx;
  const auto [base, stride] = Line::of(g, axis, blockIdx.y, x);
  const bool active = x < g.nx;
  const int64_t first = int64_t(blockIdx.z) * segment;
  const int64_t lo = first - reach > 0 ? first - reach : 0;
  const int64_t hi = first + segment + reach < n ? first + segment + reach : n;
  const int64_t end = first + segment < n ? first + segment : n;
  for (int64_t p = lo + threadIdx.y; p < hi; p += blockDim.y)
    tile[(p - lo) * width + tx] = active ? in[base + p * stride] : V(0);
  __syncthreads();
  if (!active) return;
  for (int64_t p = first + threadIdx.y; p < end; p += blockDim.y) {
    V best = tile[(p - lo) * width + tx];
    if (cap < best) best = cap;
    for (int dd = 1; dd <= reach; ++dd) {
      const V t = m.term(dd, axis);
      if (!(t < best)) break;
      for (int side = -1; side <= 1; side += 2) {
        const int64_t q = p + side * dd;
        if (q < 0 || q >= n) continue;
        const V f = tile[(q - lo) * width + tx];
        if (f == M::infinity) continue;
        const V v = M::add(f, t);
        if (v < best) best = v;
      }
    }
    out[base + p * stride] = best;
  }
}

}  // namespace poreforge::cuda::kernels
