// Polynomial evaluation, written once for ciphertexts and for the level/scale
// simulator (ckks/simulator.h). `Ops` supplies, on its Value type: level,
// scale, size, set_scale, copy, prime(level) (q_level), multiply(a, b, level)
// (a product at `level`, which may lie below either operand's), relinearize,
// rescale, relinearize_rescale (the two in one), negate, add_inplace,
// weighted_sum (Evaluator::weighted_sum) and constant(level, scale, value,
// like) (a noiseless ciphertext of a constant).
// EvaluatorOps (polynomial_ops.cpp) and SimOps (simulator.cpp) implement it.
//
// The algorithm is baby-step/giant-step (Paterson-Stockmeyer) with
// backward-propagated target scales, as in Lattigo's polynomial evaluator:
//   - the powers B_1..B_{b-1} (baby steps) and B_{2^k} (giant steps) of the
//     input are computed once, in the polynomial's basis (T_{m+n} = 2 T_m T_n
//     - T_{|m-n|} for Chebyshev, x^{m+n} = x^m x^n for monomials); B_k sits
//     at level L - ceil(log2 k);
//   - p is split recursively as q * B_{2^k} + r. A node evaluated at level l
//     "with scale S" returns an unrescaled ciphertext at level l whose scale is
//     exactly S. q is evaluated one level up with scale S q_{l+1} / scale(B),
//     rescaled and multiplied by B (left unrelinearized: the sum is
//     relinearized once); r is evaluated at l with scale S and added.
//   - the leaves are weighted sums of baby-step powers: each coefficient is
//     encoded as round(c * S / scale(B_i)) (S is about scale * q, so the
//     integers are large and exact enough), which costs no level.
//   - the top node runs at the output level + 1 with scale target * q, and one
//     final rescale lands on the target exactly.
// Every product therefore happens at the deepest level that still leaves the
// depth at ceil(log2(degree + 1)), and the result's scale is chosen, not
// inherited. The input's affine map onto [-1, 1] costs no level: x * alpha is
// x with its scale divided by alpha.
#pragma once

#include <bit>
#include <map>
#include <string>
#include <vector>

#include "ringfire/base/errors.h"
#include "ringfire/ckks/polynomial.h"

namespace ringfire::ckks::detail {

template <class Ops>
class PolynomialCircuit {
 public:
  using Value = typename Ops::Value;

  // baby: the number of baby-step powers (a power of two >= 2).
  PolynomialCircuit(const Ops& ops, const Polynomial& p, std::size_t baby) : ops_(ops), p_(p), baby_(baby) {}

  Value run(const Value& x, double target_scale) {
    const std::size_t depth = p_.depth(), level = ops_.level(x);
    require(level >= depth, "ckks.evaluate_polynomial",
            "a degree-" + std::to_string(p_.degree()) + " polynomial needs " + std::to_string(depth) +
                " levels, but the ciphertext is at level " + std::to_string(level));
    out_level_ = level - depth;
    if (depth == 0) return ops_.constant(level, target_scale, p_.coefficients()[0], x);
    powers_.emplace(1, mapped_input(x));
    top_level_ = ops_.level(powers_.at(1));
    return land(p_.coefficients(), target_scale);
  }

  // Another polynomial in the same basis and of at most p's degree, on the
  // input of the last run(): it reuses the powers computed there and lands
  // on the same level.
  Value run_more(const std::vector<double>& coefficients, double target_scale) {
    require(!powers_.empty() && !coefficients.empty() && degree_of(coefficients) <= p_.degree(), "ckks.evaluate_polynomial",
            "internal: run_more needs a run() first and a polynomial of at most its degree");
    return land(coefficients, target_scale);
  }

 private:
  // u = alpha x + beta, the input on [-1, 1] (Chebyshev); x itself otherwise.
  // An integer alpha is an exact integer product (no level); any other costs
  // one level (Polynomial::depth counts it): dividing the scale by alpha
  // instead would be free once but compound through every squaring.
  Value mapped_input(const Value& x) {
    if (p_.basis() != Basis::chebyshev || (p_.alpha() == 1.0 && p_.beta() == 0.0)) return ops_.copy(x);
    const double alpha = p_.alpha();
    const std::size_t level = ops_.level(x);
    if (!p_.maps_with_level()) return ops_.weighted_sum({&x}, {alpha}, level, ops_.scale(x), p_.beta());
    Value u = ops_.weighted_sum({&x}, {alpha}, level, ops_.scale(x) * ops_.prime(level), p_.beta());
    u = ops_.rescale(u);
    ops_.set_scale(u, ops_.scale(x));
    return u;
  }

