// CKKS over the RLWE layer: parameters and the security bound, the encoder
// against a direct evaluation of the plaintext polynomial, encryption and
// decryption, hybrid key switching checked against its defining identity,
// every evaluator operation's precision and bookkeeping (levels, scales,
// sizes), exact rescaling, and the evaluator's error messages. All
// randomness comes from fixed seeds, so a failure reproduces.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "ckks_test_support.h"
#include "ringfire/base/errors.h"
#include "ringfire/ckks/evaluator.h"
#include "ringfire/ring/backend.h"
#include "ringfire/ring/multiword.h"
#include "ringfire/rlwe/encryptor.h"
#include "ringfire/rlwe/key_switch.h"
#include "ringfire/rlwe/keygen.h"
#include "ringfire/rlwe/prng.h"
#include "ringfire/rlwe/sampling.h"

namespace ringfire {
namespace {

using ckks::Complex;
using ckks::Evaluator;
using ckks::plan_scale_correction;
using ckks::ScaleCorrection;

using test::expect_invalid;
using test::kN;
using test::small_literal;

Prng::Seed seed_from(std::uint8_t first) {
  Prng::Seed seed{};
  for (std::size_t i = 0; i < seed.size(); ++i) seed[i] = static_cast<std::uint8_t>(first + 13 * i);
  return seed;
}

std::vector<Complex> random_slots(std::mt19937_64& rng, std::size_t count, double amplitude = 1.0) {
  std::uniform_real_distribution<double> u(-amplitude, amplitude);
  std::vector<Complex> z(count);
  for (auto& v : z) v = Complex(u(rng), u(rng));
  return z;
}

double max_error(const std::vector<Complex>& got, const std::vector<Complex>& want) {
  EXPECT_EQ(got.size(), want.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
  return worst;
}

double bits_of(double error) { return error == 0.0 ? 100.0 : -std::log2(error); }

// A signed integer -> its residue modulo q.
u64 residue_of(__int128 v, u64 q) {
  const __int128 r = v % static_cast<__int128>(q);
  return static_cast<u64>(r < 0 ? r + q : r);
}

// The centred value of a residue modulo q.
std::int64_t centred(u64 x, u64 q) {
  return x > q / 2 ? -static_cast<std::int64_t>(q - x) : static_cast<std::int64_t>(x);
}

// Coefficient-form residues over `base` (limbs x N) -> centred integers as
// long double (CRT composition; exact for |value| < 2^64).
std::vector<long double> centred_values(const RnsBase& base, const u64* coeffs) {
  const std::size_t n = base.n(), len = base.size();
  std::vector<u64> words(n * len), half(base.product()), magnitude(len);
  base.compose(coeffs, n, words.data());
  for (std::size_t i = 0; i < len; ++i) half[i] = (half[i] >> 1) | (i + 1 < len ? half[i + 1] << 63 : 0);
  std::vector<long double> out(n);
  for (std::size_t k = 0; k < n; ++k) {
    const u64* x = words.data() + k * len;
    const bool negative = !multiword::greater_equal(half.data(), x, len);  // x > Q/2
    std::copy(x, x + len, magnitude.begin());
    if (negative) {
      std::copy(base.product().begin(), base.product().end(), magnitude.begin());
      multiword::subtract(magnitude.data(), x, len);
    }
    long double v = 0.0L;
    for (std::size_t i = len; i-- > 0;) v = v * 0x1p64L + static_cast<long double>(magnitude[i]);
    out[k] = negative ? -v : v;
  }
  return out;
}

// Shared state: one context and one set of keys for the whole file.
struct Env {
  ckks::ContextPtr ctx;
  RlweContextPtr rlwe;
  SecretKey sk;
  PublicKey pk;
  RelinKey rk;
  GaloisKeys gk;
  SecretKey other_sk;
  std::unique_ptr<Evaluator> ev;
  std::vector<long long> keyed_steps;

  static Env make() {
    auto ctx = std::make_shared<const ckks::Context>(Parameters(small_literal()));
    const RlweContextPtr& rlwe = ctx->rlwe();
    Prng prng = Prng::from_seed(seed_from(1));
    SecretKey sk = generate_secret_key(rlwe, prng);
    PublicKey pk = generate_public_key(sk, prng);
    RelinKey rk = generate_relin_key(sk, prng);
    const std::vector<long long> steps{1, 2, 8, -1};
    std::vector<u64> elements;
    for (long long s : steps) elements.push_back(rlwe->galois_element(s));
    elements.push_back(rlwe->conjugation_element());
    GaloisKeys gk = generate_galois_keys(sk, elements, prng);
    SecretKey other = generate_secret_key(rlwe, prng);
    return Env{ctx, rlwe, std::move(sk), std::move(pk), std::move(rk), std::move(gk), std::move(other),
               std::make_unique<Evaluator>(ctx), steps};
  }

  std::size_t top() const { return ctx->max_level(); }
  std::size_t slots() const { return ctx->slots(); }
  u64 q(std::size_t i) const { return ctx->params().q_primes()[i]; }

  Ciphertext encrypt(const std::vector<Complex>& z, std::size_t level, Prng& prng, bool secret = false) const {
    const Plaintext p = ctx->encoder().encode(z.data(), z.size(), level, ctx->scale_at(level));
    return secret ? encrypt_secret(sk, p, prng) : encrypt_public(pk, p, prng);
  }

  std::vector<Complex> decrypt(const Ciphertext& c, const SecretKey* key = nullptr) const {
    Buffer plain(c.poly_words());
    decrypt_core(key ? *key : sk, c, plain.data());
    return ctx->encoder().decode_coefficients(plain.data(), c.level(), c.scale());
  }
};

Env& env() {
  static Env e = Env::make();
  return e;
}

// What most tests start from: the shared context and keys (Env), its
// evaluator, and a generator and an RNG seeded from the test's name (so each
// test's random inputs are fixed, and differ from the other tests').
class CkksTest : public ::testing::Test {
 protected:
  static std::uint64_t name_seed() {
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    return fnv1a64(name.data(), name.size());
  }
  const Env& e = env();
  const Evaluator& ev = *e.ev;
  Prng prng = Prng::from_seed(seed_from(static_cast<std::uint8_t>(name_seed())));
  std::mt19937_64 rng{name_seed()};
};

class CkksEncoder : public CkksTest {};
class CkksEncryption : public CkksTest {};
class CkksKeySwitch : public CkksTest {};
class CkksEvaluator : public CkksTest {};

// ---- parameters ----------------------------------------------------------------

TEST(CkksParameters, SmallSetPassesThe128BitCheck) {
  const Parameters p(small_literal());
  EXPECT_EQ(p.n(), kN);
  EXPECT_EQ(p.slots(), kN / 2);
  ASSERT_EQ(p.q_primes().size(), 3u);
  ASSERT_EQ(p.p_primes().size(), 1u);
  EXPECT_EQ(p.max_level(), 2u);
  EXPECT_EQ(p.security(), 128);
  EXPECT_EQ(p.scale_bits(), 40);
  const double sizes[] = {50, 40, 40};
  for (std::size_t i = 0; i < 3; ++i) {
    const u64 q = p.q_primes()[i];
    // Rescaling primes straddle 2^40 (nearest to the running scale).
    EXPECT_NEAR(std::log2(static_cast<double>(q)), sizes[i], 1e-3);
    EXPECT_EQ(q % (2 * kN), 1u) << "q_" << i << " is not NTT-friendly";
  }
  EXPECT_EQ(64 - __builtin_clzll(p.p_primes()[0]), 60);
  EXPECT_GT(p.log_qp(), 189.9);
  EXPECT_LT(p.log_qp(), 190.1);
  // dnum 0: digits as wide as P (60 bits) covers, one 50-bit prime each.
  EXPECT_EQ(p.alpha(), 1u);
  EXPECT_EQ(p.dnum(), 3u);
  EXPECT_NE(p.describe().find("N=8192"), std::string::npos);
}

TEST(CkksParameters, SecurityRefusal) {
  ParameterLiteral lit;
  lit.poly_degree = 4096;
  lit.q_bits = {40, 40, 40};
  lit.p_bits = {40};
  expect_invalid([&] { Parameters p(lit); }, "N=4096 allows log2(QP) <= 109");
  // security 0 is not a way around the bound: only the named opt-out is.
  lit.security = 0;
  expect_invalid([&] { Parameters p(lit); }, "security must be 128, 192 or 256 bits, got 0");
  lit.security = 128;
  lit.insecure_no_security_check = true;
  const test::CapturedWarnings warnings;
  const int before = warnings.count();
  EXPECT_EQ(Parameters{lit}.security(), 0);
  EXPECT_EQ(Parameters{lit}.security(), 0);
  EXPECT_EQ(warnings.count(), before + 2) << "the opt-out warns every time";
  EXPECT_NE(warnings.last().find("insecure_no_security_check"), std::string::npos) << warnings.last();
  // 192-bit needs an even smaller modulus at N=8192.
  ParameterLiteral big = small_literal();
  big.security = 192;
  EXPECT_THROW(Parameters{big}, InvalidArgument);
}

TEST(CkksParameters, LiteralValidation) {
  ParameterLiteral lit = small_literal();
  lit.poly_degree = 3000;
  EXPECT_THROW(Parameters{lit}, InvalidArgument);
  lit = small_literal();
  lit.q_bits = {50, 62};  // the arithmetic needs q < 2^61
  expect_invalid([&] { Parameters p(lit); }, "coeff_bits entries must be in [20, 61], got 62");
  lit = small_literal();
  lit.p_bits = {62};
  expect_invalid([&] { Parameters p(lit); }, "special_bits entries must be in [20, 61], got 62");
  lit = small_literal();
  lit.p_bits = {};
  EXPECT_THROW(Parameters{lit}, InvalidArgument);
  lit = small_literal();
  lit.dnum = 4;  // more digits than primes
  EXPECT_THROW(Parameters{lit}, InvalidArgument);
  lit = small_literal();
  lit.dnum = 1;  // one 130-bit digit, P has 60 bits
  expect_invalid([&] { Parameters p(lit); }, "must cover the widest key-switching digit");
  lit = small_literal();
  lit.security = 100;
  EXPECT_THROW(Parameters{lit}, InvalidArgument);
  // CKKS needs a scale.
  lit = small_literal();
  lit.scale_bits = 0;
  EXPECT_THROW(ckks::Context{Parameters(lit)}, InvalidArgument);
}

TEST(RlweParameters, SchemeAndPlaintextModulus) {
  ParameterLiteral lit = small_literal(0);
  lit.scheme = Scheme::bgv;
  lit.plain_modulus = 65537;
  const Parameters bgv(lit);
  EXPECT_EQ(bgv.scheme(), Scheme::bgv);
  EXPECT_EQ(bgv.plain_modulus(), 65537u);
  EXPECT_EQ(bgv.describe().rfind("BGV t=65537: N=8192", 0), 0u) << bgv.describe();
  EXPECT_EQ(Parameters(small_literal()).describe().rfind("CKKS: N=8192", 0), 0u);
  lit.plain_modulus = 1;
  expect_invalid([&] { Parameters p(lit); }, "plaintext modulus t in [2, 2^60)");
  lit.plain_modulus = bgv.q_primes()[1] * 3;  // shares a prime with Q
  expect_invalid([&] { Parameters p(lit); }, "shares the factor");
  lit.plain_modulus = 65537;
  lit.scale_bits = 40;
  expect_invalid([&] { Parameters p(lit); }, "has no scale");
  ParameterLiteral ckks = small_literal();
  ckks.plain_modulus = 17;
  expect_invalid([&] { Parameters p(ckks); }, "CKKS has no plaintext modulus");
}

TEST(CkksParameters, DnumNormalisation) {
  const test::CapturedWarnings quiet;  // the toy sizes below use the named opt-out
  ParameterLiteral lit;
  lit.poly_degree = kN;
  lit.q_bits = std::vector<int>(7, 25);
  lit.p_bits = {60};
  lit.insecure_no_security_check = true;  // 235 bits: over the N=8192 bound, irrelevant here
  lit.dnum = 5;
  const Parameters p(lit);
  EXPECT_EQ(p.alpha(), 2u);  // ceil(7 / 5)
  EXPECT_EQ(p.dnum(), 4u);   // ceil(7 / 2)
  const RlweContext ctx(p);
  EXPECT_EQ(ctx.digit_count(6), 4u);
  EXPECT_EQ(ctx.digit_range(6, 3), (std::pair<std::size_t, std::size_t>{6, 7}));
  EXPECT_EQ(ctx.digit_count(2), 2u);
  EXPECT_EQ(ctx.digit_range(2, 1), (std::pair<std::size_t, std::size_t>{2, 3}));

  lit.dnum = 7;
  EXPECT_EQ(Parameters(lit).alpha(), 1u);
  lit.dnum = 6;  // alpha 2 -> 4 digits
  EXPECT_EQ(Parameters(lit).alpha(), 2u);
  EXPECT_EQ(Parameters(lit).dnum(), 4u);
  lit.dnum = 0;  // P has 60 bits: two 25-bit primes per digit
  EXPECT_EQ(Parameters(lit).alpha(), 2u);
  EXPECT_EQ(Parameters(lit).dnum(), 4u);
  lit.dnum = 8;
  EXPECT_THROW(Parameters{lit}, InvalidArgument);
  // A digit wider than P is refused: alpha 3 (75 bits) > 60 bits.
  lit.dnum = 3;
  expect_invalid([&] { Parameters p3(lit); }, "must cover the widest key-switching digit");
  lit.p_bits = {60, 60};
  EXPECT_EQ(Parameters(lit).alpha(), 3u);
  EXPECT_EQ(Parameters(lit).dnum(), 3u);
}

TEST(CkksParameters, FingerprintIsStableAndDiscriminating) {
  const test::CapturedWarnings quiet;
  const Parameters a(small_literal()), b(small_literal());
  EXPECT_EQ(a.fingerprint(), b.fingerprint());
  EXPECT_EQ(a.q_primes(), b.q_primes());
  EXPECT_EQ(a.p_primes(), b.p_primes());
  // Explicit primes reproduce it.
  ParameterLiteral explicit_primes = small_literal();
  explicit_primes.q_primes = a.q_primes();
  explicit_primes.p_primes = a.p_primes();
  explicit_primes.dnum = a.dnum();
  const Parameters c(explicit_primes);
  EXPECT_EQ(c.fingerprint(), a.fingerprint());

  std::vector<std::uint64_t> prints{a.fingerprint()};
  ParameterLiteral lit = small_literal();
  lit.scale_bits = 39;
  prints.push_back(Parameters(lit).fingerprint());
  lit = small_literal();
  lit.insecure_no_security_check = true;
  prints.push_back(Parameters(lit).fingerprint());
  lit.p_bits = {60, 60};
  lit.dnum = 3;
  prints.push_back(Parameters(lit).fingerprint());
  lit.dnum = 2;  // the same primes, another digit split
  prints.push_back(Parameters(lit).fingerprint());
  lit = small_literal();
  lit.q_bits = {50, 40, 41};
  prints.push_back(Parameters(lit).fingerprint());
  lit = small_literal();
  lit.p_bits = {59};
  prints.push_back(Parameters(lit).fingerprint());
  lit = small_literal();
  lit.poly_degree = kN * 2;
  prints.push_back(Parameters(lit).fingerprint());
  // The scheme and the plaintext modulus change what a ciphertext means.
  lit = small_literal(0);
  lit.scheme = Scheme::bgv;
  lit.plain_modulus = 65537;
  prints.push_back(Parameters(lit).fingerprint());
  lit.scheme = Scheme::bfv;
  prints.push_back(Parameters(lit).fingerprint());
  lit.plain_modulus = 65539;
  prints.push_back(Parameters(lit).fingerprint());
  std::vector<std::uint64_t> sorted(prints);
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::unique(sorted.begin(), sorted.end()), sorted.end()) << "two different literals share a fingerprint";
}

TEST(CkksParameters, CanonicalScaleChain) {
  const Env& e = env();
  // Primes of about the scale's size: the top at 2^40 exactly, products land exactly.
  EXPECT_EQ(e.ctx->default_scale(), std::ldexp(1.0, 40));
  EXPECT_EQ(e.ctx->scale_at(2), std::ldexp(1.0, 40));
  for (std::size_t level = 1; level <= 2; ++level)
    EXPECT_EQ(e.ctx->scale_at(level - 1), e.ctx->scale_at(level) * e.ctx->scale_at(level) / static_cast<double>(e.q(level)));
  EXPECT_THROW(e.ctx->scale_at(3), InvalidArgument);
}

TEST(CkksParameters, ALargeTopPrimeRaisesTheTopScaleInsteadOfCollapsingTheChain) {
  // SEAL's habit: a 60-bit prime listed last among the ciphertext primes.
  ParameterLiteral lit = small_literal();
  lit.poly_degree = 1 << 14;
  lit.q_bits = {60, 40, 40, 40, 40, 40, 40, 60};
  const ckks::Context ctx{Parameters(lit)};
  EXPECT_NEAR(std::log2(ctx.scale_at(7)), 50.0, 0.01);
  EXPECT_EQ(ctx.default_scale(), ctx.scale_at(7));
  for (std::size_t level = 0; level < 7; ++level) EXPECT_NEAR(std::log2(ctx.scale_at(level)), 40.0, 0.01) << level;
}

TEST(CkksParameters, AChainThatCannotHoldItsScaleIsRefused) {
  // At scale 2^50, a 22-bit q_1 puts level 1 at 2^36 from below (14 bits off)
  // and level 0 at 2^78 from above.
  ParameterLiteral lit = small_literal(50);
  lit.q_bits = {60, 22, 50};
  expect_invalid([&] { ckks::Context{Parameters(lit)}; }, "22-bit prime q_1");
}

// ---- encoder -------------------------------------------------------------------

TEST_F(CkksEncoder, RoundTripAtEveryLevel) {
  for (std::size_t level = 0; level <= e.top(); ++level) {
    const auto z = random_slots(rng, e.slots());
    const Plaintext p = e.ctx->encoder().encode(z.data(), z.size(), level, std::ldexp(1.0, 40));
    EXPECT_EQ(p.level(), level);
    EXPECT_FALSE(p.is_scalar());
    EXPECT_LT(max_error(e.ctx->encoder().decode(p), z), 0x1p-30) << "level " << level;
  }
  // Short input is zero padded.
  const auto z = random_slots(rng, 100);
  const auto back = e.ctx->encoder().decode(e.ctx->encoder().encode(z.data(), z.size(), 2, std::ldexp(1.0, 40)));
  for (std::size_t i = 0; i < back.size(); ++i)
    EXPECT_LT(std::abs(back[i] - (i < z.size() ? z[i] : Complex(0.0))), 0x1p-30) << "slot " << i;
}

// Levels 0 and 1 decode on 128-bit integers, level 2 on word arrays: the same signed
// integers (random, and the edges of level 0's range) decode to the same doubles.
TEST_F(CkksEncoder, OneAndTwoLimbsDecodeAsTheWordArraysDo) {
  const std::size_t n = kN;
  const u64 q0 = e.rlwe->level_base(0)->modulus(0).value();
  const u64 q1 = e.rlwe->level_base(1)->modulus(1).value();
  std::mt19937_64 gen(2026);
  for (const int bits : {47, 87}) {  // within level 0's range, then only within level 1's
    std::vector<__int128> v(n);
    for (std::size_t k = 0; k < n; ++k) {
      const __int128 magnitude = ((static_cast<__int128>(gen()) << 64) | gen()) & ((__int128{1} << bits) - 1);
      v[k] = (gen() & 1) ? -magnitude : magnitude;
    }
    if (bits == 47) v[0] = (q0 - 1) / 2, v[1] = -static_cast<__int128>((q0 - 1) / 2), v[2] = 0, v[3] = -1;
    else v[0] = (static_cast<__int128>(q0) * q1 - 1) / 2, v[1] = -v[0];
    std::vector<std::vector<Complex>> decoded;
    for (std::size_t level = bits == 47 ? 0 : 1; level <= 2; ++level) {
      const RnsBase& base = *e.rlwe->level_base(level);
      std::vector<u64> coeffs(base.size() * n);
      for (std::size_t i = 0; i < base.size(); ++i) {
        const __int128 q = base.modulus(i).value();
        for (std::size_t k = 0; k < n; ++k) coeffs[i * n + k] = static_cast<u64>(((v[k] % q) + q) % q);
      }
      decoded.push_back(e.ctx->encoder().decode_coefficients(coeffs.data(), level, std::ldexp(1.0, 40)));
    }
    for (std::size_t d = 0; d + 1 < decoded.size(); ++d)
      for (std::size_t j = 0; j < decoded[d].size(); ++j) {
        ASSERT_EQ(decoded[d][j].real(), decoded.back()[j].real()) << bits << " bits, slot " << j;
        ASSERT_EQ(decoded[d][j].imag(), decoded.back()[j].imag()) << bits << " bits, slot " << j;
      }
  }
}

TEST_F(CkksEncoder, FftPairIsInverse) {
  const auto z = random_slots(rng, e.slots(), 100.0);
  const auto coeffs = e.ctx->encoder().slots_to_coefficients(z);
  ASSERT_EQ(coeffs.size(), kN);
  EXPECT_LT(max_error(e.ctx->encoder().coefficients_to_slots(coeffs), z), 1e-9);
  EXPECT_THROW(e.ctx->encoder().slots_to_coefficients(std::vector<Complex>(3)), InvalidArgument);
  EXPECT_THROW(e.ctx->encoder().coefficients_to_slots(std::vector<double>(3)), InvalidArgument);
}

// Slot j is m(zeta^(5^j)) / scale, zeta = exp(i pi / N): evaluate both the
// real coefficient vector and the encoded integer polynomial directly.
TEST_F(CkksEncoder, SlotIsEvaluationAtRotationGroup) {
  const ckks::Encoder& enc = e.ctx->encoder();
  const auto z = random_slots(rng, e.slots());
  const auto coeffs = enc.slots_to_coefficients(z);

  // The encoded plaintext's integer coefficients (|c| < 2^42 < q_0 / 2).
  const double scale = std::ldexp(1.0, 40);
  const Plaintext p = enc.encode(z.data(), z.size(), 0, scale);
  std::vector<u64> limb(p.data(), p.data() + kN);
  backend_for(Device::cpu()).ntt_inverse(limb.data(), 1, *e.rlwe->level_base(0));
  std::vector<long double> ints(kN);
  for (std::size_t k = 0; k < kN; ++k) ints[k] = static_cast<long double>(centred(limb[k], e.q(0)));

  const long double pi = 3.141592653589793238462643383279502884L;
  u64 power = 1;  // 5^j mod 2N
  std::size_t j = 0;
  for (std::size_t target : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{77},
                             std::size_t{1000}, e.slots() - 1}) {
    for (; j < target; ++j) power = power * 5 % (2 * kN);
    const long double angle = pi * static_cast<long double>(power) / static_cast<long double>(kN);
    const std::complex<long double> x(std::cos(angle), std::sin(angle));
    std::complex<long double> m_real(0.0L), m_int(0.0L);
    for (std::size_t k = kN; k-- > 0;) {
      m_real = m_real * x + static_cast<long double>(coeffs[k]);
      m_int = m_int * x + ints[k];
    }
    const std::complex<long double> want(z[target].real(), z[target].imag());
    EXPECT_LT(std::abs(m_real - want), 1e-9L) << "slot " << target;
    EXPECT_LT(std::abs(m_int / static_cast<long double>(scale) - want), 0x1p-30L) << "slot " << target;
  }
}

TEST_F(CkksEncoder, ScalarPlaintextDetection) {
  const ckks::Encoder& enc = e.ctx->encoder();
  const double scale = std::ldexp(1.0, 40);
  const std::size_t slots = e.slots();

  std::vector<Complex> same(slots, Complex(-0.75, 0.0));
  const Plaintext p = enc.encode(same.data(), slots, 1, scale);
  ASSERT_TRUE(p.is_scalar());
  EXPECT_EQ(p.scalar_value(), Complex(-0.75, 0.0));
  ASSERT_EQ(p.scalar_residues().size(), 2u);
  const __int128 scaled = -static_cast<__int128>(std::llround(0.75 * scale));
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(p.scalar_residues()[i], residue_of(scaled, e.q(i)));
    // The polynomial data hold the constant in evaluation form.
    for (std::size_t k = 0; k < kN; k += 511) EXPECT_EQ(p.data()[i * kN + k], p.scalar_residues()[i]);
  }
  for (const Complex& v : enc.decode(p)) ASSERT_LT(std::abs(v - Complex(-0.75, 0.0)), 0x1p-30);
  EXPECT_EQ(enc.scalar_residues(-0.75, 1, scale, "test"), p.scalar_residues());

