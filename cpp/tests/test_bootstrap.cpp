// CKKS bootstrapping on a toy ring (N = 2^12, the N16_BOOT circuit shape):
// precision against the encoded doubles, the output level and scale, the
// simulator's agreement, Meta-BTS, serialization of the keys, and refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <memory>
#include <random>
#include <vector>

#include "ckks_test_support.h"
#include "ringfire/base/memory_pool.h"
#include "ringfire/ckks/bootstrap.h"
#include "ringfire/io/serialize.h"
#include "ringfire/rlwe/encryptor.h"
#include "ringfire/rlwe/keygen.h"

namespace ringfire {
namespace {

using Complex = std::complex<double>;
using ckks::BootstrapConfig;
using ckks::Bootstrapper;
using ckks::BootstrapKeys;
using test::expect_invalid;

ParameterLiteral toy_literal() {
  ParameterLiteral lit;
  lit.poly_degree = 1 << 12;
  lit.q_bits = {60, 40, 40, 40, 45, 45, 45};
  for (int i = 0; i < 11; ++i) lit.q_bits.push_back(60);
  for (int i = 0; i < 3; ++i) lit.q_bits.push_back(56);
  lit.p_bits = {60, 60, 60};
  lit.dnum = 7;
  lit.scale_bits = 40;
  lit.reserved_levels = 17;
  lit.insecure_no_security_check = true;
  return lit;
}

BootstrapConfig toy_config() {
  BootstrapConfig c;
  c.cts_levels = 3;
  c.stc_levels = 3;
  c.arcsine_degree = 3;
  c.log_message_ratio = 8;
  return c;
}

struct Toy {
  test::CapturedWarnings quiet;  // the toy ring is insecure by design
  ckks::ContextPtr ctx = std::make_shared<const ckks::Context>(Parameters(toy_literal()));
  Prng prng = Prng::from_seed(Prng::Seed{7});
  SecretKey sk = generate_secret_key(ctx->rlwe(), prng);
  PublicKey pk = generate_public_key(sk, prng);
  RelinKey rk = generate_relin_key(sk, prng);
  Bootstrapper boot{ctx, toy_config()};
  BootstrapKeys keys = generate_bootstrap_keys(boot, sk, prng);
  ckks::Evaluator ev{ctx};

