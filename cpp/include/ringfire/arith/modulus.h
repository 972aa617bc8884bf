// A word-size modulus q (2 <= q < 2^61) with the constants every reduction in
// seed 002 §II-B needs, computed once. The 61-bit limit keeps Harvey's lazy
// butterflies (values in [0, 4q)) inside 64 bits.
#pragma once

#include <cstdint>

#include "ringfire/arith/wide.h"
#include "ringfire/base/hd.h"

namespace ringfire {

inline constexpr int kMaxModulusBits = 61;
// Dhem-Quisquater (seed 002 Alg. 3) needs 4 bits of headroom: len(q) <= 64 - 4.
inline constexpr int kDhemMaxBits = 60;

class Modulus {
 public:
  Modulus() = default;
  // Raises InvalidArgument unless 2 <= q < 2^61.
  explicit Modulus(u64 q);

  RF_HD u64 value() const { return q_; }
  // m = len(q) = floor(log2 q) + 1.
  RF_HD int bits() const { return bits_; }
  // floor(2^(2m) / q): classic Barrett, seed 002 Alg. 2.
  RF_HD u64 mu_classic() const { return mu_classic_; }
  // floor(2^(2m+3) / q): Dhem-Quisquater, Alg. 3; 0 when it does not fit a
  // word: len(q) > 60, or q = 2^59 (where it is exactly 2^64).
  RF_HD u64 mu_dhem() const { return mu_dhem_; }
  // floor(2^(2m+1) / q): seed 002's proposed variant, Alg. 4.
  RF_HD u64 mu_alg4() const { return mu_alg4_; }
  RF_HD bool supports_dhem() const { return mu_dhem_ != 0; }
  // floor(2^128 / q) as two words, for reducing any 128-bit value.
  RF_HD u64 ratio_lo() const { return ratio_lo_; }
  RF_HD u64 ratio_hi() const { return ratio_hi_; }

  bool operator==(const Modulus& other) const { return q_ == other.q_; }

 private:
  u64 q_ = 0;
  int bits_ = 0;
  u64 mu_classic_ = 0;
  u64 mu_dhem_ = 0;
  u64 mu_alg4_ = 0;
  u64 ratio_lo_ = 0;
  u64 ratio_hi_ = 0;
};

}  // namespace ringfire
