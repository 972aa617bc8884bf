#include "ringfire/tfhe/negacyclic_fft.h"

#include <algorithm>
#include <bit>
#include <cmath>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "ringfire/base/errors.h"

namespace ringfire::tfhe {

namespace {

constexpr double kPi = 3.14159265358979323846;

// A double (an integer up to rounding, |y| < 2^100) rounded, mod 2^64.
// Without AVX-512 there is no vector conversion from double to int64, so
// the value is split into 32-bit halves that the "magic number" conversion
// (adding 2^52 + 2^51 and reading the bits) handles exactly; written without
// branches or calls so that the loop around it runs four lanes wide.
inline std::uint64_t wrap_to_u64(double y) {
  constexpr double kMagic = 0x1.8p52;  // 2^52 + 2^51
  const double r = y - std::nearbyint(y * 0x1p-64) * 0x1p64;  // exact (Sterbenz): |r| <= 2^63
  const double hi = std::floor(r * 0x1p-32);                 // |hi| <= 2^31
  const double lo = std::nearbyint(r - hi * 0x1p32);         // in [0, 2^32], exact
  const std::int64_t h = std::bit_cast<std::int64_t>(hi + kMagic) - std::bit_cast<std::int64_t>(kMagic);
  const std::int64_t l = std::bit_cast<std::int64_t>(lo + kMagic) - std::bit_cast<std::int64_t>(kMagic);
  return (static_cast<std::uint64_t>(h) << 32) + static_cast<std::uint64_t>(l);
}

#if defined(__AVX2__)
// wrap_to_u64 on four lanes. Adding kMagic rounds a double below 2^51 in
// magnitude to the nearest integer and leaves that integer in the low bits,
// so each rounding is the add itself (fused with the product before it):
// m = round(y / 2^64), r = y - m 2^64 (exact, |r| <= 2^63), h = round(r / 2^32),
// l = round(r - h 2^32) (exact, |.| <= 2^31), and round(y) = h 2^32 + l mod 2^64.
inline __m256i wrap_to_u64(__m256d y) {
  const __m256d magic = _mm256_set1_pd(0x1.8p52);
  const __m256d m = _mm256_sub_pd(_mm256_fmadd_pd(y, _mm256_set1_pd(0x1p-64), magic), magic);
  const __m256d r = _mm256_fnmadd_pd(m, _mm256_set1_pd(0x1p64), y);
  const __m256d h_magic = _mm256_fmadd_pd(r, _mm256_set1_pd(0x1p-32), magic);
  const __m256d lo = _mm256_fnmadd_pd(_mm256_sub_pd(h_magic, magic), _mm256_set1_pd(0x1p32), r);
  const __m256i h = _mm256_sub_epi64(_mm256_castpd_si256(h_magic), _mm256_castpd_si256(magic));
  const __m256i l = _mm256_sub_epi64(_mm256_castpd_si256(_mm256_add_pd(lo, magic)), _mm256_castpd_si256(magic));
  return _mm256_add_epi64(_mm256_slli_epi64(h, 32), l);
}
#endif

// The last four stages of the forward transform (len 16, 8, 4, 2) and the
// first four of the backward one (len 2, 4, 8, 16) on each group of 16 values,
// in registers: one pass where they took three (with the twist in the first
// pass, N = 2048 takes four passes each way instead of six; BENCHMARKS.md,
// "The torus engine's FFT in fewer passes", has the times). w points at the
// twiddles of len 16 (W^j, j < 8) followed by those of len 8 (j < 4). After
// len 8 each group is stored transposed (value k of block b at 4 k + b, for
// its four blocks of four) so that the four blocks' values sit in one vector;
// the backward pass reads that layout and restores the blocks. The layout is
// the same with and without AVX2. Always inlined: GCC left the backward one a
// call per group (7 % of a bootstrap's samples in the call alone).
__attribute__((always_inline)) inline void radix4_forward_group(double* re, double* im, const double* w_re,
                                                                const double* w_im) {
  const double* w8r = w_re + 8;
  const double* w8i = w_im + 8;
#if defined(__AVX2__)
  __m256d r[4], i[4];
  for (int b = 0; b < 4; ++b) r[b] = _mm256_loadu_pd(re + 4 * b), i[b] = _mm256_loadu_pd(im + 4 * b);
  // len 16: (u, v) = (value j, value j + 8) -> (u + v, (u - v) W^j).
  for (int b = 0; b < 2; ++b) {
    const __m256d w16r = _mm256_loadu_pd(w_re + 4 * b), w16i = _mm256_loadu_pd(w_im + 4 * b);
    const __m256d dr = _mm256_sub_pd(r[b], r[b + 2]), di = _mm256_sub_pd(i[b], i[b + 2]);
    r[b] = _mm256_add_pd(r[b], r[b + 2]), i[b] = _mm256_add_pd(i[b], i[b + 2]);
    r[b + 2] = _mm256_fmsub_pd(dr, w16r, _mm256_mul_pd(di, w16i));
    i[b + 2] = _mm256_fmadd_pd(dr, w16i, _mm256_mul_pd(di, w16r));
  }
  // len 8 on the group's two blocks of eight: the same with W^j, j < 4.
  const __m256d wr = _mm256_loadu_pd(w8r), wi = _mm256_loadu_pd(w8i);
  for (int b = 0; b < 4; b += 2) {
    const __m256d dr = _mm256_sub_pd(r[b], r[b + 1]), di = _mm256_sub_pd(i[b], i[b + 1]);
    r[b] = _mm256_add_pd(r[b], r[b + 1]), i[b] = _mm256_add_pd(i[b], i[b + 1]);
    r[b + 1] = _mm256_fmsub_pd(dr, wr, _mm256_mul_pd(di, wi));
    i[b + 1] = _mm256_fmadd_pd(dr, wi, _mm256_mul_pd(di, wr));
  }
  auto transpose = [](__m256d* v) {
    const __m256d t0 = _mm256_unpacklo_pd(v[0], v[1]), t1 = _mm256_unpackhi_pd(v[0], v[1]);
    const __m256d t2 = _mm256_unpacklo_pd(v[2], v[3]), t3 = _mm256_unpackhi_pd(v[2], v[3]);
    v[0] = _mm256_permute2f128_pd(t0, t2, 0x20), v[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
    v[2] = _mm256_permute2f128_pd(t0, t2, 0x31), v[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
  };
  transpose(r), transpose(i);  // r[k]: value k of the four blocks
  const __m256d a0r = _mm256_add_pd(r[0], r[2]), a0i = _mm256_add_pd(i[0], i[2]);
  const __m256d a2r = _mm256_sub_pd(r[0], r[2]), a2i = _mm256_sub_pd(i[0], i[2]);
  const __m256d a1r = _mm256_add_pd(r[1], r[3]), a1i = _mm256_add_pd(i[1], i[3]);
  // a3 = (x1 - x3)(-i)
  const __m256d a3r = _mm256_sub_pd(i[1], i[3]), a3i = _mm256_sub_pd(r[3], r[1]);
  _mm256_storeu_pd(re, _mm256_add_pd(a0r, a1r)), _mm256_storeu_pd(im, _mm256_add_pd(a0i, a1i));
  _mm256_storeu_pd(re + 4, _mm256_sub_pd(a0r, a1r)), _mm256_storeu_pd(im + 4, _mm256_sub_pd(a0i, a1i));
  _mm256_storeu_pd(re + 8, _mm256_add_pd(a2r, a3r)), _mm256_storeu_pd(im + 8, _mm256_add_pd(a2i, a3i));
  _mm256_storeu_pd(re + 12, _mm256_sub_pd(a2r, a3r)), _mm256_storeu_pd(im + 12, _mm256_sub_pd(a2i, a3i));
#else
  for (int j = 0; j < 8; ++j) {
    const double dr = re[j] - re[j + 8], di = im[j] - im[j + 8];
    re[j] += re[j + 8], im[j] += im[j + 8];
    re[j + 8] = dr * w_re[j] - di * w_im[j], im[j + 8] = dr * w_im[j] + di * w_re[j];
  }
  for (int b = 0; b < 16; b += 8)
    for (int j = 0; j < 4; ++j) {
      double* ur = re + b + j;
      double* ui = im + b + j;
      const double dr = ur[0] - ur[4], di = ui[0] - ui[4];
      ur[0] += ur[4], ui[0] += ui[4];
      ur[4] = dr * w8r[j] - di * w8i[j], ui[4] = dr * w8i[j] + di * w8r[j];
    }
  double yr[16], yi[16];
  for (int b = 0; b < 4; ++b) {
    const double* xr = re + 4 * b;
    const double* xi = im + 4 * b;
    const double a0r = xr[0] + xr[2], a0i = xi[0] + xi[2], a2r = xr[0] - xr[2], a2i = xi[0] - xi[2];
    const double a1r = xr[1] + xr[3], a1i = xi[1] + xi[3], a3r = xi[1] - xi[3], a3i = xr[3] - xr[1];
    yr[b] = a0r + a1r, yi[b] = a0i + a1i, yr[4 + b] = a0r - a1r, yi[4 + b] = a0i - a1i;
    yr[8 + b] = a2r + a3r, yi[8 + b] = a2i + a3i, yr[12 + b] = a2r - a3r, yi[12 + b] = a2i - a3i;
  }
  for (int k = 0; k < 16; ++k) re[k] = yr[k], im[k] = yi[k];
#endif
}

__attribute__((always_inline)) inline void radix4_backward_group(double* re, double* im, const double* w_re,
                                                                 const double* w_im) {
  const double* w8r = w_re + 8;
  const double* w8i = w_im + 8;
#if defined(__AVX2__)
  __m256d x[4][2];
  for (int k = 0; k < 4; ++k) x[k][0] = _mm256_loadu_pd(re + 4 * k), x[k][1] = _mm256_loadu_pd(im + 4 * k);
  // len 2: a0 = x0 + x1, a1 = x0 - x1, a2 = x2 + x3, a3 = x2 - x3;
  // len 4: y0 = a0 + a2, y2 = a0 - a2, y1 = a1 + i a3, y3 = a1 - i a3.
  const __m256d a0r = _mm256_add_pd(x[0][0], x[1][0]), a0i = _mm256_add_pd(x[0][1], x[1][1]);
  const __m256d a1r = _mm256_sub_pd(x[0][0], x[1][0]), a1i = _mm256_sub_pd(x[0][1], x[1][1]);
  const __m256d a2r = _mm256_add_pd(x[2][0], x[3][0]), a2i = _mm256_add_pd(x[2][1], x[3][1]);
  const __m256d a3r = _mm256_sub_pd(x[2][0], x[3][0]), a3i = _mm256_sub_pd(x[2][1], x[3][1]);
  __m256d r[4] = {_mm256_add_pd(a0r, a2r), _mm256_sub_pd(a1r, a3i), _mm256_sub_pd(a0r, a2r), _mm256_add_pd(a1r, a3i)};
  __m256d i[4] = {_mm256_add_pd(a0i, a2i), _mm256_add_pd(a1i, a3r), _mm256_sub_pd(a0i, a2i), _mm256_sub_pd(a1i, a3r)};
  auto transpose = [](__m256d* v) {
    const __m256d t0 = _mm256_unpacklo_pd(v[0], v[1]), t1 = _mm256_unpackhi_pd(v[0], v[1]);
    const __m256d t2 = _mm256_unpacklo_pd(v[2], v[3]), t3 = _mm256_unpackhi_pd(v[2], v[3]);
    v[0] = _mm256_permute2f128_pd(t0, t2, 0x20), v[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
    v[2] = _mm256_permute2f128_pd(t0, t2, 0x31), v[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
  };
  transpose(r), transpose(i);  // back to blocks
  // len 8: (u, v) -> (u + v conj(W^j), u - v conj(W^j)).
  const __m256d wr = _mm256_loadu_pd(w8r), wi = _mm256_loadu_pd(w8i);
  for (int b = 0; b < 4; b += 2) {
    const __m256d tr = _mm256_fmadd_pd(r[b + 1], wr, _mm256_mul_pd(i[b + 1], wi));
    const __m256d ti = _mm256_fmsub_pd(i[b + 1], wr, _mm256_mul_pd(r[b + 1], wi));
    r[b + 1] = _mm256_sub_pd(r[b], tr), i[b + 1] = _mm256_sub_pd(i[b], ti);
    r[b] = _mm256_add_pd(r[b], tr), i[b] = _mm256_add_pd(i[b], ti);
  }
  // len 16: (u, v) = (value j, value j + 8) -> (u + v conj(W^j), u - v conj(W^j)).
  for (int b = 0; b < 2; ++b) {
    const __m256d w16r = _mm256_loadu_pd(w_re + 4 * b), w16i = _mm256_loadu_pd(w_im + 4 * b);
    const __m256d tr = _mm256_fmadd_pd(r[b + 2], w16r, _mm256_mul_pd(i[b + 2], w16i));
    const __m256d ti = _mm256_fmsub_pd(i[b + 2], w16r, _mm256_mul_pd(r[b + 2], w16i));
    r[b + 2] = _mm256_sub_pd(r[b], tr), i[b + 2] = _mm256_sub_pd(i[b], ti);
    r[b] = _mm256_add_pd(r[b], tr), i[b] = _mm256_add_pd(i[b], ti);
  }
  for (int b = 0; b < 4; ++b) _mm256_storeu_pd(re + 4 * b, r[b]), _mm256_storeu_pd(im + 4 * b, i[b]);
#else
  double yr[16], yi[16];
  for (int b = 0; b < 4; ++b) {
    const double x0r = re[b], x1r = re[4 + b], x2r = re[8 + b], x3r = re[12 + b];
    const double x0i = im[b], x1i = im[4 + b], x2i = im[8 + b], x3i = im[12 + b];
    const double a0r = x0r + x1r, a0i = x0i + x1i, a1r = x0r - x1r, a1i = x0i - x1i;
    const double a2r = x2r + x3r, a2i = x2i + x3i, a3r = x2r - x3r, a3i = x2i - x3i;
    double* yrb = yr + 4 * b;
    double* yib = yi + 4 * b;
    yrb[0] = a0r + a2r, yib[0] = a0i + a2i, yrb[2] = a0r - a2r, yib[2] = a0i - a2i;
    yrb[1] = a1r - a3i, yib[1] = a1i + a3r, yrb[3] = a1r + a3i, yib[3] = a1i - a3r;
  }
  for (int k = 0; k < 16; ++k) re[k] = yr[k], im[k] = yi[k];
  for (int b = 0; b < 16; b += 8)
    for (int j = 0; j < 4; ++j) {
      double* ur = re + b + j;
      double* ui = im + b + j;
      const double tr = ur[4] * w8r[j] + ui[4] * w8i[j], ti = ui[4] * w8r[j] - ur[4] * w8i[j];
      ur[4] = ur[0] - tr, ui[4] = ui[0] - ti;
      ur[0] += tr, ui[0] += ti;
    }
  for (int j = 0; j < 8; ++j) {
    const double tr = re[j + 8] * w_re[j] + im[j + 8] * w_im[j], ti = im[j + 8] * w_re[j] - re[j + 8] * w_im[j];
    re[j + 8] = re[j] - tr, im[j + 8] = im[j] - ti;
    re[j] += tr, im[j] += ti;
  }
#endif
}

#if defined(__AVX2__)
// One radix-2^2 butterfly of the forward transform on four lanes: the values
// at re/im + {0, 1, 2, 3} q, the twiddles W^j, W^2j, W^3j at w + {0, q, 2q}
// (the scalar loop in dif() says the same).
// The butterfly on values given (x_k at re/im + k q once stored).
inline void radix4_forward_store(__m256d x0r, __m256d x0i, __m256d x1r, __m256d x1i, __m256d x2r, __m256d x2i,
                                 __m256d x3r, __m256d x3i, double* re, double* im, std::size_t q, const double* wr,
                                 const double* wi) {
  const __m256d b0r = _mm256_add_pd(x0r, x2r), b0i = _mm256_add_pd(x0i, x2i);
  const __m256d b2r = _mm256_sub_pd(x0r, x2r), b2i = _mm256_sub_pd(x0i, x2i);
  const __m256d b1r = _mm256_add_pd(x1r, x3r), b1i = _mm256_add_pd(x1i, x3i);
  const __m256d b3r = _mm256_sub_pd(x1i, x3i), b3i = _mm256_sub_pd(x3r, x1r);
  const __m256d y1r = _mm256_sub_pd(b0r, b1r), y1i = _mm256_sub_pd(b0i, b1i);
  const __m256d y2r = _mm256_add_pd(b2r, b3r), y2i = _mm256_add_pd(b2i, b3i);
  const __m256d y3r = _mm256_sub_pd(b2r, b3r), y3i = _mm256_sub_pd(b2i, b3i);
  _mm256_storeu_pd(re, _mm256_add_pd(b0r, b1r)), _mm256_storeu_pd(im, _mm256_add_pd(b0i, b1i));
  auto twiddle = [](__m256d xr, __m256d xi, const double* r, const double* i, double* out_r, double* out_i) {
    const __m256d w_r = _mm256_loadu_pd(r), w_i = _mm256_loadu_pd(i);
    _mm256_storeu_pd(out_r, _mm256_fmsub_pd(xr, w_r, _mm256_mul_pd(xi, w_i)));
    _mm256_storeu_pd(out_i, _mm256_fmadd_pd(xr, w_i, _mm256_mul_pd(xi, w_r)));
  };
  twiddle(y1r, y1i, wr + q, wi + q, re + q, im + q);
  twiddle(y2r, y2i, wr, wi, re + 2 * q, im + 2 * q);
  twiddle(y3r, y3i, wr + 2 * q, wi + 2 * q, re + 3 * q, im + 3 * q);
}

inline void radix4_forward_lanes(double* re, double* im, std::size_t q, const double* wr, const double* wi) {
  radix4_forward_store(_mm256_loadu_pd(re), _mm256_loadu_pd(im), _mm256_loadu_pd(re + q), _mm256_loadu_pd(im + q),
                       _mm256_loadu_pd(re + 2 * q), _mm256_loadu_pd(im + 2 * q), _mm256_loadu_pd(re + 3 * q),
                       _mm256_loadu_pd(im + 3 * q), re, im, q, wr, wi);
}

// Its inverse (conjugate twiddles), as the scalar loop in dit().
inline void radix4_backward_lanes(double* re, double* im, std::size_t q, const double* wr, const double* wi) {
  auto untwiddle = [](const double* xr_p, const double* xi_p, const double* r, const double* i, __m256d& out_r,
                      __m256d& out_i) {
    const __m256d xr = _mm256_loadu_pd(xr_p), xi = _mm256_loadu_pd(xi_p);
    const __m256d w_r = _mm256_loadu_pd(r), w_i = _mm256_loadu_pd(i);
    out_r = _mm256_fmadd_pd(xr, w_r, _mm256_mul_pd(xi, w_i));
    out_i = _mm256_fmsub_pd(xi, w_r, _mm256_mul_pd(xr, w_i));
  };
  __m256d y1r, y1i, y2r, y2i, y3r, y3i;
  untwiddle(re + q, im + q, wr + q, wi + q, y1r, y1i);
  untwiddle(re + 2 * q, im + 2 * q, wr, wi, y2r, y2i);
  untwiddle(re + 3 * q, im + 3 * q, wr + 2 * q, wi + 2 * q, y3r, y3i);
  const __m256d y0r = _mm256_loadu_pd(re), y0i = _mm256_loadu_pd(im);
  const __m256d c0r = _mm256_add_pd(y0r, y1r), c0i = _mm256_add_pd(y0i, y1i);
  const __m256d c1r = _mm256_sub_pd(y0r, y1r), c1i = _mm256_sub_pd(y0i, y1i);
  const __m256d c2r = _mm256_add_pd(y2r, y3r), c2i = _mm256_add_pd(y2i, y3i);
  const __m256d c3r = _mm256_sub_pd(y2r, y3r), c3i = _mm256_sub_pd(y2i, y3i);
  _mm256_storeu_pd(re, _mm256_add_pd(c0r, c2r)), _mm256_storeu_pd(im, _mm256_add_pd(c0i, c2i));
  _mm256_storeu_pd(re + 2 * q, _mm256_sub_pd(c0r, c2r)), _mm256_storeu_pd(im + 2 * q, _mm256_sub_pd(c0i, c2i));
  _mm256_storeu_pd(re + q, _mm256_sub_pd(c1r, c3i)), _mm256_storeu_pd(im + q, _mm256_add_pd(c1i, c3r));
  _mm256_storeu_pd(re + 3 * q, _mm256_add_pd(c1r, c3i)), _mm256_storeu_pd(im + 3 * q, _mm256_sub_pd(c1i, c3r));
}
#endif

}  // namespace

NegacyclicFft::NegacyclicFft(std::size_t N, Isa isa) : n_(N), m_(N / 2) {
  require(N >= 4 && std::has_single_bit(N), "tfhe.NegacyclicFft", "N must be a power of two >= 4");
  twist_re_.resize(m_), twist_im_.resize(m_), untwist_re_.resize(m_), untwist_im_.resize(m_);
  for (std::size_t j = 0; j < m_; ++j) {
    const double angle = kPi * static_cast<double>(j) / static_cast<double>(N);
    twist_re_[j] = std::cos(angle), twist_im_[j] = std::sin(angle);
    untwist_re_[j] = std::cos(angle) / static_cast<double>(m_);
    untwist_im_[j] = -std::sin(angle) / static_cast<double>(m_);
  }
  // e^{-2 pi i j k / len} for j < count, appended; returns where they start.
  auto twiddles = [&](std::size_t len, std::size_t count, std::size_t k) {
    const std::size_t at = tw_re_.size();
    for (std::size_t j = 0; j < count; ++j) {
      const double angle = -2 * kPi * static_cast<double>(j * k) / static_cast<double>(len);
      tw_re_.push_back(std::cos(angle)), tw_im_.push_back(std::sin(angle));
    }
    return at;
  };
  auto radix2 = [&](std::size_t len) { steps_.push_back({2, len, twiddles(len, len / 2, 1)}); };
  if (m_ < 32) {
    for (std::size_t len = m_; len >= 2; len /= 2) radix2(len);
    find_evaluation_points();
    return;
  }
  // Stages len = m .. 32 two at a time (radix 2^2: three twiddle products per
  // four values instead of four, and half the passes), radix-2 stages first
  // where their count is odd; then the pass over groups of 16 (len 16 .. 2).
  // Radix 2 also while a radix-4 pass's four streams would lie 4 KiB or
  // more apart: they would share the level-1 cache's sets (measured at
  // N = 4096: twice slower). The twist runs in the first pass, either radix.
  std::size_t len = m_;
  while ((std::countr_zero(len) - 4) % 2 == 1 || len / 4 * sizeof(double) >= 4096) radix2(len), len /= 2;
  for (; len >= 32; len /= 4) {
    const std::size_t q = len / 4, at = twiddles(len, q, 1);
    twiddles(len, q, 2), twiddles(len, q, 3);
    steps_.push_back({4, len, at});
  }
  const std::size_t group_twiddles = twiddles(16, 8, 1);
  twiddles(8, 4, 1);
  steps_.push_back({16, 16, group_twiddles});
  fused_first_ = steps_[0].radix != 16;
  find_evaluation_points();
  wide_ = isa == Isa::avx512 && best_isa() == Isa::avx512 && wide_passes();
  // The fetch slots of the transforms as built, counted on zeros (forward and
  // backward pass over the same passes; the fewer, should they differ).
  LinesAhead count;
  std::vector<std::uint64_t> zeros(n_);
  std::vector<double> re(m_), im(m_);
  forward_top_digits(zeros.data(), 1, re.data(), im.data(), &count);
  const std::size_t forward_slots = count.calls();
  backward_add(re.data(), im.data(), zeros.data(), &count);
  prefetch_slots_ = std::min(forward_slots, count.calls() - forward_slots);
}

void NegacyclicFft::find_evaluation_points() {
  // Output k of the transform is a(x_k) for x_k = zeta^{e_k}: read e_k off the
  // transform of the polynomial X (whose values are the x_k themselves).
  std::vector<std::int64_t> x(n_, 0);
  x[1] = 1;
  std::vector<double> re(m_), im(m_);
  forward(x.data(), re.data(), im.data());
  const std::size_t two_n = 2 * n_;
  exponents_.resize(m_);
  for (std::size_t k = 0; k < m_; ++k) {
    const double turns = std::atan2(im[k], re[k]) / kPi * static_cast<double>(n_);  // in (-N, N]
    exponents_[k] = static_cast<std::uint32_t>((static_cast<std::int64_t>(std::lround(turns)) + two_n) % two_n);
  }
  // Whether every block of four outputs lies at the same offsets from its
  // first point (true for the pass orders built here; checked, not assumed).
  lane_offsets_.fill(0);
  shifted_blocks_ = m_ % 4 == 0;
  for (std::size_t k = 0; shifted_blocks_ && k < m_; k += 4)
    for (std::size_t i = 1; i < 4; ++i) {
      const std::uint32_t d = static_cast<std::uint32_t>((exponents_[k + i] + two_n - exponents_[k]) % two_n);
      if (k == 0) lane_offsets_[i] = d;
      else if (d != lane_offsets_[i]) shifted_blocks_ = false;
    }
  roots_re_.resize(two_n), roots_im_.resize(two_n);
  for (std::size_t t = 0; t < two_n; ++t) {
    const double angle = kPi * static_cast<double>(t) / static_cast<double>(n_);
    roots_re_[t] = std::cos(angle), roots_im_[t] = std::sin(angle);
  }
}

void NegacyclicFft::dif(double* __restrict re, double* __restrict im, std::size_t from, LinesAhead* ahead) const {
  for (std::size_t k = from; k < steps_.size(); ++k) {
    const Step& step = steps_[k];
    const std::size_t len = step.len;
    const double* __restrict wr = tw_re_.data() + step.twiddles;
    const double* __restrict wi = tw_im_.data() + step.twiddles;
    if (step.radix == 16) {
      for (std::size_t s = 0; s < m_; s += 16) {
        if (ahead) ahead->fetch();
        radix4_forward_group(re + s, im + s, wr, wi);
      }
    } else if (step.radix == 2) {
      const std::size_t half = len / 2;
      for (std::size_t s = 0; s < m_; s += len) {
        double* __restrict ur = re + s;
        double* __restrict ui = im + s;
        double* __restrict vr = re + s + half;
        double* __restrict vi = im + s + half;
        for (std::size_t j = 0; j < half; ++j) {
          const double dr = ur[j] - vr[j], di = ui[j] - vi[j];
          ur[j] += vr[j], ui[j] += vi[j];
          vr[j] = dr * wr[j] - di * wi[j];
          vi[j] = dr * wi[j] + di * wr[j];
        }
      }
    } else {
      const std::size_t q = len / 4;
      for (std::size_t s = 0; s < m_; s += len) {
        double* __restrict r0 = re + s;
        double* __restrict i0 = im + s;
        double* __restrict r1 = r0 + q;
        double* __restrict i1 = i0 + q;
        double* __restrict r2 = r0 + 2 * q;
        double* __restrict i2 = i0 + 2 * q;
        double* __restrict r3 = r0 + 3 * q;
        double* __restrict i3 = i0 + 3 * q;
        std::size_t j = 0;
#if defined(__AVX2__)
        // (GCC leaves the scalar loop below unvectorized: twelve streams.)
        for (; j + 4 <= q; j += 4) {
          if (ahead) ahead->fetch();
          radix4_forward_lanes(r0 + j, i0 + j, q, wr + j, wi + j);
        }
#endif
        for (; j < q; ++j) {
          const double b0r = r0[j] + r2[j], b0i = i0[j] + i2[j], b2r = r0[j] - r2[j], b2i = i0[j] - i2[j];
          const double b1r = r1[j] + r3[j], b1i = i1[j] + i3[j];
          const double b3r = i1[j] - i3[j], b3i = r3[j] - r1[j];  // (x1 - x3)(-i)
          const double y1r = b0r - b1r, y1i = b0i - b1i;
          const double y2r = b2r + b3r, y2i = b2i + b3i, y3r = b2r - b3r, y3i = b2i - b3i;
          r0[j] = b0r + b1r, i0[j] = b0i + b1i;
          // y1 W^2j, y2 W^j, y3 W^3j
          r1[j] = y1r * wr[q + j] - y1i * wi[q + j], i1[j] = y1r * wi[q + j] + y1i * wr[q + j];
          r2[j] = y2r * wr[j] - y2i * wi[j], i2[j] = y2r * wi[j] + y2i * wr[j];
          r3[j] = y3r * wr[2 * q + j] - y3i * wi[2 * q + j], i3[j] = y3r * wi[2 * q + j] + y3i * wr[2 * q + j];
        }
      }
    }
  }
}

void NegacyclicFft::dit(double* __restrict re, double* __restrict im, std::size_t down_to, LinesAhead* ahead) const {
  for (std::size_t k = steps_.size(); k-- > down_to;) {
    const Step& step = steps_[k];
    const std::size_t len = step.len;
    const double* __restrict wr = tw_re_.data() + step.twiddles;
    const double* __restrict wi = tw_im_.data() + step.twiddles;
    if (step.radix == 16) {
      for (std::size_t s = 0; s < m_; s += 16) {
        if (ahead) ahead->fetch();
        radix4_backward_group(re + s, im + s, wr, wi);
      }
    } else if (step.radix == 2) {
      const std::size_t half = len / 2;
      for (std::size_t s = 0; s < m_; s += len) {
        double* __restrict ur = re + s;
        double* __restrict ui = im + s;
        double* __restrict vr = re + s + half;
        double* __restrict vi = im + s + half;
        for (std::size_t j = 0; j < half; ++j) {
          // v * conj(w)
          const double tr = vr[j] * wr[j] + vi[j] * wi[j];
          const double ti = vi[j] * wr[j] - vr[j] * wi[j];
          vr[j] = ur[j] - tr, vi[j] = ui[j] - ti;
          ur[j] += tr, ui[j] += ti;
        }
      }
    } else {
      const std::size_t q = len / 4;
      for (std::size_t s = 0; s < m_; s += len) {
        double* __restrict r0 = re + s;
        double* __restrict i0 = im + s;
        double* __restrict r1 = r0 + q;
        double* __restrict i1 = i0 + q;
        double* __restrict r2 = r0 + 2 * q;
        double* __restrict i2 = i0 + 2 * q;
        double* __restrict r3 = r0 + 3 * q;
        double* __restrict i3 = i0 + 3 * q;
        std::size_t j = 0;
#if defined(__AVX2__)
        for (; j + 4 <= q; j += 4) {
          if (ahead) ahead->fetch();
          radix4_backward_lanes(r0 + j, i0 + j, q, wr + j, wi + j);
        }
#endif
        for (; j < q; ++j) {
          // y1 conj(W^2j), y2 conj(W^j), y3 conj(W^3j)
          const double y1r = r1[j] * wr[q + j] + i1[j] * wi[q + j], y1i = i1[j] * wr[q + j] - r1[j] * wi[q + j];
          const double y2r = r2[j] * wr[j] + i2[j] * wi[j], y2i = i2[j] * wr[j] - r2[j] * wi[j];
          const double y3r = r3[j] * wr[2 * q + j] + i3[j] * wi[2 * q + j];
          const double y3i = i3[j] * wr[2 * q + j] - r3[j] * wi[2 * q + j];
          const double c0r = r0[j] + y1r, c0i = i0[j] + y1i, c1r = r0[j] - y1r, c1i = i0[j] - y1i;
          const double c2r = y2r + y3r, c2i = y2i + y3i, c3r = y2r - y3r, c3i = y2i - y3i;
          r0[j] = c0r + c2r, i0[j] = c0i + c2i, r2[j] = c0r - c2r, i2[j] = c0i - c2i;
          // x1 = c1 + i c3, x3 = c1 - i c3
          r1[j] = c1r - c3i, i1[j] = c1i + c3r, r3[j] = c1r + c3i, i3[j] = c1i - c3r;
        }
      }
    }
  }
}

namespace {

// The inputs of a forward transform, read as doubles one or four at a time.
struct Int64Words {
  const std::int64_t* in;
  double at(std::size_t j) const { return static_cast<double>(in[j]); }
#if defined(__AVX2__)
  // (No vector conversion from int64 without AVX-512; keys only, not the hot path.)
  __m256d at4(std::size_t j) const { return _mm256_setr_pd(at(j), at(j + 1), at(j + 2), at(j + 3)); }
#endif
};

struct Int32Digits {
  const std::int32_t* in;
  double at(std::size_t j) const { return static_cast<double>(in[j]); }
#if defined(__AVX2__)
  __m256d at4(std::size_t j) const {
    return _mm256_cvtepi32_pd(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + j)));
  }
#endif
};

// One gadget level's digit of a word w (forward_top_digits): floor(w / 2^s +
// 1/2) with s = 64 - B, its low B bits read as a signed integer. That is the
// top B bits of w + 2^(s - 1) (mod 2^64: a carry out of the top is the
// multiple of 2^B the digit drops) read as a signed integer, an arithmetic
// shift of the word's high half (B <= 30).
inline double top_digit(std::uint64_t w, unsigned base_log) {
  const std::uint64_t rounded = w + (std::uint64_t{1} << (63 - base_log));
  return static_cast<double>(static_cast<std::int32_t>(rounded >> 32) >> (32 - base_log));
}

#if defined(__AVX2__)
// top_digit on four lanes: the add, the high halves gathered in the low
// 128 bits, their arithmetic shift.
inline __m256d top_digits(__m256i w, unsigned base_log) {
  const __m256i rounded = _mm256_add_epi64(w, _mm256_set1_epi64x(static_cast<long long>(std::uint64_t{1} << (63 - base_log))));
  const __m256i high = _mm256_permutevar8x32_epi32(rounded, _mm256_setr_epi32(1, 3, 5, 7, 1, 3, 5, 7));
  const __m128i down = _mm_cvtsi32_si128(static_cast<int>(32 - base_log));
  return _mm256_cvtepi32_pd(_mm_sra_epi32(_mm256_castsi256_si128(high), down));
}
#endif

struct TopDigits {
  const std::uint64_t* in;
  unsigned base_log;
  double at(std::size_t j) const { return top_digit(in[j], base_log); }
#if defined(__AVX2__)
  __m256d at4(std::size_t j) const {
    return top_digits(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + j)), base_log);
  }
#endif
};

#if defined(__AVX2__)
// (x + i y)(c + i d) on four lanes.
inline void complex_product(__m256d x, __m256d y, __m256d c, __m256d d, __m256d& out_r, __m256d& out_i) {
  out_r = _mm256_fmsub_pd(x, c, _mm256_mul_pd(y, d));
  out_i = _mm256_fmadd_pd(x, d, _mm256_mul_pd(y, c));
}
#endif

}  // namespace

template <class Source>
void NegacyclicFft::twist_and_transform(const Source& source, double* __restrict re, double* __restrict im,
                                        LinesAhead* ahead) const {
  const double* __restrict tr = twist_re_.data();
  const double* __restrict ti = twist_im_.data();
#if defined(__AVX2__)
  if (fused_first_ && steps_[0].radix == 4) {
    // The twist and the first two stages (radix 2^2 over the whole length) in one pass.
    const std::size_t q = m_ / 4;
    const double* __restrict wr = tw_re_.data() + steps_[0].twiddles;
    const double* __restrict wi = tw_im_.data() + steps_[0].twiddles;
    for (std::size_t j = 0; j < q; j += 4) {
      if (ahead) ahead->fetch();
      __m256d xr[4], xi[4];
      for (std::size_t k = 0; k < 4; ++k) {
        const std::size_t at = j + k * q;
        complex_product(source.at4(at), source.at4(at + m_), _mm256_loadu_pd(tr + at), _mm256_loadu_pd(ti + at), xr[k],
                        xi[k]);
      }
      radix4_forward_store(xr[0], xi[0], xr[1], xi[1], xr[2], xi[2], xr[3], xi[3], re + j, im + j, q, wr + j, wi + j);
    }
    dif(re, im, 1, ahead);
    return;
  }
#endif
  if (!fused_first_ || steps_[0].radix != 2) {  // (without AVX2, a first radix-2^2 pass runs on its own)
    std::size_t j = 0;
#if defined(__AVX2__)
    for (; j + 4 <= m_; j += 4) {
      __m256d r, i;
      complex_product(source.at4(j), source.at4(j + m_), _mm256_loadu_pd(tr + j), _mm256_loadu_pd(ti + j), r, i);
      _mm256_storeu_pd(re + j, r), _mm256_storeu_pd(im + j, i);
    }
#endif
    for (; j < m_; ++j) {
      const double a = source.at(j), b = source.at(j + m_);
      re[j] = a * tr[j] - b * ti[j];
      im[j] = a * ti[j] + b * tr[j];
    }
    dif(re, im, 0, ahead);
    return;
  }
  // The twist and the first stage (radix 2 over the whole length) in one pass.
  const std::size_t h = m_ / 2;
  const double* __restrict wr = tw_re_.data() + steps_[0].twiddles;
  const double* __restrict wi = tw_im_.data() + steps_[0].twiddles;
  std::size_t j = 0;
#if defined(__AVX2__)
  // (GCC leaves the scalar loop below unvectorized: it ran at a third of the
  // speed of the passes after it.)
  for (; j + 4 <= h; j += 4) {
    __m256d ur, ui, vr, vi;
    complex_product(source.at4(j), source.at4(j + m_), _mm256_loadu_pd(tr + j), _mm256_loadu_pd(ti + j), ur, ui);
    complex_product(source.at4(j + h), source.at4(j + h + m_), _mm256_loadu_pd(tr + j + h), _mm256_loadu_pd(ti + j + h),
                    vr, vi);
    _mm256_storeu_pd(re + j, _mm256_add_pd(ur, vr)), _mm256_storeu_pd(im + j, _mm256_add_pd(ui, vi));
    __m256d dr, di;
    complex_product(_mm256_sub_pd(ur, vr), _mm256_sub_pd(ui, vi), _mm256_loadu_pd(wr + j), _mm256_loadu_pd(wi + j), dr,
                    di);
    _mm256_storeu_pd(re + j + h, dr), _mm256_storeu_pd(im + j + h, di);
  }
#endif
  for (; j < h; ++j) {
    const double a0 = source.at(j), b0 = source.at(j + m_);
    const double a1 = source.at(j + h), b1 = source.at(j + h + m_);
    const double ur = a0 * tr[j] - b0 * ti[j], ui = a0 * ti[j] + b0 * tr[j];
    const double vr = a1 * tr[j + h] - b1 * ti[j + h], vi = a1 * ti[j + h] + b1 * tr[j + h];
    const double dr = ur - vr, di = ui - vi;
    re[j] = ur + vr, im[j] = ui + vi;
    re[j + h] = dr * wr[j] - di * wi[j];
    im[j + h] = dr * wi[j] + di * wr[j];
  }
  dif(re, im, 1, ahead);
}

void NegacyclicFft::forward(const std::int64_t* in, double* re, double* im) const {
  twist_and_transform(Int64Words{in}, re, im);
}

void NegacyclicFft::forward(const std::int32_t* in, double* re, double* im, LinesAhead* ahead) const {
  if (wide_) return forward_wide(in, re, im, ahead);
  twist_and_transform(Int32Digits{in}, re, im, ahead);
}

void NegacyclicFft::forward_top_digits(const std::uint64_t* in, unsigned base_log, double* re, double* im,
                                       LinesAhead* ahead) const {
  require(base_log >= 1 && base_log <= 30, "tfhe.NegacyclicFft", "base_log must be in [1, 30]");
  if (wide_) return forward_top_digits_wide(in, base_log, re, im, ahead);
  twist_and_transform(TopDigits{in, base_log}, re, im, ahead);
}

namespace {

// out[j] += wrap(Re(y u)), out[j + M] += wrap(Im(y u)) for the values y =
// (yr, yi) at position j and the untwist factors u there.
#if defined(__AVX2__)
inline void untwist_add4(__m256d yr, __m256d yi, const double* ur_p, const double* ui_p, std::uint64_t* lo_p,
                         std::uint64_t* hi_p) {
  const __m256d ur = _mm256_loadu_pd(ur_p), ui = _mm256_loadu_pd(ui_p);
  const __m256d a = _mm256_fmsub_pd(yr, ur, _mm256_mul_pd(yi, ui));
  const __m256d b = _mm256_fmadd_pd(yr, ui, _mm256_mul_pd(yi, ur));
  auto* lo = reinterpret_cast<__m256i*>(lo_p);
  auto* hi = reinterpret_cast<__m256i*>(hi_p);
  _mm256_storeu_si256(lo, _mm256_add_epi64(_mm256_loadu_si256(lo), wrap_to_u64(a)));
  _mm256_storeu_si256(hi, _mm256_add_epi64(_mm256_loadu_si256(hi), wrap_to_u64(b)));
}
#endif

inline void untwist_add1(double yr, double yi, double ur, double ui, std::uint64_t* lo, std::uint64_t* hi) {
  *lo += wrap_to_u64(yr * ur - yi * ui);
  *hi += wrap_to_u64(yr * ui + yi * ur);
}

}  // namespace

void NegacyclicFft::backward_add(double* __restrict re, double* __restrict im, std::uint64_t* __restrict out,
                                 LinesAhead* ahead) const {
  // (Fusing the last stage with the untwist, as the forward transform fuses
  // its first, measured slower here: four output streams instead of two for a
  // radix-2 stage; eight for a radix-2^2 one, 3-6 % slower at N = 2048.)
  if (wide_) return backward_add_wide(re, im, out, ahead);
  dit(re, im, 0, ahead);
  const double* __restrict ur = untwist_re_.data();
  const double* __restrict ui = untwist_im_.data();
  std::size_t j = 0;
#if defined(__AVX2__)
  for (; j + 4 <= m_; j += 4)
    untwist_add4(_mm256_loadu_pd(re + j), _mm256_loadu_pd(im + j), ur + j, ui + j, out + j, out + j + m_);
#endif
  for (; j < m_; ++j) untwist_add1(re[j], im[j], ur[j], ui[j], out + j, out + j + m_);
}

void multiply_accumulate(const double* __restrict a_re, const double* __restrict a_im, const double* __restrict b_re,
                         const double* __restrict b_im, double* __restrict acc_re, double* __restrict acc_im,
                         std::size_t count) {
  for (std::size_t j = 0; j < count; ++j) {
    acc_re[j] += a_re[j] * b_re[j] - a_im[j] * b_im[j];
    acc_im[j] += a_re[j] * b_im[j] + a_im[j] * b_re[j];
  }
}

}  // namespace ringfire::tfhe
