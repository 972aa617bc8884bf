// The blind rotation's transforms (negacyclic_fft.h) on eight AVX-512 lanes,
// compiled function by function for AVX-512 F/BW/DQ/VL (the rest of the
// library targets the baseline CPU) and run only where isa.cpp found those
// extensions and the constructor found passes they fit (wide_passes).
//
// The passes are negacyclic_fft.cpp's, with the same arithmetic in the same
// order on every value (the same products, the same fused multiply-adds), so
// both paths give the same bits: the tests compare them. Twice the lanes
// halve the passes' instructions; the group-of-16 pass holds a group in two
// registers per part instead of four and moves values between their halves
// with shuffles; the backward transform's last pass untwists and converts
// its outputs as it makes them. The key products and the key switch have
// AVX-512 forms of their own (torus_kernels_avx512.cpp).
#include "ringfire/tfhe/negacyclic_fft.h"

#include "ringfire/base/errors.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

// GCC 12's AVX-512 headers start some intrinsics from _mm512_undefined_*,
// which -Wmaybe-uninitialized reports once they are inlined here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#define RF_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))

namespace ringfire::tfhe {

namespace {

using D = __m512d;
using W = __m512i;

RF_AVX512 inline D ld(const double* p) { return _mm512_loadu_pd(p); }
RF_AVX512 inline void st(double* p, D v) { _mm512_storeu_pd(p, v); }
RF_AVX512 inline D add(D a, D b) { return _mm512_add_pd(a, b); }
RF_AVX512 inline D sub(D a, D b) { return _mm512_sub_pd(a, b); }
// The four values at w (a block's twiddles) in both halves.
RF_AVX512 inline D ld4_twice(const double* w) { return _mm512_broadcast_f64x4(_mm256_loadu_pd(w)); }
// Two blocks of four from a's and b's halves: [a.lo, b.lo] (lo) or [a.hi, b.hi].
RF_AVX512 inline D lows(D a, D b) { return _mm512_shuffle_f64x2(a, b, 0x44); }
RF_AVX512 inline D highs(D a, D b) { return _mm512_shuffle_f64x2(a, b, 0xEE); }
// [x + y, x - y] for x, y the halves of v: the first two outputs of a radix-4
// butterfly on the transposed layout.
RF_AVX512 inline D sum_difference(D v) {
  const D x = lows(v, v), y = highs(v, v);
  return _mm512_mask_sub_pd(add(x, y), 0xF0, x, y);
}

// (x + i y)(c + i d), as complex_product in negacyclic_fft.cpp.
RF_AVX512 inline void complex_product(D x, D y, D c, D d, D& out_r, D& out_i) {
  out_r = _mm512_fmsub_pd(x, c, _mm512_mul_pd(y, d));
  out_i = _mm512_fmadd_pd(x, d, _mm512_mul_pd(y, c));
}

// radix4_forward_store on eight lanes.
RF_AVX512 inline void radix4_forward_store(D x0r, D x0i, D x1r, D x1i, D x2r, D x2i, D x3r, D x3i, double* re,
                                           double* im, std::size_t q, const double* wr, const double* wi) {
  const D b0r = add(x0r, x2r), b0i = add(x0i, x2i);
  const D b2r = sub(x0r, x2r), b2i = sub(x0i, x2i);
  const D b1r = add(x1r, x3r), b1i = add(x1i, x3i);
  const D b3r = sub(x1i, x3i), b3i = sub(x3r, x1r);
  const D y1r = sub(b0r, b1r), y1i = sub(b0i, b1i);
  const D y2r = add(b2r, b3r), y2i = add(b2i, b3i);
  const D y3r = sub(b2r, b3r), y3i = sub(b2i, b3i);
  st(re, add(b0r, b1r)), st(im, add(b0i, b1i));
  D r, i;
  complex_product(y1r, y1i, ld(wr + q), ld(wi + q), r, i), st(re + q, r), st(im + q, i);
  complex_product(y2r, y2i, ld(wr), ld(wi), r, i), st(re + 2 * q, r), st(im + 2 * q, i);
  complex_product(y3r, y3i, ld(wr + 2 * q), ld(wi + 2 * q), r, i), st(re + 3 * q, r), st(im + 3 * q, i);
}

RF_AVX512 inline void radix4_forward_lanes(double* re, double* im, std::size_t q, const double* wr, const double* wi) {
  radix4_forward_store(ld(re), ld(im), ld(re + q), ld(im + q), ld(re + 2 * q), ld(im + 2 * q), ld(re + 3 * q),
                       ld(im + 3 * q), re, im, q, wr, wi);
}

// x conj(w) for x at xr_p, xi_p and w at r, i.
RF_AVX512 inline void untwiddle(const double* xr_p, const double* xi_p, const double* r, const double* i, D& out_r,
                                D& out_i) {
  const D xr = ld(xr_p), xi = ld(xi_p), w_r = ld(r), w_i = ld(i);
  out_r = _mm512_fmadd_pd(xr, w_r, _mm512_mul_pd(xi, w_i));
  out_i = _mm512_fmsub_pd(xi, w_r, _mm512_mul_pd(xr, w_i));
}

// radix4_backward_lanes on eight lanes.
RF_AVX512 inline void radix4_backward_lanes(double* re, double* im, std::size_t q, const double* wr, const double* wi) {
  D y1r, y1i, y2r, y2i, y3r, y3i;
  untwiddle(re + q, im + q, wr + q, wi + q, y1r, y1i);
  untwiddle(re + 2 * q, im + 2 * q, wr, wi, y2r, y2i);
  untwiddle(re + 3 * q, im + 3 * q, wr + 2 * q, wi + 2 * q, y3r, y3i);
  const D y0r = ld(re), y0i = ld(im);
  const D c0r = add(y0r, y1r), c0i = add(y0i, y1i);
  const D c1r = sub(y0r, y1r), c1i = sub(y0i, y1i);
  const D c2r = add(y2r, y3r), c2i = add(y2i, y3i);
  const D c3r = sub(y2r, y3r), c3i = sub(y2i, y3i);
  st(re, add(c0r, c2r)), st(im, add(c0i, c2i));
  st(re + 2 * q, sub(c0r, c2r)), st(im + 2 * q, sub(c0i, c2i));
  st(re + q, sub(c1r, c3i)), st(im + q, add(c1i, c3r));
  st(re + 3 * q, add(c1r, c3i)), st(im + 3 * q, sub(c1i, c3r));
}

// The group of 16 (len 16, 8, 4, 2), as radix4_forward_group: the group's
// blocks of four b0..b3 sit in R0 = [b0, b1], R1 = [b2, b3]; len 8 pairs b0
// with b1 and b2 with b3, so it runs on A = [b0, b2], B = [b1, b3]; the
// transposed layout (value k of block b at 4 k + b) is [V0, V1], [V2, V3]
// with V_k = (b0[k], b1[k], b2[k], b3[k]), one permutation of A and B each.
RF_AVX512 inline void radix4_forward_group(double* re, double* im, const double* w_re, const double* w_im) {
  D r0 = ld(re), i0 = ld(im), r1 = ld(re + 8), i1 = ld(im + 8);
  {  // len 16: (value j, value j + 8) -> (u + v, (u - v) W^j)
    const D dr = sub(r0, r1), di = sub(i0, i1);
    r0 = add(r0, r1), i0 = add(i0, i1);
    complex_product(dr, di, ld(w_re), ld(w_im), r1, i1);
  }
  D ar = lows(r0, r1), ai = lows(i0, i1), br = highs(r0, r1), bi = highs(i0, i1);
  {  // len 8, W^j for j < 4 in both halves
    const D dr = sub(ar, br), di = sub(ai, bi);
    ar = add(ar, br), ai = add(ai, bi);
    complex_product(dr, di, ld4_twice(w_re + 8), ld4_twice(w_im + 8), br, bi);
  }
  const W first = _mm512_setr_epi64(0, 8, 4, 12, 1, 9, 5, 13), second = _mm512_setr_epi64(2, 10, 6, 14, 3, 11, 7, 15);
  const D pr = _mm512_permutex2var_pd(ar, first, br), pi = _mm512_permutex2var_pd(ai, first, bi);    // [V0, V1]
  const D qr = _mm512_permutex2var_pd(ar, second, br), qi = _mm512_permutex2var_pd(ai, second, bi);  // [V2, V3]
  // a0 = V0 + V2, a1 = V1 + V3 (sums' halves), a2 = V0 - V2 and V1 - V3
  // (differences' halves), a3 = (V1 - V3)(-i): re V1i - V3i, im V3r - V1r.
  const D sr = add(pr, qr), si = add(pi, qi), dr = sub(pr, qr), di = sub(pi, qi), back_r = sub(qr, pr);
  st(re, sum_difference(sr)), st(im, sum_difference(si));
  const D x_r = lows(dr, dr), x_i = lows(di, di), y_r = highs(di, di), y_i = highs(back_r, back_r);
  st(re + 8, _mm512_mask_sub_pd(add(x_r, y_r), 0xF0, x_r, y_r));
  st(im + 8, _mm512_mask_sub_pd(add(x_i, y_i), 0xF0, x_i, y_i));
}

// radix4_backward_group: its inverse, step for step.
RF_AVX512 inline void radix4_backward_group(double* re, double* im, const double* w_re, const double* w_im) {
  // [x0, x1] and [x2, x3] -> [a0, a1] = [x0 + x1, x0 - x1] and [a2, a3].
  const D a01r = sum_difference(ld(re)), a01i = sum_difference(ld(im));
  const D a23r = sum_difference(ld(re + 8)), a23i = sum_difference(ld(im + 8));
  // y0 = a0 + a2, y1 = a1 + i a3, y2 = a0 - a2, y3 = a1 - i a3 with t = [a2, i a3]
  // taken apart: re [a2r, a3i] (y1r = a1r - a3i), im [a2i, a3r].
  const D tr = _mm512_mask_blend_pd(0xF0, a23r, a23i), ti = _mm512_mask_blend_pd(0xF0, a23i, a23r);
  const D pr = _mm512_mask_sub_pd(add(a01r, tr), 0xF0, a01r, tr), pi = add(a01i, ti);  // [y0, y1]
  const D qr = _mm512_mask_add_pd(sub(a01r, tr), 0xF0, a01r, tr), qi = sub(a01i, ti);  // [y2, y3]
  const W to_a = _mm512_setr_epi64(0, 4, 8, 12, 2, 6, 10, 14), to_b = _mm512_setr_epi64(1, 5, 9, 13, 3, 7, 11, 15);
  D ar = _mm512_permutex2var_pd(pr, to_a, qr), ai = _mm512_permutex2var_pd(pi, to_a, qi);  // [b0, b2]
  D br = _mm512_permutex2var_pd(pr, to_b, qr), bi = _mm512_permutex2var_pd(pi, to_b, qi);  // [b1, b3]
  {  // len 8: (u, v) -> (u + v conj(W^j), u - v conj(W^j))
    const D wr = ld4_twice(w_re + 8), wi = ld4_twice(w_im + 8);
    const D t_r = _mm512_fmadd_pd(br, wr, _mm512_mul_pd(bi, wi)), t_i = _mm512_fmsub_pd(bi, wr, _mm512_mul_pd(br, wi));
    br = sub(ar, t_r), bi = sub(ai, t_i);
    ar = add(ar, t_r), ai = add(ai, t_i);
  }
  D r0 = lows(ar, br), i0 = lows(ai, bi), r1 = highs(ar, br), i1 = highs(ai, bi);
  {  // len 16
    const D wr = ld(w_re), wi = ld(w_im);
    const D t_r = _mm512_fmadd_pd(r1, wr, _mm512_mul_pd(i1, wi)), t_i = _mm512_fmsub_pd(i1, wr, _mm512_mul_pd(r1, wi));
    r1 = sub(r0, t_r), i1 = sub(i0, t_i);
    r0 = add(r0, t_r), i0 = add(i0, t_i);
  }
  st(re, r0), st(im, i0), st(re + 8, r1), st(im + 8, i1);
}

// One gadget level's digits of eight words, as top_digit in negacyclic_fft.cpp:
// the top B bits of w + 2^(63 - B) read as a signed integer.
RF_AVX512 inline D top_digits(W w, unsigned base_log) {
  const W rounded = _mm512_add_epi64(w, _mm512_set1_epi64(static_cast<long long>(std::uint64_t{1} << (63 - base_log))));
  return _mm512_cvtepi64_pd(_mm512_sra_epi64(rounded, _mm_cvtsi32_si128(static_cast<int>(64 - base_log))));
}

struct TopDigits8 {
  const std::uint64_t* in;
  unsigned base_log;
  RF_AVX512 D at8(std::size_t j) const { return top_digits(_mm512_loadu_si512(in + j), base_log); }
};

struct Int32Digits8 {
  const std::int32_t* in;
  RF_AVX512 D at8(std::size_t j) const {
    return _mm512_cvtepi32_pd(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + j)));
  }
};

