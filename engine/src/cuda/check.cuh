#pragma once
// CUDA error handling: one macro that throws with file:line, the failed call and CUDA's
// message; a no-throw variant for destructors; a launch check that synchronises in Debug only.
#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "poreforge/error.hpp"

namespace poreforge::cuda::detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call, const char* file,
                                          int line) {
  throw RuntimeError(std::string("CUDA error at ") + file + ":" + std::to_string(line) + ": " +
                     call + " failed: " + cudaGetErrorString(err));
}

}  // namespace poreforge::cuda::detail

#define PF_CUDA_CHECK(call)                                                          \
  do {                                                                               \
    const cudaError_t pf_err_ = (call);                                              \
    if (pf_err_ != cudaSuccess)                                                      \
      ::poreforge::cuda::detail::throw_cuda_error(pf_err_, #call, __FILE__, __LINE__); \
  } while (0)

#define PF_CUDA_CHECK_NOTHROW(call)                                                         \
  do {                                                                                      \
    const cudaError_t pf_err_ = (call);                                                     \
    if (pf_err_ != cudaSuccess)                                                             \
      std::fprintf(stderr, "poreforge: %s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,  \
                   cudaGetErrorString(pf_err_));                                            \
  } while (0)

#ifdef NDEBUG
#define PF_CUDA_CHECK_LAUNCH() PF_CUDA_CHECK(cudaGetLastError())
#else
#define PF_CUDA_CHECK_LAUNCH()              \
  do {                                      \
    PF_CUDA_CHECK(cudaGetLastError());      \
    PF_CUDA_CHECK(cudaDeviceSynchronize()); \
  } while (0)
#endif