  // Not scalar: a shorter vector (the rest are zeros), one different entry,
  // a complex constant (a + b X^(N/2)), an empty vector.
  EXPECT_FALSE(enc.encode(same.data(), slots - 1, 1, scale).is_scalar());
  std::vector<Complex> almost(same);
  almost[slots / 2] = Complex(-0.5, 0.0);
  EXPECT_FALSE(enc.encode(almost.data(), slots, 1, scale).is_scalar());
  std::vector<Complex> complex_const(slots, Complex(0.5, 0.25));
  const Plaintext pc = enc.encode(complex_const.data(), slots, 1, scale);
  EXPECT_FALSE(pc.is_scalar());
  EXPECT_LT(max_error(enc.decode(pc), complex_const), 0x1p-30);
  const Plaintext ps = enc.encode_scalar(Complex(0.5, 0.25), 1, scale);
  EXPECT_FALSE(ps.is_scalar());
  EXPECT_LT(max_error(enc.decode(ps), complex_const), 0x1p-30);
  EXPECT_FALSE(enc.encode(same.data(), 0, 1, scale).is_scalar());
  EXPECT_TRUE(enc.encode_scalar(Complex(2.0, 0.0), 0, scale).is_scalar());
}

TEST_F(CkksEncoder, RejectsBadInput) {
  const ckks::Encoder& enc = e.ctx->encoder();
  const double scale = std::ldexp(1.0, 40);
  std::vector<Complex> z(e.slots() + 1, Complex(0.1, 0.0));
  expect_invalid([&] { enc.encode(z.data(), z.size(), 2, scale); }, "[ckks.encode]");
  z.resize(4);
  z[2] = Complex(std::nan(""), 0.0);
  EXPECT_THROW(enc.encode(z.data(), z.size(), 2, scale), InvalidArgument);
  z[2] = Complex(0.0, INFINITY);
  EXPECT_THROW(enc.encode(z.data(), z.size(), 2, scale), InvalidArgument);
  z[2] = 0.0;
  EXPECT_THROW(enc.encode(z.data(), z.size(), 2, 0.0), InvalidArgument);
  EXPECT_THROW(enc.encode(z.data(), z.size(), 2, -scale), InvalidArgument);
  EXPECT_THROW(enc.encode(z.data(), z.size(), 3, scale), InvalidArgument);
  // One slot of 2^30 gives coefficients near 2^18; times 2^40 they do not fit
  // q_0 (50 bits) but fit level 2 (130 bits).
  z[1] = Complex(std::ldexp(1.0, 30), 0.0);
  EXPECT_THROW(enc.encode(z.data(), z.size(), 0, scale), InvalidArgument);
  EXPECT_NO_THROW(enc.encode(z.data(), z.size(), 2, scale));
  EXPECT_THROW(enc.encode_scalar(Complex(std::ldexp(1.0, 20), 0.0), 0, scale), InvalidArgument);
  // Finite values whose scaled coefficients overflow a double: a clear error,
  // no float-to-int conversion of infinity (undefined; UBSan reports it).
  z[1] = Complex(1e300, 0.0);
  expect_invalid([&] { enc.encode(z.data(), z.size(), 2, scale); }, "overflows a double");
  expect_invalid([&] { enc.encode_scalar(Complex(1e300, 0.0), 2, scale); }, "overflows a double");
}

