// Base conversion (fast and exact): the three kernel passes and the multiword
// fix-up, the fused kernel for few source limbs, and CudaBackend::base_convert.
#include "cuda_backend.h"
#include "device.h"
#include "launch.h"

#include <algorithm>
#include <cstddef>
#include <memory>

#include "ringfire/arith/modular.h"

namespace ringfire::cuda {
namespace {

// ===========================================================================
// Base conversion kernels (three passes, as the CPU)

// Pass 1: y_i = x_i (Q/q_i)^-1 mod q_i; grid y = source limb.
__global__ void base_convert_scale_kernel(const u64* in, u64* y, ConverterConstants cc, int log_n) {
  const Coord c = coord(log_n);
  y[c.index] = kernel::base_convert_scale_body(in[c.index], cc.qhat_inv[c.limb], cc.from[c.limb].value());
}

// Pass 2 (exact): v = round(sum_i y_i / q_i) in double; coefficients whose
// sum lies within 2^-36 of a half are appended to `flagged` for the
// multiword rule. Grid y = 1.
__global__ void base_convert_round_kernel(const u64* y, u64* v, ConverterConstants cc, std::size_t src,
                                          unsigned long long* flagged_count, u64* flagged, int log_n) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t poly = blockIdx.z;
  const u64* yp = y + ((poly * src) << log_n) + j;
  double s = 0.0;
  for (std::size_t i = 0; i < src; ++i) s = kernel::base_convert_sum_step(s, yp[i << log_n], cc.reciprocal[i]);
  const std::size_t out = (poly << log_n) | j;
  if (kernel::base_convert_near_half(s)) {
    flagged[atomicAdd(flagged_count, 1ull)] = out;
    v[out] = 0;
  } else {
    v[out] = kernel::base_convert_rounded(s);
  }
}

// Pass 2b: the multiword rule for the flagged coefficients (rare: about
// 2^-35 of random inputs). A small fixed grid strides over the list; each
// thread owns src + 1 words of scratch in global memory, so no per-thread
// local arrays inflate every thread's stack.
constexpr unsigned kFixupBlocks = 16, kFixupThreads = 64;
__global__ void base_convert_fixup_kernel(const u64* y, u64* v, ConverterConstants cc, std::size_t src,
                                          const unsigned long long* flagged_count, const u64* flagged, u64* scratch,
                                          int log_n) {
  const std::size_t tid = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  u64* acc = scratch + tid * (src + 1);
  const std::size_t count = *flagged_count;
  const std::size_t mask = (std::size_t{1} << log_n) - 1;
  for (std::size_t f = tid; f < count; f += stride) {
    const std::size_t out = flagged[f];
    const std::size_t poly = out >> log_n, j = out & mask;
    v[out] = kernel::exact_rounded_quotient(y + ((poly * src) << log_n) + j, std::size_t{1} << log_n, cc.qhat_words,
                                            cc.q_words, src, acc);
  }
}

// Pass 3: z_j = sum_i y_i (Q/q_i mod p_j) [- v Q] mod p_j. Each thread
// takes one coefficient and kSumTargets target limbs (grid y = target
// groups), so every y word is read once per group rather than once per
// target; the reads of y are coalesced across the warp and the constants
// are uniform (cached).
constexpr unsigned kSumTargets = 4;
__global__ void base_convert_sum_kernel(const u64* y, const u64* v, u64* out, ConverterConstants cc, std::size_t src,
                                        std::size_t dst, int log_n) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t n = std::size_t{1} << log_n, poly = blockIdx.z, t0 = blockIdx.y * std::size_t{kSumTargets};
  const unsigned count = static_cast<unsigned>(dst - t0 < kSumTargets ? dst - t0 : kSumTargets);
  const u64* yp = y + poly * src * n + j;
  u64 r[kSumTargets] = {};
  if (src <= kernel::kBaseConvShoupTerms) {
    for (std::size_t i = 0; i < src; ++i, yp += n) {
      const u64 yi = *yp;
#pragma unroll
      for (unsigned t = 0; t < kSumTargets; ++t)
        if (t < count)
          r[t] = kernel::base_convert_shoup_step(r[t], yi, cc.qhat_mod_p_shoup[(t0 + t) * src + i],
                                                 cc.to[t0 + t].value());
    }
#pragma unroll
    for (unsigned t = 0; t < kSumTargets; ++t) {
      const u64 pv = t < count ? cc.to[t0 + t].value() : 0;
      r[t] -= (t < count && r[t] >= pv) ? pv : 0;
    }
  } else {
    // Lazy 128-bit sums, reduced every kBaseConvLazyTerms source limbs.
    for (std::size_t i0 = 0; i0 < src; i0 += kernel::kBaseConvLazyTerms) {
      const std::size_t i1 = src - i0 < kernel::kBaseConvLazyTerms ? src : i0 + kernel::kBaseConvLazyTerms;
      u128 acc[kSumTargets] = {};
      for (std::size_t i = i0; i < i1; ++i, yp += n) {
        const u64 yi = *yp;
#pragma unroll
        for (unsigned t = 0; t < kSumTargets; ++t)
          if (t < count) acc[t] += mul_wide(yi, cc.qhat_mod_p[(t0 + t) * src + i]);
      }
#pragma unroll
      for (unsigned t = 0; t < kSumTargets; ++t)
        if (t < count) r[t] = add_mod(r[t], reduce_u128(acc[t], cc.to[t0 + t]), cc.to[t0 + t].value());
    }
  }
#pragma unroll
  for (unsigned t = 0; t < kSumTargets; ++t) {
    if (t >= count) continue;
    u64 z = r[t];
    if (v != nullptr) z = kernel::base_convert_subtract_vq(z, v[poly * n + j], cc.q_mod_p[t0 + t], cc.to[t0 + t]);
    out[(poly * dst + t0 + t) * n + j] = z;
  }
}

