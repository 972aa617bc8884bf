// CKKS functional bootstrapping (Alexandru, Kim, Polyakov, "General
// functional bootstrapping using CKKS", CRYPTO 2025): a bootstrap that
// evaluates a lookup table on slots holding small integers.
//
// After ModRaise each coefficient holds t = m q_0 / p + e + q_0 I. EvalMod's
// sine would return m; here the circuit computes z = exp(2 pi i t / q_0) =
// omega^m (omega = exp(2 pi i / p); the q_0 I term vanishes), and the table is
// the polynomial that interpolates it on the p-th roots of unity:
//   f(m) = sum_k c_k omega^(m k),   c_k = (1/p) sum_m f(m) omega^(-m k),
// a DFT of the table. f is real, so c_(p-k) = conj(c_k) and f(m) = Re D(z)
// with D(z) = c_0 + sum_(0<k<p/2) 2 c_k z^k + c_(p/2) z^(p/2): degree p/2.
// The steps:
//   1. SlotsToCoeffs on the user's levels stc_levels .. 1, the first
//      transform encoded so that the coefficients become exactly m q_0 / p
//      (the scale correction costs no level);
//   2. ModRaise (encapsulated, as in bootstrap.h) and CoeffsToSlots: the
//      slots hold y = t / (K q_0), for the real half of the coefficients
//      (real inputs leave the imaginary half at 0; it is not computed);
//      sparse packing (n slots) takes the bootstrap's trace first and fills
//      the zero half of every 2n slots after, so y repeats with period n;
//   3. z = cos(2 pi K y / 2^r) + i sin(2 pi K y / 2^r), two Chebyshev fits
//      sharing their powers, then r squarings: z = exp(2 pi i t / q_0);
//   4. D(z) / 2 and its conjugate added: Re D(z) = f(m), then moved onto
//      the canonical scale of the level below (Evaluator::adjust_to).
// Flat tables (`flat`, p a power of two): an input m + e reads f(m) + f'(m) e
// above, where f' is the interpolating curve's slope (up to ~p/1.6 for a
// sawtooth such as m mod p). Subtracting sin(2 pi x) / (2 pi) H(x), with H
// the curve through the slopes f'(m), keeps every value and makes every slope
// 0: e then reaches the output as about e^2 times the curve's bend, so
// integers come out cleaned, and digit extractions (floors, signs) stop
// carrying their inputs' errors along. sin(2 pi x) = Im z^p: log2 p more
// squarings of z, beside D's powers, and one product: a level more.
// The levels: CoeffsToSlots' and EvalMod's reserved ones, then D's depth and
// one for the adjustment, taken from what EvalMod's arcsine and
// SlotsToCoeffs would have used, and from the user's levels beyond that
// (functional_output_level).
#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <numbers>
#include <optional>
#include <string>

#include "bootstrap_circuit.h"
#include "bootstrap_dft.h"
#include "bootstrap_ops.h"
#include "ringfire/base/errors.h"
#include "ringfire/base/op_label.h"
#include "ringfire/ckks/bootstrap.h"
#include "ringfire/rlwe/noise.h"