// ---- encryption ------------------------------------------------------------------

TEST_F(CkksEncryption, PublicAndSecretKeyPrecision) {
  for (std::size_t level : {std::size_t{2}, std::size_t{0}}) {
    const auto z = random_slots(rng, e.slots());
    const Ciphertext cp = e.encrypt(z, level, prng, false);
    const Ciphertext cs = e.encrypt(z, level, prng, true);
    EXPECT_EQ(cp.size(), 2u);
    EXPECT_EQ(cp.level(), level);
    EXPECT_EQ(cp.scale(), e.ctx->scale_at(level));
    EXPECT_FALSE(cp.seed().has_value());
    EXPECT_TRUE(cs.seed().has_value());
    EXPECT_GE(bits_of(max_error(e.decrypt(cp), z)), 20.0) << "public key, level " << level;
    EXPECT_GE(bits_of(max_error(e.decrypt(cs), z)), 20.0) << "secret key, level " << level;
  }
}

TEST_F(CkksEncryption, SameSeedSameCiphertext) {
  const auto z = random_slots(rng, e.slots());
  Prng a = Prng::from_seed(seed_from(3)), b = Prng::from_seed(seed_from(3));
  const Ciphertext ca = e.encrypt(z, 2, a), cb = e.encrypt(z, 2, b);
  EXPECT_TRUE(std::equal(ca.data(), ca.data() + 2 * ca.poly_words(), cb.data()));
  const Ciphertext cc = e.encrypt(z, 2, a);  // the stream moved on
  EXPECT_FALSE(std::equal(ca.data(), ca.data() + 2 * ca.poly_words(), cc.data()));
}

