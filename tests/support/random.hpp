#pragma once
// Fresh seeds for every run, printed on failure through doctest's CAPTURE/INFO.
#include <cstdint>
#include <random>

#include "poreforge/generators.hpp"
#include "poreforge/volume.hpp"

namespace poreforge::testing {

inline uint64_t fresh_seed() {
  static std::random_device device;
  return (uint64_t(device()) << 32) ^ device();
}

// A random test volume: white noise, blobs or spheres, chosen by `kind` (0, 1, 2).
inline Mask random_volume(Shape shape, int kind, double porosity, uint64_t seed) {
  switch (kind) {
    case 0: return generate_noise(shape, porosity, seed);
    case 1: return generate_blobs(shape, porosity, 0.5, seed);
    default: return generate_spheres(shape, porosity, 2.5, seed);
  }
}

}  // namespace poreforge::testing
