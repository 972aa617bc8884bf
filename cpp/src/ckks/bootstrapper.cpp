#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <numbers>
#include <string>

#include "bootstrap_circuit.h"
#include "bootstrap_ops.h"
#include "bootstrap_dft.h"
#include "ringfire/base/errors.h"
#include "ringfire/base/op_label.h"
#include "ringfire/ckks/bootstrap.h"
#include "ringfire/rlwe/key_switch.h"
#include "ringfire/rlwe/keygen.h"
#include "ringfire/rlwe/noise.h"
#include "ringfire/rlwe/sampling.h"

namespace ringfire::ckks {

namespace {

constexpr const char* kOp = "ckks.Bootstrapper";

std::size_t ceil_log2(std::size_t v) { return v <= 1 ? 0 : static_cast<std::size_t>(std::bit_width(v - 1)); }

// The top primes SlotsToCoeffs takes: none when it runs first, on the user's levels.
std::size_t reserved_stc_levels(const BootstrapConfig& cfg) { return cfg.stc_first ? 0 : cfg.stc_levels; }

void check_config(const Context& ctx, const BootstrapConfig& cfg, std::size_t slots) {
  const std::size_t half = ctx.slots();
  require(std::has_single_bit(slots) && slots >= 2 && slots <= half, kOp,
          "slots must be a power of two in [2, " + std::to_string(half) + "], got " + std::to_string(slots));
  require(std::isfinite(cfg.k) && cfg.k >= 1.0 && cfg.k <= 1024.0, kOp, "K must be in [1, 1024]");
  require(cfg.double_angles <= 8, kOp, "at most 8 double-angle steps");
  require(cfg.arcsine_degree == 0 || (cfg.arcsine_degree % 2 == 1 && cfg.arcsine_degree <= 15), kOp,
          "arcsine_degree must be 0 or odd and at most 15");
  require(cfg.log_message_ratio >= 0 && cfg.log_message_ratio <= 50, kOp, "log_message_ratio must be in [0, 50]");
  require(cfg.ephemeral_weight >= 1 && cfg.ephemeral_weight <= ctx.rlwe()->n(), kOp,
          "ephemeral_weight must be in [1, N]");
  const std::size_t stc_reserved = reserved_stc_levels(cfg);
  require(ctx.params().reserved_levels() >= cfg.cts_levels + stc_reserved + 1, kOp,
          "the parameters reserve " + std::to_string(ctx.params().reserved_levels()) +
              " levels; CoeffsToSlots (" + std::to_string(cfg.cts_levels) + ") and SlotsToCoeffs (" +
              std::to_string(stc_reserved) + ") leave none for EvalMod");
  if (!cfg.stc_first) return;
  require(slots == half, kOp,
          "SlotsToCoeffs first needs full packing (slots = " + std::to_string(half) + ", got " +
              std::to_string(slots) + "); sparse packing runs it last");
  require(cfg.arcsine_degree != 0, kOp,
          "SlotsToCoeffs first lands the result with EvalMod's arcsine: arcsine_degree must be odd, not 0");
  require(cfg.stc_levels >= 1 && ctx.user_max_level() > cfg.stc_levels, kOp,
          "SlotsToCoeffs first runs on the user's levels " + std::to_string(cfg.stc_levels) +
              " .. 1, so the user's chain needs more than " + std::to_string(cfg.stc_levels) + " levels, has " +
              std::to_string(ctx.user_max_level()));
}

// log2 of P(|I| >= K) for one coefficient, I the rounded sum of h + 1 values
// uniform in [-1/2, 1/2) (c_0 and the h terms of c_1 s'): the Irwin-Hall
// tail, 2 F(n/2 - K) with F(x) = sum_k (-1)^k C(n, k) (x - k)^n / n!.
double coefficient_failure_log2(std::size_t weight, double k) {
  const std::size_t n = weight + 1;
  const long double x = 0.5L * static_cast<long double>(n) - static_cast<long double>(k);
  if (x <= 0) return -INFINITY;
  long double sum = 0.0L, binom = 1.0L;
  for (std::size_t j = 0; static_cast<long double>(j) < x && j <= n; ++j) {
    sum += ((j % 2) ? -1.0L : 1.0L) * binom * std::pow(x - static_cast<long double>(j), static_cast<long double>(n));
    binom = binom * static_cast<long double>(n - j) / static_cast<long double>(j + 1);
  }
  const long double log_factorial = std::lgamma(static_cast<long double>(n) + 1.0L) / std::log(2.0L);
  return static_cast<double>(1.0L + std::log2(std::max(sum, 1e-4000L)) - log_factorial);
}

}  // namespace

std::pair<Polynomial, double> detail::fit_cosine(const BootstrapConfig& cfg, std::size_t levels, double phase) {
  require(levels >= 1, kOp, "EvalMod has no level left for its cosine after the double angles and the arcsine");
  const double k = cfg.k, r = std::ldexp(1.0, static_cast<int>(cfg.double_angles));
  const auto f = [&](double y) { return std::cos(2.0 * std::numbers::pi * (k * y - phase) / r); };
  const auto error_of = [&](const Polynomial& p) {
    double worst = 0.0;
    constexpr int kSamples = 4096;
    for (int i = 0; i <= kSamples; ++i) {
      const double y = -1.0 + 2.0 * i / kSamples;
      worst = std::max(worst, std::fabs(p(y) - f(y)));
    }
    return std::log2(std::max(worst, 1e-300));
  };
  const std::size_t max_degree = (std::size_t{1} << levels) - 1;
  if (cfg.cos_degree != 0) {
    require(cfg.cos_degree <= max_degree, kOp,
            "cos_degree " + std::to_string(cfg.cos_degree) + " needs " + std::to_string(ceil_log2(cfg.cos_degree + 1)) +
                " levels, EvalMod has " + std::to_string(levels) + " for it");
    Polynomial p = chebyshev_fit(f, -1.0, 1.0, cfg.cos_degree);
    const double e = error_of(p);
    return {std::move(p), e};
  }
  for (std::size_t d = std::max<std::size_t>(2, (max_degree + 1) / 4); d <= max_degree; ++d) {
    Polynomial p = chebyshev_fit(f, -1.0, 1.0, d);
    const double e = error_of(p);
    if (e <= -50.0 || d == max_degree) return {std::move(p), e};
  }
  throw_invalid(kOp, "internal: no cosine fit");
}

Bootstrapper::Bootstrapper(ContextPtr context, const BootstrapConfig& config)
    : context_(std::move(context)), config_(config), cos_(Basis::chebyshev, {0.0}) {
  require(context_ != nullptr, kOp, "needs a context");
  slots_ = config_.slots == 0 ? context_->slots() : config_.slots;
  check_config(*context_, config_, slots_);
  const std::size_t reserved = context_->params().reserved_levels();
  eval_mod_levels_ = reserved - config_.cts_levels - reserved_stc_levels(config_);
  const std::size_t arcsine_depth = config_.arcsine_degree ? ceil_log2(config_.arcsine_degree + 1) : 0;
  require(eval_mod_levels_ > config_.double_angles + arcsine_depth, kOp,
          "EvalMod gets " + std::to_string(eval_mod_levels_) + " levels, fewer than its " +
              std::to_string(config_.double_angles) + " double angles and " + std::to_string(arcsine_depth) +
              " arcsine levels plus a cosine");
  cos_levels_ = eval_mod_levels_ - config_.double_angles - arcsine_depth;
  auto [cos, error] = detail::fit_cosine(config_, cos_levels_, 0.25);
  cos_ = std::move(cos);
  cos_error_log2_ = error;
  // EvalMod runs at the scale of its own primes.
  const std::size_t eval_top = context_->max_level() - config_.cts_levels;
  eval_mod_scale_ = static_cast<double>(context_->params().q_primes()[eval_top]);
  build_transforms();
}

void Bootstrapper::build_transforms() {
  const std::size_t top = context_->max_level(), n = slots_, half = context_->slots();
  const bool sparse = 2 * n <= half;
  const auto& q = context_->params().q_primes();
  const double q0 = static_cast<double>(q[0]);
  // The slots after CoeffsToSlots: t / (K q_0), halved (re = v + conj v), and
  // divided by the trace's factor N / (2n).
  const double constant = eval_mod_scale_ / (2.0 * config_.k * q0) * static_cast<double>(2 * n) /
                          static_cast<double>(context_->rlwe()->n());
  std::vector<bootstrap::Diagonals> cts = bootstrap::coeffs_to_slots(n, config_.cts_levels, constant, sparse);
  for (std::size_t i = 0; i < cts.size(); ++i) {
    const std::size_t level = top - i;
    cts_.emplace_back(context_, cts[i], level, static_cast<double>(q[level]), 0, evaluation());
    for (long long step : cts_.back().rotations())
      rotation_levels_[step] = std::max(rotation_levels_[step], level);
  }
  for (std::size_t step = n; step < half; step *= 2) rotation_levels_[static_cast<long long>(step)] = top;
  // The conjugation and the repacking rotation act before the last CtS rescale.
  const std::size_t eval_top = top - config_.cts_levels;
  conjugation_level_ = eval_top + 1;
  if (sparse) {
    const long long right = static_cast<long long>(half - n);  // a right rotation by n
    rotation_levels_[right] = std::max(rotation_levels_[right], eval_top + 1);
  }
  // EvalMod's output scale, from the simulator running the circuit's EvalMod.
  const Simulator sim(context_);
  struct EvalModSim {
    using Value = SimCiphertext;
    const Simulator& sim;
    static std::size_t level(const Value& v) { return v.level; }
    static double scale(const Value& v) { return v.scale; }
    Value evaluate_polynomial(const Value& x, const Polynomial& p, double target) const {
      return sim.evaluate_polynomial(x, p, target);
    }
    Value square(const Value& x) const { return sim.square(x); }
    Value relinearize(const Value& x) const { return sim.relinearize(x); }
    Value rescale(const Value& x) const { return sim.rescale(x); }
    Value relinearize_rescale(const Value& x) const { return sim.relinearize_rescale(x); }
    Value weighted_sum(const std::vector<const Value*>& in, const std::vector<double>& v, std::size_t level,
                       double scale, double constant) const {
      return sim.weighted_sum(in, v, level, scale, constant);
    }
  };
  const SimCiphertext after = detail::eval_mod(EvalModSim{sim}, *this, SimCiphertext{eval_top, eval_mod_scale_, 2},
                                               std::ldexp(1.0, 20));
  stc_input_scale_ = after.scale;
  const std::size_t eval_mod_end = context_->user_max_level() + reserved_stc_levels(config_);
  require(after.level == eval_mod_end, kOp,
          "internal: EvalMod ends at level " + std::to_string(after.level) + ", expected " +
              std::to_string(eval_mod_end));
  std::vector<bootstrap::Diagonals> stc = bootstrap::slots_to_coeffs(n, config_.stc_levels, sparse);
  const double target = context_->scale_at(context_->user_max_level());
  const std::size_t stc_top = config_.stc_first ? config_.stc_levels : after.level;
  for (std::size_t i = 0; i < stc.size(); ++i) {
    const std::size_t level = stc_top - i;
    stc_.emplace_back(context_, stc[i], level, stc_scale(i, target), 0, evaluation());
    for (long long step : stc_.back().rotations()) rotation_levels_[step] = std::max(rotation_levels_[step], level);
  }
}

// SlotsToCoeffs brings EvalMod's scale down to the target in equal steps:
// transform i's diagonals are encoded at q_l * (canonical / input)^(1/S),
// and the last one exactly at what lands on `target` (the canonical scale of
// the output level unless a caller retargets it; only the last transform
// changes then). Keeping q_l until the last would leave that one a tiny
// encoding scale, and its rounding would dominate the error.
double Bootstrapper::stc_scale(std::size_t i, double target) const {
  const auto& q = context_->params().q_primes();
  // First, on the user's levels: each transform keeps the input's scale,
  // which ScaleDown then raises to the message ratio.
  if (config_.stc_first) return static_cast<double>(q[config_.stc_levels - i]);
  const std::size_t stc_top = context_->user_max_level() + config_.stc_levels, count = config_.stc_levels;
  const double canonical = context_->scale_at(output_level());
  const double step = std::pow(canonical / stc_input_scale_, 1.0 / static_cast<double>(count));
  double scale = stc_input_scale_;
  for (std::size_t j = 0; j < i; ++j) {
    const double q_j = static_cast<double>(q[stc_top - j]);
    scale = scale * (q_j * step) / q_j;  // as the transform computes it: (scale * p) / q
  }
  const double q_level = static_cast<double>(q[stc_top - i]);
  return i + 1 == count ? target * q_level / scale : q_level * step;
}

LinearTransform Bootstrapper::make_stc_last(double target_scale) const {
  const LinearTransform& last = stc_.back();
  const bool sparse = 2 * slots_ <= context_->slots();
  std::vector<bootstrap::Diagonals> stc = bootstrap::slots_to_coeffs(slots_, config_.stc_levels, sparse);
  return LinearTransform(context_, stc.back(), last.level(), stc_scale(stc_.size() - 1, target_scale),
                         last.baby_steps(), last.evaluation());
}

const LinearTransform& Bootstrapper::slots_to_coeffs(std::size_t i, double target_scale) const {
  const bool last = i + 1 == stc_.size();
  if (!last || config_.stc_first || same_scale(target_scale, context_->scale_at(output_level()))) return stc_.at(i);
  std::lock_guard<std::mutex> lock(retarget_mutex_);
  auto& slot = retargeted_[target_scale];
  if (!slot) slot = std::make_shared<const LinearTransform>(make_stc_last(target_scale));
  return *slot;
}

const LinearTransform& Bootstrapper::resident_on(const LinearTransform& transform, const Device& device) const {
  if (transform.device() == device) return transform;
  std::lock_guard<std::mutex> lock(resident_mutex_);
  auto& slot = resident_[{&transform, device.str()}];
  if (!slot) slot = std::make_unique<const LinearTransform>(transform.to(device));
  return *slot;
}

// ---- the circuit on ciphertexts and on placeholders -------------------------------

// The level-0 key switch into the ephemeral secret, run in the key's
// two-prime context: a's q_0 limb is that context's level-0 data.
Ciphertext detail::switch_to_sparse(const Ciphertext& a, const KeySwitchKey& key) {
  const char* op = "ckks.bootstrap";
  require(a.level() == 0 && key.level() == 0 && key.context()->n() == a.n() &&
              key.context()->params().q_primes()[0] == a.context()->params().q_primes()[0],
          op, "the key into the ephemeral secret does not match this ciphertext (level 0 over q_0)");
  Ciphertext out(a.context(), 2, 0, a.metadata(), a.device());
  key_switch(*key.context(), a.poly(1), 0, key, out.poly(0), out.poly(1));
  backend_for(a.device()).add(out.poly(0), a.poly(0), out.poly(0), 1, a.base());
  out.set_noise_bits(a.noise_bits());  // EvalMod sees the switch's noise as message; the output is re-estimated
  return out;
}

namespace {

struct SimOps {
  using Value = SimCiphertext;
  const Simulator& sim;

