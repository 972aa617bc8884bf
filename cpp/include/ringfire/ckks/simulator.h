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
//
// Memory (track_memory): a placeholder lives as long as the ciphertext it
// stands for, because the circuit is the same code, so placeholders that hold
// a block of a model of the host pool (PoolModel), with the evaluator's own
// temporaries around each operation (the key switch's digits and
// accumulators, a rescale's dropped limbs), count what a run holds at its
// peak, the blocks the pool keeps cached included.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <vector>

#include "ringfire/base/memory_pool.h"
#include "ringfire/ckks/context.h"
#include "ringfire/ckks/linear_transform.h"
#include "ringfire/ckks/polynomial.h"

namespace ringfire::ckks {

// The pool model a tracking simulator's placeholders hold their blocks in.
struct SimMemory {
  PoolModel pool;
  std::size_t limb_bytes = 0;  // one polynomial on one prime: N words
};

struct SimCiphertext {
  std::size_t level = 0;
  double scale = 1.0;
  std::size_t size = 2;

  SimCiphertext() = default;
  SimCiphertext(std::size_t level, double scale, std::size_t size) : level(level), scale(scale), size(size) {}
  // One that holds size x (level + 1) limbs in `memory` while it lives (null: none).
  SimCiphertext(std::size_t level, double scale, std::size_t size, std::shared_ptr<SimMemory> memory);
  // A copy holds a block of its own, as a cloned ciphertext does; a move takes the block.
  SimCiphertext(const SimCiphertext& other);
  SimCiphertext(SimCiphertext&& other) noexcept;
  SimCiphertext& operator=(const SimCiphertext& other);
  SimCiphertext& operator=(SimCiphertext&& other) noexcept;
  ~SimCiphertext() { release(); }
  const std::shared_ptr<SimMemory>& memory() const { return memory_; }

 private:
  void hold();
  void release();
  std::shared_ptr<SimMemory> memory_;
  std::size_t held_ = 0;  // the block's capacity
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
  SimCiphertext relinearize_rescale(const SimCiphertext& a) const;
  SimCiphertext mod_switch(const SimCiphertext& a, std::size_t level) const;
  SimCiphertext adjust_to(const SimCiphertext& a, std::size_t level) const;
  SimCiphertext rotate(const SimCiphertext& a) const;  // one keyed rotation (or conjugation)
  // Hoisted rotations by `steps` (0 and multiples of N/2: copies, no key switch).
  std::vector<SimCiphertext> rotate_many(const SimCiphertext& a, const std::vector<long long>& steps) const;
  // A key switch to another secret (bootstrapping's encapsulation keys): counted as a rotation.
  SimCiphertext switch_key(const SimCiphertext& a) const;
  // A level-0 ciphertext lifted to `level` (bootstrapping's ModRaise).
  SimCiphertext mod_raise(const SimCiphertext& a, std::size_t level) const;
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

  // From now on the placeholders this simulator makes (and their copies) hold
  // blocks of a pool model with `cache_limit` (MemoryPool::set_cache_limit),
  // and each operation takes the evaluator's temporaries there for its
  // duration. Placeholders made before, or elsewhere, hold nothing.
  void track_memory(std::size_t cache_limit = ~std::size_t{0});
  // The model (null unless tracking): its peak_held() is what a run holds at
  // most in the host pool beyond what it started with.
  const PoolModel* memory() const { return memory_ ? &memory_->pool : nullptr; }

 private:
  void check_level(std::size_t level, const char* op) const;
  void count_key_switch(std::size_t level, bool rotation) const;
  // A placeholder made by an operation: held in the model when tracking.
  SimCiphertext make(std::size_t level, double scale, std::size_t size) const;
  // The evaluator's temporaries of a key switch at `level` (rlwe/key_switch.cpp),
  // taken and given back in its order; with `rescale`, key_switch_rescale's.
  void key_switch_temporaries(std::size_t level, bool rescale = false) const;

  ContextPtr context_;
  mutable SimCounts counts_;
  std::shared_ptr<SimMemory> memory_;
};

// The baby-step count (a power of two) evaluate_polynomial uses for p on x:
// the one whose circuit the simulator finds needs the fewest key switches,
// then the fewest ciphertext products.
std::size_t polynomial_baby_steps(const Simulator& sim, const SimCiphertext& x, const Polynomial& p,
                                  double target_scale);

}  // namespace ringfire::ckks
