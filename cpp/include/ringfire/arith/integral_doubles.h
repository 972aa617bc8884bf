// Integer-valued doubles (rounded CKKS coefficients) reduced modulo a word-size q:
// the residue in [0, q) of each, exactly, at any magnitude.
#pragma once

#include <cstddef>

#include "ringfire/arith/modulus.h"

namespace ringfire {

// One value: x must be finite and integral.
u64 reduce_integral_double(double x, const Modulus& mod);

// `count` values into out[0, count). `largest` bounds their magnitudes (the caller knows it
// from rounding them). Below 2^52, with q below 2^52, the residues are computed in doubles,
// four at a time on AVX2; otherwise one at a time as above. Both give the same words.
void reduce_integral_doubles(const double* x, std::size_t count, double largest, const Modulus& mod, u64* out);

}  // namespace ringfire
