// 128-bit modular arithmetic: odd moduli 3 <= q < 2^128 with exact 256-bit
// products, the scalar model of the RPU's 128-bit lanes.
//
// Internally Montgomery arithmetic with R = 2^128 (q odd, so gcd(q, R) = 1),
// but the public operations take and return ordinary residues in [0, q).
// The RF_HD operations below are branch-free in their operands (conditional
// subtractions are masks); only pow() loops over its exponent, which is
// treated as public.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ringfire/arith/wide.h"
#include "ringfire/base/hd.h"

namespace ringfire {

// A 256-bit value lo + hi * 2^128.
struct U256 {
  u128 lo;
  u128 hi;
};

// Number of significant bits of a (0 for a = 0).
RF_HD int bit_length128(u128 a) {
  const u64 hi = static_cast<u64>(a >> 64);
  return hi != 0 ? 64 + bit_length(hi) : bit_length(static_cast<u64>(a));
}

// Exact product a * b < 2^256 from four 64x64 -> 128 partial products.
// With a = a1 2^64 + a0 and b = b1 2^64 + b0:
//   a b = a0 b0 + (a0 b1 + a1 b0) 2^64 + a1 b1 2^128.
RF_HD U256 mul_wide128(u128 a, u128 b) {
  const u64 a0 = static_cast<u64>(a), a1 = static_cast<u64>(a >> 64);
  const u64 b0 = static_cast<u64>(b), b1 = static_cast<u64>(b >> 64);
  const u128 p00 = mul_wide(a0, b0), p01 = mul_wide(a0, b1);
  const u128 p10 = mul_wide(a1, b0), p11 = mul_wide(a1, b1);
  // Bits 64..191 start with hi(p00) + lo(p01) + lo(p10) < 3 * 2^64: no overflow.
  const u128 mid = (p00 >> 64) + static_cast<u64>(p01) + static_cast<u64>(p10);
  U256 r;
  r.lo = (mid << 64) | static_cast<u64>(p00);
  // a b < 2^256, so the upper half cannot overflow: p11 <= 2^128 - 2^65 + 1,
  // hi(p01) + hi(p10) <= 2^65 - 4 and hi(mid) <= 2.
  r.hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
  return r;
}

class Modulus128 {
 public:
  Modulus128() = default;
  // Raises InvalidArgument ("[arith.Modulus128] ...") unless q is odd and
  // 3 <= q < 2^128.
  explicit Modulus128(u128 q);

  RF_HD u128 value() const { return q_; }
  // len(q) = floor(log2 q) + 1, in [2, 128].
  RF_HD int bits() const { return bits_; }
  // Montgomery constants: -q^-1 mod 2^128, R mod q and R^2 mod q (R = 2^128).
  RF_HD u128 neg_inv() const { return neg_inv_; }
  RF_HD u128 r_mod_q() const { return r1_; }
  RF_HD u128 r2_mod_q() const { return r2_; }

  // ---- ordinary residues: inputs a, b < q unless stated, outputs < q ----

  // a + b mod q. The sum may reach 2q - 2 >= 2^128 when q > 2^127, so the
  // carry out of the 128-bit addition is kept.
  RF_HD u128 add(u128 a, u128 b) const {
    const u128 s = a + b;
    return subtract_q_if_at_least_q(s, static_cast<u128>(s < a));
  }

  // a - b mod q: a - b wraps below zero exactly when a < b; add q back then.
  RF_HD u128 sub(u128 a, u128 b) const {
    const u128 borrow_mask = u128{0} - static_cast<u128>(a < b);
    return a - b + (q_ & borrow_mask);
  }

  // -a mod q (0 stays 0).
  RF_HD u128 neg(u128 a) const {
    const u128 nonzero_mask = u128{0} - static_cast<u128>(a != 0);
    return (q_ - a) & nonzero_mask;
  }

  // x mod q for any 256-bit x.
  //   1. t = REDC(x) = (x + m q) / R = x R^-1 (mod q), and t < 2^128 + q
  //      (x < 2^256, m q < R q): up to 129 bits, kept as carry * 2^128 + low.
  //   2. Fold t below 2^128 by subtracting q once when the carry is set
  //      (low < q then, so 2^128 + low - q < 2^128).
  //   3. REDC(t R^2) = t R = x (mod q); t R^2 < R q, so that result is < q.
  RF_HD u128 reduce(U256 x) const {
    u128 carry = 0;
    const u128 t = redc_wide(x, carry);
    const u128 folded = t - (q_ & (u128{0} - carry));
    return redc(mul_wide128(folded, r2_));
  }

  // a * b mod q, exact (the 256-bit product is reduced by reduce()); a and b
  // may in fact be any 128-bit values.
  RF_HD u128 mul(u128 a, u128 b) const { return reduce(mul_wide128(a, b)); }

