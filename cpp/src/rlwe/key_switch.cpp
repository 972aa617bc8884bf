#include "ringfire/rlwe/key_switch.h"

#include <vector>

#include "ringfire/arith/modular.h"
#include "ringfire/base/errors.h"
#include "ringfire/base/op_label.h"
#include "ringfire/base/parallel.h"

namespace ringfire {

namespace {

// ModUp of digit j: c's coefficients on the digit's primes extended to the
// rest of q_0..q_level and P, in evaluation form over the extended base,
// written straight into `extended` around the digit's own limbs (which are
// still exact in evaluation form in c). `scratch` is (level+1+k) x N words
// for backends that do not write in place.
void mod_up_digit(const RlweContext& ctx, const u64* c, const u64* c_coeff, std::size_t level, std::size_t j,
                  u64* scratch, u64* extended, Backend& be) {
  const std::size_t n = ctx.n(), ext_limbs = level + 1 + ctx.special_count();
  const auto [begin, end] = ctx.digit_range(level, j);
  const BaseConverter& conv = ctx.mod_up(level, j);
  // The converter's targets are the extended base with the digit removed.
  std::vector<u64*> targets;
  targets.reserve(ext_limbs - (end - begin));
  for (std::size_t i = 0; i < ext_limbs; ++i)
    if (i < begin || i >= end) targets.push_back(extended + i * n);
  // Exact (centred) conversion: the digit enters the inner product as a value in
  // (-Q_j/2, Q_j/2] instead of [0, alpha * Q_j), which halves (or better) the
  // key-switching noise.
  be.base_convert_ntt(c_coeff + begin * n, scratch, targets.data(), conv, BaseConversion::exact);
  be.copy(c + begin * n, extended + begin * n, (end - begin) * n);
}

Buffer to_coefficients(const RlweContext& ctx, const u64* c, std::size_t level, const Device& device, Backend& be) {
  Buffer c_coeff((level + 1) * ctx.n(), device);
  be.copy(c, c_coeff.data(), c_coeff.size());
  be.ntt_inverse(c_coeff.data(), 1, *ctx.level_base(level));
  return c_coeff;
}

// The inner product with a per-use key whose a_j are not in memory: limb by
// limb (the limbs in parallel), each digit's row of a_j expanded from its seed
// into a scratch row just before the products read it, so the a_j never go
// to memory as a whole (they would be written and read back: as much traffic
// as reading expanded keys, on top of the expansion).
void inner_product_seeded(const RlweContext& ctx, std::size_t level, const u64* digits, std::size_t count,
                          std::size_t digit_words, const KeySwitchKey& key, u64* acc0, u64* acc1, Backend& be) {
  const std::size_t n = ctx.n(), q = level + 1, limbs = q + ctx.special_count(), key_q_limbs = key.level() + 1;
  std::vector<RnsBasePtr> limb_base(limbs);
  std::vector<std::size_t> key_row(limbs);
  for (std::size_t i = 0; i < limbs; ++i) {
    limb_base[i] = i < q ? ctx.prime_base(i) : ctx.special_base()->select({i - q});
    key_row[i] = i < q ? i : key_q_limbs + (i - q);  // the key holds all of its Q limbs before P's
  }
  auto body = [&](std::size_t begin, std::size_t end) {
    Buffer rows(count * n);
    std::vector<const u64*> in(count), b(count), a(count);
    for (std::size_t i = begin; i < end; ++i) {
      for (std::size_t j = 0; j < count; ++j) {
        key.expand_a_row(j, key_row[i], rows.data() + j * n);
        in[j] = digits + j * digit_words + i * n;
        b[j] = key.b(j) + key_row[i] * n;
        a[j] = rows.data() + j * n;
      }
      be.inner_product_pair(in.data(), b.data(), a.data(), count, acc0 + i * n, acc1 + i * n, *limb_base[i]);
    }
  };
  parallel_items(limbs, body);
}

// The inner product of the extended digits (digit_words apart, starting at
// `digits`) with the key's (b_j, a_j) into acc0/acc1 (level+1+k limbs each).
// Key polynomials hold the Q limbs first and the P limbs at L+1; the digits
// hold q_0..q_level then P.
void inner_product(const RlweContext& ctx, std::size_t level, const u64* digits, std::size_t count,
                   std::size_t digit_words, const KeySwitchKey& key, u64* acc0, u64* acc1, Backend& be) {
  if (key.expands_per_use() && !key.expanded() && key.device().is_host())
    return inner_product_seeded(ctx, level, digits, count, digit_words, key, acc0, acc1, be);
  const std::size_t n = ctx.n(), q = level + 1, key_q_limbs = key.level() + 1;
  std::vector<const u64*> in(count), b(count), a(count), in_p(count), b_p(count), a_p(count);
  for (std::size_t j = 0; j < count; ++j) {
    in[j] = digits + j * digit_words;
    b[j] = key.b(j);
    a[j] = key.a(j);
    in_p[j] = in[j] + q * n;
    b_p[j] = b[j] + key_q_limbs * n;
    a_p[j] = a[j] + key_q_limbs * n;
  }
  be.inner_product_pair(in.data(), b.data(), a.data(), count, acc0, acc1, *ctx.level_base(level));
  be.inner_product_pair(in_p.data(), b_p.data(), a_p.data(), count, acc0 + q * n, acc1 + q * n, *ctx.special_base());
}

// The inner product, then ModDown of both sums into out0 / out1.
void inner_product_and_mod_down(const RlweContext& ctx, std::size_t level, const u64* digits, std::size_t count,
                                std::size_t digit_words, const KeySwitchKey& key, u64* out0, u64* out1, Backend& be) {
  const std::size_t words = (level + 1 + ctx.special_count()) * ctx.n();
  Buffer acc0(words, key.device()), acc1(words, key.device());
  inner_product(ctx, level, digits, count, digit_words, key, acc0.data(), acc1.data(), be);
  divide_by_special(ctx, level, acc0.data(), out0, be);
  divide_by_special(ctx, level, acc1.data(), out1, be);
}

// out = round((d P + acc) / (P q_level)) over q_0..q_{level-1}: acc holds
// (level+1+k) limbs in evaluation form and is clobbered; d has level+1 limbs.
// T = d P + acc is acc on the P primes (P = 0 there) and d P + acc on q_i;
// its residues on q_level and P (adjacent in acc) convert exactly to the
// centred T mod (q_level P), and out = (d P + acc - that) / (P q_level)
// = d q_level^-1 + (acc - that) (P q_level)^-1: one linear combination.
void mod_down_rescale(const RlweContext& ctx, std::size_t level, u64* acc, const u64* d, u64* out, Backend& be,
                      const Device& device) {
  const std::size_t n = ctx.n();
  const BaseConverter& conv = ctx.mod_down_rescale(level);
  const RnsBase& lower = *ctx.level_base(level - 1);
  const RnsBase& last = *ctx.prime_base(level);
  u64* top = acc + level * n;  // q_level's limb, then P's: the converter's source, in its order
  Buffer scaled(n, device), lifted(level * n, device);
  const u64 p_mod_q_last = ctx.p_mod_q(level);
  be.multiply_scalar(d + level * n, &p_mod_q_last, scaled.data(), 1, last);
  be.add(top, scaled.data(), top, 1, last);
  be.ntt_inverse(top, 1, conv.from());
  be.base_convert(top, lifted.data(), 1, conv, BaseConversion::exact);
  be.ntt_forward(lifted.data(), 1, lower);
  std::vector<u64> weights(3 * level);
  for (std::size_t i = 0; i < level; ++i) {
    const Modulus& qi = lower.modulus(i);
    const u64 q_last_inv = ctx.q_last_inverse(level, i);
    const u64 pq_inv = mul_mod(ctx.p_inverse_mod_q(i), q_last_inv, qi);
    weights[i] = q_last_inv;
    weights[level + i] = pq_inv;
    weights[2 * level + i] = neg_mod(pq_inv, qi.value());
  }
  // One polynomial per input: only the first `level` limbs of d and acc
  // (which have more) are read.
  const u64* inputs[3] = {d, acc, lifted.data()};
  be.linear_combination(inputs, weights.data(), 3, out, 1, lower);
}

void check_key_level(std::size_t level, const KeySwitchKey& key) {
  require(level <= key.level(), "rlwe.key_switch",
          "the key was made for levels up to " + std::to_string(key.level()) + ", the ciphertext is at level " +
              std::to_string(level));
}

}  // namespace

// out = acc / P over q_0..q_level: acc holds (level+1+k) limbs in evaluation
// form (Q part then P part); acc's P part is clobbered.
void divide_by_special(const RlweContext& ctx, std::size_t level, u64* acc, u64* out, Backend& be) {
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

void key_switch(const RlweContext& ctx, const u64* c, std::size_t level, const KeySwitchKey& key, u64* out0,
                u64* out1) {
  const OpLabel op_label("rlwe.key_switch");
  check_key_level(level, key);
  const HoistedDigits digits(ctx, c, level, key.device());
  inner_product_and_mod_down(ctx, level, digits.digit(0), digits.count(), digits.digit_words(), key, out0, out1,
                             backend_for(key.device()));
}

HoistedDigits::HoistedDigits(const RlweContext& ctx, const u64* c, std::size_t level, const Device& device)
    : level_(level), digits_(ctx.digit_count(level)), poly_words_((level + 1 + ctx.special_count()) * ctx.n()),
      data_(digits_ * poly_words_, device) {
  const OpLabel op_label("rlwe.key_switch");
  Backend& be = backend_for(device);
  Buffer converted(poly_words_, device);
  const Buffer c_coeff = to_coefficients(ctx, c, level, device, be);
  // The digits of alpha limbs (all but a shorter last one) go to the backend
  // together (a GPU converts and transforms them in one launch each); their
  // own limbs are still exact in evaluation form in c. Digit 0 is the
  // longest, so it gives alpha (level + 1 when fewer limbs are left).
  const std::size_t n = ctx.n(), alpha = ctx.digit_range(level, 0).second, full = (level + 1) / alpha;
  std::vector<const BaseConverter*> convs(full);
  for (std::size_t j = 0; j < full; ++j) convs[j] = &ctx.mod_up(level, j);
  be.mod_up_digits(c_coeff.data(), convs.data(), full, alpha, data_.data(), poly_words_, converted.data(),
                   BaseConversion::exact);
  for (std::size_t j = 0; j < full; ++j) be.copy(c + j * alpha * n, digit(j) + j * alpha * n, alpha * n);
  for (std::size_t j = full; j < digits_; ++j)
    mod_up_digit(ctx, c, c_coeff.data(), level, j, converted.data(), digit(j), be);
}

void key_switch_rescale(const RlweContext& ctx, const u64* c, const u64* d0, const u64* d1, std::size_t level,
                        const KeySwitchKey& key, u64* out0, u64* out1) {
  const OpLabel op_label("rlwe.key_switch");
  check_key_level(level, key);
  require(level >= 1, "rlwe.key_switch", "the ciphertext is at level 0: no prime left to rescale by");
  Backend& be = backend_for(key.device());
  const HoistedDigits digits(ctx, c, level, key.device());
  const std::size_t words = (level + 1 + ctx.special_count()) * ctx.n();
  Buffer acc0(words, key.device()), acc1(words, key.device());
  inner_product(ctx, level, digits.digit(0), digits.count(), digits.digit_words(), key, acc0.data(), acc1.data(), be);
  mod_down_rescale(ctx, level, acc0.data(), d0, out0, be, key.device());
  mod_down_rescale(ctx, level, acc1.data(), d1, out1, be, key.device());
}

void key_switch_hoisted(const RlweContext& ctx, const HoistedDigits& digits, u64 galois_element,
                        const KeySwitchKey& key, u64* out0, u64* out1) {
  const OpLabel op_label("rlwe.key_switch");
  const Device& device = key.device();
  require(digits.device() == device, "rlwe.key_switch", "the hoisted digits and the key live on different devices");
  check_key_level(digits.level(), key);
  Backend& be = backend_for(device);
  // X -> X^g permutes evaluation slots the same way on every prime, so it
  // commutes with the (coefficient-wise) ModUp up to a multiple of the digit
  // modulus: the rotated digits are valid digits of sigma_g(c).
  Buffer permuted(digits.count() * digits.digit_words(), device);
  be.automorphism(digits.digit(0), permuted.data(), digits.count(), *ctx.extended_base(digits.level()), galois_element,
                  Form::eval);
  inner_product_and_mod_down(ctx, digits.level(), permuted.data(), digits.count(), digits.digit_words(), key, out0,
                             out1, be);
}

}  // namespace ringfire