  // The top node one level above the output, then one rescale onto the target.
  Value land(const std::vector<double>& coefficients, double target_scale) {
    Value out = node(coefficients, out_level_ + 1, target_scale * ops_.prime(out_level_ + 1));
    out = ops_.size(out) > 2 ? ops_.relinearize_rescale(out) : ops_.rescale(out);
    ops_.set_scale(out, target_scale);
    return out;
  }

  static std::size_t ceil_log2(std::size_t k) { return k <= 1 ? 0 : std::bit_width(k - 1); }
  std::size_t power_level(std::size_t k) const { return top_level_ - ceil_log2(k); }

  // B_k, computed on first use from smaller powers (memoized).
  const Value& power(std::size_t k) {
    if (auto it = powers_.find(k); it != powers_.end()) return it->second;
    const bool chebyshev = p_.basis() == Basis::chebyshev;
    const std::size_t a = std::bit_floor(k) == k ? k / 2 : std::bit_floor(k), b = k - a;
    // (References into the map stay valid as it grows.)
    const Value& pa = power(a);
    const Value& pb = power(b);
    const std::size_t level = std::min(ops_.level(pa), ops_.level(pb));
    Value product = ops_.multiply(pa, pb, level);
    if (chebyshev) {
      // 2 B_a B_b - B_{a-b}: a weighted sum with the exact integer weight 2 on
      // the product (halving the scale instead would drift it at every power).
      const std::size_t c = a - b;
      if (c == 0) {
        product = ops_.weighted_sum({&product}, {2.0}, level, ops_.scale(product), -1.0);
      } else {
        const Value& pc = power(c);
        product = ops_.weighted_sum({&product, &pc}, {2.0, -1.0}, level, ops_.scale(product));
      }
    }
    product = ops_.relinearize_rescale(product);
    return powers_.emplace(k, std::move(product)).first->second;
  }

  static std::size_t degree_of(const std::vector<double>& c) {
    std::size_t d = c.size() - 1;
    while (d > 0 && c[d] == 0.0) --d;
    return d;
  }

  // The leaf fits at `level` when every power it uses sits at or above it.
  bool leaf_fits(const std::vector<double>& c, std::size_t d, std::size_t level) const {
    for (std::size_t i = 1; i <= d; ++i)
      if (c[i] != 0.0 && power_level(i) < level) return false;
    return true;
  }

  Value leaf(const std::vector<double>& c, std::size_t d, std::size_t level, double scale) {
    std::vector<const Value*> inputs;
    std::vector<double> values;
    for (std::size_t i = 1; i <= d; ++i) {
      if (c[i] == 0.0) continue;
      inputs.push_back(&power(i));
      values.push_back(c[i]);
    }
    if (inputs.empty()) return ops_.constant(level, scale, c[0], powers_.at(1));
    return ops_.weighted_sum(inputs, values, level, scale, c[0]);
  }

  Value node(const std::vector<double>& c, std::size_t level, double scale) {
    const std::size_t d = degree_of(c);
    if (d < baby_ && leaf_fits(c, d, level)) return leaf(c, d, level, scale);
    const std::size_t m = std::bit_floor(d);
    const PolynomialSplit split = split_polynomial(p_.basis(), std::vector<double>(c.begin(), c.begin() + d + 1), m);
    const Value& giant = power(m);
    if (degree_of(split.quotient) == 0) {
      // q is a constant: q * B_m is one more term of the remainder's sum.
      Value rest = node(split.remainder, level, scale);
      return ops_.weighted_sum({&rest, &giant}, {1.0, split.quotient[0]}, level, scale);
    }
    require(level + 1 <= top_level_, "ckks.evaluate_polynomial", "internal: a quotient above the input level");
    const double quotient_scale = scale * ops_.prime(level + 1) / ops_.scale(giant);
    Value q = node(split.quotient, level + 1, quotient_scale);
    q = ops_.size(q) > 2 ? ops_.relinearize_rescale(q) : ops_.rescale(q);
    Value out = ops_.multiply(q, giant, level);
    ops_.set_scale(out, scale);  // scale * q_{l+1} / s_g / q_{l+1} * s_g, up to rounding
    bool rest = false;
    for (double v : split.remainder) rest = rest || v != 0.0;
    if (rest) ops_.add_inplace(out, node(split.remainder, level, scale));
    return out;
  }

  Ops ops_;  // by value: callers pass temporaries
  const Polynomial& p_;
  std::size_t baby_;
  std::size_t top_level_ = 0, out_level_ = 0;
  std::map<std::size_t, Value> powers_;
};

}  // namespace ringfire::ckks::detail
