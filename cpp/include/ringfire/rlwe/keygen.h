// Key generation. Randomness comes from the Prng passed in (OS-seeded in
// normal use); uniform polynomials are expanded from child seeds that the
// keys keep, so they can be serialized compactly.
#pragma once

#include <utility>
#include <vector>

#include "ringfire/rlwe/keys.h"
#include "ringfire/rlwe/prng.h"

namespace ringfire {

SecretKey generate_secret_key(const RlweContextPtr& context, Prng& prng);
PublicKey generate_public_key(const SecretKey& secret, Prng& prng);
RelinKey generate_relin_key(const SecretKey& secret, Prng& prng);
// One key per Galois element (odd, in [1, 2N)), for ciphertexts up to
// `level` (the top by default; lower keys are smaller and faster to make).
GaloisKeys generate_galois_keys(const SecretKey& secret, const std::vector<u64>& elements, Prng& prng);
GaloisKeys generate_galois_keys(const SecretKey& secret, const std::vector<u64>& elements, Prng& prng,
                                std::size_t level);
// One key per (Galois element, level) (repeated elements: the first), each
// from its own child seed of `prng` drawn in order, made in parallel on the
// library's threads: the same keys whatever the thread count.
GaloisKeys generate_galois_keys_at_levels(const SecretKey& secret,
                                          const std::vector<std::pair<u64, std::size_t>>& wanted, Prng& prng);
// A key switching from s' (given in evaluation form over the key base) to s;
// `source` names s' (see KeySwitchKey::source). With `level`, the key holds
// only q_0..q_level and P: switching at higher levels is refused, and the
// key reveals nothing modulo the other primes (what a key under a sparse
// secret needs, see ckks/bootstrap.h).
KeySwitchKey generate_switch_key(const SecretKey& secret, const u64* s_prime_eval, u64 source, Prng& prng);
KeySwitchKey generate_switch_key(const SecretKey& secret, const u64* s_prime_eval, u64 source, Prng& prng,
                                 std::size_t level);

// The uniform polynomial (evaluation form, over `base`) that `seed` expands to.
void expand_uniform(const Seed& seed, const RnsBase& base, u64* out);
// A fresh discrete-Gaussian error (sigma 3.2) over `base`, in coefficient form.
void sample_error(Prng& prng, const RnsBase& base, u64* out);
// The same draws, in evaluation form.
void sample_error_eval(Prng& prng, const RnsBase& base, u64* out);
// A fresh ternary polynomial over `base`, in evaluation form.
void sample_ternary_eval(Prng& prng, const RnsBase& base, u64* out);

}  // namespace ringfire
