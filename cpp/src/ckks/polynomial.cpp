#include "ringfire/ckks/polynomial.h"

#include <cmath>
#include <numbers>
#include <string>

#include "ringfire/base/errors.h"

namespace ringfire::ckks {

namespace {
constexpr const char* kOp = "ckks.Polynomial";
}

const char* basis_name(Basis basis) { return basis == Basis::chebyshev ? "chebyshev" : "monomial"; }

Polynomial::Polynomial(Basis basis, std::vector<double> coefficients, double a, double b)
    : basis_(basis), coefficients_(std::move(coefficients)), a_(a), b_(b) {
  require(!coefficients_.empty(), kOp, "needs at least one coefficient");
  for (double c : coefficients_) require(std::isfinite(c), kOp, "coefficients must be finite");
  require(std::isfinite(a_) && std::isfinite(b_) && a_ < b_, kOp,
          "the interval must be finite with a < b, got [" + std::to_string(a_) + ", " + std::to_string(b_) + "]");
  require(basis_ == Basis::chebyshev || (a_ == -1.0 && b_ == 1.0), kOp,
          "an interval applies to the Chebyshev basis only (monomials are evaluated at x itself)");
  while (coefficients_.size() > 1 && coefficients_.back() == 0.0) coefficients_.pop_back();
}

std::size_t Polynomial::depth() const {
  std::size_t depth = 0;
  while ((std::size_t{1} << depth) < degree() + 1) ++depth;
  return depth == 0 ? 0 : depth + (maps_with_level() ? 1 : 0);
}

bool Polynomial::maps_with_level() const {
  const double alpha = std::fabs(this->alpha());
  return basis_ == Basis::chebyshev && degree() >= 1 && alpha != std::round(alpha);
}

bool Polynomial::is_odd() const {
  for (std::size_t k = 0; k < coefficients_.size(); k += 2)
    if (coefficients_[k] != 0.0) return false;
  return true;
}

bool Polynomial::is_even() const {
  for (std::size_t k = 1; k < coefficients_.size(); k += 2)
    if (coefficients_[k] != 0.0) return false;
  return true;
}

double Polynomial::operator()(double x) const {
  const std::size_t d = degree();
  if (basis_ == Basis::monomial) {
    double acc = coefficients_[d];
    for (std::size_t k = d; k-- > 0;) acc = acc * x + coefficients_[k];
    return acc;
  }
  // Clenshaw: b_k = c_k + 2u b_{k+1} - b_{k+2}; p = c_0 + u b_1 - b_2.
  const double u = alpha() * x + beta();
  double b1 = 0.0, b2 = 0.0;
  for (std::size_t k = d; k >= 1; --k) {
    const double b0 = coefficients_[k] + 2.0 * u * b1 - b2;
    b2 = b1;
    b1 = b0;
  }
  return coefficients_[0] + u * b1 - b2;
}

Polynomial chebyshev_fit(const std::function<double(double)>& f, double a, double b, std::size_t degree) {
  constexpr const char* op = "ckks.chebyshev_fit";
  require(static_cast<bool>(f), op, "needs a function");
  require(degree <= (1u << 16), op, "degree " + std::to_string(degree) + " is beyond the supported 65536");
  require(std::isfinite(a) && std::isfinite(b) && a < b, op, "the interval must be finite with a < b");
  const std::size_t nodes = degree + 1;
  std::vector<double> values(nodes);
  for (std::size_t j = 0; j < nodes; ++j) {
    const double u = std::cos(std::numbers::pi * (static_cast<double>(j) + 0.5) / static_cast<double>(nodes));
    const double x = 0.5 * (b - a) * u + 0.5 * (a + b);
    values[j] = f(x);
    require(std::isfinite(values[j]), op, "f(" + std::to_string(x) + ") is not finite");
  }
  // c_k = (2 / n) sum_j f(x_j) T_k(u_j), halved for k = 0 (discrete orthogonality).
  std::vector<double> coefficients(nodes);
  for (std::size_t k = 0; k < nodes; ++k) {
    double sum = 0.0;
    for (std::size_t j = 0; j < nodes; ++j)
      sum += values[j] * std::cos(std::numbers::pi * static_cast<double>(k) * (static_cast<double>(j) + 0.5) /
                                  static_cast<double>(nodes));
    coefficients[k] = (k == 0 ? 1.0 : 2.0) * sum / static_cast<double>(nodes);
  }
  return Polynomial(Basis::chebyshev, std::move(coefficients), a, b);
}

PolynomialSplit split_polynomial(Basis basis, const std::vector<double>& c, std::size_t m) {
  const std::size_t d = c.empty() ? 0 : c.size() - 1;
  require(m >= 1 && m <= d && d <= 2 * m, "ckks.split_polynomial",
          "needs m <= degree <= 2m, got m = " + std::to_string(m) + ", degree " + std::to_string(d));
  PolynomialSplit out{std::vector<double>(d - m + 1, 0.0), std::vector<double>(c.begin(), c.begin() + m)};
  if (basis == Basis::monomial) {
    for (std::size_t i = m; i <= d; ++i) out.quotient[i - m] = c[i];
    return out;
  }
  // T_i = 2 T_{i-m} T_m - T_{2m-i} for m < i <= 2m, and T_m = T_0 T_m.
  out.quotient[0] = c[m];
  for (std::size_t i = m + 1; i <= d; ++i) {
    out.quotient[i - m] = 2.0 * c[i];
    out.remainder[2 * m - i] -= c[i];
  }
  return out;
}

}  // namespace ringfire::ckks
