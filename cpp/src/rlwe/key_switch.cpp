#include "ringfire/rlwe/key_switch.h"

#include <vector>

#include "ringfire/base/errors.h"

namespace ringfire {

namespace {

// out = acc / P over q_0..q_level: acc holds (level+1+k) limbs in evaluation
// form (Q part then P part); acc's P part is clobbered.
void mod_down(const RlweContext& ctx, std::size_t level, u64* acc, u64* out, Backend& be) {
  const std::size_t n = ctx.n(), q_limbs = level + 1;
  const RnsBase& q_base = *ctx.level_base(level);
  const BaseConverter& conv = ctx.mod_down(level);
  u64* p_part = acc + q_limbs * n;
  be.ntt_inverse(p_part, 1, *ctx.special_base());
  be.base_convert(p_part, out, 1, conv, BaseConversion::exact);
  be.ntt_forward(out, 1, q_base);
  be.sub(acc, out, out, 1, q_base);
  std::vector<u64> p_inv(q_limbs);
  for (std::size_t i = 0; i < q_limbs; ++i) p_inv[i] = ctx.p_inverse_mod_q(i);
  be.multiply_scalar(out, p_inv.data(), out, 1, q_base);
}

}  // namespace

namespace {

// Scratch for one key switch at a level.
struct Workspace {
  Workspace(const RlweContext& ctx, std::size_t level, const Device& device)
      : n(ctx.n()), q_limbs(level + 1), ext_limbs(level + 1 + ctx.special_count()), device(device),
        converted(ext_limbs * n, device), wide0(2 * ext_limbs * n, device), wide1(2 * ext_limbs * n, device) {}
  std::size_t n, q_limbs, ext_limbs;
  Device device;
  Buffer converted;
  // Unreduced 128-bit sums over the digits: one reduction per coefficient at
  // the end instead of one per digit (terms < 2^120 for 60-bit primes, and
  // there are at most L+1 <= 255 digits).
  Buffer wide0, wide1;
};

// ModUp of digit j: c's coefficients on the digit's primes extended to the
// rest of q_0..q_level and P, in evaluation form over the extended base.
void mod_up_digit(const RlweContext& ctx, const u64* c, const u64* c_coeff, std::size_t level, std::size_t j,
                  u64* extended, Workspace& ws, Backend& be) {
  const std::size_t n = ws.n;
  const auto [begin, end] = ctx.digit_range(level, j);
  const BaseConverter& conv = ctx.mod_up(level, j);
  // Exact (centred) conversion: the digit enters the inner product as a value in
  // (-Q_j/2, Q_j/2] instead of [0, alpha * Q_j), which halves (or better) the
  // key-switching noise.
  be.base_convert(c_coeff + begin * n, ws.converted.data(), 1, conv, BaseConversion::exact);
  be.ntt_forward(ws.converted.data(), 1, conv.to());
  // Converted limbs around the digit's own limbs, which are still exact in
  // evaluation form in c.
  be.copy(ws.converted.data(), extended, begin * n);
  be.copy(c + begin * n, extended + begin * n, (end - begin) * n);
  be.copy(ws.converted.data() + begin * n, extended + end * n, (ws.ext_limbs - end) * n);
}

// wide += extended digit j times the key's (b_j, a_j); key Q limbs first, P limbs at L+1.
void accumulate_digit(const RlweContext& ctx, const u64* extended, std::size_t level, std::size_t j,
                      const KeySwitchKey& key, Workspace& ws, Backend& be) {
  const std::size_t n = ws.n, q = ws.q_limbs, key_q_limbs = ctx.max_level() + 1;
  const u64* b = key.b(j);
  const u64* a = key.a(j);
  be.multiply_accumulate_wide(extended, b, a, ws.wide0.data(), ws.wide1.data(), *ctx.level_base(level));
  be.multiply_accumulate_wide(extended + q * n, b + key_q_limbs * n, a + key_q_limbs * n, ws.wide0.data() + 2 * q * n,
                              ws.wide1.data() + 2 * q * n, *ctx.special_base());
}

void finish(const RlweContext& ctx, std::size_t level, Workspace& ws, u64* out0, u64* out1, Backend& be) {
  const std::size_t n = ws.n, q = ws.q_limbs;
  Buffer acc(ws.ext_limbs * n, ws.device);
  for (int part = 0; part < 2; ++part) {
    const u64* wide = part == 0 ? ws.wide0.data() : ws.wide1.data();
    be.reduce_wide(wide, acc.data(), *ctx.level_base(level));
    be.reduce_wide(wide + 2 * q * n, acc.data() + q * n, *ctx.special_base());
    mod_down(ctx, level, acc.data(), part == 0 ? out0 : out1, be);
  }
}

Buffer to_coefficients(const RlweContext& ctx, const u64* c, std::size_t level, const Device& device, Backend& be) {
  Buffer c_coeff((level + 1) * ctx.n(), device);
  be.copy(c, c_coeff.data(), c_coeff.size());
  be.ntt_inverse(c_coeff.data(), 1, *ctx.level_base(level));
  return c_coeff;
}

}  // namespace

void key_switch(const RlweContext& ctx, const u64* c, std::size_t level, const KeySwitchKey& key, u64* out0,
                u64* out1) {
  const Device& device = key.device();
  Backend& be = backend_for(device);
  Workspace ws(ctx, level, device);
  const Buffer c_coeff = to_coefficients(ctx, c, level, device, be);
  Buffer extended(ws.ext_limbs * ws.n, device);  // one digit at a time: memory independent of dnum
  be.zero(ws.wide0.data(), ws.wide0.size());
  be.zero(ws.wide1.data(), ws.wide1.size());
  for (std::size_t j = 0; j < ctx.digit_count(level); ++j) {
    mod_up_digit(ctx, c, c_coeff.data(), level, j, extended.data(), ws, be);
    accumulate_digit(ctx, extended.data(), level, j, key, ws, be);
  }
  finish(ctx, level, ws, out0, out1, be);
}

HoistedDigits::HoistedDigits(const RlweContext& ctx, const u64* c, std::size_t level, const Device& device)
    : level_(level), digits_(ctx.digit_count(level)), poly_words_((level + 1 + ctx.special_count()) * ctx.n()),
      data_(digits_ * poly_words_, device) {
  Backend& be = backend_for(device);
  Workspace ws(ctx, level, device);
  const Buffer c_coeff = to_coefficients(ctx, c, level, device, be);
  for (std::size_t j = 0; j < digits_; ++j) mod_up_digit(ctx, c, c_coeff.data(), level, j, digit(j), ws, be);
}

void key_switch_hoisted(const RlweContext& ctx, const HoistedDigits& digits, u64 galois_element,
                        const KeySwitchKey& key, u64* out0, u64* out1) {
  const Device& device = key.device();
  require(digits.device() == device, "rlwe.key_switch", "the hoisted digits and the key live on different devices");
  Backend& be = backend_for(device);
  const std::size_t level = digits.level();
  Workspace ws(ctx, level, device);
  Buffer permuted(ws.ext_limbs * ws.n, device);
  be.zero(ws.wide0.data(), ws.wide0.size());
  be.zero(ws.wide1.data(), ws.wide1.size());
  for (std::size_t j = 0; j < digits.count(); ++j) {
    // X -> X^g permutes evaluation slots the same way on every prime, so it
    // commutes with the (coefficient-wise) ModUp up to a multiple of the
    // digit modulus: the rotated digits are valid digits of sigma_g(c).
    be.automorphism(digits.digit(j), permuted.data(), 1, *ctx.extended_base(level), galois_element, Form::eval);
    accumulate_digit(ctx, permuted.data(), level, j, key, ws, be);
  }
  finish(ctx, level, ws, out0, out1, be);
}

}  // namespace ringfire
