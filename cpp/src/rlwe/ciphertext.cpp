#include "ringfire/rlwe/ciphertext.h"

#include <limits>

#include "ringfire/base/errors.h"

namespace ringfire {

Ciphertext::Ciphertext(RlweContextPtr context, std::size_t size, std::size_t level, const Metadata& metadata,
                       Device device)
    : Ciphertext(std::move(context), size, level, metadata, device, kUninitialized) {
  backend_for(device).zero(buffer_.data(), buffer_.size());
}

Ciphertext::Ciphertext(RlweContextPtr context, std::size_t size, std::size_t level, const Metadata& metadata,
                       Device device, Uninitialized)
    : context_(std::move(context)),
      size_(size),
      level_(level),
      meta_(metadata),
      noise_bits_(-std::numeric_limits<double>::infinity()) {
  require(context_ != nullptr, "rlwe.Ciphertext", "needs a context");
  require(size_ >= 1, "rlwe.Ciphertext", "size must be at least 1");
  require(level_ <= context_->max_level(), "rlwe.Ciphertext",
          "level " + std::to_string(level_) + " exceeds the maximum " + std::to_string(context_->max_level()));
  buffer_ = Buffer(size_ * poly_words(), device);
}

Ciphertext Ciphertext::clone() const {
  Ciphertext copy(context_, size_, level_, meta_, device(), kUninitialized);
  backend_for(device()).copy(data(), copy.data(), buffer_.size());
  copy.seed_ = seed_;
  copy.noise_bits_ = noise_bits_;
  return copy;
}

Ciphertext::Ciphertext(const Ciphertext& other, Buffer buffer)
    : context_(other.context_),
      size_(other.size_),
      level_(other.level_),
      meta_(other.meta_),
      noise_bits_(other.noise_bits_),
      buffer_(std::move(buffer)),
      seed_(other.seed_) {}

Ciphertext Ciphertext::to(const Device& device) const { return Ciphertext(*this, buffer_.to(device)); }

Plaintext::Plaintext(RlweContextPtr context, std::size_t level, const Metadata& metadata, Device device)
    : Plaintext(std::move(context), level, metadata, device, kUninitialized) {
  backend_for(device).zero(buffer_.data(), buffer_.size());
}

Plaintext::Plaintext(RlweContextPtr context, std::size_t level, const Metadata& metadata, Device device,
                     Uninitialized)
    : context_(std::move(context)), level_(level), meta_(metadata) {
  require(context_ != nullptr, "rlwe.Plaintext", "needs a context");
  require(level_ <= context_->max_level(), "rlwe.Plaintext",
          "level " + std::to_string(level_) + " exceeds the maximum " + std::to_string(context_->max_level()));
  buffer_ = Buffer(poly_words(), device);
}

Plaintext Plaintext::clone() const {
  Plaintext copy(context_, level_, meta_, device(), kUninitialized);
  backend_for(device()).copy(data(), copy.data(), poly_words());
  copy.scalar_residues_ = scalar_residues_;
  copy.scalar_value_ = scalar_value_;
  return copy;
}

}  // namespace ringfire

namespace ringfire {

Plaintext::Plaintext(const Plaintext& other, Buffer buffer)
    : context_(other.context_),
      level_(other.level_),
      meta_(other.meta_),
      buffer_(std::move(buffer)),
      scalar_residues_(other.scalar_residues_),
      scalar_value_(other.scalar_value_) {}

Plaintext Plaintext::to(const Device& device) const { return Plaintext(*this, buffer_.to(device)); }

}  // namespace ringfire
