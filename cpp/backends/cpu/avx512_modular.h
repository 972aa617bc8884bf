// AVX-512 modular arithmetic shared by the CPU kernels' eight-lane paths:
// IFMA's 52-bit multiply-adds below 2^50, 32-bit partial products and vpmullq
// up to 2^61. Every function carries RF_IFMA (the library targets the baseline
// CPU): callers carry it too and run only where rns_isa() says avx512.
#pragma once

#include <immintrin.h>

#include "ringfire/arith/modular.h"

// GCC 12's AVX-512 intrinsics start some results from _mm512_undefined (false positives).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#define RF_IFMA __attribute__((target("avx512f,avx512dq,avx512vl,avx512ifma")))

namespace ringfire::cpu::avx512 {

using Z = __m512i;

inline constexpr u64 kMask52 = (u64{1} << 52) - 1;

// Primes below this take IFMA's 52-bit products (Ifma52): the lazy values the
// kernels multiply stay below 4q < 2^52.
inline constexpr u64 kIfmaBound = u64{1} << 50;

struct ZMod {
  Z q, two_q, mask52;
};

RF_IFMA inline Z zset1(u64 x) { return _mm512_set1_epi64(static_cast<long long>(x)); }
RF_IFMA inline Z zload(const u64* p) { return _mm512_loadu_si512(p); }
RF_IFMA inline void zstore(u64* p, Z v) { _mm512_storeu_si512(p, v); }

RF_IFMA inline ZMod zmod(u64 q) { return {zset1(q), zset1(2 * q), zset1(kMask52)}; }

// x - b where x >= b, else x (x, b < 2^63).
RF_IFMA inline Z zsub_if_ge(Z x, Z b) { return _mm512_min_epu64(x, _mm512_sub_epi64(x, b)); }

// a - b mod q for a, b in [0, q).
RF_IFMA inline Z zsub_mod(Z a, Z b, const ZMod& m) {
  const Z d = _mm512_sub_epi64(a, b);
  return _mm512_min_epu64(d, _mm512_add_epi64(d, m.q));
}

// [0, 4q) -> [0, q).
RF_IFMA inline Z zreduce_4q(Z v, const ZMod& m) { return zsub_if_ge(zsub_if_ge(v, m.two_q), m.q); }

// The products of a Shoup multiplier w (the same in every lane, or one per
// lane) made from w and ws = floor(w 2^64 / q) (make_shoup): y w mod q in
// [0, 2q), for y below 4q.
struct Ifma52 {  // q < 2^50: y < 2^52
  struct Twiddle {
    Z w, w52;  // w52 = floor(w 2^52 / q) = floor(ws / 2^12)
  };
  RF_IFMA static Twiddle twiddle(Z w, Z ws) { return {w, _mm512_srli_epi64(ws, 12)}; }
  // quot = hi52(y w52) is at most one below floor(y w / q) (y < 2^52), so
  // r = y w - quot q lies in [0, 2q) and is exact from the low 52 bits.
  RF_IFMA static Z mul_lazy(Z y, const Twiddle& t, const ZMod& m) {
    const Z zero = _mm512_setzero_si512();
    const Z quot = _mm512_madd52hi_epu64(zero, y, t.w52);
    const Z yw = _mm512_madd52lo_epu64(zero, y, t.w);
    const Z qq = _mm512_madd52lo_epu64(zero, quot, m.q);
    return _mm512_and_si512(_mm512_sub_epi64(yw, qq), m.mask52);
  }
};

struct Mul64 {  // q < 2^61: y < 2^63
  struct Twiddle {
    Z w, ws2, ws2_hi;  // ws2 = floor(w 2^63 / q) and its high half
  };
  RF_IFMA static Twiddle twiddle(Z w, Z ws) {
    const Z ws2 = _mm512_srli_epi64(ws, 1);
    return {w, ws2, _mm512_srli_epi64(ws2, 32)};
  }
  // quot = floor(y ws2 / 2^63) from the 32-bit partial products, as
  // avx2_modular.h's vmul_shoup_lazy (y, ws2 < 2^63: the middle sum < 2^64);
  // r = y w - quot q from two vpmullq (the AVX2 kernels' cross terms from
  // vpmulld measured no faster here).
  RF_IFMA static Z mul_lazy(Z y, const Twiddle& t, const ZMod& m) {
    const Z y_hi = _mm512_srli_epi64(y, 32);
    const Z lh = _mm512_mul_epu32(y, t.ws2_hi);
    const Z hl = _mm512_mul_epu32(y_hi, t.ws2);
    const Z hh = _mm512_mul_epu32(y_hi, t.ws2_hi);
    const Z ll = _mm512_mul_epu32(y, t.ws2);
    const Z mid = _mm512_add_epi64(_mm512_add_epi64(lh, hl), _mm512_srli_epi64(ll, 32));
    const Z quot = _mm512_add_epi64(_mm512_add_epi64(hh, hh), _mm512_srli_epi64(mid, 31));
    return _mm512_sub_epi64(_mm512_mullo_epi64(y, t.w), _mm512_mullo_epi64(quot, m.q));
  }
};

template <class A>
RF_IFMA inline typename A::Twiddle zbroadcast(u64 w, u64 ws) {
  return A::twiddle(zset1(w), zset1(ws));
}

// y w mod q in [0, q).
template <class A>
RF_IFMA inline Z zmul(Z y, const typename A::Twiddle& t, const ZMod& m) {
  return zsub_if_ge(A::mul_lazy(y, t, m), m.q);
}

// A 104-bit value hi 2^52 + lo (hi < 2^52, lo < 2^64) mod q in [0, q), q < 2^50:
// hi (2^52 mod q) + lo's low 52 bits + its carry, each by an IFMA Shoup product.
struct Wide52 {
  Ifma52::Twiddle two52, one;
};
RF_IFMA inline Wide52 wide52(u64 q) {
  const u64 two52 = (u64{1} << 52) % q;
  return {zbroadcast<Ifma52>(two52, make_shoup(two52, q).quotient), zbroadcast<Ifma52>(1, make_shoup(1, q).quotient)};
}
RF_IFMA inline Z zreduce_wide52(Z hi, Z lo, const Wide52& w, const ZMod& m) {
  const Z high = _mm512_add_epi64(hi, _mm512_srli_epi64(lo, 52));  // below 2^52 where the caller keeps hi < 2^51
  const Z r = _mm512_add_epi64(Ifma52::mul_lazy(high, w.two52, m), Ifma52::mul_lazy(_mm512_and_si512(lo, m.mask52),
                                                                                    w.one, m));
  return zreduce_4q(r, m);
}

// x y mod q in [0, q) for x, y < 2^50 (q < 2^50).
RF_IFMA inline Z zmul_mod52(Z x, Z y, const Wide52& w, const ZMod& m) {
  const Z zero = _mm512_setzero_si512();
  return zreduce_wide52(_mm512_madd52hi_epu64(zero, x, y), _mm512_madd52lo_epu64(zero, x, y), w, m);
}

}  // namespace ringfire::cpu::avx512
