// BGV/BFV: the batch encoder against direct polynomial evaluation, and every
// evaluator operation against slot arithmetic mod t (exact equality), the
// noise budget against its estimate, and overflow detection.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "ckks_test_support.h"
#include "ringfire/arith/modular.h"
#include "ringfire/arith/primes.h"
#include "ringfire/bgv/decryptor.h"
#include "ringfire/bgv/evaluator.h"
#include "ringfire/bgv/plaintext.h"
#include "ringfire/io/serialize.h"
#include "ringfire/rlwe/encryptor.h"
#include "ringfire/rlwe/keygen.h"

namespace ringfire {
namespace {

using test::expect_invalid;
using Slots = std::vector<u64>;

// m(x) mod t by Horner's rule.
u64 evaluate(const std::vector<u64>& coeffs, u64 x, const Modulus& t) {
  u64 acc = 0;
  for (std::size_t i = coeffs.size(); i-- > 0;) acc = mad_mod(acc, x, coeffs[i], t);
  return acc;
}

TEST(BgvEncoder, SlotsAreEvaluationsAtTheRotationGroupsRoots) {
  const std::size_t n = 16;
  const Modulus t(97);  // prime, 97 = 1 mod 32
  bgv::BatchEncoder encoder(n, t);
  Slots slots(n);
  for (std::size_t i = 0; i < n; ++i) slots[i] = (7 * i + 3) % 97;
  const std::vector<u64> coeffs = encoder.encode(slots);
  const u64 psi = minimal_primitive_root(97, n);
  u64 power = 1;  // 5^i mod 2N
  for (std::size_t i = 0; i < n / 2; ++i) {
    EXPECT_EQ(evaluate(coeffs, pow_mod(psi, power, t), t), slots[i]) << "row 0, slot " << i;
    EXPECT_EQ(evaluate(coeffs, pow_mod(psi, 2 * n - power, t), t), slots[n / 2 + i]) << "row 1, slot " << i;
    power = power * 5 % (2 * n);
  }
  EXPECT_EQ(encoder.decode(coeffs), slots);
}

TEST(BgvEncoder, RefusesNonBatchingModuliAndOutOfRangeValues) {
  expect_invalid([] { bgv::BatchEncoder(16, Modulus(101)); }, "cannot batch");
  bgv::BatchEncoder encoder(16, Modulus(97));
  expect_invalid([&] { encoder.encode(Slots(16, 97)); }, "not below t");
  expect_invalid([&] { encoder.encode(Slots(15, 1)); }, "expected 16");
}

// N = 8192, Q = 55 + 50 + 50 bits, P = 56 bits: within the 128-bit bound.
ParameterLiteral literal(Scheme scheme) {
  ParameterLiteral lit;
  lit.scheme = scheme;
  lit.poly_degree = 8192;
  lit.q_bits = {55, 50, 50};
  lit.p_bits = {56};
  lit.plain_bits = 17;
  return lit;
}

struct Fixture {
  explicit Fixture(Scheme scheme, ParameterLiteral lit)
      : ctx(std::make_shared<const bgv::Context>(Parameters([&] {
          lit.scheme = scheme;
          return lit;
        }()))),
        ev(ctx),
        prng(Prng::from_seed(Seed{7})),
        sk(generate_secret_key(ctx->rlwe(), prng)),
        pk(generate_public_key(sk, prng)),
        rk(generate_relin_key(sk, prng)),
        gk(generate_galois_keys(sk, {ctx->rlwe()->galois_element(1), ctx->rlwe()->galois_element(-3),
                                     ctx->rlwe()->conjugation_element()},
                                prng)),
        t(ctx->plain_modulus()),
        n(ctx->n()) {}
  explicit Fixture(Scheme scheme) : Fixture(scheme, literal(scheme)) {}

  Slots random_slots(std::uint32_t seed) const {
    std::mt19937_64 gen(seed);
    Slots out(n);
    for (u64& v : out) v = gen() % t.value();
    return out;
  }
  Ciphertext encrypt(const Slots& slots, std::size_t level) {
    return encrypt_public(pk, bgv::encode_plaintext(*ctx, ctx->batch_encoder().encode(slots), level), prng);
  }
  Slots decrypt(const Ciphertext& c) const {
    return ctx->batch_encoder().decode(bgv::decrypt(*ctx, sk, c).coefficients);
  }
  Slots map(const Slots& a, const Slots& b, u64 (*op)(u64, u64, const Modulus&)) const {
    Slots out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = op(a[i], b[i], t);
    return out;
  }

