#pragma once
/// Marks inline math and the annealing step's functions for both backends: __host__ __device__
/// under nvcc, plain inline for g++. Written once and compiled twice (NanoVDB's way), so the
/// host and device paths cannot drift apart.
#if defined(__CUDACC__)
#define PF_HD __host__ __device__ __forceinline__
#else
#define PF_HD inline
#endif
