#include "ringfire/rlwe/context.h"

#include <numeric>

#include "ringfire/arith/modular.h"
#include "ringfire/base/errors.h"

namespace ringfire {

RlweContext::RlweContext(Parameters params) : params_(std::move(params)) {
  std::vector<u64> all(params_.q_primes());
  all.insert(all.end(), params_.p_primes().begin(), params_.p_primes().end());
  key_base_ = std::make_shared<const RnsBase>(n(), all);
  const std::size_t q_count = params_.q_primes().size(), k = special_count();

  std::vector<std::size_t> special(k);
  std::iota(special.begin(), special.end(), q_count);
  special_base_ = key_base_->select(special);
  for (std::size_t i = 0; i < key_base_->size(); ++i) prime_bases_.push_back(key_base_->select({i}));
  for (std::size_t level = 0; level < q_count; ++level) {
    std::vector<std::size_t> q_idx(level + 1);
    std::iota(q_idx.begin(), q_idx.end(), 0);
    level_bases_.push_back(key_base_->select(q_idx));
    q_idx.insert(q_idx.end(), special.begin(), special.end());
    extended_bases_.push_back(key_base_->select(q_idx));
  }

  for (std::size_t i = 0; i < q_count; ++i) {
    const Modulus& qi = key_base_->modulus(i);
    u64 p_mod = 1;
    for (u64 p : params_.p_primes()) p_mod = mul_mod(p_mod, p % qi.value(), qi);
    p_mod_q_.push_back(p_mod);
    p_inv_mod_q_.push_back(inv_mod(p_mod, qi.value()));
  }
  const u64 two_n = 2 * n();
  rotation_of_.assign(two_n, -1);
  u64 g = 1;
  for (std::size_t j = 0; j < n() / 2; ++j) {
    rotation_group_.push_back(g);
    rotation_of_[g] = static_cast<std::int32_t>(j);
    g = g * 5 % two_n;
  }
  q_last_inv_.resize(q_count);
  for (std::size_t level = 1; level < q_count; ++level)
    for (std::size_t i = 0; i < level; ++i) {
      const u64 qi = params_.q_primes()[i];
      q_last_inv_[level].push_back(inv_mod(params_.q_primes()[level] % qi, qi));
    }
}

const RnsBasePtr& RlweContext::level_base(std::size_t level) const {
  require(level <= max_level(), "rlwe.Context", "level " + std::to_string(level) + " exceeds the maximum " +
                                                   std::to_string(max_level()));
  return level_bases_[level];
}

const RnsBasePtr& RlweContext::extended_base(std::size_t level) const {
  require(level <= max_level(), "rlwe.Context", "level " + std::to_string(level) + " exceeds the maximum " +
                                                   std::to_string(max_level()));
  return extended_bases_[level];
}

std::size_t RlweContext::digit_count(std::size_t level) const {
  const std::size_t alpha = params_.alpha();
  return (level + 1 + alpha - 1) / alpha;
}

std::pair<std::size_t, std::size_t> RlweContext::digit_range(std::size_t level, std::size_t digit) const {
  const std::size_t alpha = params_.alpha();
  const std::size_t begin = digit * alpha;
  return {begin, std::min(begin + alpha, level + 1)};
}

const BaseConverter& RlweContext::mod_up(std::size_t level, std::size_t digit) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = mod_up_[{level, digit}];
  if (!slot) {
    const auto [begin, end] = digit_range(level, digit);
    std::vector<std::size_t> from, to;
    for (std::size_t i = 0; i <= level; ++i) (i >= begin && i < end ? from : to).push_back(i);
    for (std::size_t j = 0; j < special_count(); ++j) to.push_back(params_.q_primes().size() + j);
    slot = std::make_unique<BaseConverter>(key_base_->select(from), key_base_->select(to));
  }
  return *slot;
}

const BaseConverter& RlweContext::mod_down(std::size_t level) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = mod_down_[level];
  if (!slot) slot = std::make_unique<BaseConverter>(special_base_, level_base(level));
  return *slot;
}

const BaseConverter& RlweContext::mod_down_rescale(std::size_t level) const {
  require(level >= 1 && level <= max_level(), "rlwe.rescale", "no limb to drop at level " + std::to_string(level));
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = mod_down_rescale_[level];
  if (!slot) {
    std::vector<std::size_t> from{level};
    for (std::size_t j = 0; j < special_count(); ++j) from.push_back(params_.q_primes().size() + j);
    slot = std::make_unique<BaseConverter>(key_base_->select(from), level_base(level - 1));
  }
  return *slot;
}

const BaseConverter& RlweContext::drop_lift(std::size_t from, std::size_t to) const {
  require(to < from && from <= max_level(), "rlwe.mod_switch",
          "cannot divide level " + std::to_string(from) + " down to level " + std::to_string(to));
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = drop_lift_[{from, to}];
  if (!slot) {
    std::vector<std::size_t> top(from - to);
    std::iota(top.begin(), top.end(), to + 1);
    // One prime (a rescale): its own base, which the backends have already met.
    slot = std::make_unique<BaseConverter>(top.size() == 1 ? prime_bases_[from] : key_base_->select(top),
                                           level_base(to));
  }
  return *slot;
}

const BaseConverter& RlweContext::mod_raise_lift(std::size_t level) const {
  require(level >= 1 && level <= max_level(), "rlwe.mod_raise",
          "cannot raise to level " + std::to_string(level) + " (1.." + std::to_string(max_level()) + ")");
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = mod_raise_lift_[level];
  if (!slot) slot = std::make_unique<BaseConverter>(prime_base(0), level_base(level));
  return *slot;
}

u64 RlweContext::galois_element(long long steps) const {
  const long long half = static_cast<long long>(n() / 2);
  long long k = steps % half;
  if (k < 0) k += half;
  return rotation_group_[static_cast<std::size_t>(k)];
}

long long RlweContext::rotation_of(u64 galois_element) const {
  return galois_element < rotation_of_.size() ? rotation_of_[galois_element] : -1;
}

}  // namespace ringfire
