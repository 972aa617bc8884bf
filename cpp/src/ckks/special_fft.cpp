#include "special_fft.h"

#include <cmath>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define RF_SPECIAL_FFT_AVX2 1
#endif

namespace ringfire::ckks::special_fft {

namespace {

inline Complex times(Complex x, Complex w) {
  return {std::fma(x.real(), w.real(), -(x.imag() * w.imag())), std::fma(x.imag(), w.real(), x.real() * w.imag())};
}

#ifdef RF_SPECIAL_FFT_AVX2
using V = __m256d;  // two complex numbers: re0, im0, re1, im1

inline V load(const Complex* p) { return _mm256_loadu_pd(reinterpret_cast<const double*>(p)); }
inline void store(Complex* p, V x) { _mm256_storeu_pd(reinterpret_cast<double*>(p), x); }

// times() on both lanes: even doubles x.re w.re - x.im w.im, odd x.im w.re + x.re w.im.
inline V times(V x, V w) {
  const V w_re = _mm256_movedup_pd(w), w_im = _mm256_permute_pd(w, 0xF);
  const V cross = _mm256_mul_pd(_mm256_permute_pd(x, 0x5), w_im);  // x.im w.im, x.re w.im
  return _mm256_fmaddsub_pd(x, w_re, cross);
}
#endif

}  // namespace

void forward_stage(Complex* v, std::size_t n, std::size_t len, const Complex* twiddles) {
  const std::size_t half = len / 2;
#ifdef RF_SPECIAL_FFT_AVX2
  if (half >= 2) {
    for (std::size_t i = 0; i < n; i += len)
      for (std::size_t j = 0; j < half; j += 2) {
        const V u = load(v + i + j), t = times(load(v + i + j + half), load(twiddles + j));
        store(v + i + j, _mm256_add_pd(u, t));
        store(v + i + j + half, _mm256_sub_pd(u, t));
      }
    return;
  }
  if (half == 1 && n % 4 == 0) {  // pairs v[i], v[i+1] with one twiddle: two blocks per step
    const V w = _mm256_broadcast_pd(reinterpret_cast<const __m128d*>(twiddles));
    for (std::size_t i = 0; i < n; i += 4) {
      const V p = load(v + i), q = load(v + i + 2);  // v0 v1 | v2 v3
      const V u = _mm256_permute2f128_pd(p, q, 0x20), b = _mm256_permute2f128_pd(p, q, 0x31);  // v0 v2 | v1 v3
      const V t = times(b, w), s = _mm256_add_pd(u, t), d = _mm256_sub_pd(u, t);
      store(v + i, _mm256_permute2f128_pd(s, d, 0x20));
      store(v + i + 2, _mm256_permute2f128_pd(s, d, 0x31));
    }
    return;
  }
#endif
  for (std::size_t i = 0; i < n; i += len)
    for (std::size_t j = 0; j < half; ++j) {
      const Complex u = v[i + j], t = times(v[i + j + half], twiddles[j]);
      v[i + j] = u + t;
      v[i + j + half] = u - t;
    }
}

void inverse_stage(Complex* v, std::size_t n, std::size_t len, const Complex* twiddles) {
  const std::size_t half = len / 2;
#ifdef RF_SPECIAL_FFT_AVX2
  if (half >= 2) {
    for (std::size_t i = 0; i < n; i += len)
      for (std::size_t j = 0; j < half; j += 2) {
        const V a = load(v + i + j), b = load(v + i + j + half);
        store(v + i + j, _mm256_add_pd(a, b));
        store(v + i + j + half, times(_mm256_sub_pd(a, b), load(twiddles + j)));
      }
    return;
  }
  if (half == 1 && n % 4 == 0) {
    const V w = _mm256_broadcast_pd(reinterpret_cast<const __m128d*>(twiddles));
    for (std::size_t i = 0; i < n; i += 4) {
      const V p = load(v + i), q = load(v + i + 2);
      const V a = _mm256_permute2f128_pd(p, q, 0x20), b = _mm256_permute2f128_pd(p, q, 0x31);
      const V s = _mm256_add_pd(a, b), d = times(_mm256_sub_pd(a, b), w);
      store(v + i, _mm256_permute2f128_pd(s, d, 0x20));
      store(v + i + 2, _mm256_permute2f128_pd(s, d, 0x31));
    }
    return;
  }
#endif
  for (std::size_t i = 0; i < n; i += len)
    for (std::size_t j = 0; j < half; ++j) {
      const Complex a = v[i + j], b = v[i + j + half];
      v[i + j] = a + b;
      v[i + j + half] = times(a - b, twiddles[j]);
    }
}

}  // namespace ringfire::ckks::special_fft
