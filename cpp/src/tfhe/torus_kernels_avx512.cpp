// The torus engine's AVX-512 kernels (torus_kernels.h), compiled function by
// function for AVX-512 (the rest of the library targets the baseline CPU):
// the blind rotation's key products on eight lanes, called only for keys laid
// out in blocks of eight points, which TorusBootstrapKey makes only when its
// transform runs on AVX-512 (NegacyclicFft::wide), each value taking the
// four-lane forms' products and fused multiply-adds in the same order (the
// same bits); and the key switch's rows on sixteen 32-bit lanes, and on
// eight for AVX2 CPUs (exact integer arithmetic mod 2^32 on the table's
// 24-bit words: any form gives the same words).
#include "torus_kernels.h"

#include "ringfire/base/errors.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#define RF_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))
#define RF_AVX2 __attribute__((target("avx2")))

namespace ringfire::tfhe::torus_kernels {

namespace {

using D = __m512d;
constexpr std::size_t kLanes = 8;

RF_AVX512 inline D ld(const double* p) { return _mm512_loadu_pd(p); }
RF_AVX512 inline void st(double* p, D v) { _mm512_storeu_pd(p, v); }

struct Pair {
  D ar, ai, br, bi;
};

// (x, y) += (u + i v) * (p, q), as multiply_add in torus_bootstrapper.cpp.
RF_AVX512 inline void multiply_add(D u, D v, D pr, D pi, D& xr, D& xi) {
  xr = _mm512_fnmadd_pd(v, pi, _mm512_fmadd_pd(u, pr, xr));
  xi = _mm512_fmadd_pd(v, pr, _mm512_fmadd_pd(u, pi, xi));
}

// sum_r spectra[r] * rows[r][A, B] at eight points (row_products there).
template <std::size_t kRows>
RF_AVX512 inline Pair row_products(const double* spectra, const double* rows_at, std::size_t any_rows, std::size_t S) {
  const std::size_t rows = kRows != 0 ? kRows : any_rows;
  Pair t{_mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd()};
  for (std::size_t r = 0; r < rows; ++r) {
    const D sr = ld(spectra + r * 2 * S), si = ld(spectra + r * 2 * S + S);
    const double* k = rows_at + r * 4 * kLanes;
    multiply_add(sr, si, ld(k), ld(k + kLanes), t.ar, t.ai);
    multiply_add(sr, si, ld(k + 2 * kLanes), ld(k + 3 * kLanes), t.br, t.bi);
  }
  return t;
}

RF_AVX512 inline void store_pair(double* sums, std::size_t S, const Pair& t) {
  st(sums, t.ar), st(sums + S, t.ai), st(sums + 2 * S, t.br), st(sums + 3 * S, t.bi);
}

template <std::size_t kRows>
RF_AVX512 void multi_bit(const double* __restrict key, std::size_t patterns, std::size_t any_rows, std::size_t M,
                         std::size_t S, const Operand* ops, std::size_t count) {
  const std::size_t rows = kRows != 0 ? kRows : any_rows;
  const std::size_t block_doubles = patterns * rows * 4 * kLanes;
  for (std::size_t j = 0; j < M; j += kLanes) {
    const double* block = key + j * patterns * rows * 4;
    // The blocks ahead, as the four-lane form fetches them.
    if (j + 4 * kLanes < M) {
      const char* ahead = reinterpret_cast<const char*>(block + 4 * block_doubles);
      for (std::size_t b = 0; b < block_doubles * sizeof(double); b += 64) _mm_prefetch(ahead + b, _MM_HINT_T0);
    }
    for (std::size_t o = 0; o < count; ++o) {
      const Operand& op = ops[o];
      Pair sum{_mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd()};
      for (std::size_t a = 0; a < op.active; ++a) {
        const Pair t = row_products<kRows>(op.spectra + j, block + op.which[a] * rows * 4 * kLanes, rows, S);
        const D mr = ld(op.monos + a * 2 * S + j), mi = ld(op.monos + a * 2 * S + S + j);
        multiply_add(mr, mi, t.ar, t.ai, sum.ar, sum.ai);
        multiply_add(mr, mi, t.br, t.bi, sum.br, sum.bi);
      }
      store_pair(op.sums + j, S, sum);
    }
  }
}

}  // namespace

RF_AVX512 void external_product_sums_wide(const double* __restrict key, std::size_t rows, std::size_t M,
                                          std::size_t S, const Operand* ops, std::size_t count) {
  for (std::size_t j = 0; j < M; j += kLanes) {
    const double* block = key + j * rows * 4;
    for (std::size_t o = 0; o < count; ++o)
      store_pair(ops[o].sums + j, S, row_products<0>(ops[o].spectra + j, block, rows, S));
  }
}

RF_AVX512 void multi_bit_sums_wide(const double* key, std::size_t patterns, std::size_t rows, std::size_t M,
                                   std::size_t S, const Operand* ops, std::size_t count) {
  (rows == 2 ? multi_bit<2> : multi_bit<0>)(key, patterns, rows, M, S, ops, count);
}

RF_AVX512 void monomial_minus_one_wide(const double* roots_re, const double* roots_im, const std::uint32_t* exponents,
                                       std::uint32_t m, std::uint32_t mask, const double* lane_re,
                                       const double* lane_im, std::size_t M, double* re, double* im) {
  const D lr = _mm512_broadcast_f64x4(_mm256_loadu_pd(lane_re)), li = _mm512_broadcast_f64x4(_mm256_loadu_pd(lane_im));
  const D one = _mm512_set1_pd(1.0);
  for (std::size_t k = 0; k < M; k += kLanes) {
    const std::uint32_t low = (exponents[k] * m) & mask, high = (exponents[k + 4] * m) & mask;
    const D br = _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_broadcast_sd(roots_re + low)),
                                    _mm256_broadcast_sd(roots_re + high), 1);
    const D bi = _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_broadcast_sd(roots_im + low)),
                                    _mm256_broadcast_sd(roots_im + high), 1);
    st(re + k, _mm512_sub_pd(_mm512_fmsub_pd(br, lr, _mm512_mul_pd(bi, li)), one));
    st(im + k, _mm512_fmadd_pd(br, li, _mm512_mul_pd(bi, lr)));
  }
}

