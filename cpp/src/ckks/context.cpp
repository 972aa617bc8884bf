#include "ringfire/ckks/context.h"

#include <cmath>

#include "ringfire/base/errors.h"

namespace ringfire::ckks {

namespace {

RlweContextPtr make_rlwe(Parameters params) {
  require(params.scale_bits() > 0, "ckks.Context", "scale_bits must be positive for CKKS");
  return std::make_shared<const RlweContext>(std::move(params));
}

}  // namespace

Context::Context(Parameters params) : rlwe_(make_rlwe(std::move(params))), encoder_(rlwe_) {
  const std::size_t levels = rlwe_->max_level() + 1;
  scales_.assign(levels, std::ldexp(1.0, rlwe_->params().scale_bits()));
  for (std::size_t level = user_max_level(); level >= 1; --level)
    scales_[level - 1] = scales_[level] * scales_[level] / static_cast<double>(rlwe_->params().q_primes()[level]);
}

double Context::scale_at(std::size_t level) const {
  require(level < scales_.size(), "ckks.Context",
          "level " + std::to_string(level) + " exceeds the maximum " + std::to_string(max_level()));
  return scales_[level];
}

}  // namespace ringfire::ckks