// Encrypting the encoder's coefficients with the error added before their NTT gives the words
// that encrypting the encoded plaintext gives, from the same draws: vectors, complex ones, an
// all-one-value vector (the scalar plaintext), at every level.
TEST_F(CkksEncryption, FromCoefficientsGivesTheSameCiphertext) {
  const std::size_t n = e.ctx->rlwe()->n();
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<Complex> real(300), mixed(e.slots()), same(e.slots(), Complex(-0.625, 0.0));
  for (Complex& z : real) z = Complex(uniform(rng), 0.0);
  for (Complex& z : mixed) z = Complex(uniform(rng), uniform(rng));
  for (std::size_t level = 0; level <= e.top(); ++level)
    for (const std::vector<Complex>* values : {&real, &mixed, &same}) {
      const double scale = e.ctx->scale_at(level);
      Prng first = Prng::from_seed(seed_from(42)), second = Prng::from_seed(seed_from(42));
      const Ciphertext want =
          encrypt_secret(e.sk, e.ctx->encoder().encode(values->data(), values->size(), level, scale), first);
      Buffer message((level + 1) * n);
      const Metadata meta = e.ctx->encoder().encode_coefficients(values->data(), values->size(), level, scale,
                                                                  message.data());
      const Ciphertext got = encrypt_secret_coefficients(e.sk, e.rlwe, level, meta, message.data(), second);
      ASSERT_EQ(got.level(), want.level());
      EXPECT_EQ(got.scale(), want.scale());
      EXPECT_EQ(got.is_complex(), want.is_complex());
      for (std::size_t i = 0; i < 2; ++i)
        EXPECT_TRUE(std::equal(got.poly(i), got.poly(i) + got.poly_words(), want.poly(i)))
            << "level " << level << ", polynomial " << i;
      EXPECT_EQ(first.position(), second.position());
    }
}

TEST_F(CkksEncryption, WrongSecretKeyGivesGarbage) {
  const auto z = random_slots(rng, e.slots());
  for (bool secret : {false, true}) {
    const Ciphertext c = e.encrypt(z, 2, prng, secret);
    EXPECT_LT(bits_of(max_error(e.decrypt(c, &e.other_sk), z)), 2.0);
  }
}

// ---- key switching -------------------------------------------------------------

// out0 + out1 * s = c * s' + small error, at every level.
TEST_F(CkksKeySwitch, SwitchesFromRandomKeyToSecretKey) {
  const RlweContext& rc = *e.rlwe;
  const RnsBase& kb = *rc.key_base();
  Backend& be = backend_for(Device::cpu());
  Buffer s_prime(kb.size() * kN);
  sample_ternary_eval(prng, kb, s_prime.data());
  const KeySwitchKey key = generate_switch_key(e.sk, s_prime.data(), kRelinearizationSource, prng);
  EXPECT_EQ(key.digits(), 3u);
  EXPECT_EQ(key.seeds().size(), 3u);

  for (std::size_t level : {std::size_t{2}, std::size_t{1}, std::size_t{0}}) {
    const RnsBase& base = *rc.level_base(level);
    const std::size_t words = (level + 1) * kN;
    Buffer c(words), out0(words), out1(words), lhs(words), cs(words);
    sample_uniform(prng, base, c.data());
    key_switch(rc, c.data(), level, key, out0.data(), out1.data());
    be.multiply(out1.data(), e.sk.eval(), lhs.data(), 1, base);
    be.add(lhs.data(), out0.data(), lhs.data(), 1, base);
    // The same, against s instead of s' (must be far from small).
    Buffer wrong(words);
    be.multiply(c.data(), e.sk.eval(), cs.data(), 1, base);
    be.sub(lhs.data(), cs.data(), wrong.data(), 1, base);
    be.multiply(c.data(), s_prime.data(), cs.data(), 1, base);
    be.sub(lhs.data(), cs.data(), lhs.data(), 1, base);
    be.ntt_inverse(lhs.data(), 1, base);
    be.ntt_inverse(wrong.data(), 1, base);

    std::int64_t worst = 0, worst_wrong = 0;
    bool consistent = true;
    for (std::size_t k = 0; k < kN; ++k) {
      const std::int64_t v = centred(lhs.data()[k], e.q(0));
      worst = std::max<std::int64_t>(worst, v < 0 ? -v : v);
      // A small error is the same signed integer on every limb.
      for (std::size_t i = 1; i <= level; ++i)
        consistent = consistent && lhs.data()[i * kN + k] == residue_of(v, e.q(i));
      const std::int64_t w = centred(wrong.data()[k], e.q(0));
      worst_wrong = std::max<std::int64_t>(worst_wrong, w < 0 ? -w : w);
    }
    EXPECT_LT(worst, std::int64_t{1} << 25) << "level " << level;
    EXPECT_TRUE(consistent) << "level " << level << ": the error differs between limbs";
    EXPECT_GT(worst_wrong, std::int64_t{1} << 40) << "level " << level;
  }
}

// ---- evaluator: arithmetic ---------------------------------------------------------

