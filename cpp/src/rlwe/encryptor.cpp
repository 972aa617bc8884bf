#include "ringfire/rlwe/encryptor.h"

#include <algorithm>

#include "ringfire/base/errors.h"
#include "ringfire/base/op_label.h"
#include "ringfire/rlwe/key_switch.h"
#include "ringfire/rlwe/keygen.h"
#include "ringfire/rlwe/noise.h"

namespace ringfire {

namespace {

void check_same(std::uint64_t a, std::uint64_t b, const char* op, const char* what) {
  require(a == b, op, std::string(what) + " was made under different parameters (fingerprint mismatch)");
}

// Encryption and decryption run on the host (the secret key never leaves
// it); operands that live on a GPU are copied over first.
bool on_host(const Device& device) { return device.is_host(); }

// out = u * pk + (e0, e1) over q_0..q_level: the encryption of zero of a key
// over Q alone (noise u e_pk + e0 + e1 s, about sqrt(N) sigma^2 wide).
void encrypt_zero_over_q(const PublicKey& key, std::size_t level, Prng& prng, Ciphertext& out) {
  const RnsBase& base = *out.context()->level_base(level);
  Backend& be = backend_for(Device::cpu());
  Buffer u(out.poly_words()), e(out.poly_words());
  sample_ternary_eval(prng, base, u.data());
  // The key lives at the top level; its first level+1 limbs serve this base.
  for (std::size_t i = 0; i < 2; ++i) {
    sample_error_eval(prng, base, e.data());
    be.multiply(u.data(), key.key().poly(i), out.poly(i), 1, base);
    be.add(out.poly(i), e.data(), out.poly(i), 1, base);
  }
  // The ephemeral u and errors decrypt the ciphertext: do not leave them in the pool.
  secure_zero(u.data(), u.size() * sizeof(u64));
  secure_zero(e.data(), e.size() * sizeof(u64));
}

// The same over q_0..q_level and P, then divided by P with rounding (SEAL's
// way): the noise (u e_pk + e0 + e1 s) / P vanishes and what is left is the
// division's rounding, r0 + r1 s with |r_i| <= 1/2 -- a fresh ciphertext is
// as precise as its encoding allows.
void encrypt_zero_over_special(const RlweContext& ctx, const PublicKey& key, std::size_t level, Prng& prng,
                               Ciphertext& out) {
  const RnsBase& base = *ctx.extended_base(level);
  const std::size_t n = ctx.n(), q_words = (level + 1) * n, p_words = ctx.special_count() * n;
  Backend& be = backend_for(Device::cpu());
  Buffer u(q_words + p_words), e(q_words + p_words), pk(q_words + p_words), c(q_words + p_words);
  sample_ternary_eval(prng, base, u.data());
  for (std::size_t i = 0; i < 2; ++i) {
    // The key over q_0..q_level (its first limbs), then over P.
    std::copy(key.key().poly(i), key.key().poly(i) + q_words, pk.data());
    std::copy(key.special(i), key.special(i) + p_words, pk.data() + q_words);
    sample_error_eval(prng, base, e.data());
    be.multiply(u.data(), pk.data(), c.data(), 1, base);
    be.add(c.data(), e.data(), c.data(), 1, base);
    divide_by_special(ctx, level, c.data(), out.poly(i), be);
  }
  for (Buffer* b : {&u, &e, &c}) secure_zero(b->data(), b->size() * sizeof(u64));
}

}  // namespace

Ciphertext encrypt_public(const PublicKey& key, const Plaintext& plain, Prng& prng) {
  const OpLabel op_label("rlwe.encrypt");
  if (!on_host(key.device())) return encrypt_public(key.to(Device::cpu()), plain, prng);
  if (!on_host(plain.device())) return encrypt_public(key, plain.to(Device::cpu()), prng);
  check_same(key.fingerprint(), plain.fingerprint(), "rlwe.encrypt", "the plaintext");
  const RlweContextPtr& ctx = plain.context();
  const std::size_t level = plain.level();
  Backend& be = backend_for(Device::cpu());
  Ciphertext out(ctx, 2, level, plain.metadata());
  if (key.covers_special()) {
    encrypt_zero_over_special(*ctx, key, level, prng, out);
    out.set_noise_bits(noise::add(noise::fresh_public_special(*ctx), noise::encoding(*ctx)));
  } else {
    encrypt_zero_over_q(key, level, prng, out);
    out.set_noise_bits(noise::add(noise::fresh_public(*ctx), noise::encoding(*ctx)));
  }
  be.add(out.poly(0), plain.data(), out.poly(0), 1, plain.base());
  return out;
}

namespace {

// out = (e + m - a*s, a) from out = (e + m, a) in evaluation form, a expanded from `seed`: both
// secret-key encryptions end here.
void subtract_a_times_s(const SecretKey& key, const Seed& seed, const RnsBase& base, Backend& be, Ciphertext& out) {
  Buffer as(out.poly_words());
  be.multiply(out.poly(1), key.eval(), as.data(), 1, base);
  be.sub(out.poly(0), as.data(), out.poly(0), 1, base);
  secure_zero(as.data(), as.size() * sizeof(u64));
  out.set_seed(seed);
  out.set_noise_bits(noise::add(noise::fresh_secret(*out.context()), noise::encoding(*out.context())));
}

}  // namespace

Ciphertext encrypt_secret(const SecretKey& key, const Plaintext& plain, Prng& prng) {
  const OpLabel op_label("rlwe.encrypt");
  if (!on_host(plain.device())) return encrypt_secret(key, plain.to(Device::cpu()), prng);
  check_same(key.fingerprint(), plain.fingerprint(), "rlwe.encrypt", "the plaintext");
  const RnsBase& base = plain.base();
  Backend& be = backend_for(Device::cpu());
  Ciphertext out(plain.context(), 2, plain.level(), plain.metadata(), Device::cpu(), kUninitialized);
  const Seed seed = prng.next_seed();
  expand_uniform(seed, base, out.poly(1));
  sample_error_eval(prng, base, out.poly(0));
  be.add(out.poly(0), plain.data(), out.poly(0), 1, base);
  subtract_a_times_s(key, seed, base, be, out);
  return out;
}

Ciphertext encrypt_secret_coefficients(const SecretKey& key, const RlweContextPtr& context, std::size_t level,
                                       const Metadata& meta, const u64* message, Prng& prng) {
  const OpLabel op_label("rlwe.encrypt");
  check_same(key.fingerprint(), context->fingerprint(), "rlwe.encrypt", "the secret key");
  const RnsBase& base = *context->level_base(level);
  Backend& be = backend_for(Device::cpu());
  Ciphertext out(context, 2, level, meta, Device::cpu(), kUninitialized);  // a expanded, e + m sampled: both whole
  const Seed seed = prng.next_seed();
  expand_uniform(seed, base, out.poly(1));
  // encrypt_secret's draws, its error kept in coefficient form: NTT(e + m) = NTT(e) + NTT(m).
  sample_error(prng, base, out.poly(0));
  be.add(out.poly(0), message, out.poly(0), 1, base);
  be.ntt_forward(out.poly(0), 1, base);
  subtract_a_times_s(key, seed, base, be, out);
  return out;
}

void decrypt_core(const SecretKey& key, const Ciphertext& cipher, u64* out) {
  const OpLabel op_label("rlwe.decrypt");
  if (!on_host(cipher.device())) return decrypt_core(key, cipher.to(Device::cpu()), out);  // a download: sync point
  check_same(key.fingerprint(), cipher.fingerprint(), "rlwe.decrypt", "the ciphertext");
  const RnsBase& base = cipher.base();
  Backend& be = backend_for(Device::cpu());
  // Horner: m = c0 + s*(c1 + s*(c2 + ...)).
  const std::size_t last = cipher.size() - 1;
  be.copy(cipher.poly(last), out, cipher.poly_words());
  for (std::size_t i = last; i-- > 0;) {
    be.multiply(out, key.eval(), out, 1, base);
    be.add(out, cipher.poly(i), out, 1, base);
  }
  be.ntt_inverse(out, 1, base);
}

}  // namespace ringfire
