// Ciphertexts and plaintexts: RNS polynomials at a level, tagged with their
// context (whose fingerprint they carry), their form and what they encode
// (Metadata, per scheme). Ciphertexts also carry an estimate of their noise
// (rlwe/noise.h).
//
// A ciphertext of size k holds polynomials c_0..c_{k-1} back to back, each
// (level+1) x N words, so batched kernels run over all of them at once.
// Decryption computes sum_i c_i * s^i.
#pragma once

#include <array>
#include <complex>
#include <cstddef>
#include <optional>

#include "ringfire/base/buffer.h"
#include "ringfire/ring/backend.h"
#include "ringfire/rlwe/context.h"

namespace ringfire {

using Seed = std::array<std::uint8_t, 32>;

// What the polynomials of a ciphertext or plaintext encode, scheme by scheme
// (the scheme itself is in the parameters):
//   CKKS  the slot values times `scale`; `complex` is set when the slots may
//         hold complex values (for real data the imaginary parts are noise,
//         which decryption measures);
//   BGV   the message times `correction` modulo t (modulus switching
//         multiplies it by q^-1 mod t; operands must agree on it);
//   BFV   nothing beyond the form (the message sits at floor(Q / t)).
struct Metadata {
  Form form = Form::eval;
  double scale = 1.0;
  bool complex = false;
  u64 correction = 1;
  // How many leading slots hold the user's values (what decryption returns):
  // 0 when not recorded (all of them), kBroadcastLength when every slot holds
  // the same value (an encrypted scalar). Operations carry the first
  // operand's; the Python layer sets results by NumPy's broadcasting rules.
  std::uint32_t length = 0;

  bool operator==(const Metadata&) const = default;
};

inline constexpr std::uint32_t kBroadcastLength = 0xffffffffu;

// Tag for the constructors of results that the caller overwrites entirely:
// the memory is not zeroed first (it comes from the caching pool).
struct Uninitialized {};
inline constexpr Uninitialized kUninitialized{};

class Ciphertext {
 public:
  // A zero ciphertext of `size` polynomials at `level`.
  Ciphertext(RlweContextPtr context, std::size_t size, std::size_t level, const Metadata& metadata,
             Device device = Device::cpu());
  // The same, with contents unspecified: for results written in full.
  Ciphertext(RlweContextPtr context, std::size_t size, std::size_t level, const Metadata& metadata, Device device,
             Uninitialized);

  const RlweContextPtr& context() const { return context_; }
  std::uint64_t fingerprint() const { return context_->fingerprint(); }
  std::size_t size() const { return size_; }
  std::size_t level() const { return level_; }
  const Metadata& metadata() const { return meta_; }
  Form form() const { return meta_.form; }
  double scale() const { return meta_.scale; }
  void set_scale(double scale) { meta_.scale = scale; }
  const RnsBase& base() const { return *context_->level_base(level_); }
  const RnsBasePtr& base_ptr() const { return context_->level_base(level_); }
  std::size_t n() const { return context_->n(); }
  // Words of one polynomial: (level+1) * N.
  std::size_t poly_words() const { return (level_ + 1) * n(); }
  const Device& device() const { return buffer_.device(); }

  // log2 of the estimated norm of the error (rlwe/noise.h); -infinity for a
  // ciphertext without noise (the zero ciphertext).
  double noise_bits() const { return noise_bits_; }
  void set_noise_bits(double bits) { noise_bits_ = bits; }
  bool is_complex() const { return meta_.complex; }
  void set_complex(bool value) { meta_.complex = value; }
  // Metadata::length: how many leading slots hold the user's values.
  std::uint32_t length() const { return meta_.length; }
  void set_length(std::uint32_t value) { meta_.length = value; }
  // BGV/BFV: the correction factor (Metadata::correction).
  void set_correction(u64 value) { meta_.correction = value; }

