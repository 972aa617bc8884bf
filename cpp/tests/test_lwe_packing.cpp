// LWE ciphertexts into a larger ring (rlwe/lwe_packing.h): the raised phase
// against a 128-bit reference, the monomial product exactly, the key from a
// subring secret's coefficients, and the refusals.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "ckks_test_support.h"
#include "ringfire/arith/modular.h"
#include "ringfire/ckks/context.h"
#include "ringfire/rlwe/encryptor.h"
#include "ringfire/rlwe/evaluator.h"
#include "ringfire/rlwe/keygen.h"
#include "ringfire/rlwe/lwe_packing.h"
#include "ringfire/rlwe/sampling.h"
#include "ringfire/rlwe/subring.h"

namespace ringfire {
namespace {

using test::expect_invalid;

constexpr std::uint64_t kQ = 134215681;  // FHEW STD128's ring prime (27 bits)
constexpr std::size_t kN = 4096, kn = 256;

std::int64_t centred(u64 x, u64 q) {
  return x > q / 2 ? static_cast<std::int64_t>(x) - static_cast<std::int64_t>(q) : static_cast<std::int64_t>(x);
}

struct Ring {
  test::CapturedWarnings quiet;
  RlweContextPtr ctx;
  Ring() {
    ParameterLiteral lit;
    lit.poly_degree = kN;
    lit.q_bits = {50, 40, 40};
    lit.p_bits = {60};
    lit.scale_bits = 40;
    lit.insecure_no_security_check = true;
    ctx = std::make_shared<const ckks::Context>(Parameters(lit))->rlwe();
  }
};

// LWE ciphertexts (a uniform mod Q, b = phase + <a, z>) of the given phases under z.
std::vector<std::uint32_t> lwe(const std::vector<std::int8_t>& z, const std::vector<u64>& phases, std::mt19937_64& rng) {
  std::vector<std::uint32_t> words;
  for (const u64 phase : phases) {
    u64 inner = 0;
    for (std::size_t j = 0; j < z.size(); ++j) {
      const u64 a = rng() % kQ;
      words.push_back(static_cast<std::uint32_t>(a));
      inner = (inner + (z[j] < 0 ? kQ - a : z[j] > 0 ? a : 0)) % kQ;
    }
    words.push_back(static_cast<std::uint32_t>((phase + inner) % kQ));
  }
  return words;
}

std::vector<std::int8_t> ternary(std::size_t n, std::mt19937_64& rng) {
  std::vector<std::int8_t> z(n);
  for (auto& x : z) x = static_cast<std::int8_t>(static_cast<int>(rng() % 3) - 1);
  return z;
}

// round(phase q / Q), the raised phase at one prime q (< 2^64), from 128-bit integers.
std::int64_t raised(u64 phase, u64 q) {
  const unsigned __int128 wide = static_cast<unsigned __int128>(phase) * q;
  return static_cast<std::int64_t>((wide + kQ / 2) / kQ);
}

TEST(LwePacking, TheRaisedPhaseSitsInTheConstantCoefficientUnderTheEmbeddedSecret) {
  Ring r;
  std::mt19937_64 rng(7);
  const std::vector<std::int8_t> z = ternary(kn, rng);
  const std::vector<u64> phases = {0, 1, kQ / 16 * 5 + 3, kQ - 1, kQ / 2};
  const std::vector<std::uint32_t> words = lwe(z, phases, rng);
  std::vector<std::int8_t> spread(kN, 0);
  for (std::size_t j = 0; j < kn; ++j) spread[j * (kN / kn)] = z[j];
  const SecretKey embedded(r.ctx, spread);
  const u64 q0 = r.ctx->params().q_primes()[0];
  const std::int64_t bound = (1 + static_cast<std::int64_t>(kn)) / 2 + 1;  // the roundings' (1 + ||z||_1) / 2
  for (const u64 divisor : {u64{1}, u64{kN}}) {
    const std::vector<Ciphertext> cts =
        embed_lwe(words.data(), phases.size(), kn, kQ, r.ctx, 0, Metadata{}, divisor, 3.0);
    ASSERT_EQ(cts.size(), phases.size());
    std::vector<u64> phase(kN);
    for (std::size_t c = 0; c < cts.size(); ++c) {
      ASSERT_EQ(cts[c].level(), 0u);
      EXPECT_EQ(cts[c].noise_bits(), 3.0);
      decrypt_core(embedded, cts[c], phase.data());
      const Modulus q(q0);
      const u64 times = mul_mod(phase[0], divisor % q0, q);  // undo the division
      const std::int64_t want = raised(phases[c], q0) % static_cast<std::int64_t>(q0);
      const std::int64_t diff = centred((times + q0 - static_cast<u64>(want)) % q0, q0);
      EXPECT_LE(std::llabs(diff), bound) << "ciphertext " << c << ", divisor " << divisor;
    }
  }
}

TEST(LwePacking, TorusWordsAreRaisedFromTwoToThe64) {
  Ring r;
  std::mt19937_64 rng(13);
  const std::vector<std::int8_t> z = ternary(kn, rng);
  const std::vector<u64> phases = {0, 1, u64{5} << 60, ~u64{0}, (u64{1} << 63) + 12345};
  std::vector<std::uint64_t> words;
  for (const u64 phase : phases) {  // b = phase + <a, z> mod 2^64: the products wrap
    u64 inner = 0;
    for (std::size_t j = 0; j < kn; ++j) {
      const u64 a = rng();
      words.push_back(a);
      inner += static_cast<u64>(static_cast<std::int64_t>(z[j])) * a;
    }
    words.push_back(phase + inner);
  }
  std::vector<std::int8_t> spread(kN, 0);
  for (std::size_t j = 0; j < kn; ++j) spread[j * (kN / kn)] = z[j];
  const SecretKey embedded(r.ctx, spread);
  const u64 q0 = r.ctx->params().q_primes()[0];
  const std::vector<Ciphertext> cts = embed_torus_lwe(words.data(), phases.size(), kn, r.ctx, 0, Metadata{}, 1, 0.0);
  std::vector<u64> phase(kN);
  for (std::size_t c = 0; c < cts.size(); ++c) {
    decrypt_core(embedded, cts[c], phase.data());
    const unsigned __int128 wide = static_cast<unsigned __int128>(phases[c]) * q0;
    const u64 want = static_cast<u64>(((wide + (static_cast<unsigned __int128>(1) << 63)) >> 64) % q0);
    const std::int64_t diff = centred((phase[0] + q0 - want) % q0, q0);
    EXPECT_LE(std::llabs(diff), static_cast<std::int64_t>(kn / 2 + 1)) << "ciphertext " << c;
  }
}

TEST(LwePacking, MultiplyingByAMonomialShiftsThePhaseNegacyclically) {
  Ring r;
  Prng prng = Prng::from_seed(Prng::Seed{8});
  const SecretKey sk = generate_secret_key(r.ctx, prng);
  std::mt19937_64 rng(9);
  std::vector<std::int64_t> m(kN);
  for (auto& x : m) x = static_cast<std::int64_t>(rng() % 2001) - 1000;
  Plaintext plain(r.ctx, 2, Metadata{});
  signed_to_rns(m.data(), kN, plain.base(), plain.data());
  backend_for(Device::cpu()).ntt_forward(plain.data(), 1, plain.base());
  const Ciphertext ct = encrypt_secret(sk, plain, prng);
  std::vector<u64> before(3 * kN), after(3 * kN);
  decrypt_core(sk, ct, before.data());
  for (const std::size_t power : {std::size_t{0}, std::size_t{1}, std::size_t{777}, kN, kN + 5, 2 * kN - 1}) {
    const Ciphertext shifted = multiply_by_monomial(ct, power);
    EXPECT_EQ(shifted.noise_bits(), ct.noise_bits());
    decrypt_core(sk, shifted, after.data());
    for (std::size_t i = 0; i < 3; ++i) {
      const u64 q = r.ctx->params().q_primes()[i];
      for (std::size_t j = 0; j < kN; ++j) {
        const std::size_t to = (j + power) % (2 * kN);
        const u64 value = before[i * kN + j];
        const u64 want = to >= kN ? neg_mod(value, q) : value;
        ASSERT_EQ(after[i * kN + to % kN], want) << "power " << power << ", limb " << i << ", coeff. " << j;
      }
    }
  }
  expect_invalid([&] { multiply_by_monomial(ct, 2 * kN); }, "must lie below 2N");
}

TEST(LwePacking, TheKeyFromCoefficientsLandsTheValueUnderTheRingsSecret) {
  Ring r;
  Prng prng = Prng::from_seed(Prng::Seed{10});
  const SecretKey sk = generate_secret_key(r.ctx, prng);
  std::mt19937_64 rng(11);
  const std::vector<std::int8_t> z = ternary(kn, rng);
  const std::vector<u64> phases = {12345, kQ - 999};
  const std::vector<std::uint32_t> words = lwe(z, phases, rng);
  const EmbeddingKey key = generate_embedding_key(sk, z, 0, prng);
  EXPECT_EQ(key.subring_degree(), kn);
  const std::vector<Ciphertext> cts = embed_lwe(words.data(), phases.size(), kn, kQ, r.ctx, 0, Metadata{}, 1, 0.0);
  const u64 q0 = r.ctx->params().q_primes()[0];
  std::vector<u64> phase(kN);
  for (std::size_t c = 0; c < cts.size(); ++c) {
    decrypt_core(sk, RlweEvaluator(r.ctx).switch_key(cts[c], key.key()), phase.data());
    const std::int64_t want = raised(phases[c], q0) % static_cast<std::int64_t>(q0);
    EXPECT_LT(std::llabs(centred((phase[0] + q0 - static_cast<u64>(want)) % q0, q0)), 1 << 12);
  }
  std::vector<std::int8_t> wide = z;
  wide[3] = 2;
  expect_invalid([&] { generate_embedding_key(sk, wide, 0, prng); }, "lie in [-1, 1]");
  expect_invalid([&] { generate_embedding_key(sk, std::vector<std::int8_t>(kN), 0, prng); }, "does not sit in a ring");
  expect_invalid([&] { generate_embedding_key(sk, std::vector<std::int8_t>(100), 0, prng); }, "does not sit in a ring");
}

TEST(LwePacking, RefusesWhatItCannotRaise) {
  Ring r;
  std::mt19937_64 rng(12);
  const std::vector<std::uint32_t> words = lwe(ternary(kn, rng), {5}, rng);
  auto embed = [&](const std::uint32_t* w, std::size_t n, u64 modulus, std::size_t level, u64 divisor) {
    embed_lwe(w, 1, n, modulus, r.ctx, level, Metadata{}, divisor, 0.0);
  };
  expect_invalid([&] { embed(words.data(), kn, kQ + 1, 0, 1); }, "must be odd and below 2^32");
  expect_invalid([&] { embed(words.data(), kn, u64{1} << 33 | 1, 0, 1); }, "must be odd and below 2^32");
  expect_invalid([&] { embed(words.data(), 100, kQ, 0, 1); }, "must be a power of two");
  expect_invalid([&] { embed(words.data(), kn, kQ, 3, 1); }, "above the context's top");
  expect_invalid([&] { embed(words.data(), kn, 1001, 0, 1); }, "not below the modulus");
  const u64 q0 = r.ctx->params().q_primes()[0];
  expect_invalid([&] { embed(words.data(), kn, kQ, 0, q0); }, "not invertible");
}

}  // namespace
}  // namespace ringfire