// Two 16-bit values in one 32-bit lane, as pmaddwd pairs them.
inline int pair16(std::uint32_t a, std::uint32_t b) { return static_cast<int>((a & 0xFFFFu) | (b << 16)); }
// Four digits as signed bytes in one 32-bit lane, as pmaddubsw pairs them with the highs.
inline int quad8(const std::uint32_t* d) {
  return static_cast<int>((d[0] & 0xFFu) | (d[1] & 0xFFu) << 8 | (d[2] & 0xFFu) << 16 | (d[3] & 0xFFu) << 24);
}

// The words t .. count - 1 of a block the vector loops left, one at a time.
inline void subtract_last_block(std::uint32_t* o, const KeySwitchBlock* blocks, const std::uint32_t* digits,
                                std::size_t t, std::size_t count) {
  if (t == count) return;
  const KeySwitchBlock& b = blocks[t / KeySwitchBlock::kLanes];
  for (std::size_t k = 0; t < count; ++t, ++k) o[t] -= b.sum(k, digits) << 8;
}

// The same on eight lanes (AVX2 CPUs): each block in two halves.
RF_AVX2 void subtract_four_rows_narrow(std::uint32_t* o, const KeySwitchBlock* blocks, const std::uint32_t* digits,
                                       std::size_t count) {
  const __m256i d01 = _mm256_set1_epi32(pair16(digits[0], digits[1]));
  const __m256i d23 = _mm256_set1_epi32(pair16(digits[2], digits[3]));
  const __m256i d0123 = _mm256_set1_epi32(quad8(digits));
  const __m256i ones = _mm256_set1_epi16(1);
  const auto load = [](const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); };
  std::size_t t = 0;
  for (const KeySwitchBlock* b = blocks; t + 16 <= count; t += 16, ++b)
    for (std::size_t h = 0; h < 16; h += 8) {
      const __m256i lows =
          _mm256_add_epi32(_mm256_madd_epi16(load(b->low01[h]), d01), _mm256_madd_epi16(load(b->low23[h]), d23));
      const __m256i highs = _mm256_madd_epi16(_mm256_maddubs_epi16(load(b->high[h]), d0123), ones);
      const __m256i sum = _mm256_add_epi32(lows, _mm256_slli_epi32(highs, 16));
      __m256i* out = reinterpret_cast<__m256i*>(o + t + h);
      _mm256_storeu_si256(out, _mm256_sub_epi32(_mm256_loadu_si256(out), _mm256_slli_epi32(sum, 8)));
    }
  subtract_last_block(o, blocks, digits, t, count);
}