  u64* data() { return buffer_.data(); }
  const u64* data() const { return buffer_.data(); }
  u64* poly(std::size_t i) { return data() + i * poly_words(); }
  const u64* poly(std::size_t i) const { return data() + i * poly_words(); }

  // When set, c_1 is the uniform polynomial expanded from this seed (a fresh
  // secret-key encryption or key), so serialization stores 32 bytes instead
  // of c_1. Any operation that changes c_1 clears it.
  const std::optional<Seed>& seed() const { return seed_; }
  void set_seed(const std::optional<Seed>& seed) { seed_ = seed; }

  Ciphertext clone() const;
  // A copy on `device` (upload / download; a download is a sync point).
  Ciphertext to(const Device& device) const;

 private:
  Ciphertext(const Ciphertext& other, Buffer buffer);

  RlweContextPtr context_;
  std::size_t size_, level_;
  Metadata meta_;
  double noise_bits_;
  Buffer buffer_;
  std::optional<Seed> seed_;
};

class Plaintext {
 public:
  // A zero plaintext at `level`.
  Plaintext(RlweContextPtr context, std::size_t level, const Metadata& metadata, Device device = Device::cpu());
  // The same, with contents unspecified: for plaintexts written in full.
  Plaintext(RlweContextPtr context, std::size_t level, const Metadata& metadata, Device device, Uninitialized);

  const RlweContextPtr& context() const { return context_; }
  std::uint64_t fingerprint() const { return context_->fingerprint(); }
  std::size_t level() const { return level_; }
  const Metadata& metadata() const { return meta_; }
  Form form() const { return meta_.form; }
  double scale() const { return meta_.scale; }
  void set_scale(double scale) { meta_.scale = scale; }
  const RnsBase& base() const { return *context_->level_base(level_); }
  std::size_t n() const { return context_->n(); }
  std::size_t poly_words() const { return (level_ + 1) * n(); }
  u64* data() { return buffer_.data(); }
  const u64* data() const { return buffer_.data(); }
  const Device& device() const { return buffer_.device(); }
  bool is_complex() const { return meta_.complex; }
  void set_complex(bool value) { meta_.complex = value; }
  // Metadata::length: how many leading slots hold the user's values.
  std::uint32_t length() const { return meta_.length; }
  void set_length(std::uint32_t value) { meta_.length = value; }

  // The nGraph-HE2 shortcut (seed 001 section 5.3): a plaintext whose slots
  // all hold one real value is a constant polynomial, so products and sums
  // with it need one scalar per limb rather than N. When set, `scalar_residues`
  // holds round(value * scale) mod q_i for each limb and the polynomial data
  // holds the same constant in evaluation form.
  bool is_scalar() const { return !scalar_residues_.empty(); }
  const std::vector<u64>& scalar_residues() const { return scalar_residues_; }
  std::complex<double> scalar_value() const { return scalar_value_; }
  void set_scalar(std::vector<u64> residues, std::complex<double> value) {
    scalar_residues_ = std::move(residues);
    scalar_value_ = value;
  }

  Plaintext clone() const;
  Plaintext to(const Device& device) const;

 private:
  Plaintext(const Plaintext& other, Buffer buffer);

  RlweContextPtr context_;
  std::size_t level_;
  Metadata meta_;
  Buffer buffer_;
  std::vector<u64> scalar_residues_;
  std::complex<double> scalar_value_{};
};

// A plaintext on `device` for one operation: the plaintext itself when it
// lives there, else a copy (plaintexts are encoded on the host; operations
// bring them to their ciphertext's device).
class PlaintextOn {
 public:
  PlaintextOn(const Plaintext& p, const Device& device) : plain_(&p) {
    if (p.device() != device) plain_ = &moved_.emplace(p.to(device));
  }
  const Plaintext& get() const { return *plain_; }
  const u64* data() const { return plain_->data(); }

 private:
  std::optional<Plaintext> moved_;
  const Plaintext* plain_;
};

}  // namespace ringfire