  Ciphertext encrypt(const std::vector<Complex>& z, std::size_t level, double scale) {
    return encrypt_public(pk, ctx->encoder().encode(z.data(), z.size(), level, scale), prng);
  }
  std::vector<Complex> decrypt(const Ciphertext& c) const {
    Buffer plain(c.poly_words());
    decrypt_core(sk, c, plain.data());
    return ctx->encoder().decode_coefficients(plain.data(), c.level(), c.scale());
  }
};

Toy& toy() {
  static Toy t;
  return t;
}

std::vector<Complex> random_real(std::size_t count, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<Complex> z(count);
  for (auto& v : z) v = u(rng);
  return z;
}

// -log2 of the largest absolute error.
double min_bits(const std::vector<Complex>& got, const std::vector<Complex>& want) {
  double worst = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
  return -std::log2(worst);
}

TEST(Bootstrap, RefreshesToTheUsersTopLevelWithPrecision) {
  Toy& t = toy();
  const auto z = random_real(t.ctx->slots(), 1);
  const Ciphertext in = t.ev.mod_switch(t.encrypt(z, 3, t.ctx->scale_at(3)), 0);
  const Ciphertext out = t.boot.bootstrap(t.ev, in, t.rk, t.keys);
  EXPECT_EQ(out.level(), t.ctx->user_max_level());
  EXPECT_DOUBLE_EQ(out.scale(), t.ctx->scale_at(t.ctx->user_max_level()));
  EXPECT_GE(min_bits(t.decrypt(out), z), 22.5);  // measured 24.4 (fresh encryption noise included)
  // The simulator runs the same circuit on placeholders: same level and scale.
  const ckks::Simulator sim(t.ctx);
  const ckks::SimCiphertext predicted = t.boot.bootstrap(sim, sim.fresh(0));
  EXPECT_EQ(predicted.level, out.level());
  EXPECT_DOUBLE_EQ(predicted.scale, out.scale());
  const ckks::BootstrapPlan plan = t.boot.plan();
  EXPECT_EQ(plan.output_level, 3u);
  EXPECT_EQ(plan.levels_consumed, 17u);
  EXPECT_LE(plan.failure_log2, -128.0);
}

// The plan runs the circuit on placeholders holding blocks of a model of the host
// pool: the pool's measured growth over a bootstrap is what it says, and tracking
// memory changes no count.
TEST(Bootstrap, ThePlanCountsWhatTheCircuitHolds) {
  Toy& t = toy();
  const auto z = random_real(t.ctx->slots(), 5);
  const Ciphertext in = t.ev.mod_switch(t.encrypt(z, 3, t.ctx->scale_at(3)), 0);
  t.boot.bootstrap(t.ev, in, t.rk, t.keys);  // anything made at a first use, made
  MemoryPool& pool = host_pool();
  pool.flush();
  const PoolStats before = pool.stats();
  pool.reset_peaks();
  const Ciphertext out = t.boot.bootstrap(t.ev, in, t.rk, t.keys);
  const PoolStats after = pool.stats();
  const ckks::BootstrapPlan plan = t.boot.plan();
  const double held = static_cast<double>(after.peak_bytes_held - before.bytes_in_use - before.bytes_cached);
  const double in_use = static_cast<double>(after.peak_bytes_in_use - before.bytes_in_use);
  EXPECT_NEAR(held / static_cast<double>(plan.temporary_bytes), 1.0, 0.05);  // measured within 0.5 %
  EXPECT_NEAR(in_use / static_cast<double>(plan.temporary_in_use_bytes), 1.0, 0.05);
  EXPECT_GT(plan.temporary_bytes, plan.temporary_in_use_bytes);  // blocks the pool keeps for reuse
  const ckks::Simulator untracked(t.ctx);
  t.boot.bootstrap(untracked, untracked.fresh(0));
  EXPECT_EQ(untracked.counts().key_switches(), plan.counts.key_switches());
  EXPECT_EQ(untracked.counts().multiplications, plan.counts.multiplications);
  EXPECT_EQ(untracked.counts().rescales, plan.counts.rescales);
  EXPECT_EQ(untracked.counts().plain_multiplications, plan.counts.plain_multiplications);
  EXPECT_EQ(untracked.memory(), nullptr);
}

TEST(Bootstrap, MetaBtsGainsTheCorrectionBits) {
  Toy& t = toy();
  const auto z = random_real(t.ctx->slots(), 2);
  const Plaintext p = t.ctx->encoder().encode(z.data(), z.size(), 0, std::ldexp(1.0, 52));
  const Ciphertext in = encrypt_secret(t.sk, p, t.prng);
  const Ciphertext once = t.boot.bootstrap(t.ev, in, t.rk, t.keys);
  const Ciphertext twice = t.boot.bootstrap_twice(t.ev, in, t.rk, t.keys, 16);
  EXPECT_DOUBLE_EQ(twice.scale(), std::ldexp(1.0, 68));
  const double one = min_bits(t.decrypt(once), z), two = min_bits(t.decrypt(twice), z);
  EXPECT_GE(two, 40.0);  // measured 42.6; one bootstrap 27.4
  EXPECT_GE(two, one + 12.0);
}

TEST(Bootstrap, TheSparseSecretIsOnlyEverUnderQ0P0) {
  // The key into the ephemeral h = 32 secret is an RLWE sample under that
  // secret: its modulus must stay q_0 p_0 (about 120 bits), not q_0 P.
  Toy& t = toy();
  const Parameters& small = t.keys.to_sparse.context()->params();
  EXPECT_EQ(small.q_primes(), std::vector<u64>{t.ctx->params().q_primes()[0]});
  EXPECT_EQ(small.p_primes(), std::vector<u64>{t.ctx->params().p_primes()[0]});
  EXPECT_EQ(t.keys.to_sparse.level(), 0u);
  // The key back is under the main secret, over the whole chain.
  EXPECT_EQ(t.keys.from_sparse.fingerprint(), t.ctx->fingerprint());
  EXPECT_EQ(t.keys.from_sparse.level(), t.ctx->max_level());
}

TEST(Bootstrap, KeysRoundTripThroughTheSerializedForm) {
  Toy& t = toy();
  const io::Bytes bytes = io::save(t.keys);
  EXPECT_EQ(io::peek_kind(bytes.data(), bytes.size()), io::Kind::bootstrap_keys);
  const BootstrapKeys back = io::load_bootstrap_keys(t.ctx->rlwe(), bytes.data(), bytes.size());
  EXPECT_EQ(io::save(back), bytes);
  // The envelope says what it holds: read as another kind, it is refused.
  expect_invalid([&] { io::load_galois_keys(t.ctx->rlwe(), bytes.data(), bytes.size()); }, "expected a Galois key");
}

// Chained rotations (LinearTransform::Evaluation::chained): each DFT pass
// needs its baby stride, its giant stride and its first giant step, so the
// circuit takes a fraction of the keys, with the same precision and the same
// levels; keys of one setting are refused by the other up front.
TEST(Bootstrap, ChainedRotationsTakeAFewKeysPerPass) {
  Toy& t = toy();
  BootstrapConfig cfg = toy_config();
  cfg.chained_rotations = true;
  const Bootstrapper chained(t.ctx, cfg);
  const std::size_t fewer = chained.rotation_levels().size(), all = t.boot.rotation_levels().size();
  EXPECT_LE(fewer * 2, all) << fewer << " keys chained, " << all << " hoisted";
  EXPECT_LE(fewer, 3 * (cfg.cts_levels + cfg.stc_levels)) << fewer;
  const BootstrapKeys keys = generate_bootstrap_keys(chained, t.sk, t.prng);
  const auto z = random_real(t.ctx->slots(), 4);
  const Ciphertext in = t.ev.mod_switch(t.encrypt(z, 3, t.ctx->scale_at(3)), 0);
  const Ciphertext out = chained.bootstrap(t.ev, in, t.rk, keys);
  EXPECT_EQ(out.level(), t.ctx->user_max_level());
  EXPECT_GE(min_bits(t.decrypt(out), z), 22.5);
  const ckks::Simulator sim(t.ctx);
  EXPECT_EQ(chained.bootstrap(sim, sim.fresh(0)).level, out.level());
  expect_invalid([&] { t.boot.bootstrap(t.ev, in, t.rk, keys); }, "chained_rotations");
}

TEST(Bootstrap, RefusesWhatItCannotRun) {
  Toy& t = toy();
  BootstrapConfig too_many = toy_config();
  too_many.cts_levels = 12;
  too_many.stc_levels = 6;
  expect_invalid([&] { Bootstrapper(t.ctx, too_many); }, "reserve");
  auto plain = std::make_shared<const ckks::Context>(Parameters(test::small_literal()));
  expect_invalid([&] { Bootstrapper(plain, toy_config()); }, "reserve");
  const Ciphertext in = t.encrypt(random_real(8, 3), 3, t.ctx->scale_at(3));
  expect_invalid([&] { t.boot.bootstrap(t.ev, t.ev.multiply(in, in), t.rk, t.keys); }, "size-2");
  expect_invalid([&] { t.boot.bootstrap_twice(t.ev, in, t.rk, t.keys, 0); }, "correction_bits");
}

TEST(Bootstrap, SlotsToCoeffsFirstRunsOnTheUsersLowestLevels) {
  // The same ring with the three SlotsToCoeffs primes moved into the user's
  // chain as 40-bit primes: only CoeffsToSlots and EvalMod are reserved.
  test::CapturedWarnings quiet;
  ParameterLiteral lit = toy_literal();
  lit.q_bits = {60, 40, 40, 40, 40, 40, 40};
  for (int i = 0; i < 11; ++i) lit.q_bits.push_back(60);
  for (int i = 0; i < 3; ++i) lit.q_bits.push_back(56);
  lit.reserved_levels = 14;
  const auto ctx = std::make_shared<const ckks::Context>(Parameters(lit));
  BootstrapConfig config = toy_config();
  config.stc_first = true;
  const Bootstrapper boot(ctx, config);
  EXPECT_EQ(boot.input_level_min(), 3u);
  EXPECT_EQ(boot.output_level(), 6u);
  Prng prng = Prng::from_seed(Prng::Seed{8});
  const SecretKey sk = generate_secret_key(ctx->rlwe(), prng);
  const PublicKey pk = generate_public_key(sk, prng);
  const RelinKey rk = generate_relin_key(sk, prng);
  const BootstrapKeys keys = generate_bootstrap_keys(boot, sk, prng);
  const ckks::Evaluator ev(ctx);
  std::vector<Complex> z = random_real(ctx->slots(), 4);
  const std::vector<Complex> im = random_real(ctx->slots(), 5);
  for (std::size_t i = 0; i < z.size(); ++i) z[i] = (z[i] + Complex(0.0, im[i].real())) / std::sqrt(2.0);
  const auto encode = [&](std::size_t level) {
    return encrypt_public(pk, ctx->encoder().encode(z.data(), z.size(), level, ctx->scale_at(level)), prng);
  };
  const auto decrypt = [&](const Ciphertext& c) {
    Buffer plain(c.poly_words());
    decrypt_core(sk, c, plain.data());
    return ctx->encoder().decode_coefficients(plain.data(), c.level(), c.scale());
  };
  for (std::size_t level : {std::size_t{6}, std::size_t{3}}) {
    const Ciphertext out = boot.bootstrap(ev, encode(level), rk, keys);
    EXPECT_EQ(out.level(), 6u);
    EXPECT_DOUBLE_EQ(out.scale(), ctx->scale_at(6));
    EXPECT_GE(min_bits(decrypt(out), z), 23.0) << level;  // measured 24.2 (fresh encryption noise included)
  }
  const ckks::Simulator sim(ctx);
  const ckks::SimCiphertext predicted = boot.bootstrap(sim, sim.fresh(3));
  EXPECT_EQ(predicted.level, 6u);
  EXPECT_DOUBLE_EQ(predicted.scale, ctx->scale_at(6));
  const ckks::BootstrapPlan plan = boot.plan();
  EXPECT_EQ(plan.input_level_min, 3u);
  EXPECT_EQ(plan.levels_consumed, 17u);
  expect_invalid([&] { boot.bootstrap(ev, encode(2), rk, keys); }, "must be at level 3 or above");
  expect_invalid([&] { boot.bootstrap_twice(ev, encode(2), rk, keys, 16); }, "must be at level 3 or above");
  BootstrapConfig sparse = config;
  sparse.slots = 256;
  expect_invalid([&] { Bootstrapper(ctx, sparse); }, "needs full packing");
  BootstrapConfig no_arcsine = config;
  no_arcsine.arcsine_degree = 0;
  expect_invalid([&] { Bootstrapper(ctx, no_arcsine); }, "arcsine_degree must be odd");
}

TEST(FunctionalBootstrap, LooksUpEveryResidueOfATable) {
  Toy& t = toy();
  // Integers 0 .. 15 in the slots (each many times); a table with no symmetry.
  const std::size_t p = 16;
  std::vector<double> table(p);
  for (std::size_t m = 0; m < p; ++m) table[m] = std::sin(1.0 + 0.7 * static_cast<double>(m * m % 13));
  std::vector<Complex> z(t.ctx->slots());
  for (std::size_t i = 0; i < z.size(); ++i) z[i] = static_cast<double>((i * 7) % p);
  const Ciphertext in = t.encrypt(z, 3, t.ctx->scale_at(3));
  const Ciphertext out = t.boot.functional_bootstrap(t.ev, in, t.rk, t.keys, table);
  EXPECT_EQ(out.level(), t.boot.functional_output_level(p));
  EXPECT_EQ(out.level(), t.ctx->user_max_level());
  EXPECT_DOUBLE_EQ(out.scale(), t.ctx->scale_at(out.level()));
  std::vector<Complex> want(z.size());
  for (std::size_t i = 0; i < z.size(); ++i) want[i] = table[static_cast<std::size_t>(z[i].real())];
  EXPECT_GE(min_bits(t.decrypt(out), want), 22.0);  // measured 26
  // Larger tables take their polynomial's levels from the user's.
  EXPECT_EQ(t.boot.functional_output_level(64), 1u);
  expect_invalid([&] { t.boot.functional_output_level(256); }, "entries needs 9 levels");
  expect_invalid([&] { t.boot.functional_output_level(1); }, "the table needs 2 to 4096 entries");
  expect_invalid([&] { t.boot.functional_bootstrap(t.ev, t.ev.mod_switch(in, 2), t.rk, t.keys, table); },
                 "must be at level 3 or above");
}

// A flat table subtracts sin(2 pi x) / (2 pi) times the curve through its
// slopes: the same values at the integers, no slope there. An input error e
// then reaches the output as about e^2 times the curve's bend, where a plain
// table passes on e times its slope (up to ~p/1.6 for a sawtooth).
TEST(FunctionalBootstrap, AFlatTableCleansTheInputsError) {
  Toy& t = toy();
  const std::size_t p = 16;
  std::vector<double> table(p);
  for (std::size_t m = 0; m < p; ++m) table[m] = static_cast<double>((m * 7 + 3) % p);
  std::vector<Complex> z(t.ctx->slots()), want(z.size());
  for (std::size_t i = 0; i < z.size(); ++i) {
    const std::size_t m = (i * 5) % p;
    z[i] = static_cast<double>(m) + (i % 2 ? 0x1p-8 : -0x1p-8);
    want[i] = table[m];
  }
  const Ciphertext in = t.encrypt(z, 3, t.ctx->scale_at(3));
  const Ciphertext plain = t.boot.functional_bootstrap(t.ev, in, t.rk, t.keys, table);
  const Ciphertext flat = t.boot.functional_bootstrap(t.ev, in, t.rk, t.keys, table, nullptr, true);
  EXPECT_EQ(flat.level(), t.boot.functional_output_level(p, true));
  EXPECT_DOUBLE_EQ(flat.scale(), t.ctx->scale_at(flat.level()));
  EXPECT_LT(min_bits(t.decrypt(plain), want), 6.0);   // 2^-8 times a slope of ~16
  EXPECT_GE(min_bits(t.decrypt(flat), want), 10.0);  // about 8 e^2 = 2^-13
  expect_invalid([&] { t.boot.functional_output_level(12, true); }, "a flat table needs a power-of-two size");
}

TEST(FunctionalBootstrap, PolynomialsOnOneInputShareItsPowers) {
  Toy& t = toy();
  const auto z = random_real(t.ctx->slots(), 9);
  const Ciphertext x = t.encrypt(z, 3, t.ctx->scale_at(3));
  const ckks::Polynomial a(ckks::Basis::monomial, {0.5, -1.0, 0.25, 0.125});
  const ckks::Polynomial b(ckks::Basis::monomial, {0.0, 2.0});
  const std::vector<Ciphertext> both = t.ev.evaluate_polynomials(x, {b, a}, t.rk);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].level(), both[1].level());  // the deepest's level: degree 3 takes 2
  EXPECT_EQ(both[1].level(), 1u);
  std::vector<Complex> want_a(z.size()), want_b(z.size());
  for (std::size_t i = 0; i < z.size(); ++i) {
    want_a[i] = a(z[i].real());
    want_b[i] = b(z[i].real());
  }
  EXPECT_GE(min_bits(t.decrypt(both[1]), want_a), 25.0);
  EXPECT_GE(min_bits(t.decrypt(both[0]), want_b), 25.0);
  expect_invalid([&] { t.ev.evaluate_polynomials(x, {a, ckks::Polynomial(ckks::Basis::chebyshev, {0.0, 1.0})}, t.rk); },
                 "share one basis and interval");
}

}  // namespace
}  // namespace ringfire