  // a^e mod q by square-and-multiply in Montgomery form (a may be any 128-bit
  // value; 0^0 = 1). The loop and branches depend on e, which is public.
  RF_HD u128 pow(u128 a, u128 e) const {
    u128 base = to_montgomery(a);
    u128 acc = r1_;  // 1 in Montgomery form
    while (e != 0) {
      if (e & 1) acc = montgomery_mul(acc, base);
      e >>= 1;
      if (e != 0) base = montgomery_mul(base, base);
    }
    return from_montgomery(acc);
  }

  // a^-1 mod q by the extended Euclidean algorithm (a is reduced first).
  // Host only; raises InvalidArgument when gcd(a, q) != 1.
  u128 inv(u128 a) const;

  // ---- Montgomery form a~ = a R mod q, for kernels chaining many products ----

  // a R mod q for any 128-bit a (a R^2 < R q, so one REDC suffices).
  RF_HD u128 to_montgomery(u128 a) const { return redc(mul_wide128(a, r2_)); }
  // a~ R^-1 mod q for any 128-bit a~.
  RF_HD u128 from_montgomery(u128 a) const { return redc(U256{a, 0}); }
  // a~ b~ R^-1 mod q, needs a~ b~ < R q (true when one factor is < q).
  RF_HD u128 montgomery_mul(u128 a, u128 b) const { return redc(mul_wide128(a, b)); }

  bool operator==(const Modulus128& other) const { return q_ == other.q_; }

 private:
  // Montgomery's REDC for any 256-bit t: with m = t.lo (-q^-1) mod R,
  // t + m q = 0 (mod R), and (t + m q) / R = t R^-1 (mod q) lies below
  // 2^128 + q. Returns its low 128 bits and sets carry to bit 128.
  RF_HD u128 redc_wide(U256 t, u128& carry) const {
    const u128 m = t.lo * neg_inv_;
    const U256 mq = mul_wide128(m, q_);
    // t.lo + mq.lo = 0 (mod 2^128) by the choice of m: the low halves sum to
    // exactly 2^128 when t.lo != 0 and to 0 otherwise, so they carry 1 or 0.
    const u128 low_carry = static_cast<u128>(t.lo != 0);
    const u128 s = t.hi + mq.hi;
    const u128 c1 = static_cast<u128>(s < t.hi);
    const u128 r = s + low_carry;
    // At most one of the two additions carries: the total is below 2^129.
    carry = c1 | static_cast<u128>(r < low_carry);
    return r;
  }

  // REDC for t < R q, where the quotient is below 2q: one conditional
  // subtraction (tracking the 129th bit) gives t R^-1 mod q in [0, q).
  RF_HD u128 redc(U256 t) const {
    u128 carry = 0;
    const u128 r = redc_wide(t, carry);
    return subtract_q_if_at_least_q(r, carry);
  }

  // For a value v = carry * 2^128 + low < 2q: v mod q. When v >= q the
  // wrapped difference low - q equals v - q < q exactly.
  RF_HD u128 subtract_q_if_at_least_q(u128 low, u128 carry) const {
    const u128 mask = u128{0} - (carry | static_cast<u128>(low >= q_));
    return low - (q_ & mask);
  }

  u128 q_ = 0;
  int bits_ = 0;
  u128 neg_inv_ = 0;  // -q^-1 mod 2^128
  u128 r1_ = 0;       // R mod q
  u128 r2_ = 0;       // R^2 mod q
};

// Primality for all n < 2^128. Below 2^64 this is is_prime() (deterministic
// Miller-Rabin, bases 2..37). Above, Miller-Rabin with the 13 prime bases
// 2..41, which is proven deterministic for n < 3317044064679887385961981
// (~2^81.5); it rejects psi_12 = 318665857834031151167461, the smallest
// composite passing bases 2..37. For larger n it is followed by a strong Lucas
// test (Selfridge parameters), which makes the whole a Baillie-PSW test: a
// strong probable-prime test with no known counterexample. Fixed-base
// Miller-Rabin alone errs with probability < 4^-13 per adversarial composite
// and far less for random candidates; the Lucas test is independent of it.
bool is_prime128(u128 n);

// The `count` largest distinct primes of exactly `bits` bits (2 <= bits <= 128)
// with p = 1 (mod 2 * poly_degree), in decreasing order. Deterministic.
// Raises InvalidArgument when bits is out of range, poly_degree is not a power
// of two, or fewer than `count` such primes exist.
std::vector<u128> find_ntt_primes128(int bits, std::size_t count, std::size_t poly_degree);

// The smallest primitive 2N-th root of unity modulo the prime q (q = 1 mod 2N,
// N = poly_degree a power of two). Raises InvalidArgument otherwise.
u128 minimal_primitive_root128(u128 q, std::size_t poly_degree);

// Decimal text of a 128-bit value, for messages and bindings.
std::string to_string(u128 value);

// Parses a decimal string of digits only; raises InvalidArgument on anything
// else or on values >= 2^128.
u128 parse_u128(const std::string& text);

}  // namespace ringfire
