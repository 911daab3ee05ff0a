#include "poreforge/workspace.hpp"

#include "common/messages.hpp"
#include "cpu/cpu_backend.hpp"
#include "poreforge/error.hpp"
#ifdef POREFORGE_HAVE_CUDA
#include "poreforge/cuda_engine.hpp"
#endif

namespace poreforge {

std::string empty_phase_message() { return detail::empty_phase_message(); }

#ifdef POREFORGE_HAVE_CUDA
struct Workspace::Impl {
  cuda::Workspace cuda;
};
#else
struct Workspace::Impl {};
#endif

Workspace::Workspace(Backend backend) : m_backend(resolve_backend(backend, Operation::local_thickness)) {
#ifdef POREFORGE_HAVE_CUDA
  if (m_backend == Backend::cuda) m_impl = std::make_unique<Impl>();
#endif
}

Workspace::~Workspace() = default;
Workspace::Workspace(Workspace&&) noexcept = default;
Workspace& Workspace::operator=(Workspace&&) noexcept = default;

bool Workspace::holds([[maybe_unused]] const Shape& shape, [[maybe_unused]] const Spacing& spacing,
                      [[maybe_unused]] Boundary boundary) const {
#ifdef POREFORGE_HAVE_CUDA
  if (m_impl) return m_impl->cuda.holds(shape, spacing, boundary);
#endif
  return false;
}

namespace {
[[noreturn]] void device_memory_refused() {
  throw InputError("device arrays need a workspace on the CUDA backend (this one runs on the CPU)");
}
}  // namespace

Volume<float> Workspace::distance_transform(const Mask& phase, Boundary boundary) {
#ifdef POREFORGE_HAVE_CUDA
  if (m_impl) return m_impl->cuda.distance_transform(phase, boundary);
#endif
  return cpu::distance_transform(phase, boundary);
}

Volume<float> Workspace::local_thickness(const Mask& phase, Boundary boundary) {
#ifdef POREFORGE_HAVE_CUDA
  if (m_impl) return m_impl->cuda.local_thickness(phase, boundary);
#endif
  return cpu::local_thickness(phase, boundary);
}

PoreSizeDistribution Workspace::pore_size_distribution(const Mask& phase, Boundary boundary, const Bins& bins) {
#ifdef POREFORGE_HAVE_CUDA
  if (m_impl) return psd_from_counts(m_impl->cuda.psd_counts(phase, boundary, bins), bins);
#endif
  return psd_from_counts(cpu::psd_counts(phase, boundary, bins), bins);
}

void Workspace::distance_transform([[maybe_unused]] const uint8_t* d_mask, [[maybe_unused]] float* d_out,
                                   [[maybe_unused]] const Shape& shape, [[maybe_unused]] const Spacing& spacing,
                                   [[maybe_unused]] Boundary boundary, [[maybe_unused]] void* stream) {
#ifdef POREFORGE_HAVE_CUDA
  if (m_impl) return m_impl->cuda.distance_transform(d_mask, d_out, shape, spacing, boundary, stream);
#endif
  device_memory_refused();
}

void Workspace::local_thickness([[maybe_unused]] const uint8_t* d_mask, [[maybe_unused]] float* d_out,
                                [[maybe_unused]] const Shape& shape, [[maybe_unused]] const Spacing& spacing,
                                [[maybe_unused]] Boundary boundary, [[maybe_unused]] void* stream) {
#ifdef POREFORGE_HAVE_CUDA
  if (m_impl) return m_impl->cuda.local_thickness(d_mask, d_out, shape, spacing, boundary, stream);
#endif
  device_memory_refused();
}

PoreSizeDistribution Workspace::pore_size_distribution([[maybe_unused]] const uint8_t* d_mask,
                                                       [[maybe_unused]] const Shape& shape,
                                                       [[maybe_unused]] const Spacing& spacing,
                                                       [[maybe_unused]] Boundary boundary,
                                                       [[maybe_unused]] const Bins& bins,
                                                       [[maybe_unused]] void* stream) {
#ifdef POREFORGE_HAVE_CUDA
  if (m_impl) return psd_from_counts(m_impl->cuda.psd_counts(d_mask, shape, spacing, boundary, bins, stream), bins);
#endif
  device_memory_refused();
}

}  // namespace poreforge