namespace ringfire::ckks {

struct Bootstrapper::FunctionalParts {
  Polynomial cos, sin;
  double fit_error_log2 = 0.0;
  std::size_t exp_end_level = 0;  // where z = exp(2 pi i t / q_0) lands
  // SlotsToCoeffs-first transforms 1 .. stc_levels - 1, and the diagonals of
  // the first (its encoding scale depends on the input's scale and the table
  // size: functional_first_stc).
  std::vector<std::shared_ptr<const LinearTransform>> stc_rest;
  bootstrap::Diagonals first_stc;
};

namespace {

constexpr const char* kOp = "ckks.functional_bootstrap";
constexpr std::size_t kMaxTable = 4096;
constexpr std::size_t kMaxFirstTransforms = 8;

std::size_t ceil_log2(std::size_t v) { return v <= 1 ? 0 : static_cast<std::size_t>(std::bit_width(v - 1)); }

// D(z) / 2 split into real and imaginary coefficients (monomial basis), and
// sum_k k |D_k|: how much an error in z can move the result (D's derivative
// on the unit circle is at most that).
struct TablePolynomial {
  std::vector<double> re, im;
  double gain = 0.0;
  // Bounds on the curve Re D(exp(2 pi i x / p)) over real x: its size, its
  // slope and its bend (sums of |coefficient| times (2 pi k / p)^0, 1, 2).
  double size = 0.0, slope = 0.0, bend = 0.0;
};

TablePolynomial table_polynomial(const std::vector<double>& table) {
  const std::size_t p = table.size(), top = p / 2;
  TablePolynomial out;
  out.re.assign(top + 1, 0.0);
  out.im.assign(top + 1, 0.0);
  double largest = 0.0;
  for (double v : table) largest = std::max(largest, std::fabs(v));
  for (std::size_t k = 0; k <= top; ++k) {
    std::complex<double> c = 0.0;
    for (std::size_t m = 0; m < p; ++m) {
      const double angle = -2.0 * std::numbers::pi * static_cast<double>((m * k) % p) / static_cast<double>(p);
      c += table[m] * std::polar(1.0, angle);
    }
    c /= static_cast<double>(p);
    const bool doubled = k != 0 && 2 * k != p;  // k and p - k fold into one term
    c *= doubled ? 1.0 : 0.5;                   // halved: D/2 + conj(D/2) = Re D
    // Round-off of the DFT itself (about 2^-52 of the table) is dropped, so
    // that exact zeros (an even table's sine part) cost no term.
    const double floor = 1e-14 * std::max(largest, 1e-300);
    out.re[k] = std::fabs(c.real()) < floor ? 0.0 : c.real();
    out.im[k] = std::fabs(c.imag()) < floor || 2 * k == p ? 0.0 : c.imag();
    out.gain += 2.0 * static_cast<double>(k) * std::abs(c);
    const double w = 2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(p);
    out.size += 2.0 * std::abs(c);
    out.slope += 2.0 * w * std::abs(c);
    out.bend += 2.0 * w * w * std::abs(c);
  }
  return out;
}

// The flat correction's table: H(m) / (4 pi), H(m) the slope of the curve D
// draws through the table at m (the circuit subtracts 2 sin(2 pi x) Re E(x),
// E drawn through these values; at integers that removes the slope and
// keeps the value).
std::vector<double> flat_correction_table(const TablePolynomial& d, std::size_t p) {
  std::vector<double> out(p, 0.0);
  for (std::size_t m = 0; m < p; ++m) {
    double slope = 0.0;
    for (std::size_t k = 0; k < d.re.size(); ++k) {
      const double w = 2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(p);
      const double angle = 2.0 * std::numbers::pi * static_cast<double>((m * k) % p) / static_cast<double>(p);
      // d/dx of 2 Re((re + i im) e^(i w x)) at x = m.
      slope += 2.0 * w * (-d.re[k] * std::sin(angle) - d.im[k] * std::cos(angle));
    }
    out[m] = slope / (4.0 * std::numbers::pi);
  }
  // Slopes at round-off of the curve's size are 0 (a constant table's, or a two-entry one's,
  // whose curve c0 + c1 cos(pi x) is flat at the integers already): no correction then.
  for (double& v : out)
    if (std::fabs(v) < 1e-12 * std::max(d.size, 1e-300)) v = 0.0;
  return out;
}

bool all_zero(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double x) { return x == 0.0; });
}

}  // namespace

