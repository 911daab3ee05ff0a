#pragma once
/// Run-time choice between the CPU (OpenMP) and CUDA backends.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace poreforge {

enum class Backend { automatic, cpu, cuda };

std::string to_string(Backend b);
/// Parses "auto", "cpu" or "cuda"; throws InputError otherwise.
Backend parse_backend(std::string_view text);

/// True when this build contains the CUDA backend.
bool cuda_compiled();
/// True when the CUDA backend is compiled and at least one device answers. Never throws.
bool has_cuda_device();
/// Number of CUDA devices this process sees (0 without the CUDA backend or a device).
int cuda_device_count();
/// Free memory of the current CUDA device in bytes (cudaMemGetInfo); 0 without the CUDA
/// backend or a device. Never throws.
std::size_t cuda_memory_available();
/// The current CUDA device's number (the one work goes to); -1 without the CUDA backend or a
/// device. Never throws.
int cuda_current_device();
/// "NVIDIA H200 (sm_90, 139 GiB)" or a sentence saying why there is none.
std::string cuda_device_description();

/// Which backends implement a given engine operation in this build.
enum class Operation {
  distance_transform,
  local_thickness,
  pore_size_distribution,
  morphology,
  formation_factor,
  permeability,
  connected_components,
};
bool cuda_implements(Operation op);

/// Resolves `automatic` to a concrete backend for `op`: CUDA when compiled, a device is
/// present and the operation has a CUDA twin; the CPU otherwise. An explicit `cuda` request
/// that cannot be met throws InputError saying why.
Backend resolve_backend(Backend requested, Operation op);

/// Starts the CUDA device's context on another thread (nothing without the CUDA backend; once
/// per process), so that a command that has chosen the device reads its input meanwhile.
void start_device_in_background();

/// What `automatic` resolves to for one-shot work on images of `voxels` voxels, `images` of
/// them (a batch; a loop through one workspace): the backend expected to finish first — the
/// CPU on every thread, or the device with its start-up unless this process has paid it — and
/// why, in words. Another request resolves as resolve_backend does. Asks whether a device
/// answers (the driver's start) but starts no context.
struct BackendChoice {
  Backend backend;
  std::string reason;
};
BackendChoice choose_backend(Backend requested, Operation op, int64_t voxels, int64_t images = 1);

/// Threads the CPU backend uses (OpenMP's maximum).
int cpu_threads();

/// What a resolved backend runs on, for logs and reports: "cuda: NVIDIA H200 (sm_90, 140 GiB)"
/// or "cpu: 2 threads".
std::string backend_description(Backend backend);

}  // namespace poreforge
