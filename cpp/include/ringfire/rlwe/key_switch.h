// Hybrid key switching (Han-Ki; the "dnum" variant of SEAL/OpenFHE):
//   1. ModUp: split c (over q_0..q_level) into digits, extend each digit's
//      residues to the other primes and P with a fast base conversion;
//   2. inner product of the extended digits with the key's (b_j, a_j), all
//      digits in one pass (every digit's ModUp is kept, dnum x (L+1+k) x N
//      words, so the sums never travel through memory);
//   3. ModDown: divide the two sums by P (base-convert their P part to Q,
//      subtract, multiply by P^-1).
// The result (out0, out1) satisfies out0 + out1 * s = c * s' + small error.
#pragma once

#include "ringfire/rlwe/keys.h"

namespace ringfire {

// c: one polynomial over q_0..q_level in evaluation form. out0/out1 receive
// polynomials over the same base in evaluation form (overwritten). c, out0,
// out1 and the work run on the key's device.
void key_switch(const RlweContext& context, const u64* c, std::size_t level, const KeySwitchKey& key, u64* out0,
                u64* out1);

// Relinearization and rescaling in one: with (ks0, ks1) the key switch of c
// before its division by P, out_i = round((d_i P + ks_i) / (P q_level)) over
// q_0..q_{level-1} (level >= 1), i.e. round((d_i + ks_i / P) / q_level) with
// one rounding instead of two. One ModDown by P * q_level replaces ModDown by
// P and the rescale's division: (k + 1) inverse NTTs and `level` forward NTTs
// per output instead of (k + 1) and 2 * level + 1. d0, d1: polynomials over
// q_0..q_level (the ciphertext's first two); out0/out1: over q_0..q_{level-1}.
void key_switch_rescale(const RlweContext& context, const u64* c, const u64* d0, const u64* d1, std::size_t level,
                        const KeySwitchKey& key, u64* out0, u64* out1);

// ModDown on its own: out = round(x / P) over q_0..q_level, where `extended`
// holds x over q_0..q_level then P (evaluation form; its P part is
// clobbered). Key switching ends with it; public-key encryption over Q P
// uses it to divide its noise by P (encryptor.h).
void divide_by_special(const RlweContext& context, std::size_t level, u64* extended, u64* out, Backend& backend);

// Hoisting (Halevi-Shoup): the ModUp of c's digits, computed once and reused
// by several key switches of automorphisms of c (e.g. many rotations of one
// ciphertext). Holds digits x (level+1+k) x N words.
class HoistedDigits {
 public:
  // c lives on `device` (the device of the keys that will use the digits).
  HoistedDigits(const RlweContext& context, const u64* c, std::size_t level, const Device& device = Device::cpu());
  std::size_t level() const { return level_; }
  const Device& device() const { return data_.device(); }
  std::size_t count() const { return digits_; }
  // Words of one extended digit: (level+1+k) * N; digits are contiguous.
  std::size_t digit_words() const { return poly_words_; }
  const u64* digit(std::size_t j) const { return data_.data() + j * poly_words_; }
  u64* digit(std::size_t j) { return data_.data() + j * poly_words_; }

 private:
  std::size_t level_, digits_, poly_words_;
  Buffer data_;
};

// key_switch of sigma_g(c) from the hoisted digits of c, with the key for
// sigma_g(s) -> s: out0 + out1 * s = sigma_g(c) * sigma_g(s) + small error.
void key_switch_hoisted(const RlweContext& context, const HoistedDigits& digits, u64 galois_element,
                        const KeySwitchKey& key, u64* out0, u64* out1);

}  // namespace ringfire
