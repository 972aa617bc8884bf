// Add, subtract, negate, power and inverse modulo a word-size q.
// Inputs are reduced (< q); outputs are reduced. Branch-free where cheap.
#pragma once

#include "ringfire/arith/modulus.h"
#include "ringfire/arith/reduction.h"

namespace ringfire {

RF_HD u64 add_mod(u64 a, u64 b, u64 q) {
  const u64 s = a + b;
  return s >= q ? s - q : s;
}

RF_HD u64 sub_mod(u64 a, u64 b, u64 q) {
  const u64 d = a - b;
  return a >= b ? d : d + q;
}

RF_HD u64 neg_mod(u64 a, u64 q) { return a == 0 ? 0 : q - a; }

// base^exponent mod q by square-and-multiply.
RF_HD u64 pow_mod(u64 base, u64 exponent, const Modulus& mod) {
  u64 result = 1 % mod.value();
  while (exponent != 0) {
    if (exponent & 1) result = mul_mod(result, base, mod);
    base = mul_mod(base, base, mod);
    exponent >>= 1;
  }
  return result;
}

// Inverse of a modulo q; returns false when gcd(a, q) != 1.
bool try_inv_mod(u64 a, u64 q, u64& inverse);

// Inverse of a modulo q; raises InvalidArgument when it does not exist.
u64 inv_mod(u64 a, u64 q);

}  // namespace ringfire
