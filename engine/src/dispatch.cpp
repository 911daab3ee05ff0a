// The public engine functions: pick a backend, run it.
#include "cpu/cpu_backend.hpp"
#include "poreforge/edt.hpp"
#include "poreforge/local_thickness.hpp"
#ifdef POREFORGE_HAVE_CUDA
#include "poreforge/cuda_engine.hpp"
#endif

namespace poreforge {

namespace {
bool on_cuda(Backend requested, Operation op) { return resolve_backend(requested, op) == Backend::cuda; }
}  // namespace

Volume<uint32_t> squared_distance_voxels(const Mask& phase, Boundary boundary, Backend backend) {
#ifdef POREFORGE_HAVE_CUDA
  if (on_cuda(backend, Operation::distance_transform)) return cuda::squared_distance_voxels(phase, boundary);
#else
  resolve_backend(backend, Operation::distance_transform);
#endif
  return cpu::squared_distance_voxels(phase, boundary);
}

Volume<float> distance_transform(const Mask& phase, Boundary boundary, Backend backend) {
#ifdef POREFORGE_HAVE_CUDA
  if (on_cuda(backend, Operation::distance_transform)) return cuda::distance_transform(phase, boundary);
#else
  resolve_backend(backend, Operation::distance_transform);
#endif
  return cpu::distance_transform(phase, boundary);
}

Volume<float> local_thickness(const Mask& phase, Boundary boundary, Backend backend) {
#ifdef POREFORGE_HAVE_CUDA
  if (on_cuda(backend, Operation::local_thickness)) return cuda::local_thickness(phase, boundary);
#else
  resolve_backend(backend, Operation::local_thickness);
#endif
  return cpu::local_thickness(phase, boundary);
}

PoreSizeDistribution pore_size_distribution(const Mask& phase, Boundary boundary, const Bins& bins,
                                            Backend backend) {
#ifdef POREFORGE_HAVE_CUDA
  if (on_cuda(backend, Operation::pore_size_distribution))
    return psd_from_counts(cuda::psd_counts(phase, boundary, bins), bins);
#else
  resolve_backend(backend, Operation::pore_size_distribution);
#endif
  return psd_from_counts(cpu::psd_counts(phase, boundary, bins), bins);
}

}  // namespace poreforge