TEST_F(CkksEvaluator, MultiplyRelinearizeRescale) {
  const auto x = random_slots(rng, e.slots()), y = random_slots(rng, e.slots());
  const Ciphertext cx = e.encrypt(x, 2, prng), cy = e.encrypt(y, 2, prng, true);
  std::vector<Complex> xy(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) xy[i] = x[i] * y[i];

  const Ciphertext m = ev.multiply(cx, cy);
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(m.level(), 2u);
  EXPECT_EQ(m.scale(), cx.scale() * cy.scale());
  EXPECT_FALSE(m.seed().has_value());
  EXPECT_GE(bits_of(max_error(e.decrypt(m), xy)), 20.0) << "size 3";
  const Ciphertext r = ev.relinearize(m, e.rk);
  EXPECT_EQ(r.size(), 2u);
  EXPECT_EQ(r.scale(), m.scale());
  EXPECT_GE(bits_of(max_error(e.decrypt(r), xy)), 20.0) << "relinearized";
  const Ciphertext s = ev.rescale(r);
  EXPECT_EQ(s.level(), 1u);
  EXPECT_EQ(s.scale(), m.scale() / static_cast<double>(e.q(2)));
  EXPECT_EQ(s.scale(), e.ctx->scale_at(1));
  EXPECT_GE(bits_of(max_error(e.decrypt(s), xy)), 20.0) << "rescaled";

  // A second product at level 1 lands on level 0 at scale_at(0).
  std::vector<Complex> xyxy(xy.size());
  for (std::size_t i = 0; i < xy.size(); ++i) xyxy[i] = xy[i] * xy[i];
  const Ciphertext t = ev.rescale(ev.relinearize(ev.multiply(s, s), e.rk));
  EXPECT_EQ(t.level(), 0u);
  EXPECT_EQ(t.scale(), e.ctx->scale_at(0));
  EXPECT_GE(bits_of(max_error(e.decrypt(t), xyxy)), 18.0);

  // In place variants agree.
  Ciphertext inplace = m.clone();
  ev.relinearize_inplace(inplace, e.rk);
  ev.rescale_inplace(inplace);
  EXPECT_TRUE(std::equal(inplace.data(), inplace.data() + 2 * inplace.poly_words(), s.data()));
}

// relinearize_rescale divides once by P * q_level where relinearize and
// rescale divide by P and then by q_level: the two results differ by at
// most one in any coefficient (rounding u/q or (u + e)/q with |e| <= 1/2),
// equal in most, and both decrypt to the product.
void expect_fused_matches_two_steps(const Env& e, const ckks::ContextPtr& ctx, const RelinKey& rk, const SecretKey& sk,
                                    std::mt19937_64& rng, Prng& prng) {
  const Evaluator ev(ctx);
  const RlweContext& rlwe = *ctx->rlwe();
  const std::size_t top = ctx->max_level(), n = rlwe.n(), slots = ctx->slots();
  const auto x = random_slots(rng, slots), y = random_slots(rng, slots);
  std::vector<Complex> xy(slots);
  for (std::size_t i = 0; i < slots; ++i) xy[i] = x[i] * y[i];
  auto encrypt = [&](const std::vector<Complex>& z) {
    return encrypt_secret(sk, ctx->encoder().encode(z.data(), z.size(), top, ctx->scale_at(top)), prng);
  };
  auto decrypt = [&](const Ciphertext& c) {
    Buffer plain(c.poly_words());
    decrypt_core(sk, c, plain.data());
    return ctx->encoder().decode_coefficients(plain.data(), c.level(), c.scale());
  };
  const Ciphertext product = ev.multiply(encrypt(x), encrypt(y));
  const Ciphertext fused = ev.relinearize_rescale(product, rk);
  const Ciphertext two_steps = ev.rescale(ev.relinearize(product, rk));
  EXPECT_EQ(fused.level(), top - 1);
  EXPECT_EQ(fused.size(), 2u);
  EXPECT_EQ(fused.scale(), two_steps.scale());
  EXPECT_NEAR(fused.noise_bits(), two_steps.noise_bits(), 0.5);
  EXPECT_GE(bits_of(max_error(decrypt(fused), xy)), 12.0);
  EXPECT_GE(bits_of(max_error(decrypt(fused), xy)), bits_of(max_error(decrypt(two_steps), xy)) - 0.5);
  const RnsBase& base = *rlwe.level_base(top - 1);
  std::size_t differing = 0;
  for (std::size_t p = 0; p < 2; ++p) {
    std::vector<u64> diff(base.size() * n);
    Backend& be = backend_for(Device::cpu());
    be.sub(fused.poly(p), two_steps.poly(p), diff.data(), 1, base);
    be.ntt_inverse(diff.data(), 1, base);
    for (std::size_t c = 0; c < n; ++c) {
      const u64 first = diff[c], q0 = base.modulus(0).value();
      ASSERT_TRUE(first == 0 || first == 1 || first == q0 - 1) << "coefficient " << c << " differs by more than one";
      for (std::size_t i = 1; i < base.size(); ++i) {
        const u64 qi = base.modulus(i).value();
        ASSERT_EQ(diff[i * n + c], first == q0 - 1 ? qi - 1 : first) << "limbs disagree at coefficient " << c;
      }
      differing += first != 0;
    }
  }
  EXPECT_LT(differing, n / 2) << "the one-rounding result should equal the two-step one in most coefficients";
  (void)e;
}

TEST_F(CkksEvaluator, RelinearizeRescaleIsOneRoundingOfTheTwoSteps) {
  expect_fused_matches_two_steps(e, e.ctx, e.rk, e.sk, rng, prng);
  // Two special primes and digits of two primes: the fused conversion has
  // three sources, and the digits' ModUp crosses limbs.
  ParameterLiteral lit = small_literal(30);
  lit.q_bits = {40, 30, 30, 30};
  lit.p_bits = {40, 40};
  lit.dnum = 2;
  auto ctx = std::make_shared<const ckks::Context>(Parameters(lit));
  Prng keys_prng = Prng::from_seed(seed_from(9));
  const SecretKey sk = generate_secret_key(ctx->rlwe(), keys_prng);
  const RelinKey rk = generate_relin_key(sk, keys_prng);
  expect_fused_matches_two_steps(e, ctx, rk, sk, rng, prng);
  // A size-2 ciphertext has nothing to relinearize.
  const Ciphertext fresh = e.encrypt(random_slots(rng, e.slots()), 1, prng);
  expect_invalid([&] { (void)ev.relinearize_rescale(fresh, e.rk); }, "size-3");
}

TEST_F(CkksEvaluator, SquareMatchesMultiply) {
  const auto x = random_slots(rng, e.slots());
  const Ciphertext cx = e.encrypt(x, 2, prng);
  const Ciphertext sq = ev.square(cx), mul = ev.multiply(cx, cx);
  EXPECT_EQ(sq.size(), 3u);
  EXPECT_EQ(sq.scale(), cx.scale() * cx.scale());
  EXPECT_TRUE(std::equal(sq.data(), sq.data() + 3 * sq.poly_words(), mul.data())) << "square != multiply(x, x)";
  std::vector<Complex> x2(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) x2[i] = x[i] * x[i];
  EXPECT_GE(bits_of(max_error(e.decrypt(ev.rescale(ev.relinearize(sq, e.rk))), x2)), 20.0);
}

TEST_F(CkksEvaluator, AddSubNegate) {
  const auto x = random_slots(rng, e.slots()), y = random_slots(rng, e.slots());
  const Ciphertext cx = e.encrypt(x, 2, prng, true), cy = e.encrypt(y, 2, prng);
  std::vector<Complex> sum(x.size()), diff(x.size()), neg(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) sum[i] = x[i] + y[i], diff[i] = x[i] - y[i], neg[i] = -x[i];
  const Ciphertext a = ev.add(cx, cy);
  EXPECT_FALSE(a.seed().has_value());
  EXPECT_GE(bits_of(max_error(e.decrypt(a), sum)), 20.0);
  EXPECT_GE(bits_of(max_error(e.decrypt(ev.sub(cx, cy)), diff)), 20.0);
  EXPECT_GE(bits_of(max_error(e.decrypt(ev.negate(cx)), neg)), 20.0);
  // Size 2 + size 3 -> size 3 (either order).
  const Ciphertext sq = ev.square(cx);
  std::vector<Complex> x2(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) x2[i] = x[i] * x[i];
  // Scales differ (2^40 vs 2^80), so lift cx to 2^80 first.
  const Ciphertext lifted = ev.multiply_scalar(cx, 1.0, cx.scale());
  const Ciphertext grown = ev.add(lifted, sq);
  EXPECT_EQ(grown.size(), 3u);
  std::vector<Complex> want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = x2[i] + x[i];
  EXPECT_GE(bits_of(max_error(e.decrypt(grown), want)), 20.0);
  EXPECT_EQ(ev.add(sq, lifted).size(), 3u);
  EXPECT_EQ(ev.sub(lifted, sq).size(), 3u);
}

