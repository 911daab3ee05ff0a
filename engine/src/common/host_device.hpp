#pragma once
// Lets the same inline math compile for both backends.
#if defined(__CUDACC__)
#define PF_HD __host__ __device__ __forceinline__
#else
#define PF_HD inline
#endif
