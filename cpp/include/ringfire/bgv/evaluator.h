// The BGV/BFV evaluator: explicit operations on ciphertexts in the unified
// form of bgv/context.h. Nothing happens implicitly here (no
// relinearization, no modulus switching, no alignment): the Python
// operators of ringfire.bgv and ringfire.bfv build those policies on top.
//
// Operations check their operands first and raise InvalidArgument naming the
// operation under the parameters' scheme ("[bfv.add] level mismatch: 3 vs
// 5"). Sums need equal levels and equal correction factors; products accept
// any corrections and multiply them. relinearize, rotate (both rows left),
// rotate_many, apply_galois and mod_switch (dropping limbs without dividing)
// come from RlweEvaluator. Every result carries a noise estimate
// (rlwe/noise.h conventions: log2 of the error's Euclidean norm, in units of
// the ciphertext modulus, for messages uniform mod t).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "ringfire/bgv/context.h"
#include "ringfire/rlwe/evaluator.h"
#include "ringfire/rlwe/keys.h"

namespace ringfire::bgv {

class Evaluator : public RlweEvaluator {
 public:
  explicit Evaluator(ContextPtr context);
  const ContextPtr& context() const { return context_; }

  // Sums (the larger size wins), differences, negation.
  Ciphertext add(const Ciphertext& a, const Ciphertext& b) const;
  void add_inplace(Ciphertext& a, const Ciphertext& b) const;
  Ciphertext sub(const Ciphertext& a, const Ciphertext& b) const;
  void sub_inplace(Ciphertext& a, const Ciphertext& b) const;
  Ciphertext negate(const Ciphertext& a) const;
  void negate_inplace(Ciphertext& a) const;
  // With a plaintext of the same level and correction (bgv/plaintext.h).
  Ciphertext add_plain(const Ciphertext& a, const Plaintext& p) const;
  void add_plain_inplace(Ciphertext& a, const Plaintext& p) const;
  Ciphertext sub_plain(const Ciphertext& a, const Plaintext& p) const;
  void sub_plain_inplace(Ciphertext& a, const Plaintext& p) const;
  // Adds `value` (mod t) to every slot (to the constant coefficient). Exact:
  // no noise.
  Ciphertext add_integer(const Ciphertext& a, std::int64_t value) const;
  void add_integer_inplace(Ciphertext& a, std::int64_t value) const;

  // The BGV product: the tensor product times t, size 2 x 2 -> 3, correction
  // sigma_a sigma_b. Noise ~ e_a |m_b| + e_b |m_a| + t e_a e_b: follow it by
  // mod_reduce.
  Ciphertext multiply(const Ciphertext& a, const Ciphertext& b) const;
  Ciphertext square(const Ciphertext& a) const;
  // The BFV product (scale-invariant, HPS): round(t / Q_l * a (x) b)
  // computed exactly with an auxiliary base (Context::tensor_base); size 3,
  // correction sigma_a sigma_b (-Q_l^-1 mod t). Noise ~ t ||s|| (e_a + e_b),
  // whatever the operands' noise.
  Ciphertext multiply_scale_invariant(const Ciphertext& a, const Ciphertext& b) const;
  Ciphertext square_scale_invariant(const Ciphertext& a) const;
  // Times a plaintext of the same level (any correction; they multiply).
  Ciphertext multiply_plain(const Ciphertext& a, const Plaintext& p) const;
  void multiply_plain_inplace(Ciphertext& a, const Plaintext& p) const;
  // Times an integer (reduced to its centred residue mod t; the noise grows
  // by that factor). The correction does not change.
  Ciphertext multiply_integer(const Ciphertext& a, std::int64_t value) const;
  void multiply_integer_inplace(Ciphertext& a, std::int64_t value) const;
  // sum_k inputs[k] * plains[k] (plaintext products, each of the inputs' level), accumulated
  // in place and multiplied by t once at the end: what a linear map's inner sums are (the
  // LWE decryption in slots). Every input's correction times its plaintext's must agree;
  // the inputs have one size.
  Ciphertext multiply_plain_sum(const std::vector<const Ciphertext*>& inputs,
                                const std::vector<const Plaintext*>& plains) const;
  // sum_k weights[k] inputs[k] in one pass (one reduction per word, however many terms):
  // what a polynomial's baby steps are combined by. Same level and size; any corrections
  // (each weight is multiplied by the first input's correction over its input's, so the
  // result carries the first's). Noise: the terms' noises times their centred weights.
  Ciphertext linear_combination(const std::vector<const Ciphertext*>& inputs,
                                const std::vector<std::int64_t>& weights) const;

  // BGV modulus switching: divides by q_level with exact rounding, so the
  // noise shrinks by q_level (plus a rounding term); level - 1, correction
  // times q_level^-1 mod t.
  Ciphertext mod_reduce(const Ciphertext& a) const;
  void mod_reduce_inplace(Ciphertext& a) const;
  // mod_reduce until `level`.
  Ciphertext mod_reduce_to(const Ciphertext& a, std::size_t level) const;

  // Equal corrections for a sum: a times r_a and b times r_b with r_a
  // sigma_a = r_b sigma_b (mod t) and |r_a|, |r_b| about sqrt(t) (a reduced
  // basis of that lattice), or one side times the ratio when that adds less
  // noise. Same-level operands.
  std::pair<Ciphertext, Ciphertext> match_corrections(const Ciphertext& a, const Ciphertext& b) const;
  // a with correction `correction`: times correction / sigma_a (centred).
  Ciphertext with_correction(const Ciphertext& a, u64 correction) const;

  // Swaps the two rows of the slot matrix (the Galois element 2N - 1).
  Ciphertext swap_rows(const Ciphertext& a, const GaloisKeys& keys) const;

 private:
  enum class Name { add, sub, negate, add_plain, sub_plain, add_integer, multiply, square, multiply_si, square_si,
                    multiply_plain, multiply_integer, mod_reduce, match, swap_rows, linear_combination, multiply_plain_sum };
  // "<bgv|bfv>.<operation>".
  const char* name(Name op) const;
  void check_pair(const Ciphertext& a, const Ciphertext& b, const char* op, bool same_correction) const;
  void check_plain(const Ciphertext& a, const Plaintext& p, const char* op, bool same_correction) const;
  // The inputs of a sum of terms: at least one, as many as the `count` other operands (`what`:
  // "weights", "plaintexts"), none null, all of the first's level, device and size.
  void check_terms(const std::vector<const Ciphertext*>& inputs, std::size_t count, const char* what,
                   const char* op) const;
  Ciphertext tensor(const Ciphertext& a, const Ciphertext& b, const char* op) const;
  Ciphertext scale_invariant_tensor(const Ciphertext& a, const Ciphertext& b, const char* op) const;
  void multiply_by_residue(Ciphertext& a, u64 value_mod_t) const;
  // a divided down to `level` (< a.level()) in one rounding, its correction factor
  // multiplied by each dropped prime's: mod_reduce and mod_reduce_to.
  Ciphertext divided_to(const Ciphertext& a, std::size_t level, const char* op) const;

  ContextPtr context_;
};

}  // namespace ringfire::bgv
