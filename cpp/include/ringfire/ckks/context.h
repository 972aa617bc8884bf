// The CKKS context: the RLWE context plus the encoder and the canonical
// scale of every level.
//
// Canonical scales follow the rescaling chain: a product of two ciphertexts
// at level l, rescaled by q_l, lands on the canonical scale of level l-1, so
// scale(l)^2 / q_l = scale(l-1). Keeping every ciphertext of a level at that
// level's scale is what lets the automatic operators add anything to
// anything (OpenFHE's FLEXIBLEAUTO idea). One scale fixes the chain:
//   - the user's top level (where fresh ciphertexts start) takes
//     2^scale_bits when every level below then stays within a bit of it --
//     chains of primes of about scale_bits bits;
//   - otherwise level 0 takes 2^scale_bits and the chain rises as
//     scale(l) = sqrt(scale(l-1) q_l): each level a weighted mean of
//     2^scale_bits and the primes above q_0, so a larger top prime (SEAL's
//     habit of a 60-bit prime last) only raises the top (2^50 over 40-bit
//     primes, which then rescales to 2^40; OpenFHE's FLEXIBLEAUTOEXT does
//     the same with its extra prime), and a prime's distance from the scale
//     is halved at every level above it instead of doubled at every level
//     below (which made long chains drift and large top primes collapse).
// A chain that does not then stay within 2^(scale_bits - 8) .. 2^(scale_bits
// + 12) at every level is refused, naming the level and its prime. Reserved levels have the default scale
// (bootstrapping manages its own scales there).
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>

#include "ringfire/ckks/encoder.h"
#include "ringfire/rlwe/context.h"

namespace ringfire::ckks {

// Relative tolerance for "the same scale": scales computed by the same chain
// of double operations agree to the last bit; 2^-30 leaves room for
// rounding. (The Python operators use the same constant, from the bindings.)
inline constexpr double kScaleTolerance = 0x1p-30;
// Where a level's canonical scale may sit, in bits from 2^scale_bits: a scale
// below loses its bits of precision (kept within 8, so three chained products
// keep scale_bits - 20 bits), one above only narrows the headroom of the level
// (12: a 60-bit top prime over 40-bit ones puts the top at 2^50). A chain
// within kRegularScaleBits everywhere when the top takes 2^scale_bits keeps it.
inline constexpr double kScaleBitsBelow = 8.0, kScaleBitsAbove = 12.0, kRegularScaleBits = 1.0;
inline bool same_scale(double a, double b) { return std::fabs(a - b) <= kScaleTolerance * std::max(a, b); }

// adjust_to moves a scale onto a level's canonical scale by multiplying by an
// integer constant and rescaling. Rounding the constant costs up to 0.5 / c
// relative, so c must be large: 2^30 for the usual scales (2^-31 is far below
// their precision), but a small scale cannot hold more than its own bits, and
// with 22-bit primes (seed 001's N = 2^12 set) no constant reaches 2^30:
// there c >= scale / 4 keeps the rounding below the scale's own resolution.
inline double min_correction_constant(double target_scale) { return std::min(0x1p30, 0.25 * target_scale); }

// How adjust_to lands a scale at level `from` on `level`'s canonical scale
// `target`: the constant delta = target * q_{level+1} ... q_at / scale, multiplied
// in at the lowest level `at` where it reaches min_correction_constant, then
// rescales down to `level`. Every scale on the way stays at or above the target,
// so no rescale rounds at a small scale: rescaling a scale 2^24 times the target
// first (floor divisions leave such scales) would read the rescale's rounding,
// up to |s|_1 words, as errors of 2^-12 and worse. `rescales_alone`: no level
// reaches the constant, and `delta` (about 1 where a product's rescales land on
// the target) says how far the scale is from what rescales alone give.
struct ScaleCorrection {
  std::size_t at;
  double delta;
  bool rescales_alone;
};
template <typename Primes>
ScaleCorrection plan_scale_correction(double scale, std::size_t from, std::size_t level, double target,
                                      const Primes& q) {
  double delta = target / scale;
  for (std::size_t m = level + 1; m <= from; ++m) {
    delta *= static_cast<double>(q[m]);
    if (delta >= min_correction_constant(target)) return {m, delta, false};
  }
  return {from, delta, true};
}

class Context {
 public:
  explicit Context(Parameters params);

  const RlweContextPtr& rlwe() const { return rlwe_; }
  const Parameters& params() const { return rlwe_->params(); }
  const Encoder& encoder() const { return encoder_; }
  std::size_t slots() const { return encoder_.slots(); }
  std::size_t max_level() const { return rlwe_->max_level(); }
  // The top of the user's chain: fresh ciphertexts start here.
  std::size_t user_max_level() const { return rlwe_->params().user_max_level(); }
  std::uint64_t fingerprint() const { return rlwe_->fingerprint(); }
  // The scale fresh ciphertexts take: the canonical scale of the user's top level.
  double default_scale() const { return scales_[user_max_level()]; }
  double scale_at(std::size_t level) const;

 private:
  RlweContextPtr rlwe_;
  Encoder encoder_;
  std::vector<double> scales_;
};

using ContextPtr = std::shared_ptr<const Context>;

}  // namespace ringfire::ckks
