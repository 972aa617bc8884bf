#include "ringfire/rlwe/encryptor.h"

#include "ringfire/base/errors.h"
#include "ringfire/base/op_label.h"
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

}  // namespace

Ciphertext encrypt_public(const PublicKey& key, const Plaintext& plain, Prng& prng) {
  const OpLabel op_label("rlwe.encrypt");
  if (!on_host(key.device())) return encrypt_public(key.to(Device::cpu()), plain, prng);
  if (!on_host(plain.device())) return encrypt_public(key, plain.to(Device::cpu()), prng);
  check_same(key.fingerprint(), plain.fingerprint(), "rlwe.encrypt", "the plaintext");
  const RlweContextPtr& ctx = plain.context();
  const std::size_t level = plain.level();
  const RnsBase& base = plain.base();
  Backend& be = backend_for(Device::cpu());
  Ciphertext out(ctx, 2, level, plain.metadata());
  Buffer u(out.poly_words()), e(out.poly_words());
  sample_ternary_eval(prng, base, u.data());
  // The key lives at the top level; its first level+1 limbs serve this base.
  const Ciphertext& pk = key.key();
  for (std::size_t i = 0; i < 2; ++i) {
    sample_error_eval(prng, base, e.data());
    be.multiply(u.data(), pk.poly(i), out.poly(i), 1, base);
    be.add(out.poly(i), e.data(), out.poly(i), 1, base);
  }
  be.add(out.poly(0), plain.data(), out.poly(0), 1, base);
  out.set_noise_bits(noise::add(noise::fresh_public(*ctx), noise::encoding(*ctx)));
  // The ephemeral u and errors decrypt the ciphertext: do not leave them in the pool.
  secure_zero(u.data(), u.size() * sizeof(u64));
  secure_zero(e.data(), e.size() * sizeof(u64));
  return out;
}

Ciphertext encrypt_secret(const SecretKey& key, const Plaintext& plain, Prng& prng) {
  const OpLabel op_label("rlwe.encrypt");
  if (!on_host(plain.device())) return encrypt_secret(key, plain.to(Device::cpu()), prng);
  check_same(key.fingerprint(), plain.fingerprint(), "rlwe.encrypt", "the plaintext");
  const RlweContextPtr& ctx = plain.context();
  const RnsBase& base = plain.base();
  Backend& be = backend_for(Device::cpu());
  Ciphertext out(ctx, 2, plain.level(), plain.metadata());
  const Seed seed = prng.next_seed();
  expand_uniform(seed, base, out.poly(1));
  sample_error_eval(prng, base, out.poly(0));
  Buffer as(out.poly_words());
  be.multiply(out.poly(1), key.eval(), as.data(), 1, base);
  be.sub(out.poly(0), as.data(), out.poly(0), 1, base);
  be.add(out.poly(0), plain.data(), out.poly(0), 1, base);
  secure_zero(as.data(), as.size() * sizeof(u64));
  out.set_seed(seed);
  out.set_noise_bits(noise::add(noise::fresh_secret(*ctx), noise::encoding(*ctx)));
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