const Bootstrapper::FunctionalParts& Bootstrapper::functional_parts() const {
  std::call_once(functional_once_, [&] {
    auto parts = std::make_shared<FunctionalParts>(
        FunctionalParts{Polynomial(Basis::chebyshev, {0.0}), Polynomial(Basis::chebyshev, {0.0}), 0.0, 0, {}, {}});
    const double quarter_turn = std::ldexp(1.0, static_cast<int>(config_.double_angles)) / 4.0;
    auto [cos, cos_error] = detail::fit_cosine(config_, cos_levels_, 0.0);
    auto [sin, sin_error] = detail::fit_cosine(config_, cos_levels_, quarter_turn);
    parts->fit_error_log2 = std::max(cos_error, sin_error);
    const std::size_t depth = std::max(cos.depth(), sin.depth());
    parts->cos = std::move(cos);
    parts->sin = std::move(sin);
    const std::size_t eval_top = context_->max_level() - config_.cts_levels;
    parts->exp_end_level = eval_top - depth - config_.double_angles;
    // The transforms after the first: those of the configuration when
    // SlotsToCoeffs already runs first, else the same diagonals (and baby
    // steps: the same rotations, whose keys exist at higher levels) at the
    // user's lowest levels, keeping the scale.
    // The first transform reads the user's n-periodic slots as they are (not
    // the bootstrap's [re; im] repacking of a sparse EvalMod output): a real
    // input then leaves the imaginary coefficients at 0, as with full packing.
    const auto& q = context_->params().q_primes();
    std::vector<bootstrap::Diagonals> stc = bootstrap::slots_to_coeffs(slots_, config_.stc_levels, false);
    parts->first_stc = std::move(stc.front());
    for (std::size_t i = 1; i < stc.size(); ++i) {
      if (config_.stc_first) {
        parts->stc_rest.emplace_back(std::shared_ptr<const void>(), &stc_[i]);  // not owned: the member's
        continue;
      }
      const std::size_t level = config_.stc_levels - i;
      parts->stc_rest.push_back(std::make_shared<const LinearTransform>(
          context_, stc[i], level, static_cast<double>(q[level]), stc_.at(i).baby_steps(), stc_.at(i).evaluation()));
    }
    functional_ = std::move(parts);
  });
  return *functional_;
}

std::pair<std::shared_ptr<const LinearTransform>, bool> Bootstrapper::functional_first_stc(
    double encoding_scale) const {
  std::lock_guard<std::mutex> lock(functional_mutex_);
  if (auto it = functional_first_.find(encoding_scale); it != functional_first_.end()) return {it->second, true};
  // The scale is the input's metadata: a bounded number of transforms is kept
  // (one serves every power-of-two table size at one input scale), others are
  // built for the call and dropped, so inputs of ever new scales cannot grow
  // the memory without bound.
  auto made = std::make_shared<const LinearTransform>(context_, functional_parts().first_stc, config_.stc_levels,
                                                      encoding_scale, stc_.front().baby_steps(),
                                                      stc_.front().evaluation());
  const bool keep = functional_first_.size() < kMaxFirstTransforms;
  if (keep) functional_first_.emplace(encoding_scale, made);
  return {std::move(made), keep};
}

std::size_t Bootstrapper::functional_output_level(std::size_t table_size, bool flat) const {
  require(table_size >= 2 && table_size <= kMaxTable, kOp,
          "the table needs 2 to " + std::to_string(kMaxTable) + " entries, got " + std::to_string(table_size));
  require(!flat || std::has_single_bit(table_size), kOp,
          "a flat table needs a power-of-two size (its correction reads sin(2 pi x) as Im z^p, z squared log2 p "
          "times), got " + std::to_string(table_size));
  const std::size_t depth = ceil_log2(table_size / 2 + 1) + (flat ? 1 : 0);
  const std::size_t exp_end = functional_parts().exp_end_level;
  require(exp_end >= depth + 1, kOp,
          "a table of " + std::to_string(table_size) + (flat ? " entries, flat," : " entries") + " needs " +
              std::to_string(depth + 1) + " levels after the exponential (at level " + std::to_string(exp_end) +
              "), its polynomial's and one that lands the scale; use a smaller table or a longer chain");
  return std::min(exp_end - depth - 1, context_->user_max_level());
}

Ciphertext Bootstrapper::functional_bootstrap(const Evaluator& ev, const Ciphertext& ct, const RelinKey& relin,
                                              const BootstrapKeys& keys, const std::vector<double>& table,
                                              BootstrapTimings* timings, bool flat) const {
  return std::move(
      functional_bootstrap(ev, ct, relin, keys, std::vector<std::vector<double>>{table}, timings, flat).front());
}

std::vector<Ciphertext> Bootstrapper::functional_bootstrap(const Evaluator& ev, const Ciphertext& ct,
                                                           const RelinKey& relin, const BootstrapKeys& keys,
                                                           const std::vector<std::vector<double>>& tables,
                                                           BootstrapTimings* timings, bool flat) const {
  require(!ct.is_complex(), kOp,
          "the slots must hold real integers (this ciphertext holds complex values: look up both parts with "
          "functional_bootstrap_pair)");
  return functional_circuit(ev, ct, relin, keys, tables, timings, false, flat);
}

