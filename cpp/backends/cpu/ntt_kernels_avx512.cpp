// Negacyclic NTT kernels on AVX-512: eight 64-bit lanes. Below 2^50 the
// products come from IFMA's 52-bit multiply-adds (vpmadd52lo/hi: every value a
// butterfly multiplies stays below 4q < 2^52); from 2^50 to 2^61 from 32-bit
// partial products and vpmullq. Compiled for that target function by function
// (the library targets the baseline CPU) and run only where rns_isa.cpp found
// the instructions.
//
// The same transforms as ntt_kernels.cpp (the same stages, twiddles and value
// ranges: forward [0, 4q) -> [0, q), inverse [0, 2q) -> [0, q)); the outputs
// are fully reduced, so they are the AVX2 kernels' words. What differs:
//   - below 2^50, Shoup's product with 2^52 in place of 2^64: quot =
//     hi52(y w52) with w52 = floor(w 2^52 / q) = the table's
//     floor(w 2^64 / q) >> 12, and r = lo52(y w) - lo52(quot q) in [0, 2q)
//     (y < 2^52: quot is at most one below floor(y w / q), as with 2^64);
//   - above, the AVX2 kernels' quotient (2^63 in place of 2^64, from four
//     32-bit products) and r = y w - quot q from two vpmullq;
//   - conditional subtractions as an unsigned minimum (x - b wraps past x
//     where x < b);
//   - the three stages of distance 4, 2 and 1 (forward; 1, 2, 4 inverse) on
//     16 elements in two registers, the pairs of each stage gathered by
//     vpermt2q, so every radix-2 pass runs on whole registers.
#include "ntt_kernels.h"

#include <algorithm>

#include "avx512_modular.h"
#include "ntt_stages.h"

