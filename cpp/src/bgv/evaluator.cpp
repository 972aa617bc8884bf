#include "ringfire/bgv/evaluator.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "ringfire/bgv/noise.h"
#include "tensor.h"
#include "ringfire/arith/modular.h"
#include "ringfire/base/errors.h"
#include "ringfire/base/op_label.h"
#include "ringfire/bgv/plaintext.h"
#include "ringfire/rlwe/noise.h"

namespace ringfire::bgv {

namespace {

Backend& backend(const Ciphertext& c) { return backend_for(c.device()); }

RlweContextPtr rlwe_of(const ContextPtr& context) {
  require(context != nullptr, "bgv.Evaluator", "needs a context");
  return context->rlwe();
}


// The centred representative of v in [0, t), as a signed value.
std::int64_t centred(u64 v, u64 t) {
  return v <= t / 2 ? static_cast<std::int64_t>(v) : -static_cast<std::int64_t>(t - v);
}

Metadata with_correction_of(const Metadata& meta, u64 correction) {
  Metadata out = meta;
  out.correction = correction;
  return out;
}

// A short vector (x, y) of the lattice {(x, y) : x = c y (mod t)} by Gauss
// reduction of the basis (t, 0), (c, 1): |x|, |y| about sqrt(t).
std::pair<std::int64_t, std::int64_t> short_pair(u64 c, u64 t) {
  __int128 ux = static_cast<__int128>(t), uy = 0, vx = static_cast<__int128>(c), vy = 1;
  auto norm = [](__int128 x, __int128 y) { return x * x + y * y; };
  if (norm(ux, uy) < norm(vx, vy)) std::swap(ux, vx), std::swap(uy, vy);
  while (true) {
    const __int128 nv = norm(vx, vy);
    if (nv == 0) break;
    // u -= round(<u, v> / <v, v>) v
    const __int128 dot = ux * vx + uy * vy;
    __int128 k = dot / nv;
    const __int128 rem = dot - k * nv;
    if (2 * rem > nv) ++k;
    else if (2 * rem < -nv) --k;
    ux -= k * vx;
    uy -= k * vy;
    if (norm(ux, uy) >= nv) break;
    std::swap(ux, vx), std::swap(uy, vy);
  }
  return {static_cast<std::int64_t>(vx), static_cast<std::int64_t>(vy)};
}

}  // namespace

void tensor_polys(Backend& be, const u64* a0, const u64* a1, const u64* b0, const u64* b1, u64* out, bool square,
                  const RnsBase& base) {
  const std::size_t words = base.size() * base.n();
  be.tensor(a0, a1, square ? a0 : b0, square ? a1 : b1, out, out + words, out + 2 * words, base);
}

Evaluator::Evaluator(ContextPtr context) : RlweEvaluator(rlwe_of(context)), context_(std::move(context)) {}

const char* Evaluator::name(Name op) const {
  static constexpr const char* kNames[2][17] = {
      {"bgv.add", "bgv.sub", "bgv.negate", "bgv.add_plain", "bgv.sub_plain", "bgv.add_integer", "bgv.multiply",
       "bgv.square", "bgv.multiply_scale_invariant", "bgv.square_scale_invariant", "bgv.multiply_plain",
       "bgv.multiply_integer", "bgv.mod_reduce", "bgv.match_corrections", "bgv.swap_rows", "bgv.linear_combination",
       "bgv.multiply_plain_sum"},
      {"bfv.add", "bfv.sub", "bfv.negate", "bfv.add_plain", "bfv.sub_plain", "bfv.add_integer", "bfv.multiply_bgv",
       "bfv.square_bgv", "bfv.multiply", "bfv.square", "bfv.multiply_plain", "bfv.multiply_integer",
       "bfv.mod_reduce", "bfv.match_corrections", "bfv.swap_rows", "bfv.linear_combination",
       "bfv.multiply_plain_sum"},
  };
  return kNames[context_->scheme() == Scheme::bfv ? 1 : 0][static_cast<int>(op)];
}

void Evaluator::check_pair(const Ciphertext& a, const Ciphertext& b, const char* op, bool same_correction) const {
  check_operand(a, op);
  check_operand(b, op);
  require(a.level() == b.level(), op,
          "level mismatch: " + std::to_string(a.level()) + " vs " + std::to_string(b.level()));
  require(a.device() == b.device(), op, [&] { return different_devices(a.device(), b.device()); });
  if (same_correction)
    require(a.metadata().correction == b.metadata().correction, op,
            "correction mismatch: " + std::to_string(a.metadata().correction) + " vs " +
                std::to_string(b.metadata().correction) +
                " (the operands went through different modulus switches or products; match_corrections aligns "
                "them)");
}

void Evaluator::check_plain(const Ciphertext& a, const Plaintext& p, const char* op, bool same_correction) const {
  check_operand(a, op);
  check_context(p.fingerprint(), op);
  require(p.form() == Form::eval, op, "the plaintext is in coefficient form: operations need evaluation form");
  require(a.level() == p.level(), op,
          "level mismatch: ciphertext " + std::to_string(a.level()) + " vs plaintext " + std::to_string(p.level()));
  if (same_correction)
    require(a.metadata().correction == p.metadata().correction, op,
            "correction mismatch: ciphertext " + std::to_string(a.metadata().correction) + " vs plaintext " +
                std::to_string(p.metadata().correction) + " (encode the plaintext with the ciphertext's correction)");
}

// ---- sums --------------------------------------------------------------------------

void Evaluator::add_inplace(Ciphertext& a, const Ciphertext& b) const {
  const char* op = name(Name::add);
  const OpLabel label(op);
  check_pair(a, b, op, true);
  accumulate(a, b, false);
}

Ciphertext Evaluator::add(const Ciphertext& a, const Ciphertext& b) const {
  const OpLabel label(name(Name::add));
  Ciphertext out = a.clone();
  add_inplace(out, b);
  return out;
}

void Evaluator::sub_inplace(Ciphertext& a, const Ciphertext& b) const {
  const char* op = name(Name::sub);
  const OpLabel label(op);
  check_pair(a, b, op, true);
  accumulate(a, b, true);
}

Ciphertext Evaluator::sub(const Ciphertext& a, const Ciphertext& b) const {
  const OpLabel label(name(Name::sub));
  Ciphertext out = a.clone();
  sub_inplace(out, b);
  return out;
}

void Evaluator::negate_inplace(Ciphertext& a) const {
  const char* op = name(Name::negate);
  const OpLabel label(op);
  check_operand(a, op);
  backend(a).negate(a.data(), a.data(), a.size(), a.base());
  a.set_seed(std::nullopt);
}

Ciphertext Evaluator::negate(const Ciphertext& a) const {
  const OpLabel label(name(Name::negate));
  Ciphertext out = a.clone();
  negate_inplace(out);
  return out;
}

void Evaluator::add_plain_inplace(Ciphertext& a, const Plaintext& p) const {
  const char* op = name(Name::add_plain);
  const OpLabel label(op);
  check_plain(a, p, op, true);
  backend(a).add(a.poly(0), PlaintextOn(p, a.device()).data(), a.poly(0), 1, a.base());
  a.set_seed(std::nullopt);
}

Ciphertext Evaluator::add_plain(const Ciphertext& a, const Plaintext& p) const {
  const OpLabel label(name(Name::add_plain));
  Ciphertext out = a.clone();
  add_plain_inplace(out, p);
  return out;
}

void Evaluator::sub_plain_inplace(Ciphertext& a, const Plaintext& p) const {
  const char* op = name(Name::sub_plain);
  const OpLabel label(op);
  check_plain(a, p, op, true);
  backend(a).sub(a.poly(0), PlaintextOn(p, a.device()).data(), a.poly(0), 1, a.base());
  a.set_seed(std::nullopt);
}

Ciphertext Evaluator::sub_plain(const Ciphertext& a, const Plaintext& p) const {
  const OpLabel label(name(Name::sub_plain));
  Ciphertext out = a.clone();
  sub_plain_inplace(out, p);
  return out;
}

void Evaluator::add_integer_inplace(Ciphertext& a, std::int64_t value) const {
  const char* op = name(Name::add_integer);
  const OpLabel label(op);
  check_operand(a, op);
  const std::vector<u64> r = constant_residues(*context_, reduce_signed(value, context_->plain_modulus()),
                                               a.level(), a.metadata().correction);
  backend(a).add_scalar(a.poly(0), r.data(), a.poly(0), 1, a.base());
  a.set_seed(std::nullopt);
}

Ciphertext Evaluator::add_integer(const Ciphertext& a, std::int64_t value) const {
  const OpLabel label(name(Name::add_integer));
  Ciphertext out = a.clone();
  add_integer_inplace(out, value);
  return out;
}

// ---- products --------------------------------------------------------------------

Ciphertext Evaluator::tensor(const Ciphertext& a, const Ciphertext& b, const char* op) const {
  check_pair(a, b, op, false);
  require(a.size() == 2 && b.size() == 2, op,
          "needs size-2 ciphertexts (relinearize first), got sizes " + std::to_string(a.size()) + " and " +
              std::to_string(b.size()));
  const Modulus& t = context_->plain_modulus();
  Ciphertext out(a.context(), 3, a.level(),
                 with_correction_of(a.metadata(), mul_mod(a.metadata().correction, b.metadata().correction, t)),
                 a.device(), kUninitialized);
  tensor_polys(backend(a), a.poly(0), a.poly(1), b.poly(0), b.poly(1), out.data(), &a == &b, a.base());
  return out;
}

Ciphertext Evaluator::multiply(const Ciphertext& a, const Ciphertext& b) const {
  const char* op = name(&a == &b ? Name::square : Name::multiply);
  const OpLabel label(op);
  Ciphertext out = tensor(a, b, op);
  // (m_a t^-1 + e_a)(m_b t^-1 + e_b) has m_a m_b t^-2: one factor t restores the form.
  backend(out).multiply_scalar(out.data(), context_->t_mod_q().data(), out.data(), 3, out.base());
  out.set_noise_bits(noise_estimate::product(*context_, a.noise_bits(), b.noise_bits()));
  return out;
}

Ciphertext Evaluator::square(const Ciphertext& a) const { return multiply(a, a); }

Ciphertext Evaluator::multiply_scale_invariant(const Ciphertext& a, const Ciphertext& b) const {
  const char* op = name(&a == &b ? Name::square_si : Name::multiply_si);
  const OpLabel label(op);
  Ciphertext out = scale_invariant_tensor(a, b, op);
  out.set_noise_bits(noise_estimate::scale_invariant_product(*context_, a.noise_bits(), b.noise_bits()));
  return out;
}

Ciphertext Evaluator::square_scale_invariant(const Ciphertext& a) const { return multiply_scale_invariant(a, a); }

void Evaluator::multiply_plain_inplace(Ciphertext& a, const Plaintext& p) const {
  const char* op = name(Name::multiply_plain);
  const OpLabel label(op);
  check_plain(a, p, op, false);
  Backend& be = backend(a);
  const PlaintextOn on(p, a.device());
  for (std::size_t i = 0; i < a.size(); ++i) be.multiply(a.poly(i), on.get().data(), a.poly(i), 1, a.base());
  // p = [m_p sigma_p]_t t^-1: times t, it is the centred message itself.
  be.multiply_scalar(a.data(), context_->t_mod_q().data(), a.data(), a.size(), a.base());
  a.set_correction(mul_mod(a.metadata().correction, p.metadata().correction, context_->plain_modulus()));
  a.set_seed(std::nullopt);
  a.set_noise_bits(a.noise_bits() + noise_estimate::message_bits(*context_));
}

Ciphertext Evaluator::multiply_plain(const Ciphertext& a, const Plaintext& p) const {
  const OpLabel label(name(Name::multiply_plain));
  Ciphertext out = a.clone();
  multiply_plain_inplace(out, p);
  return out;
}

Ciphertext Evaluator::multiply_plain_sum(const std::vector<const Ciphertext*>& inputs,
                                         const std::vector<const Plaintext*>& plains) const {
  const char* op = name(Name::multiply_plain_sum);
  const OpLabel label(op);
  check_terms(inputs, plains.size(), "plaintexts", op);
  const Ciphertext& first = *inputs.front();
  const Modulus& t = context_->plain_modulus();
  u64 correction = 0;
  double noise_bits = -std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    require(plains[k] != nullptr, op, "null plaintext");
    check_plain(*inputs[k], *plains[k], op, false);
    const u64 c = mul_mod(inputs[k]->metadata().correction, plains[k]->metadata().correction, t);
    require(k == 0 || c == correction, op, [&] {
      return "term " + std::to_string(k) + "'s correction " + std::to_string(c) + " differs from the first's " +
             std::to_string(correction) + " (encode each plaintext for its input's correction)";
    });
    correction = c;
    noise_bits = noise::add(noise_bits, inputs[k]->noise_bits());
  }
  Backend& be = backend(first);
  Ciphertext out(first.context(), first.size(), first.level(), with_correction_of(first.metadata(), correction),
                 first.device());
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const PlaintextOn on(*plains[k], first.device());
    for (std::size_t i = 0; i < first.size(); ++i) {
      if (k == 0)
        be.multiply(inputs[k]->poly(i), on.get().data(), out.poly(i), 1, first.base());
      else
        be.multiply_add(inputs[k]->poly(i), on.get().data(), out.poly(i), 1, first.base());
    }
  }
  // Each p = [m_p sigma_p]_t t^-1: the sum times t holds the centred messages' products.
  be.multiply_scalar(out.data(), context_->t_mod_q().data(), out.data(), out.size(), out.base());
  out.set_noise_bits(noise_bits + noise_estimate::message_bits(*context_));
  return out;
}