std::pair<std::vector<Ciphertext>, std::vector<Ciphertext>> Bootstrapper::functional_bootstrap_pair(
    const Evaluator& ev, const Ciphertext& ct, const RelinKey& relin, const BootstrapKeys& keys,
    const std::vector<std::vector<double>>& tables, BootstrapTimings* timings, bool flat) const {
  std::vector<Ciphertext> both = functional_circuit(ev, ct, relin, keys, tables, timings, true, flat);
  std::vector<Ciphertext> imaginary(std::make_move_iterator(both.begin() + static_cast<long>(tables.size())),
                                    std::make_move_iterator(both.end()));
  both.erase(both.begin() + static_cast<long>(tables.size()), both.end());
  return {std::move(both), std::move(imaginary)};
}

std::vector<Ciphertext> Bootstrapper::functional_circuit(const Evaluator& ev, const Ciphertext& ct,
                                                         const RelinKey& relin, const BootstrapKeys& keys,
                                                         const std::vector<std::vector<double>>& tables,
                                                         BootstrapTimings* timings, bool imaginary_too,
                                                         bool flat) const {
  const OpLabel label(kOp);
  require(!tables.empty(), kOp, "needs at least one table");
  require(ev.context()->fingerprint() == context_->fingerprint(), kOp,
          "the evaluator belongs to a different context (parameter fingerprint mismatch)");
  require(ct.fingerprint() == context_->fingerprint(), kOp,
          "the ciphertext comes from a different context (parameter fingerprint mismatch)");
  require(ct.size() == 2, kOp, "needs a size-2 ciphertext (relinearize first), got size " + std::to_string(ct.size()));
  check_keys(keys, kOp);
  const std::size_t p = tables.front().size(), out_level = functional_output_level(p, flat);
  for (const auto& table : tables) {
    require(table.size() == p, kOp,
            "the tables read one input modulo one p: sizes " + std::to_string(p) + " and " +
                std::to_string(table.size()) + " differ");
    for (double v : table) require(std::isfinite(v), kOp, "the table's values must be finite");
  }
  const std::size_t floor = functional_input_level_min();
  require(ct.level() >= floor, kOp,
          "SlotsToCoeffs runs first, on levels " + std::to_string(floor) + " .. 1, so the input must be at level " +
              std::to_string(floor) + " or above; this one is at level " + std::to_string(ct.level()));
  const FunctionalParts& parts = functional_parts();
  const Device device = ct.device();
  const detail::BootstrapOps ops{*this, ev, relin, keys, timings, device};

  // 1. SlotsToCoeffs, its output's scale (hence every coefficient's) made
  // q_0 / p per unit of m: the factor c = q_0 / (p scale) is an exact integer
  // product by 2^k (no level) and the first transform's diagonals encoded at
  // q_l c / 2^k: every power-of-two table size then shares one transform (a
  // new encoding scale builds a new one), and the encodings stay below 2^64
  // (at q_l c, up to 2^100, one takes 18 ms instead of 8 at N = 2^16).
  const auto& q = context_->params().q_primes();
  const double q0 = static_cast<double>(q[0]);
  Ciphertext x = ct.level() > floor ? ev.mod_switch(ct, floor) : ct.clone();
  double factor = q0 / (static_cast<double>(p) * x.scale());
  if (factor >= 2.0) {
    const int k = std::min(62, static_cast<int>(std::floor(std::log2(factor))));
    x = ev.multiply_integer(x, std::int64_t{1} << k);
    factor = std::ldexp(factor, -k);
  }
  const double first_scale = static_cast<double>(q[floor]) * factor;
  // A scale far above q_0 / p (an unrescaled product, a division through the
  // scale) would leave the first transform's diagonals too few bits.
  require(first_scale >= 0x1p30, kOp,
          "the input's scale 2^" + std::to_string(std::log2(ct.scale())) + " is too large for a table of " +
              std::to_string(p) + " entries: a lookup reads the slots at q_0 / p = 2^" +
              std::to_string(std::log2(q0 / static_cast<double>(p))) + " per unit and needs the scale at most 2^" +
              std::to_string(std::log2(q0 / static_cast<double>(p) * static_cast<double>(q[floor]) / 0x1p30)) +
              " (rescale it first)");
  const auto [first, cached] = functional_first_stc(first_scale);
  // A transform the cache did not keep is used once, on its own device copy.
  std::optional<LinearTransform> moved;
  if (!cached && first->device() != device) moved.emplace(first->to(device));
  const LinearTransform& first_on_device = cached ? resident_on(*first, device) : moved ? *moved : *first;
  x = ev.linear_transform(x, first_on_device, keys.galois, true);
  for (const auto& lt : parts.stc_rest) x = ev.linear_transform(x, resident_on(*lt, device), keys.galois, true);
  ops.end_phase(BootstrapPhase::slots_to_coeffs);

  // 2. ModRaise, the trace (sparse packing), CoeffsToSlots, as in a
  // bootstrap (detail::raise_to_slots): y = t / (K q_0).
  x = detail::raise_to_slots(ops, *this, x);
  const std::size_t slots = context_->slots();
  // The real part's coefficients (and, for a pair, the imaginary part's).
  // Sparse, CoeffsToSlots leaves each half in the first n of every 2n slots
  // and zeros after them: one rotation by n fills the zeros, so the table
  // reads an n-periodic vector and its result repeats as the input did.
  const Ciphertext conj = ev.conjugate(x, keys.galois);
  std::vector<Ciphertext> ys;
  ys.push_back(ev.add(x, conj));
  if (imaginary_too) ys.push_back(ev.multiply_by_i(ev.sub(x, conj), true));
  for (Ciphertext& y : ys) {
    if (2 * slots_ <= slots) y = ev.add(y, ev.rotate(y, -static_cast<long long>(slots_), keys.galois));
    y = ev.rescale(y);
  }
  ops.end_phase(BootstrapPhase::coeffs_to_slots);

  // 3. z = exp(2 pi i K y / 2^r), squared r times. Every power of z from here
  // on lands on a chain of scales with s(l)^2 / q_l = s(l - 1), so the
  // squarings and D's powers keep their scales near the primes they are
  // divided by (the chain's primes differ in size: EvalMod's, then
  // SlotsToCoeffs', then the user's). The chain ends on D's landing scale,
  // 2^32 below target * q_(out + 1): large enough that D's coefficients,
  // encoded at landing * q / (a power's scale), keep 2^30 of resolution
  // against the powers computed among EvalMod's large primes, and small
  // enough that the final adjustment (one level) multiplies by a constant of
  // 2^32 and lands on the canonical scale exactly.
  const std::size_t r = config_.double_angles, exp_end = parts.exp_end_level;
  const std::size_t lut_level = exp_end - ceil_log2(p / 2 + 1);
  const double target = context_->scale_at(out_level);
  const double landing = std::ldexp(target * static_cast<double>(q[out_level + 1]), -32);
  std::vector<double> chain(exp_end + r + 1, landing);
  for (std::size_t level = lut_level + 1; level < chain.size(); ++level)
    chain[level] = std::sqrt(chain[level - 1] * static_cast<double>(q[level]));
  std::vector<TablePolynomial> ds, es;
  std::vector<Polynomial> polynomials, corrections;
  std::vector<bool> corrects;  // per table: whether its curve needs the flat correction
  for (const auto& table : tables) {
    ds.push_back(table_polynomial(table));
    polynomials.emplace_back(Basis::monomial, ds.back().re);
    if (!all_zero(ds.back().im)) polynomials.emplace_back(Basis::monomial, ds.back().im);
    if (!flat) continue;
    es.push_back(table_polynomial(flat_correction_table(ds.back(), p)));
    corrects.push_back(!all_zero(es.back().re) || !all_zero(es.back().im));
    if (!corrects.back()) continue;
    corrections.emplace_back(Basis::monomial, es.back().re);
    if (!all_zero(es.back().im)) corrections.emplace_back(Basis::monomial, es.back().im);
  }
  // Flat: sin(2 pi x) = Im z^p lands with D at lut_level on the scale
  // `landing`; E lands there on a scale that puts their product, a level
  // below, at target * q_(lut_level - 1) / 2^32, which one level takes to
  // the target as D's is.
  const double correction_landing =
      flat ? std::ldexp(target * static_cast<double>(q[lut_level - 1]) * static_cast<double>(q[lut_level]) / landing,
                        -32)
           : 0.0;
  std::vector<Ciphertext> outs;
  for (const Ciphertext& y : ys) {
    std::vector<Ciphertext> cs = ev.evaluate_polynomials(y, {parts.cos, parts.sin}, relin, chain[exp_end + r]);
    Ciphertext z = ev.add(cs[0], ev.multiply_by_i(cs[1]));
    for (std::size_t step = 0; step < r; ++step) z = ev.relinearize_rescale(ev.square(z), relin);

    // 4. Re D(z) for each table, all on the one set of z's powers, then onto
    // the output level's canonical scale.
    std::vector<Ciphertext> evaluated = ev.evaluate_polynomials(z, polynomials, relin, landing);
    std::vector<Ciphertext> corrected;
    std::optional<Ciphertext> sine;  // 2 sin(2 pi x) = -i (z^p - conj z^p)
    if (!corrections.empty()) {
      // E on its own powers of z: one landing scale serves D's and another E's.
      corrected = ev.evaluate_polynomials(z, corrections, relin, correction_landing);
      Ciphertext zp = z.clone();
      for (std::size_t power = 1; power < p; power *= 2) zp = ev.relinearize_rescale(ev.square(zp), relin);
      sine = ev.multiply_by_i(ev.sub(zp, ev.conjugate(zp, keys.galois)), true);
    }
    std::size_t next = 0, next_correction = 0;
    for (std::size_t i = 0; i < ds.size(); ++i) {
      Ciphertext half = std::move(evaluated[next++]);
      if (!all_zero(ds[i].im)) half = ev.add(half, ev.multiply_by_i(evaluated[next++]));
      Ciphertext out = ev.adjust_to(ev.add(half, ev.conjugate(half, keys.galois)), out_level);
      if (flat && corrects[i]) {
        Ciphertext e = std::move(corrected[next_correction++]);
        if (!all_zero(es[i].im)) e = ev.add(e, ev.multiply_by_i(corrected[next_correction++]));
        e = ev.add(e, ev.conjugate(e, keys.galois));
        // A table whose slopes need fewer powers of z (its top coefficient 0) lands E higher, on the
        // same scale: dropping limbs brings it beside sin(2 pi x).
        if (e.level() > sine->level()) e = ev.mod_switch(e, sine->level());
        const Ciphertext slope = ev.relinearize_rescale(ev.multiply(*sine, e), relin);
        out = ev.sub(out, ev.adjust_to(slope, out_level));
      }
      outs.push_back(std::move(out));
    }
  }
  ops.end_phase(BootstrapPhase::eval_mod);

  // The error: z's (the fits' error doubled r times, and the input's error
  // e turned into a phase 2 pi e / p) times D's gain, beside the key
  // switches' noise. The input's error is read from its estimate.
  const RlweContext& rlwe = *context_->rlwe();
  const double half_log_n = 0.5 * std::log2(static_cast<double>(rlwe.n()));
  const double input_error = std::exp2(ct.noise_bits() - half_log_n) / ct.scale();
  const double fit_error = std::exp2(parts.fit_error_log2 + static_cast<double>(r));
  const double z_error = fit_error + 2.0 * std::numbers::pi * input_error / static_cast<double>(p);
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const TablePolynomial& d = ds[i % ds.size()];
    double error = d.gain * z_error;
    if (flat) {
      // z's own error through D, E and z^p (p times z's); the input's through
      // the flat curve's bend only: e^2 / 2 times a bound on |f''|, e taken at
      // four times the typical slot's (the quadratic term grows with the tail
      // far more than a linear one: the worst of 2^15 slots sits near 4 sigma).
      const TablePolynomial& e = es[i % es.size()];
      const double two_pi = 2.0 * std::numbers::pi;
      const double bend = d.bend + 2.0 * (two_pi * two_pi * e.size + 2.0 * two_pi * e.slope + e.bend);
      const double tail_error = 4.0 * input_error;
      error = fit_error * (d.gain + 2.0 * e.gain + 2.0 * static_cast<double>(p) * e.size) +
              0.5 * bend * tail_error * tail_error;
    }
    const double lut_error = std::log2(target) + std::log2(std::max(error, 1e-300)) + half_log_n;
    outs[i].set_noise_bits(
        noise::add(noise::add(lut_error, noise::key_switch(rlwe, out_level + 1)), noise::rounding(rlwe)));
    outs[i].set_complex(false);
    ev.restore_imaginary_noise(outs[i]);  // Re D(z) was taken exactly
  }
  return outs;
}

}  // namespace ringfire::ckks