  static void end_phase(BootstrapPhase) {}

  static std::size_t level(const Value& v) { return v.level; }
  static double scale(const Value& v) { return v.scale; }
  static void set_scale(Value& v, double s) { v.scale = s; }
  static Value copy(const Value& v) { return v; }
  Value mod_switch(const Value& v, std::size_t level) const { return sim.mod_switch(v, level); }
  static Value multiply_integer(const Value& v, std::int64_t) { return v; }
  Value to_sparse(const Value& v) const { return sim.switch_key(v); }  // one key switch, at level 0
  Value from_sparse(const Value& v) const { return sim.switch_key(v); }
  Value mod_raise(const Value& v, std::size_t level) const { return sim.mod_raise(v, level); }
  Value rotate(const Value& v, long long) const { return sim.rotate(v); }
  Value add(const Value& a, const Value& b) const { return sim.add(a, b); }
  Value sub(const Value& a, const Value& b) const { return sim.add(a, b); }
  Value conjugate(const Value& v) const { return sim.rotate(v); }
  static Value multiply_by_i(const Value& v, bool) { return v; }
  Value linear_transform(const Value& v, const LinearTransform& lt, bool rescale) const {
    return sim.linear_transform(v, lt, rescale);
  }
  Value evaluate_polynomial(const Value& v, const Polynomial& p, double target) const {
    return sim.evaluate_polynomial(v, p, target);
  }
  Value square(const Value& v) const { return sim.square(v); }
  Value relinearize(const Value& v) const { return sim.relinearize(v); }
  Value rescale(const Value& v) const { return sim.rescale(v); }
  Value relinearize_rescale(const Value& v) const { return sim.relinearize_rescale(v); }
  Value weighted_sum(const std::vector<const Value*>& in, const std::vector<double>& v, std::size_t level,
                     double scale, double constant) const {
    return sim.weighted_sum(in, v, level, scale, constant);
  }
};

}  // namespace

void Bootstrapper::check_keys(const BootstrapKeys& keys, const char* op) const {
  // Keys made for the other rotation setting (chained_rotations) lack steps this
  // circuit takes: say so before a bootstrap's first minutes, not at its first missing key.
  for (const auto& [step, level] : rotation_levels_)
    require(keys.galois.has(context_->rlwe()->galois_element(step)), op,
            "the bootstrapping keys lack the rotation by " + std::to_string(step) + ": they were made for " +
                (config_.chained_rotations ? "hoisted" : "chained") +
                " rotations (bootstrap option chained_rotations), this context's bootstrap needs " +
                (config_.chained_rotations ? "chained" : "hoisted") + " ones; make them with this context's "
                "keygen(bootstrap=True)");
}

Ciphertext Bootstrapper::bootstrap(const Evaluator& ev, const Ciphertext& ct, const RelinKey& relin,
                                   const BootstrapKeys& keys, double target_scale, BootstrapTimings* timings,
                                   std::int64_t bound) const {
  const OpLabel label("ckks.bootstrap");
  require(bound >= 1 && bound <= (std::int64_t{1} << 30), "ckks.bootstrap",
          "bound must be an integer in [1, 2^30], got " + std::to_string(bound));
  require(ev.context()->fingerprint() == context_->fingerprint(), "ckks.bootstrap",
          "the evaluator belongs to a different context (parameter fingerprint mismatch)");
  require(ct.fingerprint() == context_->fingerprint(), "ckks.bootstrap",
          "the ciphertext comes from a different context (parameter fingerprint mismatch)");
  require(ct.size() == 2, "ckks.bootstrap",
          "needs a size-2 ciphertext (relinearize first), got size " + std::to_string(ct.size()));
  check_keys(keys, "ckks.bootstrap");
  const double target = target_scale == 0.0 ? context_->scale_at(output_level()) : target_scale;
  const detail::BootstrapOps ops{*this, ev, relin, keys, timings, ct.device()};
  Ciphertext out = [&] {
    if (bound == 1) return detail::run_bootstrap(ops, *this, ct, target);
    // The same message read at a scale `bound` times larger holds x / bound,
    // which ScaleDown brings under the message ratio like any |x| <= 1; the
    // integer product restores x on the target scale without using a level.
    const std::size_t floor = input_level_min();
    Ciphertext low = ct.level() > floor ? ev.mod_switch(ct, floor) : ct.clone();
    low.set_scale(ct.scale() * static_cast<double>(bound));
    return ev.multiply_integer(detail::run_bootstrap(ops, *this, low, target), bound);
  }();
  // The error is now EvalMod's approximation and the key switches' noise
  // (times the bound); the input's own error is carried in the slots (it is
  // message to EvalMod).
  const RlweContext& rlwe = *context_->rlwe();
  const double approx = std::log2(target) + cos_error_log2_ + 0.5 * std::log2(static_cast<double>(rlwe.n()));
  out.set_noise_bits(noise::add(noise::add(approx, noise::key_switch(rlwe, output_level() + 1)),
                                noise::rounding(rlwe)) +
                     std::log2(static_cast<double>(bound)));
  out.set_complex(ct.is_complex());
  return out;
}

SimCiphertext Bootstrapper::bootstrap(const Simulator& sim, const SimCiphertext& ct) const {
  return detail::run_bootstrap(SimOps{sim}, *this, ct, context_->scale_at(output_level()));
}

Ciphertext Bootstrapper::bootstrap_twice(const Evaluator& ev, const Ciphertext& ct, const RelinKey& relin,
                                         const BootstrapKeys& keys, int correction_bits) const {
  const OpLabel label("ckks.bootstrap");
  require(correction_bits >= 1 && correction_bits <= 40, "ckks.bootstrap",
          "correction_bits must be in [1, 40], got " + std::to_string(correction_bits));
  // x1 = x + e lands on the input's own scale, so the difference with the
  // input at the lowest input level is exact: -e.
  const std::size_t floor = input_level_min();
  detail::require_input_level(*this, ct.level());
  const Ciphertext low = ev.mod_switch(ct, floor);
  const Ciphertext first = bootstrap(ev, low, relin, keys, low.scale());
  Ciphertext error = ev.sub(low, ev.mod_switch(first, floor));
  // 2^c (-e), bootstrapped: -2^c e + e2; read at scale 2^c: -e + e2 / 2^c.
  error = ev.multiply_integer(error, std::int64_t{1} << correction_bits);
  Ciphertext correction = bootstrap(ev, error, relin, keys, low.scale());
  correction.set_scale(low.scale() * std::ldexp(1.0, correction_bits));
  // x + e - e + e2 / 2^c, at scale 2^c times the input's (exact integer weights).
  return ev.weighted_sum({&first, &correction}, {1.0, 1.0}, first.level(), correction.scale());
}

std::pair<Ciphertext, Ciphertext> Bootstrapper::bootstrap_pair(const Evaluator& ev, const Ciphertext& a,
                                                              const Ciphertext& b, const RelinKey& relin,
                                                              const BootstrapKeys& keys, std::int64_t bound) const {
  const OpLabel label("ckks.bootstrap");
  constexpr const char* op = "ckks.bootstrap_pair";
  require(a.level() == b.level() && same_scale(a.scale(), b.scale()), op,
          "the two ciphertexts must share level and scale (got levels " + std::to_string(a.level()) + " and " +
              std::to_string(b.level()) + ")");
  require(!a.is_complex() && !b.is_complex(), op, "both ciphertexts must hold real values (their imaginary "
                                                  "parts carry the other one)");
  Ciphertext z = ev.add(a, ev.multiply_by_i(b));
  z.set_complex(true);
  const double canonical = context_->scale_at(output_level());
  const Ciphertext out = bootstrap(ev, z, relin, keys, canonical / 2.0, nullptr, bound);
  const Ciphertext conj = ev.conjugate(out, keys.galois);
  // z + z̄ = 2 Re z and -i (z - z̄) = 2 Im z: read at twice the landing scale,
  // they are a and b on the canonical scale.
  Ciphertext re = ev.add(out, conj);
  Ciphertext im = ev.multiply_by_i(ev.sub(out, conj), true);
  // 2 Re z and 2 Im z hold up to twice out's error in their coefficients (one
  // bit), read at twice its scale: the same error in value. The split cancels
  // their imaginary parts' noise, which decryption measures: put it back.
  for (Ciphertext* c : {&re, &im}) {
    c->set_scale(canonical);
    c->set_complex(false);
    c->set_noise_bits(out.noise_bits() + 1.0);
    ev.restore_imaginary_noise(*c);
  }
  return {std::move(re), std::move(im)};
}

// ---- planning and keys ---------------------------------------------------------

BootstrapPlan Bootstrapper::plan() const {
  BootstrapPlan p;
  p.output_level = output_level();
  p.input_level_min = input_level_min();
  p.levels_consumed = config_.cts_levels + eval_mod_levels_ + config_.stc_levels;  // stc_first: on the user's
  p.cts_levels = config_.cts_levels;
  p.stc_levels = config_.stc_levels;
  p.eval_mod_levels = eval_mod_levels_;
  p.cos_degree = cos_.degree();
  p.arcsine_degree = config_.arcsine_degree;
  p.cos_fit_error_log2 = cos_error_log2_;
  const RlweContext& rlwe = *context_->rlwe();
  const std::size_t n = rlwe.n();
  for (const auto& [step, level] : rotation_levels_) p.key_bytes += rlwe.switch_key_bytes(level);
  // The key into the ephemeral secret: one digit over q_0 and p_0.
  p.key_bytes += rlwe.switch_key_bytes(conjugation_level_) + rlwe.switch_key_bytes(context_->max_level()) + 2 * 2 * n * 8;
  p.rotation_keys = rotation_levels_.size() + 1;
  for (const auto* group : {&cts_, &stc_})
    for (const LinearTransform& lt : *group) {
      p.diagonals += lt.diagonal_count();
      p.plaintext_bytes += static_cast<std::uint64_t>(lt.diagonal_count() * (lt.level() + 1) * n * 8);
    }
  p.failure_log2 = coefficient_failure_log2(config_.ephemeral_weight, config_.k) + std::log2(static_cast<double>(n));
  // The circuit on placeholders that hold blocks of a model of the host pool
  // (under its cache limit now): what the bootstrap adds to the process at its
  // peak, the input (the caller's) aside.
  Simulator sim(context_);
  sim.track_memory(host_pool().cache_limit());
  const std::size_t in = input_level_min();
  bootstrap(sim, SimCiphertext(in, context_->scale_at(in), 2));
  p.counts = sim.counts();
  p.temporary_bytes = sim.memory()->peak_held();
  p.temporary_in_use_bytes = sim.memory()->peak_in_use();
  return p;
}

RlweContextPtr encapsulation_context(const RlweContext& main) {
  const Parameters& params = main.params();
  ParameterLiteral lit;
  lit.scheme = params.scheme();
  lit.poly_degree = main.n();
  lit.q_primes = {params.q_primes()[0]};
  lit.p_primes = {params.p_primes()[0]};
  lit.dnum = 1;
  lit.scale_bits = params.scale_bits();
  lit.security = params.security() == 0 ? 128 : params.security();
  lit.insecure_no_security_check = params.security() == 0;  // a toy chain's encapsulation is a toy too
  return std::make_shared<const RlweContext>(Parameters(lit));
}

BootstrapKeys generate_bootstrap_keys(const Bootstrapper& b, const SecretKey& secret, Prng& prng) {
  const OpLabel op_label("rlwe.keygen");
  const RlweContextPtr& ctx = secret.context();
  require(ctx->fingerprint() == b.context()->fingerprint(), "ckks.bootstrap_keys",
          "the secret key belongs to a different context (parameter fingerprint mismatch)");
  std::vector<std::pair<u64, std::size_t>> wanted;
  for (const auto& [step, level] : b.rotation_levels()) wanted.emplace_back(ctx->galois_element(step), level);
  wanted.emplace_back(ctx->conjugation_element(), b.conjugation_level());
  GaloisKeys galois = generate_galois_keys_at_levels(secret, wanted, prng);
  // The ephemeral sparse secret lives only here: the key into it is made
  // modulo q_0 p_0 alone (encapsulation_context), the key back under the
  // main secret over the whole chain.
  std::vector<std::int8_t> sparse(ctx->n());
  sample_sparse_ternary(prng, sparse.data(), sparse.size(), b.config().ephemeral_weight);
  const RlweContextPtr small = encapsulation_context(*ctx);
  const SecretKey ephemeral_small(small, sparse), secret_small(small, secret.coefficients());
  KeySwitchKey to_sparse = generate_switch_key(ephemeral_small, secret_small.eval(), kToSparseSource, prng, 0);
  const SecretKey ephemeral(ctx, std::move(sparse));
  KeySwitchKey from_sparse = generate_switch_key(secret, ephemeral.eval(), kFromSparseSource, prng, ctx->max_level());
  BootstrapKeys keys{std::move(galois), std::move(to_sparse), std::move(from_sparse)};
  keys.set_expand_per_use(true);
  return keys;
}

}  // namespace ringfire::ckks
