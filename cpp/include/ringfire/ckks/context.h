// The CKKS context: the RLWE context plus the encoder and the canonical
// scale of every level.
//
// Canonical scales follow the rescaling chain: the user's top level (where
// fresh ciphertexts start: L, or L - reserved levels when bootstrapping keeps
// the top primes) has the default scale 2^scale_bits, and scale(l-1) =
// scale(l)^2 / q_l, the scale a product of two level-l ciphertexts has after
// rescaling. Keeping every ciphertext of a level at that level's scale is
// what lets the automatic operators add anything to anything (OpenFHE's
// FLEXIBLEAUTO idea). Reserved levels have the default scale (bootstrapping
// manages its own scales there).
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
inline bool same_scale(double a, double b) { return std::fabs(a - b) <= kScaleTolerance * std::max(a, b); }

// adjust_to moves a scale onto a level's canonical scale by multiplying by an
// integer constant and rescaling. Rounding the constant costs up to 0.5 / c
// relative, so c must be large: 2^30 for the usual scales (2^-31 is far below
// their precision), but a small scale cannot hold more than its own bits, and
// with 22-bit primes (seed 001's N = 2^12 set) no constant reaches 2^30:
// there c >= scale / 4 keeps the rounding below the scale's own resolution.
inline double min_correction_constant(double target_scale) { return std::min(0x1p30, 0.25 * target_scale); }

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
  double default_scale() const { return scales_.back(); }
  double scale_at(std::size_t level) const;

 private:
  RlweContextPtr rlwe_;
  Encoder encoder_;
  std::vector<double> scales_;
};

using ContextPtr = std::shared_ptr<const Context>;

}  // namespace ringfire::ckks
