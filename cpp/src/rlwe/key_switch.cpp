#include "ringfire/rlwe/key_switch.h"

#include <vector>

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
  be.base_convert(p_part, out, 1, conv, BaseConversion::fast);
  be.ntt_forward(out, 1, q_base);
  be.sub(acc, out, out, 1, q_base);
  std::vector<u64> p_inv(q_limbs);
  for (std::size_t i = 0; i < q_limbs; ++i) p_inv[i] = ctx.p_inverse_mod_q(i);
  be.multiply_scalar(out, p_inv.data(), out, 1, q_base);
}

}  // namespace

void key_switch(const RlweContext& ctx, const u64* c, std::size_t level, const KeySwitchKey& key, u64* out0,
                u64* out1) {
  Backend& be = backend_for(Device::cpu());
  const std::size_t n = ctx.n(), q_limbs = level + 1, k = ctx.special_count();
  const std::size_t ext_limbs = q_limbs + k, key_q_limbs = ctx.max_level() + 1;
  const RnsBase& q_base = *ctx.level_base(level);
  const RnsBase& p_base = *ctx.special_base();

  Buffer c_coeff(q_limbs * n), extended(ext_limbs * n), converted(ext_limbs * n);
  // Unreduced 128-bit sums over the digits: one reduction per coefficient at
  // the end instead of one per digit (terms < 2^120 for 60-bit primes, and
  // there are at most L+1 <= 255 digits).
  Buffer wide0(2 * ext_limbs * n), wide1(2 * ext_limbs * n);
  be.copy(c, c_coeff.data(), q_limbs * n);
  be.ntt_inverse(c_coeff.data(), 1, q_base);
  be.zero(wide0.data(), wide0.size());
  be.zero(wide1.data(), wide1.size());

  for (std::size_t j = 0; j < ctx.digit_count(level); ++j) {
    const auto [begin, end] = ctx.digit_range(level, j);
    const BaseConverter& conv = ctx.mod_up(level, j);
    // ModUp: the other primes (in extended order, digit removed) from the
    // digit's coefficients, then into evaluation form.
    be.base_convert(c_coeff.data() + begin * n, converted.data(), 1, conv, BaseConversion::fast);
    be.ntt_forward(converted.data(), 1, conv.to());
    // Assemble the digit over the extended base: converted limbs around the
    // digit's own limbs, which are still exact in evaluation form in c.
    be.copy(converted.data(), extended.data(), begin * n);
    be.copy(c + begin * n, extended.data() + begin * n, (end - begin) * n);
    be.copy(converted.data() + begin * n, extended.data() + end * n, (ext_limbs - end) * n);
    // Inner product with the key's digit; its Q limbs sit first, P limbs at L+1.
    const u64* b = key.b(j);
    const u64* a = key.a(j);
    const u64* ext_p = extended.data() + q_limbs * n;
    be.multiply_accumulate_wide(extended.data(), b, a, wide0.data(), wide1.data(), q_base);
    be.multiply_accumulate_wide(ext_p, b + key_q_limbs * n, a + key_q_limbs * n, wide0.data() + 2 * q_limbs * n,
                                wide1.data() + 2 * q_limbs * n, p_base);
  }
  Buffer acc(ext_limbs * n);
  for (int part = 0; part < 2; ++part) {
    const u64* wide = part == 0 ? wide0.data() : wide1.data();
    be.reduce_wide(wide, acc.data(), q_base);
    be.reduce_wide(wide + 2 * q_limbs * n, acc.data() + q_limbs * n, p_base);
    mod_down(ctx, level, acc.data(), part == 0 ? out0 : out1, be);
  }
}

}  // namespace ringfire