TEST_F(CkksEvaluator, PlainAndScalarOperations) {
  const ckks::Encoder& enc = e.ctx->encoder();
  const auto x = random_slots(rng, e.slots()), y = random_slots(rng, e.slots());
  const Ciphertext cx = e.encrypt(x, 2, prng, true);
  const double scale = cx.scale();
  const std::size_t n = x.size();
  auto map = [&](auto f) {
    std::vector<Complex> out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = f(i);
    return out;
  };

  // multiply_plain with a vector and with a scalar plaintext.
  const Plaintext py = enc.encode(y.data(), n, 2, scale);
  const Ciphertext mp = ev.multiply_plain(cx, py);
  EXPECT_EQ(mp.scale(), scale * scale);
  EXPECT_EQ(mp.level(), 2u);
  EXPECT_FALSE(mp.seed().has_value());
  EXPECT_GE(bits_of(max_error(e.decrypt(mp), map([&](std::size_t i) { return x[i] * y[i]; }))), 20.0);
  const Plaintext p3 = enc.encode_scalar(Complex(-3.5, 0.0), 2, scale);
  ASSERT_TRUE(p3.is_scalar());
  const Ciphertext ms = ev.multiply_plain(cx, p3);
  EXPECT_EQ(ms.scale(), scale * scale);
  EXPECT_GE(bits_of(max_error(e.decrypt(ms), map([&](std::size_t i) { return -3.5 * x[i]; }))), 18.0);
  // The scalar shortcut gives exactly what the full constant polynomial gives.
  Plaintext p3_full = p3.clone();
  p3_full.set_scalar({}, Complex(0.0));
  ASSERT_FALSE(p3_full.is_scalar());
  const Ciphertext ms_full = ev.multiply_plain(cx, p3_full);
  EXPECT_TRUE(std::equal(ms.data(), ms.data() + 2 * ms.poly_words(), ms_full.data()));

  // multiply_scalar: real (one residue per limb) and complex.
  const Ciphertext sr = ev.multiply_scalar(cx, Complex(0.25, 0.0), std::ldexp(1.0, 30));
  EXPECT_EQ(sr.scale(), scale * std::ldexp(1.0, 30));
  EXPECT_GE(bits_of(max_error(e.decrypt(sr), map([&](std::size_t i) { return 0.25 * x[i]; }))), 20.0);
  const Complex w(0.5, -0.75);
  const Ciphertext sc = ev.multiply_scalar(cx, w, scale);
  EXPECT_EQ(sc.scale(), scale * scale);
  EXPECT_GE(bits_of(max_error(e.decrypt(sc), map([&](std::size_t i) { return w * x[i]; }))), 20.0);

  // multiply_integer: scale and level unchanged.
  for (std::int64_t k : {std::int64_t{-3}, std::int64_t{7}, std::int64_t{0}, std::int64_t{1}}) {
    const Ciphertext mi = ev.multiply_integer(cx, k);
    EXPECT_EQ(mi.scale(), scale);
    EXPECT_EQ(mi.level(), 2u);
    EXPECT_GE(bits_of(max_error(e.decrypt(mi), map([&](std::size_t i) { return static_cast<double>(k) * x[i]; }))),
              20.0)
        << "k = " << k;
  }

  // add_scalar: real and complex.
  EXPECT_GE(bits_of(max_error(e.decrypt(ev.add_scalar(cx, Complex(0.5, 0.0))),
                              map([&](std::size_t i) { return x[i] + 0.5; }))),
            20.0);
  EXPECT_GE(bits_of(max_error(e.decrypt(ev.add_scalar(cx, w)), map([&](std::size_t i) { return x[i] + w; }))), 20.0);
  Ciphertext acc = cx.clone();
  ev.add_scalar_inplace(acc, Complex(-2.0, 0.0));
  EXPECT_GE(bits_of(max_error(e.decrypt(acc), map([&](std::size_t i) { return x[i] - 2.0; }))), 20.0);
  // Changing only c_0 keeps the seed valid.
  EXPECT_TRUE(acc.seed().has_value());

  // add_plain / sub_plain with vector and scalar plaintexts.
  EXPECT_GE(bits_of(max_error(e.decrypt(ev.add_plain(cx, py)), map([&](std::size_t i) { return x[i] + y[i]; }))),
            20.0);
  EXPECT_GE(bits_of(max_error(e.decrypt(ev.sub_plain(cx, py)), map([&](std::size_t i) { return x[i] - y[i]; }))),
            20.0);
  const Plaintext half = enc.encode_scalar(Complex(0.5, 0.0), 2, scale);
  EXPECT_GE(bits_of(max_error(e.decrypt(ev.add_plain(cx, half)), map([&](std::size_t i) { return x[i] + 0.5; }))),
            20.0);
  EXPECT_GE(bits_of(max_error(e.decrypt(ev.sub_plain(cx, half)), map([&](std::size_t i) { return x[i] - 0.5; }))),
            20.0);
  // add_plain needs the same scale.
  const Plaintext other_scale = enc.encode(y.data(), n, 2, std::ldexp(1.0, 35));
  expect_invalid([&] { ev.add_plain(cx, other_scale); }, "scale mismatch");
}

TEST_F(CkksEvaluator, ModSwitch) {
  const auto x = random_slots(rng, e.slots());
  const Ciphertext cx = e.encrypt(x, 2, prng, true);
  for (std::size_t level : {std::size_t{2}, std::size_t{1}, std::size_t{0}}) {
    const Ciphertext m = ev.mod_switch(cx, level);
    EXPECT_EQ(m.level(), level);
    EXPECT_EQ(m.scale(), cx.scale());
    EXPECT_EQ(m.seed().has_value(), level == 2);
    // The limbs kept are the original ones.
    for (std::size_t p = 0; p < 2; ++p)
      EXPECT_TRUE(std::equal(m.poly(p), m.poly(p) + m.poly_words(), cx.poly(p)));
    EXPECT_GE(bits_of(max_error(e.decrypt(m), x)), 20.0);
  }
  expect_invalid([&] { ev.mod_switch(ev.mod_switch(cx, 1), 2); }, "[ckks.mod_switch]");

  const ckks::Encoder& enc = e.ctx->encoder();
  const Plaintext ps = enc.encode_scalar(Complex(1.25, 0.0), 2, cx.scale());
  const Plaintext ps0 = ev.mod_switch(ps, 0);
  EXPECT_EQ(ps0.level(), 0u);
  ASSERT_TRUE(ps0.is_scalar());
  EXPECT_EQ(ps0.scalar_residues().size(), 1u);
  EXPECT_EQ(ps0.scalar_residues()[0], ps.scalar_residues()[0]);
  for (const Complex& v : enc.decode(ps0)) ASSERT_LT(std::abs(v - Complex(1.25, 0.0)), 0x1p-30);
  const Plaintext pv = enc.encode(x.data(), x.size(), 2, cx.scale());
  EXPECT_LT(max_error(enc.decode(ev.mod_switch(pv, 1)), x), 0x1p-30);
  EXPECT_THROW(ev.mod_switch(ps0, 1), InvalidArgument);
}

TEST_F(CkksEvaluator, AdjustToLandsOnCanonicalScale) {
  const auto x = random_slots(rng, e.slots()), y = random_slots(rng, e.slots());
  const Ciphertext cx = e.encrypt(x, 2, prng), cy = e.encrypt(y, 2, prng);
  std::vector<Complex> xy(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) xy[i] = x[i] * y[i];

  // A fresh ciphertext to every lower level.
  for (std::size_t level : {std::size_t{1}, std::size_t{0}}) {
    const Ciphertext a = ev.adjust_to(cx, level);
    EXPECT_EQ(a.level(), level);
    EXPECT_EQ(a.scale(), e.ctx->scale_at(level));
    EXPECT_GE(bits_of(max_error(e.decrypt(a), x)), 20.0) << "level " << level;
  }
  // An unrescaled product (scale 2^80 at level 2) to level 1.
  const Ciphertext prod = ev.relinearize(ev.multiply(cx, cy), e.rk);
  const Ciphertext a1 = ev.adjust_to(prod, 1);
  EXPECT_EQ(a1.level(), 1u);
  EXPECT_EQ(a1.scale(), e.ctx->scale_at(1));
  EXPECT_GE(bits_of(max_error(e.decrypt(a1), xy)), 20.0);
  // (adjust_to(prod, 0) is in AdjustToWithSmallCorrectionConstant.)
  // Adjusted ciphertexts add to fresh ones at the same level.
  const Ciphertext fresh1 = ev.adjust_to(cx, 1);
  EXPECT_NO_THROW(ev.add(a1, fresh1));

  // Already there: an identical copy.
  const Ciphertext same = ev.adjust_to(cx, 2);
  EXPECT_EQ(same.level(), 2u);
  EXPECT_TRUE(std::equal(same.data(), same.data() + 2 * same.poly_words(), cx.data()));
  // The scale already matches a lower level's: only limbs are dropped.
  Ciphertext relabel = cx.clone();
  relabel.set_scale(e.ctx->scale_at(0));
  const Ciphertext dropped = ev.adjust_to(relabel, 0);
  EXPECT_EQ(dropped.level(), 0u);
  EXPECT_TRUE(std::equal(dropped.poly(0), dropped.poly(0) + dropped.poly_words(), cx.poly(0)));
  // Upwards, or staying at a level with the wrong scale, needs a level.
  expect_invalid([&] { ev.adjust_to(a1, 2); }, "[ckks.adjust_to]");
  expect_invalid([&] { ev.adjust_to(prod, 2); }, "[ckks.adjust_to]");
}

