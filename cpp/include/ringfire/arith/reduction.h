// Modular reduction of 128-bit values and products, the variants of seed 002
// §II-B plus Shoup's precomputed-quotient multiplication.
//
// All reductions take x < q^2 (so x < 2^(2m) with m = len(q)) unless stated.
#pragma once

#include "ringfire/arith/modulus.h"
#include "ringfire/arith/wide.h"

namespace ringfire {

// floor(x / 2^s) truncated to 64 bits, for 0 <= s <= 63, from the two words
// of x (a 128-bit variable shift compiles to a branchy sequence; this does not).
RF_HD u64 shift_right_low(u128 x, int s) {
  const u64 lo = static_cast<u64>(x), hi = static_cast<u64>(x >> 64);
  return (lo >> s) | ((hi << 1) << (63 - s));
}

// floor(x / 2^s) truncated to 64 bits, for 1 <= s <= 64.
RF_HD u64 shift_right_high(u128 x, int s) {
  const u64 lo = static_cast<u64>(x), hi = static_cast<u64>(x >> 64);
  return ((lo >> 1) >> (s - 1)) | (hi << (64 - s));
}

// Seed 002 Alg. 2 (classic Barrett): c = x >> (m-1); quot = (c*mu) >> (m+1);
// the estimate is short by at most 2, so up to two corrections.
RF_HD u64 reduce_barrett_classic(u128 x, const Modulus& mod) {
  const int m = mod.bits();
  const u64 q = mod.value();
  const u64 c = shift_right_low(x, m - 1);
  const u64 quot = shift_right_high(mul_wide(c, mod.mu_classic()), m + 1);
  u64 rem = static_cast<u64>(x) - quot * q;  // true value < 3q < 2^64
  if (rem >= q) rem -= q;
  if (rem >= q) rem -= q;
  return rem;
}

// Seed 002 Alg. 3 (Dhem-Quisquater, alpha = m+3, beta = -2): one correction,
// valid only for len(q) <= 60 (mod.supports_dhem()); callers check that.
RF_HD u64 reduce_dhem(u128 x, const Modulus& mod) {
  const int m = mod.bits();
  const u64 q = mod.value();
  const u64 c = shift_right_low(x, m - 2);
  // m + 5 may reach 65, past shift_right_high's range: plain 128-bit shift.
  const u64 quot = static_cast<u64>(mul_wide(c, mod.mu_dhem()) >> (m + 5));
  u64 rem = static_cast<u64>(x) - quot * q;  // true value < 2q
  if (rem >= q) rem -= q;
  return rem;
}

// Seed 002 Alg. 4 (alpha = m+1, beta = -2): one correction and no headroom
// beyond len(q) <= 62. The library's default reduction.
RF_HD u64 reduce_alg4(u128 x, const Modulus& mod) {
  const int m = mod.bits();
  const u64 q = mod.value();
  const u64 c = shift_right_low(x, m - 2);
  const u64 quot = shift_right_high(mul_wide(c, mod.mu_alg4()), m + 3);
  u64 rem = static_cast<u64>(x) - quot * q;  // true value < 2q
  if (rem >= q) rem -= q;
  return rem;
}

// x mod q for any 128-bit x (Barrett with the two-word ratio floor(2^128/q)).
// Used where sums of many products are accumulated lazily.
RF_HD u64 reduce_u128(u128 x, const Modulus& mod) {
  const u64 q = mod.value();
  const u64 x_lo = static_cast<u64>(x), x_hi = static_cast<u64>(x >> 64);
  // quot ~= floor(x * ratio / 2^128), dropping the low word of x_lo*r_lo;
  // the estimate is short of floor(x / q) by at most 2. Only quot's low word
  // matters: the true remainder x - quot*q is < 3q < 2^64.
  const u128 t1 = mul_wide(x_lo, mod.ratio_hi()) + mul_hi(x_lo, mod.ratio_lo());
  const u128 t2 = mul_wide(x_hi, mod.ratio_lo());
  // (A carry out of t1 + t2 adds a multiple of 2^64 to quot: no effect.)
  const u64 quot = x_hi * mod.ratio_hi() + static_cast<u64>((t1 + t2) >> 64);
  u64 rem = x_lo - quot * q;
  if (rem >= q) rem -= q;
  if (rem >= q) rem -= q;
  return rem;
}

// a * b mod q for a, b < q.
RF_HD u64 mul_mod(u64 a, u64 b, const Modulus& mod) { return reduce_alg4(mul_wide(a, b), mod); }

// Fused multiply-add (seed 000 §V-A, mad_mod): (a * b + c) mod q with a single
// reduction; a, b, c < q so a*b + c < q^2 stays in the reduction's range.
RF_HD u64 mad_mod(u64 a, u64 b, u64 c, const Modulus& mod) {
  return reduce_alg4(mul_wide(a, b) + c, mod);
}

// Shoup's constant for a fixed multiplicand w < q: floor(w * 2^64 / q).
RF_HD u64 shoup_precompute(u64 w, u64 q) {
  return static_cast<u64>((static_cast<u128>(w) << 64) / q);
}

// x * w mod q in [0, 2q), for any 64-bit x, given w_shoup = shoup_precompute(w, q).
RF_HD u64 mul_mod_shoup_lazy(u64 x, u64 w, u64 w_shoup, u64 q) {
  const u64 quot = mul_hi(x, w_shoup);
  return x * w - quot * q;
}

// x * w mod q in [0, q).
RF_HD u64 mul_mod_shoup(u64 x, u64 w, u64 w_shoup, u64 q) {
  const u64 r = mul_mod_shoup_lazy(x, w, w_shoup, q);
  return r >= q ? r - q : r;
}

// A fixed multiplicand with its Shoup constant.
struct ShoupOperand {
  u64 value = 0;
  u64 quotient = 0;
};

RF_HD ShoupOperand make_shoup(u64 w, u64 q) { return {w, shoup_precompute(w, q)}; }

}  // namespace ringfire
