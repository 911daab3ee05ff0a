#pragma once
// FNV-1a, 64 bits: a checksum of the bytes that define a piece of state, so that an edit, a
// flipped bit or a structure made otherwise than before is found before it is trusted. Not
// cryptographic; small and dependency-free, where zlib's crc32 is not linked here directly.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace poreforge::app {

class Fnv1a {
 public:
  Fnv1a& add(const void* data, std::size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t k = 0; k < bytes; ++k) m_hash = (m_hash ^ p[k]) * 0x100000001b3ull;
    return *this;
  }
  Fnv1a& add(double v) { return add(&v, sizeof v); }
  Fnv1a& add(const std::string& s) { return add(s.data(), s.size()); }
  template <class T>
  Fnv1a& add(const std::vector<T>& v) {
    return add(v.data(), v.size() * sizeof(T));
  }
  uint64_t value() const { return m_hash; }
  std::string hex() const {
    char buf[20];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(m_hash));
    return buf;
  }

 private:
  uint64_t m_hash = 0xcbf29ce484222325ull;
};

}  // namespace poreforge::app
