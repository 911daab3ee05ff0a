#pragma once
// Division of 32-bit unsigned numerators by a divisor fixed at run time, by a multiply-high
// and shifts (Granlund & Montgomery; the branch-free form libdivide uses). GPUs have no
// integer divider: `index / nx` compiles to dozens of instructions, 64-bit ones to ~100, and
// the painting kernel splits voxel indices into coordinates in its innermost loops.
#include <cstdint>

#include "poreforge/host_device.hpp"

namespace poreforge::detail {

class FastDivisor {
 public:
  FastDivisor() = default;
  explicit FastDivisor(uint32_t d) : m_divisor(d) {
    int l = 0;
    while (l < 32 && (uint64_t(1) << l) < d) ++l;  // l = ⌈log2 d⌉
    m_shift = l;
    m_magic = d <= 1 ? 0 : uint32_t((uint64_t(1) << 32) * ((uint64_t(1) << l) - d) / d + 1);
  }

  PF_HD uint32_t divide(uint32_t n) const {
    if (m_divisor <= 1) return n;
    const uint32_t t = mul_high(m_magic, n);
    return (t + ((n - t) >> 1)) >> (m_shift - 1);
  }
  PF_HD uint32_t remainder(uint32_t n) const { return n - divide(n) * m_divisor; }
  PF_HD uint32_t divisor() const { return m_divisor; }

 private:
  PF_HD static uint32_t mul_high(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
    return __umulhi(a, b);
#else
    return uint32_t((uint64_t(a) * b) >> 32);
#endif
  }
  uint32_t m_divisor = 1, m_magic = 0;
  int m_shift = 0;
};

}  // namespace poreforge::detail
