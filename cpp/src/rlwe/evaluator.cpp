#include "ringfire/rlwe/evaluator.h"

#include <cmath>
#include <deque>

#include "ringfire/base/errors.h"
#include "ringfire/base/op_label.h"
#include "ringfire/rlwe/key_switch.h"
#include "ringfire/rlwe/noise.h"

namespace ringfire {

namespace {

Backend& backend(const Ciphertext& c) { return backend_for(c.device()); }

// A key switch at the ciphertext's level adds its noise (rlwe/noise.h).
double key_switched_noise(const Ciphertext& a) {
  return noise::add(a.noise_bits(), noise::key_switch(*a.context(), a.level()));
}

void add_key_switch_noise(Ciphertext& out, const Ciphertext& a) { out.set_noise_bits(key_switched_noise(a)); }

// Dividing by q (exact rounding) shrinks the noise by q and adds a rounding
// term.
double divided_noise(const RlweContext& ctx, double noise_bits, u64 q, std::size_t size = 2) {
  return noise::add(noise_bits - std::log2(static_cast<double>(q)), noise::rounding(ctx, size));
}

}  // namespace

RlweEvaluator::RlweEvaluator(RlweContextPtr context) : rlwe_(std::move(context)) {
  require(rlwe_ != nullptr, "rlwe.Evaluator", "needs a context");
}

const char* RlweEvaluator::op_name(Op op) const {
  static constexpr const char* kNames[3][6] = {
      {"ckks.relinearize", "ckks.rotate", "ckks.rotate_many", "ckks.mod_switch", "ckks.mod_raise", "ckks.switch_key"},
      {"bgv.relinearize", "bgv.rotate", "bgv.rotate_many", "bgv.mod_switch", "bgv.mod_raise", "bgv.switch_key"},
      {"bfv.relinearize", "bfv.rotate", "bfv.rotate_many", "bfv.mod_switch", "bfv.mod_raise", "bfv.switch_key"},
  };
  return kNames[static_cast<int>(rlwe_->params().scheme()) - 1][static_cast<int>(op)];
}

void RlweEvaluator::check_context(std::uint64_t fingerprint, const char* op) const {
  require(fingerprint == rlwe_->fingerprint(), op,
          "operand comes from a different context (parameter fingerprint mismatch)");
}

void RlweEvaluator::check_operand(const Ciphertext& a, const char* op) const {
  check_context(a.fingerprint(), op);
  require(a.form() == Form::eval, op, "the ciphertext is in coefficient form: operations need evaluation form");
}

void RlweEvaluator::check_key_device(const Device& key, const Ciphertext& a, const char* op) {
  require(key == a.device(), op,
          "the key lives on '" + key.str() + "' but the ciphertext on '" + a.device().str() +
              "': move the keys with .to(...) (they are uploaded once and cached)");
}

void RlweEvaluator::accumulate(Ciphertext& a, const Ciphertext& b, bool subtract) {
  if (b.size() > a.size()) {
    Ciphertext grown(a.context(), b.size(), a.level(), a.metadata(), a.device());
    backend(a).copy(a.data(), grown.data(), a.size() * a.poly_words());
    grown.set_noise_bits(a.noise_bits());
    a = std::move(grown);
  }
  if (subtract) backend(a).sub(a.data(), b.data(), a.data(), b.size(), a.base());
  else backend(a).add(a.data(), b.data(), a.data(), b.size(), a.base());
  a.set_seed(std::nullopt);
  a.set_noise_bits(noise::add(a.noise_bits(), b.noise_bits()));
  a.set_complex(a.is_complex() || b.is_complex());
}

// ---- relinearization ------------------------------------------------------------

void RlweEvaluator::check_relinearization(const Ciphertext& a, const RelinKey& key, const char* op) const {
  check_operand(a, op);
  check_context(key.fingerprint(), op);
  require(a.size() == 3, op, "needs a size-3 ciphertext, got size " + std::to_string(a.size()));
  check_key_device(key.device(), a, op);
}

Ciphertext RlweEvaluator::relinearize(const Ciphertext& a, const RelinKey& key) const {
  const char* op = op_name(Op::relinearize);
  const OpLabel label(op);
  check_relinearization(a, key, op);
  Ciphertext out(a.context(), 2, a.level(), a.metadata(), a.device(), kUninitialized);
  key_switch(*rlwe_, a.poly(2), a.level(), key.key(), out.poly(0), out.poly(1));
  backend(a).add(out.data(), a.data(), out.data(), 2, a.base());
  add_key_switch_noise(out, a);
  return out;
}

void RlweEvaluator::relinearize_inplace(Ciphertext& a, const RelinKey& key) const { a = relinearize(a, key); }

// ---- dropping limbs ------------------------------------------------------------

Ciphertext RlweEvaluator::mod_switch(const Ciphertext& a, std::size_t level) const {
  const char* op = op_name(Op::mod_switch);
  const OpLabel label(op);
  check_operand(a, op);
  require(level <= a.level(), op,
          "cannot raise a ciphertext from level " + std::to_string(a.level()) + " to " + std::to_string(level));
  Ciphertext out(a.context(), a.size(), level, a.metadata(), a.device(), kUninitialized);
  for (std::size_t p = 0; p < a.size(); ++p) backend(a).copy(a.poly(p), out.poly(p), out.poly_words());
  if (level == a.level()) out.set_seed(a.seed());
  out.set_noise_bits(a.noise_bits());
  return out;
}

void RlweEvaluator::mod_switch_inplace(Ciphertext& a, std::size_t level) const { a = mod_switch(a, level); }

Plaintext RlweEvaluator::mod_switch(const Plaintext& p, std::size_t level) const {
  const char* op = op_name(Op::mod_switch);
  const OpLabel label(op);
  check_context(p.fingerprint(), op);
  require(level <= p.level(), op,
          "cannot raise a plaintext from level " + std::to_string(p.level()) + " to " + std::to_string(level));
  Plaintext out(p.context(), level, p.metadata(), p.device());
  backend_for(p.device()).copy(p.data(), out.data(), out.poly_words());
  if (p.is_scalar())
    out.set_scalar(std::vector<u64>(p.scalar_residues().begin(), p.scalar_residues().begin() + level + 1),
                   p.scalar_value());
  return out;
}

Ciphertext RlweEvaluator::divide_by_last_prime(const Ciphertext& a, const Metadata& meta, const char* op) const {
  require(a.level() >= 1, op, "the ciphertext is at level 0: no prime left to divide by");
  return divide_by_last_primes(a, a.level() - 1, meta, op);
}

Ciphertext RlweEvaluator::divide_by_last_primes(const Ciphertext& a, std::size_t level, const Metadata& meta,
                                                const char* op) const {
  require(level < a.level(), op, "cannot divide a ciphertext at level " + std::to_string(a.level()) +
                                     " down to level " + std::to_string(level));
  const RlweContext& ctx = *rlwe_;
  const std::size_t top = a.level() - level, kept = level + 1, n = a.n(), polys = a.size();
  const BaseConverter& lift = ctx.drop_lift(a.level(), level);
  const RnsBase& lower = *ctx.level_base(level);
  Backend& be = backend(a);
  Ciphertext out(a.context(), polys, level, meta, a.device(), kUninitialized);
  // The dropped limbs of every polynomial in coefficient form (one batched
  // iNTT), their centred residue r mod P = q_{level+1} ... q_top on each kept
  // prime (the exact conversion), then (c - r) / P = round(c / P).
  Buffer dropped(polys * top * n, a.device()), correction(polys * kept * n, a.device());
  for (std::size_t p = 0; p < polys; ++p) be.copy(a.poly(p) + kept * n, dropped.data() + p * top * n, top * n);
  be.ntt_inverse(dropped.data(), polys, lift.from());
  be.base_convert(dropped.data(), correction.data(), polys, lift, BaseConversion::exact);
  be.ntt_forward(correction.data(), polys, lower);
  std::vector<u64> p_inverse(kept, 1);
  double noise = a.noise_bits();
  for (std::size_t dropped_level = a.level(); dropped_level > level; --dropped_level) {
    for (std::size_t i = 0; i < kept; ++i)
      p_inverse[i] = mul_mod(p_inverse[i], ctx.q_last_inverse(dropped_level, i), lower.modulus(i));
    noise = divided_noise(ctx, noise, ctx.params().q_primes()[dropped_level], a.size());
  }
  for (std::size_t p = 0; p < polys; ++p)
    be.sub(a.poly(p), correction.data() + p * kept * n, out.poly(p), 1, lower);
  be.multiply_scalar(out.data(), p_inverse.data(), out.data(), polys, lower);
  out.set_noise_bits(noise);
  return out;
}

Ciphertext RlweEvaluator::relinearize_and_divide(const Ciphertext& a, const RelinKey& key, const Metadata& meta,
                                                 const char* op) const {
  check_relinearization(a, key, op);
  require(a.level() >= 1, op, "the ciphertext is at level 0: no prime left to divide by");
  const RlweContext& ctx = *rlwe_;
  const std::size_t level = a.level();
  Ciphertext out(a.context(), 2, level - 1, meta, a.device(), kUninitialized);
  key_switch_rescale(ctx, a.poly(2), a.poly(0), a.poly(1), level, key.key(), out.poly(0), out.poly(1));
  out.set_noise_bits(divided_noise(ctx, key_switched_noise(a), ctx.params().q_primes()[level]));
  return out;
}

// ---- raising and switching (bootstrapping) --------------------------------------

Ciphertext RlweEvaluator::mod_raise(const Ciphertext& a, std::size_t level) const {
  const char* op = op_name(Op::mod_raise);
  const OpLabel label(op);
  check_operand(a, op);
  require(a.level() == 0, op, "needs a level-0 ciphertext, got level " + std::to_string(a.level()));
  require(level >= 1 && level <= rlwe_->max_level(), op,
          "cannot raise to level " + std::to_string(level) + " (1.." + std::to_string(rlwe_->max_level()) + ")");
  Backend& be = backend(a);
  Buffer coeffs(a.size() * a.n(), a.device());
  be.copy(a.data(), coeffs.data(), coeffs.size());
  be.ntt_inverse(coeffs.data(), a.size(), a.base());
  Ciphertext out(a.context(), a.size(), level, a.metadata(), a.device(), kUninitialized);
  be.base_convert(coeffs.data(), out.data(), a.size(), rlwe_->mod_raise_lift(level), BaseConversion::exact);
  be.ntt_forward(out.data(), a.size(), out.base());
  out.set_noise_bits(a.noise_bits());
  return out;
}

Ciphertext RlweEvaluator::switch_key(const Ciphertext& a, const KeySwitchKey& key) const {
  const char* op = op_name(Op::switch_key);
  const OpLabel label(op);
  check_operand(a, op);
  check_context(key.fingerprint(), op);
  require(a.size() == 2, op, "needs a size-2 ciphertext (relinearize first), got size " + std::to_string(a.size()));
  check_key_device(key.device(), a, op);
  Ciphertext out(a.context(), 2, a.level(), a.metadata(), a.device(), kUninitialized);
  key_switch(*rlwe_, a.poly(1), a.level(), key, out.poly(0), out.poly(1));
  backend(a).add(out.poly(0), a.poly(0), out.poly(0), 1, a.base());
  add_key_switch_noise(out, a);
  return out;
}

// ---- automorphisms ---------------------------------------------------------------

std::vector<long long> RlweEvaluator::rotation_plan(long long steps, const GaloisKeys& keys) const {
  const char* op = op_name(Op::rotate);
  const OpLabel label(op);
  check_context(keys.fingerprint(), op);
  const long long half = static_cast<long long>(rlwe_->n() / 2);
  const long long target = ((steps % half) + half) % half;
  if (target == 0) return {};
  if (keys.has(rlwe_->galois_element(target))) return {target};
  std::vector<long long> available;
  for (u64 g : keys.elements())
    if (long long s = rlwe_->rotation_of(g); s > 0) available.push_back(s);
  // Breadth-first search over Z_{N/2}: the fewest keyed rotations summing to target.
  std::vector<long long> parent(half, -1), via(half, 0);
  std::deque<long long> queue{0};
  parent[0] = 0;
  while (!queue.empty() && parent[target] < 0) {
    const long long at = queue.front();
    queue.pop_front();
    for (long long s : available) {
      const long long next = (at + s) % half;
      if (parent[next] < 0) {
        parent[next] = at;
        via[next] = s;
        queue.push_back(next);
      }
    }
  }
  require(parent[target] >= 0, op,
          "no Galois keys reach a rotation by " + std::to_string(steps) +
              " (generate a key for that step, or for powers of two)");
  std::vector<long long> plan;
  for (long long at = target; at != 0; at = parent[at]) plan.push_back(via[at]);
  return plan;
}

Ciphertext RlweEvaluator::apply_galois(const Ciphertext& a, u64 galois_element, const GaloisKeys& keys) const {
  const char* op = op_name(Op::rotate);
  const OpLabel label(op);
  check_operand(a, op);
  check_context(keys.fingerprint(), op);
  require(a.size() == 2, op, "needs a size-2 ciphertext (relinearize first), got size " + std::to_string(a.size()));
  const KeySwitchKey& key = keys.get(galois_element);
  check_key_device(key.device(), a, op);
  Backend& be = backend(a);
  Ciphertext permuted(a.context(), 2, a.level(), a.metadata(), a.device(), kUninitialized);
  be.automorphism(a.data(), permuted.data(), 2, a.base(), galois_element, Form::eval);
  Ciphertext out(a.context(), 2, a.level(), a.metadata(), a.device(), kUninitialized);
  key_switch(*rlwe_, permuted.poly(1), a.level(), key, out.poly(0), out.poly(1));
  be.add(out.poly(0), permuted.poly(0), out.poly(0), 1, a.base());
  // The automorphism permutes coefficients (up to sign): it keeps the norm.
  add_key_switch_noise(out, a);
  return out;
}

Ciphertext RlweEvaluator::rotate(const Ciphertext& a, long long steps, const GaloisKeys& keys) const {
  const OpLabel label(op_name(Op::rotate));
  check_operand(a, op_name(Op::rotate));
  const std::vector<long long> plan = rotation_plan(steps, keys);
  if (plan.empty()) return a.clone();
  Ciphertext out = apply_galois(a, rlwe_->galois_element(plan.front()), keys);
  for (std::size_t i = 1; i < plan.size(); ++i) out = apply_galois(out, rlwe_->galois_element(plan[i]), keys);
  return out;
}

void RlweEvaluator::rotate_inplace(Ciphertext& a, long long steps, const GaloisKeys& keys) const {
  const OpLabel label(op_name(Op::rotate));
  check_operand(a, op_name(Op::rotate));
  for (long long s : rotation_plan(steps, keys)) a = apply_galois(a, rlwe_->galois_element(s), keys);
}

std::vector<Ciphertext> RlweEvaluator::rotate_many(const Ciphertext& a, const std::vector<long long>& steps,
                                                   const GaloisKeys& keys) const {
  const char* op = op_name(Op::rotate_many);
  const OpLabel label(op);
  check_operand(a, op);
  check_context(keys.fingerprint(), op);
  require(a.size() == 2, op, "needs a size-2 ciphertext (relinearize first), got size " + std::to_string(a.size()));
  const long long half = static_cast<long long>(rlwe_->n() / 2);
  std::vector<u64> elements;
  for (long long s : steps) {
    const long long k = ((s % half) + half) % half;
    const u64 g = rlwe_->galois_element(k);
    require(k == 0 || keys.has(g), op,
            "no Galois key for rotation " + std::to_string(s) + " (hoisted rotations need a key per step)");
    elements.push_back(k == 0 ? 1 : g);
  }
  check_key_device(keys.device(), a, op);
  const HoistedDigits digits(*rlwe_, a.poly(1), a.level(), a.device());
  Backend& be = backend(a);
  std::vector<Ciphertext> out;
  out.reserve(steps.size());
  for (u64 g : elements) {
    if (g == 1) {
      out.push_back(a.clone());
      continue;
    }
    Ciphertext r(a.context(), 2, a.level(), a.metadata(), a.device());
    key_switch_hoisted(*rlwe_, digits, g, keys.get(g), r.poly(0), r.poly(1));
    Buffer c0(a.poly_words(), a.device());
    be.automorphism(a.poly(0), c0.data(), 1, a.base(), g, Form::eval);
    be.add(r.poly(0), c0.data(), r.poly(0), 1, a.base());
    add_key_switch_noise(r, a);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace ringfire
