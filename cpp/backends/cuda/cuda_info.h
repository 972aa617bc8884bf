// What the CUDA side of this build provides (answered by backends/cuda or
// the no_cuda stand-in). Core code never includes this: the bindings, the
// tests and the backends do.
#pragma once

#include <cstddef>

#include "ringfire/arith/wide.h"

namespace ringfire {

// Whether the CUDA backend target was compiled into this build.
bool cuda_compiled();
// CUDA devices visible at run time (0 without CUDA, driver or GPU).
int cuda_device_count();
// Smoke test of the shared RF_HD arithmetic on the GPU: out = a*b mod q over
// n values. Returns false (and leaves out untouched) when no GPU is usable.
bool cuda_mul_mod(const u64* a, const u64* b, u64* out, std::size_t n, u64 q);

}  // namespace ringfire
