// CKKS decryption that does not hand out the secret key.
//
// A CKKS decryption returns m + e, and e is a function of the secret key:
// whoever sees the ciphertext (c0, c1) and the exact result recovers
// s = (m + e - c0) / c1 by linear algebra (Li and Micciancio, "On the
// security of homomorphic encryption on approximate numbers", EUROCRYPT
// 2021: the IND-CPA^D attack). Decryption therefore adds fresh Gaussian
// noise to the coefficients of m + e before decoding, in one of two amounts:
//
// * estimate (the default): noise of the ciphertext's own size, sqrt(2)
//   times the per-coefficient noise (as OpenFHE's CKKS decoding does). The
//   exact linear attack fails, at a cost of about half a bit of precision.
//   It is a heuristic: an adversary who sees many decryptions of crafted
//   ciphertexts can average the added noise out.
// * flooding: noise wide enough that the results are statistically
//   independent of e. Adding N(0, sigma^2) per coefficient moves the
//   distribution of a result by KL = ||e||^2 / (2 sigma^2) (a Gaussian
//   shifted by e); over t decryptions Pinsker's inequality bounds the
//   statistical distance by sqrt(t) ||e|| / (2 sigma). With sigma =
//   2^(s/2) sqrt(t) ||e||_2 it is below 2^(-s/2) / 2, which is s bits of
//   security for a decision game in the sense of Micciancio and Walter
//   (EUROCRYPT 2018), the measure Li, Micciancio, Schultz and Sorrell
//   ("Securing approximate homomorphic encryption using differential
//   privacy", CRYPTO 2022) use for IND-CPA^D. It costs about
//   s/2 + log2(N)/2 + log2(t)/2 bits of precision: use it for results that
//   leave the key holder, with a scale large enough to pay for it.
// * insecure_exact: no noise; the result and the ciphertext reveal the key.
//
// The noise is added to the decoded slots as independent complex Gaussians,
// which is the same distribution as Gaussian noise on the coefficients (the
// canonical embedding is sqrt(N) times a unitary map), without a second FFT.
//
// The noise e is estimated from the data when the slots are real (their
// imaginary parts are pure noise: ||e||^2 = (4 / N) scale^2 sum_j Im(z_j)^2 by
// Parseval, for noise whose real and imaginary parts have equal power), and
// otherwise from the estimate the ciphertext carries (rlwe/noise.h). Flooding
// takes the larger of the two, so a tampered (lowered) carried estimate
// cannot shrink it for real data.
#pragma once

#include <vector>

#include "ringfire/ckks/context.h"
#include "ringfire/rlwe/keys.h"
#include "ringfire/rlwe/prng.h"

namespace ringfire::ckks {

enum class DecryptionNoise { estimate, flooding, insecure_exact };

struct DecryptOptions {
  DecryptionNoise noise = DecryptionNoise::estimate;
  // Flooding: the statistical security s in bits, and t, the number of
  // decryptions (of this or related ciphertexts) one party may see.
  double statistical_security = 40.0;
  double decryptions = 1.0;
  // An upper bound on |slot value| known from the computation (the Python
  // layer's magnitude bounds), or < 0 when unknown. Below the level's wrap
  // point it proves the values did not wrap, which spares legitimate data
  // between Q/4 and Q/2 the refusal below.
  double value_bound = -1.0;
};

struct Decryption {
  std::vector<Complex> slots;
  // log2 of the estimated ||e||_2 that sized the added noise, and whether
  // it was measured on the imaginary parts (real data).
  double noise_bits = 0.0;
  bool measured = false;
  // log2 of the standard deviation added to each coefficient (-inf: none).
  double added_noise_bits = 0.0;
  // log2(1 / rms slot error) expected from both: the bits of precision of
  // values of magnitude 1.
  double precision_bits = 0.0;
};

// Decrypts `cipher` (copied to the host if it lives elsewhere). Raises
// InvalidArgument when the secret key belongs to other parameters, when the
// options are out of range (s in [8, 128], t >= 1), when the ciphertext's
// noise already exceeds its scale (the result would be noise: the data
// outgrew the parameters, or the ciphertext was crafted), when a coefficient
// reached a quarter of the level's modulus and no known bound rules out a
// wrap around it (the values outgrew the level), and when flooding would
// leave no precision (the message says what scale it needs).
Decryption decrypt(const Context& context, const Ciphertext& cipher, const SecretKey& key,
                   const DecryptOptions& options, Prng& prng);

}  // namespace ringfire::ckks
