// The stages of the encoder's special FFT (encoder.cpp), two complex numbers
// at a time where AVX2 and FMA are compiled in (the default x86-64 target),
// one at a time elsewhere. Both compute every product the same way, so every
// target gives the same bits:
//   x * w = (fma(x.re, w.re, -(x.im w.im)), fma(x.im, w.re, x.re w.im)).
#pragma once

#include <complex>
#include <cstddef>

namespace ringfire::ckks::special_fft {

using Complex = std::complex<double>;

// Blocks of `len` over v[0, n): v[i+j], v[i+j+len/2] <- u + t, u - t with
// t = v[i+j+len/2] * twiddles[j] (decimation in time).
void forward_stage(Complex* v, std::size_t n, std::size_t len, const Complex* twiddles);

// The same blocks: a, b <- a + b, (a - b) * twiddles[j] (decimation in frequency).
void inverse_stage(Complex* v, std::size_t n, std::size_t len, const Complex* twiddles);

}  // namespace ringfire::ckks::special_fft