// Regression (fixed): adjust_to used to multiply by the integer
// round(target * q_{level+1} / a.scale) and then label the result with the
// target scale. When that ratio is small (the input's scale is already near
// target * q_{level+1}, e.g. an unrescaled product moved down two levels)
// the rounding changes the encoded value by a relative |c - round(c)| / c:
//   - prod (scale 2^80, level 2) -> level 0: c = 2^80 / q_2^2 ~ 1 + 2^-19.6,
//     rounded to 1, so the result keeps only ~18.6 bits (expected >= 20, as
//     every other path here gives ~25+);
//   - a level-2 ciphertext of scale target * q_1 / 1.5 -> level 0: c = 1.5,
//     rounded to 2, so every slot decrypts to 4/3 of its value.
// It now multiplies the constant in at the lowest level where it reaches
// 2^30 (plan_scale_correction) and rescales after.
TEST_F(CkksEvaluator, AdjustToWithSmallCorrectionConstant) {
  const auto x = random_slots(rng, e.slots()), y = random_slots(rng, e.slots());
  const Ciphertext cx = e.encrypt(x, 2, prng), cy = e.encrypt(y, 2, prng);
  std::vector<Complex> xy(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) xy[i] = x[i] * y[i];

  const Ciphertext prod = ev.relinearize(ev.multiply(cx, cy), e.rk);
  const Ciphertext a0 = ev.adjust_to(prod, 0);
  EXPECT_EQ(a0.level(), 0u);
  EXPECT_EQ(a0.scale(), e.ctx->scale_at(0));
  EXPECT_GE(bits_of(max_error(e.decrypt(a0), xy)), 20.0);

  const double odd = e.ctx->scale_at(0) * static_cast<double>(e.q(1)) / 1.5 / cx.scale();
  const Ciphertext skewed = ev.multiply_scalar(cx, 1.0, odd);  // scale = target * q_1 / 1.5
  EXPECT_GE(bits_of(max_error(e.decrypt(skewed), x)), 20.0);    // fine before adjusting
  const Ciphertext b0 = ev.adjust_to(skewed, 0);
  EXPECT_EQ(b0.scale(), e.ctx->scale_at(0));
  EXPECT_GE(bits_of(max_error(e.decrypt(b0), x)), 20.0);  // got: values are 4/3 of x
}

// Regression (fixed): a floor division (ckks/lookup.py) leaves its result
// read at 2^16 .. 2^24 times the canonical scale. adjust_to rescaled such a
// scale first, leaving 2^16 .. 2^24 words per unit, where the rescale's
// rounding (up to |s|_1 words) read as errors of 2^-4 .. 2^-12 on the toy
// ring with nine levels; the constant now goes in first, at 2^56 or so.
TEST_F(CkksEvaluator, AdjustToFromAScaleFarAboveTheTarget) {
  const auto x = random_slots(rng, e.slots());
  const Ciphertext cx = e.encrypt(x, 2, prng);
  for (int bits : {16, 20, 24}) {
    const std::int64_t k = std::int64_t{1} << bits;
    const Ciphertext far = ev.divide_by_integer(ev.multiply_integer(cx, k), k);  // x at 2^bits times the scale
    EXPECT_GE(bits_of(max_error(e.decrypt(far), x)), 20.0) << bits;
    const Ciphertext a0 = ev.adjust_to(far, 0);
    EXPECT_EQ(a0.level(), 0u);
    EXPECT_EQ(a0.scale(), e.ctx->scale_at(0));
    EXPECT_GE(bits_of(max_error(e.decrypt(a0), x)), 20.0) << bits;
  }
}

TEST(ScaleCorrection, TheConstantGoesInWhereItFirstReaches2To30) {
  const std::vector<double> q = {0x1p60, 0x1p40, 0x1p40, 0x1p40, 0x1p40};
  // 2^64 at level 4 to level 2: 2^16 at level 3 is too small a constant, 2^56 at level 4 is not.
  ScaleCorrection plan = plan_scale_correction(0x1p64, 4, 2, 0x1p40, q);
  EXPECT_EQ(plan.at, 4u);
  EXPECT_FALSE(plan.rescales_alone);
  EXPECT_DOUBLE_EQ(plan.delta, 0x1p56);
  // A fresh scale two levels down: the constant at the level above the target.
  plan = plan_scale_correction(0x1p40, 4, 2, 0x1p40, q);
  EXPECT_EQ(plan.at, 3u);
  EXPECT_DOUBLE_EQ(plan.delta, 0x1p40);
  // An unrescaled product one level down: rescaling alone lands it (delta 1).
  plan = plan_scale_correction(0x1p80, 4, 3, 0x1p40, q);
  EXPECT_TRUE(plan.rescales_alone);
  EXPECT_DOUBLE_EQ(plan.delta, 1.0);
}

// ---- evaluator: rescale exactness -------------------------------------------------

TEST_F(CkksEvaluator, RescaleIsExactRounding) {
  const RlweContext& rc = *e.rlwe;
  Backend& be = backend_for(Device::cpu());
  const auto x = random_slots(rng, e.slots()), y = random_slots(rng, e.slots());
  const Ciphertext cx = e.encrypt(x, 2, prng), cy = e.encrypt(y, 2, prng);
  const Ciphertext prod = ev.relinearize(ev.multiply(cx, cy), e.rk);

  // Top level: (result * q_2 + r) = c (mod q_i), r the centred residue mod q_2.
  {
    const Ciphertext out = ev.rescale(prod);
    ASSERT_EQ(out.level(), 1u);
    EXPECT_EQ(out.scale(), prod.scale() / static_cast<double>(e.q(2)));
    const u64 q_last = e.q(2);
    for (std::size_t p = 0; p < 2; ++p) {
      std::vector<u64> c(prod.poly(p), prod.poly(p) + prod.poly_words());
      std::vector<u64> r(out.poly(p), out.poly(p) + out.poly_words());
      be.ntt_inverse(c.data(), 1, *rc.level_base(2));
      be.ntt_inverse(r.data(), 1, *rc.level_base(1));
      std::size_t bad = 0;
      for (std::size_t k = 0; k < kN; ++k) {
        const std::int64_t rem = centred(c[2 * kN + k], q_last);
        for (std::size_t i = 0; i < 2; ++i) {
          const u64 q = e.q(i);
          const u64 lhs =
              static_cast<u64>((static_cast<unsigned __int128>(r[i * kN + k]) * q_last + residue_of(rem, q)) % q);
          bad += lhs != c[i * kN + k];
        }
      }
      EXPECT_EQ(bad, 0u) << "polynomial " << p;
    }
  }

  // Level 1 -> 0 against a 128-bit reference: round(c / q_1) mod q_0 where c
  // is the CRT composition of the two residues.
  {
    const Ciphertext at1 = ev.mod_switch(ev.square(ev.mod_switch(cx, 1)), 1);
    const Ciphertext out = ev.rescale(at1);
    ASSERT_EQ(out.level(), 0u);
    const RnsBase& base1 = *rc.level_base(1);
    const u64 q0 = e.q(0), q1 = e.q(1);
    for (std::size_t p = 0; p < at1.size(); ++p) {
      std::vector<u64> c(at1.poly(p), at1.poly(p) + at1.poly_words());
      std::vector<u64> r(out.poly(p), out.poly(p) + out.poly_words());
      be.ntt_inverse(c.data(), 1, base1);
      be.ntt_inverse(r.data(), 1, *rc.level_base(0));
      std::vector<u64> words(2 * kN);
      base1.compose(c.data(), kN, words.data());
      std::size_t bad = 0;
      for (std::size_t k = 0; k < kN; ++k) {
        const unsigned __int128 value = (static_cast<unsigned __int128>(words[2 * k + 1]) << 64) | words[2 * k];
        const std::int64_t rem = centred(static_cast<u64>(value % q1), q1);
        const __int128 quotient = (static_cast<__int128>(value) - rem) / static_cast<__int128>(q1);
        bad += r[k] != residue_of(quotient, q0);
      }
      EXPECT_EQ(bad, 0u) << "polynomial " << p;
    }
  }

  // Decryption: m' = (m - (r_0 + r_1 s)) / q_2 exactly, so
  // |m' - m / q_2| <= (1 + hamming weight of s) / 2 on every coefficient.
  {
    const Ciphertext out = ev.rescale(prod);
    Buffer m(prod.poly_words()), m2(out.poly_words());
    decrypt_core(e.sk, prod, m.data());
    decrypt_core(e.sk, out, m2.data());
    const auto before = centred_values(*rc.level_base(2), m.data());
    const auto after = centred_values(*rc.level_base(1), m2.data());
    std::size_t weight = 0;
    for (std::int8_t s : e.sk.coefficients()) weight += s != 0;
    const long double bound = 0.5L * (1.0L + static_cast<long double>(weight)) + 1.0L;
    long double worst = 0.0L, largest = 0.0L;
    for (std::size_t k = 0; k < kN; ++k) {
      worst = std::max(worst, std::fabs(after[k] - before[k] / static_cast<long double>(e.q(2))));
      largest = std::max(largest, std::fabs(before[k]));
    }
    EXPECT_GT(largest, 0x1p70L);  // the check is not vacuous
    EXPECT_LE(worst, bound);
  }

  expect_invalid([&] { ev.rescale(ev.mod_switch(cx, 0)); }, "[ckks.rescale]");
}

