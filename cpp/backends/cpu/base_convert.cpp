// RNS base conversion on the CPU (see ring/base_converter.h for the math).
//
// Block by block over the coefficients, so a block's y values for every
// source prime stay in L1 while they serve every target prime:
//   pass 1  y_i = [x_i * (Q/q_i)^-1]_{q_i}              (Shoup, AVX2)
//   pass 2  v = round(sum_i y_i / q_i)                  (exact only; doubles,
//           the multiword rule near a half: ring/kernel_bodies.h)
//   pass 3  z_j = sum_i y_i * (Q/q_i mod p_j) - v Q     (Shoup products summed
//           in [0, 2p_j), four coefficients per AVX2 vector)
// Shoup products with the conversion's fixed factors need no 128-bit
// reduction; in AVX2 a conversion measured 1.4-2.8x faster than with the
// scalar 128-bit multiply-accumulate used before (BENCHMARKS.md, "CKKS key
// switching after the kernel work").
// Every step gives the unique fully reduced value, so the vector and scalar
// loops (and the CUDA kernels) agree bit for bit.
#include <algorithm>
#include <cmath>
#include <vector>

#include "avx2_modular.h"
#include "base_convert_avx512.h"
#include "cpu_backend.h"
#include "ntt_kernels.h"
#include "parallel_for.h"
#include "ringfire/arith/modular.h"
#include "ringfire/ring/kernel_bodies.h"