// The three passes in one, for conversions from at most kBaseConvShoupTerms
// source limbs (key switching's ModUp from a digit, its ModDown from P): each
// thread scales its coefficient's source words into registers, rounds v from
// them and writes kFusedTargets target limbs (grid y = target groups, each
// recomputing y and v, which costs src products, not a pass over memory).
// Neither y nor v goes through global memory and one launch replaces four.
// The same bodies in the same order as the passes above, so the results are
// identical word for word; a sum within 2^-36 of a half takes the multiword
// rule right here (about 2^-35 of random inputs: the divergence is harmless).
constexpr unsigned kFusedTargets = 8;
constexpr unsigned kFusedMaxSource = static_cast<unsigned>(kernel::kBaseConvShoupTerms);
// The source limb count is a template parameter: the loops unroll exactly
// (a run-time count under an unrolled bound of 8 executed 31 % more
// instructions for 4 source limbs; Nsight Compute on an H200).
// `Consts` gives polynomial z's converter: one for all (OneConverter), or one
// per polynomial (DigitConverters: ModUp's digits, each from its own limbs).
struct OneConverter {
  ConverterConstants cc;
  __device__ const ConverterConstants& at(unsigned) const { return cc; }
};
constexpr std::size_t kBatchDigits = 16;
struct DigitConverters {
  ConverterConstants cc[kBatchDigits];
  __device__ const ConverterConstants& at(unsigned z) const { return cc[z]; }
};

template <unsigned kSrc, class Consts>
__global__ void base_convert_fused_kernel(const u64* in, u64* out, const __grid_constant__ Consts consts, unsigned dst,
                                          bool exact, int log_n) {
  const ConverterConstants& cc = consts.at(blockIdx.z);
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t n = std::size_t{1} << log_n, poly = blockIdx.z;
  const unsigned t0 = blockIdx.y * kFusedTargets, t1 = dst - t0 < kFusedTargets ? dst : t0 + kFusedTargets;
  const u64* xp = in + poly * kSrc * n + j;
  u64 y[kSrc];
  double s = 0.0;
#pragma unroll
  for (unsigned i = 0; i < kSrc; ++i) {
    y[i] = kernel::base_convert_scale_body(xp[i * n], cc.qhat_inv[i], cc.from[i].value());
    s = kernel::base_convert_sum_step(s, y[i], cc.reciprocal[i]);
  }
  u64 v = 0;
  if (exact) {
    if (kernel::base_convert_near_half(s)) {
      // Its own copy of y: taking y's address would move it to local memory
      // on every thread's path.
      u64 y_words[kSrc], acc[kSrc + 1];
      for (unsigned i = 0; i < kSrc; ++i) y_words[i] = y[i];
      v = kernel::exact_rounded_quotient(y_words, 1, cc.qhat_words, cc.q_words, kSrc, acc);
    } else {
      v = kernel::base_convert_rounded(s);
    }
  }
  for (unsigned t = t0; t < t1; ++t) {
    const u64 p = cc.to[t].value();
    const ShoupOperand* factors = cc.qhat_mod_p_shoup + t * kSrc;
    u64 r = 0;
#pragma unroll
    for (unsigned i = 0; i < kSrc; ++i) r = kernel::base_convert_shoup_step(r, y[i], factors[i], p);
    // - v Q as one more Shoup term (v <= kSrc): the same residue as the
    // passes' Barrett subtraction, with the cheaper product.
    if (exact) r = kernel::base_convert_shoup_step(r, v, cc.neg_q_mod_p[t], p);
    r -= r >= p ? p : 0;
    out[((poly * dst + t) << log_n) | j] = r;
  }
}

