// Element-wise operations, scalars, the key-switching inner product, linear
// combinations, copy and zero: the kernels and the CudaBackend members that
// launch them.
#include "cuda_backend.h"
#include "device.h"
#include "elementwise.h"
#include "launch.h"

#include <algorithm>
#include <cstddef>
#include <memory>

#include "ringfire/arith/modular.h"

namespace ringfire::cuda {
namespace {

// Per-limb scalars travel as a kernel parameter (2 KiB, well inside the
// 4 KiB parameter space): no upload, no host synchronisation.
constexpr std::size_t kParamLimbs = 128;
struct ScalarParams {
  ShoupOperand s[kParamLimbs];
};

template <bool Multiply>
__global__ void scalar_kernel(const u64* a, u64* out, ScalarParams params, const LimbConstants* limbs,
                              std::size_t limb0, std::size_t total_limbs, int log_n) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t local = blockIdx.y, limb = limb0 + local;
  const std::size_t index = ((blockIdx.z * total_limbs + limb) << log_n) | j;
  const u64 q = limbs[limb].modulus.value();
  const ShoupOperand s = params.s[local];
  out[index] = Multiply ? kernel::multiply_scalar_body(a[index], s, q) : add_mod(a[index], s.value, q);
}

// Key-switching inner product: terms (digit, b, a) pointer triples travel as
// kernel parameters, kIpTerms per launch; later launches add to the output.
constexpr std::size_t kIpTerms = 32;
struct InnerProductParams {
  const u64* in[kIpTerms];
  const u64* b[kIpTerms];
  const u64* a[kIpTerms];
};

__global__ void inner_product_pair_kernel(InnerProductParams p, std::size_t terms, bool accumulate, u64* out0,
                                          u64* out1, const LimbConstants* limbs, int log_n) {
  const Coord c = coord(log_n);
  const Modulus mod = limbs[c.limb].modulus;
  u64 r0, r1;
  kernel::inner_product_pair_body(p.in, p.b, p.a, terms, c.index, mod, r0, r1);
  if (accumulate) {
    r0 = add_mod(r0, out0[c.index], mod.value());
    r1 = add_mod(r1, out1[c.index], mod.value());
  }
  out0[c.index] = r0;
  out1[c.index] = r1;
}

// The tensor product of two size-2 ciphertexts in one pass: each input word
// is read once for the three outputs (four element-wise launches read a0 and
// a1 twice each and d1 back). The same bodies in the same order as those
// launches (multiply, then multiply_add; a square adds d1 to itself), so the
// words are theirs.
template <bool Square>
__global__ void tensor_kernel(const u64* a0, const u64* a1, const u64* b0, const u64* b1, u64* d0, u64* d1, u64* d2,
                              const LimbConstants* limbs, int log_n) {
  const Coord c = coord(log_n);
  const Modulus mod = limbs[c.limb].modulus;
  const u64 x0 = a0[c.index], x1 = a1[c.index];
  const u64 y0 = Square ? x0 : b0[c.index], y1 = Square ? x1 : b1[c.index];
  d0[c.index] = mul_mod(x0, y0, mod);
  const u64 cross = mul_mod(x0, y1, mod);
  d1[c.index] = Square ? add_mod(cross, cross, mod.value()) : kernel::multiply_add_body(x1, y0, cross, mod);
  d2[c.index] = mul_mod(x1, y1, mod);
}

// A linear combination of at most kLcFewTerms terms (key switching's ModDown
// with its rescale combines three) over up to kLcFewLimbs limbs in one
// launch, the term loop unrolled: the general kernel below takes 8 limbs a
// launch, so 24 limbs took three. Pointers and weights: ~2 KiB of parameters.
constexpr std::size_t kLcFewTerms = 4, kLcFewLimbs = 64;
struct FewTermParams {
  const u64* inputs[kLcFewTerms];
  u64 weights[kLcFewTerms * kLcFewLimbs];  // [t * kLcFewLimbs + local limb]
};

template <unsigned kTerms>
__global__ void linear_combination_few_kernel(FewTermParams params, u64* out, const LimbConstants* limbs,
                                              std::size_t limb0, std::size_t total_limbs, int log_n) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t local = blockIdx.y, limb = limb0 + local;
  const std::size_t index = ((blockIdx.z * total_limbs + limb) << log_n) | j;
  const Modulus mod = limbs[limb].modulus;
  u128 acc = 0;
#pragma unroll
  for (unsigned t = 0; t < kTerms; ++t) {
    const u64 w = params.weights[t * kLcFewLimbs + local];  // uniform across the block
    if (w != 0) acc += mul_wide(params.inputs[t][index], w);
  }
  out[index] = reduce_u128(acc, mod);
}