namespace ringfire::cpu {

namespace {

// Coefficients per block: y (sources x block words) stays in L1/L2 for the
// source counts key switching uses.
constexpr std::size_t kBlock = 128;

// v * Q mod p_j for v in [0, src]: v is a small count, so a table replaces a
// product per word. Row j at [j * (src + 1)].
std::vector<u64> v_times_q_table(const BaseConverter& conv) {
  const std::size_t src = conv.from().size(), dst = conv.to().size();
  std::vector<u64> table(dst * (src + 1), 0);
  for (std::size_t j = 0; j < dst; ++j) {
    const u64 pv = conv.to().modulus(j).value();
    for (std::size_t t = 1; t <= src; ++t)
      table[j * (src + 1) + t] = add_mod(table[j * (src + 1) + t - 1], conv.q_mod_p()[j], pv);
  }
  return table;
}

// The per-call constants: Shoup forms of (Q/q_i)^-1 mod q_i and of every
// factor (Q/q_i) mod p_j (also broadcast to AVX2 lanes, once per call rather
// than per block), and the v * Q table.
struct ConversionConstants {
  std::vector<ShoupOperand> qhat_inv;  // [i]
  std::vector<ShoupOperand> factor;    // [j * src + i]
#if RF_CPU_AVX2
  std::vector<avx2::VShoup> vector_factor;  // [j * src + i]
#endif
  std::vector<u64> v_times_q;  // exact only
  bool sources_below_2_52 = true;  // every source prime (the AVX-512 products' bound on y)
};

ConversionConstants constants_of(const BaseConverter& conv, bool exact) {
  const RnsBase& from = conv.from();
  const RnsBase& to = conv.to();
  const std::size_t src = from.size(), dst = to.size();
  ConversionConstants k;
  k.qhat_inv.resize(src);
  for (std::size_t i = 0; i < src; ++i) {
    k.qhat_inv[i] = make_shoup(from.qhat_inverse(i), from.modulus(i).value());
    k.sources_below_2_52 = k.sources_below_2_52 && from.modulus(i).value() < (u64{1} << 52);
  }
  k.factor.resize(dst * src);
  for (std::size_t j = 0; j < dst; ++j)
    for (std::size_t i = 0; i < src; ++i)
      k.factor[j * src + i] = make_shoup(conv.qhat_mod_p()[j * src + i], to.modulus(j).value());
#if RF_CPU_AVX2
  k.vector_factor.reserve(k.factor.size());
  for (const ShoupOperand& f : k.factor) k.vector_factor.push_back(avx2::vshoup(f.value, f.quotient));
#endif
  if (exact) k.v_times_q = v_times_q_table(conv);
  return k;
}

// Pass 1 over one source limb's block: y = x * qhat_inv mod q.
void scale_block(const u64* x, u64* y, std::size_t len, ShoupOperand qhat_inv, u64 q) {
  if (base_convert_on_avx512(len)) return scale_block_avx512(x, y, len, qhat_inv, q);
  std::size_t c = 0;
#if RF_CPU_AVX2
  using namespace avx2;
  const VMod m = vmod(q);
  const VShoup w = vshoup(qhat_inv.value, qhat_inv.quotient);
  for (; c + 4 <= len; c += 4) vstore(y + c, vmul_shoup(vload(x + c), w, m));
#endif
  for (; c < len; ++c) y[c] = kernel::base_convert_scale_body(x[c], qhat_inv, q);
}

// Pass 3 for target limb j's block: z = sum_i y_i f_i (- v Q) mod p, with
// y_i at y + i * stride and f_i = k's factors of row j. vq is null for the
// fast conversion.
void accumulate_block(const u64* y, std::size_t stride, std::size_t src, const ConversionConstants& k, std::size_t j,
                      const u64* v, const u64* vq, u64* z, std::size_t len, u64 p) {
  const ShoupOperand* f = k.factor.data() + j * src;
  if (base_convert_on_avx512(len)) return accumulate_block_avx512(y, stride, src, f, k.sources_below_2_52, v, vq, z, len, p);
  std::size_t c = 0;
#if RF_CPU_AVX2
  using namespace avx2;
  const VMod m = vmod(p);
  const VShoup* vf = k.vector_factor.data() + j * src;
  // Two vectors per step: independent sums hide the products' latency.
  for (; c + 8 <= len; c += 8) {
    V r0 = _mm256_setzero_si256(), r1 = _mm256_setzero_si256();
    for (std::size_t i = 0; i < src; ++i) {
      const u64* yi = y + i * stride + c;
      r0 = vsub_if_ge(_mm256_add_epi64(r0, vmul_shoup_lazy(vload(yi), vf[i], m)), m.two_q);
      r1 = vsub_if_ge(_mm256_add_epi64(r1, vmul_shoup_lazy(vload(yi + 4), vf[i], m)), m.two_q);
    }
    r0 = vsub_if_ge(r0, m.q);
    r1 = vsub_if_ge(r1, m.q);
    if (vq != nullptr) {
      const auto* table = reinterpret_cast<const long long*>(vq);
      r0 = vsub_mod(r0, _mm256_i64gather_epi64(table, vload(v + c), 8), m);
      r1 = vsub_mod(r1, _mm256_i64gather_epi64(table, vload(v + c + 4), 8), m);
    }
    vstore(z + c, r0);
    vstore(z + c + 4, r1);
  }
#endif
  for (; c < len; ++c) {
    u64 r = 0;
    for (std::size_t i = 0; i < src; ++i) r = kernel::base_convert_shoup_step(r, y[i * stride + c], f[i], p);
    r -= (r >= p) ? p : 0;
    z[c] = vq != nullptr ? sub_mod(r, vq[v[c]], p) : r;
  }
}

// Pass 2 over a block: v[c] = round(sum_i y_i[c] / q_i) with y_i at
// y + i * stride. The double-precision sum decides every coefficient not
// within kBaseConvRoundingMargin of a half, far beyond its rounding error, so
// how it is summed (vector or scalar, fused or not) cannot change v; the rest
// take the multiword rule.
void rounded_quotients(const u64* y, std::size_t stride, std::size_t src, std::size_t len, const BaseConverter& conv,
                       u64* v, u64* multiword) {
  const double* r = conv.q_reciprocal();
  const RnsBase& from = conv.from();
  auto exact_at = [&](std::size_t c) {
    return kernel::exact_rounded_quotient(y + c, stride, from.qhat(0), from.product().data(), src, multiword);
  };
  std::size_t c = 0;
#if RF_CPU_AVX2
  // y < 2^61 to double, rounded once: its low 52 and high 9 bits are exact
  // doubles (2^52 magic), and their sum rounds the exact value.
  const __m256i low_mask = _mm256_set1_epi64x((1LL << 52) - 1);
  const __m256i magic_bits = _mm256_set1_epi64x(0x4330000000000000LL);  // 2^52
  const __m256d magic = _mm256_castsi256_pd(magic_bits), two52 = _mm256_set1_pd(4503599627370496.0);
  const __m256d half = _mm256_set1_pd(0.5), margin = _mm256_set1_pd(kernel::kBaseConvRoundingMargin);
  const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFLL));
  for (; c + 4 <= len; c += 4) {
    __m256d sum = _mm256_setzero_pd();
    for (std::size_t i = 0; i < src; ++i) {
      const __m256i yi = avx2::vload(y + i * stride + c);
      const __m256i low_bits = _mm256_or_si256(_mm256_and_si256(yi, low_mask), magic_bits);
      const __m256i high_bits = _mm256_or_si256(_mm256_srli_epi64(yi, 52), magic_bits);
      const __m256d low = _mm256_sub_pd(_mm256_castsi256_pd(low_bits), magic);
      const __m256d high = _mm256_mul_pd(_mm256_sub_pd(_mm256_castsi256_pd(high_bits), magic), two52);
      sum = _mm256_fmadd_pd(_mm256_add_pd(high, low), _mm256_set1_pd(r[i]), sum);
    }
    const __m256d fraction = _mm256_sub_pd(sum, _mm256_floor_pd(sum));
    const __m256d distance = _mm256_and_pd(_mm256_sub_pd(fraction, half), abs_mask);
    const int near_half = _mm256_movemask_pd(_mm256_cmp_pd(distance, margin, _CMP_LT_OQ));
    // 0 <= sum < src + 1: the truncation fits 32 bits.
    avx2::vstore(v + c, _mm256_cvtepi32_epi64(_mm256_cvttpd_epi32(_mm256_add_pd(sum, half))));
    for (int lane = 0; lane < 4; ++lane)
      if (near_half & (1 << lane)) v[c + lane] = exact_at(c + lane);
  }
#endif
  for (; c < len; ++c) {
    double s = 0.0;
    for (std::size_t i = 0; i < src; ++i) s = kernel::base_convert_sum_step(s, y[i * stride + c], r[i]);
    v[c] = kernel::base_convert_near_half(s) ? exact_at(c) : kernel::base_convert_rounded(s);
  }
}