void Evaluator::multiply_by_residue(Ciphertext& a, u64 value_mod_t) const {
  const u64 t = context_->plain_modulus().value();
  const RnsBase& base = a.base();
  std::vector<u64> r(base.size());
  for (std::size_t i = 0; i < base.size(); ++i) r[i] = lift_centred(value_mod_t, t, base.modulus(i).value());
  backend(a).multiply_scalar(a.data(), r.data(), a.data(), a.size(), base);
  a.set_seed(std::nullopt);
  const double magnitude = std::fabs(static_cast<double>(centred(value_mod_t, t)));
  a.set_noise_bits(noise::scale(a.noise_bits(), magnitude));
}

void Evaluator::multiply_integer_inplace(Ciphertext& a, std::int64_t value) const {
  const char* op = name(Name::multiply_integer);
  const OpLabel label(op);
  check_operand(a, op);
  multiply_by_residue(a, reduce_signed(value, context_->plain_modulus()));
}

Ciphertext Evaluator::multiply_integer(const Ciphertext& a, std::int64_t value) const {
  const OpLabel label(name(Name::multiply_integer));
  Ciphertext out = a.clone();
  multiply_integer_inplace(out, value);
  return out;
}

Ciphertext Evaluator::linear_combination(const std::vector<const Ciphertext*>& inputs,
                                         const std::vector<std::int64_t>& weights) const {
  const char* op = name(Name::linear_combination);
  const OpLabel label(op);
  check_terms(inputs, weights.size(), "weights", op);
  const Ciphertext& first = *inputs.front();
  const Modulus& t = context_->plain_modulus();
  const u64 correction = first.metadata().correction;
  const RnsBase& base = first.base();
  const std::size_t limbs = base.size(), terms = inputs.size();
  std::vector<u64> residues(terms * limbs);
  std::vector<const u64*> pointers(terms);
  double noise_bits = -std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < terms; ++k) {
    // The weight with the first input's correction over this one's, centred mod t.
    const u64 ratio = mul_mod(correction, inv_mod(inputs[k]->metadata().correction, t.value()), t);
    const u64 w = mul_mod(reduce_signed(weights[k], t), ratio, t);
    for (std::size_t i = 0; i < limbs; ++i) residues[k * limbs + i] = lift_centred(w, t.value(), base.modulus(i).value());
    pointers[k] = inputs[k]->data();
    noise_bits = noise::add(noise_bits,
                            noise::scale(inputs[k]->noise_bits(), std::fabs(static_cast<double>(centred(w, t.value())))));
  }
  Ciphertext out(first.context(), first.size(), first.level(), first.metadata(), first.device());
  backend(first).linear_combination(pointers.data(), residues.data(), terms, out.data(), first.size(), base);
  out.set_noise_bits(noise_bits);
  return out;
}

