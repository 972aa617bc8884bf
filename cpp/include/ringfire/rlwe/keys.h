// Keys. The secret key is a uniform ternary polynomial s; every other key is
// public material derived from it:
//   PublicKey      (b, a) = (-a*s + e, a) modulo Q P (all ciphertext primes,
//                  then the special ones)
//   KeySwitchKey   for digit j: (b_j, a_j) = (-a_j*s + e_j + g_j*s', a_j)
//                  modulo Q_l P, with g_j = P on digit j's primes and 0 on
//                  the other primes (hybrid key switching, dnum digits); l is
//                  the key's level, the highest a ciphertext it switches may
//                  sit at (the top by default; lower keys are smaller)
//   RelinKey       the switch from s^2 to s
//   GaloisKeys     switches from s(X^g) to s, one per Galois element g
// Each uniform a / a_j is expanded from a 32-byte seed the key keeps, so
// serialized keys store seeds rather than polynomials.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ringfire/rlwe/ciphertext.h"

namespace ringfire {

class SecretKey {
 public:
  SecretKey(RlweContextPtr context, std::vector<std::int8_t> coefficients);
  // Wipes the coefficients and the evaluation form, so no copy of s goes back
  // to the memory pool.
  ~SecretKey();
  SecretKey(SecretKey&&) noexcept = default;
  SecretKey& operator=(SecretKey&&) noexcept = default;
  const RlweContextPtr& context() const { return context_; }
  std::uint64_t fingerprint() const { return context_->fingerprint(); }
  // The ternary coefficients, in {-1, 0, 1}.
  const std::vector<std::int8_t>& coefficients() const { return coefficients_; }
  // s in evaluation form over the key base (Q's primes, then P's): limb i
  // of the first (level+1) serves level `level`.
  const u64* eval() const { return eval_.data(); }