  bgv::ContextPtr ctx;
  bgv::Evaluator ev;
  Prng prng;
  SecretKey sk;
  PublicKey pk;
  RelinKey rk;
  GaloisKeys gk;
  Modulus t;
  std::size_t n;
};

u64 add_op(u64 a, u64 b, const Modulus& t) { return add_mod(a, b, t.value()); }
u64 sub_op(u64 a, u64 b, const Modulus& t) { return sub_mod(a, b, t.value()); }
u64 mul_op(u64 a, u64 b, const Modulus& t) { return mul_mod(a, b, t); }

class BgvSchemes : public ::testing::TestWithParam<Scheme> {};

TEST_P(BgvSchemes, EncryptDecryptSumsAndDifferencesAreExact) {
  Fixture f(GetParam());
  EXPECT_EQ(f.t.value() % (2 * f.n), 1u);
  const Slots a = f.random_slots(1), b = f.random_slots(2);
  const Ciphertext ca = f.encrypt(a, 2), cb = f.encrypt(b, 2);
  EXPECT_EQ(f.decrypt(ca), a);
  EXPECT_EQ(f.decrypt(f.ev.add(ca, cb)), f.map(a, b, add_op));
  EXPECT_EQ(f.decrypt(f.ev.sub(ca, cb)), f.map(a, b, sub_op));
  EXPECT_EQ(f.decrypt(f.ev.negate(ca)), f.map(Slots(f.n, 0), a, sub_op));
  // Secret-key encryption, plaintext sums, integers.
  const Ciphertext cs = encrypt_secret(f.sk, bgv::encode_plaintext(*f.ctx, f.ctx->batch_encoder().encode(a), 2), f.prng);
  EXPECT_EQ(f.decrypt(cs), a);
  const Plaintext pb = bgv::encode_plaintext(*f.ctx, f.ctx->batch_encoder().encode(b), 2);
  EXPECT_EQ(f.decrypt(f.ev.add_plain(ca, pb)), f.map(a, b, add_op));
  EXPECT_EQ(f.decrypt(f.ev.sub_plain(ca, pb)), f.map(a, b, sub_op));
  EXPECT_EQ(bgv::decode_plaintext(*f.ctx, pb), f.ctx->batch_encoder().encode(b));
  EXPECT_EQ(f.decrypt(f.ev.add_integer(ca, -5)), f.map(a, Slots(f.n, f.t.value() - 5), add_op));
  EXPECT_EQ(f.decrypt(f.ev.multiply_integer(ca, -3)), f.map(a, Slots(f.n, f.t.value() - 3), mul_op));
}

TEST_P(BgvSchemes, ProductsOfBothKindsAreExact) {
  Fixture f(GetParam());
  const Slots a = f.random_slots(3), b = f.random_slots(4);
  const Ciphertext ca = f.encrypt(a, 2), cb = f.encrypt(b, 2);
  const Slots ab = f.map(a, b, mul_op), aa = f.map(a, a, mul_op);
  // BGV: tensor times t, relinearize, switch the modulus down.
  const Ciphertext bgv_ab = f.ev.relinearize(f.ev.multiply(ca, cb), f.rk);
  EXPECT_EQ(f.decrypt(bgv_ab), ab);
  const Ciphertext reduced = f.ev.mod_reduce(bgv_ab);
  EXPECT_EQ(reduced.level(), 1u);
  EXPECT_NE(reduced.metadata().correction, 1u);
  EXPECT_EQ(f.decrypt(reduced), ab);
  EXPECT_EQ(f.decrypt(f.ev.relinearize(f.ev.square(ca), f.rk)), aa);
  // BFV: the scale-invariant product, at the top level and at level 0.
  const Ciphertext bfv_ab = f.ev.relinearize(f.ev.multiply_scale_invariant(ca, cb), f.rk);
  EXPECT_EQ(f.decrypt(bfv_ab), ab);
  EXPECT_EQ(f.decrypt(f.ev.relinearize(f.ev.square_scale_invariant(ca), f.rk)), aa);
  const Ciphertext low_a = f.ev.mod_switch(ca, 1), low_b = f.ev.mod_switch(cb, 1);
  EXPECT_EQ(f.decrypt(f.ev.relinearize(f.ev.multiply_scale_invariant(low_a, low_b), f.rk)), ab);
  // Products with a plaintext, of any correction.
  const Plaintext pb = bgv::encode_plaintext(*f.ctx, f.ctx->batch_encoder().encode(b), 1, 11);
  EXPECT_EQ(f.decrypt(f.ev.multiply_plain(reduced, pb)), f.map(ab, b, mul_op));
}

TEST_P(BgvSchemes, SeveralPrimesDropInOneRoundingAsTheyDoOneByOne) {
  Fixture f(GetParam());
  const Slots a = f.random_slots(5), b = f.random_slots(6);
  const Ciphertext ab = f.ev.relinearize(f.ev.multiply(f.encrypt(a, 2), f.encrypt(b, 2)), f.rk);
  const Ciphertext at_once = f.ev.mod_reduce_to(ab, 0), one_by_one = f.ev.mod_reduce(f.ev.mod_reduce(ab));
  EXPECT_EQ(at_once.level(), 0u);
  EXPECT_EQ(at_once.metadata().correction, one_by_one.metadata().correction);
  EXPECT_EQ(f.decrypt(at_once), f.map(a, b, mul_op));
  EXPECT_EQ(f.decrypt(at_once), f.decrypt(one_by_one));
  const double once = bgv::decrypt(*f.ctx, f.sk, at_once).noise_budget_bits;
  const double twice = bgv::decrypt(*f.ctx, f.sk, one_by_one).noise_budget_bits;
  EXPECT_GE(once, twice - 0.5);  // one rounding, not two
  EXPECT_NEAR(at_once.noise_bits(), one_by_one.noise_bits(), 0.5);
}

TEST_P(BgvSchemes, CorrectionsAreMatchedBeforeSums) {
  Fixture f(GetParam());
  const Slots a = f.random_slots(5), b = f.random_slots(6);
  const Ciphertext ca = f.encrypt(a, 2), cb = f.encrypt(b, 2);
  const Ciphertext prod = f.ev.mod_reduce(f.ev.relinearize(f.ev.multiply(ca, cb), f.rk));  // level 1, sigma != 1
  const Ciphertext low = f.ev.mod_reduce(ca);                                              // level 1, sigma = q_2^-1
  const Ciphertext fresh = f.ev.mod_switch(ca, 1);                                         // level 1, sigma = 1
  expect_invalid([&] { f.ev.add(prod, fresh); }, "correction mismatch");
  auto [x, y] = f.ev.match_corrections(prod, fresh);
  EXPECT_EQ(x.metadata().correction, y.metadata().correction);
  EXPECT_EQ(f.decrypt(f.ev.add(x, y)), f.map(f.map(a, b, mul_op), a, add_op));
  auto [u, v] = f.ev.match_corrections(low, fresh);
  EXPECT_EQ(f.decrypt(f.ev.sub(u, v)), Slots(f.n, 0));
  EXPECT_EQ(f.decrypt(f.ev.with_correction(fresh, 42)), a);
}

TEST_P(BgvSchemes, LinearCombinationsFoldEachInputsCorrectionIntoItsWeight) {
  Fixture f(GetParam());
  const Slots a = f.random_slots(8), b = f.random_slots(9);
  const Ciphertext ca = f.encrypt(a, 2), cb = f.encrypt(b, 2);
  const Ciphertext prod = f.ev.mod_reduce(f.ev.relinearize(f.ev.multiply(ca, cb), f.rk));  // level 1, sigma != 1
  const Ciphertext low = f.ev.mod_reduce(ca);                                              // level 1, q_2^-1
  const Ciphertext fresh = f.ev.mod_switch(cb, 1);                                         // level 1, sigma = 1
  ASSERT_NE(prod.metadata().correction, fresh.metadata().correction);
  const std::vector<std::int64_t> weights = {-7, 65000, 3};
  const Ciphertext sum = f.ev.linear_combination({&prod, &low, &fresh}, weights);
  EXPECT_EQ(sum.metadata().correction, prod.metadata().correction);
  Slots want(f.n);
  for (std::size_t i = 0; i < f.n; ++i) {
    std::int64_t acc = 0;
    const u64 terms[3] = {mul_mod(a[i], b[i], f.t), a[i], b[i]};
    for (int k = 0; k < 3; ++k)
      acc = (acc + weights[k] % static_cast<std::int64_t>(f.t.value()) * static_cast<std::int64_t>(terms[k])) %
            static_cast<std::int64_t>(f.t.value());
    want[i] = static_cast<u64>((acc + static_cast<std::int64_t>(f.t.value())) % static_cast<std::int64_t>(f.t.value()));
  }
  EXPECT_EQ(f.decrypt(sum), want);
  EXPECT_GT(sum.noise_bits(), std::max(prod.noise_bits(), low.noise_bits()));  // grown by the weights
  expect_invalid([&] { f.ev.linear_combination({&prod, &ca}, {1, 1}); }, "level mismatch");
  expect_invalid([&] { f.ev.linear_combination({&prod}, {1, 2}); }, "1 inputs but 2 weights");
  expect_invalid([&] { f.ev.linear_combination({}, {}); }, "at least one input");
  const Ciphertext big = f.ev.multiply(low, fresh);  // size 3
  expect_invalid([&] { f.ev.linear_combination({&low, &big}, {1, 1}); }, "differ in size");
}

TEST_P(BgvSchemes, PlaintextProductsSumInOneBuffer) {
  Fixture f(GetParam());
  const Slots a = f.random_slots(10), b = f.random_slots(11), c = f.random_slots(12), d = f.random_slots(13);
  const Ciphertext ca = f.encrypt(a, 2), cb = f.encrypt(b, 2);
  const Plaintext pc = bgv::encode_plaintext(*f.ctx, f.ctx->batch_encoder().encode(c), 2);
  const Plaintext pd = bgv::encode_plaintext(*f.ctx, f.ctx->batch_encoder().encode(d), 2);
  const Ciphertext sum = f.ev.multiply_plain_sum({&ca, &cb}, {&pc, &pd});
  EXPECT_EQ(f.decrypt(sum), f.map(f.map(a, c, mul_op), f.map(b, d, mul_op), add_op));
  EXPECT_EQ(f.decrypt(sum), f.decrypt(f.ev.add(f.ev.multiply_plain(ca, pc), f.ev.multiply_plain(cb, pd))));
  const Ciphertext low = f.ev.mod_reduce(ca), other = f.ev.mod_switch(cb, 1);  // corrections q_2^-1 and 1
  const Plaintext pc1 = bgv::encode_plaintext(*f.ctx, f.ctx->batch_encoder().encode(c), 1);
  expect_invalid([&] { f.ev.multiply_plain_sum({&low, &other}, {&pc1, &pc1}); }, "differs from the first's");
  expect_invalid([&] { f.ev.multiply_plain_sum({&ca, &low}, {&pc, &pc1}); }, "level mismatch");
  expect_invalid([&] { f.ev.multiply_plain_sum({&ca}, {&pc, &pd}); }, "1 inputs but 2 plaintexts");
}

TEST_P(BgvSchemes, RowsRotateAndSwap) {
  Fixture f(GetParam());
  const Slots a = f.random_slots(7);
  const Ciphertext ca = f.encrypt(a, 2);
  const std::size_t half = f.n / 2;
  Slots left(f.n), right3(f.n), swapped(f.n);
  for (std::size_t i = 0; i < half; ++i) {
    for (std::size_t row = 0; row < 2; ++row) {
      left[row * half + i] = a[row * half + (i + 1) % half];
      right3[row * half + i] = a[row * half + (i + half - 3) % half];
      swapped[row * half + i] = a[(1 - row) * half + i];
    }
  }
  EXPECT_EQ(f.decrypt(f.ev.rotate(ca, 1, f.gk)), left);
  EXPECT_EQ(f.decrypt(f.ev.rotate(ca, -3, f.gk)), right3);
  EXPECT_EQ(f.decrypt(f.ev.swap_rows(ca, f.gk)), swapped);
}

TEST_P(BgvSchemes, NoiseBudgetShrinksAndOverflowIsDetected) {
  Fixture f(GetParam());
  const Ciphertext ca = f.encrypt(f.random_slots(8), 2);
  const double fresh = bgv::noise_budget(*f.ctx, f.sk, ca);
  const double rough = bgv::decrypt(*f.ctx, f.sk, ca).noise_budget_bits;
  EXPECT_GT(fresh, 20.0);
  // The rough budget is exact to a fraction of a bit below ~45 bits, a lower bound above.
  if (fresh < 45.0) {
    EXPECT_NEAR(rough, fresh, 0.5);
  } else {
    EXPECT_GT(rough, 44.0);
    EXPECT_LE(rough, fresh + 0.5);
  }
  // The carried estimate is of the same size as the measured noise.
  double q_bits = 0.0;
  for (u64 q : f.ctx->params().q_primes()) q_bits += std::log2(static_cast<double>(q));
  const double measured_noise = q_bits - 1.0 - fresh;  // log2 max |t e| (infinity norm)
  const double estimate = ca.noise_bits() + std::log2(static_cast<double>(f.t.value()));
  EXPECT_NEAR(measured_noise, estimate - 0.5 * std::log2(static_cast<double>(f.n)) + 3.0, 6.0);
  // Squaring until the budget is gone: the budget falls, then decrypt refuses.
  Ciphertext c = ca.clone();
  double previous = fresh;
  bool refused = false;
  for (int i = 0; i < 6 && !refused; ++i) {
    c = f.ev.relinearize(f.ev.square_scale_invariant(c), f.rk);
    const double budget = bgv::noise_budget(*f.ctx, f.sk, c);
    EXPECT_LT(budget, previous);
    if (budget >= 1.0 && budget < 40.0) {
      EXPECT_NEAR(bgv::decrypt(*f.ctx, f.sk, c).noise_budget_bits, budget, 0.5);
    }
    previous = budget;
    if (budget < 1.0) {
      expect_invalid([&] { bgv::decrypt(*f.ctx, f.sk, c); }, "noise has overflowed");
      refused = true;
    }
  }
  EXPECT_TRUE(refused);
}

TEST_P(BgvSchemes, CiphertextsSerializeWithTheirCorrection) {
  Fixture f(GetParam());
  const Slots a = f.random_slots(9);
  const Ciphertext c = f.ev.mod_reduce(f.encrypt(a, 2));
  const Ciphertext back = io::load_ciphertext(f.ctx->rlwe(), io::save(c).data(), io::save(c).size());
  EXPECT_EQ(back.metadata().correction, c.metadata().correction);
  EXPECT_EQ(f.decrypt(back), a);
}

INSTANTIATE_TEST_SUITE_P(BgvAndBfv, BgvSchemes, ::testing::Values(Scheme::bgv, Scheme::bfv),
                         [](const auto& info) { return std::string(scheme_name(info.param)); });

TEST(BgvParameters, PlainBitsChoosesABatchingPrimeAndChecksIt) {
  ParameterLiteral lit = literal(Scheme::bgv);
  const Parameters params(lit);
  const u64 t = params.plain_modulus();
  EXPECT_TRUE(is_prime(t));
  EXPECT_EQ(t % 16384, 1u);
  EXPECT_EQ(bit_length(t), 17);
  lit.plain_bits = 14;  // below 2N: no batching prime can exist
  expect_invalid([&] { Parameters{lit}; }, "plain_bits must be in");
  lit.plain_bits = 0;
  lit.plain_modulus = 65536;  // coefficient encoding only
  const bgv::Context ctx{Parameters(lit)};
  EXPECT_FALSE(ctx.can_batch());
  expect_invalid([&] { ctx.batch_encoder(); }, "cannot batch");
  expect_invalid([] { bgv::Context{Parameters(test::small_literal())}; }, "needs BGV or BFV parameters");
}

TEST(BgvParameters, CoefficientEncodingWithAPowerOfTwoModulus) {
  ParameterLiteral lit = literal(Scheme::bfv);
  lit.plain_bits = 0;
  lit.plain_modulus = 1 << 16;
  Fixture f(Scheme::bfv, lit);
  std::vector<u64> m(f.n);
  for (std::size_t i = 0; i < f.n; ++i) m[i] = (i * 977 + 5) % 65536;
  const Ciphertext c = encrypt_public(f.pk, bgv::encode_plaintext(*f.ctx, m, 2), f.prng);
  EXPECT_EQ(bgv::decrypt(*f.ctx, f.sk, c).coefficients, m);
  // x * x: the negacyclic product mod 2^16, against a schoolbook reference.
  const Ciphertext sq = f.ev.relinearize(f.ev.square_scale_invariant(c), f.rk);
  std::vector<u64> want(f.n, 0);
  for (std::size_t i = 0; i < f.n; ++i)
    for (std::size_t j = 0; j < f.n; ++j) {
      const u64 p = m[i] * m[j] % 65536;
      const std::size_t k = (i + j) % f.n;
      want[k] = (i + j < f.n) ? (want[k] + p) % 65536 : (want[k] + 65536 - p) % 65536;
    }
  EXPECT_EQ(bgv::decrypt(*f.ctx, f.sk, sq).coefficients, want);
}

}  // namespace
}  // namespace ringfire
