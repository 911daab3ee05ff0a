// The public engine functions: pick a backend, run it.
#include "cpu/cpu_backend.hpp"
#include "poreforge/edt.hpp"
#include "poreforge/local_thickness.hpp"

namespace poreforge {

Volume<uint32_t> squared_distance_voxels(const Mask& phase, Boundary boundary) {
  return cpu::squared_distance_voxels(phase, boundary);
}

Volume<float> distance_transform(const Mask& phase, Boundary boundary, Backend backend) {
  resolve_backend(backend, Operation::distance_transform);
  return cpu::distance_transform(phase, boundary);
}

Volume<float> local_thickness(const Mask& phase, Boundary boundary, Backend backend) {
  resolve_backend(backend, Operation::local_thickness);
  return cpu::local_thickness(phase, boundary);
}

PoreSizeDistribution pore_size_distribution(const Mask& phase, Boundary boundary, const Bins& bins,
                                            Backend backend) {
  resolve_backend(backend, Operation::pore_size_distribution);
  return psd_from_counts(cpu::psd_counts(phase, boundary, bins), bins);
}

}  // namespace poreforge