template <unsigned kSrc, class Consts>
void launch_fused(const u64* in, u64* out, const Consts& consts, unsigned src, unsigned dst, bool exact,
                  const Geometry& g, cudaStream_t stream) {
  if constexpr (kSrc > 1) {
    if (src < kSrc) return launch_fused<kSrc - 1>(in, out, consts, src, dst, exact, g, stream);
  }
  base_convert_fused_kernel<kSrc, Consts><<<g.grid, g.block, 0, stream>>>(in, out, consts, dst, exact, g.log_n);
}

// Key switching's ModUp writes its converted limbs around the digit's own, so
// they are not contiguous: their addresses travel as a kernel parameter (1 KiB)
// and one launch moves them all, where a copy per limb took a launch each
// (the digit count times the extended base's size per key switch).
constexpr std::size_t kScatterLimbs = 128;
struct LimbPointers {
  u64* limb[kScatterLimbs];
};

__global__ void scatter_limbs_kernel(const u64* src, LimbPointers dst, int log_n) {
  const Coord c = coord(log_n);
  dst.limb[c.limb][c.j] = src[c.index];
}

}  // namespace

// --- base conversion ----------------------------------------------------------

void CudaBackend::base_convert(const u64* in, u64* out, std::size_t batch, const BaseConverter& conv,
                               BaseConversion kind) {
  if (batch == 0) return;
  DeviceGuard guard(device_);
  const ConverterConstants& cc = converter_constants(conv);
  const std::size_t n = conv.from().n(), src = conv.from().size(), dst = conv.to().size();
  if (fused_base_convert_ && src <= kFusedMaxSource) {
    const Geometry g = coeff_geometry(n, (dst + kFusedTargets - 1) / kFusedTargets, batch);
    launch_fused<kFusedMaxSource>(in, out, OneConverter{cc}, static_cast<unsigned>(src), static_cast<unsigned>(dst),
                                  kind == BaseConversion::exact, g, launch_stream());
    after_launch("base_convert_fused");
    return;
  }
  CudaPool& pool = device_pool(device_);
  Scratch y(pool, batch * src * n);
  const Geometry g1 = coeff_geometry(n, src, batch);
  base_convert_scale_kernel<<<g1.grid, g1.block, 0, launch_stream()>>>(in, y.data(), cc, g1.log_n);
  after_launch("base_convert_scale");
  std::unique_ptr<Scratch> v;
  if (kind == BaseConversion::exact) {
    v = std::make_unique<Scratch>(pool, batch * n);
    // One allocation: the flagged count (word 0) and the flagged list.
    Scratch flagged(pool, 1 + batch * n);
    Scratch acc(pool, std::size_t{kFixupBlocks} * kFixupThreads * (src + 1));
    auto* count = reinterpret_cast<unsigned long long*>(flagged.data());
    check(cudaMemsetAsync(count, 0, sizeof(u64), launch_stream()), "cuda.base_convert");
    const Geometry g2 = coeff_geometry(n, 1, batch);
    base_convert_round_kernel<<<g2.grid, g2.block, 0, launch_stream()>>>(y.data(), v->data(), cc, src, count,
                                                                 flagged.data() + 1, g2.log_n);
    after_launch("base_convert_round");
    base_convert_fixup_kernel<<<kFixupBlocks, kFixupThreads, 0, launch_stream()>>>(y.data(), v->data(), cc, src, count,
                                                                          flagged.data() + 1, acc.data(), g2.log_n);
    after_launch("base_convert_fixup");
  }
  const Geometry g3 = coeff_geometry(n, (dst + kSumTargets - 1) / kSumTargets, batch);
  base_convert_sum_kernel<<<g3.grid, g3.block, 0, launch_stream()>>>(y.data(), v ? v->data() : nullptr, out, cc, src,
                                                                       dst, g3.log_n);
  after_launch("base_convert_sum");
}

