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
  be.ntt_inverse_into(c, c_coeff.data(), 1, *ctx.level_base(level));
  return c_coeff;
}

// Where the inner product writes the two sums: their limbs on q_0..q_level at
// q0 / q1, their limbs on P at p0 / p1. The P limbs (ModDown's source) sit
// apart from the Q limbs so that ModDown can take both sums' P parts as one
// batch of two polynomials, with nothing copied.
struct Sums {
  u64 *q0, *q1, *p0, *p1;
};

// The inner product with a per-use key whose a_j are not in memory: limb by
// limb (the limbs in parallel), each digit's row of a_j expanded from its seed
// into a scratch row just before the products read it, so the a_j never go
// to memory as a whole (they would be written and read back: as much traffic
// as reading expanded keys, on top of the expansion).
void inner_product_seeded(const RlweContext& ctx, std::size_t level, const u64* digits, std::size_t count,
                          std::size_t digit_words, const KeySwitchKey& key, const Sums& sums, Backend& be) {
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
      u64* out0 = i < q ? sums.q0 + i * n : sums.p0 + (i - q) * n;
      u64* out1 = i < q ? sums.q1 + i * n : sums.p1 + (i - q) * n;
      be.inner_product_pair(in.data(), b.data(), a.data(), count, out0, out1, *limb_base[i]);
    }
  };
  parallel_items(limbs, body);
}

// The inner product of the extended digits (digit_words apart, starting at
// `digits`) with the key's (b_j, a_j) into `sums`. Key polynomials hold the Q
// limbs first and the P limbs at L+1; the digits hold q_0..q_level then P.
void inner_product(const RlweContext& ctx, std::size_t level, const u64* digits, std::size_t count,
                   std::size_t digit_words, const KeySwitchKey& key, const Sums& sums, Backend& be) {
  if (key.expands_per_use() && !key.expanded() && key.device().is_host())
    return inner_product_seeded(ctx, level, digits, count, digit_words, key, sums, be);
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
  be.inner_product_pair(in.data(), b.data(), a.data(), count, sums.q0, sums.q1, *ctx.level_base(level));
  be.inner_product_pair(in_p.data(), b_p.data(), a_p.data(), count, sums.p0, sums.p1, *ctx.special_base());
}

// ModDown of `count` polynomials: out_i = (x_i - (x_i mod P, brought to Q)) P^-1
// over q_0..q_level, x_i's Q limbs at q_parts[i] and its P limbs at p_parts
// (all of them back to back, evaluation form; clobbered). The P parts go
// through the inverse NTT, the conversion to Q (into `lifted`, count x
// (level+1) limbs; outs[0] itself when count is 1) and the forward NTT as one
// batch (on a GPU one launch per step that fills the device).
void divide_parts_by_special(const RlweContext& ctx, std::size_t level, const u64* const* q_parts, u64* p_parts,
                             u64* lifted, u64* const* outs, std::size_t count, Backend& be) {
  const std::size_t n = ctx.n(), q_limbs = level + 1;
  const RnsBase& q_base = *ctx.level_base(level);
  be.ntt_inverse(p_parts, count, *ctx.special_base());
  be.base_convert(p_parts, lifted, count, ctx.mod_down(level), BaseConversion::exact);
  be.ntt_forward(lifted, count, q_base);
  std::vector<u64> p_inv(q_limbs);
  for (std::size_t i = 0; i < q_limbs; ++i) p_inv[i] = ctx.p_inverse_mod_q(i);
  for (std::size_t i = 0; i < count; ++i) {
    be.sub(q_parts[i], lifted + i * q_limbs * n, outs[i], 1, q_base);
    be.multiply_scalar(outs[i], p_inv.data(), outs[i], 1, q_base);
  }
}

// The inner product, then ModDown of both sums into out0 / out1 as one batch of two.
void inner_product_and_mod_down(const RlweContext& ctx, std::size_t level, const u64* digits, std::size_t count,
                                std::size_t digit_words, const KeySwitchKey& key, u64* out0, u64* out1, Backend& be) {
  const std::size_t n = ctx.n(), q_limbs = level + 1, k = ctx.special_count();
  const Device& device = key.device();
  Buffer q_sums(2 * q_limbs * n, device), p_sums(2 * k * n, device), lifted(2 * q_limbs * n, device);
  const Sums sums{q_sums.data(), q_sums.data() + q_limbs * n, p_sums.data(), p_sums.data() + k * n};
  inner_product(ctx, level, digits, count, digit_words, key, sums, be);
  const u64* q_parts[2] = {sums.q0, sums.q1};
  u64* outs[2] = {out0, out1};
  divide_parts_by_special(ctx, level, q_parts, p_sums.data(), lifted.data(), outs, 2, be);
}

