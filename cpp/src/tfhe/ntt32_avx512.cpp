// The 32-bit NTT on sixteen AVX-512 lanes, compiled for AVX-512 F/BW/DQ/VL
// function by function (the rest of the library targets the baseline CPU)
// and run only where isa.cpp found those extensions. Same evaluation layout
// as the AVX2 and scalar paths (ntt32.h): the in-block stages run on two
// 64-blocks at once, one in each 256-bit half of a register.
#include "ringfire/tfhe/ntt32.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

// GCC 12's AVX-512 headers start some intrinsics from _mm512_undefined_*,
// which -Wmaybe-uninitialized (-Wuninitialized once inlined through the
// shared stage templates) reports here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#define RF_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))
#define RF_NTT32_TARGET RF_AVX512
#include "ntt32_stages.h"

namespace ringfire::tfhe {

namespace {

using Z = __m512i;

// Sixteen 32-bit lanes (ntt32_stages.h's lane type).
struct Avx512Lanes {
  using V = __m512i;
  static constexpr std::size_t width = 16;
  RF_AVX512 static V load(const u32* p) { return _mm512_loadu_si512(p); }
  RF_AVX512 static void store(u32* p, V v) { _mm512_storeu_si512(p, v); }
  RF_AVX512 static V splat(u32 x) { return _mm512_set1_epi32(static_cast<int>(x)); }
  RF_AVX512 static V add(V x, V y) { return _mm512_add_epi32(x, y); }
  RF_AVX512 static V sub(V x, V y) { return _mm512_sub_epi32(x, y); }
  RF_AVX512 static V reduce_below(V x, V bound) { return _mm512_min_epu32(x, _mm512_sub_epi32(x, bound)); }
  RF_AVX512 static V odd_to_even(V x) { return _mm512_shuffle_epi32(x, static_cast<_MM_PERM_ENUM>(0xF5)); }
  RF_AVX512 static V mul_shoup(V y, V w, V ws, V ws_odd, V q) {
    const V even = odd_to_even(_mm512_mul_epu32(y, ws));
    const V odd = _mm512_mul_epu32(odd_to_even(y), ws_odd);
    const V hi = _mm512_mask_blend_epi32(0xAAAA, even, odd);
    return _mm512_sub_epi32(_mm512_mullo_epi32(y, w), _mm512_mullo_epi32(hi, q));
  }
};
using L = Avx512Lanes;

// Two blocks' rows: p0 in the low half, p1 in the high half.
RF_AVX512 inline Z load_halves(const u32* p0, const u32* p1) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p0))),
                            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p1)), 1);
}
RF_AVX512 inline void store_halves(u32* p0, u32* p1, Z v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p0), _mm512_castsi512_si256(v));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p1), _mm512_extracti64x4_epi64(v, 1));
}
// [a x 8 | b x 8]
RF_AVX512 inline Z splat_halves(u32 a, u32 b) {
  return _mm512_inserti64x4(_mm512_set1_epi32(static_cast<int>(a)), _mm256_set1_epi32(static_cast<int>(b)), 1);
}