// One chunk of a linear combination: up to 32 terms (one lazy 128-bit sum,
// reduced once) for up to 8 limbs, with the pointers and weights passed as
// a kernel parameter (~2.3 KiB).
constexpr std::size_t kLcTerms = kernel::kLinearCombinationChunk;
constexpr std::size_t kLcLimbs = 8;
struct LinearParams {
  const u64* inputs[kLcTerms];
  u64 weights[kLcTerms * kLcLimbs];  // [t * kLcLimbs + local limb]
};

__global__ void linear_combination_kernel(LinearParams params, std::size_t terms, const u64* partial_in,
                                          u64* partial_out, const LimbConstants* limbs, std::size_t limb0,
                                          std::size_t total_limbs, int log_n) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t local = blockIdx.y, limb = limb0 + local;
  const std::size_t index = ((blockIdx.z * total_limbs + limb) << log_n) | j;
  const Modulus mod = limbs[limb].modulus;
  u128 acc = 0;
  for (std::size_t t = 0; t < terms; ++t) {
    const u64 w = params.weights[t * kLcLimbs + local];
    if (w != 0) acc += mul_wide(params.inputs[t][index], w);
  }
  u64 r = reduce_u128(acc, mod);
  if (partial_in != nullptr) r = add_mod(partial_in[index], r, mod.value());
  partial_out[index] = r;
}

}  // namespace

// --- element-wise -------------------------------------------------------------

#define RF_ELEMENTWISE(OP, A, B, OUT, NAME)                                              \
  if (batch == 0) return;                                                            \
  DeviceGuard guard(device_);                                                        \
  const LimbConstants* lc = limb_constants(base);                                    \
  const Geometry g = coeff_geometry(base.n(), base.size(), batch);                   \
  elementwise_kernel<OP><<<g.grid, g.block, 0, launch_stream()>>>(A, B, OUT, lc, g.log_n); \
  after_launch(NAME)

void CudaBackend::add(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base) {
  RF_ELEMENTWISE(Op::add, a, b, out, "add");
}
void CudaBackend::sub(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base) {
  RF_ELEMENTWISE(Op::sub, a, b, out, "sub");
}
void CudaBackend::negate(const u64* a, u64* out, std::size_t batch, const RnsBase& base) {
  RF_ELEMENTWISE(Op::negate, a, nullptr, out, "negate");
}
void CudaBackend::multiply(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base) {
  RF_ELEMENTWISE(Op::multiply, a, b, out, "multiply");
}
void CudaBackend::multiply_add(const u64* a, const u64* b, u64* acc, std::size_t batch, const RnsBase& base) {
  RF_ELEMENTWISE(Op::multiply_add, a, b, acc, "multiply_add");
}
#undef RF_ELEMENTWISE

