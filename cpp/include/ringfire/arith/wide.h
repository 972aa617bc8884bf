// 64x64 -> 128-bit products and 128-bit helpers, on host and device.
#pragma once

#include <cstdint>

#include "ringfire/base/hd.h"

namespace ringfire {

using u64 = std::uint64_t;
using u128 = unsigned __int128;

// High 64 bits of a * b.
RF_HD u64 mul_hi(u64 a, u64 b) {
#if RF_DEVICE_PASS
  return __umul64hi(a, b);
#else
  return static_cast<u64>((static_cast<u128>(a) * b) >> 64);
#endif
}

// Full 128-bit product a * b.
RF_HD u128 mul_wide(u64 a, u64 b) { return static_cast<u128>(a) * b; }

// Number of significant bits of a nonzero value (len(a) in seed 002's notation).
RF_HD int bit_length(u64 a) {
  int n = 0;
  while (a != 0) {
    ++n;
    a >>= 1;
  }
  return n;
}

}  // namespace ringfire