// out_i = round((d_i P + acc_i) / (P q_level)) over q_0..q_{level-1}, for both
// key-switching sums acc_i at once (their Q limbs at sums.q0 / q1; their P
// limbs at sums.p0 / p1, each one limb into its slot of `tops`, which holds
// two (1 + k)-limb polynomials); d_i have level+1 limbs. T_i = d_i P + acc_i
// is acc_i on the P primes (P = 0 there) and d_i P + acc_i on q_i; its
// residues on q_level and P (a slot of `tops`, in the converter's order)
// convert exactly to the centred T_i mod (q_level P), and out_i = (d_i P +
// acc_i - that) / (P q_level) = d_i q_level^-1 + (acc_i - that) (P
// q_level)^-1: one linear combination. The two tops go through the inverse
// NTT, the conversion and the forward NTT as one batch of two.
void mod_down_rescale_pair(const RlweContext& ctx, std::size_t level, const Sums& sums, u64* tops, const u64* d0,
                           const u64* d1, u64* out0, u64* out1, Backend& be, const Device& device) {
  const std::size_t n = ctx.n(), top_limbs = 1 + ctx.special_count();
  const BaseConverter& conv = ctx.mod_down_rescale(level);
  const RnsBase& lower = *ctx.level_base(level - 1);
  const RnsBase& last = *ctx.prime_base(level);
  Buffer scaled(n, device), lifted(2 * level * n, device);
  const u64 p_mod_q_last = ctx.p_mod_q(level);
  const u64* ds[2] = {d0, d1};
  const u64* q_parts[2] = {sums.q0, sums.q1};
  for (std::size_t i = 0; i < 2; ++i) {
    be.multiply_scalar(ds[i] + level * n, &p_mod_q_last, scaled.data(), 1, last);
    be.add(q_parts[i] + level * n, scaled.data(), tops + i * top_limbs * n, 1, last);
  }
  be.ntt_inverse(tops, 2, conv.from());
  be.base_convert(tops, lifted.data(), 2, conv, BaseConversion::exact);
  be.ntt_forward(lifted.data(), 2, lower);
  std::vector<u64> weights(3 * level);
  for (std::size_t i = 0; i < level; ++i) {
    const Modulus& qi = lower.modulus(i);
    const u64 q_last_inv = ctx.q_last_inverse(level, i);
    const u64 pq_inv = mul_mod(ctx.p_inverse_mod_q(i), q_last_inv, qi);
    weights[i] = q_last_inv;
    weights[level + i] = pq_inv;
    weights[2 * level + i] = neg_mod(pq_inv, qi.value());
  }
  // One polynomial per input: only the first `level` limbs of d and of the
  // Q sums (which have more) are read.
  u64* outs[2] = {out0, out1};
  for (std::size_t i = 0; i < 2; ++i) {
    const u64* inputs[3] = {ds[i], q_parts[i], lifted.data() + i * level * n};
    be.linear_combination(inputs, weights.data(), 3, outs[i], 1, lower);
  }
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
  const u64* q_parts[1] = {acc};
  u64* outs[1] = {out};
  divide_parts_by_special(ctx, level, q_parts, acc + (level + 1) * ctx.n(), out, outs, 1, be);
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
  // Digit j's own limbs, c's limbs [j alpha, (j + 1) alpha), to the same rows of digit j.
  be.copy_blocks(c, alpha * n, digit(0), poly_words_ + alpha * n, alpha * n, full);
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
  const std::size_t n = ctx.n(), q_limbs = level + 1, top_limbs = 1 + ctx.special_count();
  Buffer q_sums(2 * q_limbs * n, key.device()), tops(2 * top_limbs * n, key.device());
  const Sums sums{q_sums.data(), q_sums.data() + q_limbs * n, tops.data() + n, tops.data() + (top_limbs + 1) * n};
  inner_product(ctx, level, digits.digit(0), digits.count(), digits.digit_words(), key, sums, be);
  mod_down_rescale_pair(ctx, level, sums, tops.data(), d0, d1, out0, out1, be, key.device());
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
