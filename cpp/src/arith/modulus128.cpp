#include "ringfire/arith/modulus128.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "ringfire/arith/primes.h"
#include "ringfire/base/errors.h"
#include "ntt_prime_search.h"

namespace ringfire {

namespace {

constexpr u128 kTwoTo64 = u128{1} << 64;


u128 gcd128(u128 a, u128 b) {
  while (b != 0) {
    const u128 r = a % b;
    a = b;
    b = r;
  }
  return a;
}

// floor(sqrt(n)) by Newton's iteration from above: x_{k+1} = (x_k + n/x_k)/2
// decreases strictly until it reaches floor(sqrt(n)).
u128 isqrt128(u128 n) {
  if (n < 2) return n;
  // Start at 2^ceil(len(n)/2) >= sqrt(n); it fits since len(n) <= 128.
  u128 x = u128{1} << ((bit_length128(n) + 1) / 2);
  while (true) {
    const u128 y = (x + n / x) / 2;
    if (y >= x) return x;
    x = y;
  }
}

// Jacobi symbol (a / n) for odd n >= 1 and any a, by quadratic reciprocity:
// (2/n) = -1 iff n = 3, 5 (mod 8); swapping odd a, n flips the sign iff both
// are 3 (mod 4).
int jacobi(u128 a, u128 n) {
  a %= n;
  int result = 1;
  while (a != 0) {
    while ((a & 1) == 0) {
      a >>= 1;
      const unsigned r = static_cast<unsigned>(n & 7);
      if (r == 3 || r == 5) result = -result;
    }
    std::swap(a, n);
    if ((a & 3) == 3 && (n & 3) == 3) result = -result;
    a %= n;
  }
  return n == 1 ? result : 0;
}

// One Miller-Rabin round: with n - 1 = d 2^s (d odd), n is a strong probable
// prime to base a when a^d = 1 or a^(d 2^r) = -1 for some 0 <= r < s.
bool strong_probable_prime(const Modulus128& mod, u128 d, int s, u128 base) {
  const u128 minus_one = mod.value() - 1;
  u128 x = mod.pow(base, d);
  if (x == 1 || x == minus_one) return true;
  for (int r = 1; r < s; ++r) {
    x = mod.mul(x, x);
    if (x == minus_one) return true;
  }
  return false;
}

// x / 2 mod odd n for x < n: x is halved directly when even, else
// (x + n) / 2 = floor(x/2) + floor(n/2) + 1, which never overflows.
u128 half_mod(u128 x, u128 n) { return (x >> 1) + ((x & 1) != 0 ? (n >> 1) + 1 : 0); }

// v mod n for a small signed v with |v| < n.
u128 signed_mod(std::int64_t v, u128 n) {
  return v < 0 ? n - static_cast<u128>(-v) : static_cast<u128>(v);
}

// Strong Lucas probable-prime test with Selfridge's parameters (method A):
// D is the first of 5, -7, 9, -11, ... with (D/n) = -1, P = 1, Q = (1 - D)/4.
// With n + 1 = d 2^s (d odd), n passes when U_d = 0 or V_(d 2^r) = 0 for some
// 0 <= r < s (mod n). Needs odd n > 2^64 that is not a perfect square (the
// search for D would not end on a square) and has no factor below 42.
bool strong_lucas_probable_prime(const Modulus128& mod) {
  const u128 n = mod.value();
  std::int64_t d_param = 5;
  while (true) {
    const int j = jacobi(signed_mod(d_param, n), n);
    if (j == -1) break;
    if (j == 0) return false;  // gcd(|D|, n) > 1 and |D| < n: composite
    d_param = d_param > 0 ? -(d_param + 2) : -d_param + 2;
  }
  const std::int64_t q_param = (1 - d_param) / 4;
  if (gcd128(static_cast<u128>(q_param < 0 ? -q_param : q_param), n) != 1) return false;
  const u128 dd = signed_mod(d_param, n);
  const u128 qq = signed_mod(q_param, n);

  // n + 1 = d 2^s; n < 2^128 - 1 as 2^128 - 1 is divisible by 3.
  u128 d = n + 1;
  int s = 0;
  while ((d & 1) == 0) {
    d >>= 1;
    ++s;
  }

  // Left-to-right ladder from k = 1 (U_1 = 1, V_1 = P = 1, Q^1 = Q):
  //   k -> 2k:   U_2k = U_k V_k,  V_2k = V_k^2 - 2 Q^k,  Q^2k = (Q^k)^2;
  //   k -> k+1:  U_(k+1) = (U_k + V_k) / 2,  V_(k+1) = (D U_k + V_k) / 2.
  u128 u = 1, v = 1, qk = qq;
  for (int i = bit_length128(d) - 2; i >= 0; --i) {
    u = mod.mul(u, v);
    v = mod.sub(mod.mul(v, v), mod.add(qk, qk));
    qk = mod.mul(qk, qk);
    if (((d >> i) & 1) != 0) {
      const u128 u_next = half_mod(mod.add(u, v), n);
      v = half_mod(mod.add(mod.mul(dd, u), v), n);
      u = u_next;
      qk = mod.mul(qk, qq);
    }
  }
  if (u == 0 || v == 0) return true;
  for (int r = 1; r < s; ++r) {
    v = mod.sub(mod.mul(v, v), mod.add(qk, qk));  // V_(d 2^r) from V_(d 2^(r-1))
    if (v == 0) return true;
    qk = mod.mul(qk, qk);
  }
  return false;
}

bool is_ntt_friendly128(u128 q, std::size_t poly_degree) {
  return detail::is_power_of_two(poly_degree) && q >= 3 &&
         (q - 1) % (2 * static_cast<u128>(poly_degree)) == 0 && is_prime128(q);
}

}  // namespace

Modulus128::Modulus128(u128 q) : q_(q) {
  require(q >= 3 && (q & 1) == 1, "arith.Modulus128",
          "modulus must be odd with 3 <= q < 2^128, got " + to_string(q));
  bits_ = bit_length128(q);
  // Newton-Hensel lifting: q x = 1 (mod 2^k) implies q x (2 - q x) = 1
  // (mod 2^2k). x = q is right mod 2^3 (odd squares are 1 mod 8), so six
  // steps reach 3 * 2^6 = 192 >= 128 bits.
  u128 x = q;
  for (int i = 0; i < 6; ++i) x *= 2 - q * x;
  neg_inv_ = u128{0} - x;
  // R mod q = (2^128 - q) mod q, and 2^128 - q is what -q wraps to.
  r1_ = (u128{0} - q) % q;
  // R^2 mod q = R * 2^128 mod q: 128 modular doublings of R mod q.
  u128 r2 = r1_;
  for (int i = 0; i < 128; ++i) r2 = add(r2, r2);
  r2_ = r2;
}

u128 Modulus128::inv(u128 a) const {
  // Extended Euclid on (q, a mod q) with the cofactors kept mod q, so nothing
  // overflows: the invariant is r_i = t_i a (mod q).
  u128 r0 = q_, r1 = a % q_, t0 = 0, t1 = 1;
  while (r1 != 0) {
    const u128 quotient = r0 / r1;
    const u128 r2 = r0 - quotient * r1;
    r0 = r1;
    r1 = r2;
    const u128 t2 = sub(t0, mul(quotient, t1));
    t0 = t1;
    t1 = t2;
  }
  require(r0 == 1, "arith.Modulus128.inv",
          to_string(a) + " has no inverse modulo " + to_string(q_));
  return t0;
}

bool is_prime128(u128 n) {
  if (n < kTwoTo64) return is_prime(static_cast<u64>(n));
  constexpr u64 kBases[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41};
  for (u64 p : kBases) {
    if (n % p == 0) return false;  // n > 2^64 > p
  }
  const Modulus128 mod(n);  // n is odd here
  u128 d = n - 1;
  int s = 0;
  while ((d & 1) == 0) {
    d >>= 1;
    ++s;
  }
  for (u64 a : kBases) {
    if (!strong_probable_prime(mod, d, s, a)) return false;
  }
  // Miller-Rabin with bases 2..41 is proven exact below
  // psi_13 = 3317044064679887385961981, the least composite passing them all.
  constexpr u128 kPsi13 = (u128{0x2be69} << 64) | 0x51adc5b22410a5fdULL;
  if (n < kPsi13) return true;
  const u128 root = isqrt128(n);
  if (root * root == n) return false;
  return strong_lucas_probable_prime(mod);
}

std::vector<u128> find_ntt_primes128(int bits, std::size_t count, std::size_t poly_degree) {
  return detail::find_ntt_primes<u128>(bits, 128, count, poly_degree, [](u128 q) { return is_prime128(q); },
                                       "arith.find_ntt_primes128");
}

u128 minimal_primitive_root128(u128 q, std::size_t poly_degree) {
  require(is_ntt_friendly128(q, poly_degree), "arith.primitive_root128",
          to_string(q) + " is not a prime below 2^128 with q = 1 mod 2N for N=" +
              std::to_string(poly_degree));
  const Modulus128 mod(q);
  const u128 cofactor = (q - 1) / (2 * static_cast<u128>(poly_degree));
  // x^((q-1)/2N) has order exactly 2N iff its N-th power is -1; half of all
  // x qualify, so the search ends quickly.
  u128 root = 0;
  for (u128 x = 2; x < q; ++x) {
    const u128 candidate = mod.pow(x, cofactor);
    if (mod.pow(candidate, poly_degree) == q - 1) {
      root = candidate;
      break;
    }
  }
  // Every primitive 2N-th root is root^k with k odd; take the smallest.
  const u128 root_squared = mod.mul(root, root);
  u128 best = root, power = root;
  for (std::size_t k = 1; k < poly_degree; ++k) {
    power = mod.mul(power, root_squared);
    best = std::min(best, power);
  }
  return best;
}

std::string to_string(u128 value) {
  if (value == 0) return "0";
  std::string digits;
  while (value != 0) {
    digits.push_back(static_cast<char>('0' + static_cast<int>(value % 10)));
    value /= 10;
  }
  std::reverse(digits.begin(), digits.end());
  return digits;
}

u128 parse_u128(const std::string& text) {
  constexpr const char* op = "arith.parse_u128";
  require(!text.empty(), op, "expected a decimal integer, got an empty string");
  constexpr u128 kMax = ~u128{0};
  u128 value = 0;
  for (const char c : text) {
    require(c >= '0' && c <= '9', op, "expected a decimal integer, got \"" + text + "\"");
    const auto digit = static_cast<unsigned>(c - '0');
    require(value <= (kMax - digit) / 10, op, "\"" + text + "\" does not fit in 128 bits");
    value = value * 10 + digit;
  }
  return value;
}

}  // namespace ringfire