// ---- evaluator: rotations ---------------------------------------------------------

TEST_F(CkksEvaluator, RotateByKeyedAndComposedSteps) {
  const auto x = random_slots(rng, e.slots());
  const Ciphertext cx = e.encrypt(x, 2, prng, true);
  const long long slots = static_cast<long long>(e.slots());

  struct Case {
    long long steps;
    std::size_t plan_length;
  };
  for (const Case& c : {Case{1, 1}, Case{2, 1}, Case{8, 1}, Case{-1, 1}, Case{3, 2}, Case{11, 3}, Case{-3, 3},
                        Case{slots + 2, 1}, Case{0, 0}, Case{slots, 0}}) {
    const std::vector<long long> plan = ev.rotation_plan(c.steps, e.gk);
    EXPECT_EQ(plan.size(), c.plan_length) << "steps " << c.steps;
    const long long sum = std::accumulate(plan.begin(), plan.end(), 0LL);
    EXPECT_EQ(((sum - c.steps) % slots + slots) % slots, 0) << "plan does not add up to " << c.steps;
    for (long long s : plan) EXPECT_TRUE(e.gk.has(e.rlwe->galois_element(s))) << "unkeyed step " << s;

    const Ciphertext r = ev.rotate(cx, c.steps, e.gk);
    EXPECT_EQ(r.level(), cx.level());
    EXPECT_EQ(r.scale(), cx.scale());
    std::vector<Complex> want(x.size());
    for (long long i = 0; i < slots; ++i) want[i] = x[static_cast<std::size_t>((((i + c.steps) % slots) + slots) % slots)];
    EXPECT_GE(bits_of(max_error(e.decrypt(r), want)), 20.0) << "steps " << c.steps;
  }
  // A rotation of a lower-level ciphertext.
  const Ciphertext low = ev.mod_switch(cx, 0);
  std::vector<Complex> want(x.size());
  for (long long i = 0; i < slots; ++i) want[i] = x[static_cast<std::size_t>((i + 2) % slots)];
  EXPECT_GE(bits_of(max_error(e.decrypt(ev.rotate(low, 2, e.gk)), want)), 20.0);
  // Galois elements are 5^k mod 2N.
  EXPECT_EQ(e.rlwe->galois_element(1), 5u);
  EXPECT_EQ(e.rlwe->galois_element(2), 25u);
  EXPECT_EQ(e.rlwe->galois_element(slots), 1u);
  EXPECT_EQ(e.rlwe->galois_element(-1) * 5 % (2 * kN), 1u);
}

TEST_F(CkksEvaluator, Conjugate) {
  const auto x = random_slots(rng, e.slots());
  const Ciphertext cx = e.encrypt(x, 1, prng);
  std::vector<Complex> want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = std::conj(x[i]);
  const Ciphertext c = ev.conjugate(cx, e.gk);
  EXPECT_EQ(c.level(), 1u);
  EXPECT_GE(bits_of(max_error(e.decrypt(c), want)), 20.0);
  // conj(x) + x is real: 2 Re(x).
  const auto sum = e.decrypt(ev.add(c, cx));
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_LT(std::abs(sum[i] - 2.0 * x[i].real()), 0x1p-20) << i;
}

// ---- evaluator: errors ------------------------------------------------------------

TEST_F(CkksEvaluator, Errors) {
  const auto x = random_slots(rng, e.slots());
  const Ciphertext c2 = e.encrypt(x, 2, prng), c1 = e.encrypt(x, 1, prng), c0 = e.encrypt(x, 0, prng);

  // Level mismatch, with the documented message.
  try {
    ev.add(c2, c1);
    ADD_FAILURE() << "add across levels did not throw";
  } catch (const InvalidArgument& err) {
    EXPECT_NE(std::string(err.what()).find("[ckks.add] level mismatch: 2 vs 1"), std::string::npos) << err.what();
  }
  expect_invalid([&] { ev.sub(c1, c2); }, "[ckks.sub] level mismatch: 1 vs 2");
  expect_invalid([&] { ev.multiply(c2, c1); }, "[ckks.multiply] level mismatch");
  const Plaintext p1 = e.ctx->encoder().encode(x.data(), x.size(), 1, c2.scale());
  expect_invalid([&] { ev.multiply_plain(c2, p1); }, "level mismatch");
  expect_invalid([&] { ev.add_plain(c2, p1); }, "level mismatch");

  // Scale mismatch.
  Ciphertext off = c2.clone();
  off.set_scale(c2.scale() * 2.0);
  expect_invalid([&] { ev.add(c2, off); }, "[ckks.add] scale mismatch");

  // Sizes.
  const Ciphertext three = ev.multiply(c2, c2);
  expect_invalid([&] { ev.multiply(three, c2); }, "size");
  expect_invalid([&] { ev.square(three); }, "size");
  expect_invalid([&] { ev.relinearize(c2, e.rk); }, "size-3");
  expect_invalid([&] { ev.rotate(three, 1, e.gk); }, "size");
  expect_invalid([&] { ev.conjugate(three, e.gk); }, "size");

  // Out of levels: a product at level 0 (50 bits) cannot hold scale 2^80.
  expect_invalid([&] { ev.multiply(c0, c0); }, "out of levels");
  expect_invalid([&] { ev.square(c0); }, "out of levels");
  expect_invalid([&] { ev.multiply_scalar(c0, 0.5, c0.scale()); }, "out of levels");
  expect_invalid([&] { ev.rescale(c0); }, "level 0");
  expect_invalid([&] { ev.mod_switch(c1, 2); }, "[ckks.mod_switch]");

  // Missing Galois keys.
  Prng kp = Prng::from_seed(seed_from(16));
  const GaloisKeys only2 = generate_galois_keys(e.sk, {e.rlwe->galois_element(2)}, kp);
  expect_invalid([&] { ev.rotate(c2, 1, only2); }, "no Galois keys reach a rotation by 1");
  expect_invalid([&] { ev.rotation_plan(3, only2); }, "[ckks.rotate]");
  EXPECT_EQ(ev.rotation_plan(6, only2), (std::vector<long long>{2, 2, 2}));
  expect_invalid([&] { ev.conjugate(c2, only2); }, "no Galois key for element");
  expect_invalid([&] { ev.apply_galois(c2, e.rlwe->galois_element(5), only2); }, "no Galois key for element");
  EXPECT_THROW(only2.get(5), InvalidArgument);
  EXPECT_THROW(generate_galois_keys(e.sk, {4}, kp), InvalidArgument);
  EXPECT_THROW(generate_galois_keys(e.sk, {2 * kN + 1}, kp), InvalidArgument);

  // Operands from other parameters.
  ParameterLiteral lit = small_literal();
  lit.scale_bits = 39;
  auto other = std::make_shared<const ckks::Context>(Parameters(lit));
  const Ciphertext foreign(other->rlwe(), 2, 2, c2.metadata());
  expect_invalid([&] { ev.add(c2, foreign); }, "fingerprint mismatch");
  expect_invalid([&] { ev.negate(foreign); }, "fingerprint mismatch");
  expect_invalid([&] { ev.rescale(foreign); }, "fingerprint mismatch");
  Prng op = Prng::from_seed(seed_from(17));
  const SecretKey other_sk = generate_secret_key(other->rlwe(), op);
  expect_invalid([&] { ev.relinearize(three, generate_relin_key(other_sk, op)); }, "fingerprint mismatch");
  const Plaintext foreign_plain = other->encoder().encode(x.data(), x.size(), 2, c2.scale());
  EXPECT_THROW(encrypt_public(e.pk, foreign_plain, op), InvalidArgument);
  EXPECT_THROW(e.ctx->encoder().decode(foreign_plain), InvalidArgument);
  Buffer out(c2.poly_words());
  EXPECT_THROW(decrypt_core(other_sk, c2, out.data()), InvalidArgument);
  EXPECT_THROW(Evaluator(nullptr), InvalidArgument);
}

}  // namespace
}  // namespace ringfire
