#include "ringfire/ckks/context.h"

#include <algorithm>
#include <cmath>

#include "ringfire/base/errors.h"

namespace ringfire::ckks {

namespace {

RlweContextPtr make_rlwe(Parameters params) {
  require(params.scale_bits() > 0, "ckks.Context", "scale_bits must be positive for CKKS");
  return std::make_shared<const RlweContext>(std::move(params));
}

}  // namespace

namespace {

// Canonical scales scale(0..top) with scale(l)^2 / q_l = scale(l-1): from the
// top down when `top_down` (scale(top) = 2^bits), else from level 0 up
// (scale(0) = 2^bits, scale(l) = sqrt(scale(l-1) q_l)); either way filled
// downward by the rescale's own arithmetic at the end, so a rescaled
// product's scale equals the canonical one to the last bit.
std::vector<double> scale_chain(const std::vector<u64>& q, std::size_t top, int bits, bool top_down) {
  std::vector<double> scales(top + 1, std::ldexp(1.0, bits));
  if (!top_down)
    for (std::size_t level = 1; level <= top; ++level)
      scales[level] = std::sqrt(scales[level - 1] * static_cast<double>(q[level]));
  for (std::size_t level = top; level >= 1; --level)
    scales[level - 1] = scales[level] * scales[level] / static_cast<double>(q[level]);
  return scales;
}

// The first level whose scale is outside [2^(bits - below), 2^(bits + above)]
// (scales.size() when none is).
std::size_t first_off_level(const std::vector<double>& scales, int bits, double below, double above) {
  for (std::size_t level = 0; level < scales.size(); ++level) {
    const double off = std::log2(scales[level]) - bits;
    if (!(off >= -below && off <= above)) return level;
  }
  return scales.size();
}

}  // namespace

Context::Context(Parameters params) : rlwe_(make_rlwe(std::move(params))), encoder_(rlwe_) {
  const int bits = rlwe_->params().scale_bits();
  const auto& q = rlwe_->params().q_primes();
  const std::size_t top = user_max_level();
  // Fresh ciphertexts take 2^scale_bits when the chain below stays within a
  // bit of it (primes of about scale_bits bits); a large top prime (SEAL's
  // habit of a 60-bit prime last), or primes whose distance from 2^scale_bits
  // doubles at every step down, would collapse that chain, and the chain
  // anchored at level 0 holds instead.
  std::vector<double> chain = scale_chain(q, top, bits, true);
  if (first_off_level(chain, bits, kRegularScaleBits, kRegularScaleBits) != chain.size())
    chain = scale_chain(q, top, bits, false);
  const std::size_t off = first_off_level(chain, bits, kScaleBitsBelow, kScaleBitsAbove);
  // The message indexes chain[off] and q[off]: build it only when off is a level.
  if (off != chain.size())
    throw_invalid("ckks.Context",
          "the canonical scales cannot stay within 2^(" + std::to_string(bits) + " - " +
              std::to_string(static_cast<int>(kScaleBitsBelow)) + ") .. 2^(" + std::to_string(bits) + " + " +
              std::to_string(static_cast<int>(kScaleBitsAbove)) + "): level " + std::to_string(off) +
              " would sit at 2^" + std::to_string(std::log2(chain[off])).substr(0, 5) + " with its " +
              std::to_string(static_cast<int>(std::round(std::log2(static_cast<double>(q[off]))))) +
              "-bit prime q_" + std::to_string(off) +
              ". Give the ciphertext primes after the first about scale_bits bits (a larger prime for "
              "precision belongs in special_bits, or drop it)");
  scales_.assign(rlwe_->max_level() + 1, std::ldexp(1.0, bits));  // reserved levels: the default scale
  std::copy(chain.begin(), chain.end(), scales_.begin());
}

double Context::scale_at(std::size_t level) const {
  require(level < scales_.size(), "ckks.Context",
          "level " + std::to_string(level) + " exceeds the maximum " + std::to_string(max_level()));
  return scales_[level];
}

}  // namespace ringfire::ckks
