// The bootstrapping circuit (the steps are described in ckks/bootstrap.h),
// written once for ciphertexts and for the level/scale simulator. `Ops`
// supplies, on its Value type: level, scale, set_scale, mod_switch,
// multiply_integer, to_sparse / from_sparse (the encapsulation key
// switches), mod_raise, rotate, add, sub, conjugate, multiply_by_i,
// linear_transform, evaluate_polynomial, square, relinearize,
// relinearize_rescale, weighted_sum and rescale; end_phase(phase) marks where each phase ends (for timings).
#pragma once

#include <cmath>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "ringfire/base/errors.h"
#include "ringfire/ckks/bootstrap.h"

namespace ringfire::ckks::detail {

// cos(2 pi (K y - phase) / 2^r) on [-1, 1], of the least degree within
// 2^levels - 1 whose error is below 2^-50 (or of the configured cos_degree).
// Returns the polynomial and log2 of its max error. EvalMod's is phase 1/4
// (its double angles end on the sine); functional bootstrapping fits phase 0
// and 2^r / 4 (the cosine and the sine of one angle).
std::pair<Polynomial, double> fit_cosine(const BootstrapConfig& cfg, std::size_t levels, double phase);

// The level-0 key switch into the ephemeral secret (bootstrap step 2).
Ciphertext switch_to_sparse(const Ciphertext& a, const KeySwitchKey& key);

// arcsin(z) = sum_k (2k)! / (4^k (k!)^2 (2k + 1)) z^(2k+1): the odd monomial
// coefficients of factor * arcsin(2 pi u) / (2 pi) up to `degree`.
inline std::vector<double> arcsine_coefficients(std::size_t degree, double factor) {
  std::vector<double> c(degree + 1, 0.0);
  double term = 1.0;  // (2k)! / (4^k (k!)^2)
  const double two_pi_sq = 4.0 * std::numbers::pi * std::numbers::pi;
  double power = 1.0;  // (2 pi)^(2k)
  for (std::size_t k = 0; 2 * k + 1 <= degree; ++k) {
    c[2 * k + 1] = factor * term / static_cast<double>(2 * k + 1) * power;
    term *= static_cast<double>((2 * k + 1) * (2 * k + 2)) / (4.0 * static_cast<double>((k + 1) * (k + 1)));
    power *= two_pi_sq;
  }
  return c;
}

// EvalMod on slots holding y = t / (K q_0): returns slots holding
// factor * sin(2 pi K y) / (2 pi), factor = q_0 / scale_in, which is the
// message coefficient m / scale_in when t = m + q_0 I. The arcsine (when
// there is one) lands on `landing`, 0 meaning EvalMod's own scale.
template <class Ops>
typename Ops::Value eval_mod(const Ops& ops, const Bootstrapper& b, const typename Ops::Value& y, double factor,
                             double landing = 0.0) {
  using Value = typename Ops::Value;
  const BootstrapConfig& cfg = b.config();
  const double target = b.eval_mod_scale();
  const std::size_t r = cfg.double_angles;
  // Amplitude after the double angles: factor / (2 pi), or 1 / (2 pi) when
  // the arcsine correction applies the factor.
  const double final_amplitude = (cfg.arcsine_degree ? 1.0 : factor) / (2.0 * std::numbers::pi);
  double a = std::pow(final_amplitude, 1.0 / std::ldexp(1.0, static_cast<int>(r)));
  std::vector<double> coeffs = b.cos_polynomial().coefficients();
  for (double& c : coeffs) c *= a;
  const Polynomial cos_scaled(Basis::chebyshev, std::move(coeffs), -1.0, 1.0);
  Value c = ops.evaluate_polynomial(y, cos_scaled, target);
  // cos(2x) = 2 cos(x)^2 - 1, on a-scaled values: 2 c^2 - a^2 = a^2 cos(2x).
  // The sum is taken before relinearizing (it is linear in the size-3
  // product), so one key switch divides by P * q_level and rescales at once.
  for (std::size_t step = 0; step < r; ++step) {
    Value sq = ops.square(c);
    const double sq_scale = ops.scale(sq);
    c = ops.relinearize_rescale(ops.weighted_sum({&sq}, {2.0}, ops.level(sq), sq_scale, -a * a));
    a *= a;
  }
  if (cfg.arcsine_degree) {
    const Polynomial arcsine(Basis::monomial, arcsine_coefficients(cfg.arcsine_degree, factor));
    c = ops.evaluate_polynomial(c, arcsine, landing == 0.0 ? target : landing);
  }
  return c;
}

inline void require_input_level(const Bootstrapper& b, std::size_t level) {
  require(level >= b.input_level_min(), "ckks.bootstrap",
          "SlotsToCoeffs runs first, on levels " + std::to_string(b.input_level_min()) +
              " .. 1, so the input must be at level " + std::to_string(b.input_level_min()) +
              " or above; this one is at level " + std::to_string(level) + " (bootstrap it earlier)");
}

// The message ratio: x times 2^j (no level) so that q_0 / scale is
// 2^log_message_ratio, when it is above that.
template <class Ops>
typename Ops::Value raise_to_message_ratio(const Ops& ops, const Bootstrapper& b, typename Ops::Value x) {
  const int ratio = b.config().log_message_ratio;
  if (ratio <= 0) return x;
  const double q0 = static_cast<double>(b.context()->params().q_primes()[0]);
  const int j = static_cast<int>(std::floor(std::log2(q0 / ops.scale(x)))) - ratio;
  if (j < 1) return x;
  const double scale = ops.scale(x) * std::ldexp(1.0, std::min(j, 62));
  x = ops.multiply_integer(x, std::int64_t{1} << std::min(j, 62));
  ops.set_scale(x, scale);
  return x;
}

// SlotsToCoeffs first (stc_first): from level stc_levels down to 0, the
// slots z become the coefficients (Re z, Im z). The message ratio is set
// before it, so that its rescalings' noise is small against the larger scale.
template <class Ops>
typename Ops::Value slots_to_coeffs_first(const Ops& ops, const Bootstrapper& b, const typename Ops::Value& in) {
  using Value = typename Ops::Value;
  const std::size_t floor = b.input_level_min();
  require_input_level(b, ops.level(in));
  Value x = raise_to_message_ratio(ops, b, ops.level(in) > floor ? ops.mod_switch(in, floor) : ops.copy(in));
  for (std::size_t i = 0; i < b.stc_count(); ++i) x = ops.linear_transform(x, b.slots_to_coeffs(i, 0.0), true);
  ops.end_phase(BootstrapPhase::slots_to_coeffs);
  return x;
}

// Steps 2-6 up to CoeffsToSlots' last transform, which is left unrescaled
// (the conjugation that splits the halves runs before it, so its key
// switch's noise is divided by q_l with the rest): the encapsulated ModRaise
// (t = m + q_0 I under the main secret at the top), EvalMod's scale declared
// (CoeffsToSlots keeps it, its constant makes the slots t / (K q_0)), the
// trace onto the n-periodic subring for sparse packing, CoeffsToSlots. The
// bootstrap and the lookup circuit both start their second half here.
template <class Ops>
typename Ops::Value raise_to_slots(const Ops& ops, const Bootstrapper& b, const typename Ops::Value& low) {
  using Value = typename Ops::Value;
  const std::size_t n = b.slots(), slots = b.context()->slots();
  Value x = ops.from_sparse(ops.mod_raise(ops.to_sparse(low), b.context()->max_level()));
  ops.end_phase(BootstrapPhase::mod_raise);
  ops.set_scale(x, b.eval_mod_scale());
  for (std::size_t step = n; step < slots; step *= 2) x = ops.add(x, ops.rotate(x, static_cast<long long>(step)));
  const std::vector<LinearTransform>& cts = b.coeffs_to_slots();
  for (std::size_t i = 0; i + 1 < cts.size(); ++i) x = ops.linear_transform(x, cts[i], true);
  return ops.linear_transform(x, cts.back(), false);
}

template <class Ops>
typename Ops::Value run_bootstrap(const Ops& ops, const Bootstrapper& b, const typename Ops::Value& in,
                                  double target_scale) {
  using Value = typename Ops::Value;
  constexpr const char* op = "ckks.bootstrap";
  const Context& ctx = *b.context();
  const BootstrapConfig& cfg = b.config();
  const std::size_t n = b.slots(), slots = ctx.slots();
  const double q0 = static_cast<double>(ctx.params().q_primes()[0]);

  // 1. ScaleDown: level 0, and q_0 / scale raised to the message ratio.
  Value x = cfg.stc_first ? slots_to_coeffs_first(ops, b, in) : ops.level(in) > 0 ? ops.mod_switch(in, 0) : ops.copy(in);
  double scale_in = ops.scale(x);
  const double ratio_bits = std::log2(q0 / scale_in);
  require(ratio_bits >= 3.0, op,
          "the input's scale 2^" + std::to_string(std::log2(scale_in)) + " is too close to q_0 = 2^" +
              std::to_string(std::log2(q0)) + ": bootstrapping needs q_0 / scale >= 8");
  x = raise_to_message_ratio(ops, b, std::move(x));
  scale_in = ops.scale(x);
  // 2-6. ModRaise, the trace, CoeffsToSlots; then real and imaginary parts.
  // The conjugation (and the sparse repacking rotation) run before the last
  // transform's rescale, so their key-switching noise is divided by q_l too.
  x = raise_to_slots(ops, b, x);
  const Value conj = ops.conjugate(x);
  Value re = ops.add(x, conj);
  Value im = ops.multiply_by_i(ops.sub(x, conj), true);
  const double factor = q0 / scale_in;
  // With SlotsToCoeffs done, EvalMod's result is the output: it lands there.
  const double landing = cfg.stc_first ? target_scale : 0.0;
  Value v = [&] {
    if (2 * n <= slots) {
      // Sparse: [re; 0] + [0; im] in 2n slots, one EvalMod for both halves.
      const Value packed = ops.rescale(ops.add(re, ops.rotate(im, -static_cast<long long>(n))));
      ops.end_phase(BootstrapPhase::coeffs_to_slots);
      return eval_mod(ops, b, packed, factor);
    }
    re = ops.rescale(re);
    im = ops.rescale(im);
    ops.end_phase(BootstrapPhase::coeffs_to_slots);
    const Value re_mod = eval_mod(ops, b, re, factor, landing);
    const Value im_mod = eval_mod(ops, b, im, factor, landing);
    return ops.add(re_mod, ops.multiply_by_i(im_mod, false));
  }();
  ops.end_phase(BootstrapPhase::eval_mod);
  // 8. SlotsToCoeffs, landing on the target scale (unless it ran first).
  if (!cfg.stc_first) {
    for (std::size_t i = 0; i < b.stc_count(); ++i)
      v = ops.linear_transform(v, b.slots_to_coeffs(i, target_scale), true);
    ops.end_phase(BootstrapPhase::slots_to_coeffs);
  }
  ops.set_scale(v, target_scale);
  return v;
}

}  // namespace ringfire::ckks::detail
