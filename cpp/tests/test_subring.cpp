// A subring's ciphertexts in a larger ring (rlwe/subring.h): the embedding
// keeps the phase exactly (spread by k = N / n), and one key switch moves it
// under the large ring's secret with a small error.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "ckks_test_support.h"
#include "ringfire/ckks/context.h"
#include "ringfire/io/serialize.h"
#include "ringfire/rlwe/encryptor.h"
#include "ringfire/rlwe/evaluator.h"
#include "ringfire/rlwe/keygen.h"
#include "ringfire/rlwe/sampling.h"
#include "ringfire/rlwe/subring.h"

namespace ringfire {
namespace {

using test::expect_invalid;

ParameterLiteral toy(std::size_t n) {
  ParameterLiteral lit;
  lit.poly_degree = n;
  lit.q_bits = {50, 40, 40};
  lit.p_bits = {60};
  lit.scale_bits = 40;
  lit.insecure_no_security_check = true;  // 2^12 and 2^11 are toy rings for these primes
  return lit;
}

// The centred value of a residue modulo q.
std::int64_t centred(u64 x, u64 q) {
  return x > q / 2 ? static_cast<std::int64_t>(x) - static_cast<std::int64_t>(q) : static_cast<std::int64_t>(x);
}

struct Rings {
  test::CapturedWarnings quiet;
  RlweContextPtr large, small;

  Rings() {
    const Parameters big(toy(4096));
    ParameterLiteral lit = toy(2048);
    lit.q_primes = big.q_primes();
    lit.p_primes = big.p_primes();
    lit.dnum = big.dnum();
    large = std::make_shared<const ckks::Context>(big)->rlwe();
    small = std::make_shared<const ckks::Context>(Parameters(lit))->rlwe();
  }
};

TEST(Subring, EmbeddingKeepsThePhaseAndOneKeySwitchMovesItUnderTheLargeSecret) {
  Rings r;
  Prng prng = Prng::from_seed(Prng::Seed{3});
  const SecretKey small_sk = generate_secret_key(r.small, prng), large_sk = generate_secret_key(r.large, prng);
  const std::size_t level = 2, n = r.small->n(), k = r.large->n() / n;
  // A message polynomial with coefficients in [-1000, 1000], in evaluation form.
  std::mt19937_64 rng(5);
  std::vector<std::int64_t> m(n);
  for (auto& x : m) x = static_cast<std::int64_t>(rng() % 2001) - 1000;
  Plaintext plain(r.small, level, Metadata{});
  signed_to_rns(m.data(), n, plain.base(), plain.data());
  backend_for(Device::cpu()).ntt_forward(plain.data(), 1, plain.base());
  const Ciphertext ct = encrypt_secret(small_sk, plain, prng);

  const Ciphertext embedded = embed_in_ring(ct, r.large);
  ASSERT_EQ(embedded.level(), level);
  std::vector<u64> before((level + 1) * n), after((level + 1) * r.large->n());
  decrypt_core(small_sk, ct, before.data());
  decrypt_core(embedded_secret(small_sk, r.large), embedded, after.data());
  for (std::size_t i = 0; i <= level; ++i)  // exactly the small phase, spread; zeros between
    for (std::size_t j = 0; j < r.large->n(); ++j)
      ASSERT_EQ(after[i * r.large->n() + j], j % k ? 0 : before[i * n + j / k]) << "limb " << i << ", coeff. " << j;

  const EmbeddingKey key = generate_embedding_key(large_sk, small_sk, level, prng);
  ASSERT_EQ(key.subring_degree(), n);
  const Ciphertext landed = RlweEvaluator(r.large).switch_key(embedded, key.key());
  decrypt_core(large_sk, landed, after.data());
  const u64 q0 = r.large->params().q_primes()[0];
  std::int64_t worst = 0;
  for (std::size_t j = 0; j < r.large->n(); ++j) {
    const std::int64_t want = j % k ? 0 : centred(before[j / k], q0);
    worst = std::max<std::int64_t>(worst, std::llabs(centred(after[j], q0) - want));
  }
  EXPECT_LT(worst, 1 << 12);  // the key switch's error (P = 2^60 over a 2^130 modulus)
  EXPECT_GT(worst, 0);
}

TEST(Subring, RefusesRingsThatDoNotNest) {
  Rings r;
  Prng prng = Prng::from_seed(Prng::Seed{4});
  const SecretKey large_sk = generate_secret_key(r.large, prng);
  Plaintext plain(r.large, 0, Metadata{});
  const Ciphertext ct = encrypt_secret(large_sk, plain, prng);
  expect_invalid([&] { embed_in_ring(ct, r.small); }, "not a multiple");
  expect_invalid([&] { embedded_secret(large_sk, r.small); }, "not a multiple");
  ParameterLiteral lit = toy(8192);
  lit.q_bits = {45, 40, 40};  // a q_0 of another size: surely another prime
  const RlweContextPtr other = std::make_shared<const ckks::Context>(Parameters(lit))->rlwe();
  const SecretKey small_sk = generate_secret_key(r.small, prng);
  const Ciphertext small_ct = encrypt_secret(small_sk, Plaintext(r.small, 0, Metadata{}), prng);
  expect_invalid([&] { embed_in_ring(small_ct, other); }, "differs between the contexts");
}

// The embedding key is a kind of its own: it round-trips as one, and neither it nor a
// relinearization key loads as the other, even with the envelope's kind rewritten.
TEST(Subring, TheEmbeddingKeyTravelsAsItsOwnKind) {
  Rings r;
  Prng prng = Prng::from_seed(Prng::Seed{6});
  const SecretKey small_sk = generate_secret_key(r.small, prng), large_sk = generate_secret_key(r.large, prng);
  const EmbeddingKey key = generate_embedding_key(large_sk, small_sk, 1, prng);
  const io::Bytes bytes = io::save(key);
  const EmbeddingKey loaded = io::load_embedding_key(r.large, bytes.data(), bytes.size());
  EXPECT_EQ(loaded.fingerprint(), key.fingerprint());
  EXPECT_EQ(loaded.subring_degree(), r.small->n());
  EXPECT_EQ(loaded.key().level(), 1u);
  EXPECT_EQ(io::peek_kind(bytes.data(), bytes.size()), io::Kind::embedding_key);
  expect_invalid([&] { io::load_relin_key(r.large, bytes.data(), bytes.size()); }, "expected a relinearization key");
  const io::Bytes relin = io::save(generate_relin_key(large_sk, prng));
  expect_invalid([&] { io::load_embedding_key(r.large, relin.data(), relin.size()); }, "expected an embedding key");
  expect_invalid([&] { EmbeddingKey(KeySwitchKey(r.large, kRelinearizationSource), r.small->n()); }, "not an embedding key");
  expect_invalid([&] { generate_embedding_key(large_sk, large_sk, 1, prng); }, "does not sit in a ring");
}

}  // namespace
}  // namespace ringfire
