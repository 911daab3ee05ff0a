// Device discovery for the dispatcher. Never throws: a machine without a GPU is normal.
#include <cuda_runtime.h>

#include <atomic>
#include <string>

#include "device.hpp"

namespace poreforge::cuda {

bool device_present(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    if (why) *why = std::string("no CUDA device (") + cudaGetErrorString(err) + ")";
    cudaGetLastError();  // clear the sticky error so later queries start clean
    return false;
  }
  if (count == 0) {
    if (why) *why = "no CUDA device found";
    return false;
  }
  return true;
}

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

int current_device() {
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return device;
}

std::size_t free_memory() {
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return free_bytes;
}

std::string device_description() {
  std::string why;
  if (!device_present(&why)) return why;
  int dev = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess)
    return "CUDA device present, but its properties could not be read";
  const double gib = static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0);
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) +
         ", " + std::to_string(static_cast<int>(gib + 0.5)) + " GiB)";
}

namespace {
std::atomic<bool> started{false};
}  // namespace

bool start_device() {
  if (!device_present(nullptr)) return false;
  if (cudaFree(nullptr) != cudaSuccess) {  // the documented way to create the context now
    cudaGetLastError();
    return false;
  }
  started = true;
  return true;
}

bool device_started() { return started; }

void note_device_started() { started = true; }

}  // namespace poreforge::cuda