void Evaluator::check_terms(const std::vector<const Ciphertext*>& inputs, std::size_t count, const char* what,
                            const char* op) const {
  require(!inputs.empty(), op, "needs at least one input");
  require(inputs.size() == count, op, [&] {
    return std::to_string(inputs.size()) + " inputs but " + std::to_string(count) + " " + what;
  });
  for (const Ciphertext* c : inputs) require(c != nullptr, op, "null input");
  const Ciphertext& first = *inputs.front();
  for (const Ciphertext* c : inputs) {
    check_pair(first, *c, op, false);
    require(c->size() == first.size(), op, [&] {
      return "inputs differ in size: " + std::to_string(first.size()) + " vs " + std::to_string(c->size()) +
             " (relinearize them first)";
    });
  }
}

// ---- modulus switching and corrections ------------------------------------------------

Ciphertext Evaluator::mod_reduce(const Ciphertext& a) const {
  const char* op = name(Name::mod_reduce);
  const OpLabel label(op);
  check_operand(a, op);
  require(a.level() >= 1, op, "the ciphertext is at level 0: no prime left to switch away");
  return divided_to(a, a.level() - 1, op);
}

void Evaluator::mod_reduce_inplace(Ciphertext& a) const { a = mod_reduce(a); }

Ciphertext Evaluator::mod_reduce_to(const Ciphertext& a, std::size_t level) const {
  const char* op = name(Name::mod_reduce);
  require(level <= a.level(), op,
          "cannot switch a ciphertext from level " + std::to_string(a.level()) + " up to " + std::to_string(level));
  if (level == a.level()) return a.clone();
  check_operand(a, op);
  const OpLabel label(op);
  return divided_to(a, level, op);
}

