#include "ringfire/ckks/evaluator.h"

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "ringfire/arith/modular.h"
#include "ringfire/arith/reduction.h"
#include "ringfire/base/errors.h"
#include "ringfire/base/device_copy.h"
#include "ringfire/base/op_label.h"
#include "ringfire/base/sha256.h"
#include "ringfire/rlwe/noise.h"
#include "ringfire/rlwe/prng.h"
#include "ringfire/rlwe/sampling.h"

namespace ringfire::ckks {

namespace {

std::string fmt_scale(double s) {
  char text[48];
  std::snprintf(text, sizeof text, "2^%.4f", std::log2(s));
  return text;
}

Backend& backend(const Ciphertext& c) { return backend_for(c.device()); }


double log2_modulus(const RnsBase& base) {
  double bits = 0.0;
  for (const Modulus& m : base.moduli()) bits += std::log2(static_cast<double>(m.value()));
  return bits;
}

// Noise of the operations (rlwe/noise.h). Where a product's error depends on
// the other operand's message m (e_a * m_b), ||m_b||_2 is bounded by its
// scale times the largest slot value, taken as 1: the estimates are those of
// data in [-1, 1] and grow with the data beyond that (decryption measures the
// actual noise of real data).

// a * b: m_a e_b + m_b e_a + e_a e_b.
double product_noise(const Ciphertext& a, const Ciphertext& b) {
  return noise::add(noise::add(noise::scale(b.noise_bits(), a.scale()), noise::scale(a.noise_bits(), b.scale())),
                    a.noise_bits() + b.noise_bits());
}

// a times a constant c encoded at `scale` (|round(c * scale)| ~ |c| scale):
// c e_a plus the constant's rounding (at most 1/2) times m_a, which an
// integer c * scale does not have (integer weights at a scale ratio of 1, as
// the polynomial evaluator's sums use them).
double constant_product_noise(const Ciphertext& a, double magnitude, double scale) {
  const double encoded = magnitude * scale;
  const double rounding = encoded == std::round(encoded) ? -std::numeric_limits<double>::infinity()
                                                         : std::log2(0.5 * a.scale());
  return noise::add(noise::scale(a.noise_bits(), encoded), rounding);
}

// A's metadata with another scale (a product's).
Metadata with_scale(const Metadata& meta, double scale) {
  Metadata out = meta;
  out.scale = scale;
  return out;
}

}  // namespace

namespace {

RlweContextPtr rlwe_of(const ContextPtr& context) {
  require(context != nullptr, "ckks.Evaluator", "needs a context");
  return context->rlwe();
}

}  // namespace

Evaluator::Evaluator(ContextPtr context) : RlweEvaluator(rlwe_of(context)), context_(std::move(context)) {}

void Evaluator::check_pair(const Ciphertext& a, const Ciphertext& b, const char* op) const {
  check_operand(a, op);
  check_operand(b, op);
  require(a.level() == b.level(), op,
          "level mismatch: " + std::to_string(a.level()) + " vs " + std::to_string(b.level()));
  require(a.device() == b.device(), op, [&] { return different_devices(a.device(), b.device()); });
}

void Evaluator::check_same_scale(double a, double b, const char* op) const {
  require(same_scale(a, b), op, "scale mismatch: " + fmt_scale(a) + " vs " + fmt_scale(b));
}

void Evaluator::check_plain(const Ciphertext& a, const Plaintext& p, const char* op, bool need_same_scale) const {
  check_operand(a, op);
  check_context(p.fingerprint(), op);
  require(p.form() == Form::eval, op, "the plaintext is in coefficient form: operations need evaluation form");
  require(a.level() == p.level(), op,
          "level mismatch: ciphertext " + std::to_string(a.level()) + " vs plaintext " + std::to_string(p.level()));
  if (need_same_scale)
    require(same_scale(a.scale(), p.scale()), op,
            "scale mismatch: ciphertext " + fmt_scale(a.scale()) + " vs plaintext " + fmt_scale(p.scale()));
}

void Evaluator::check_product_fits(double scale, std::size_t level, const char* op) const {
  const double q_bits = log2_modulus(*context_->rlwe()->level_base(level));
  require(std::log2(scale) + 1.0 < q_bits, op,
          "the result's scale " + fmt_scale(scale) + " does not fit the " + std::to_string(static_cast<int>(q_bits)) +
              "-bit modulus at level " + std::to_string(level) +
              ": out of levels (rescale first, or choose more coeff_bits)");
}

// ---- additive ----------------------------------------------------------------

namespace {

// The noise a plaintext adds: its encoding rounding (at most 1/2 for a constant).
double plain_noise(const RlweContext& ctx, const Plaintext& p) {
  return p.is_scalar() ? -1.0 : noise::encoding(ctx);
}

}  // namespace

void Evaluator::add_inplace(Ciphertext& a, const Ciphertext& b) const {
  constexpr const char* op = "ckks.add";
  const OpLabel label(op);
  check_pair(a, b, op);
  check_same_scale(a.scale(), b.scale(), op);
  accumulate(a, b, false);
}

Ciphertext Evaluator::add(const Ciphertext& a, const Ciphertext& b) const {
  const OpLabel label("ckks.add");  // the copy is part of the operation
  Ciphertext out = a.clone();
  add_inplace(out, b);
  return out;
}

void Evaluator::sub_inplace(Ciphertext& a, const Ciphertext& b) const {
  constexpr const char* op = "ckks.sub";
  const OpLabel label(op);
  check_pair(a, b, op);
  check_same_scale(a.scale(), b.scale(), op);
  accumulate(a, b, true);
}

Ciphertext Evaluator::sub(const Ciphertext& a, const Ciphertext& b) const {
  const OpLabel label("ckks.sub");  // the copy is part of the operation
  Ciphertext out = a.clone();
  sub_inplace(out, b);
  return out;
}

void Evaluator::negate_inplace(Ciphertext& a) const {
  const OpLabel label("ckks.negate");
  check_operand(a, "ckks.negate");
  backend(a).negate(a.data(), a.data(), a.size(), a.base());
  a.set_seed(std::nullopt);
}

Ciphertext Evaluator::negate(const Ciphertext& a) const {
  const OpLabel label("ckks.negate");  // the copy is part of the operation
  Ciphertext out = a.clone();
  negate_inplace(out);
  return out;
}

void Evaluator::add_plain_inplace(Ciphertext& a, const Plaintext& p) const {
  const OpLabel label("ckks.add_plain");
  check_plain(a, p, "ckks.add_plain", true);
  if (p.is_scalar()) backend(a).add_scalar(a.poly(0), p.scalar_residues().data(), a.poly(0), 1, a.base());
  else backend(a).add(a.poly(0), PlaintextOn(p, a.device()).data(), a.poly(0), 1, a.base());
  a.set_noise_bits(noise::add(a.noise_bits(), plain_noise(*context_->rlwe(), p)));
  a.set_complex(a.is_complex() || p.is_complex());
}

Ciphertext Evaluator::add_plain(const Ciphertext& a, const Plaintext& p) const {
  const OpLabel label("ckks.add_plain");  // the copy is part of the operation
  Ciphertext out = a.clone();
  add_plain_inplace(out, p);
  return out;
}

void Evaluator::sub_plain_inplace(Ciphertext& a, const Plaintext& p) const {
  const OpLabel label("ckks.sub_plain");
  check_plain(a, p, "ckks.sub_plain", true);
  backend(a).sub(a.poly(0), PlaintextOn(p, a.device()).data(), a.poly(0), 1, a.base());
  a.set_noise_bits(noise::add(a.noise_bits(), plain_noise(*context_->rlwe(), p)));
  a.set_complex(a.is_complex() || p.is_complex());
}

Ciphertext Evaluator::sub_plain(const Ciphertext& a, const Plaintext& p) const {
  const OpLabel label("ckks.sub_plain");  // the copy is part of the operation
  Ciphertext out = a.clone();
  sub_plain_inplace(out, p);
  return out;
}

void Evaluator::add_scalar_inplace(Ciphertext& a, Complex value) const {
  const OpLabel label("ckks.add_scalar");
  check_operand(a, "ckks.add_scalar");
  const Encoder& enc = context_->encoder();
  if (value.imag() == 0.0) {
    const std::vector<u64> r = enc.scalar_residues(value.real(), a.level(), a.scale(), "ckks.add_scalar");
    backend(a).add_scalar(a.poly(0), r.data(), a.poly(0), 1, a.base());
    a.set_noise_bits(noise::add(a.noise_bits(), -1.0));  // rounding the constant: at most 1/2
  } else {
    add_plain_inplace(a, enc.encode_scalar(value, a.level(), a.scale()));
  }
}

Ciphertext Evaluator::add_scalar(const Ciphertext& a, Complex value) const {
  const OpLabel label("ckks.add_scalar");  // the copy is part of the operation
  Ciphertext out = a.clone();
  add_scalar_inplace(out, value);
  return out;
}

// ---- multiplicative ------------------------------------------------------------

Ciphertext Evaluator::multiply(const Ciphertext& a, const Ciphertext& b) const {
  constexpr const char* op = "ckks.multiply";
  const OpLabel label(op);
  check_pair(a, b, op);
  require(a.size() == 2 && b.size() == 2, op,
          "needs two size-2 ciphertexts (relinearize first), got sizes " + std::to_string(a.size()) + " and " +
              std::to_string(b.size()));
  const double scale = a.scale() * b.scale();
  check_product_fits(scale, a.level(), op);
  Ciphertext out(a.context(), 3, a.level(), with_scale(a.metadata(), scale), a.device(), kUninitialized);
  Backend& be = backend(a);
  const RnsBase& base = a.base();
  be.tensor(a.poly(0), a.poly(1), b.poly(0), b.poly(1), out.poly(0), out.poly(1), out.poly(2), base);
  out.set_noise_bits(product_noise(a, b));
  out.set_complex(a.is_complex() || b.is_complex());
  return out;
}

Ciphertext Evaluator::square(const Ciphertext& a) const {
  constexpr const char* op = "ckks.square";
  const OpLabel label(op);
  check_operand(a, op);
  require(a.size() == 2, op, "needs a size-2 ciphertext (relinearize first), got size " + std::to_string(a.size()));
  const double scale = a.scale() * a.scale();
  check_product_fits(scale, a.level(), op);
  Ciphertext out(a.context(), 3, a.level(), with_scale(a.metadata(), scale), a.device(), kUninitialized);
  Backend& be = backend(a);
  const RnsBase& base = a.base();
  be.tensor(a.poly(0), a.poly(1), a.poly(0), a.poly(1), out.poly(0), out.poly(1), out.poly(2), base);
  out.set_noise_bits(product_noise(a, a));
  return out;
}

void Evaluator::multiply_plain_inplace(Ciphertext& a, const Plaintext& p) const {
  constexpr const char* op = "ckks.multiply_plain";
  const OpLabel label(op);
  check_plain(a, p, op, false);
  const double scale = a.scale() * p.scale();
  check_product_fits(scale, a.level(), op);
  Backend& be = backend(a);
  if (p.is_scalar()) {
    be.multiply_scalar(a.data(), p.scalar_residues().data(), a.data(), a.size(), a.base());
    a.set_noise_bits(constant_product_noise(a, std::abs(p.scalar_value()), p.scale()));
  } else {
    const PlaintextOn on(p, a.device());
    for (std::size_t i = 0; i < a.size(); ++i) be.multiply(a.poly(i), on.get().data(), a.poly(i), 1, a.base());
    // e_a times the plaintext (slots taken as at most 1), plus its encoding rounding times m_a.
    a.set_noise_bits(noise::add(noise::scale(a.noise_bits(), p.scale()),
                                noise::scale(noise::encoding(*context_->rlwe()), a.scale())));
  }
  a.set_scale(scale);
  a.set_seed(std::nullopt);
  a.set_complex(a.is_complex() || p.is_complex());
}

Ciphertext Evaluator::multiply_plain(const Ciphertext& a, const Plaintext& p) const {
  const OpLabel label("ckks.multiply_plain");  // the copy is part of the operation
  Ciphertext out = a.clone();
  multiply_plain_inplace(out, p);
  return out;
}

void Evaluator::multiply_scalar_inplace(Ciphertext& a, Complex value, double scale) const {
  constexpr const char* op = "ckks.multiply_scalar";
  const OpLabel label(op);
  check_operand(a, op);
  const Encoder& enc = context_->encoder();
  if (value.imag() != 0.0) {
    multiply_plain_inplace(a, enc.encode_scalar(value, a.level(), scale));
    return;
  }
  const double product = a.scale() * scale;
  check_product_fits(product, a.level(), op);
  const std::vector<u64> r = enc.scalar_residues(value.real(), a.level(), scale, op);
  backend(a).multiply_scalar(a.data(), r.data(), a.data(), a.size(), a.base());
  a.set_noise_bits(constant_product_noise(a, std::fabs(value.real()), scale));
  a.set_scale(product);
  a.set_seed(std::nullopt);
}

Ciphertext Evaluator::multiply_scalar(const Ciphertext& a, Complex value, double scale) const {
  const OpLabel label("ckks.multiply_scalar");  // the copy is part of the operation
  Ciphertext out = a.clone();
  multiply_scalar_inplace(out, value, scale);
  return out;
}

Ciphertext Evaluator::multiply_by_i(const Ciphertext& a, bool negative) const {
  constexpr const char* op = "ckks.multiply_by_i";
  const OpLabel label(op);
  check_operand(a, op);
  // encode_scalar(+-i) at scale 1 is exactly the monomial +-X^(N/2).
  const Plaintext monomial = context_->encoder().encode_scalar(Complex(0.0, negative ? -1.0 : 1.0), a.level(), 1.0);
  const PlaintextOn on(monomial, a.device());
  Ciphertext out(a.context(), a.size(), a.level(), a.metadata(), a.device());
  for (std::size_t i = 0; i < a.size(); ++i) backend(a).multiply(a.poly(i), on.get().data(), out.poly(i), 1, a.base());
  out.set_noise_bits(a.noise_bits());
  out.set_complex(true);
  return out;
}

void Evaluator::multiply_integer_inplace(Ciphertext& a, std::int64_t value) const {
  const OpLabel label("ckks.multiply_integer");
  check_operand(a, "ckks.multiply_integer");
  const RnsBase& base = a.base();
  std::vector<u64> r(base.size());
  const u64 magnitude = value < 0 ? 0 - static_cast<u64>(value) : static_cast<u64>(value);
  for (std::size_t i = 0; i < base.size(); ++i) {
    const u64 q = base.modulus(i).value();
    const u64 m = magnitude % q;
    r[i] = (value < 0 && m != 0) ? q - m : m;
  }
  backend(a).multiply_scalar(a.data(), r.data(), a.data(), a.size(), base);
  a.set_seed(std::nullopt);
  a.set_noise_bits(noise::scale(a.noise_bits(), std::fabs(static_cast<double>(value))));
}

Ciphertext Evaluator::multiply_integer(const Ciphertext& a, std::int64_t value) const {
  const OpLabel label("ckks.multiply_integer");  // the copy is part of the operation
  Ciphertext out = a.clone();
  multiply_integer_inplace(out, value);
  return out;
}

Ciphertext Evaluator::divide_by_integer(const Ciphertext& a, std::int64_t value) const {
  constexpr const char* op = "ckks.divide_by_integer";
  const OpLabel label(op);
  check_operand(a, op);
  require(value >= 1, op, "divides by a positive integer, got " + std::to_string(value));
  const double scale = a.scale() * static_cast<double>(value);
  check_product_fits(scale, a.level(), op);
  Ciphertext out = a.clone();
  out.set_scale(scale);
  return out;
}

Ciphertext Evaluator::linear_combination(const std::vector<const Ciphertext*>& inputs,
                                         const std::vector<double>& weights, double scale) const {
  return std::move(linear_combinations(inputs, {weights}, scale).front());
}

std::vector<Ciphertext> Evaluator::linear_combinations(const std::vector<const Ciphertext*>& inputs,
                                                       const std::vector<std::vector<double>>& weights,
                                                       double scale) const {
  constexpr const char* op = "ckks.linear_combination";
  const OpLabel label(op);
  require(!inputs.empty(), op, "needs at least one input");
  require(!weights.empty(), op, "needs at least one output's weights");
  for (const std::vector<double>& row : weights)
    require(inputs.size() == row.size(), op,
            std::to_string(inputs.size()) + " inputs but " + std::to_string(row.size()) + " weights");
  const Ciphertext& first = *inputs.front();
  for (const Ciphertext* c : inputs) {
    require(c != nullptr, op, "null input");
    check_pair(first, *c, op);
    require(c->size() == first.size(), op, "inputs differ in size");
    check_same_scale(first.scale(), c->scale(), op);
  }
  const double product = first.scale() * scale;
  check_product_fits(product, first.level(), op);
  const Encoder& enc = context_->encoder();
  const std::size_t limbs = first.level() + 1, terms = inputs.size(), outputs = weights.size();
  std::vector<u64> residues(outputs * terms * limbs);
  for (std::size_t o = 0; o < outputs; ++o)
    for (std::size_t t = 0; t < terms; ++t) {
      const std::vector<u64> r = enc.scalar_residues(weights[o][t], first.level(), scale, op);
      std::copy(r.begin(), r.end(), residues.begin() + (o * terms + t) * limbs);
    }
  std::vector<const u64*> pointers(terms);
  bool any_complex = false;
  for (std::size_t t = 0; t < terms; ++t) {
    pointers[t] = inputs[t]->data();
    any_complex = any_complex || inputs[t]->is_complex();
  }
  std::vector<Ciphertext> out;
  std::vector<u64*> targets;
  out.reserve(outputs);
  for (std::size_t o = 0; o < outputs; ++o) {
    out.emplace_back(first.context(), first.size(), first.level(), with_scale(first.metadata(), product),
                     first.device());
    targets.push_back(out.back().data());
  }
  backend(first).linear_combinations(pointers.data(), residues.data(), terms, targets.data(), outputs, first.size(),
                                     first.base());
  for (std::size_t o = 0; o < outputs; ++o) {
    double noise_bits = -std::numeric_limits<double>::infinity();
    for (std::size_t t = 0; t < terms; ++t)
      noise_bits = noise::add(noise_bits, constant_product_noise(*inputs[t], std::fabs(weights[o][t]), scale));
    out[o].set_noise_bits(noise_bits);
    out[o].set_complex(any_complex);
  }
  return out;
}

Ciphertext Evaluator::weighted_sum(const std::vector<const Ciphertext*>& inputs, const std::vector<double>& values,
                                   std::size_t level, double scale, double constant) const {
  constexpr const char* op = "ckks.weighted_sum";
  const OpLabel label(op);
  require(!inputs.empty(), op, "needs at least one input");
  require(inputs.size() == values.size(), op,
          std::to_string(inputs.size()) + " inputs but " + std::to_string(values.size()) + " values");
  require(std::isfinite(scale) && scale > 0.0, op, "scale must be positive and finite");
  require(std::isfinite(constant), op, "the constant must be finite");
  std::size_t size = 0;
  for (const Ciphertext* c : inputs) {
    require(c != nullptr, op, "null input");
    check_operand(*c, op);
    require(c->level() >= level, op,
            "an input at level " + std::to_string(c->level()) + " cannot contribute at level " +
                std::to_string(level));
    require(c->device() == inputs.front()->device(), op,
            [&] { return different_devices(inputs.front()->device(), c->device()); });
    size = std::max(size, c->size());
  }
  check_product_fits(scale, level, op);
  const Encoder& enc = context_->encoder();
  const std::size_t limbs = level + 1, terms = inputs.size();
  std::vector<u64> residues(terms * limbs);
  double noise_bits = -std::numeric_limits<double>::infinity();
  bool any_complex = false;
  for (std::size_t t = 0; t < terms; ++t) {
    const double ratio = scale / inputs[t]->scale(), weight = values[t] * ratio;
    require(ratio >= 0x1p20 || weight == std::round(weight), op,
            "input " + std::to_string(t) + " (level " + std::to_string(inputs[t]->level()) + ", scale " +
                fmt_scale(inputs[t]->scale()) + ", summed at level " + std::to_string(level) + " with scale " +
                fmt_scale(scale) + "): the scale ratio " + fmt_scale(ratio) +
                " is too small to encode the value " + std::to_string(values[t]) +
                " precisely (raise the target scale or use integer values)");
    const std::vector<u64> r = enc.scalar_residues(values[t], level, ratio, op);
    std::copy(r.begin(), r.end(), residues.begin() + t * limbs);
    noise_bits = noise::add(noise_bits, constant_product_noise(*inputs[t], std::fabs(values[t]), ratio));
    any_complex = any_complex || inputs[t]->is_complex();
  }
  Metadata meta = inputs.front()->metadata();
  meta.scale = scale;
  meta.complex = any_complex;
  Ciphertext out(inputs.front()->context(), size, level, meta, inputs.front()->device());
  Backend& be = backend(out);
  // Polynomial by polynomial: the inputs' limb strides differ with their levels.
  std::vector<const u64*> pointers;
  std::vector<u64> weights;
  for (std::size_t p = 0; p < size; ++p) {
    pointers.clear();
    weights.clear();
    for (std::size_t t = 0; t < terms; ++t) {
      if (inputs[t]->size() <= p) continue;
      pointers.push_back(inputs[t]->poly(p));
      weights.insert(weights.end(), residues.begin() + t * limbs, residues.begin() + (t + 1) * limbs);
    }
    be.linear_combination(pointers.data(), weights.data(), pointers.size(), out.poly(p), 1, out.base());
  }
  if (constant != 0.0) {
    const std::vector<u64> c = enc.scalar_residues(constant, level, scale, op);
    be.add_scalar(out.poly(0), c.data(), out.poly(0), 1, out.base());
    noise_bits = noise::add(noise_bits, -1.0);  // rounding the constant: at most 1/2
  }
  out.set_noise_bits(noise_bits);
  return out;
}

// ---- key switching -------------------------------------------------------------

Metadata Evaluator::rescaled_metadata(const Ciphertext& a, const char* op) const {
  check_operand(a, op);
  require(a.level() >= 1, op, "the ciphertext is at level 0: no prime left to rescale by");
  const double q_last = static_cast<double>(context_->params().q_primes()[a.level()]);
  return with_scale(a.metadata(), a.scale() / q_last);
}

Ciphertext Evaluator::rescale(const Ciphertext& a) const {
  constexpr const char* op = "ckks.rescale";
  const OpLabel label(op);
  return divide_by_last_prime(a, rescaled_metadata(a, op), op);
}

void Evaluator::rescale_inplace(Ciphertext& a) const { a = rescale(a); }

Ciphertext Evaluator::relinearize_rescale(const Ciphertext& a, const RelinKey& key) const {
  constexpr const char* op = "ckks.relinearize_rescale";
  const OpLabel label(op);
  return relinearize_and_divide(a, key, rescaled_metadata(a, op), op);
}

Ciphertext Evaluator::adjust_to(const Ciphertext& a, std::size_t level) const {
  constexpr const char* op = "ckks.adjust_to";
  const OpLabel label(op);
  check_operand(a, op);
  const double target = context_->scale_at(level);
  if (level <= a.level() && same_scale(a.scale(), target)) {
    Ciphertext out = mod_switch(a, level);
    out.set_scale(target);  // within 2^-30 relative: the same scale
    return out;
  }
  require(level < a.level(), op,
          "moving to level " + std::to_string(level) + " with scale " + fmt_scale(target) +
              " needs a level to spend, but the ciphertext is at level " + std::to_string(a.level()));
  const ScaleCorrection plan = plan_scale_correction(a.scale(), a.level(), level, target, context_->params().q_primes());
  require(!plan.rescales_alone || same_scale(plan.delta, 1.0), op,
          "the scale " + fmt_scale(a.scale()) + " is too far from level " + std::to_string(level) + "'s " +
              fmt_scale(target) + " to correct with the levels available");
  Ciphertext out = a.clone();
  if (!plan.rescales_alone) {
    mod_switch_inplace(out, plan.at);
    multiply_scalar_inplace(out, Complex(1.0, 0.0), plan.delta);
  }
  while (out.level() > level) rescale_inplace(out);
  out.set_scale(target);  // exact up to round(delta) / delta - 1 <= 0.5 / min_correction_constant(target)
  return out;
}

// ---- conjugation -------------------------------------------------------------

Ciphertext Evaluator::conjugate(const Ciphertext& a, const GaloisKeys& keys) const {
  const OpLabel label("ckks.conjugate");
  return apply_galois(a, context_->rlwe()->conjugation_element(), keys);
}

void Evaluator::restore_imaginary_noise(Ciphertext& a) const {
  constexpr const char* op = "ckks.restore_imaginary_noise";
  const OpLabel label(op);
  check_operand(a, op);
  require(!a.is_complex(), op, "applies to real ciphertexts (a complex one's imaginary parts are data)");
  // Decryption measures ||e|| as sqrt(2 sum Im^2 / (N/2)) times the scale: a
  // per-slot deviation of ||e|| / (scale sqrt 2) reads as the estimate.
  const double sigma = std::exp2(a.noise_bits()) / a.scale() / std::sqrt(2.0);
  if (!(sigma > 0.0) || !std::isfinite(sigma)) return;
  const std::size_t n = a.n(), slots = n / 2;
  std::vector<u64> first_limb(n);  // c_0's first limb, downloaded alone from a device
  copy_between(first_limb.data(), Device::cpu(), a.poly(0), a.device(), n * sizeof(u64));
  Prng prng = Prng::from_seed(sha256(first_limb.data(), n * sizeof(u64)));
  std::vector<double> draw(slots);
  sample_wide_gaussian(prng, draw.data(), slots, sigma);
  std::vector<Complex> values(slots);
  for (std::size_t j = 0; j < slots; ++j) values[j] = Complex(0.0, draw[j]);
  const double noise_bits = a.noise_bits();
  add_plain_inplace(a, context_->encoder().encode(values.data(), slots, a.level(), a.scale()));
  a.set_complex(false);          // the slots' values are still the real ones
  a.set_noise_bits(noise_bits);  // the real parts' error is unchanged
}

}  // namespace ringfire::ckks
