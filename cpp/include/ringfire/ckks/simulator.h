// The level/scale simulator (Lattigo's simulated evaluator): the circuits of
// this library — polynomial evaluation, linear transforms, bootstrapping —
// are written once as templates over an "operations" type, and run either on
// ciphertexts (the Evaluator) or on SimCiphertexts, which carry only a level,
// a scale and a size. Planning therefore comes from the code that will run:
// levels consumed, the landing scale, and the count of each operation (key
// switches dominate the cost) are known before any key exists.
//
// The simulator checks what the evaluator checks about levels and scales and
// raises the same kind of InvalidArgument, so a plan that cannot run fails
// here first.
#pragma once

#include <cstddef>
#include <map>
#include <vector>

#include "ringfire/ckks/context.h"
#include "ringfire/ckks/linear_transform.h"
#include "ringfire/ckks/polynomial.h"

namespace ringfire::ckks {

struct SimCiphertext {
  std::size_t level = 0;
  double scale = 1.0;
  std::size_t size = 2;
};

// How often each operation ran; key switches also by level, since their cost
// grows with the level (and with the digits active there).
struct SimCounts {
  std::size_t multiplications = 0;     // ciphertext x ciphertext
  std::size_t plain_multiplications = 0;
  std::size_t constant_multiplications = 0;  // scalars, integers and weighted-sum terms
  std::size_t additions = 0;
  std::size_t rescales = 0;
  std::size_t relinearizations = 0;
  std::size_t rotations = 0;           // key switches of automorphisms (hoisted ones included)
  std::size_t hoisted_mod_ups = 0;     // the ModUps shared by hoisted rotations
  std::map<std::size_t, std::size_t> key_switches_by_level;

  std::size_t key_switches() const { return relinearizations + rotations; }
  SimCounts& operator+=(const SimCounts& other);
};

class Simulator {
 public:
  explicit Simulator(ContextPtr context);
  const ContextPtr& context() const { return context_; }

  // A fresh ciphertext: at `level` with its canonical scale.
  SimCiphertext fresh(std::size_t level) const;

  SimCiphertext add(const SimCiphertext& a, const SimCiphertext& b) const;
  void add_inplace(SimCiphertext& a, const SimCiphertext& b) const { a = add(a, b); }
  SimCiphertext multiply(const SimCiphertext& a, const SimCiphertext& b) const;
  SimCiphertext square(const SimCiphertext& a) const { return multiply(a, a); }
  // By a plaintext or a constant encoded at `scale`.
  SimCiphertext multiply_plain(const SimCiphertext& a, double scale) const;
  SimCiphertext multiply_scalar(const SimCiphertext& a, double scale) const;
  SimCiphertext relinearize(const SimCiphertext& a) const;
  SimCiphertext rescale(const SimCiphertext& a) const;
  // rescale(relinearize(a)): Evaluator::relinearize_rescale's level, scale and noise.
  SimCiphertext relinearize_rescale(const SimCiphertext& a) const { return rescale(relinearize(a)); }
  SimCiphertext mod_switch(const SimCiphertext& a, std::size_t level) const;
  SimCiphertext adjust_to(const SimCiphertext& a, std::size_t level) const;
  SimCiphertext rotate(const SimCiphertext& a) const;  // one keyed rotation (or conjugation)
  std::vector<SimCiphertext> rotate_many(const SimCiphertext& a, std::size_t rotations) const;
  SimCiphertext weighted_sum(const std::vector<const SimCiphertext*>& inputs, const std::vector<double>& values,
                             std::size_t level, double scale, double constant = 0.0) const;
  // A ciphertext of a constant (no noise) at `level` and `scale`.
  SimCiphertext constant(std::size_t level, double scale) const;

  // Polynomial evaluation as Evaluator::evaluate_polynomial runs it.
  SimCiphertext evaluate_polynomial(const SimCiphertext& x, const Polynomial& p, double target_scale = 0.0) const;

  // A linear transform as Evaluator::linear_transform runs it.
  SimCiphertext linear_transform(const SimCiphertext& x, const LinearTransform& lt, bool rescale = true) const;

  const SimCounts& counts() const { return counts_; }
  void reset_counts() const { counts_ = SimCounts{}; }

 private:
  void check_level(std::size_t level, const char* op) const;
  void count_key_switch(std::size_t level, bool rotation) const;

  ContextPtr context_;
  mutable SimCounts counts_;
};

// The baby-step count (a power of two) evaluate_polynomial uses for p on x:
// the one whose circuit the simulator finds needs the fewest key switches,
// then the fewest ciphertext products.
std::size_t polynomial_baby_steps(const Simulator& sim, const SimCiphertext& x, const Polynomial& p,
                                  double target_scale);

}  // namespace ringfire::ckks
