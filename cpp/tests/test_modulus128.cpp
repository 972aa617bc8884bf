// Tests of 128-bit modular arithmetic against independent computations:
// native unsigned __int128 `%` for moduli below 2^64, and for larger moduli a
// bit-serial reference (double-and-add, Horner) built only on a carry-aware
// modular addition written here, plus algebraic identities.
#include <gtest/gtest.h>

#include <cstddef>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ringfire/arith/modular.h"
#include "ringfire/arith/modulus128.h"
#include "ringfire/arith/primes.h"
#include "ringfire/base/errors.h"

namespace ringfire {
namespace {

constexpr u128 kMax = ~u128{0};
constexpr u128 kTwo64 = u128{1} << 64;
const u128 kP128 = kMax - 158;                   // 2^128 - 159, largest 128-bit prime
const u128 kM127 = (u128{1} << 127) - 1;         // Mersenne prime 2^127 - 1
const u128 kP64 = kTwo64 - 59;                   // largest 64-bit prime
const u128 kP65 = kTwo64 + 13;                   // smallest prime above 2^64

u128 make(u64 hi, u64 lo) { return (static_cast<u128>(hi) << 64) | lo; }

// ---- independent references --------------------------------------------------

// a + b mod q for a, b < q, without ever forming a + b: compare a with q - b.
u128 ref_add(u128 a, u128 b, u128 q) { return a >= q - b ? a - (q - b) : a + b; }

// a * b mod q by left-to-right double-and-add over the bits of b.
u128 ref_mul(u128 a, u128 b, u128 q) {
  a %= q;
  u128 r = 0;
  for (int i = 127; i >= 0; --i) {
    r = ref_add(r, r, q);
    if (((b >> i) & 1) != 0) r = ref_add(r, a, q);
  }
  return r;
}

// (hi 2^128 + lo) mod q by Horner's rule over the 256 bits.
u128 ref_reduce(U256 x, u128 q) {
  u128 r = 0;
  for (int i = 255; i >= 0; --i) {
    r = ref_add(r, r, q);
    const u128 word = i >= 128 ? x.hi : x.lo;
    if (((word >> (i % 128)) & 1) != 0) r = ref_add(r, 1, q);
  }
  return r;
}

u128 ref_pow(u128 a, u128 e, u128 q) {
  u128 r = 1 % q;
  a %= q;
  for (int i = 127; i >= 0; --i) {
    r = ref_mul(r, r, q);
    if (((e >> i) & 1) != 0) r = ref_mul(r, a, q);
  }
  return r;
}

// Schoolbook product on 32-bit limbs: 8 output limbs, carries propagated one
// limb at a time.
U256 ref_mul_wide(u128 a, u128 b) {
  std::uint32_t x[4], y[4];
  for (int i = 0; i < 4; ++i) {
    x[i] = static_cast<std::uint32_t>(a >> (32 * i));
    y[i] = static_cast<std::uint32_t>(b >> (32 * i));
  }
  u64 z[8] = {};
  for (int i = 0; i < 4; ++i) {
    u64 carry = 0;
    for (int j = 0; j < 4; ++j) {
      const u64 t = static_cast<u64>(x[i]) * y[j] + z[i + j] + carry;
      z[i + j] = t & 0xffffffffu;
      carry = t >> 32;
    }
    z[i + 4] = carry;
  }
  U256 r{0, 0};
  for (int k = 0; k < 4; ++k) r.lo |= static_cast<u128>(z[k]) << (32 * k);
  for (int k = 0; k < 4; ++k) r.hi |= static_cast<u128>(z[k + 4]) << (32 * k);
  return r;
}

bool ref_is_prime_small(u64 n) {
  if (n < 2) return false;
  for (u64 p = 2; p * p <= n; ++p) {
    if (n % p == 0) return false;
  }
  return true;
}

// ---- random values -----------------------------------------------------------

struct Rng {
  std::mt19937_64 engine{0x5eed128};
  u64 word() { return engine(); }
  u128 full() { return make(word(), word()); }
  // Uniform-ish value below q (bias irrelevant for testing).
  u128 below(u128 q) { return full() % q; }
  // Random odd modulus of exactly `bits` bits (bits >= 2).
  u128 odd_modulus(int bits) {
    u128 q = full();
    if (bits < 128) q &= (u128{1} << bits) - 1;
    q |= (u128{1} << (bits - 1)) | 1;
    return q;
  }
};

std::string str(u128 x) { return to_string(x); }

// Moduli exercised by the big-modulus tests: edges plus random odd ones.
std::vector<u128> test_moduli() {
  std::vector<u128> moduli = {3,     5,           kP64, kTwo64 - 1, kTwo64 + 1, kP65,
                              kM127, kM127 + 2,  u128{1} << 127 | 1, kP128, kMax, kMax - 2};
  Rng rng;
  for (int bits : {65, 80, 96, 100, 112, 120, 126, 127, 128, 128, 128}) {
    moduli.push_back(rng.odd_modulus(bits));
  }
  return moduli;
}

std::vector<u128> edge_values(u128 q) {
  std::vector<u128> v = {0, 1, q - 1, q - 2, q / 2, q / 2 + 1};
  if (q > kTwo64) v.push_back(kTwo64 - 1), v.push_back(kTwo64);
  return v;
}

// ---- mul_wide128 -----------------------------------------------------------------

TEST(Modulus128, MulWide128MatchesSchoolbook) {
  Rng rng;
  std::vector<u128> values = {0, 1, 2, kTwo64 - 1, kTwo64, kTwo64 + 1, kMax, kMax - 1,
                              u128{1} << 127, kP128};
  for (int i = 0; i < 40; ++i) values.push_back(rng.full());
  for (int i = 0; i < 10; ++i) values.push_back(rng.word());
  for (u128 a : values) {
    for (u128 b : values) {
      const U256 got = mul_wide128(a, b), want = ref_mul_wide(a, b);
      ASSERT_TRUE(got.lo == want.lo && got.hi == want.hi) << str(a) << " * " << str(b);
      ASSERT_TRUE(got.lo == a * b);  // the low half is the wrapping product
    }
  }
}

TEST(Modulus128, MulWide128KnownValues) {
  // (2^128 - 1)^2 = 2^256 - 2^129 + 1: hi = 2^128 - 2, lo = 1.
  U256 r = mul_wide128(kMax, kMax);
  EXPECT_TRUE(r.hi == kMax - 1 && r.lo == 1);
  // 2^127 * 2 = 2^128.
  r = mul_wide128(u128{1} << 127, 2);
  EXPECT_TRUE(r.hi == 1 && r.lo == 0);
  // (2^64)^2 = 2^128.
  r = mul_wide128(kTwo64, kTwo64);
  EXPECT_TRUE(r.hi == 1 && r.lo == 0);
  EXPECT_EQ(bit_length128(0), 0);
  EXPECT_EQ(bit_length128(1), 1);
  EXPECT_EQ(bit_length128(kTwo64), 65);
  EXPECT_EQ(bit_length128(kMax), 128);
}

// ---- construction and constants ------------------------------------------------

TEST(Modulus128, ConstructorRejectsEvenOrSmallModuli) {
  for (u128 q : {u128{0}, u128{1}, u128{2}, u128{4}, kTwo64, kMax - 1, u128{1} << 127}) {
    try {
      static_cast<void>(Modulus128(q));
      FAIL() << "accepted " << str(q);
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("[arith.Modulus128]"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(static_cast<void>(Modulus128(3)));
  EXPECT_NO_THROW(static_cast<void>(Modulus128(kMax)));
}

TEST(Modulus128, MontgomeryConstants) {
  for (u128 q : test_moduli()) {
    const Modulus128 mod(q);
    EXPECT_TRUE(mod.value() == q);
    EXPECT_EQ(mod.bits(), bit_length128(q));
    EXPECT_TRUE(q * mod.neg_inv() == kMax) << str(q);  // q * (-q^-1) = -1 mod 2^128
    EXPECT_TRUE(mod.r_mod_q() == ref_reduce(U256{0, 1}, q)) << str(q);
    EXPECT_TRUE(mod.r2_mod_q() == ref_mul(mod.r_mod_q(), mod.r_mod_q(), q)) << str(q);
    EXPECT_TRUE(Modulus128(q) == mod);
  }
}

// ---- moduli below 2^64 against native % -------------------------------------------

TEST(Modulus128, SmallModuliMatchNativeRemainder) {
  Rng rng;
  std::vector<u128> moduli = {3, 5, 7, 9, 15, 65537, (u128{1} << 61) - 1, kP64, kTwo64 - 1};
  for (int bits = 2; bits <= 64; bits += 3) moduli.push_back(rng.odd_modulus(bits));
  for (u128 q : moduli) {
    const Modulus128 mod(q);
    std::vector<u128> values = edge_values(q);
    for (int i = 0; i < 20; ++i) values.push_back(rng.below(q));
    for (u128 a : values) {
      for (u128 b : values) {
        ASSERT_TRUE(mod.add(a, b) == (a + b) % q) << str(a) << " + " << str(b) << " mod " << str(q);
        ASSERT_TRUE(mod.sub(a, b) == (a + q - b) % q);
        ASSERT_TRUE(mod.mul(a, b) == a * b % q) << str(a) << " * " << str(b) << " mod " << str(q);
      }
      ASSERT_TRUE(mod.neg(a) == (q - a) % q);
      // pow against a native square-and-multiply on u128 (products < 2^128).
      const u128 e = rng.word();
      u128 want = 1, base = a, k = e;
      for (; k != 0; k >>= 1) {
        if (k & 1) want = want * base % q;
        base = base * base % q;
      }
      ASSERT_TRUE(mod.pow(a, e) == want) << str(a) << "^" << str(e) << " mod " << str(q);
    }
    // Any 256-bit value: x mod q = (hi * (2^128 mod q) + lo) mod q.
    for (int i = 0; i < 20; ++i) {
      const U256 x{rng.full(), rng.full()};
      const u128 r128 = (kMax % q + 1) % q;
      ASSERT_TRUE(mod.reduce(x) == ((x.hi % q) * r128 % q + x.lo % q) % q);
    }
  }
}

// ---- any modulus against the bit-serial reference ----------------------------------

TEST(Modulus128, AddSubNegMulMatchReference) {
  Rng rng;
  for (u128 q : test_moduli()) {
    const Modulus128 mod(q);
    std::vector<u128> values = edge_values(q);
    for (int i = 0; i < 12; ++i) values.push_back(rng.below(q));
    for (u128 a : values) {
      for (u128 b : values) {
        ASSERT_TRUE(mod.add(a, b) == ref_add(a, b, q)) << str(a) << " + " << str(b) << " mod " << str(q);
        ASSERT_TRUE(mod.sub(a, b) == ref_add(a, (q - b) % q, q));
        ASSERT_TRUE(mod.mul(a, b) == ref_mul(a, b, q)) << str(a) << " * " << str(b) << " mod " << str(q);
      }
      ASSERT_TRUE(mod.neg(a) == (a == 0 ? 0 : q - a));
      ASSERT_TRUE(mod.add(a, mod.neg(a)) == 0);
    }
  }
}

TEST(Modulus128, ReduceAny256BitValue) {
  Rng rng;
  for (u128 q : test_moduli()) {
    const Modulus128 mod(q);
    std::vector<U256> xs = {{0, 0}, {kMax, kMax}, {kMax, 0}, {0, kMax}, {q, 0}, {0, q},
                            {q - 1, q - 1}, {0, 1}};
    for (int i = 0; i < 20; ++i) xs.push_back({rng.full(), rng.full()});
    for (const U256& x : xs) {
      ASSERT_TRUE(mod.reduce(x) == ref_reduce(x, q)) << str(x.hi) << ":" << str(x.lo) << " mod " << str(q);
    }
    // reduce(mul_wide128(a, b)) == mul(a, b), also for unreduced inputs.
    for (int i = 0; i < 20; ++i) {
      const u128 a = rng.full(), b = rng.full();
      ASSERT_TRUE(mod.reduce(mul_wide128(a, b)) == mod.mul(a, b));
      ASSERT_TRUE(mod.mul(a, b) == ref_mul(a, b, q));
    }
  }
}

TEST(Modulus128, PowMatchesReference) {
  Rng rng;
  for (u128 q : test_moduli()) {
    const Modulus128 mod(q);
    std::vector<u128> exponents = {0, 1, 2, 3, q - 1, q, kMax, kTwo64};
    for (int i = 0; i < 3; ++i) exponents.push_back(rng.full());
    for (u128 a : {u128{0}, u128{1}, q - 1, rng.below(q), rng.below(q)}) {
      for (u128 e : exponents) {
        ASSERT_TRUE(mod.pow(a, e) == ref_pow(a, e, q)) << str(a) << "^" << str(e) << " mod " << str(q);
      }
    }
  }
}

TEST(Modulus128, MontgomeryFormRoundTrips) {
  Rng rng;
  for (u128 q : test_moduli()) {
    const Modulus128 mod(q);
    for (int i = 0; i < 10; ++i) {
      const u128 a = rng.below(q), b = rng.below(q);
      const u128 am = mod.to_montgomery(a), bm = mod.to_montgomery(b);
      ASSERT_TRUE(am == ref_mul(a, mod.r_mod_q(), q));
      ASSERT_TRUE(mod.from_montgomery(am) == a);
      ASSERT_TRUE(mod.from_montgomery(mod.montgomery_mul(am, bm)) == mod.mul(a, b));
    }
  }
}

// ---- identities for prime moduli ------------------------------------------------

TEST(Modulus128, PrimeModulusIdentities) {
  Rng rng;
  std::vector<u128> primes = {3, kP64, kP65, kM127, kP128};
  for (u128 p : find_ntt_primes128(128, 2, 1 << 12)) primes.push_back(p);
  for (u128 p : find_ntt_primes128(100, 2, 1 << 10)) primes.push_back(p);
  for (u128 q : primes) {
    const Modulus128 mod(q);
    std::vector<u128> values = {1, 2, q - 1, q - 2};
    for (int i = 0; i < 8; ++i) values.push_back(rng.below(q - 1) + 1);
    for (u128 a : values) {
      if (a == 0 || a >= q) continue;
      EXPECT_TRUE(mod.pow(a, q - 1) == 1) << "Fermat " << str(a) << " mod " << str(q);
      const u128 ai = mod.inv(a);
      EXPECT_TRUE(mod.mul(a, ai) == 1) << str(a) << " mod " << str(q);
      EXPECT_TRUE(ai == mod.pow(a, q - 2));
      for (u128 b : values) {
        if (b >= q) continue;
        const u128 c = rng.below(q);
        EXPECT_TRUE(mod.mul(mod.mul(a, b), mod.inv(b)) == a);
        // a (b + c) = a b + a c and (a - b) c = a c - b c.
        EXPECT_TRUE(mod.mul(a, mod.add(b, c)) == mod.add(mod.mul(a, b), mod.mul(a, c)));
        EXPECT_TRUE(mod.mul(mod.sub(a, b), c) == mod.sub(mod.mul(a, c), mod.mul(b, c)));
        EXPECT_TRUE(mod.mul(a, b) == mod.mul(b, a));
      }
      // Multiplication by k equals k - 1 repeated additions.
      u128 sum = a;
      for (u128 k = 2; k <= 40; ++k) {
        sum = mod.add(sum, a);
        ASSERT_TRUE(mod.mul(a, k) == sum);
      }
    }
    EXPECT_TRUE(mod.inv(q - 1) == q - 1);  // (-1)^-1 = -1
    EXPECT_TRUE(mod.inv(1) == 1);
  }
}

TEST(Modulus128, InverseForCompositeModuliAndErrors) {
  Rng rng;
  for (u128 q : {u128{15}, kTwo64 - 1, kMax, kMax - 2, rng.odd_modulus(128), rng.odd_modulus(90)}) {
    const Modulus128 mod(q);
    for (int i = 0; i < 30; ++i) {
      u128 a = rng.below(q);
      u128 x = q, y = a;  // gcd(q, a)
      while (y != 0) {
        const u128 t = x % y;
        x = y;
        y = t;
      }
      if (x == 1) {
        ASSERT_TRUE(mod.mul(a, mod.inv(a)) == 1) << str(a) << " mod " << str(q);
      } else {
        ASSERT_THROW(mod.inv(a), InvalidArgument) << str(a) << " mod " << str(q);
      }
    }
  }
  // 3 divides 2^128 - 1 (2^2 = 1 mod 3); 0 is never invertible.
  try {
    Modulus128(kMax).inv(3);
    FAIL() << "3 inverted modulo 2^128 - 1";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("[arith.Modulus128.inv]"), std::string::npos);
  }
  EXPECT_THROW(Modulus128(kP128).inv(0), InvalidArgument);
  EXPECT_THROW(Modulus128(kP128).inv(kP128), InvalidArgument);  // reduced to 0
}

// ---- primality -------------------------------------------------------------------

TEST(Modulus128, IsPrime128SmallValuesMatchTrialDivision) {
  for (u64 n = 0; n < 5000; ++n) {
    ASSERT_EQ(is_prime128(n), ref_is_prime_small(n)) << n;
  }
  Rng rng;
  for (int i = 0; i < 2000; ++i) {
    const u64 n = rng.word() | 1;
    ASSERT_EQ(is_prime128(n), is_prime(n)) << n;
  }
}

TEST(Modulus128, IsPrime128KnownValues) {
  const std::vector<u128> primes = {
      kP64, kP65, kM127, kP128, (u128{1} << 89) - 1, (u128{1} << 107) - 1,
      parse_u128("170141183460469231731687303715884105757"),  // 2^127 + 29
      parse_u128("340282366920938463463374607431768211297"),  // 2^128 - 159 (spelled out)
  };
  for (u128 p : primes) EXPECT_TRUE(is_prime128(p)) << str(p);
  const std::vector<u128> composites = {
      kMax, kTwo64 + 1, kTwo64 - 1, kM127 + 2, kP64 * kP64,
      kP64 * ((u128{1} << 61) - 1),
      // psi_12: a strong pseudoprime to every base 2..37 (caught by base 41).
      parse_u128("318665857834031151167461"),
      // psi_13: a strong pseudoprime to every base 2..41 (caught by Lucas).
      parse_u128("3317044064679887385961981"),
      // Chernick's Carmichael number (6k+1)(12k+1)(18k+1) with k = 10000146, all
      // three factors prime: a Fermat pseudoprime to every coprime base.
      (6 * u128{10000146} + 1) * (12 * u128{10000146} + 1) * (18 * u128{10000146} + 1),
      kP65 * kP65, u128{3} * kM127,
  };
  for (u128 n : composites) EXPECT_FALSE(is_prime128(n)) << str(n);
  // Products of two random 64-bit primes.
  Rng rng;
  for (int i = 0; i < 5; ++i) {
    u64 p = rng.word() | 1, q = rng.word() | 1;
    while (!is_prime(p)) p += 2;
    while (!is_prime(q)) q += 2;
    EXPECT_FALSE(is_prime128(static_cast<u128>(p) * q));
  }
}

TEST(Modulus128, IsPrime128AgreesWithFermatOnRandomOddValues) {
  // A composite passing both the test and a Fermat check to a random base is
  // vanishingly unlikely; a prime must pass Fermat to every base.
  Rng rng;
  int primes_seen = 0;
  for (int i = 0; i < 3000; ++i) {
    const u128 n = rng.odd_modulus(70 + i % 59);
    const bool fermat = Modulus128(n).pow(rng.below(n - 3) + 2, n - 1) == 1;
    if (is_prime128(n)) {
      ++primes_seen;
      ASSERT_TRUE(fermat) << str(n);
    } else {
      ASSERT_FALSE(fermat) << str(n);
    }
  }
  EXPECT_GT(primes_seen, 10);
}

// ---- NTT primes and roots -----------------------------------------------------------

TEST(Modulus128, FindNttPrimes128MatchesWordSizeSearch) {
  for (int bits : {10, 20, 30, 45, 55, 60, 61}) {
    const std::size_t n = bits <= 10 ? 4 : 1024;
    const std::size_t count = bits <= 10 ? 2 : 4;
    const std::vector<u64> words = find_ntt_primes(bits, count, n);
    const std::vector<u128> wide = find_ntt_primes128(bits, count, n);
    ASSERT_EQ(words.size(), wide.size());
    for (std::size_t i = 0; i < words.size(); ++i) EXPECT_TRUE(wide[i] == words[i]) << bits;
  }
}

TEST(Modulus128, FindNttPrimes128Properties) {
  for (int bits : {62, 64, 65, 90, 100, 120, 127, 128}) {
    for (std::size_t n : {std::size_t{1} << 10, std::size_t{1} << 16}) {
      const std::vector<u128> primes = find_ntt_primes128(bits, 3, n);
      ASSERT_EQ(primes.size(), 3u);
      std::set<u128> seen;
      for (std::size_t i = 0; i < primes.size(); ++i) {
        const u128 p = primes[i];
        EXPECT_TRUE(is_prime128(p)) << str(p);
        EXPECT_EQ(bit_length128(p), bits);
        EXPECT_TRUE(p % (2 * static_cast<u128>(n)) == 1);
        if (i > 0) {
          EXPECT_TRUE(p < primes[i - 1]);
        }
        seen.insert(p);
        // Fermat to a few bases as an independent sanity check.
        const Modulus128 mod(p);
        for (u128 a : {u128{2}, u128{3}, u128{12345}}) EXPECT_TRUE(mod.pow(a, p - 1) == 1);
      }
      EXPECT_EQ(seen.size(), primes.size());
      // No larger candidate was skipped: between primes[0] and 2^bits every
      // value = 1 mod 2N is composite.
      const u128 high = bits == 128 ? kMax : (u128{1} << bits) - 1;
      for (u128 c = primes[0] + 2 * n; c <= high && c > primes[0]; c += 2 * n) {
        EXPECT_FALSE(is_prime128(c)) << str(c);
      }
    }
  }
  EXPECT_TRUE(find_ntt_primes128(2, 1, 1)[0] == 3);
  EXPECT_TRUE(find_ntt_primes128(128, 0, 1024).empty());
}

TEST(Modulus128, FindNttPrimes128Errors) {
  EXPECT_THROW(find_ntt_primes128(1, 1, 16), InvalidArgument);
  EXPECT_THROW(find_ntt_primes128(129, 1, 16), InvalidArgument);
  EXPECT_THROW(find_ntt_primes128(100, 1, 0), InvalidArgument);
  EXPECT_THROW(find_ntt_primes128(100, 1, 12), InvalidArgument);
  EXPECT_THROW(find_ntt_primes128(10, 100, 16), InvalidArgument);  // too few exist
  try {
    find_ntt_primes128(4, 1, 1024);  // 2N exceeds every 4-bit value
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("[arith.find_ntt_primes128]"), std::string::npos);
  }
}

TEST(Modulus128, MinimalPrimitiveRoot128) {
  // Agrees with the word-size search.
  for (std::size_t n : {std::size_t{4}, std::size_t{1024}}) {
    for (u64 q : find_ntt_primes(50, 2, n)) {
      EXPECT_TRUE(minimal_primitive_root128(q, n) == minimal_primitive_root(q, n)) << q;
    }
  }
  for (std::size_t n : {std::size_t{1}, std::size_t{8}, std::size_t{1} << 12}) {
    for (u128 q : find_ntt_primes128(128, 2, n)) {
      const Modulus128 mod(q);
      const u128 root = minimal_primitive_root128(q, n);
      // Order exactly 2N: root^N = -1 (so root^2N = 1 and no smaller power of two works).
      EXPECT_TRUE(mod.pow(root, n) == q - 1) << str(q);
      EXPECT_TRUE(mod.pow(root, 2 * static_cast<u128>(n)) == 1);
      // Minimal among all primitive 2N-th roots root^k, k odd.
      if (n <= 8) {
        for (u128 k = 3; k < 2 * n; k += 2) EXPECT_TRUE(mod.pow(root, k) > root);
      }
    }
  }
  EXPECT_THROW(minimal_primitive_root128(kMax, 4), InvalidArgument);   // composite
  EXPECT_THROW(minimal_primitive_root128(kP128, 64), InvalidArgument);  // 2^128 - 160 = 32 * odd
  EXPECT_NO_THROW(minimal_primitive_root128(kP128, 16));
  EXPECT_THROW(minimal_primitive_root128(kM127, 3), InvalidArgument);  // N not a power of 2
}

// ---- decimal text ------------------------------------------------------------------

TEST(Modulus128, DecimalTextRoundTrips) {
  EXPECT_EQ(to_string(0), "0");
  EXPECT_EQ(to_string(kMax), "340282366920938463463374607431768211455");
  EXPECT_EQ(to_string(kTwo64), "18446744073709551616");
  EXPECT_TRUE(parse_u128("340282366920938463463374607431768211455") == kMax);
  EXPECT_TRUE(parse_u128("0") == 0);
  EXPECT_TRUE(parse_u128("007") == 7);
  Rng rng;
  for (int i = 0; i < 100; ++i) {
    const u128 x = rng.full() >> (i % 128);
    ASSERT_TRUE(parse_u128(to_string(x)) == x);
  }
  for (const char* bad : {"", "-1", "+1", "12a", " 1", "0x10",
                          "340282366920938463463374607431768211456",
                          "1000000000000000000000000000000000000000"}) {
    EXPECT_THROW(parse_u128(bad), InvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace ringfire