void CudaBackend::tensor(const u64* a0, const u64* a1, const u64* b0, const u64* b1, u64* d0, u64* d1, u64* d2,
                         const RnsBase& base) {
  DeviceGuard guard(device_);
  const LimbConstants* lc = limb_constants(base);
  const Geometry g = coeff_geometry(base.n(), base.size(), 1);
  if (a0 == b0 && a1 == b1)
    tensor_kernel<true><<<g.grid, g.block, 0, launch_stream()>>>(a0, a1, b0, b1, d0, d1, d2, lc, g.log_n);
  else
    tensor_kernel<false><<<g.grid, g.block, 0, launch_stream()>>>(a0, a1, b0, b1, d0, d1, d2, lc, g.log_n);
  after_launch("tensor");
}

namespace {

template <bool Multiply>
void launch_scalar(const u64* a, const u64* scalars, u64* out, std::size_t batch, const RnsBase& base,
                   const LimbConstants* lc, cudaStream_t stream) {
  const std::size_t limbs = base.size();
  for (std::size_t l0 = 0; l0 < limbs; l0 += kParamLimbs) {
    const std::size_t count = std::min(kParamLimbs, limbs - l0);
    ScalarParams params{};
    for (std::size_t l = 0; l < count; ++l) {
      const u64 q = base.modulus(l0 + l).value();
      // Shoup's quotient is formed once per limb on the host (a 128-bit
      // division the device would otherwise repeat per thread).
      params.s[l] = Multiply ? make_shoup(scalars[l0 + l], q) : ShoupOperand{scalars[l0 + l], 0};
    }
    const Geometry g = coeff_geometry(base.n(), count, batch);
    scalar_kernel<Multiply><<<g.grid, g.block, 0, stream>>>(a, out, params, lc, l0, limbs, g.log_n);
  }
}

}  // namespace

void CudaBackend::multiply_scalar(const u64* a, const u64* scalars, u64* out, std::size_t batch,
                                  const RnsBase& base) {
  if (batch == 0) return;
  DeviceGuard guard(device_);
  launch_scalar<true>(a, scalars, out, batch, base, limb_constants(base), launch_stream());
  after_launch("multiply_scalar");
}

void CudaBackend::add_scalar(const u64* a, const u64* scalars, u64* out, std::size_t batch, const RnsBase& base) {
  if (batch == 0) return;
  DeviceGuard guard(device_);
  launch_scalar<false>(a, scalars, out, batch, base, limb_constants(base), launch_stream());
  after_launch("add_scalar");
}

void CudaBackend::inner_product_pair(const u64* const* in, const u64* const* b, const u64* const* a,
                                     std::size_t terms, u64* out0, u64* out1, const RnsBase& base) {
  DeviceGuard guard(device_);
  const LimbConstants* lc = limb_constants(base);
  const Geometry g = coeff_geometry(base.n(), base.size(), 1);
  if (terms == 0) {
    zero(out0, base.size() * base.n());
    zero(out1, base.size() * base.n());
    return;
  }
  for (std::size_t t0 = 0; t0 < terms; t0 += kIpTerms) {
    const std::size_t chunk = std::min(kIpTerms, terms - t0);
    InnerProductParams params{};
    for (std::size_t t = 0; t < chunk; ++t) {
      params.in[t] = in[t0 + t];
      params.b[t] = b[t0 + t];
      params.a[t] = a[t0 + t];
    }
    inner_product_pair_kernel<<<g.grid, g.block, 0, launch_stream()>>>(params, chunk, t0 > 0, out0, out1, lc,
                                                                         g.log_n);
    after_launch("inner_product_pair");
  }
}

