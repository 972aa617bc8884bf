// LWE ciphertexts and keys of the FHEW/TFHE layer, and the two maps between
// LWE moduli and keys: modulus switching and key switching.
//
// An LWE ciphertext of dimension d is d + 1 words: a[0..d), then b, with
// phase(ct) = b - <a, s> mod its modulus. Gate and lookup-table ciphertexts
// have d = n and modulus q = 2N (Params).
#pragma once

#include <cstdint>
#include <vector>

#include "ringfire/rlwe/prng.h"
#include "ringfire/tfhe/key_buffer.h"
#include "ringfire/tfhe/params.h"

namespace ringfire::tfhe {

using u32 = std::uint32_t;

// The client's secrets: s (dimension n, uniform ternary) for the LWE
// ciphertexts and z (dimension N, uniform ternary) for the blind rotation's
// ring. Both are wiped when the key is destroyed.
class SecretKey {
 public:
  SecretKey(const Params& params, Prng& prng);
  // A saved key: s (n values) and z (N values), each -1, 0 or 1.
  SecretKey(const Params& params, const std::vector<std::int8_t>& s, const std::vector<std::int8_t>& z);
  ~SecretKey();
  SecretKey(const SecretKey&) = delete;
  SecretKey& operator=(const SecretKey&) = delete;

  const Params& params() const { return params_; }
  const std::vector<std::int8_t>& lwe() const { return s_; }
  const std::vector<std::int8_t>& ring() const { return z_; }

  // count ciphertexts (count x (n + 1) words) of the phases mu (< q) with
  // Gaussian errors of width params.sigma.
  void encrypt(const u32* mu, std::size_t count, u32* out, Prng& prng) const;
  // phase(ct) mod q for count ciphertexts: the message plus the error.
  void phases(const u32* cts, std::size_t count, u32* out) const;
  // b - a z mod Q of an RLWE pair (2 x N words, b then a) under the ring
  // secret: the blind rotation's output with its error (noise analysis).
  void ring_phases(const u32* acc, u32* out) const;

 private:
  Params params_;
  std::vector<std::int8_t> s_, z_;
};

// round(x * to / from) mod to, for `count` words.
void switch_modulus(const u32* in, std::size_t count, std::uint64_t from, std::uint64_t to, u32* out);

// The key switch from the ring's extracted key z (dimension N) to s
// (dimension n), at modulus Q_ks: a table of LWE_s(v B^j z_i) for every
// coefficient i, digit j and digit value v in [1, B_ks) (OpenFHE's layout:
// one addition per digit instead of a product, so its error grows by
// N d_ks fresh errors only). The `a` vectors are expanded from a public seed.
class KeySwitchKey {
 public:
  KeySwitchKey(const SecretKey& key, Prng& prng);
  // From its seed and bodies (bodies(): entries() words below Q_ks), as saved.
  KeySwitchKey(const Params& params, const Prng::Seed& seed, const u32* bodies);

  // in: N + 1 words mod Q_ks; out: n + 1 words mod Q_ks.
  void apply(const u32* in, u32* out) const;
  // The same for `count` ciphertexts (count x (N + 1) words in, count x (n + 1) out), the
  // same words as apply() one by one; each row of the table is read from memory once per
  // kBatchLimit of them (one at a time, reading the table bounds the key switch).
  void apply_many(const u32* in, std::size_t count, u32* out) const;
  static constexpr std::size_t kBatchLimit = 64;
  std::size_t bytes() const { return narrow_.size() * 2 + wide_.size() * 4; }
  // Whether the table holds 32-bit words (Q_ks > 2^16) rather than 16-bit ones.
  bool wide() const { return params_.ks_modulus > (1u << 16); }
  const Prng::Seed& seed() const { return seed_; }
  // Number of table entries, N d_ks (B_ks - 1), and their b words.
  std::size_t entries() const;
  std::vector<u32> bodies() const;

 private:
  // Allocates the table and fills every entry's a from the seed.
  void expand(const Params& params, const Prng::Seed& seed);
  u32 word(std::size_t i) const;
  void set_word(std::size_t i, u32 v);

  Params params_;
  Prng::Seed seed_{};
  // [i][j][v - 1][n + 1], in 16-bit words up to Q_ks = 2^16 and in 32-bit ones above.
  KeyBuffer<std::uint16_t> narrow_;
  KeyBuffer<std::uint32_t> wide_;
};

}  // namespace ringfire::tfhe