namespace {

// Key switching's targets are the extended base without the digit's limbs:
// limb l at first + (l < at ? l : l + len) * n. Returns whether out_limbs
// have that layout (then the NTT's last pass writes them in place).
bool gapped_layout(u64* const* out_limbs, std::size_t limbs, std::size_t n, unsigned& at, unsigned& len) {
  const u64* first = out_limbs[0];
  std::size_t l = 1;
  while (l < limbs && out_limbs[l] == first + l * n) ++l;
  at = static_cast<unsigned>(l);
  len = 0;
  if (l == limbs) return true;
  if (out_limbs[l] < first + l * n) return false;
  const std::size_t gap_words = static_cast<std::size_t>(out_limbs[l] - (first + l * n));
  if (gap_words % n != 0) return false;
  len = static_cast<unsigned>(gap_words / n);
  for (; l < limbs; ++l)
    if (out_limbs[l] != first + (l + len) * n) return false;
  return true;
}

}  // namespace

void CudaBackend::base_convert_ntt(const u64* in, u64* scratch, u64* const* out_limbs, const BaseConverter& conv,
                                   BaseConversion kind) {
  base_convert(in, scratch, 1, conv, kind);
  const std::size_t n = conv.to().n(), limbs = conv.to().size();
  unsigned gap_at = 0, gap_len = 0;
  if (ntt_kernel() != NttKernel::radix2 && scatter_in_ntt_ && gapped_layout(out_limbs, limbs, n, gap_at, gap_len)) {
    transform(scratch, nullptr, scratch, 1, conv.to(), true, GappedOutput{out_limbs[0], gap_at, 0, gap_len});
    return;
  }
  ntt_forward(scratch, 1, conv.to());
  DeviceGuard guard(device_);
  for (std::size_t l0 = 0; l0 < limbs; l0 += kScatterLimbs) {
    const std::size_t count = std::min(kScatterLimbs, limbs - l0);
    LimbPointers pointers{};
    for (std::size_t l = 0; l < count; ++l) pointers.limb[l] = out_limbs[l0 + l];
    const Geometry g = coeff_geometry(n, count, 1);
    scatter_limbs_kernel<<<g.grid, g.block, 0, launch_stream()>>>(scratch + l0 * n, pointers, g.log_n);
    after_launch("scatter_limbs");
  }
}

void CudaBackend::mod_up_digits(const u64* c_coeff, const BaseConverter* const* convs, std::size_t count,
                                std::size_t alpha, u64* extended, std::size_t digit_words, u64* scratch,
                                BaseConversion kind) {
  const std::size_t n = convs[0]->to().n(), dst = convs[0]->to().size();
  // Batched when the fused conversion and the in-place store apply (else, and
  // for one digit, digit by digit as the interface's default).
  const bool batched = count > 1 && batch_mod_up_ && fused_base_convert_ && scatter_in_ntt_ &&
                       ntt_kernel() != NttKernel::radix2 &&
                       alpha <= kFusedMaxSource && digit_words == (dst + alpha) * n;
  if (!batched) return Backend::mod_up_digits(c_coeff, convs, count, alpha, extended, digit_words, scratch, kind);
  DeviceGuard guard(device_);
  for (std::size_t d0 = 0; d0 < count; d0 += kBatchDigits) {
    const std::size_t m = std::min(kBatchDigits, count - d0);
    DigitConverters consts{};
    std::vector<const RnsBase*> targets(m);
    for (std::size_t d = 0; d < m; ++d) {
      consts.cc[d] = converter_constants(*convs[d0 + d]);
      targets[d] = &convs[d0 + d]->to();
    }
    // Digit d's limbs of c_coeff are alpha limbs after digit d - 1's: the
    // kernel's polynomial z of alpha limbs.
    Scratch work(device_pool(device_), m * dst * n);
    const Geometry g = coeff_geometry(n, (dst + kFusedTargets - 1) / kFusedTargets, m);
    launch_fused<kFusedMaxSource>(c_coeff + d0 * alpha * n, work.data(), consts, static_cast<unsigned>(alpha),
                                  static_cast<unsigned>(dst), kind == BaseConversion::exact, g, launch_stream());
    after_launch("base_convert_fused");
    const GappedOutput out{extended + d0 * digit_words, static_cast<unsigned>(d0 * alpha),
                           static_cast<unsigned>(alpha), static_cast<unsigned>(alpha),
                           stacked_limb_constants(targets.data(), m)};
    transform(work.data(), nullptr, work.data(), m, convs[d0]->to(), true, out);
  }
}

}  // namespace ringfire::cuda
