// BGV and BFV: exact arithmetic modulo a plaintext modulus t, on one RLWE
// core (Lattigo's unified scheme; Kim, Polyakov and Zucca, "Revisiting
// homomorphic encryption schemes for finite fields", 2021).
//
// One representation serves both schemes. A ciphertext at level l decrypts to
//
//     x = c_0 + c_1 s + ... = [m * sigma]_t * t^-1 + e   (mod Q_l)
//
// with m the message polynomial (coefficients mod t), sigma the ciphertext's
// correction factor (Metadata::correction, invertible mod t), [.]_t the
// centred residue and e small (the "MSB" form of the BGV message: when t is
// coprime to Q, t^-1 mod Q_l = (k Q_l + 1) / t for k = -Q_l^-1 mod t, so x is
// also a BFV encryption of [m sigma k]_t at scale Q_l / t). Decryption
// multiplies by t: [t x]_{Q_l} = [m sigma]_t + t e, whose residue mod t is
// m sigma exactly as long as |[m sigma]_t + t e| < Q_l / 2.
//
// The errors are ordinary RLWE errors (not multiples of t), so the keys,
// key switching, rotations and the rounding division by a prime are the
// scheme-neutral ones CKKS uses (rlwe/). What differs per scheme is only
// the product:
//   * BGV (Evaluator::multiply): the tensor product times t. Its noise grows
//     with the operands' noise (e_a m_b + e_b m_a + t e_a e_b), so products
//     are followed by modulus switching (Evaluator::mod_reduce: divide by
//     q_l, sigma *= q_l^-1 mod t);
//   * BFV (Evaluator::multiply_scale_invariant): round(t / Q_l * tensor)
//     computed exactly in RNS (Halevi, Polyakov and Shoup 2018, with an
//     auxiliary base R); its noise grows additively, about t ||e|| ||s||
//     per product, independently of the level; sigma *= -Q_l^-1 mod t.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ringfire/bgv/encoder.h"
#include "ringfire/ring/base_converter.h"
#include "ringfire/rlwe/context.h"

namespace ringfire::bgv {

// The auxiliary base of the scale-invariant product at one level: primes R
// beside Q, P and t with R > t N Q_l (so round(t / Q_l * tensor), bounded by
// t N Q_l / 2, is centred in R), and the exact converters both ways.
struct TensorBase {
  RnsBasePtr aux;
  std::unique_ptr<BaseConverter> q_to_aux, aux_to_q;
  std::vector<u64> t_mod_aux;          // t mod r_j
  std::vector<u64> q_inverse_mod_aux;  // Q_l^-1 mod r_j
};

class Context {
 public:
  // Raises InvalidArgument unless the parameters are BGV or BFV ones.
  explicit Context(Parameters params);

  const RlweContextPtr& rlwe() const { return rlwe_; }
  const Parameters& params() const { return rlwe_->params(); }
  Scheme scheme() const { return params().scheme(); }
  std::size_t n() const { return rlwe_->n(); }
  std::size_t max_level() const { return rlwe_->max_level(); }
  std::uint64_t fingerprint() const { return rlwe_->fingerprint(); }
  const Modulus& plain_modulus() const { return t_; }

  // Batching needs a prime t = 1 (mod 2N); other t allow coefficient
  // encoding only.
  bool can_batch() const { return batch_ != nullptr; }
  // Raises InvalidArgument naming t when it cannot batch.
  const BatchEncoder& batch_encoder() const;

  // t^-1 and t modulo q_i, for every ciphertext prime (the same at every
  // level: the MSB factor t^-1 mod Q_l has residue t^-1 mod q_i).
  const std::vector<u64>& t_inverse_mod_q() const { return t_inv_mod_q_; }
  const std::vector<u64>& t_mod_q() const { return t_mod_q_; }
  // q_level^-1 mod t: what dividing by q_level multiplies the correction by.
  u64 drop_factor(std::size_t level) const { return drop_factor_.at(level); }
  // -Q_level^-1 mod t: what a scale-invariant product multiplies the
  // product of the corrections by.
  u64 tensor_factor(std::size_t level) const { return tensor_factor_.at(level); }

  // The scale-invariant product's tables at `level` (built on first use,
  // thread-safe).
  const TensorBase& tensor_base(std::size_t level) const;

 private:
  RlweContextPtr rlwe_;
  Modulus t_;
  std::unique_ptr<BatchEncoder> batch_;
  std::vector<u64> t_inv_mod_q_, t_mod_q_, drop_factor_, tensor_factor_;
  std::vector<u64> aux_primes_;  // candidates for R, largest first
  mutable std::mutex mutex_;
  mutable RnsBasePtr aux_full_;
  mutable std::map<std::size_t, std::unique_ptr<TensorBase>> tensor_bases_;
};

using ContextPtr = std::shared_ptr<const Context>;

}  // namespace ringfire::bgv
