// Polynomials for homomorphic evaluation, in the monomial or the Chebyshev
// basis.
//
// A Chebyshev polynomial lives on an interval [a, b]: p(x) = sum_k c_k T_k(u)
// with u = (2x - a - b) / (b - a) in [-1, 1]. Chebyshev series are how
// smooth functions are approximated (chebyshev_fit): their coefficients
// decay fast and evaluating them is numerically stable, where monomial
// coefficients of the same function grow and cancel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace ringfire::ckks {

enum class Basis : std::uint8_t { monomial, chebyshev };
const char* basis_name(Basis basis);

class Polynomial {
 public:
  // Raises InvalidArgument for no coefficients, non-finite values, or an
  // interval with a >= b (the interval must be [-1, 1] for the monomial
  // basis, which has none). Trailing zero coefficients are dropped.
  Polynomial(Basis basis, std::vector<double> coefficients, double a = -1.0, double b = 1.0);

  Basis basis() const { return basis_; }
  const std::vector<double>& coefficients() const { return coefficients_; }
  double a() const { return a_; }
  double b() const { return b_; }
  std::size_t degree() const { return coefficients_.size() - 1; }
  // Levels a homomorphic evaluation consumes: ceil(log2(degree + 1)), the
  // minimum for any circuit of this degree (0 for a constant), plus one for
  // the map onto [-1, 1] when it multiplies by a non-integer (maps_with_level).
  std::size_t depth() const;
  // Chebyshev on an interval whose map x -> u multiplies by a non-integer:
  // that product costs a level. [-1, 1], shifted copies of it ([0, 2]) and
  // narrower intervals with an integer 2 / (b - a) cost none.
  bool maps_with_level() const;
  // Only odd (or only even) powers have nonzero coefficients.
  bool is_odd() const;
  bool is_even() const;

  // p(x) in double precision (Clenshaw for Chebyshev, Horner for monomials):
  // the reference the encrypted evaluation is checked against.
  double operator()(double x) const;
  // The affine map x -> u onto [-1, 1]: u = alpha * x + beta.
  double alpha() const { return 2.0 / (b_ - a_); }
  double beta() const { return -(a_ + b_) / (b_ - a_); }

 private:
  Basis basis_;
  std::vector<double> coefficients_;
  double a_, b_;
};

// The degree-`degree` Chebyshev interpolant of f on [a, b] (at the degree + 1
// Chebyshev nodes of the first kind): within a small factor of the best
// uniform approximation of that degree for smooth f.
Polynomial chebyshev_fit(const std::function<double(double)>& f, double a, double b, std::size_t degree);

// p = q * B_m + r with deg r < m, in p's basis (B_m = x^m or T_m(u)); the
// split behind baby-step/giant-step evaluation. Needs m <= degree < 2m.
struct PolynomialSplit {
  std::vector<double> quotient, remainder;
};
PolynomialSplit split_polynomial(Basis basis, const std::vector<double>& coefficients, std::size_t m);

}  // namespace ringfire::ckks
