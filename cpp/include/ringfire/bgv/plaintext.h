// Plaintext polynomials mod t as RNS plaintexts, in the form ciphertexts
// use (bgv/context.h): a polynomial m with correction sigma at level l is
// stored as [m sigma]_t * t^-1 mod q_i, i <= l, in evaluation form. It is
// exact (no rounding, no noise): a plaintext is a noiseless ciphertext
// component, so one representation serves sums and products alike.
#pragma once

#include <cstddef>
#include <vector>

#include "ringfire/bgv/context.h"
#include "ringfire/rlwe/ciphertext.h"

namespace ringfire::bgv {

// N coefficients in [0, t) -> the plaintext at `level` with `correction`
// (invertible mod t). Raises InvalidArgument naming the first bad value.
Plaintext encode_plaintext(const Context& ctx, const std::vector<u64>& coefficients, std::size_t level,
                           u64 correction = 1);
// The coefficients mod t of a plaintext (its correction divided out).
std::vector<u64> decode_plaintext(const Context& ctx, const Plaintext& plain);

// The residues of the constant polynomial c (c in every slot) with
// `correction` at `level`: [c sigma]_t * t^-1 mod q_i.
std::vector<u64> constant_residues(const Context& ctx, u64 value_mod_t, std::size_t level, u64 correction);

// v mod t from any signed 64-bit integer.
u64 reduce_signed(std::int64_t value, const Modulus& t);
// The residue of the centred representative of v (v in [0, t)) modulo q.
u64 lift_centred(u64 v, u64 t, u64 q);

}  // namespace ringfire::bgv
