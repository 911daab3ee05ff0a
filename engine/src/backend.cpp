#include "poreforge/backend.hpp"

#include <omp.h>

#include "poreforge/error.hpp"
#ifdef POREFORGE_HAVE_CUDA
#include "cuda/device.hpp"
#endif

namespace poreforge {

std::string to_string(Backend b) {
  switch (b) {
    case Backend::automatic: return "auto";
    case Backend::cpu: return "cpu";
    case Backend::cuda: return "cuda";
  }
  return "?";
}

Backend parse_backend(std::string_view text) {
  if (text == "auto") return Backend::automatic;
  if (text == "cpu") return Backend::cpu;
  if (text == "cuda") return Backend::cuda;
  throw InputError("unknown backend '" + std::string(text) + "' (expected auto, cpu or cuda)");
}

bool cuda_compiled() {
#ifdef POREFORGE_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

bool has_cuda_device() {
#ifdef POREFORGE_HAVE_CUDA
  return cuda::device_present(nullptr);
#else
  return false;
#endif
}

int cuda_device_count() {
#ifdef POREFORGE_HAVE_CUDA
  return cuda::device_count();
#else
  return 0;
#endif
}

std::size_t cuda_memory_available() {
#ifdef POREFORGE_HAVE_CUDA
  return cuda::free_memory();
#else
  return 0;
#endif
}

std::string cuda_device_description() {
#ifdef POREFORGE_HAVE_CUDA
  return cuda::device_description();
#else
  return "this build has no CUDA backend (nvcc was not found when it was configured)";
#endif
}

bool cuda_implements(Operation) {
  // Every engine operation has a CUDA twin in a build with the CUDA backend.
  return cuda_compiled();
}

namespace {
const char* operation_name(Operation op) {
  switch (op) {
    case Operation::distance_transform: return "the distance transform";
    case Operation::local_thickness: return "local thickness";
    case Operation::pore_size_distribution: return "the pore-size distribution";
    case Operation::morphology: return "morphology";
    case Operation::connected_components: return "connected components";
    case Operation::formation_factor: return "the formation factor";
    case Operation::permeability: return "the permeability";
  }
  return "this operation";
}
}  // namespace

Backend resolve_backend(Backend requested, Operation op) {
  if (requested == Backend::cpu) return Backend::cpu;
  const bool usable = cuda_compiled() && has_cuda_device() && cuda_implements(op);
  if (requested == Backend::automatic) return usable ? Backend::cuda : Backend::cpu;
  if (!cuda_compiled() || !has_cuda_device())
    throw InputError("backend 'cuda' requested, but " + cuda_device_description());
  if (!cuda_implements(op))
    throw InputError(std::string("backend 'cuda' requested, but the CUDA backend has no kernel for ") +
                     operation_name(op) + " in this version; use --backend cpu or auto");
  return Backend::cuda;
}

int cpu_threads() { return omp_get_max_threads(); }

std::string backend_description(Backend backend) {
  return backend == Backend::cuda ? "cuda: " + cuda_device_description()
                                  : "cpu: " + std::to_string(cpu_threads()) + " threads";
}

}  // namespace poreforge
