// Little-endian multi-word unsigned integers, just enough for CRT and base
// conversion constants (products of up to a few hundred 61-bit primes). The
// word loops are RF_HD: the exact base conversion's kernels use them too.
#pragma once

#include <cstddef>

#include "ringfire/arith/modular.h"
#include "ringfire/arith/wide.h"
#include "ringfire/base/hd.h"

namespace ringfire::multiword {

// out (len words) = a (len words) * b; returns the carry-out word.
RF_HD u64 mul_word(const u64* a, u64 b, u64* out, std::size_t len) {
  u64 carry = 0;
  for (std::size_t i = 0; i < len; ++i) {
    const u128 t = mul_wide(a[i], b) + carry;
    out[i] = static_cast<u64>(t);
    carry = static_cast<u64>(t >> 64);
  }
  return carry;
}

// acc (len words) += a (len words) * b; returns the carry-out word.
RF_HD u64 mul_word_add(const u64* a, u64 b, u64* acc, std::size_t len) {
  u64 carry = 0;
  for (std::size_t i = 0; i < len; ++i) {
    const u128 t = mul_wide(a[i], b) + acc[i] + carry;
    acc[i] = static_cast<u64>(t);
    carry = static_cast<u64>(t >> 64);
  }
  return carry;
}

// a >= b, both len words.
RF_HD bool greater_equal(const u64* a, const u64* b, std::size_t len) {
  for (std::size_t i = len; i-- > 0;) {
    if (a[i] != b[i]) return a[i] > b[i];
  }
  return true;
}

// a -= b (len words); returns the borrow.
RF_HD u64 subtract(u64* a, const u64* b, std::size_t len) {
  u64 borrow = 0;
  for (std::size_t i = 0; i < len; ++i) {
    const u64 bi = b[i] + borrow;
    const u64 next_borrow = (bi < borrow) || (a[i] < bi);
    a[i] -= bi;
    borrow = next_borrow;
  }
  return borrow;
}

// A len-word integer modulo q, by Horner's rule from the top word with
// radix 2^64 mod q.
inline u64 mod_modulus(const u64* a, std::size_t len, const Modulus& mod) {
  const u64 q = mod.value();
  const u64 radix = static_cast<u64>((static_cast<u128>(1) << 64) % q);
  u64 r = 0;
  for (std::size_t w = len; w-- > 0;) r = mad_mod(r, radix, a[w] % q, mod);
  return r;
}

}  // namespace ringfire::multiword
