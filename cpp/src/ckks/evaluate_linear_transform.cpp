// Evaluator::linear_transform and Simulator::linear_transform: the circuit of
// linear_transform_circuit.h on ciphertexts and on placeholders.
#include <string>

#include "linear_transform_circuit.h"
#include "ringfire/base/errors.h"
#include "ringfire/base/memory_pool.h"
#include "ringfire/base/op_label.h"
#include "ringfire/ckks/evaluator.h"
#include "ringfire/ckks/simulator.h"
#include "ringfire/rlwe/noise.h"

namespace ringfire::ckks {

namespace {

constexpr const char* kOp = "ckks.linear_transform";

struct EvaluatorOps {
  using Value = Ciphertext;
  const Evaluator& ev;
  const GaloisKeys& keys;

  static std::size_t level(const Value& v) { return v.level(); }
  Value mod_switch(const Value& v, std::size_t level) const { return ev.mod_switch(v, level); }
  std::vector<Value> rotate_many(const Value& x, const std::vector<long long>& steps) const {
    return ev.rotate_many(x, steps, keys);
  }
  // sum_b diagonal_b * rot_b(x): one lazy-reduced pass per output polynomial pair.
  Value inner_sum(const std::map<long long, const Value*>& babies, const LinearTransform::GiantStep& giant) const {
    const Value& first = *babies.begin()->second;
    std::vector<const u64*> plains, c0, c1;
    std::vector<Plaintext> moved;  // plaintexts copied to the ciphertext's device, if they live elsewhere
    moved.reserve(giant.terms.size());
    double noise_bits = -1e300, plain_scale = 0.0;
    bool complex_plain = false;  // a complex diagonal makes a real input's slots complex
    for (const auto& [b, plain] : giant.terms) {
      complex_plain = complex_plain || plain.is_complex();
      const Value& x = *babies.at(b);
      const Plaintext* p = &plain;
      if (plain.device() != x.device()) p = &moved.emplace_back(plain.to(x.device()));
      plains.push_back(p->data());
      c0.push_back(x.poly(0));
      c1.push_back(x.poly(1));
      plain_scale = plain.scale();
      noise_bits = noise::add(noise_bits, noise::add(noise::scale(x.noise_bits(), plain.scale()),
                                                     noise::scale(noise::encoding(*x.context()), x.scale())));
    }
    Metadata meta = first.metadata();
    meta.scale = first.scale() * plain_scale;
    meta.complex = meta.complex || complex_plain;
    for (const auto& [b, x] : babies) meta.complex = meta.complex || x->is_complex();
    Ciphertext out(first.context(), 2, first.level(), meta, first.device());
    backend_for(first.device())
        .inner_product_pair(plains.data(), c0.data(), c1.data(), plains.size(), out.poly(0), out.poly(1),
                            first.base());
    out.set_noise_bits(noise_bits);
    return out;
  }
  Value rotate(const Value& v, long long steps) const { return ev.rotate(v, steps, keys); }
  void add_inplace(Value& a, const Value& b) const { ev.add_inplace(a, b); }
  Value rescale(const Value& v) const { return ev.rescale(v); }
  static void prefetch(const LinearTransform::GiantStep& giant) {
    for (const auto& [b, plain] : giant.terms)
      if (plain.device().is_host()) prefetch_host_block(plain.data(), plain.poly_words() * sizeof(u64));
  }
};

struct SimOps {
  using Value = SimCiphertext;
  const Simulator& sim;

  static std::size_t level(const Value& v) { return v.level; }
  Value mod_switch(const Value& v, std::size_t level) const { return sim.mod_switch(v, level); }
  std::vector<Value> rotate_many(const Value& x, const std::vector<long long>& steps) const {
    return sim.rotate_many(x, steps);
  }
  // One product per term, one output (each term's product counted, then dropped).
  Value inner_sum(const std::map<long long, const Value*>& babies, const LinearTransform::GiantStep& giant) const {
    const Value& first = *babies.begin()->second;
    if (giant.terms.empty()) return first;
    for (std::size_t i = 0; i + 1 < giant.terms.size(); ++i) sim.multiply_plain(first, giant.terms[i].second.scale());
    return sim.multiply_plain(first, giant.terms.back().second.scale());
  }
  Value rotate(const Value& v, long long) const { return sim.rotate(v); }
  void add_inplace(Value& a, const Value& b) const { sim.add_inplace(a, b); }
  Value rescale(const Value& v) const { return sim.rescale(v); }
  static void prefetch(const LinearTransform::GiantStep&) {}
};

void check_transform(const ContextPtr& ours, const LinearTransform& lt, std::size_t level) {
  require(lt.context()->fingerprint() == ours->fingerprint(), kOp,
          "the transform was made for a different context (parameter fingerprint mismatch)");
  require(level >= lt.level(), kOp,
          "the transform's diagonals are encoded at level " + std::to_string(lt.level()) +
              " but the ciphertext is at level " + std::to_string(level) + " (encode the transform at its level)");
  require(lt.level() >= 1, kOp, "a transform at level 0 leaves no prime to rescale by");
}

}  // namespace

Ciphertext Evaluator::linear_transform(const Ciphertext& x, const LinearTransform& lt, const GaloisKeys& keys,
                                       bool rescale) const {
  const OpLabel label(kOp);
  check_operand(x, kOp);
  require(x.size() == 2, kOp, "needs a size-2 ciphertext (relinearize first), got size " + std::to_string(x.size()));
  check_transform(context_, lt, x.level());
  return detail::run_linear_transform(EvaluatorOps{*this, keys}, x, lt, rescale);
}

SimCiphertext Simulator::linear_transform(const SimCiphertext& x, const LinearTransform& lt, bool rescale) const {
  require(x.size == 2, kOp, "needs a size-2 ciphertext (relinearize first)");
  check_transform(context_, lt, x.level);
  return detail::run_linear_transform(SimOps{*this}, x, lt, rescale);
}

}  // namespace ringfire::ckks
