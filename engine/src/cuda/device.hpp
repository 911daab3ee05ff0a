#pragma once
// Host-side view of the CUDA backend for the dispatcher (no CUDA types).
#include <cstddef>
#include <string>

namespace poreforge::cuda {

/// True when a CUDA device answers; otherwise writes the reason to `why`. Never throws.
bool device_present(std::string* why);
/// Devices visible to this process; 0 when none answers. Never throws.
int device_count();
/// The current device's number; -1 when none answers. Never throws.
int current_device();
/// Free bytes on the current device (cudaMemGetInfo); 0 when none answers. Never throws.
std::size_t free_memory();
/// "NVIDIA H200 (sm_90, 140 GiB)" or the reason there is no device.
std::string device_description();
/// Brings up the driver and the current device's context (the start-up a process pays once).
/// Never throws: false when no device answers.
bool start_device();
/// True once this process has a context on the device: start_device() or an engine context
/// made it.
bool device_started();
/// Records that a context exists (the engine's contexts call it once they are made).
void note_device_started();

}  // namespace poreforge::cuda
