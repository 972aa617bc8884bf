// Hierarchical rotation keys: a derived key is checked by "decrypting" it
// with the secret key, digit by digit: b_j + a_j s - g_j sigma_g(s) must be a
// small error (exact integers, centred, the same value on every prime), as it
// is for a directly generated key; a tampered master key must not give one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "ckks_test_support.h"
#include "ringfire/arith/modular.h"
#include "ringfire/io/serialize.h"
#include "ringfire/rlwe/key_derivation.h"
#include "ringfire/rlwe/keygen.h"

namespace ringfire {
namespace {

using test::expect_invalid;

RlweContextPtr small_context() {
  return std::make_shared<const RlweContext>(Parameters(test::small_literal()));
}

// The largest |b_j + a_j s - g_j sigma_g(s)| over the key's digits (log2),
// checked to be one integer polynomial: its centred residues agree on every prime.
double key_error_bits(const SecretKey& sk, const KeySwitchKey& key) {
  const RlweContext& ctx = *sk.context();
  const std::size_t n = ctx.n(), level = key.level();
  const RnsBase& base = *ctx.extended_base(level);
  Backend& be = backend_for(Device::cpu());
  // s and sigma_g(s) over q_0..q_level, P (the key base minus the unused Q primes).
  std::vector<u64> s(key.poly_words()), rotated(key.poly_words());
  const std::size_t q_limbs = level + 1, all_q = ctx.max_level() + 1;
  std::copy(sk.eval(), sk.eval() + q_limbs * n, s.begin());
  std::copy(sk.eval() + all_q * n, sk.eval() + (all_q + ctx.special_count()) * n, s.begin() + q_limbs * n);
  be.automorphism(s.data(), rotated.data(), 1, base, key.source(), Form::eval);
  double worst = 0;
  std::vector<u64> e(key.poly_words());
  for (std::size_t j = 0; j < key.digits(); ++j) {
    be.multiply(key.a(j), s.data(), e.data(), 1, base);
    be.add(e.data(), key.b(j), e.data(), 1, base);
    const auto [begin, end] = ctx.digit_range(level, j);
    for (std::size_t i = begin; i < end; ++i) {
      const Modulus& qi = base.modulus(i);
      for (std::size_t c = 0; c < n; ++c)
        e[i * n + c] = sub_mod(e[i * n + c], mul_mod(rotated[i * n + c], ctx.p_mod_q(i), qi), qi.value());
    }
    be.ntt_inverse(e.data(), 1, base);
    for (std::size_t c = 0; c < n; ++c) {
      auto centred = [&](std::size_t i) {
        const u64 q = base.modulus(i).value(), v = e[i * n + c];
        return v > q / 2 ? -static_cast<double>(q - v) : static_cast<double>(v);
      };
      const double v0 = centred(0);
      for (std::size_t i = 1; i < base.size(); ++i)
        if (centred(i) != v0) return INFINITY;  // not one small integer: no valid key
      worst = std::max(worst, std::abs(v0));
    }
  }
  return worst == 0 ? 0 : std::log2(worst);
}

TEST(KeyDerivation, DerivedKeysAreValidKeysWithASmallError) {
  const RlweContextPtr ctx = small_context();
  Prng prng = Prng::from_seed(Seed{11});
  const SecretKey sk = generate_secret_key(ctx, prng);
  const std::size_t level = 1;  // the top (2) has no room under the bound at N = 2^13
  const MasterKeys masters = generate_master_keys(sk, level, true, prng);
  EXPECT_EQ(masters.keys.size(), 12u + 1u);  // rotations 1 .. 2^11, and the conjugation
  const std::vector<u64> elements{ctx->galois_element(1), ctx->galois_element(-1), ctx->galois_element(77),
                                  ctx->galois_element(4094), ctx->conjugation_element(),
                                  ctx->galois_element(5) * ctx->conjugation_element() % (2 * ctx->n())};
  const GaloisKeys derived = derive_galois_keys(masters, elements);
  ASSERT_EQ(derived.size(), elements.size());
  const GaloisKeys direct = generate_galois_keys(sk, {ctx->galois_element(77)}, prng, level);
  const double fresh = key_error_bits(sk, direct.get(ctx->galois_element(77)));
  EXPECT_LT(fresh, 5.0);  // 6 sigma = 19.2
  for (u64 g : elements) {
    const KeySwitchKey& key = derived.get(g);
    EXPECT_EQ(key.level(), level);
    EXPECT_EQ(key.source(), g);
    // ModDown rounding per switch (about 2^6 per coefficient at N = 2^13),
    // popcount(step) + 1 switches at most: far below any prime.
    EXPECT_LT(key_error_bits(sk, key), 14.0) << "element " << g;
  }
}

TEST(KeyDerivation, MasterKeysRoundTripAndTamperingIsCaught) {
  const RlweContextPtr ctx = small_context();
  Prng prng = Prng::from_seed(Seed{12});
  const SecretKey sk = generate_secret_key(ctx, prng);
  const MasterKeys masters = generate_master_keys(sk, 1, false, prng);
  const io::Bytes bytes = io::save(masters);
  const MasterKeys loaded = io::load_master_keys(ctx, bytes.data(), bytes.size());
  EXPECT_EQ(loaded.level, 1u);
  EXPECT_EQ(loaded.keys.elements(), masters.keys.elements());
  const u64 g = ctx->galois_element(6);
  const double bits = key_error_bits(sk, derive_galois_keys(loaded, {g}).get(g));
  EXPECT_LT(bits, 14.0);
  // A master key changed in one coefficient (as an attacker with valid
  // framing could) derives keys that are no keys: the error is huge.
  MasterKeys forged = io::load_master_keys(ctx, bytes.data(), bytes.size());
  KeySwitchKey& four = const_cast<KeySwitchKey&>(forged.keys.get(ctx->galois_element(4)));
  four.b(0)[17] ^= 1;
  EXPECT_GT(key_error_bits(sk, derive_galois_keys(forged, {g}).get(g)), 30.0);
  // Conjugated elements need the conjugation master.
  expect_invalid([&] { derive_galois_keys(loaded, {ctx->conjugation_element()}); }, "conjugation master key");
  // Master keys of one level do not load under other parameters.
  ParameterLiteral other = test::small_literal();
  other.q_bits = {50, 40, 41};
  const auto other_ctx = std::make_shared<const RlweContext>(Parameters(other));
  expect_invalid([&] { io::load_master_keys(other_ctx, bytes.data(), bytes.size()); }, "different parameters");
}

TEST(KeyDerivation, RefusesLevelsWithoutRoomUnderTheBound) {
  const RlweContextPtr ctx = small_context();
  expect_invalid([&] { derivation_context(*ctx, 2); }, "no room for master keys at level 2");
  EXPECT_EQ(highest_derivation_level(*ctx), std::optional<std::size_t>(1));
  const RlweContextPtr d = derivation_context(*ctx, 1);
  EXPECT_EQ(d->params().security(), 128);
  EXPECT_LE(d->params().log_qp(), 218.0);  // N = 2^13's 128-bit bound
  EXPECT_EQ(d->params().q_primes().size(), 3u);  // q_0, q_1 and P
}

}  // namespace
}  // namespace ringfire
