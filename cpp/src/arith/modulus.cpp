#include "ringfire/arith/modulus.h"

#include <string>

#include "ringfire/arith/modular.h"
#include "ringfire/base/errors.h"

namespace ringfire {

Modulus::Modulus(u64 q) : q_(q) {
  require(q >= 2 && bit_length(q) <= kMaxModulusBits, "arith.Modulus",
          "modulus must satisfy 2 <= q < 2^61, got " + std::to_string(q));
  bits_ = bit_length(q);
  const u128 one = 1;
  mu_classic_ = static_cast<u64>((one << (2 * bits_)) / q);
  mu_alg4_ = static_cast<u64>((one << (2 * bits_ + 1)) / q);
  // floor(2^128 / q) = floor((2^128 - 1) / q) because q >= 2 is not a power
  // of two above 2^127 and (2^128 - 1) / q only differs when q divides 2^128.
  u128 ratio = ~u128{0} / q;
  if ((q & (q - 1)) == 0) ratio += 1;
  ratio_lo_ = static_cast<u64>(ratio);
  ratio_hi_ = static_cast<u64>(ratio >> 64);
  if (bits_ <= kDhemMaxBits) {
    const u128 mu = (one << (2 * bits_ + 3)) / q;
    mu_dhem_ = (mu >> 64) == 0 ? static_cast<u64>(mu) : 0;  // q = 2^59: mu = 2^64, no headroom
  }
}

bool try_inv_mod(u64 a, u64 q, u64& inverse) {
  // Extended Euclid on signed 128-bit values (no overflow for 64-bit inputs).
  __int128 r0 = q, r1 = a % q, t0 = 0, t1 = 1;
  while (r1 != 0) {
    const __int128 quotient = r0 / r1;
    __int128 tmp = r0 - quotient * r1;
    r0 = r1;
    r1 = tmp;
    tmp = t0 - quotient * t1;
    t0 = t1;
    t1 = tmp;
  }
  if (r0 != 1) return false;
  if (t0 < 0) t0 += q;
  inverse = static_cast<u64>(t0);
  return true;
}

u64 inv_mod(u64 a, u64 q) {
  u64 inverse = 0;
  require(q >= 2 && try_inv_mod(a, q, inverse), "arith.inv_mod",
          std::to_string(a) + " has no inverse modulo " + std::to_string(q));
  return inverse;
}

}  // namespace ringfire
