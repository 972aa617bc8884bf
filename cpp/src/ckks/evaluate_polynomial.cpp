// Evaluator::evaluate_polynomial: the circuit of polynomial_circuit.h on
// ciphertexts.
#include <cmath>
#include <vector>

#include "polynomial_circuit.h"
#include "ringfire/base/op_label.h"
#include "ringfire/ckks/evaluator.h"
#include "ringfire/ckks/simulator.h"

namespace ringfire::ckks {

namespace {

struct EvaluatorOps {
  using Value = Ciphertext;
  const Evaluator& ev;
  const RelinKey& relin;

  static std::size_t level(const Value& v) { return v.level(); }
  static double scale(const Value& v) { return v.scale(); }
  static std::size_t size(const Value& v) { return v.size(); }
  static void set_scale(Value& v, double s) { v.set_scale(s); }
  static Value copy(const Value& v) { return v.clone(); }
  double prime(std::size_t level) const { return static_cast<double>(ev.context()->params().q_primes().at(level)); }
  Value multiply(const Value& a, const Value& b, std::size_t level) const {
    if (a.level() == level && b.level() == level) return ev.multiply(a, b);
    const Value a_low = ev.mod_switch(a, level), b_low = ev.mod_switch(b, level);
    return ev.multiply(a_low, b_low);
  }
  Value relinearize(const Value& a) const { return ev.relinearize(a, relin); }
  Value rescale(const Value& a) const { return ev.rescale(a); }
  Value relinearize_rescale(const Value& a) const { return ev.relinearize_rescale(a, relin); }
  Value negate(const Value& a) const { return ev.negate(a); }
  void add_inplace(Value& a, const Value& b) const { ev.add_inplace(a, b); }
  Value weighted_sum(const std::vector<const Value*>& inputs, const std::vector<double>& values, std::size_t level,
                     double scale, double constant = 0.0) const {
    return ev.weighted_sum(inputs, values, level, scale, constant);
  }
  // A noiseless encryption of `value` (c1 = 0).
  Value constant(std::size_t level, double scale, double value, const Value& like) const {
    Metadata meta = like.metadata();
    meta.scale = scale;
    Ciphertext out(like.context(), 2, level, meta, like.device());
    if (value != 0.0) ev.add_scalar_inplace(out, Complex(value, 0.0));
    out.set_noise_bits(-1.0);
    return out;
  }
};

}  // namespace

Ciphertext Evaluator::evaluate_polynomial(const Ciphertext& x, const Polynomial& p, const RelinKey& relin,
                                          double target_scale) const {
  return std::move(evaluate_polynomials(x, {p}, relin, target_scale).front());
}

std::vector<Ciphertext> Evaluator::evaluate_polynomials(const Ciphertext& x, const std::vector<Polynomial>& ps,
                                                        const RelinKey& relin, double target_scale) const {
  constexpr const char* op = "ckks.evaluate_polynomial";
  const OpLabel label(op);
  require(!ps.empty(), op, "needs at least one polynomial");
  std::size_t deepest = 0;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    require(ps[i].basis() == ps[0].basis() && ps[i].a() == ps[0].a() && ps[i].b() == ps[0].b(), op,
            "the polynomials must share one basis and interval to share their powers");
    if (ps[i].degree() > ps[deepest].degree()) deepest = i;
  }
  const Polynomial& p = ps[deepest];
  check_operand(x, op);
  require(x.size() == 2, op, "needs a size-2 ciphertext (relinearize first), got size " + std::to_string(x.size()));
  require(p.depth() <= x.level(), op,
          "a degree-" + std::to_string(p.degree()) + " polynomial needs " + std::to_string(p.depth()) +
              " levels, but the ciphertext is at level " + std::to_string(x.level()));
  require(target_scale >= 0.0 && std::isfinite(target_scale), op, "the target scale must be positive and finite");
  if (target_scale == 0.0) target_scale = context_->scale_at(x.level() - p.depth());
  const Simulator sim(context_);
  const std::size_t baby = polynomial_baby_steps(sim, SimCiphertext{x.level(), x.scale(), 2}, p, target_scale);
  if (p.depth() == 0) {  // constants: no powers to share
    std::vector<Ciphertext> out;
    for (const Polynomial& q : ps)
      out.push_back(detail::PolynomialCircuit<EvaluatorOps>(EvaluatorOps{*this, relin}, q, baby).run(x, target_scale));
    return out;
  }
  detail::PolynomialCircuit<EvaluatorOps> circuit(EvaluatorOps{*this, relin}, p, baby);
  Ciphertext first = circuit.run(x, target_scale);
  std::vector<Ciphertext> out;
  out.reserve(ps.size());
  for (std::size_t i = 0; i < ps.size(); ++i)
    out.push_back(i == deepest ? std::move(first) : circuit.run_more(ps[i].coefficients(), target_scale));
  return out;
}

}  // namespace ringfire::ckks
