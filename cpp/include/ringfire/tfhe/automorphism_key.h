// LMKCDEY blind rotation (Lee, Micciancio, Kim, Choi, Deryabin, Eom, Yoo,
// "Efficient FHEW bootstrapping with small evaluation keys", Eurocrypt 2023,
// ePrint 2022/198): the accumulator is multiplied by X^{a_i s_i} through
// automorphisms X -> X^t of the ring instead of one RGSW product per secret
// value, so the key holds one RGSW encryption per LWE coefficient (GINX's
// ternary secret needs two) and a few automorphism keys.
//
// Every odd a mod 2N is +-5^j (j < N/2). With S_j^+- the sum of the s_i whose
// a_i is +-5^j, Horner's rule in the automorphism X -> X^5 gives
//   sum_i a_i s_i = -sum_j 5^j S_j^- + sum_j 5^j S_j^+:
// for j from N/2 - 1 down to 1 multiply by X^{S_j} (the RGSW products of that
// class) and apply X -> X^5, then multiply by X^{S_0}; the negative classes
// first, then X -> X^-5, then the positive ones. Runs of classes with no
// coefficient merge into one automorphism X -> X^(5^k), k <= w (the window:
// keys for 5^1 .. 5^w and -5). The accumulator's own message goes through all
// of them, X -> X^(-5^-1) in total, so it starts as its image under X -> X^-5.
// Even a_i are made odd first, +1 or -1 with a sign drawn from a hash of the
// whole ciphertext (odd_exponents): an error of +-s_i on the input's phase for
// each even a_i, E[s^2] apiece, independent between ciphertexts. (A fixed +1
// would add the same -sum s_i to every ciphertext whose a_i are all even, as
// after a product by 2: a bias of the key, not noise, that some keys would
// fail on every time.)
//
// Each automorphism costs one key switch of the accumulator's a half (d_g
// digits); each coefficient one RGSW product with a single key (2 d_g digits).
#pragma once

#include <cstdint>
#include <vector>

#include "ringfire/tfhe/key_buffer.h"
#include "ringfire/tfhe/lwe.h"
#include "ringfire/tfhe/ntt32.h"

namespace ringfire::tfhe {

class AutomorphismKey {
 public:
  // The keys of `key` (params.automorphism_window >= 1). Rows are RLWE pairs
  // (A, B) with A expanded from one public seed, in the order: RGSW rows
  // (coefficient i, row r), then automorphism rows (key k, row r); the key
  // travels as that seed and the B polynomials.
  AutomorphismKey(const SecretKey& key, const Ntt32& ntt, Prng& prng);
  // From its seed and bodies (body_words(params) words below Q, coefficient
  // form, in the order above), as saved.
  AutomorphismKey(const Params& params, const Ntt32& ntt, const Prng::Seed& seed, const u32* bodies);

  static std::size_t body_words(const Params& params);
  const Params& params() const { return params_; }
  const Prng::Seed& seed() const { return seed_; }
  std::size_t bytes() const { return (rgsw_.size() + automorphisms_.size()) * sizeof(u32); }
  std::vector<u32> bodies(const Ntt32& ntt) const;

  // acc (2 x N words, b then a, coefficient form, mod Q) = the RLWE encryption
  // under z of f X^{sum_i a_i s_i}, a_i from odd_exponents(in); f: N words mod Q.
  // With `exact`, a_i = in[i] mod q itself: each even one also multiplies by
  // X^{(a_i - odd_i) s_i} in the class of -1 or 1 (one more RGSW product each).
  void rotate(const u32* in, const u32* f, const Ntt32& ntt, u32* acc, bool exact = false) const;

 private:
  void init(const Params& params);
  // Row r of the RGSW key of coefficient i (t = 0) or of automorphism key i
  // (t = 1), from A and B in the evaluation form.
  u32* row(std::size_t t, std::size_t i, std::size_t r);
  const u32* key(std::size_t t, std::size_t i) const;
  void store(u32* at, std::size_t rows, const Ntt32& ntt, const u32* ahat, const u32* bhat) const;
  // The automorphism exponent of key k: -5 for k = 0, 5^k above.
  std::uint32_t exponent(std::size_t k) const { return exponents_[k]; }
  // acc <- acc [x] RGSW(X^{s_i}); acc <- key switch of acc(X^t) back under z.
  // (next_key: the key the next product reads, prefetched meanwhile; or null.)
  void multiply(u32* acc, std::size_t i, const u32* next_key, const Ntt32& ntt, u32* D) const;
  void automorphism(u32* acc, std::size_t k, const Ntt32& ntt, u32* D, u32* copy) const;

  Params params_;
  Prng::Seed seed_{};
  KeyBuffer<u32> rgsw_;           // [i][chunk][row < 2 d_g][b, a][16], Montgomery form
  KeyBuffer<u32> automorphisms_;  // [k <= w][chunk][row < d_g][b, a][16]
  // Odd a < 2N -> the rank of its class in rotate's walk: -5^j at N/2 - 1 - j, 5^j at N - 1 - j.
  std::vector<std::uint32_t> rank_of_;
  std::vector<std::uint32_t> exponents_;  // exponent(k), k <= w
};

// The exponents LMKCDEY's walk uses for the LWE ciphertext `in` (n + 1 words
// mod q = 2N): a_i mod q, each even one moved to a_i + 1 or a_i - 1 by one bit
// of a stream seeded from a hash of all n + 1 words.
void odd_exponents(const u32* in, std::size_t n, u32 q, u32* out);

// dst = src(X^t) in Z_Q[X]/(X^N + 1), t odd.
void apply_automorphism(const u32* src, std::size_t N, std::uint32_t t, u32 Q, u32* dst);

}  // namespace ringfire::tfhe
