#include "ringfire/rlwe/keys.h"

#include "ringfire/base/errors.h"
#include "ringfire/rlwe/prng.h"
#include "ringfire/rlwe/sampling.h"

namespace ringfire {

SecretKey::SecretKey(RlweContextPtr context, std::vector<std::int8_t> coefficients)
    : context_(std::move(context)), coefficients_(std::move(coefficients)) {
  require(context_ != nullptr, "rlwe.SecretKey", "needs a context");
  require(coefficients_.size() == context_->n(), "rlwe.SecretKey",
          "expected " + std::to_string(context_->n()) + " coefficients, got " + std::to_string(coefficients_.size()));
  for (std::int8_t c : coefficients_)
    require(c >= -1 && c <= 1, "rlwe.SecretKey", "coefficients must be in {-1, 0, 1}");
  const RnsBase& base = *context_->key_base();
  eval_ = Buffer(base.size() * base.n());
  ternary_to_rns(coefficients_.data(), coefficients_.size(), base, eval_.data());
  backend_for(eval_.device()).ntt_forward(eval_.data(), 1, base);
}

SecretKey::~SecretKey() {
  if (eval_.data() != nullptr) secure_zero(eval_.data(), eval_.size() * sizeof(u64));
  if (!coefficients_.empty()) secure_zero(coefficients_.data(), coefficients_.size());
}

KeySwitchKey::KeySwitchKey(RlweContextPtr context, u64 source) : KeySwitchKey(context, source, context->max_level()) {}

KeySwitchKey::KeySwitchKey(RlweContextPtr context, u64 source, std::size_t level)
    : context_(std::move(context)), source_(source), level_(level) {
  require(level_ <= context_->max_level(), "rlwe.KeySwitchKey",
          "level " + std::to_string(level_) + " exceeds the maximum " + std::to_string(context_->max_level()));
  digits_ = context_->digit_count(level_);
  buffer_ = Buffer(2 * digits_ * poly_words());
  backend_for(buffer_.device()).zero(buffer_.data(), buffer_.size());
}

KeySwitchKey KeySwitchKey::to(const Device& device) const {
  KeySwitchKey copy(*this, buffer_.to(device));
  return copy;
}

const KeySwitchKey& GaloisKeys::get(u64 galois_element) const {
  auto it = keys_.find(galois_element);
  if (it == keys_.end())
    throw_invalid("rlwe.GaloisKeys", "no Galois key for element " + std::to_string(galois_element) +
                                         " (generate it with keygen(rotations=...) or conjugate=True)");
  return it->second;
}

void GaloisKeys::insert(KeySwitchKey key) {
  require(key.fingerprint() == fingerprint(), "rlwe.GaloisKeys", "key belongs to other parameters");
  const u64 g = key.source();
  require(g % 2 == 1 && g < 2 * context_->n(), "rlwe.GaloisKeys",
          "not a Galois key: it switches from element " + std::to_string(g) + " (odd elements below 2N only)");
  keys_.insert_or_assign(g, std::move(key));
}

RelinKey::RelinKey(KeySwitchKey key) : key_(std::move(key)) {
  require(key_.source() == kRelinearizationSource, "rlwe.RelinKey",
          "not a relinearization key: it switches from Galois element " + std::to_string(key_.source()));
}

GaloisKeys GaloisKeys::to(const Device& device) const {
  GaloisKeys copy(context_);
  for (const auto& [g, key] : keys_) copy.keys_.emplace(g, key.to(device));
  return copy;
}

std::uint64_t GaloisKeys::bytes() const {
  std::uint64_t total = 0;
  for (const auto& [g, key] : keys_) total += key.bytes();
  return total;
}

std::vector<u64> GaloisKeys::elements() const {
  std::vector<u64> out;
  for (const auto& [g, key] : keys_) out.push_back(g);
  return out;
}

}  // namespace ringfire
