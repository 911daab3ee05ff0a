#pragma once
// Host-side view of the CUDA backend for the dispatcher (no CUDA types).
#include <cstddef>
#include <string>

namespace poreforge::cuda {

/// True when a CUDA device answers; otherwise writes the reason to `why`. Never throws.
bool device_present(std::string* why);
/// Devices visible to this process; 0 when none answers. Never throws.
int device_count();
/// Free bytes on the current device (cudaMemGetInfo); 0 when none answers. Never throws.
std::size_t free_memory();
/// "NVIDIA H200 (sm_90, 140 GiB)" or the reason there is no device.
std::string device_description();

}  // namespace poreforge::cuda
