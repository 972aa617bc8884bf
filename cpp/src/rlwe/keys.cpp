#include "ringfire/rlwe/keys.h"

#include "ringfire/base/errors.h"
#include "ringfire/base/memory_pool.h"
#include "ringfire/base/parallel.h"
#include "ringfire/rlwe/keygen.h"
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
    : KeySwitchKey(std::move(context), source, level, Buffer(), Buffer(), {}) {
  b_ = Buffer(digits_ * poly_words());
  a_ = Buffer(digits_ * poly_words());
  for (Buffer* half : {&b_, &a_}) backend_for(half->device()).zero(half->data(), half->size());
}

KeySwitchKey::KeySwitchKey(RlweContextPtr context, u64 source, std::size_t level, Buffer b, Buffer a,
                           std::vector<Seed> seeds)
    : context_(std::move(context)), source_(source), level_(level), b_(std::move(b)), a_(std::move(a)),
      seeds_(std::move(seeds)) {
  require(level_ <= context_->max_level(), "rlwe.KeySwitchKey",
          "level " + std::to_string(level_) + " exceeds the maximum " + std::to_string(context_->max_level()));
  digits_ = context_->digit_count(level_);
}

KeySwitchKey KeySwitchKey::seeded(RlweContextPtr context, u64 source, std::size_t level) {
  KeySwitchKey key(std::move(context), source, level, Buffer(), Buffer(), {});
  key.b_ = Buffer(key.digits_ * key.poly_words());
  key.cold_ = cold_host_allocations_open();
  return key;
}

KeySwitchKey KeySwitchKey::from_parts(RlweContextPtr context, u64 source, std::size_t level, Buffer b, Buffer a,
                                      std::vector<Seed> seeds) {
  require(context != nullptr, "rlwe.KeySwitchKey", "needs a context");
  require(level <= context->max_level(), "rlwe.KeySwitchKey",
          "level " + std::to_string(level) + " exceeds the maximum " + std::to_string(context->max_level()));
  const std::size_t digits = context->digit_count(level);
  const std::size_t words = digits * (level + 1 + context->special_count()) * context->n();
  require(b.size() == words && (a.size() == words || (a.size() == 0 && seeds.size() == digits)),
          "rlwe.KeySwitchKey",
          "a level-" + std::to_string(level) + " key holds " + std::to_string(words) + " words per half and " +
              std::to_string(digits) + " seeds when its a_j are not given; got " + std::to_string(b.size()) + ", " +
              std::to_string(a.size()) + " words and " + std::to_string(seeds.size()) + " seeds");
  return KeySwitchKey(std::move(context), source, level, std::move(b), std::move(a), std::move(seeds));
}

bool KeySwitchKey::expanded() const { return a_.data() != nullptr; }

std::uint64_t KeySwitchKey::resident_bytes() const {
  // A mapped image's words are the page cache's, not this process's memory.
  const std::size_t own = (b_.is_view() ? 0 : b_.size()) + (a_.is_view() ? 0 : a_.size());
  return static_cast<std::uint64_t>(own * sizeof(u64));
}

void KeySwitchKey::expand_into(u64* out) const {
  const RnsBase& base = *context_->extended_base(level_);
  // One stream per digit: the digits expand (and touch their fresh pages) in parallel.
  auto body = [&](std::size_t begin, std::size_t end) {
    for (std::size_t j = begin; j < end; ++j) expand_uniform(seeds_[j], base, out + j * poly_words());
  };
  parallel_items(digits_, body);
}

void KeySwitchKey::require_seeds() const {
  require(seeds_.size() == digits_, "rlwe.KeySwitchKey",
          "a seeded key needs one seed per digit to expand (" + std::to_string(digits_) + "), it has " +
              std::to_string(seeds_.size()));
}

const std::vector<std::uint64_t>& KeySwitchKey::row_positions() const {
  std::call_once(*positions_once_, [this] {
    require_seeds();
    const RnsBase& base = *context_->extended_base(level_);
    const std::size_t rows = base.size(), n = base.n();
    std::vector<std::uint64_t> positions(digits_ * rows);
    // The rejections make a row's length in the stream data-dependent: walk it once.
    auto body = [&](std::size_t begin, std::size_t end) {
      std::vector<u64> row(n);
      for (std::size_t j = begin; j < end; ++j) {
        Prng stream = Prng::from_seed(seeds_[j]);
        for (std::size_t r = 0; r < rows; ++r) {
          positions[j * rows + r] = stream.position();
          stream.uniform_below_many(base.modulus(r).value(), row.data(), n);
        }
      }
    };
    parallel_items(digits_, body);
    row_positions_ = std::move(positions);
  });
  return row_positions_;
}

void KeySwitchKey::expand_a_row(std::size_t digit, std::size_t row, u64* out) const {
  const RnsBase& base = *context_->extended_base(level_);
  Prng stream = Prng::from_seed_at(seeds_.at(digit), row_positions()[digit * base.size() + row]);
  stream.uniform_below_many(base.modulus(row).value(), out, base.n());
}

u64* KeySwitchKey::expanded_a() const {
  std::call_once(*expand_once_, [this] {
    if (a_.data() != nullptr) return;
    require_seeds();  // before the allocation
    // Keys made for the spill files (rf.memory.cold) put their a_j there too.
    Buffer a = [&] {
      const ColdHostAllocations cold(cold_);
      return Buffer(digits_ * poly_words());  // seeded keys live on the host: to() expands before copying
    }();
    expand_into(a.data());
    a_ = std::move(a);
  });
  return a_.data();
}

KeySwitchKey KeySwitchKey::to(const Device& device) const {
  if (per_use_ && a_.data() == nullptr) {  // the copy carries the a_j; this key still keeps none
    require_seeds();
    Buffer a(digits_ * poly_words());
    expand_into(a.data());
    return KeySwitchKey(context_, source_, level_, b_.to(device), a.to(device), seeds_);
  }
  expanded_a();
  return KeySwitchKey(context_, source_, level_, b_.to(device), a_.to(device), seeds_);
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

void GaloisKeys::expand() const {
  std::vector<const KeySwitchKey*> keys;
  for (const auto& [g, key] : keys_) keys.push_back(&key);
  // Nested: each key's own digit loop runs on the thread that took the key.
  auto body = [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) keys[i]->expand();
  };
  parallel_items(keys.size(), body);
}

void GaloisKeys::set_expand_per_use(bool per_use) {
  for (auto& [g, key] : keys_) key.set_expand_per_use(per_use);
}

std::uint64_t GaloisKeys::resident_bytes() const {
  std::uint64_t total = 0;
  for (const auto& [g, key] : keys_) total += key.resident_bytes();
  return total;
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
