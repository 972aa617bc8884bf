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

#include "ringfire/rlwe/ciphertext.h"
#include "ringfire/rlwe/keys.h"

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

}  // namespace ringfire
