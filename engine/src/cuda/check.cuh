#pragma once
// CUDA error handling: one macro that throws with file:line, the failed call and CUDA's
// message; a no-throw variant for destructors; a launch check that synchronises in Debug only.
#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "poreforge/error.hpp"

namespace poreforge::cuda::errors {

// Out of memory (the device's, or page-locked host memory: the failed call names which) is a
// limit of the machine for this input (a smaller volume or the CPU would do):
// MemoryLimitError, which the module raises as MemoryError; any other failure is the machine's.
[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call, const char* file,
                                          int line) {
  const std::string what = std::string("CUDA error at ") + file + ":" + std::to_string(line) + ": " + call +
                           " failed: " + cudaGetErrorString(err);
  if (err == cudaErrorMemoryAllocation) throw MemoryLimitError("out of memory: " + what);
  throw RuntimeError(what);
}

}  // namespace poreforge::cuda::errors

#define PF_CUDA_CHECK(call)                                                          \
  do {                                                                               \
    const cudaError_t pf_err_ = (call);                                              \
    if (pf_err_ != cudaSuccess)                                                      \
      ::poreforge::cuda::errors::throw_cuda_error(pf_err_, #call, __FILE__, __LINE__); \
  } while (0)

#define PF_CUDA_CHECK_NOTHROW(call)                                                         \
  do {                                                                                      \
    const cudaError_t pf_err_ = (call);                                                     \
    if (pf_err_ != cudaSuccess)                                                             \
      std::fprintf(stderr, "poreforge: %s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,  \
                   cudaGetErrorString(pf_err_));                                            \
  } while (0)

// After a launch: the launch error always; in Debug builds also the kernel's own errors, by
// synchronising — except while the stream is being captured into a graph, where a
// synchronisation is illegal (the graph launch is checked instead).
#ifdef NDEBUG
#define PF_CUDA_CHECK_LAUNCH(stream) PF_CUDA_CHECK(cudaGetLastError())
#else
#define PF_CUDA_CHECK_LAUNCH(stream)                                   \
  do {                                                                 \
    PF_CUDA_CHECK(cudaGetLastError());                                 \
    cudaStreamCaptureStatus pf_capture_ = cudaStreamCaptureStatusNone; \
    PF_CUDA_CHECK(cudaStreamIsCapturing((stream), &pf_capture_));      \
    if (pf_capture_ == cudaStreamCaptureStatusNone)                    \
      PF_CUDA_CHECK(cudaStreamSynchronize(stream));                    \
  } while (0)
#endif