 private:
  RlweContextPtr context_;
  std::vector<std::int8_t> coefficients_;
  Buffer eval_;
};

// What a switching key switches from, recorded in the key (and its file): the
// Galois element g of s(X^g) for rotation and conjugation keys, or
// kRelinearizationSource for s^2. A Galois key set refuses a key under
// another element than its own, so keys cannot be relabelled by mistake
// (against deliberate tampering, authenticate the bytes: docs/security.md).
inline constexpr u64 kRelinearizationSource = 0;
// The sparse-secret encapsulation keys of CKKS bootstrapping (ckks/bootstrap.h):
// from the main secret to the ephemeral sparse one, and back. Even numbers,
// so no Galois element can be mistaken for them.
inline constexpr u64 kToSparseSource = 2;
inline constexpr u64 kFromSparseSource = 4;
// The key from a subring's secret, embedded, to the ring's own (rlwe/subring.h).
inline constexpr u64 kEmbeddingSource = 6;

class KeySwitchKey {
 public:
  // Zero key with one (b_j, a_j) pair per digit of `level` (the top level
  // by default), over q_0..q_level and P.
  KeySwitchKey(RlweContextPtr context, u64 source);
  KeySwitchKey(RlweContextPtr context, u64 source, std::size_t level);
  // A seeded key that holds its b_j only, uninitialised: the caller writes
  // every b_j and pushes one seed per digit. The a_j are expanded from the
  // seeds the first time one is read (once, thread-safe; per-use keys instead
  // expand them at every switch, set_expand_per_use), so a key made to be
  // saved or sent never holds them: half the memory, and none of the time of
  // touching it (fresh pages cost more than the expansion on a virtual machine).
  static KeySwitchKey seeded(RlweContextPtr context, u64 source, std::size_t level);
  // A key over buffers made elsewhere: `b`, and `a` or (when `a` is empty) one
  // seed per digit to expand the a_j from, each half digits x poly_words()
  // words. Key images (io/key_image.h) hand over views of their mapping this
  // way. Raises InvalidArgument on a level, size or seed count that does not fit.
  static KeySwitchKey from_parts(RlweContextPtr context, u64 source, std::size_t level, Buffer b, Buffer a,
                                 std::vector<Seed> seeds);
  const RlweContextPtr& context() const { return context_; }
  u64 source() const { return source_; }
  std::uint64_t fingerprint() const { return context_->fingerprint(); }
  std::size_t digits() const { return digits_; }
  // The highest ciphertext level this key switches at.
  std::size_t level() const { return level_; }
  // Words of one key polynomial: (level + 1 + k) * N, Q's limbs then P's.
  std::size_t poly_words() const { return (level_ + 1 + context_->special_count()) * context_->n(); }
  // Bytes the key holds in memory with its a_j expanded.
  std::uint64_t bytes() const { return static_cast<std::uint64_t>(2 * digits_ * poly_words() * sizeof(u64)); }
  // Bytes it holds now (half of bytes() while a seeded key's a_j are unexpanded;
  // none of a mapped image's, which are the page cache's).
  std::uint64_t resident_bytes() const;
  // Whether the a_j are in memory.
  bool expanded() const;
  // Whether the key views a mapped key image (io/key_image.h) rather than
  // holding its b_j in this process's memory.
  bool mapped() const { return b_.is_view(); }
  // Expands the a_j now if they are not in memory (before timing or measuring
  // memory, say); otherwise the first use does.
  void expand() const { expanded_a(); }
  // A seeded key that expands per use never keeps its a_j: each key switch
  // expands them a limb at a time, where the inner product reads them
  // (expand_a_row; half the key's memory for one seed expansion per switch: a
  // bootstrap's keys take 3.5 GiB less on N16_BOOT). Keys already expanded keep
  // their a_j; turned off, the next use keeps them. Copies made by to() carry
  // the a_j. A setting, not data: it is not serialized.
  void set_expand_per_use(bool per_use) { per_use_ = per_use; }
  bool expands_per_use() const { return per_use_; }
  // Writes row `row` (a limb of the key's base: Q's limbs, then P's) of digit
  // j's a_j, expanded from its seed alone: per-use keys expand a limb at a time
  // where the inner product reads it, never the whole a_j. The first call finds
  // where each row starts in each digit's stream (one pass, then kept: 8 bytes a row).
  void expand_a_row(std::size_t digit, std::size_t row, u64* out) const;
  u64* b(std::size_t digit) { return b_.data() + digit * poly_words(); }
  u64* a(std::size_t digit) { return expanded_a() + digit * poly_words(); }
  const u64* b(std::size_t digit) const { return b_.data() + digit * poly_words(); }
  const u64* a(std::size_t digit) const { return expanded_a() + digit * poly_words(); }
  const Device& device() const { return b_.device(); }
  // A copy on `device` (keys are uploaded once and reused by every switch),
  // with the a_j expanded.
  KeySwitchKey to(const Device& device) const;
  KeySwitchKey(KeySwitchKey&&) noexcept = default;
  KeySwitchKey& operator=(KeySwitchKey&&) noexcept = default;
  // Seeds the a_j were expanded from (empty after loading without seeds).
  std::vector<Seed>& seeds() { return seeds_; }
  const std::vector<Seed>& seeds() const { return seeds_; }

 private:
  KeySwitchKey(RlweContextPtr context, u64 source, std::size_t level, Buffer b, Buffer a, std::vector<Seed> seeds);
  // The a_j, expanded from the seeds on first use.
  u64* expanded_a() const;
  // Every digit's a_j expanded from the seeds into `out` (digits in parallel);
  // the caller checks require_seeds() first.
  void expand_into(u64* out) const;
  void require_seeds() const;
  // Where row r of digit j starts in the digit's stream: [j * rows + r].
  const std::vector<std::uint64_t>& row_positions() const;

