#include "ringfire/bgv/plaintext.h"

#include <string>

#include "ringfire/arith/modular.h"
#include "ringfire/base/errors.h"
#include "ringfire/base/op_label.h"
#include "ringfire/ring/backend.h"

namespace ringfire::bgv {

namespace {

constexpr const char* kOp = "bgv.encode";

void check_correction(const Context& ctx, u64 correction, const char* op) {
  const u64 t = ctx.plain_modulus().value();
  u64 inverse = 0;
  require(correction >= 1 && correction < t && try_inv_mod(correction, t, inverse), op,
          "the correction factor " + std::to_string(correction) + " must be invertible modulo t=" + std::to_string(t));
}

void check_level(const Context& ctx, std::size_t level, const char* op) {
  require(level <= ctx.max_level(), op,
          "level " + std::to_string(level) + " exceeds the maximum " + std::to_string(ctx.max_level()));
}

}  // namespace

u64 reduce_signed(std::int64_t value, const Modulus& t) {
  const u64 q = t.value();
  const u64 magnitude = value < 0 ? 0 - static_cast<u64>(value) : static_cast<u64>(value);
  const u64 r = magnitude % q;
  return (value < 0 && r != 0) ? q - r : r;
}

u64 lift_centred(u64 v, u64 t, u64 q) {
  if (v <= t / 2) return v % q;
  const u64 negative = (t - v) % q;  // the representative is v - t < 0
  return negative == 0 ? 0 : q - negative;
}

Plaintext encode_plaintext(const Context& ctx, const std::vector<u64>& coefficients, std::size_t level,
                           u64 correction) {
  const OpLabel label(kOp);
  check_level(ctx, level, kOp);
  check_correction(ctx, correction, kOp);
  const std::size_t n = ctx.n();
  const Modulus& t = ctx.plain_modulus();
  require(coefficients.size() == n, kOp,
          "expected " + std::to_string(n) + " coefficients, got " + std::to_string(coefficients.size()));
  Metadata meta;
  meta.correction = correction;
  Plaintext out(ctx.rlwe(), level, meta);
  std::vector<u64> scaled(n);
  for (std::size_t j = 0; j < n; ++j) {
    require(coefficients[j] < t.value(), kOp, [&] {
      return "coefficient " + std::to_string(j) + " = " + std::to_string(coefficients[j]) + " is not below t=" +
             std::to_string(t.value());
    });
    scaled[j] = mul_mod(coefficients[j], correction, t);
  }
  const RnsBase& base = out.base();
  const u64 tv = t.value();
  for (std::size_t i = 0; i <= level; ++i) {
    const Modulus& q = base.modulus(i);
    const ShoupOperand t_inv = make_shoup(ctx.t_inverse_mod_q()[i], q.value());
    u64* limb = out.data() + i * n;
    if (tv <= q.value()) {  // the lift needs no division: v, or q - (t - v) for v above t / 2
      const u64 shift = q.value() - tv;
      for (std::size_t j = 0; j < n; ++j) {
        const u64 lifted = scaled[j] + (scaled[j] > tv / 2 ? shift : 0);
        limb[j] = mul_mod_shoup(lifted, t_inv.value, t_inv.quotient, q.value());
      }
    } else {
      for (std::size_t j = 0; j < n; ++j)
        limb[j] = mul_mod_shoup(lift_centred(scaled[j], tv, q.value()), t_inv.value, t_inv.quotient, q.value());
    }
  }
  backend_for(Device::cpu()).ntt_forward(out.data(), 1, base);
  return out;
}

std::vector<u64> decode_plaintext(const Context& ctx, const Plaintext& plain) {
  constexpr const char* op = "bgv.decode";
  require(plain.fingerprint() == ctx.fingerprint(), op, "the plaintext was made under different parameters");
  check_correction(ctx, plain.metadata().correction, op);
  const Plaintext host = plain.device().is_host() ? plain.clone() : plain.to(Device::cpu());
  const std::size_t n = ctx.n();
  const Modulus& t = ctx.plain_modulus();
  // Limb 0 times t is the centred [m sigma]_t (exactly: |[m sigma]_t| <= t/2 < q_0/2).
  std::vector<u64> limb(host.data(), host.data() + n);
  backend_for(Device::cpu()).ntt_inverse(limb.data(), 1, *ctx.rlwe()->prime_base(0));
  const Modulus& q0 = host.base().modulus(0);
  const u64 t_mod_q0 = ctx.t_mod_q()[0];
  const u64 undo = inv_mod(host.metadata().correction, t.value());
  std::vector<u64> out(n);
  for (std::size_t j = 0; j < n; ++j) {
    const u64 v = mul_mod(limb[j], t_mod_q0, q0);  // in [0, q_0): the centred value mod q_0
    const u64 residue = v <= q0.value() / 2 ? v % t.value() : reduce_signed(-static_cast<std::int64_t>(q0.value() - v), t);
    out[j] = mul_mod(residue, undo, t);
  }
  return out;
}

std::vector<u64> constant_residues(const Context& ctx, u64 value_mod_t, std::size_t level, u64 correction) {
  check_level(ctx, level, "bgv.constant");
  check_correction(ctx, correction, "bgv.constant");
  const Modulus& t = ctx.plain_modulus();
  require(value_mod_t < t.value(), "bgv.constant", "the constant must be reduced mod t");
  const u64 scaled = mul_mod(value_mod_t, correction, t);
  const RnsBase& base = *ctx.rlwe()->level_base(level);
  std::vector<u64> out(level + 1);
  for (std::size_t i = 0; i <= level; ++i) {
    const Modulus& q = base.modulus(i);
    out[i] = mul_mod(lift_centred(scaled, t.value(), q.value()), ctx.t_inverse_mod_q()[i], q);
  }
  return out;
}

}  // namespace ringfire::bgv
