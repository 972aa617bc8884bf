// Word-size modular arithmetic against 128-bit '%' as the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ringfire/arith/integral_doubles.h"
#include "ringfire/arith/modular.h"
#include "ringfire/arith/primes.h"
#include "ringfire/base/errors.h"

namespace ringfire {
namespace {

u64 reference_mul(u64 a, u64 b, u64 q) { return static_cast<u64>(mul_wide(a, b) % q); }

std::vector<u64> test_moduli() {
  return {2, 3, 17, 65537, 994705409, (u64{1} << 40) - 87, find_ntt_primes(50, 1, 1024)[0],
          find_ntt_primes(60, 1, 1 << 16)[0], find_ntt_primes(61, 1, 1 << 17)[0], (u64{1} << 61) - 1};
}

TEST(Arith, AllReductionsMatchReference) {
  std::mt19937_64 rng(7);
  for (u64 q : test_moduli()) {
    const Modulus mod(q);
    std::uniform_int_distribution<u64> dist(0, q - 1);
    std::vector<u64> values = {0, 1, q - 1, q / 2};
    for (int i = 0; i < 2000; ++i) values.push_back(dist(rng));
    for (std::size_t i = 0; i + 1 < values.size(); ++i) {
      const u64 a = values[i], b = values[values.size() - 1 - i];
      const u64 expected = reference_mul(a, b, q);
      const u128 x = mul_wide(a, b);
      ASSERT_EQ(reduce_barrett_classic(x, mod), expected) << "q=" << q << " a=" << a << " b=" << b;
      ASSERT_EQ(reduce_alg4(x, mod), expected) << "q=" << q;
      ASSERT_EQ(reduce_u128(x, mod), expected) << "q=" << q;
      if (mod.supports_dhem()) {
        ASSERT_EQ(reduce_dhem(x, mod), expected) << "q=" << q;
      }
      ASSERT_EQ(mul_mod_shoup(a, b, shoup_precompute(b, q), q), expected) << "q=" << q;
      ASSERT_EQ(mad_mod(a, b, a, mod), static_cast<u64>((x + a) % q));
    }
  }
}

TEST(Arith, SeedHardCase) {
  // Seed 002 §II-B: needs two corrections in some published Barrett variants.
  const u64 a = 994674970, b = 994705408, q = 994705409;
  const Modulus mod(q);
  const u64 expected = reference_mul(a, b, q);
  EXPECT_EQ(reduce_barrett_classic(mul_wide(a, b), mod), expected);
  EXPECT_EQ(reduce_dhem(mul_wide(a, b), mod), expected);
  EXPECT_EQ(reduce_alg4(mul_wide(a, b), mod), expected);
}

TEST(Arith, ReduceU128AnyValue) {
  std::mt19937_64 rng(9);
  for (u64 q : test_moduli()) {
    const Modulus mod(q);
    for (int i = 0; i < 1000; ++i) {
      const u128 x = (static_cast<u128>(rng()) << 64) | rng();
      ASSERT_EQ(reduce_u128(x, mod), static_cast<u64>(x % q));
    }
    ASSERT_EQ(reduce_u128(~u128{0}, mod), static_cast<u64>(~u128{0} % q));
  }
}

// Rounded CKKS coefficients into residues: the doubles' path (values and q below 2^52) and the
// one-at-a-time path give the residue in [0, q) that 128-bit '%' gives, at the edges (0, -0,
// multiples of q and their neighbours, 2^52 - 1) and at random magnitudes of every size.
TEST(Arith, IntegralDoublesReduceExactly) {
  std::mt19937_64 rng(11);
  for (u64 q : test_moduli()) {
    const Modulus mod(q);
    std::vector<double> x = {0.0, -0.0, 1.0, -1.0, 0x1p52 - 1, -(0x1p52 - 1), 0x1p51, -0x1p51};
    for (const double multiple : {1.0, 2.0, 3.0, 1000.0})
      for (const double offset : {-1.0, 0.0, 1.0}) {
        const double v = multiple * static_cast<double>(q) + offset;
        if (std::fabs(v) < 0x1p52) x.insert(x.end(), {v, -v});
      }
    for (int i = 0; i < 2000; ++i) {
      const double v = static_cast<double>(rng() >> (12 + rng() % 52));  // below 2^52, of any size
      x.push_back(rng() & 1 ? -v : v);
    }
    const auto reference = [q](double v) {
      const __int128 r = static_cast<__int128>(v) % static_cast<__int128>(q);
      return static_cast<u64>(r < 0 ? r + q : r);
    };
    std::vector<u64> fast(x.size()), one_at_a_time(x.size());
    reduce_integral_doubles(x.data(), x.size(), 0x1p52 - 1, mod, fast.data());
    reduce_integral_doubles(x.data(), x.size(), 0x1p60, mod, one_at_a_time.data());  // a bound that takes the other path
    for (std::size_t k = 0; k < x.size(); ++k) {
      ASSERT_EQ(fast[k], reference(x[k])) << "x = " << x[k] << ", q = " << q;
      ASSERT_EQ(one_at_a_time[k], reference(x[k])) << "x = " << x[k] << ", q = " << q;
      ASSERT_EQ(reduce_integral_double(x[k], mod), reference(x[k]));
    }
  }
  // Beyond 2^63 (a rounded coefficient may be as large as the modulus chain): 2^70 + 2^18.
  const Modulus mod(find_ntt_primes(50, 1, 1024)[0]);
  const u128 big = (u128{1} << 70) + (u128{1} << 18);
  EXPECT_EQ(reduce_integral_double(0x1p70 + 0x1p18, mod), static_cast<u64>(big % mod.value()));
  EXPECT_EQ(reduce_integral_double(-(0x1p70 + 0x1p18), mod), mod.value() - static_cast<u64>(big % mod.value()));
}

TEST(Arith, AddSubNegPowInv) {
  const u64 q = find_ntt_primes(61, 1, 16)[0];
  const Modulus mod(q);
  EXPECT_EQ(add_mod(q - 1, q - 1, q), q - 2);
  EXPECT_EQ(sub_mod(0, 1, q), q - 1);
  EXPECT_EQ(neg_mod(0, q), 0u);
  EXPECT_EQ(neg_mod(1, q), q - 1);
  EXPECT_EQ(pow_mod(3, q - 1, mod), 1u);  // Fermat
  const u64 x = 123456789123ULL;
  EXPECT_EQ(mul_mod(x, inv_mod(x, q), mod), 1u);
  EXPECT_THROW(inv_mod(6, 9), InvalidArgument);
}

TEST(Arith, ModulusLimitsAreErrors) {
  EXPECT_THROW(Modulus(1), InvalidArgument);
  EXPECT_THROW(Modulus(u64{1} << 61), InvalidArgument);
  EXPECT_FALSE(Modulus((u64{1} << 61) - 1).supports_dhem());
  EXPECT_TRUE(Modulus((u64{1} << 60) - 1).supports_dhem());
  // floor(2^123 / 2^59) = 2^64: the one 60-bit modulus without the headroom.
  EXPECT_FALSE(Modulus(u64{1} << 59).supports_dhem());
  EXPECT_TRUE(Modulus((u64{1} << 59) + 1).supports_dhem());
}

TEST(Primes, NttPrimesAreDistinctPrimeAndCongruent) {
  for (int bits : {20, 30, 40, 50, 60, 61}) {
    const std::size_t n = 1 << 12;
    const auto primes = find_ntt_primes(bits, 5, n);
    ASSERT_EQ(primes.size(), 5u);
    for (std::size_t i = 0; i < primes.size(); ++i) {
      EXPECT_TRUE(is_prime(primes[i]));
      EXPECT_EQ(bit_length(primes[i]), bits);
      EXPECT_EQ(primes[i] % (2 * n), 1u);
      if (i > 0) {
        EXPECT_LT(primes[i], primes[i - 1]);
      }
    }
  }
  EXPECT_THROW(find_ntt_primes(20, 1000, 1 << 14), InvalidArgument);
  EXPECT_THROW(find_ntt_primes(62, 1, 16), InvalidArgument);
}

TEST(Primes, PrimitiveRootHasOrder2N) {
  const std::size_t n = 1 << 10;
  for (u64 q : find_ntt_primes(55, 3, n)) {
    const Modulus mod(q);
    const u64 psi = minimal_primitive_root(q, n);
    EXPECT_EQ(pow_mod(psi, n, mod), q - 1);
    EXPECT_EQ(pow_mod(psi, 2 * n, mod), 1u);
  }
  EXPECT_THROW(minimal_primitive_root(97, 1 << 10), InvalidArgument);
}

TEST(Primes, MillerRabinKnownValues) {
  EXPECT_FALSE(is_prime(0));
  EXPECT_FALSE(is_prime(1));
  EXPECT_TRUE(is_prime(2));
  EXPECT_TRUE(is_prime((u64{1} << 61) - 1));
  EXPECT_FALSE(is_prime(3215031751ULL));              // strong pseudoprime to bases 2,3,5,7
  EXPECT_TRUE(is_prime(18446744073709551557ULL));     // largest 64-bit prime
  EXPECT_FALSE(is_prime(18446744073709551557ULL - 2));
}

}  // namespace
}  // namespace ringfire
