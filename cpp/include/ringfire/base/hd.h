// RF_HD marks scalar math shared by CPU loops and CUDA kernels.
// Under nvcc it expands to __host__ __device__; elsewhere to plain inline.
#pragma once

#if defined(__CUDACC__)
#define RF_HD __host__ __device__ __forceinline__
#else
#define RF_HD inline
#endif

// True while compiling device code (nvcc's device pass).
#if defined(__CUDA_ARCH__)
#define RF_DEVICE_PASS 1
#else
#define RF_DEVICE_PASS 0
#endif
