// AVX2 modular arithmetic shared by the CPU kernels: four 64-bit lanes, the
// 64x64-bit products assembled from 32-bit multiplies (x86-64-v3 has no
// 64-bit vector multiply). Values stay below 2^63 so signed compares order
// them. RF_CPU_AVX2 says whether the target has AVX2; without it the kernels
// run their scalar loops only.
#pragma once

#include "ringfire/arith/modular.h"

#if defined(__AVX2__)
#include <immintrin.h>
#define RF_CPU_AVX2 1
#else
#define RF_CPU_AVX2 0
#endif

#if RF_CPU_AVX2
namespace ringfire::cpu::avx2 {

using V = __m256i;

inline V vload(const u64* p) { return _mm256_loadu_si256(reinterpret_cast<const V*>(p)); }
inline void vstore(u64* p, V v) { _mm256_storeu_si256(reinterpret_cast<V*>(p), v); }
inline V vbroadcast(u64 x) { return _mm256_set1_epi64x(static_cast<long long>(x)); }
// x - bound if x >= bound, else x; needs x, bound < 2^63 (signed compare).
inline V vsub_if_ge(V x, V bound) {
  const V lt = _mm256_cmpgt_epi64(bound, x);
  return _mm256_sub_epi64(x, _mm256_andnot_si256(lt, bound));
}

// Swaps the 32-bit halves of every 64-bit lane.
inline V vswap_halves(V x) { return _mm256_shuffle_epi32(x, 0xB1); }
// Moves each lane's high 32 bits to its low half (the high half is junk,
// which vpmuludq ignores).
inline V vhigh_to_low(V x) { return _mm256_shuffle_epi32(x, 0xF5); }

// The modulus in the forms the lanes need.
struct VMod {
  V q, q_swapped, two_q;
};
inline VMod vmod(u64 q) { return {vbroadcast(q), vswap_halves(vbroadcast(q)), vbroadcast(2 * q)}; }

// A Shoup multiplier per lane (an NTT twiddle, a base-conversion factor):
// w, w with swapped halves, and the halved Shoup constant
// ws2 = floor(ws / 2) = floor(w 2^63 / q) with its high half.
struct VShoup {
  V w, w_swapped, ws2, ws2_hi;
};
inline VShoup vshoup(V w, V ws) {
  const V ws2 = _mm256_srli_epi64(ws, 1);
  return {w, vswap_halves(w), ws2, _mm256_srli_epi64(ws2, 32)};
}
// The same for one multiplier in every lane, prepared on the scalar side.
inline VShoup vshoup(u64 w, u64 ws) {
  return {vbroadcast(w), vbroadcast((w << 32) | (w >> 32)), vbroadcast(ws >> 1), vbroadcast(ws >> 33)};
}

// y * w mod q in [0, 2q) for y < 2^63 (Shoup, with 2^63 in place of 2^64):
//   quot = floor(y ws2 / 2^63) lies in (y w / q - 2, y w / q], so
//   r = y w - quot q is in [0, 2q) and is exact from its low 64 bits.
// With y, ws2 < 2^63 the middle sum of the 32x32-bit partial products stays
// below 2^64. The low words of y w and quot q share their cross terms, which
// are only needed mod 2^32 (vpmulld on the 32-bit halves).
inline V vmul_shoup_lazy(V y, const VShoup& t, const VMod& m) {
  const V y_hi = vhigh_to_low(y);
  const V lh = _mm256_mul_epu32(y, t.ws2_hi);
  const V hl = _mm256_mul_epu32(y_hi, t.ws2);
  const V hh = _mm256_mul_epu32(y_hi, t.ws2_hi);
  const V ll = _mm256_mul_epu32(y, t.ws2);
  // y ws2 = hh 2^64 + mid 2^32 + (ll mod 2^32), so quot = 2 hh + floor(mid / 2^31).
  const V mid = _mm256_add_epi64(_mm256_add_epi64(lh, hl), _mm256_srli_epi64(ll, 32));  // < 2^64
  const V quot = _mm256_add_epi64(_mm256_add_epi64(hh, hh), _mm256_srli_epi64(mid, 31));
  // Low 32x32 products, then the cross terms y_lo w_hi + y_hi w_lo -
  // quot_lo q_hi - quot_hi q_lo (mod 2^32) added into the high halves.
  const V lo = _mm256_sub_epi64(_mm256_mul_epu32(y, t.w), _mm256_mul_epu32(quot, m.q));
  const V c = _mm256_sub_epi32(_mm256_mullo_epi32(y, t.w_swapped), _mm256_mullo_epi32(quot, m.q_swapped));
  const V cross = _mm256_blend_epi32(_mm256_setzero_si256(), _mm256_add_epi32(c, vswap_halves(c)), 0xAA);
  return _mm256_add_epi64(lo, cross);
}

// y * w mod q in [0, q).
inline V vmul_shoup(V y, const VShoup& t, const VMod& m) { return vsub_if_ge(vmul_shoup_lazy(y, t, m), m.q); }

// a - b mod q for a, b in [0, q).
inline V vsub_mod(V a, V b, const VMod& m) {
  const V d = _mm256_sub_epi64(a, b);
  return _mm256_add_epi64(d, _mm256_and_si256(_mm256_cmpgt_epi64(b, a), m.q));
}

}  // namespace ringfire::cpu::avx2
#endif
