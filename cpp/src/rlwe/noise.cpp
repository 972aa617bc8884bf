#include "ringfire/rlwe/noise.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ringfire/rlwe/sampling.h"

namespace ringfire::noise {

namespace {

// log2 of the norm of N coefficients of variance `variance` each.
double norm_bits(const RlweContext& context, double variance) {
  return 0.5 * std::log2(static_cast<double>(context.n()) * variance);
}

double log2_product(const RnsBase& base, std::size_t begin, std::size_t end) {
  double bits = 0.0;
  for (std::size_t i = begin; i < end; ++i) bits += std::log2(static_cast<double>(base.modulus(i).value()));
  return bits;
}

}  // namespace

double add(double a, double b) {
  if (std::isinf(a) && a < 0) return b;
  if (std::isinf(b) && b < 0) return a;
  const double hi = std::max(a, b), lo = std::min(a, b);
  return hi + std::log2(1.0 + std::exp2(lo - hi));
}

double scale(double a, double factor) {
  return factor == 0.0 ? -std::numeric_limits<double>::infinity() : a + std::log2(factor);
}

double fresh_public(const RlweContext& context) {
  const double n = static_cast<double>(context.n()), sigma = kDefaultGaussianSigma;
  return norm_bits(context, sigma * sigma * (1.0 + 4.0 * n / 3.0));
}

double fresh_public_special(const RlweContext& context) {
  const RnsBase& base = *context.key_base();
  const double log_p = log2_product(base, context.max_level() + 1, base.size());
  return add(fresh_public(context) - log_p, rounding(context));
}

double fresh_secret(const RlweContext& context) {
  return norm_bits(context, kDefaultGaussianSigma * kDefaultGaussianSigma);
}

double key_switch(const RlweContext& context, std::size_t level) {
  const RnsBase& base = *context.key_base();
  const std::size_t q_count = context.max_level() + 1;
  const double log_p = log2_product(base, q_count, base.size());
  double widest = 0.0;
  for (std::size_t j = 0; j < context.digit_count(level); ++j) {
    const auto [begin, end] = context.digit_range(level, j);
    widest = std::max(widest, log2_product(base, begin, end));
  }
  const double n = static_cast<double>(context.n()), sigma = kDefaultGaussianSigma;
  const double digits = static_cast<double>(context.digit_count(level));
  // log2 of the per-coefficient variance: digits * N * sigma^2 / 12 * (Q_j / P)^2.
  const double digit_variance_bits = std::log2(digits * n * sigma * sigma / 12.0) + 2.0 * (widest - log_p);
  return add(0.5 * (std::log2(n) + digit_variance_bits), rounding(context));
}

double rounding(const RlweContext& context, std::size_t size) {
  const double n = static_cast<double>(context.n());
  return norm_bits(context, (1.0 + 2.0 * n / 3.0) / 12.0 + (size >= 3 ? n * n / 27.0 : 0.0));
}

double encoding(const RlweContext& context) { return norm_bits(context, 1.0 / 12.0); }

}  // namespace ringfire::noise
