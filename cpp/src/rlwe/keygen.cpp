#include "ringfire/rlwe/keygen.h"

#include <algorithm>
#include <optional>

#include "ringfire/base/errors.h"
#include "ringfire/base/op_label.h"
#include "ringfire/base/parallel.h"
#include "ringfire/rlwe/sampling.h"

namespace ringfire {

void expand_uniform(const Seed& seed, const RnsBase& base, u64* out) {
  Prng stream = Prng::from_seed(seed);
  sample_uniform(stream, base, out);  // uniform residues are uniform in either form
}

void sample_error(Prng& prng, const RnsBase& base, u64* out) {
  std::vector<std::int64_t> e(base.n());
  sample_gaussian(prng, e.data(), e.size());
  signed_to_rns(e.data(), e.size(), base, out);
  secure_zero(e.data(), e.size() * sizeof(std::int64_t));
}

void sample_error_eval(Prng& prng, const RnsBase& base, u64* out) {
  sample_error(prng, base, out);
  backend_for(Device::cpu()).ntt_forward(out, 1, base);
}

void sample_ternary_eval(Prng& prng, const RnsBase& base, u64* out) {
  std::vector<std::int8_t> u(base.n());
  sample_ternary(prng, u.data(), u.size());
  ternary_to_rns(u.data(), u.size(), base, out);
  secure_zero(u.data(), u.size());
  backend_for(Device::cpu()).ntt_forward(out, 1, base);
}

SecretKey generate_secret_key(const RlweContextPtr& context, Prng& prng) {
  const OpLabel op_label("rlwe.keygen");
  std::vector<std::int8_t> s(context->n());
  sample_ternary(prng, s.data(), s.size());
  return SecretKey(context, std::move(s));
}

PublicKey generate_public_key(const SecretKey& secret, Prng& prng) {
  const OpLabel op_label("rlwe.keygen");
  const RlweContextPtr& ctx = secret.context();
  const std::size_t level = ctx->max_level(), n = ctx->n(), q_limbs = level + 1, p_limbs = ctx->special_count();
  // (b, a) over the key base (Q then P): a from one seed (its first L+1
  // limbs are what expanding the seed over Q alone gives), one error e.
  const RnsBase& base = *ctx->key_base();
  Backend& be = backend_for(Device::cpu());
  const Seed seed = prng.next_seed();
  Buffer a(base.size() * n), b(base.size() * n);
  expand_uniform(seed, base, a.data());
  sample_error_eval(prng, base, b.data());
  // b = -(a * s) + e.
  Buffer as(base.size() * n);
  be.multiply(a.data(), secret.eval(), as.data(), 1, base);
  be.sub(b.data(), as.data(), b.data(), 1, base);
  secure_zero(as.data(), as.size() * sizeof(u64));
  Ciphertext key(ctx, 2, level, Metadata{});  // scale 1: an encryption of zero
  std::copy(b.data(), b.data() + q_limbs * n, key.poly(0));
  std::copy(a.data(), a.data() + q_limbs * n, key.poly(1));
  key.set_seed(seed);
  Buffer special(2 * p_limbs * n);
  std::copy(b.data() + q_limbs * n, b.data() + (q_limbs + p_limbs) * n, special.data());
  std::copy(a.data() + q_limbs * n, a.data() + (q_limbs + p_limbs) * n, special.data() + p_limbs * n);
  return PublicKey(std::move(key), std::move(special));
}

namespace {

// The limbs of a key-base polynomial (Q's L+1 primes, then P's) that serve
// `level`: q_0..q_level and P, contiguous.
Buffer restrict_to_level(const RlweContext& ctx, const u64* full, std::size_t level) {
  const std::size_t n = ctx.n(), q_limbs = level + 1, p_limbs = ctx.special_count();
  Buffer out((q_limbs + p_limbs) * n);
  std::copy(full, full + q_limbs * n, out.data());
  std::copy(full + (ctx.max_level() + 1) * n, full + (ctx.max_level() + 1 + p_limbs) * n, out.data() + q_limbs * n);
  return out;
}

}  // namespace

KeySwitchKey generate_switch_key(const SecretKey& secret, const u64* s_prime_eval, u64 source, Prng& prng) {
  return generate_switch_key(secret, s_prime_eval, source, prng, secret.context()->max_level());
}

KeySwitchKey generate_switch_key(const SecretKey& secret, const u64* s_prime_eval, u64 source, Prng& prng,
                                 std::size_t level) {
  const OpLabel op_label("rlwe.keygen");
  const RlweContextPtr& ctx = secret.context();
  require(level <= ctx->max_level(), "rlwe.keygen",
          "key level " + std::to_string(level) + " exceeds the maximum " + std::to_string(ctx->max_level()));
  const RnsBase& base = *ctx->extended_base(level);
  const std::size_t n = ctx->n();
  Backend& be = backend_for(Device::cpu());
  // Seeded: the key keeps the b_j, each a_j passes through one scratch
  // polynomial (expanded again from its seed if the key is used here).
  KeySwitchKey key = KeySwitchKey::seeded(ctx, source, level);
  Buffer s = restrict_to_level(*ctx, secret.eval(), level);
  Buffer s_prime = restrict_to_level(*ctx, s_prime_eval, level);
  Buffer a(key.poly_words()), as(key.poly_words());
  for (std::size_t j = 0; j < key.digits(); ++j) {
    const Seed seed = prng.next_seed();
    key.seeds().push_back(seed);
    expand_uniform(seed, base, a.data());
    sample_error_eval(prng, base, key.b(j));
    be.multiply(a.data(), s.data(), as.data(), 1, base);
    be.sub(key.b(j), as.data(), key.b(j), 1, base);
    // + P * s' on the digit's primes (g_j is P there and 0 elsewhere).
    const auto [begin, end] = ctx->digit_range(level, j);
    for (std::size_t i = begin; i < end; ++i) {
      const Modulus& qi = base.modulus(i);
      const u64 p = ctx->p_mod_q(i);
      u64* bi = key.b(j) + i * n;
      const u64* si = s_prime.data() + i * n;
      for (std::size_t c = 0; c < n; ++c) bi[c] = mad_mod(si[c], p, bi[c], qi);
    }
  }
  for (Buffer* b : {&as, &s, &s_prime}) secure_zero(b->data(), b->size() * sizeof(u64));
  return key;
}

RelinKey generate_relin_key(const SecretKey& secret, Prng& prng) {
  const OpLabel op_label("rlwe.keygen");
  const RnsBase& base = *secret.context()->key_base();
  Buffer s2(base.size() * base.n());
  backend_for(Device::cpu()).multiply(secret.eval(), secret.eval(), s2.data(), 1, base);
  RelinKey key(generate_switch_key(secret, s2.data(), kRelinearizationSource, prng));
  secure_zero(s2.data(), s2.size() * sizeof(u64));
  return key;
}

GaloisKeys generate_galois_keys(const SecretKey& secret, const std::vector<u64>& elements, Prng& prng) {
  return generate_galois_keys(secret, elements, prng, secret.context()->max_level());
}

GaloisKeys generate_galois_keys(const SecretKey& secret, const std::vector<u64>& elements, Prng& prng,
                                std::size_t level) {
  std::vector<std::pair<u64, std::size_t>> wanted;
  for (u64 g : elements) wanted.emplace_back(g, level);
  return generate_galois_keys_at_levels(secret, wanted, prng);
}

GaloisKeys generate_galois_keys_at_levels(const SecretKey& secret,
                                          const std::vector<std::pair<u64, std::size_t>>& wanted, Prng& prng) {
  const OpLabel op_label("rlwe.keygen");
  const RlweContextPtr& ctx = secret.context();
  const RnsBase& base = *ctx->key_base();
  std::vector<std::pair<u64, std::size_t>> keys_to_make;
  for (const auto& [g, level] : wanted) {
    require(g % 2 == 1 && g < 2 * ctx->n(), "rlwe.keygen",
            "Galois element must be odd and below 2N, got " + std::to_string(g));
    const bool seen = std::any_of(keys_to_make.begin(), keys_to_make.end(), [g = g](const auto& k) { return k.first == g; });
    if (!seen) keys_to_make.emplace_back(g, level);
  }
  // One child seed per key, drawn in order: the keys are the same whatever
  // the thread count, and the keys are made in parallel (sampling and seed
  // expansion are serial inside one key).
  std::vector<Seed> seeds;
  for (std::size_t i = 0; i < keys_to_make.size(); ++i) seeds.push_back(prng.next_seed());
  std::vector<std::optional<KeySwitchKey>> made(keys_to_make.size());
  auto body = [&](std::size_t begin, std::size_t end) {
    Buffer rotated(base.size() * base.n());
    for (std::size_t i = begin; i < end; ++i) {
      Prng child = Prng::from_seed(seeds[i]);
      backend_for(Device::cpu()).automorphism(secret.eval(), rotated.data(), 1, base, keys_to_make[i].first, Form::eval);
      made[i] = generate_switch_key(secret, rotated.data(), keys_to_make[i].first, child, keys_to_make[i].second);
    }
    secure_zero(rotated.data(), rotated.size() * sizeof(u64));
  };
  parallel_items(keys_to_make.size(), body);
  GaloisKeys keys(ctx);
  for (auto& key : made) keys.insert(std::move(*key));
  return keys;
}

}  // namespace ringfire
