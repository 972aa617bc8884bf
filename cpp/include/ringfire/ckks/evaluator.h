// The CKKS evaluator: explicit, SEAL-like operations. Nothing happens
// implicitly here — no relinearization, rescaling or alignment unless asked
// (the Python operators build those policies on top). Every operation checks
// its operands first and raises InvalidArgument naming the operation and the
// values: "[ckks.add] level mismatch: 3 vs 5".
//
// The scheme-neutral operations (relinearize, rotate, rotate_many,
// rotation_plan, apply_galois, mod_switch) come from RlweEvaluator; this
// class adds what CKKS's encoding defines: scales, plaintext and constant
// arithmetic, rescaling, conjugation. All operands are in evaluation form.
#pragma once

#include <cstdint>
#include <vector>

#include "ringfire/ckks/context.h"
#include "ringfire/ckks/linear_transform.h"
#include "ringfire/ckks/polynomial.h"
#include "ringfire/rlwe/evaluator.h"
#include "ringfire/rlwe/keys.h"

namespace ringfire::ckks {

class Evaluator : public RlweEvaluator {
 public:
  explicit Evaluator(ContextPtr context);
  const ContextPtr& context() const { return context_; }

  // Sums and differences of same-level, same-scale operands. Ciphertexts of
  // different sizes give the larger size.
  Ciphertext add(const Ciphertext& a, const Ciphertext& b) const;
  void add_inplace(Ciphertext& a, const Ciphertext& b) const;
  Ciphertext sub(const Ciphertext& a, const Ciphertext& b) const;
  void sub_inplace(Ciphertext& a, const Ciphertext& b) const;
  Ciphertext negate(const Ciphertext& a) const;
  void negate_inplace(Ciphertext& a) const;
  Ciphertext add_plain(const Ciphertext& a, const Plaintext& p) const;
  void add_plain_inplace(Ciphertext& a, const Plaintext& p) const;
  Ciphertext sub_plain(const Ciphertext& a, const Plaintext& p) const;
  void sub_plain_inplace(Ciphertext& a, const Plaintext& p) const;
  // Adds a constant to every slot, encoded at the ciphertext's scale.
  Ciphertext add_scalar(const Ciphertext& a, Complex value) const;
  void add_scalar_inplace(Ciphertext& a, Complex value) const;

  // Products: the result's scale is the product of the scales.
  Ciphertext multiply(const Ciphertext& a, const Ciphertext& b) const;  // size 2 x 2 -> 3
  Ciphertext square(const Ciphertext& a) const;
  Ciphertext multiply_plain(const Ciphertext& a, const Plaintext& p) const;
  void multiply_plain_inplace(Ciphertext& a, const Plaintext& p) const;
  // Multiplies every slot by `value` encoded at `scale` (result scale is
  // a.scale * scale). Real values use one scalar per limb (seed 001 5.3).
  Ciphertext multiply_scalar(const Ciphertext& a, Complex value, double scale) const;
  void multiply_scalar_inplace(Ciphertext& a, Complex value, double scale) const;
  // Multiplies every slot by i (or -i): the polynomial times X^(N/2) (or
  // -X^(N/2)), exact, so neither the scale nor the noise changes.
  Ciphertext multiply_by_i(const Ciphertext& a, bool negative = false) const;
  // Multiplies by an integer; the scale does not change and no level is used.
  Ciphertext multiply_integer(const Ciphertext& a, std::int64_t value) const;
  void multiply_integer_inplace(Ciphertext& a, std::int64_t value) const;
  // a / value with no level and no rounding: the same words, read at a scale
  // `value` times larger (value >= 1). The scale is no longer the level's
  // canonical one; adjust_to brings it back when an operand needs it.
  Ciphertext divide_by_integer(const Ciphertext& a, std::int64_t value) const;

  // sum_t weights[t] * inputs[t], each weight encoded as round(w * scale):
  // the dense-layer kernel of encrypted inference (one pass, one reduction
  // per word). Inputs share level, scale and size; result scale is
  // input scale * scale. Rescale afterwards.
  Ciphertext linear_combination(const std::vector<const Ciphertext*>& inputs, const std::vector<double>& weights,
                                double scale) const;
  // A dense layer's outputs over the same inputs: out[o] = linear_combination(inputs,
  // weights[o], scale), the same words, in one pass over the inputs for several outputs
  // (Backend::linear_combinations).
  std::vector<Ciphertext> linear_combinations(const std::vector<const Ciphertext*>& inputs,
                                              const std::vector<std::vector<double>>& weights, double scale) const;

