// AVX-512 bodies of a blind-rotation step (blind_rotation_kernels.h),
// compiled per function for AVX-512 F/BW/DQ/VL and run only where isa.cpp
// found them.
#include "blind_rotation_kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

// GCC 12's AVX-512 headers start some intrinsics from _mm512_undefined_*,
// which -Wmaybe-uninitialized reports once they are inlined here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#define RF_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))

namespace ringfire::tfhe::kernels {

namespace {
using Z = __m512i;
RF_AVX512 inline Z load(const u32* p) { return _mm512_loadu_si512(p); }
RF_AVX512 inline void store(u32* p, Z v) { _mm512_storeu_si512(p, v); }
RF_AVX512 inline Z odd(Z x) { return _mm512_shuffle_epi32(x, static_cast<_MM_PERM_ENUM>(0xF5)); }
RF_AVX512 inline Z reduce_pack(Z even, Z odd_lanes, Z q, Z nqinv) {
  const Z te = _mm512_srli_epi64(_mm512_add_epi64(even, _mm512_mul_epu32(_mm512_mul_epu32(even, nqinv), q)), 32);
  const Z to = _mm512_add_epi64(odd_lanes, _mm512_mul_epu32(_mm512_mul_epu32(odd_lanes, nqinv), q));
  return _mm512_mask_blend_epi32(0xAAAA, te, to);
}
}  // namespace

RF_AVX512 void decompose_avx512(const u32* poly, std::size_t N, const Params& p, u32* D) {
  const Z Q = _mm512_set1_epi32(static_cast<int>(p.ring_modulus));
  const Z half_q = _mm512_set1_epi32(static_cast<int>(p.ring_modulus / 2));
  const int skip = static_cast<int>(p.gadget_skip_bits), lb = static_cast<int>(p.gadget_base_log);
  const Z round = _mm512_set1_epi32(skip > 0 ? (1 << (skip - 1)) : 0);
  const Z mask = _mm512_set1_epi32((1 << lb) - 1), half = _mm512_set1_epi32(1 << (lb - 1));
  const __m128i skip_count = _mm_cvtsi32_si128(skip), lb_count = _mm_cvtsi32_si128(lb);
  const Z zero = _mm512_setzero_si512();
  const unsigned dg = p.gadget_digits;
  for (std::size_t c = 0; c < N; c += 16) {
    const Z v = load(poly + c);
    Z x = _mm512_mask_sub_epi32(v, _mm512_cmpgt_epu32_mask(v, half_q), v, Q);
    x = _mm512_sra_epi32(_mm512_add_epi32(x, round), skip_count);
    for (unsigned j = 0; j + 1 < dg; ++j) {
      const Z d = _mm512_sub_epi32(_mm512_and_si512(_mm512_add_epi32(x, half), mask), half);
      x = _mm512_sra_epi32(_mm512_sub_epi32(x, d), lb_count);
      store(D + j * N + c, _mm512_mask_add_epi32(d, _mm512_cmplt_epi32_mask(d, zero), d, Q));
    }
    store(D + (dg - 1) * N + c, _mm512_mask_add_epi32(x, _mm512_cmplt_epi32_mask(x, zero), x, Q));
  }
}

RF_AVX512 void product_avx512(const ProductArgs& g) {
  const Z q = _mm512_set1_epi32(static_cast<int>(g.Q)), ni = _mm512_set1_epi32(static_cast<int>(g.neg_q_inv));
  const std::size_t R = g.R, N = g.N;
  for (std::size_t c = g.chunk_begin; c < g.chunk_end; ++c) {
    const u32* kc = g.key + c * R * 4 * kChunk;
    prefetch_next(g, c);
    const std::size_t slot = kChunk * c;
    Z ae[4], ao[4];
    for (int k = 0; k < 4; ++k) ae[k] = ao[k] = _mm512_setzero_si512();
    for (std::size_t r = 0; r < R; ++r) {
      const Z d = load(g.D + r * N + slot), d_odd = odd(d);
      for (int k = 0; k < 4; ++k) {
        const Z kv = load(kc + (r * 4 + k) * kChunk);
        ae[k] = _mm512_add_epi64(ae[k], _mm512_mul_epu32(d, kv));
        ao[k] = _mm512_add_epi64(ao[k], _mm512_mul_epu32(d_odd, odd(kv)));
      }
    }
    Z S[4];
    for (int k = 0; k < 4; ++k) S[k] = reduce_pack(ae[k], ao[k], q, ni);
    const Z vp = load(g.mp + slot), vm = load(g.mm + slot), vp_odd = odd(vp), vm_odd = odd(vm);
    for (int o = 0; o < 2; ++o) {
      const Z plus = S[o], minus = S[o + 2];
      const Z even = _mm512_add_epi64(_mm512_mul_epu32(plus, vp), _mm512_mul_epu32(minus, vm));
      const Z odds = _mm512_add_epi64(_mm512_mul_epu32(odd(plus), vp_odd), _mm512_mul_epu32(odd(minus), vm_odd));
      store((o == 0 ? g.out_b : g.out_a) + slot, reduce_pack(even, odds, q, ni));
    }
  }
}

}  // namespace ringfire::tfhe::kernels

#else

namespace ringfire::tfhe::kernels {
void decompose_avx512(const u32* poly, std::size_t N, const Params& p, u32* D) { decompose_scalar(poly, N, p, D); }
void product_avx512(const ProductArgs& args) { product_scalar(args); }
}  // namespace ringfire::tfhe::kernels

#endif
