#include "poreforge/backend.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <thread>

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

int cuda_current_device() {
#ifdef POREFORGE_HAVE_CUDA
  return cuda::current_device();
#else
  return -1;
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

namespace {

// The device's start-up run on its own thread, begun at most once per process; the destructor
// waits for it, so that the process never exits while the driver is coming up. Begun only
// once the device has been chosen, so a run on the CPU never waits for it.
struct DeviceStart {
  std::once_flag once;
  std::thread thread;
  ~DeviceStart() {
    if (thread.joinable()) thread.join();
  }
};

DeviceStart& device_start() {
  static DeviceStart start;
  return start;
}

// Cost model of one-shot local thickness, from the thickness command's measured engine times
// (docs/performance.md). The CPU engine follows Amdahl's law: about 1.0e-8 s a voxel that more
// threads do not shorten (memory bandwidth) and 6.9e-8 s a voxel shared among the threads
// (fitted to 250³ in 0.69 s on 2 threads and 400³ in 0.88 s on 16, on two machines). The
// device takes about 1.5e-9 s a voxel, most of it the copies in and out of pageable memory,
// plus 0.02 s to make its workspace, plus its start-up (driver and context), counted at 0.5 s
// until this process has started it.
constexpr double kCpuSerialSecondsPerVoxel = 1.0e-8;
constexpr double kCpuParallelSecondsPerVoxel = 6.9e-8;
constexpr double kDeviceSecondsPerVoxel = 1.5e-9;
constexpr double kDeviceWorkspaceSeconds = 0.02;
constexpr double kDeviceStartSeconds = 0.5;

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, s < 0.1 ? "%.3f s" : "%.2f s", s);
  return text;
}

}  // namespace

void start_device_in_background() {
#ifdef POREFORGE_HAVE_CUDA
  DeviceStart& s = device_start();
  std::call_once(s.once, [&s] { s.thread = std::thread([] { cuda::start_device(); }); });
#endif
}

BackendChoice choose_backend(Backend requested, Operation op, int64_t voxels, int64_t images) {
  if (requested != Backend::automatic) return {resolve_backend(requested, op), "asked for"};
  if (!cuda_compiled()) return {Backend::cpu, "this build has no CUDA backend"};
  const double n = double(std::max<int64_t>(voxels, 1)), k = double(std::max<int64_t>(images, 1));
  const int threads = std::max(cpu_threads(), 1);
  const double cpu = k * n * (kCpuSerialSecondsPerVoxel + kCpuParallelSecondsPerVoxel / double(threads));
#ifdef POREFORGE_HAVE_CUDA
  const double start_left = cuda::device_started() ? 0.0 : kDeviceStartSeconds;
#else
  const double start_left = kDeviceStartSeconds;
#endif
  const double device = start_left + kDeviceWorkspaceSeconds + k * n * kDeviceSecondsPerVoxel;
  const std::string estimate = "about " + seconds_text(device) + " on a device" +
                               (start_left > 0 ? " with its start-up" : "") + " against " + seconds_text(cpu) +
                               " on " + std::to_string(threads) + " CPU threads";
  // Asking whether a device answers starts the driver (0.1-0.15 s, longer than a small image
  // takes on the CPU): work the CPU should finish first never asks.
  if (cpu <= device) return {Backend::cpu, estimate};
  if (!has_cuda_device()) return {Backend::cpu, "no CUDA device"};
  if (!cuda_implements(op)) return {Backend::cpu, "the CUDA backend has no kernel for this"};
  return {Backend::cuda, estimate};
}

int cpu_threads() { return omp_get_max_threads(); }

std::string backend_description(Backend backend) {
  return backend == Backend::cuda ? "cuda: " + cuda_device_description()
                                  : "cpu: " + std::to_string(cpu_threads()) + " threads";
}

}  // namespace poreforge
