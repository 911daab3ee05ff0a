#pragma once
/// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011), the
/// counter-based generator cuRAND also implements. A draw is a pure function of (key,
/// counter): the annealer's whole random state is its seed and its step number, so a run
/// resumes exactly, and the CPU and GPU loops draw the same numbers.
#include <array>
#include <cstdint>

#include "poreforge/host_device.hpp"

namespace poreforge::anneal {

using PhiloxBlock = std::array<uint32_t, 4>;

PF_HD PhiloxBlock philox4x32_10(PhiloxBlock counter, std::array<uint32_t, 2> key) {
  constexpr uint32_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u, w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += w0;
      key[1] += w1;
    }
    const uint64_t p0 = uint64_t(m0) * counter[0], p1 = uint64_t(m1) * counter[2];
    counter = {uint32_t(p1 >> 32) ^ counter[1] ^ key[0], uint32_t(p1), uint32_t(p0 >> 32) ^ counter[3] ^ key[1],
               uint32_t(p0)};
  }
  return counter;
}

/// The annealer's draws: four 32-bit words for (step, lane), lane numbering the draws one step
/// needs (proposal attempts, acceptance).
class Philox {
 public:
  explicit Philox(uint64_t seed = 0) : m_key{uint32_t(seed), uint32_t(seed >> 32)} {}
  PF_HD PhiloxBlock draw(uint64_t step, uint32_t lane) const {
    return philox4x32_10({uint32_t(step), uint32_t(step >> 32), lane, 0x70726678u /* "prfx" */}, m_key);
  }
  /// Uniform in [0, 1) with 32 random bits.
  PF_HD static double unit(uint32_t word) { return double(word) * (1.0 / 4294967296.0); }
  /// Uniform integer in [0, n) from two words (64 bits; the bias is below 2⁻³² for n < 2³²).
  PF_HD static uint64_t below(uint32_t hi, uint32_t lo, uint64_t n) {
    return mul_high((uint64_t(hi) << 32) | lo, n);
  }
  std::array<uint32_t, 2> key() const { return m_key; }

 private:
  // High 64 bits of a 64×64-bit product, from 32-bit halves (portable, host and device).
  PF_HD static uint64_t mul_high(uint64_t a, uint64_t b) {
    const uint64_t a_lo = uint32_t(a), a_hi = a >> 32, b_lo = uint32_t(b), b_hi = b >> 32;
    const uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi, hi_hi = a_hi * b_hi;
    const uint64_t cross = (lo_lo >> 32) + uint32_t(hi_lo) + lo_hi;
    return hi_hi + (hi_lo >> 32) + (cross >> 32);
  }
  std::array<uint32_t, 2> m_key;
};

}  // namespace poreforge::anneal