  // sum_t values[t] * inputs[t] + constant, at `level` and `scale`: the
  // building block of polynomial evaluation. Each value is encoded as the
  // integer round(values[t] * scale / inputs[t].scale), so inputs may differ
  // in scale and sit at any level >= `level` (their upper limbs are not
  // read) and in size (the result has the largest). No level is consumed.
  // Raises when a scale ratio is too small for its value to round well
  // (below 2^20 unless value * ratio is an integer).
  Ciphertext weighted_sum(const std::vector<const Ciphertext*>& inputs, const std::vector<double>& values,
                          std::size_t level, double scale, double constant = 0.0) const;

  // Divides by the last prime q_level with exact rounding; level - 1,
  // scale / q_level.
  Ciphertext rescale(const Ciphertext& a) const;
  void rescale_inplace(Ciphertext& a) const;
  // rescale(relinearize(a, key)) as one operation (a: size 3, level >= 1):
  // the key switch's division by P and the rescale's by q_level become one
  // division by P * q_level (rlwe/key_switch.h, key_switch_rescale). One
  // rounding instead of two, so the result differs from the two-step one by
  // one in a few coefficients and its error is no larger (to within half a
  // bit, tested); level + 1 fewer forward NTTs per output polynomial. The
  // scale and level are those of the two steps.
  Ciphertext relinearize_rescale(const Ciphertext& a, const RelinKey& key) const;
  // Moves a ciphertext to `level` with exactly the canonical scale of that
  // level (Context::scale_at): drops limbs, then multiplies by the constant
  // that corrects the scale and rescales. Costs the one level it lands on,
  // so `level` must be below a.level() unless the scale already matches.
  Ciphertext adjust_to(const Ciphertext& a, std::size_t level) const;

  // p(x), slot by slot, by baby-step/giant-step evaluation in p's basis (see
  // src/ckks/polynomial_circuit.h): consumes exactly p.depth() =
  // ceil(log2(degree + 1)) levels, whatever the interval, and lands exactly
  // on `target_scale` (0: the canonical scale of the result's level). The
  // baby-step count is the one the simulator finds cheapest.
  Ciphertext evaluate_polynomial(const Ciphertext& x, const Polynomial& p, const RelinKey& relin,
                                 double target_scale = 0.0) const;
  // Several polynomials of one basis and interval on the same input, sharing
  // its powers (the costly part): each result lands on the level of the
  // deepest and on `target_scale`, as evaluate_polynomial would put it.
  std::vector<Ciphertext> evaluate_polynomials(const Ciphertext& x, const std::vector<Polynomial>& ps,
                                               const RelinKey& relin, double target_scale = 0.0) const;

  // lt's matrix times the slots of x (baby-step/giant-step, hoisted baby
  // rotations; see ckks/linear_transform.h), then one rescale: the result is
  // one level below lt.level() with scale x.scale * lt.scale / q_level (x's
  // own scale for the default lt scale). x may sit above lt's level. With
  // rescale = false the result stays at lt.level() with scale x.scale *
  // lt.scale (rescale it later; noise added before that rescale shrinks).
  Ciphertext linear_transform(const Ciphertext& x, const LinearTransform& lt, const GaloisKeys& keys,
                              bool rescale = true) const;

  // Complex conjugation of every slot (the Galois element 2N - 1).
  Ciphertext conjugate(const Ciphertext& a, const GaloisKeys& keys) const;

  // For a real ciphertext whose real part was just taken exactly (x + conj(x):
  // a lookup's output, a pair's halves): that cancels the imaginary parts'
  // noise but not the real parts', and decryption measures the noise it adds
  // from the imaginary parts (decryptor.h), so it would add too little to
  // hide the real parts' error. Adds Gaussian noise of the ciphertext's
  // estimated error (noise_bits) to the imaginary parts only: the real parts
  // do not change, and later operations carry it as they carry the real
  // parts' error. The draw is seeded by a hash of the ciphertext's first limb:
  // it is public (it hides nothing itself; it sizes the decryptor's fresh
  // noise), differs between ciphertexts, and is the same on CPU and GPU.
  void restore_imaginary_noise(Ciphertext& a) const;

 private:
  void check_pair(const Ciphertext& a, const Ciphertext& b, const char* op) const;
  void check_same_scale(double a, double b, const char* op) const;
  void check_plain(const Ciphertext& a, const Plaintext& p, const char* op, bool same_scale) const;
  void check_product_fits(double scale, std::size_t level, const char* op) const;
  // a's metadata with the scale divided by q_level, after checking that a can
  // be rescaled (an operand of this context above level 0).
  Metadata rescaled_metadata(const Ciphertext& a, const char* op) const;

  ContextPtr context_;
};

}  // namespace ringfire::ckks
