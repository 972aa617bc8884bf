// Internal to backends/cuda: the element-wise kernel template, shared by
// elementwise.cu and ntt.cu (the radix-2 baseline's separate Hadamard
// product). Anonymous namespace: each .cu instantiates its own copy.
#pragma once

#include "cuda_backend.h"
#include "launch.h"
#include "ringfire/arith/modular.h"

namespace ringfire::cuda {
namespace {

// ===========================================================================
// Element-wise kernels. One coefficient per thread: these are bandwidth
// bound (2-3 words moved per mul_mod), so the goal is full coalescing, not
// more work per thread.

enum class Op { add, sub, negate, multiply, multiply_add };

template <Op op>
__global__ void elementwise_kernel(const u64* a, const u64* b, u64* out, const LimbConstants* limbs, int log_n) {
  const Coord c = coord(log_n);
  const Modulus mod = limbs[c.limb].modulus;
  const u64 q = mod.value();
  const u64 x = a[c.index];
  if constexpr (op == Op::add) out[c.index] = add_mod(x, b[c.index], q);
  if constexpr (op == Op::sub) out[c.index] = sub_mod(x, b[c.index], q);
  if constexpr (op == Op::negate) out[c.index] = neg_mod(x, q);
  if constexpr (op == Op::multiply) out[c.index] = mul_mod(x, b[c.index], mod);
  if constexpr (op == Op::multiply_add) out[c.index] = kernel::multiply_add_body(x, b[c.index], out[c.index], mod);
}

}  // namespace
}  // namespace ringfire::cuda