// The twist and the first radix-2^2 pass over the whole length, as the
// narrow path's fused pass; m points, twist t, that pass's twiddles w.
template <class Source>
RF_AVX512 inline void twist_first_pass(const Source& source, std::size_t m, const double* tr, const double* ti,
                                       const double* wr, const double* wi, double* re, double* im,
                                       LinesAhead* ahead) {
  const std::size_t q = m / 4;
  for (std::size_t j = 0; j < q; j += 8) {
    if (ahead) ahead->fetch();
    D xr[4], xi[4];
    for (std::size_t k = 0; k < 4; ++k) {
      const std::size_t at = j + k * q;
      complex_product(source.at8(at), source.at8(at + m), ld(tr + at), ld(ti + at), xr[k], xi[k]);
    }
    radix4_forward_store(xr[0], xi[0], xr[1], xi[1], xr[2], xi[2], xr[3], xi[3], re + j, im + j, q, wr + j, wi + j);
  }
}

// wrap_to_u64 on eight lanes: m = round(y / 2^64), r = y - m 2^64 (exact,
// |r| <= 2^63), round(r) mod 2^64 by the conversion, to nearest even as the
// narrow path's roundings (at |r| = 2^63 it gives 2^63, right mod 2^64).
RF_AVX512 inline W wrap_to_u64(D y) {
  const D magic = _mm512_set1_pd(0x1.8p52);
  const D m = sub(_mm512_fmadd_pd(y, _mm512_set1_pd(0x1p-64), magic), magic);
  const D r = _mm512_fnmadd_pd(m, _mm512_set1_pd(0x1p64), y);
  return _mm512_cvt_roundpd_epi64(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// out[j] += wrap(Re(y u)), out[j + M] += wrap(Im(y u)) for y at position j
// (eight positions), u the untwist factor there.
RF_AVX512 inline void untwist_add(D yr, D yi, const double* ur, const double* ui, std::uint64_t* lo,
                                  std::uint64_t* hi) {
  const D u_r = ld(ur), u_i = ld(ui);
  const D a = _mm512_fmsub_pd(yr, u_r, _mm512_mul_pd(yi, u_i));
  const D b = _mm512_fmadd_pd(yr, u_i, _mm512_mul_pd(yi, u_r));
  _mm512_storeu_si512(lo, _mm512_add_epi64(_mm512_loadu_si512(lo), wrap_to_u64(a)));
  _mm512_storeu_si512(hi, _mm512_add_epi64(_mm512_loadu_si512(hi), wrap_to_u64(b)));
}

}  // namespace

bool NegacyclicFft::wide_passes() const {
  // The twist fused with a first radix-2^2 pass, then radix-2^2 passes and
  // the group pass, every radix-2^2 pass with a multiple of eight values per
  // stream (N = 2048 among the presets; others keep the narrow path).
  if (!fused_first_ || steps_.size() < 2 || steps_.back().radix != 16) return false;
  for (std::size_t k = 0; k + 1 < steps_.size(); ++k)
    if (steps_[k].radix != 4 || steps_[k].len / 4 % 8 != 0) return false;
  return true;
}

RF_AVX512 void NegacyclicFft::forward_top_digits_wide(const std::uint64_t* in, unsigned base_log, double* re,
                                                      double* im, LinesAhead* ahead) const {
  twist_first_pass(TopDigits8{in, base_log}, m_, twist_re_.data(), twist_im_.data(), tw_re_.data() + steps_[0].twiddles,
                   tw_im_.data() + steps_[0].twiddles, re, im, ahead);
  forward_passes_wide(re, im, ahead);
}

RF_AVX512 void NegacyclicFft::forward_wide(const std::int32_t* in, double* re, double* im, LinesAhead* ahead) const {
  twist_first_pass(Int32Digits8{in}, m_, twist_re_.data(), twist_im_.data(), tw_re_.data() + steps_[0].twiddles,
                   tw_im_.data() + steps_[0].twiddles, re, im, ahead);
  forward_passes_wide(re, im, ahead);
}

RF_AVX512 void NegacyclicFft::forward_passes_wide(double* re, double* im, LinesAhead* ahead) const {
  for (std::size_t k = 1; k < steps_.size(); ++k) {
    const Step& step = steps_[k];
    const double* wr = tw_re_.data() + step.twiddles;
    const double* wi = tw_im_.data() + step.twiddles;
    if (step.radix == 16) {
      for (std::size_t s = 0; s < m_; s += 16) {
        if (ahead) ahead->fetch();
        radix4_forward_group(re + s, im + s, wr, wi);
      }
      continue;
    }
    const std::size_t q = step.len / 4;
    for (std::size_t s = 0; s < m_; s += step.len)
      for (std::size_t j = 0; j < q; j += 8) {
        if (ahead) ahead->fetch();
        radix4_forward_lanes(re + s + j, im + s + j, q, wr + j, wi + j);
      }
  }
}

RF_AVX512 void NegacyclicFft::backward_add_wide(double* re, double* im, std::uint64_t* out, LinesAhead* ahead) const {
  for (std::size_t k = steps_.size(); k-- > 1;) {
    const Step& step = steps_[k];
    const double* wr = tw_re_.data() + step.twiddles;
    const double* wi = tw_im_.data() + step.twiddles;
    if (step.radix == 16) {
      for (std::size_t s = 0; s < m_; s += 16) {
        if (ahead) ahead->fetch();
        radix4_backward_group(re + s, im + s, wr, wi);
      }
      continue;
    }
    const std::size_t q = step.len / 4;
    for (std::size_t s = 0; s < m_; s += step.len)
      for (std::size_t j = 0; j < q; j += 8) {
        if (ahead) ahead->fetch();
        radix4_backward_lanes(re + s + j, im + s + j, q, wr + j, wi + j);
      }
  }
  // The last pass (radix 2^2 over the whole length) with the untwist and the
  // conversion: its four outputs go to the words without a pass of their own
  // (the values are the ones radix4_backward_lanes would store).
  const std::size_t q = m_ / 4;
  const double* wr = tw_re_.data() + steps_[0].twiddles;
  const double* wi = tw_im_.data() + steps_[0].twiddles;
  const double* ur = untwist_re_.data();
  const double* ui = untwist_im_.data();
  for (std::size_t j = 0; j < q; j += 8) {
    if (ahead) ahead->fetch();
    D y1r, y1i, y2r, y2i, y3r, y3i;
    untwiddle(re + q + j, im + q + j, wr + q + j, wi + q + j, y1r, y1i);
    untwiddle(re + 2 * q + j, im + 2 * q + j, wr + j, wi + j, y2r, y2i);
    untwiddle(re + 3 * q + j, im + 3 * q + j, wr + 2 * q + j, wi + 2 * q + j, y3r, y3i);
    const D y0r = ld(re + j), y0i = ld(im + j);
    const D c0r = add(y0r, y1r), c0i = add(y0i, y1i);
    const D c1r = sub(y0r, y1r), c1i = sub(y0i, y1i);
    const D c2r = add(y2r, y3r), c2i = add(y2i, y3i);
    const D c3r = sub(y2r, y3r), c3i = sub(y2i, y3i);
    untwist_add(add(c0r, c2r), add(c0i, c2i), ur + j, ui + j, out + j, out + j + m_);
    untwist_add(sub(c1r, c3i), add(c1i, c3r), ur + q + j, ui + q + j, out + q + j, out + q + j + m_);
    untwist_add(sub(c0r, c2r), sub(c0i, c2i), ur + 2 * q + j, ui + 2 * q + j, out + 2 * q + j, out + 2 * q + j + m_);
    untwist_add(add(c1r, c3i), sub(c1i, c3r), ur + 3 * q + j, ui + 3 * q + j, out + 3 * q + j, out + 3 * q + j + m_);
  }
}

}  // namespace ringfire::tfhe

#else  // no AVX-512 forms: wide_passes() says so, and the others are never called

namespace ringfire::tfhe {

bool NegacyclicFft::wide_passes() const { return false; }

void NegacyclicFft::forward_top_digits_wide(const std::uint64_t*, unsigned, double*, double*, LinesAhead*) const {
  throw InvalidArgument("tfhe.NegacyclicFft: no AVX-512 transforms in this build");
}

void NegacyclicFft::forward_wide(const std::int32_t*, double*, double*, LinesAhead*) const {
  throw InvalidArgument("tfhe.NegacyclicFft: no AVX-512 transforms in this build");
}

void NegacyclicFft::backward_add_wide(double*, double*, std::uint64_t*, LinesAhead*) const {
  throw InvalidArgument("tfhe.NegacyclicFft: no AVX-512 transforms in this build");
}

void NegacyclicFft::forward_passes_wide(double*, double*, LinesAhead*) const {
  throw InvalidArgument("tfhe.NegacyclicFft: no AVX-512 transforms in this build");
}

}  // namespace ringfire::tfhe

#endif
