#pragma once
/// Marks the annealing step's functions for both loops: __host__ __device__ under nvcc, plain
/// inline for g++. The step is written once and compiled twice, NanoVDB's way, so the host loop
/// and the device kernels cannot drift apart.
#if defined(__CUDACC__)
#define PF_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define PF_HOST_DEVICE inline
#endif
