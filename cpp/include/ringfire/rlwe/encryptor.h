// Encryption and the decryption core, scheme-agnostic: they move a
// plaintext polynomial m (evaluation form at some level) in and out of
// RLWE ciphertexts. Encoding is the scheme's job. All three run on the host
// and return host ciphertexts; operands on a GPU are copied to the host first
// (a download is a synchronisation point).
#pragma once

#include "ringfire/rlwe/keys.h"
#include "ringfire/rlwe/prng.h"

namespace ringfire {

// (c0, c1) = (u*b + e0 + m, u*a + e1) with ternary u and Gaussian e0, e1.
Ciphertext encrypt_public(const PublicKey& key, const Plaintext& plain, Prng& prng);
// (c0, c1) = (-a*s + e + m, a) with a expanded from a fresh seed that the
// ciphertext keeps (halving its serialized size).
Ciphertext encrypt_secret(const SecretKey& key, const Plaintext& plain, Prng& prng);
// The same ciphertext (the same words, the same draws) for the plaintext whose coefficient
// form is `message` ((level+1) x N words over q_0..q_level) with metadata `meta`: the error
// joins the message before the one forward NTT per limb they then share.
Ciphertext encrypt_secret_coefficients(const SecretKey& key, const RlweContextPtr& context, std::size_t level,
                                       const Metadata& meta, const u64* message, Prng& prng);
// m = sum_i c_i * s^i, written in coefficient form over q_0..q_level to
// `out` ((level+1) x N words).
void decrypt_core(const SecretKey& key, const Ciphertext& cipher, u64* out);

}  // namespace ringfire