RF_AVX512 void subtract_four_rows_wide(std::uint32_t* o, const KeySwitchBlock* blocks, const std::uint32_t* digits,
                                       std::size_t count) {
  const __m512i d01 = _mm512_set1_epi32(pair16(digits[0], digits[1]));
  const __m512i d23 = _mm512_set1_epi32(pair16(digits[2], digits[3]));
  // The digits as signed bytes, one per level, for the highs' quad products.
  const __m512i d0123 = _mm512_set1_epi32(quad8(digits));
  const __m512i ones = _mm512_set1_epi16(1);
  std::size_t t = 0;
  for (const KeySwitchBlock* b = blocks; t + 16 <= count; t += 16, ++b) {
    const __m512i lows = _mm512_add_epi32(_mm512_madd_epi16(_mm512_loadu_si512(b->low01), d01),
                                          _mm512_madd_epi16(_mm512_loadu_si512(b->low23), d23));
    // |high d| <= 255 * 2^7 per byte pair: the 16-bit sums cannot saturate.
    const __m512i highs = _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_loadu_si512(b->high), d0123), ones);
    const __m512i sum = _mm512_add_epi32(lows, _mm512_slli_epi32(highs, 16));
    _mm512_storeu_si512(o + t, _mm512_sub_epi32(_mm512_loadu_si512(o + t), _mm512_slli_epi32(sum, 8)));
  }
  subtract_last_block(o, blocks, digits, t, count);
}

}  // namespace ringfire::tfhe::torus_kernels

#else  // never called: keys are laid out in blocks of eight only where AVX-512 runs

namespace ringfire::tfhe::torus_kernels {

void external_product_sums_wide(const double*, std::size_t, std::size_t, std::size_t, const Operand*, std::size_t) {
  throw InvalidArgument("tfhe: no AVX-512 key products in this build");
}

void multi_bit_sums_wide(const double*, std::size_t, std::size_t, std::size_t, std::size_t, const Operand*,
                         std::size_t) {
  throw InvalidArgument("tfhe: no AVX-512 key products in this build");
}

void monomial_minus_one_wide(const double*, const double*, const std::uint32_t*, std::uint32_t, std::uint32_t,
                             const double*, const double*, std::size_t, double*, double*) {
  throw InvalidArgument("tfhe: no AVX-512 monomials in this build");
}

void subtract_four_rows_wide(std::uint32_t*, const KeySwitchBlock*, const std::uint32_t*, std::size_t) {
  throw InvalidArgument("tfhe: no AVX-512 key switch in this build");
}

void subtract_four_rows_narrow(std::uint32_t*, const KeySwitchBlock*, const std::uint32_t*, std::size_t) {
  throw InvalidArgument("tfhe: no AVX2 key switch in this build");
}

}  // namespace ringfire::tfhe::torus_kernels

#endif