Ciphertext Evaluator::divided_to(const Ciphertext& a, std::size_t level, const char* op) const {
  // All the primes in one rounding; the message's factor is each prime's, multiplied.
  u64 correction = a.metadata().correction;
  for (std::size_t dropped = a.level(); dropped > level; --dropped)
    correction = mul_mod(correction, context_->drop_factor(dropped), context_->plain_modulus());
  return divide_by_last_primes(a, level, with_correction_of(a.metadata(), correction), op);
}

Ciphertext Evaluator::with_correction(const Ciphertext& a, u64 correction) const {
  const char* op = name(Name::match);
  const OpLabel label(op);
  check_operand(a, op);
  const Modulus& t = context_->plain_modulus();
  u64 inverse = 0;
  require(correction >= 1 && correction < t.value() && try_inv_mod(correction, t.value(), inverse), op,
          "the correction " + std::to_string(correction) + " must be invertible modulo t=" + std::to_string(t.value()));
  const u64 ratio = mul_mod(correction, inv_mod(a.metadata().correction, t.value()), t);
  Ciphertext out = a.clone();
  multiply_by_residue(out, ratio);
  out.set_correction(correction);
  return out;
}

std::pair<Ciphertext, Ciphertext> Evaluator::match_corrections(const Ciphertext& a, const Ciphertext& b) const {
  const char* op = name(Name::match);
  const OpLabel label(op);
  check_pair(a, b, op, false);
  const u64 sa = a.metadata().correction, sb = b.metadata().correction;
  if (sa == sb) return {a.clone(), b.clone()};
  const Modulus& t = context_->plain_modulus();
  const u64 tv = t.value();
  // r_a sigma_a = r_b sigma_b (mod t): r_a = c r_b with c = sigma_b / sigma_a.
  const u64 c = mul_mod(sb, inv_mod(sa, tv), t);
  auto [ra, rb] = short_pair(c, tv);
  auto log_abs = [](std::int64_t v) { return std::log2(std::fabs(static_cast<double>(v))); };
  u64 inverse = 0;
  const u64 ra_mod = reduce_signed(ra, t), rb_mod = reduce_signed(rb, t);
  const bool lattice_ok = ra != 0 && rb != 0 && try_inv_mod(ra_mod, tv, inverse) && try_inv_mod(rb_mod, tv, inverse);
  // Noise of each way: both scaled by the short pair, or only one side scaled by the ratio.
  const double both = lattice_ok ? noise::add(a.noise_bits() + log_abs(ra), b.noise_bits() + log_abs(rb))
                                 : std::numeric_limits<double>::infinity();
  const std::int64_t to_b = centred(mul_mod(sa, inv_mod(sb, tv), t), tv);  // b times sigma_a / sigma_b
  const std::int64_t to_a = centred(c, tv);                                // a times sigma_b / sigma_a
  const double only_b = noise::add(a.noise_bits(), b.noise_bits() + log_abs(to_b));
  const double only_a = noise::add(a.noise_bits() + log_abs(to_a), b.noise_bits());
  if (only_b <= both && only_b <= only_a) return {a.clone(), with_correction(b, sa)};
  if (only_a <= both) return {with_correction(a, sb), b.clone()};
  const u64 target = mul_mod(ra_mod, sa, t);
  return {with_correction(a, target), with_correction(b, target)};
}

Ciphertext Evaluator::swap_rows(const Ciphertext& a, const GaloisKeys& keys) const {
  const OpLabel label(name(Name::swap_rows));
  return apply_galois(a, context_->rlwe()->conjugation_element(), keys);
}

}  // namespace ringfire::bgv
