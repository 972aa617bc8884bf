#include "ringfire/arith/integral_doubles.h"

#include <bit>
#include <cmath>

#include "ringfire/arith/modular.h"

namespace ringfire {

u64 reduce_integral_double(double x, const Modulus& mod) {
  const u64 q = mod.value();
  const double magnitude = std::fabs(x);
  u64 r;
  if (magnitude < 0x1p63) {
    r = reduce_u128(static_cast<u64>(magnitude), mod);  // Barrett: a 64-bit division took a sixth of an encoding
  } else {
    int exponent = 0;
    const double mantissa = std::frexp(magnitude, &exponent);  // magnitude = mantissa * 2^exponent
    const u64 integer = static_cast<u64>(std::ldexp(mantissa, 53));
    r = mul_mod(integer % q, pow_mod(2, static_cast<u64>(exponent - 53), mod), mod);
  }
  return (x < 0 && r != 0) ? q - r : r;
}

void reduce_integral_doubles(const double* x, std::size_t count, double largest, const Modulus& mod, u64* out) {
  const u64 q = mod.value();
  if (!(largest < 0x1p52) || q >= (u64{1} << 52)) {
    for (std::size_t k = 0; k < count; ++k) out[k] = reduce_integral_double(x[k], mod);
    return;
  }
  // x, q < 2^52 are exact doubles. floor(x / q) from the reciprocal may be off by one either
  // way; the fused multiply-add gives x - quot q exactly (an integer of magnitude below 2q <
  // 2^53), and one correction each way brings it into [0, q). Adding 2^52 to a double in
  // [0, 2^52) puts the integer in the low bits of its representation (no conversion
  // instruction for unsigned words before AVX-512).
  const double qd = static_cast<double>(q), reciprocal = 1.0 / qd;
  constexpr u64 kTwo52Bits = std::bit_cast<u64>(0x1p52);
  for (std::size_t k = 0; k < count; ++k) {
    const double quot = std::floor(x[k] * reciprocal);
    double r = std::fma(-quot, qd, x[k]);
    r = r < 0.0 ? r + qd : r;
    r = r >= qd ? r - qd : r;
    out[k] = std::bit_cast<u64>(r + 0x1p52) - kTwo52Bits;
  }
}

}  // namespace ringfire