// An 8 x 8 transpose in each 256-bit half (AVX2's transpose8, two at once).
RF_AVX512 inline void transpose8x2(Z r[8]) {
  const Z t0 = _mm512_unpacklo_epi32(r[0], r[1]), t1 = _mm512_unpackhi_epi32(r[0], r[1]);
  const Z t2 = _mm512_unpacklo_epi32(r[2], r[3]), t3 = _mm512_unpackhi_epi32(r[2], r[3]);
  const Z t4 = _mm512_unpacklo_epi32(r[4], r[5]), t5 = _mm512_unpackhi_epi32(r[4], r[5]);
  const Z t6 = _mm512_unpacklo_epi32(r[6], r[7]), t7 = _mm512_unpackhi_epi32(r[6], r[7]);
  const Z u0 = _mm512_unpacklo_epi64(t0, t2), u1 = _mm512_unpackhi_epi64(t0, t2);
  const Z u2 = _mm512_unpacklo_epi64(t1, t3), u3 = _mm512_unpackhi_epi64(t1, t3);
  const Z u4 = _mm512_unpacklo_epi64(t4, t6), u5 = _mm512_unpackhi_epi64(t4, t6);
  const Z u6 = _mm512_unpacklo_epi64(t5, t7), u7 = _mm512_unpackhi_epi64(t5, t7);
  // Per half: [u.lo128, v.lo128] and [u.hi128, v.hi128] (AVX2's permute2x128 0x20 and 0x31).
  const Z lo = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13), hi = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
  r[0] = _mm512_permutex2var_epi64(u0, lo, u4);
  r[1] = _mm512_permutex2var_epi64(u1, lo, u5);
  r[2] = _mm512_permutex2var_epi64(u2, lo, u6);
  r[3] = _mm512_permutex2var_epi64(u3, lo, u7);
  r[4] = _mm512_permutex2var_epi64(u0, hi, u4);
  r[5] = _mm512_permutex2var_epi64(u1, hi, u5);
  r[6] = _mm512_permutex2var_epi64(u2, hi, u6);
  r[7] = _mm512_permutex2var_epi64(u3, hi, u7);
}

// The stage with t = 8 (m groups of 16 words: x the first 8, y the last 8),
// two groups per register: group i's x in the low half, group i + 1's in
// the high half, with their twiddles w[m + i], w[m + i + 1]. Cooley-Tukey
// butterflies (forward) or Gentleman-Sande ones (inverse).
template <bool Forward>
RF_AVX512 inline void eight_word_stage(u32* a, std::size_t m, const u32* w, const u32* ws, Z q, Z two_q) {
  for (std::size_t i = 0; i < m; i += 2) {
    u32* p = a + 16 * i;
    const Z z0 = L::load(p), z1 = L::load(p + 16);
    Z x = _mm512_shuffle_i64x2(z0, z1, _MM_SHUFFLE(1, 0, 1, 0));
    Z y = _mm512_shuffle_i64x2(z0, z1, _MM_SHUFFLE(3, 2, 3, 2));
    const Twiddle<L> t = make_twiddle<L>(splat_halves(w[m + i], w[m + i + 1]), splat_halves(ws[m + i], ws[m + i + 1]));
    if constexpr (Forward) ct<L>(x, y, t, q, two_q);
    else gs<L>(x, y, t, q, two_q);
    L::store(p, _mm512_shuffle_i64x2(x, y, _MM_SHUFFLE(1, 0, 1, 0)));
    L::store(p + 16, _mm512_shuffle_i64x2(x, y, _MM_SHUFFLE(3, 2, 3, 2)));
  }
}

}  // namespace

