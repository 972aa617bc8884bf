// Hierarchical rotation keys (Lee, Lee, Kim, No, "Rotation Key Reduction for
// Client-Server Systems of Deep Neural Network on FHE", ASIACRYPT 2023): the
// client makes a few master keys, the server derives every rotation key a
// model needs from them, without the secret key.
//
// A Galois key for element r at level l is, per digit j, a ciphertext
// (b_j, a_j) modulo Q_l P with b_j + a_j s = g_j sigma_r(s) + e_j, where the
// gadget constant g_j (P on digit j's primes, 0 elsewhere) is an integer and
// so fixed by every automorphism. Applying sigma_t to that ciphertext and
// switching the result from sigma_t(s) back to s gives a key for r t. The
// switch runs on a ciphertext modulo Q_l P, so it needs special primes above
// Q_l P: the *derivation context* of (context, l) takes q_0..q_l, p_0..p_{k-1}
// as its ciphertext chain and fresh special primes P' as its own. Master keys
// are Galois keys of that context (the same secret, modulo Q_l P P'), one per
// power-of-two rotation and one for the conjugation; a key for rotation k
// takes popcount(k) switches, reusing shared prefixes.
//
// Security: derived keys are public functions of the master keys, so they
// reveal nothing beyond them; the master keys are RLWE samples modulo
// Q_l P P', which the derivation context's Parameters check against the same
// HE-standard bound as the main parameters (derivation is refused where no
// room is left, e.g. at the top of a bootstrappable chain). Noise: each
// switch adds its ModDown rounding (P' covers a whole digit, so the digit
// product divided by P' stays below it): at N = 2^13 a derived key's largest
// error coefficient measured 2^6.3 to 2^9.4 against a fresh key's 2^3.6
// (cpp/tests/test_key_derivation.cpp); using a key multiplies its error by the
// digit over P (Q_j / P), far below 1 at the levels models run on, so
// rotations keep their precision (docs/keys.md has the measurements).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "ringfire/rlwe/keys.h"
#include "ringfire/rlwe/prng.h"

namespace ringfire {

// The context master keys for keys of `level` live in: ciphertext primes
// q_0..q_level then P, fresh 61-bit special primes P' covering the widest of
// the fewest digits that fit the security bound of `context` (its
// Parameters::describe() says what was chosen). Raises InvalidArgument
// naming log2(Q_level P) and the bound when no digit split fits.
RlweContextPtr derivation_context(const RlweContext& context, std::size_t level);
// The highest level with room for master keys (none when even level 0 has none).
std::optional<std::size_t> highest_derivation_level(const RlweContext& context);

// The Galois elements of the master rotations: 5^(2^i) for 2^i < N/2, and
// the conjugation (2N - 1) when `conjugate`.
std::vector<u64> master_elements(const RlweContext& context, bool conjugate);

// What the client sends: master keys for derivation at `level`.
struct MasterKeys {
  RlweContextPtr context;     // the main parameters
  std::size_t level = 0;      // derived keys switch ciphertexts up to here
  RlweContextPtr derivation;  // derivation_context(*context, level)
  GaloisKeys keys;            // Galois keys of `derivation`, at its top level

  MasterKeys(RlweContextPtr context, std::size_t level, RlweContextPtr derivation, GaloisKeys keys);
  // Bytes the master keys hold in memory.
  std::uint64_t bytes() const { return keys.bytes(); }
};

// Client side: master keys for `secret` (seeded, like every switching key).
MasterKeys generate_master_keys(const SecretKey& secret, std::size_t level, bool conjugate, Prng& prng);

// Server side: Galois keys of `masters.context` at `masters.level` for
// `elements` (rotations 5^k and conjugated rotations (2N-1) 5^k), derived
// from the master keys alone. Raises InvalidArgument naming an element the
// masters cannot reach (the conjugation without its master key).
GaloisKeys derive_galois_keys(const MasterKeys& masters, const std::vector<u64>& elements);

}  // namespace ringfire
