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
using V = __m256d;  // two complex numbers: re0, im0, re1, im1 (+ and - add and subtract lane by lane)

inline V load(const Complex* p) { return _mm256_loadu_pd(reinterpret_cast<const double*>(p)); }
inline void store(Complex* p, V x) { _mm256_storeu_pd(reinterpret_cast<double*>(p), x); }

// times() on both lanes: even doubles x.re w.re - x.im w.im, odd x.im w.re + x.re w.im.
inline V times(V x, V w) {
  const V w_re = _mm256_movedup_pd(w), w_im = _mm256_permute_pd(w, 0xF);
  const V cross = _mm256_mul_pd(_mm256_permute_pd(x, 0x5), w_im);  // x.im w.im, x.re w.im
  return _mm256_fmaddsub_pd(x, w_re, cross);
}
#endif

// The two butterflies, for one complex number or two at a time (the same operations).
struct Forward {  // decimation in time: u, b <- u + b w, u - b w
  template <class T>
  void operator()(T& u, T& b, T w) const {
    const T t = times(b, w);
    b = u - t;
    u = u + t;
  }
};
struct Inverse {  // decimation in frequency: a, b <- a + b, (a - b) w
  template <class T>
  void operator()(T& a, T& b, T w) const {
    const T d = a - b;
    a = a + b;
    b = times(d, w);
  }
};

template <class Butterfly>
void stage(Complex* v, std::size_t n, std::size_t len, const Complex* twiddles, Butterfly butterfly) {
  const std::size_t half = len / 2;
#ifdef RF_SPECIAL_FFT_AVX2
  if (half >= 2) {
    for (std::size_t i = 0; i < n; i += len)
      for (std::size_t j = 0; j < half; j += 2) {
        V a = load(v + i + j), b = load(v + i + j + half);
        butterfly(a, b, load(twiddles + j));
        store(v + i + j, a);
        store(v + i + j + half, b);
      }
    return;
  }
  if (half == 1 && n % 4 == 0) {  // blocks v[i], v[i+1] with one twiddle: two blocks per step
    const V w = _mm256_broadcast_pd(reinterpret_cast<const __m128d*>(twiddles));
    for (std::size_t i = 0; i < n; i += 4) {
      const V p = load(v + i), q = load(v + i + 2);                                       // v0 v1 | v2 v3
      V a = _mm256_permute2f128_pd(p, q, 0x20), b = _mm256_permute2f128_pd(p, q, 0x31);  // v0 v2 | v1 v3
      butterfly(a, b, w);
      store(v + i, _mm256_permute2f128_pd(a, b, 0x20));
      store(v + i + 2, _mm256_permute2f128_pd(a, b, 0x31));
    }
    return;
  }
#endif
  for (std::size_t i = 0; i < n; i += len)
    for (std::size_t j = 0; j < half; ++j) butterfly(v[i + j], v[i + j + half], twiddles[j]);
}

}  // namespace

void forward_stage(Complex* v, std::size_t n, std::size_t len, const Complex* twiddles) {
  stage(v, n, len, twiddles, Forward{});
}

void inverse_stage(Complex* v, std::size_t n, std::size_t len, const Complex* twiddles) {
  stage(v, n, len, twiddles, Inverse{});
}

}  // namespace ringfire::ckks::special_fft
