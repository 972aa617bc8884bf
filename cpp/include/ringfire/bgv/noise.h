// Noise estimates of the BGV/BFV operations, in the conventions of
// rlwe/noise.h (log2 of the Euclidean norm of the error e of
// x = [m sigma]_t t^-1 + e, average case, for messages uniform mod t). The
// evaluator stamps them on its results; the Python operators use them to
// decide when modulus switching pays (ringfire.bgv), and budget_bits turns
// one into the noise budget it predicts.
#pragma once

#include <algorithm>
#include <cmath>

#include "ringfire/bgv/context.h"
#include "ringfire/rlwe/noise.h"

namespace ringfire::bgv::noise_estimate {

// Calibration, measured against exact noise budgets over squaring chains
// (docs/bgv.md): the product heuristics below fall short by about a bit per
// product, and long scale-invariant chains by 0.14 bit more per product for
// every doubling of N beyond 2^14 (the noise's tails grow heavier than a
// Gaussian's as products pile up). Each product adds these margins.
inline constexpr double kProductMarginBits = 1.0;
inline double scale_invariant_margin_bits(std::size_t n) {
  return kProductMarginBits + 0.14 * std::max(0.0, std::log2(static_cast<double>(n)) - 14.0);
}

// ||[m sigma]_t||_2 for a message uniform mod t: t sqrt(N / 12).
inline double message_bits(const Context& ctx) {
  const double t = static_cast<double>(ctx.plain_modulus().value());
  return std::log2(t) + 0.5 * std::log2(static_cast<double>(ctx.n()) / 12.0);
}

// BGV tensor times t: (m_a t^-1 + e_a)(m_b t^-1 + e_b) t = m_a m_b t^-1 + e_a
// m_b + e_b m_a + t e_a e_b, where m_a m_b (not reduced mod t) also leaves
// (m_a m_b - [m_a m_b]_t) t^-1 = a multiple of t^-1 t = an integer of size
// |m_a| |m_b| / t.
inline double product(const Context& ctx, double a, double b) {
  const double m = message_bits(ctx), log_t = std::log2(static_cast<double>(ctx.plain_modulus().value()));
  double out = noise::add(a + m, b + m);
  out = noise::add(out, a + b + log_t);
  return noise::add(out, 2.0 * m - log_t) + kProductMarginBits;
}

// The scale-invariant product: round(t / Q (c_a (x) c_b)) leaves m_a e_b +
// m_b e_a + t (e_a r_b + e_b r_a) with r = (c s - x) / Q, whose norm is that
// of a rounding error times s (noise::rounding), plus the rounding of the
// scaling itself on (1, s, s^2).
inline double scale_invariant_product(const Context& ctx, double a, double b) {
  const RlweContext& rlwe = *ctx.rlwe();
  const double m = message_bits(ctx), log_t = std::log2(static_cast<double>(ctx.plain_modulus().value()));
  const double r = noise::rounding(rlwe);
  double out = noise::add(a, b) + std::max(m, log_t + r);
  // ||s^2|| ~ ||s||^2 = 2N/3 (the product heuristic); the rounding has norm sqrt(N / 12).
  const double n = static_cast<double>(ctx.n());
  return noise::add(out, 0.5 * std::log2(n / 12.0) + std::log2(2.0 * n / 3.0)) + scale_invariant_margin_bits(ctx.n());
}

// What dividing by q_level leaves: a / q_level plus a rounding term.
inline double mod_reduce(const Context& ctx, double a, std::size_t level) {
  return noise::add(a - std::log2(static_cast<double>(ctx.params().q_primes().at(level))),
                    noise::rounding(*ctx.rlwe()));
}

// The noise budget an estimate predicts at `level` (decryptor.h): log2(Q_l / 2)
// - log2 max |t e|, with max |e_j| about ||e||_2 / sqrt(N) times sqrt(2 ln N)
// (the largest of N Gaussian coefficients).
inline double budget_bits(const Context& ctx, double a, std::size_t level) {
  double q_bits = 0.0;
  for (std::size_t i = 0; i <= level; ++i) q_bits += std::log2(static_cast<double>(ctx.params().q_primes().at(i)));
  const double n = static_cast<double>(ctx.n());
  const double largest = a - 0.5 * std::log2(n) + 0.5 * std::log2(2.0 * std::log(n));
  return q_bits - 1.0 - std::log2(static_cast<double>(ctx.plain_modulus().value())) - largest;
}

}  // namespace ringfire::bgv::noise_estimate
