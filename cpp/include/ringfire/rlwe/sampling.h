// Samplers for RLWE: ternary secrets, discrete Gaussian errors, uniform
// elements of R_Q, and the maps of small signed values into RNS residues.
// All write into caller-provided memory and draw from a Prng; the bytes each
// one consumes are listed below so that a seed fixes the output exactly.
//
// Side channels: the secret-dependent work (mapping bytes to ternary values,
// the CDT scan, the sign, the map to residues) is branch-free. The only
// data-dependent control flow is rejection sampling, whose decisions depend
// on randomness that is discarded, never on the values returned.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ringfire/ring/rns_base.h"
#include "ringfire/rlwe/prng.h"

namespace ringfire {

// Default RLWE error width (the HE standard's sigma = 8/sqrt(2*pi) ~ 3.2).
inline constexpr double kDefaultGaussianSigma = 3.2;
// The Gaussian is cut at 6 sigma: |e| <= floor(6 * sigma) (19 for sigma = 3.2).
inline constexpr double kGaussianTailCut = 6.0;
// Widest sigma the CDT sampler accepts (its table has floor(6 sigma) entries
// scanned per sample).
inline constexpr double kMaxGaussianSigma = 1024.0;

// out[0, n) uniform over {-1, 0, 1}. Consumes bytes b one at a time: b = 255
// is rejected, otherwise the value is (b mod 3) - 1 (255 = 3 * 85, so the
// accepted bytes split evenly over the residues).
void sample_ternary(Prng& prng, std::int8_t* out, std::size_t n);

// out[0, n) ternary with exactly `weight` nonzero entries (uniform positions,
// uniform signs): the ephemeral secret of sparse-secret encapsulation. The
// positions come from a partial Fisher-Yates shuffle, whose memory accesses
// depend on them; it runs only in key generation, on the key holder's side.
void sample_sparse_ternary(Prng& prng, std::int8_t* out, std::size_t n, std::size_t weight);

// out[0, n) from the discrete Gaussian D_{Z,sigma} (density ~ exp(-x^2 / (2 sigma^2)))
// restricted to |x| <= floor(6 sigma). Constant-time cumulative distribution
// table: |x| = #{k : r >= T[k]} for a uniform 64-bit r, where T[k] is
// P(|x| <= k) in 64-bit fixed point and the whole table is scanned; the sign
// comes from a random bit and is applied without a branch.
// Stream: per group of up to 64 samples, one 64-bit word of sign bits (bit j
// for sample j of the group) and then one 64-bit word r per sample.
// Raises InvalidArgument unless 0 < sigma <= kMaxGaussianSigma.
void sample_gaussian(Prng& prng, std::int64_t* out, std::size_t n,
                     double sigma = kDefaultGaussianSigma);

// out[0, n) from the continuous Gaussian N(0, sigma^2), for noise flooding
// (widths far beyond the CDT sampler's). Marsaglia's polar method: per pair
// of samples two next_u64() words give u and v in [-1, 1) (53-bit steps);
// a pair outside the unit disc (about one in five) is drawn again, and an
// accepted one gives sigma * (u, v) * sqrt(-2 ln s / s), s = u^2 + v^2 (no
// sine or cosine: Box-Muller's took a third of a CKKS decryption's time at
// N = 2^13). Tails reach past 12 sigma (s >= 2^-104). Timing depends on the
// values through libm and on how many pairs were redrawn, which says nothing
// of the pairs kept; the samples protect one decryption and are not
// long-term secrets.
// Raises InvalidArgument unless sigma is finite and non-negative.
void sample_wide_gaussian(Prng& prng, double* out, std::size_t n, double sigma);

// A uniform element of R_Q in RNS form: out is limb-major, base.size() x base.n()
// words, with out[i * N + j] = prng.uniform_below(q_i) drawn in that order
// (limb 0 first). Independent uniform residues are uniform modulo Q = prod q_i
// by the CRT. This is the expansion of a public seed into the `a` of keys and
// ciphertexts, so the order above is part of the format.
void sample_uniform(Prng& prng, const RnsBase& base, std::uint64_t* out);

// Residues of ternary s[0, n) modulo every q_i of base: out is limb-major,
// base.size() x n words; -1 maps to q_i - 1. Branch-free.
void ternary_to_rns(const std::int8_t* s, std::size_t n, const RnsBase& base, std::uint64_t* out);

// Residues of small signed e[0, n) modulo every q_i (limb-major, base.size() x n):
// e_j + (q_i if e_j < 0), branch-free. Needs |e_j| < q_i for every limb; raises
// InvalidArgument afterwards (output then unspecified) when a value is larger.
void signed_to_rns(const std::int64_t* e, std::size_t n, const RnsBase& base, std::uint64_t* out);

}  // namespace ringfire
