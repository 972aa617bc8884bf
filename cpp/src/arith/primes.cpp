#include "ringfire/arith/primes.h"

#include <string>

#include "ringfire/arith/modular.h"
#include "ringfire/base/errors.h"
#include "ntt_prime_search.h"

namespace ringfire {

namespace {

// 128-bit arithmetic so Miller-Rabin works for every 64-bit n, not just < 2^61.
u64 mul_mod_wide(u64 a, u64 b, u64 n) { return static_cast<u64>(mul_wide(a, b) % n); }

u64 pow_mod_wide(u64 base, u64 exponent, u64 n) {
  u64 result = 1 % n;
  base %= n;
  while (exponent != 0) {
    if (exponent & 1) result = mul_mod_wide(result, base, n);
    base = mul_mod_wide(base, base, n);
    exponent >>= 1;
  }
  return result;
}

}  // namespace

bool is_prime(u64 n) {
  if (n < 2) return false;
  constexpr u64 kBases[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
  for (u64 p : kBases) {
    if (n % p == 0) return n == p;
  }
  u64 d = n - 1;
  int s = 0;
  while ((d & 1) == 0) {
    d >>= 1;
    ++s;
  }
  for (u64 a : kBases) {
    u64 x = pow_mod_wide(a, d, n);
    if (x == 1 || x == n - 1) continue;
    bool composite = true;
    for (int r = 1; r < s; ++r) {
      x = mul_mod_wide(x, x, n);
      if (x == n - 1) {
        composite = false;
        break;
      }
    }
    if (composite) return false;
  }
  return true;
}

std::vector<u64> find_ntt_primes(int bits, std::size_t count, std::size_t poly_degree) {
  return detail::find_ntt_primes<u64>(bits, kMaxModulusBits, count, poly_degree, [](u64 q) { return is_prime(q); },
                                      "ring.find_primes");
}

bool is_ntt_friendly(u64 q, std::size_t poly_degree) {
  return detail::is_power_of_two(poly_degree) && q >= 3 && bit_length(q) <= kMaxModulusBits &&
         (q - 1) % (2 * static_cast<u64>(poly_degree)) == 0 && is_prime(q);
}

u64 minimal_primitive_root(u64 q, std::size_t poly_degree) {
  require(is_ntt_friendly(q, poly_degree), "ring.primitive_root",
          std::to_string(q) + " is not a prime below 2^61 with q = 1 mod 2N for N=" +
              std::to_string(poly_degree));
  const Modulus mod(q);
  const u64 order = 2 * static_cast<u64>(poly_degree);
  const u64 cofactor = (q - 1) / order;
  // g^((q-1)/2N) has order exactly 2N iff its N-th power is -1.
  u64 root = 0;
  for (u64 x = 2; x < q; ++x) {
    const u64 candidate = pow_mod(x, cofactor, mod);
    if (pow_mod(candidate, poly_degree, mod) == q - 1) {
      root = candidate;
      break;
    }
  }
  // Every primitive 2N-th root is root^k with k odd; take the smallest.
  const u64 root_squared = mul_mod(root, root, mod);
  u64 best = root, power = root;
  for (u64 k = 1; k < poly_degree; ++k) {
    power = mul_mod(power, root_squared, mod);
    if (power < best) best = power;
  }
  return best;
}

}  // namespace ringfire