void CudaBackend::linear_combination(const u64* const* inputs, const u64* weights, std::size_t terms, u64* out,
                                     std::size_t batch, const RnsBase& base) {
  if (batch == 0) return;
  DeviceGuard guard(device_);
  const LimbConstants* lc = limb_constants(base);
  const std::size_t limbs = base.size(), n = base.n();
  if (terms == 0) {
    zero(out, batch * limbs * n);
    return;
  }
  if (terms <= kLcFewTerms) {
    for (std::size_t l0 = 0; l0 < limbs; l0 += kLcFewLimbs) {
      const std::size_t count = std::min(kLcFewLimbs, limbs - l0);
      const Geometry g = coeff_geometry(n, count, batch);
      FewTermParams params{};
      for (std::size_t t = 0; t < terms; ++t) {
        params.inputs[t] = inputs[t];
        for (std::size_t l = 0; l < count; ++l) params.weights[t * kLcFewLimbs + l] = weights[t * limbs + l0 + l];
      }
      using FewFn = void (*)(FewTermParams, u64*, const LimbConstants*, std::size_t, std::size_t, int);
      constexpr FewFn kernels[kLcFewTerms] = {linear_combination_few_kernel<1>, linear_combination_few_kernel<2>,
                                              linear_combination_few_kernel<3>, linear_combination_few_kernel<4>};
      kernels[terms - 1]<<<g.grid, g.block, 0, launch_stream()>>>(params, out, lc, l0, limbs, g.log_n);
      after_launch("linear_combination");
    }
    return;
  }
  // More than one chunk of terms: partial sums go to scratch, and only the
  // last chunk writes `out` (which may alias an input: each thread reads its
  // inputs at an element before writing that element).
  const bool chunked = terms > kLcTerms;
  std::unique_ptr<Scratch> partial;
  if (chunked) partial = std::make_unique<Scratch>(device_pool(device_), batch * limbs * n);
  for (std::size_t l0 = 0; l0 < limbs; l0 += kLcLimbs) {
    const std::size_t count = std::min(kLcLimbs, limbs - l0);
    const Geometry g = coeff_geometry(n, count, batch);
    for (std::size_t t0 = 0; t0 < terms; t0 += kLcTerms) {
      const std::size_t chunk = std::min(kLcTerms, terms - t0);
      LinearParams params{};
      for (std::size_t t = 0; t < chunk; ++t) {
        params.inputs[t] = inputs[t0 + t];
        for (std::size_t l = 0; l < count; ++l) params.weights[t * kLcLimbs + l] = weights[(t0 + t) * limbs + l0 + l];
      }
      const bool last = t0 + chunk == terms;
      const u64* in = t0 == 0 ? nullptr : partial->data();
      u64* dst = last ? out : partial->data();
      linear_combination_kernel<<<g.grid, g.block, 0, launch_stream()>>>(params, chunk, in, dst, lc, l0, limbs, g.log_n);
      after_launch("linear_combination");
    }
  }
}

void CudaBackend::copy(const u64* src, u64* dst, std::size_t words) {
  if (words == 0) return;
  DeviceGuard guard(device_);
  check(cudaMemcpyAsync(dst, src, words * sizeof(u64), cudaMemcpyDeviceToDevice, launch_stream()), "cuda.copy");
  after_launch("copy");
}

void CudaBackend::copy_blocks(const u64* src, std::size_t src_step, u64* dst, std::size_t dst_step,
                              std::size_t words, std::size_t count) {
  if (words == 0 || count == 0) return;
  // A strided copy's pitches are limited (cudaDevAttrMaxPitch, 2^31 - 1 bytes on
  // current GPUs): wider steps go block by block.
  constexpr std::size_t kMaxPitchWords = (std::size_t{1} << 31) / sizeof(u64) - 1;
  if (src_step > kMaxPitchWords || dst_step > kMaxPitchWords)
    return Backend::copy_blocks(src, src_step, dst, dst_step, words, count);
  DeviceGuard guard(device_);
  check(cudaMemcpy2DAsync(dst, dst_step * sizeof(u64), src, src_step * sizeof(u64), words * sizeof(u64), count,
                          cudaMemcpyDeviceToDevice, launch_stream()),
        "cuda.copy");
  after_launch("copy_blocks");
}

void CudaBackend::zero(u64* dst, std::size_t words) {
  if (words == 0) return;
  DeviceGuard guard(device_);
  check(cudaMemsetAsync(dst, 0, words * sizeof(u64), launch_stream()), "cuda.zero");
  after_launch("zero");
}

}  // namespace ringfire::cuda
