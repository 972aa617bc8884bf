// A subring's ciphertexts in a larger ring. R_n = Z[Y]/(Y^n + 1) sits inside
// R_N = Z[X]/(X^N + 1) as Y = X^k (k = N / n): a ciphertext (c_0, c_1, ...)
// of R_n under s is (c_0(X^k), c_1(X^k), ...) of R_N under s(X^k), with the
// same phase read at X^k. In CKKS terms its slots stay where they were:
// slot j of R_N evaluates at a 2N-th root w with w^k a 2n-th root, and reads
// slot j mod n/2 of R_n, at the same scale. A key switch from s(X^k) to R_N's
// own secret finishes the move (a key made with embedded_secret's evaluation
// form; generate_switch_key).
//
// Work that needs few slots can then run in the smaller ring, at about half
// the cost per halving of the degree, and land in the large one: the way back
// from FHEW into CKKS (python/ringfire/switching/fhew_to_ckks.py) uses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ringfire/rlwe/ciphertext.h"
#include "ringfire/rlwe/keys.h"
#include "ringfire/rlwe/prng.h"

namespace ringfire {

// `a` (a host ciphertext of a subring's context, evaluation form) as a
// ciphertext of `target`'s ring at the same level, metadata and noise
// estimate. Raises InvalidArgument unless target's degree is a multiple of
// a's, both contexts are of one scheme, and target's primes q_0..q_level are
// a's own.
Ciphertext embed_in_ring(const Ciphertext& a, const RlweContextPtr& target);

// s(X^k) as a secret of `target`'s ring: what embed_in_ring's results
// decrypt under. Checks the degrees and the scheme (a secret has no primes).
SecretKey embedded_secret(const SecretKey& secret, const RlweContextPtr& target);

// The key switch from a subring's secret, embedded, to the ring's own: a key of
// its own kind (source kEmbeddingSource, its own serialized kind), so it cannot
// be mistaken for, or replaced by, a relinearization or Galois key of the ring.
class EmbeddingKey {
 public:
  // Raises InvalidArgument unless `key` switches from kEmbeddingSource and
  // subring_degree is a smaller power of two than the key's ring degree.
  EmbeddingKey(KeySwitchKey key, std::size_t subring_degree);
  const KeySwitchKey& key() const { return key_; }
  // The degree of the ring whose secret it switches from.
  std::size_t subring_degree() const { return subring_degree_; }
  std::uint64_t fingerprint() const { return key_.fingerprint(); }
  const Device& device() const { return key_.device(); }

 private:
  KeySwitchKey key_;
  std::size_t subring_degree_;
};

// The key from subring_secret(X^k) to `secret`, for ciphertexts up to `level`.
EmbeddingKey generate_embedding_key(const SecretKey& secret, const SecretKey& subring_secret, std::size_t level,
                                    Prng& prng);
// The same from a subring secret's coefficients alone (a power-of-two count
// below the ring's degree, each in [-1, 1]): FHEW's ring secret z, which has
// no context of this scheme (rlwe/lwe_packing.h). The caller wipes its copy.
EmbeddingKey generate_embedding_key(const SecretKey& secret, const std::vector<std::int8_t>& subring_secret,
                                    std::size_t level, Prng& prng);

}  // namespace ringfire