RF_AVX512 void Ntt32::forward_avx512(u32* a) const {
  const Z q = L::splat(q_), two_q = L::splat(2 * q_);
  const std::size_t m = forward_wide_stages<L>(a, n_, fwd_.data(), fwd_shoup_.data(), q, two_q);
  // t = 8: groups of 16 (x: 8 words, y: 8 words), two groups per register.
  eight_word_stage<true>(a, m, fwd_.data(), fwd_shoup_.data(), q, two_q);
  // The in-block stages t = 4, 2, 1 on blocks b (low halves) and b + 1.
  for (std::size_t b = 0; b < n_ / 64; b += 2) {
    u32* b0 = a + 64 * b;
    u32* b1 = b0 + 64;
    Z w[8];
    for (int k = 0; k < 8; ++k) w[k] = load_halves(b0 + 8 * k, b1 + 8 * k);
    transpose8x2(w);
    const Twiddle<L> t4 = make_twiddle<L>(L::load(&f4_[b * 8]), L::load(&f4s_[b * 8]));
    for (int j = 0; j < 4; ++j) ct<L>(w[j], w[j + 4], t4, q, two_q);
    for (int p = 0; p < 2; ++p) {
      const std::size_t o0 = (b * 2 + p) * 8, o1 = ((b + 1) * 2 + p) * 8;
      const Twiddle<L> t2 = make_twiddle<L>(load_halves(&f2_[o0], &f2_[o1]), load_halves(&f2s_[o0], &f2s_[o1]));
      ct<L>(w[4 * p], w[4 * p + 2], t2, q, two_q);
      ct<L>(w[4 * p + 1], w[4 * p + 3], t2, q, two_q);
    }
    for (int p = 0; p < 4; ++p) {
      const std::size_t o0 = (b * 4 + p) * 8, o1 = ((b + 1) * 4 + p) * 8;
      const Twiddle<L> t1 = make_twiddle<L>(load_halves(&f1_[o0], &f1_[o1]), load_halves(&f1s_[o0], &f1s_[o1]));
      ct<L>(w[2 * p], w[2 * p + 1], t1, q, two_q);
    }
    for (int j = 0; j < 8; ++j) store_halves(b0 + 8 * j, b1 + 8 * j, L::reduce_below(L::reduce_below(w[j], two_q), q));
  }
}

RF_AVX512 void Ntt32::inverse_avx512(u32* a, u32* accumulate) const {
  const Z q = L::splat(q_), two_q = L::splat(2 * q_);
  for (std::size_t b = 0; b < n_ / 64; b += 2) {
    u32* b0 = a + 64 * b;
    u32* b1 = b0 + 64;
    Z w[8];
    for (int j = 0; j < 8; ++j) w[j] = load_halves(b0 + 8 * j, b1 + 8 * j);
    for (int p = 0; p < 4; ++p) {
      const std::size_t o0 = (b * 4 + p) * 8, o1 = ((b + 1) * 4 + p) * 8;
      const Twiddle<L> t1 = make_twiddle<L>(load_halves(&i1_[o0], &i1_[o1]), load_halves(&i1s_[o0], &i1s_[o1]));
      gs<L>(w[2 * p], w[2 * p + 1], t1, q, two_q);
    }
    for (int p = 0; p < 2; ++p) {
      const std::size_t o0 = (b * 2 + p) * 8, o1 = ((b + 1) * 2 + p) * 8;
      const Twiddle<L> t2 = make_twiddle<L>(load_halves(&i2_[o0], &i2_[o1]), load_halves(&i2s_[o0], &i2s_[o1]));
      gs<L>(w[4 * p], w[4 * p + 2], t2, q, two_q);
      gs<L>(w[4 * p + 1], w[4 * p + 3], t2, q, two_q);
    }
    const Twiddle<L> t4 = make_twiddle<L>(L::load(&i4_[b * 8]), L::load(&i4s_[b * 8]));
    for (int j = 0; j < 4; ++j) gs<L>(w[j], w[j + 4], t4, q, two_q);
    transpose8x2(w);
    for (int k = 0; k < 8; ++k) store_halves(b0 + 8 * k, b1 + 8 * k, w[k]);
  }
  // t = 8 (m = N/16 groups), two groups per register, then the stages from t = 16 on.
  eight_word_stage<false>(a, n_ / 16, inv_.data(), inv_shoup_.data(), q, two_q);
  inverse_wide_stages<L>(a, n_, inv_.data(), inv_shoup_.data(), q, two_q);
  inverse_last_stage<L>(a, accumulate, n_, n_inv_, n_inv_shoup_, last_n_inv_, last_n_inv_shoup_, q, two_q);
}

}  // namespace ringfire::tfhe

#else

namespace ringfire::tfhe {
// Not an x86-64 GCC/Clang build: isa.cpp never selects these.
void Ntt32::forward_avx512(u32* a) const { forward_scalar(a); }
void Ntt32::inverse_avx512(u32* a, u32* accumulate) const { inverse_scalar(a, accumulate); }
}  // namespace ringfire::tfhe

#endif
