// CRT composition and base conversion against 128-bit / multiword references.
#include <gtest/gtest.h>

#include <random>

#include "ringfire/arith/modular.h"
#include "ringfire/arith/primes.h"
#include "ringfire/ring/multiword.h"
#include "ringfire/ring/poly_ops.h"

namespace ringfire {
namespace {

TEST(Rns, ComposeDecomposeRoundTrip) {
  const std::size_t n = 16;
  const auto base = std::make_shared<const RnsBase>(n, find_ntt_primes(40, 3, n));
  std::mt19937_64 rng(11);
  std::vector<u64> residues(3 * n);
  for (std::size_t l = 0; l < 3; ++l)
    for (std::size_t c = 0; c < n; ++c) residues[l * n + c] = rng() % base->modulus(l).value();
  std::vector<u64> words(3 * n), back(3 * n);
  base->compose(residues.data(), n, words.data());
  base->decompose(words.data(), 3, n, back.data());
  EXPECT_EQ(back, residues);
}

// Three primes (Garner's path): every residue triple, at the edges and at random, composes to
// the x below Q that decomposes back to it, whatever the primes' sizes and order.
TEST(Rns, ThreePrimeComposeIsTheCrtBelowQ) {
  const std::size_t n = 16;
  const u64 p61 = find_ntt_primes(61, 1, n)[0], p50 = find_ntt_primes(50, 1, n)[0], p40 = find_ntt_primes(40, 1, n)[0];
  for (const std::vector<u64>& primes : {std::vector<u64>{p50, p40, find_ntt_primes(40, 2, n)[1]},
                                         std::vector<u64>{p40, p61, p50}, std::vector<u64>{p61, p50, p40}}) {
    const auto base = std::make_shared<const RnsBase>(n, primes);
    std::mt19937_64 rng(13);
    std::vector<u64> residues(3 * n);
    for (int round = 0; round < 50; ++round) {
      for (std::size_t l = 0; l < 3; ++l)
        for (std::size_t c = 0; c < n; ++c) {
          const u64 q = primes[l];
          residues[l * n + c] = round == 0 ? (c & (1u << l) ? q - 1 : 0) : round == 1 ? (c % 3 == l ? 1 : 0) : rng() % q;
        }
      std::vector<u64> words(3 * n), back(3 * n);
      base->compose(residues.data(), n, words.data());
      base->decompose(words.data(), 3, n, back.data());
      ASSERT_EQ(back, residues) << "round " << round;
      for (std::size_t c = 0; c < n; ++c)
        ASSERT_FALSE(multiword::greater_equal(words.data() + 3 * c, base->product().data(), 3)) << "x >= Q";
    }
  }
}

TEST(Rns, TwoPrimeComposeMatches128BitCrt) {
  const std::size_t n = 16;
  const auto primes = find_ntt_primes(50, 2, n);
  const auto base = std::make_shared<const RnsBase>(n, primes);
  const u128 q = static_cast<u128>(primes[0]) * primes[1];
  std::mt19937_64 rng(12);
  for (int t = 0; t < 100; ++t) {
    const u128 x = ((static_cast<u128>(rng()) << 64) | rng()) % q;
    const u64 residues[2] = {static_cast<u64>(x % primes[0]), static_cast<u64>(x % primes[1])};
    u64 words[2];
    base->compose(residues, 1, words);
    EXPECT_EQ((static_cast<u128>(words[1]) << 64) | words[0], x);
  }
}

TEST(Rns, ExactBaseConversionGivesCenteredValue) {
  const std::size_t n = 16;
  const auto src_primes = find_ntt_primes(40, 2, n);
  const auto dst_primes = find_ntt_primes(45, 3, n);
  const auto src = std::make_shared<const RnsBase>(n, src_primes);
  const auto dst = std::make_shared<const RnsBase>(n, dst_primes);
  const BaseConverter conv(src, dst);
  const u128 q = static_cast<u128>(src_primes[0]) * src_primes[1];
  std::mt19937_64 rng(13);
  Poly a(src), fast(dst), exact(dst);
  std::vector<u128> values(n);
  for (std::size_t c = 0; c < n; ++c) {
    values[c] = ((static_cast<u128>(rng()) << 64) | rng()) % q;
    for (std::size_t l = 0; l < 2; ++l) a.limb(l)[c] = static_cast<u64>(values[c] % src_primes[l]);
  }
  base_convert(a, conv, fast, BaseConversion::fast);
  base_convert(a, conv, exact, BaseConversion::exact);
  for (std::size_t j = 0; j < 3; ++j) {
    const u64 p = dst_primes[j];
    for (std::size_t c = 0; c < n; ++c) {
      const bool negative = values[c] > q / 2;
      const u64 x_mod_p = static_cast<u64>(values[c] % p);
      const u64 q_mod_p = static_cast<u64>(q % p);
      const u64 expected = negative ? sub_mod(x_mod_p, q_mod_p, p) : x_mod_p;
      EXPECT_EQ(exact.limb(j)[c], expected);
      // fast = x + u*Q with u in {0, 1}
      const u64 f = fast.limb(j)[c];
      EXPECT_TRUE(f == x_mod_p || f == add_mod(x_mod_p, q_mod_p, p));
    }
  }
}

}  // namespace
}  // namespace ringfire