// out_limb(poly, j) is where target limb j of polynomial `poly` goes
// (coefficient form).
template <class OutLimb>
void convert(const u64* in, std::size_t batch, const BaseConverter& conv, BaseConversion kind, OutLimb out_limb) {
  const RnsBase& from = conv.from();
  const RnsBase& to = conv.to();
  const std::size_t n = from.n(), src = from.size(), dst = to.size();
  const std::size_t blocks = (n + kBlock - 1) / kBlock;
  const bool exact = kind == BaseConversion::exact;
  const ConversionConstants k = constants_of(conv, exact);
  parallel_for(batch * blocks, kBlock * src * (dst + 1), [&](std::size_t index) {
    const std::size_t poly = index / blocks, c0 = (index % blocks) * kBlock, len = std::min(kBlock, n - c0);
    thread_local std::vector<u64> scratch;
    scratch.resize(src * kBlock + kBlock + src + 1);
    u64* y = scratch.data();      // y_i of coefficient c at y[i * kBlock + c]
    u64* v = y + src * kBlock;    // the rounded quotients (exact)
    u64* multiword = v + kBlock;  // near-half scratch, src + 1 words
    for (std::size_t i = 0; i < src; ++i)
      scale_block(in + (poly * src + i) * n + c0, y + i * kBlock, len, k.qhat_inv[i], from.modulus(i).value());
    if (exact) rounded_quotients(y, kBlock, src, len, conv, v, multiword);
    for (std::size_t j = 0; j < dst; ++j) {
      const u64* vq = exact ? k.v_times_q.data() + j * (src + 1) : nullptr;
      accumulate_block(y, kBlock, src, k, j, v, vq, out_limb(poly, j) + c0, len, to.modulus(j).value());
    }
  });
}

}  // namespace

void CpuBackend::base_convert(const u64* in, u64* out, std::size_t batch, const BaseConverter& conv,
                              BaseConversion kind) {
  const RnsBase& from = conv.from();
  const RnsBase& to = conv.to();
  const std::size_t n = from.n(), src = from.size(), dst = to.size();
  if (src == 1 && kind == BaseConversion::exact) {
    // One source prime (rescaling): round(x / q) is 1 exactly when x > q/2
    // (q is odd, so never a tie), and the result is the centred lift x or
    // x - q reduced mod p_j: one pass, the same words as the general path.
    const u64 q = from.modulus(0).value(), half = q >> 1;
    parallel_for(batch * dst, n, [&](std::size_t index) {
      const std::size_t poly = index / dst, j = index % dst;
      const u64 pv = to.modulus(j).value();
      const u64 minus_q = (pv - q % pv) % pv;
      const ShoupOperand one = make_shoup(1, pv);  // x mod p for any 64-bit x
      const u64* x = in + poly * n;
      u64* z = out + index * n;
      for (std::size_t c = 0; c < n; ++c) {
        const u64 r = mul_mod_shoup(x[c], one.value, one.quotient, pv);
        const u64 upper = 0 - static_cast<u64>(x[c] > half);  // all ones when x stands for x - q
        z[c] = add_mod(r, minus_q & upper, pv);
      }
    });
    return;
  }
  auto contiguous = [out, dst, n](std::size_t poly, std::size_t j) { return out + (poly * dst + j) * n; };
  convert(in, batch, conv, kind, contiguous);
}

void CpuBackend::base_convert_ntt(const u64* in, u64* /*scratch*/, u64* const* out_limbs, const BaseConverter& conv,
                                  BaseConversion kind) {
  const RnsBase& to = conv.to();
  auto scattered = [out_limbs](std::size_t, std::size_t j) { return out_limbs[j]; };
  convert(in, 1, conv, kind, scattered);
  parallel_for(to.size(), to.n() * 8, [&](std::size_t j) { ntt_forward_limb(out_limbs[j], to.ntt(j)); });
}

}  // namespace ringfire::cpu
