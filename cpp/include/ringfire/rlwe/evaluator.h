// The scheme-neutral operations of the RLWE schemes (Lattigo's
// rlwe.Evaluator): relinearization, Galois automorphisms with key switching
// (rotations; CKKS conjugation and BGV row swaps are the element 2N - 1),
// hoisted rotations, and dropping limbs. The scheme evaluators
// (ckks/evaluator.h) derive from it and add their encodings' arithmetic.
//
// Operations check their operands first and raise InvalidArgument naming the
// operation, under the scheme's name from the parameters ("[ckks.rotate] no
// Galois keys reach a rotation by 3 ..."); their OpLabels carry the same
// names. Operands are in evaluation form. Results keep their operand's
// metadata and update its noise estimate (rlwe/noise.h).
#pragma once

#include <cstdint>
#include <vector>

#include "ringfire/rlwe/context.h"
#include "ringfire/rlwe/keys.h"

namespace ringfire {

class RlweEvaluator {
 public:
  explicit RlweEvaluator(RlweContextPtr context);
  virtual ~RlweEvaluator() = default;
  const RlweContextPtr& rlwe() const { return rlwe_; }

  // Size 3 -> 2 with the relinearization key.
  Ciphertext relinearize(const Ciphertext& a, const RelinKey& key) const;
  void relinearize_inplace(Ciphertext& a, const RelinKey& key) const;

  // Drops limbs down to `level` without dividing (a ciphertext modulo Q is
  // one modulo any divisor of Q; CKKS: the scale stays).
  Ciphertext mod_switch(const Ciphertext& a, std::size_t level) const;
  void mod_switch_inplace(Ciphertext& a, std::size_t level) const;
  Plaintext mod_switch(const Plaintext& p, std::size_t level) const;

  // Raises a level-0 ciphertext to `level`: its polynomials' centred residues
  // modulo q_0, lifted to every prime. Decryption then gives m + q_0 I for a
  // small integer polynomial I: the first step of bootstrapping. The noise
  // estimate stays that of the input (q_0 I is not noise; EvalMod removes it).
  Ciphertext mod_raise(const Ciphertext& a, std::size_t level) const;

  // Switches a ciphertext under s' to s with `key` (which switches from s'):
  // (c0 + ks0, ks1) with (ks0, ks1) the key switch of c1.
  Ciphertext switch_key(const Ciphertext& a, const KeySwitchKey& key) const;

  // Applies X -> X^galois_element and switches back to s.
  Ciphertext apply_galois(const Ciphertext& a, u64 galois_element, const GaloisKeys& keys) const;
  // Rotates the slots left by `steps` (negative: right). Uses the key for
  // that exact step when present, else the fewest keyed steps that add up
  // to it; raises InvalidArgument when no combination of keys reaches it.
  Ciphertext rotate(const Ciphertext& a, long long steps, const GaloisKeys& keys) const;
  void rotate_inplace(Ciphertext& a, long long steps, const GaloisKeys& keys) const;
  // Several rotations of one ciphertext sharing a single ModUp (hoisting):
  // cheaper than separate rotate calls. Every step needs its own key.
  std::vector<Ciphertext> rotate_many(const Ciphertext& a, const std::vector<long long>& steps,
                                      const GaloisKeys& keys) const;
  // The keyed steps whose sum is `steps` (what rotate will apply).
  std::vector<long long> rotation_plan(long long steps, const GaloisKeys& keys) const;

 protected:
  enum class Op { relinearize, rotate, rotate_many, mod_switch, mod_raise, switch_key };
  // "<scheme>.<operation>": a string literal, for OpLabel and error messages.
  const char* op_name(Op op) const;
  void check_context(std::uint64_t fingerprint, const char* op) const;
  // An operand of this context, in evaluation form.
  void check_operand(const Ciphertext& a, const char* op) const;
  static void check_key_device(const Device& key, const Ciphertext& a, const char* op);
  // a is a size-3 operand of this context and `key` is of this context and
  // on a's device.
  void check_relinearization(const Ciphertext& a, const RelinKey& key, const char* op) const;
  // a (+ or -)= b for ciphertexts of one level (the scheme checked the rest):
  // a grows to b's size, the noise estimates add, the complex flags combine.
  static void accumulate(Ciphertext& a, const Ciphertext& b, bool subtract);
  // round(a / q_level) over q_0..q_{level-1} (exact rounding of every
  // coefficient), with metadata `meta`: CKKS rescaling and BGV modulus
  // switching. The noise shrinks by q_level and gains a rounding term.
  Ciphertext divide_by_last_prime(const Ciphertext& a, const Metadata& meta, const char* op) const;
  // round(a / (q_{level+1} ... q_{a.level})) over q_0..q_level in one rounding
  // (level < a.level()): several primes at once, in about the work of one
  // division instead of one per prime; divide_by_last_prime is its one-prime case.
  Ciphertext divide_by_last_primes(const Ciphertext& a, std::size_t level, const Metadata& meta,
                                   const char* op) const;
  // divide_by_last_prime(relinearize(a, key)) with one rounding: the key
  // switch's ModDown divides by P * q_level (key_switch_rescale).
  Ciphertext relinearize_and_divide(const Ciphertext& a, const RelinKey& key, const Metadata& meta,
                                    const char* op) const;

 private:
  RlweContextPtr rlwe_;
};

}  // namespace ringfire