namespace ringfire::cpu {

namespace {

using namespace avx512;
using namespace ntt_stages;

// Cooley-Tukey, in/out [0, 4q).
template <class A>
RF_IFMA inline void zct(Z& x, Z& y, const typename A::Twiddle& t, const ZMod& m) {
  const Z xv = zsub_if_ge(x, m.two_q);
  const Z tv = A::mul_lazy(y, t, m);
  x = _mm512_add_epi64(xv, tv);
  y = _mm512_add_epi64(_mm512_sub_epi64(xv, tv), m.two_q);
}

// Gentleman-Sande, in/out [0, 2q).
template <class A>
RF_IFMA inline void zgs(Z& x, Z& y, const typename A::Twiddle& t, const ZMod& m) {
  const Z s = _mm512_add_epi64(x, y);
  const Z d = _mm512_add_epi64(_mm512_sub_epi64(x, y), m.two_q);
  x = zsub_if_ge(s, m.two_q);
  y = A::mul_lazy(d, t, m);
}

// Lane patterns of the 16-element passes (vpermt2q indices: 0-7 the first
// register, 8-15 the second).
RF_IFMA inline Z zidx(long long a, long long b, long long c, long long d, long long e, long long f, long long g,
                      long long h) {
  return _mm512_setr_epi64(a, b, c, d, e, f, g, h);
}
RF_IFMA inline Z zpermute(Z x, Z idx, Z y) { return _mm512_permutex2var_epi64(x, idx, y); }

// Twiddles of a stage for the lanes of a 16-element pass: `first` points at
// the first group's; the lanes take groups {0 x4, 1 x4}, {0,0,1,1,2,2,3,3} or
// 0..7 (distance 4, 2, 1).
RF_IFMA inline Z ztwiddles_k4(const u64* first) {
  return _mm512_mask_blend_epi64(0xF0, zset1(first[0]), zset1(first[1]));
}
RF_IFMA inline Z ztwiddles_k2(const u64* first) {
  return _mm512_permutexvar_epi64(zidx(0, 0, 1, 1, 2, 2, 3, 3), _mm512_castsi256_si512(_mm256_loadu_si256(
                                                                     reinterpret_cast<const __m256i*>(first))));
}
template <class A>
RF_IFMA inline typename A::Twiddle ztwiddles(const u64* w, const u64* ws, std::size_t k) {
  if (k == 4) return A::twiddle(ztwiddles_k4(w), ztwiddles_k4(ws));
  if (k == 2) return A::twiddle(ztwiddles_k2(w), ztwiddles_k2(ws));
  return A::twiddle(zload(w), zload(ws));
}

// ===========================================================================
// Radix-2 stages of distance k >= 8 over `len` elements.

template <class A, bool kForward>
RF_IFMA void radix2_stage(u64* a, std::size_t len, std::size_t k, StageTwiddles tw, const ZMod& m) {
  for (std::size_t g = 0; g < len / (2 * k); ++g) {
    u64* x = a + 2 * g * k;
    u64* y = x + k;
    const typename A::Twiddle w = zbroadcast<A>(tw.w[g], tw.ws[g]);
    for (std::size_t j = 0; j < k; j += 8) {
      Z xv = zload(x + j), yv = zload(y + j);
      if constexpr (kForward) {
        zct<A>(xv, yv, w, m);
      } else {
        zgs<A>(xv, yv, w, m);
      }
      zstore(x + j, xv);
      zstore(y + j, yv);
    }
  }
}

// ===========================================================================
// Forward

// The last stages, distance 4, 2 (and 1 where `through_1`), on the 16-element
// chunks of [offset, offset + len), reduced to [0, q). In [0, 4q).
template <class A>
RF_IFMA void forward_tail(u64* a, const NttTables& t, std::size_t offset, std::size_t len, bool through_1,
                          const ZMod& m) {
  const std::size_t n = t.n();
  const u64* w = t.forward();
  const u64* ws = t.forward_shoup();
  // Stage of distance k has n / (2k) groups; the group of element p is p / (2k).
  const std::size_t m4 = n / 8, m2 = n / 4, m1 = n / 2;
  // From [0 1 2 3 8 9 10 11 | 4 5 6 7 12 13 14 15] (distance 4) to distance 2's
  // [0 1 4 5 8 9 12 13 | 2 3 6 7 10 11 14 15], then to distance 1's even | odd.
  const Z to2_x = zidx(0, 1, 8, 9, 4, 5, 12, 13), to2_y = zidx(2, 3, 10, 11, 6, 7, 14, 15);
  const Z to1_x = zidx(0, 8, 2, 10, 4, 12, 6, 14), to1_y = zidx(1, 9, 3, 11, 5, 13, 7, 15);
  // Back to memory order from distance 1's lanes, or from distance 2's.
  const Z from1_lo = zidx(0, 8, 1, 9, 2, 10, 3, 11), from1_hi = zidx(4, 12, 5, 13, 6, 14, 7, 15);
  const Z from2_lo = zidx(0, 1, 8, 9, 2, 3, 10, 11), from2_hi = zidx(4, 5, 12, 13, 6, 7, 14, 15);
  for (std::size_t c = 0; c < len; c += 16) {
    u64* p = a + offset + c;
    const std::size_t at = offset + c;
    const Z lo = zload(p), hi = zload(p + 8);
    Z x = _mm512_shuffle_i64x2(lo, hi, 0x44), y = _mm512_shuffle_i64x2(lo, hi, 0xEE);
    zct<A>(x, y, ztwiddles<A>(w + m4 + at / 8, ws + m4 + at / 8, 4), m);
    Z x2 = zpermute(x, to2_x, y), y2 = zpermute(x, to2_y, y);
    zct<A>(x2, y2, ztwiddles<A>(w + m2 + at / 4, ws + m2 + at / 4, 2), m);
    if (!through_1) {
      x2 = zreduce_4q(x2, m);
      y2 = zreduce_4q(y2, m);
      zstore(p, zpermute(x2, from2_lo, y2));
      zstore(p + 8, zpermute(x2, from2_hi, y2));
      continue;
    }
    Z x1 = zpermute(x2, to1_x, y2), y1 = zpermute(x2, to1_y, y2);
    zct<A>(x1, y1, ztwiddles<A>(w + m1 + at / 2, ws + m1 + at / 2, 1), m);
    x1 = zreduce_4q(x1, m);
    y1 = zreduce_4q(y1, m);
    zstore(p, zpermute(x1, from1_lo, y1));
    zstore(p + 8, zpermute(x1, from1_hi, y1));
  }
}

// Stages 0 .. num_stages-1 (the last of distance 1, or 2 when truncated).
template <class A>
RF_IFMA void forward_transform(u64* a, const NttTables& t, int num_stages) {
  const std::size_t n = t.n();
  const ZMod m = zmod(t.modulus().value());
  const bool through_1 = num_stages == t.log_n();
  const int radix2_end = num_stages - (through_1 ? 3 : 2);  // stages before the tail (distance >= 8)
  auto stage = [&](int s, std::size_t offset, std::size_t len) RF_IFMA {
    const std::size_t groups = std::size_t{1} << s, k = n / (2 * groups);
    radix2_stage<A, true>(a + offset, len, k, forward_twiddles(t, groups, k, offset), m);
  };
  int s = 0;
  for (; s < radix2_end && (n >> s) > kBlock; ++s) stage(s, 0, n);
  const std::size_t block = std::min(n, kBlock);
  for (std::size_t offset = 0; offset < n; offset += block) {
    for (int r = s; r < radix2_end; ++r) stage(r, offset, block);
    forward_tail<A>(a, t, offset, block, through_1, m);
  }
}

// ===========================================================================
// Inverse

// The first stages, distance 1 (where `from_1`), 2 and 4, on the 16-element
// chunks of [offset, offset + len). In/out [0, 2q).
template <class A>
RF_IFMA void inverse_head(u64* a, const NttTables& t, std::size_t offset, std::size_t len, bool from_1,
                          const ZMod& m) {
  const std::size_t n = t.n();
  const u64* w = t.inverse();
  const u64* ws = t.inverse_shoup();
  const std::size_t m1 = n / 2, m2 = n / 4, m4 = n / 8;
  const Z even = zidx(0, 2, 4, 6, 8, 10, 12, 14), odd = zidx(1, 3, 5, 7, 9, 11, 13, 15);
  // Distance 1's even | odd to distance 2's [0 1 4 5 8 9 12 13 | 2 3 6 7 ...].
  const Z from1_x = zidx(0, 8, 2, 10, 4, 12, 6, 14), from1_y = zidx(1, 9, 3, 11, 5, 13, 7, 15);
  // Memory order to distance 2's lanes (the truncated transform starts there).
  const Z load2_x = zidx(0, 1, 4, 5, 8, 9, 12, 13), load2_y = zidx(2, 3, 6, 7, 10, 11, 14, 15);
  // Distance 2's lanes to distance 4's [0 1 2 3 8 9 10 11 | 4 5 6 7 12 13 14 15].
  const Z to4_x = zidx(0, 1, 8, 9, 4, 5, 12, 13), to4_y = zidx(2, 3, 10, 11, 6, 7, 14, 15);
  for (std::size_t c = 0; c < len; c += 16) {
    u64* p = a + offset + c;
    const std::size_t at = offset + c;
    const Z lo = zload(p), hi = zload(p + 8);
    Z x2, y2;
    if (from_1) {
      Z x1 = zpermute(lo, even, hi), y1 = zpermute(lo, odd, hi);
      zgs<A>(x1, y1, ztwiddles<A>(w + m1 + at / 2, ws + m1 + at / 2, 1), m);
      x2 = zpermute(x1, from1_x, y1);
      y2 = zpermute(x1, from1_y, y1);
    } else {
      x2 = zpermute(lo, load2_x, hi);
      y2 = zpermute(lo, load2_y, hi);
    }
    zgs<A>(x2, y2, ztwiddles<A>(w + m2 + at / 4, ws + m2 + at / 4, 2), m);
    Z x4 = zpermute(x2, to4_x, y2), y4 = zpermute(x2, to4_y, y2);
    zgs<A>(x4, y4, ztwiddles<A>(w + m4 + at / 8, ws + m4 + at / 8, 4), m);
    zstore(p, _mm512_shuffle_i64x2(x4, y4, 0x44));
    zstore(p + 8, _mm512_shuffle_i64x2(x4, y4, 0xEE));
  }
}

// The last two stages (m = 2, then m = 1 with the scale folded in); in [0, 2q),
// out [0, q). As ntt_kernels.cpp's inverse_last_two_stages.
template <class A>
RF_IFMA void inverse_last_two_stages(u64* a, const NttTables& t, ShoupOperand scale, ShoupOperand last,
                                     const ZMod& m) {
  const std::size_t h = t.n() / 4;
  const typename A::Twiddle w0 = zbroadcast<A>(t.inverse()[2], t.inverse_shoup()[2]);
  const typename A::Twiddle w1 = zbroadcast<A>(t.inverse()[3], t.inverse_shoup()[3]);
  const typename A::Twiddle vs = zbroadcast<A>(scale.value, scale.quotient);
  const typename A::Twiddle vl = zbroadcast<A>(last.value, last.quotient);
  u64* x0 = a;
  u64* x1 = a + h;
  u64* x2 = a + 2 * h;
  u64* x3 = a + 3 * h;
  for (std::size_t j = 0; j < h; j += 8) {
    Z v0 = zload(x0 + j), v1 = zload(x1 + j), v2 = zload(x2 + j), v3 = zload(x3 + j);
    zgs<A>(v0, v1, w0, m);
    zgs<A>(v2, v3, w1, m);
    zstore(x0 + j, zmul<A>(_mm512_add_epi64(v0, v2), vs, m));
    zstore(x2 + j, zmul<A>(_mm512_add_epi64(_mm512_sub_epi64(v0, v2), m.two_q), vl, m));
    zstore(x1 + j, zmul<A>(_mm512_add_epi64(v1, v3), vs, m));
    zstore(x3 + j, zmul<A>(_mm512_add_epi64(_mm512_sub_epi64(v1, v3), m.two_q), vl, m));
  }
}

// From stage lm_start (distance 1, or 2 when truncated) down to 0.
template <class A>
RF_IFMA void inverse_transform(u64* a, const NttTables& t, int lm_start, ShoupOperand scale, ShoupOperand last) {
  const std::size_t n = t.n();
  const ZMod m = zmod(t.modulus().value());
  const bool from_1 = lm_start == t.log_n() - 1;
  const int radix2_start = lm_start - (from_1 ? 3 : 2);  // the first stage after the head (distance 8)
  auto stage = [&](int lm, std::size_t offset, std::size_t len) RF_IFMA {
    const std::size_t groups = std::size_t{1} << lm, k = n / (2 * groups);
    radix2_stage<A, false>(a + offset, len, k, inverse_twiddles(t, groups, k, offset), m);
  };
  const std::size_t block = std::min(n, kBlock);
  int lm = radix2_start;
  while (lm >= 2 && (n >> lm) <= block) --lm;
  for (std::size_t offset = 0; offset < n; offset += block) {
    inverse_head<A>(a, t, offset, block, from_1, m);
    for (int r = radix2_start; r > lm; --r) stage(r, offset, block);
  }
  for (; lm >= 2; --lm) stage(lm, 0, n);
  inverse_last_two_stages<A>(a, t, scale, last, m);
}

}  // namespace

bool ntt_avx512_fits(const NttTables& t) { return t.n() >= kNttAvx512MinDegree && t.modulus().value() < kNttAvx512Bound; }

namespace {

bool on_ifma(const NttTables& t) { return t.modulus().value() < kIfmaBound; }

}  // namespace

RF_IFMA void ntt_forward_limb_avx512(u64* a, const NttTables& t) {
  on_ifma(t) ? forward_transform<Ifma52>(a, t, t.log_n()) : forward_transform<Mul64>(a, t, t.log_n());
}

RF_IFMA void ntt_forward_truncated_limb_avx512(u64* a, const NttTables& t) {
  on_ifma(t) ? forward_transform<Ifma52>(a, t, t.log_n() - 1) : forward_transform<Mul64>(a, t, t.log_n() - 1);
}

RF_IFMA void ntt_inverse_limb_avx512(u64* a, const NttTables& t) {
  on_ifma(t) ? inverse_transform<Ifma52>(a, t, t.log_n() - 1, t.n_inv(), t.last_twiddle_n_inv())
             : inverse_transform<Mul64>(a, t, t.log_n() - 1, t.n_inv(), t.last_twiddle_n_inv());
}

RF_IFMA void ntt_inverse_truncated_limb_avx512(u64* a, const NttTables& t) {
  on_ifma(t) ? inverse_transform<Ifma52>(a, t, t.log_n() - 2, t.half_n_inv(), t.last_twiddle_half_n_inv())
             : inverse_transform<Mul64>(a, t, t.log_n() - 2, t.half_n_inv(), t.last_twiddle_half_n_inv());
}

}  // namespace ringfire::cpu