  RlweContextPtr context_;
  u64 source_;
  std::size_t level_;
  std::size_t digits_;
  Buffer b_;
  mutable Buffer a_;  // empty until a seeded key's a_j are first read
  bool cold_ = false;  // made inside a cold-allocation scope: the a_j expand there too
  bool per_use_ = false;  // expand the a_j a limb at a time at each use, never keep them
  std::unique_ptr<std::once_flag> expand_once_ = std::make_unique<std::once_flag>();
  std::unique_ptr<std::once_flag> positions_once_ = std::make_unique<std::once_flag>();
  mutable std::vector<std::uint64_t> row_positions_;
  std::vector<Seed> seeds_;
};

// The public key is a size-2 ciphertext of zero at the top level, scale 1,
// and (keys made since public-key encryption runs over Q P) its continuation
// over the special primes: (b, a) over Q then P, from one seed and one error,
// so that encryption can work modulo Q P and divide its noise by P.
class PublicKey {
 public:
  // `special`: b then a over P's k primes (2 k N words, evaluation form);
  // empty for a key over Q alone (read from older files).
  explicit PublicKey(Ciphertext key, Buffer special = Buffer()) : key_(std::move(key)), special_(std::move(special)) {}
  const Ciphertext& key() const { return key_; }
  std::uint64_t fingerprint() const { return key_.fingerprint(); }
  const Device& device() const { return key_.device(); }
  PublicKey to(const Device& device) const {
    return PublicKey(key_.to(device), special_.size() ? special_.to(device) : Buffer());
  }
  // Whether the key reaches the special primes (encryption over Q P).
  bool covers_special() const { return special_.size() != 0; }
  // Polynomial i (0: b, 1: a) of the key over P, k limbs.
  const u64* special(std::size_t i) const { return special_.data() + i * (special_.size() / 2); }

 private:
  Ciphertext key_;
  Buffer special_;
};

class RelinKey {
 public:
  // Raises InvalidArgument unless `key` switches from s^2.
  explicit RelinKey(KeySwitchKey key);
  const KeySwitchKey& key() const { return key_; }
  std::uint64_t fingerprint() const { return key_.fingerprint(); }
  const Device& device() const { return key_.device(); }
  RelinKey to(const Device& device) const { return RelinKey(key_.to(device)); }

 private:
  KeySwitchKey key_;
};

class GaloisKeys {
 public:
  explicit GaloisKeys(RlweContextPtr context) : context_(std::move(context)) {}
  // Move-only, like the keys it holds (spelled out: std::map claims to be
  // copyable even when its values are not).
  GaloisKeys(GaloisKeys&&) noexcept = default;
  GaloisKeys& operator=(GaloisKeys&&) noexcept = default;
  GaloisKeys(const GaloisKeys&) = delete;
  GaloisKeys& operator=(const GaloisKeys&) = delete;
  const RlweContextPtr& context() const { return context_; }
  std::uint64_t fingerprint() const { return context_->fingerprint(); }
  bool has(u64 galois_element) const { return keys_.count(galois_element) != 0; }
  // Raises InvalidArgument naming the element when the key is missing.
  const KeySwitchKey& get(u64 galois_element) const;
  // Adds the key under its source element (a Galois element: odd, below 2N).
  void insert(KeySwitchKey key);
  std::vector<u64> elements() const;
  std::size_t size() const { return keys_.size(); }
  // Bytes the keys hold in memory (each key's size follows its level).
  std::uint64_t bytes() const;
  // Where the keys live (all on one device; cpu when empty).
  Device device() const { return keys_.empty() ? Device::cpu() : keys_.begin()->second.device(); }
  GaloisKeys to(const Device& device) const;
  // Expands every seeded key's a_j now (the keys in parallel).
  void expand() const;
  // KeySwitchKey::set_expand_per_use for every key.
  void set_expand_per_use(bool per_use);
  // Bytes the keys hold now (KeySwitchKey::resident_bytes).
  std::uint64_t resident_bytes() const;

 private:
  RlweContextPtr context_;
  std::map<u64, KeySwitchKey> keys_;
};

}  // namespace ringfire
