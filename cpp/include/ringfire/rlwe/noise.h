// Noise estimates. Every ciphertext carries noise_bits(): log2 of an estimate
// of ||e||_2, the Euclidean norm of the coefficients of its error e, where
// sum_i c_i s^i = m + e (coefficient form, centred, in units of the
// ciphertext modulus: the scale is not divided out).
//
// The estimates are average-case (central-limit) values for independent
// uniform ternary s and u, Gaussian errors of width sigma and uniform
// rounding errors, in the manner of the CKKS noise heuristics of Kim, Papadimas
// and Song (and the "average-case" analysis of Costache, Curtis, Hales,
// Murphy, Ogilvie and Player, 2022): a ring product of independent
// polynomials multiplies their norms, ||a*b|| ~ ||a|| ||b||, and sums add
// norms (the triangle inequality, which also covers correlated errors). They
// serve decryption (which adds noise scaled to the estimate, see
// ckks/decryptor.h) and planning; they are not proofs.
//
// The functions return log2 of a norm; -infinity stands for no noise.
#pragma once

#include <cstddef>

#include "ringfire/rlwe/context.h"

namespace ringfire::noise {

// log2(2^a + 2^b): the norm bound of a sum.
double add(double a, double b);
// log2(2^a * factor) for factor >= 0.
double scale(double a, double factor);

// A fresh public-key encryption: e = u e_pk + e0 + e1 s, per coefficient
// variance sigma^2 (1 + 4N/3) with Var(u) = Var(s) = 2/3.
double fresh_public(const RlweContext& context);
// A fresh public-key encryption over Q P divided by P: the above over P,
// plus the division's rounding.
double fresh_public_special(const RlweContext& context);
// A fresh secret-key encryption: e = e0, variance sigma^2.
double fresh_secret(const RlweContext& context);
// What one key switch at `level` adds: the digits' error sum_j D_j e_j
// (digit D_j uniform below Q_j, so variance N Q_j^2 sigma^2 / 12 per
// coefficient and digit) divided by P, plus the ModDown rounding.
double key_switch(const RlweContext& context, std::size_t level);
// Dividing by an integer with rounding (rescale, ModDown): r0 + r1 s with
// r_i uniform in [-1/2, 1/2], variance (1 + 2N/3) / 12 per coefficient; a
// ciphertext of size 3 adds r2 s^2, whose coefficients have variance 4N/9:
// N^2 / 27 more.
double rounding(const RlweContext& context, std::size_t size = 2);
// Rounding N real coefficients to integers (encoding): variance 1/12.
double encoding(const RlweContext& context);

}  // namespace ringfire::noise
