// LWE ciphertexts into a ciphertext of a larger ring: the way back from
// FHEW/TFHE into BGV and BFV (python/ringfire/switching/fhew_to_bgv.py).
//
// A FHEW bootstrap's output before its key switch is an LWE ciphertext (a, b)
// mod Q of dimension n under the coefficients of a ring secret z of R_n
// (tfhe::Bootstrapper::bootstrap_to_ring_many). It is also the R_n ciphertext
// (c_0, c_1) = (b, -A) with A_0 = a_0 and A_i = -a_{n-i}: the constant
// coefficient of c_0 + c_1 z is b - <a, z>, the LWE phase (the others hold
// garbage). embed_lwe raises it from Q to Q_l = q_0 ... q_l and puts it in
// R_N by X -> X^(N/n) (as embed_in_ring does); an EmbeddingKey made from z
// (generate_embedding_key) then switches it to R_N's own secret.
//
// Raising the modulus: every word w becomes round(w Q_l / Q). The phase
// b - <a, z> + k Q (k: the wrap-arounds, an integer) becomes
// (b - <a, z>) Q_l / Q + k Q_l plus the roundings' sum, whose size is at most
// (1 + ||z||_1) / 2: the message keeps its place on the circle (m Q / t moves
// to m Q_l / t) and the error its share of the modulus.
//
// Chen, Dai, Kim and Song's packing (ePrint 2020/015, Algorithm 2) then
// merges such ciphertexts with X^s products (multiply_by_monomial) and the
// automorphisms X -> X^(N/s + 1), clearing every coefficient it does not keep;
// the merges and the trace multiply the phases by N, so embed_lwe divides by
// N first (an exact inverse mod Q_l).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ringfire/rlwe/ciphertext.h"

namespace ringfire {

// `count` LWE ciphertexts (count x (n + 1) words below `modulus`: a, then b)
// as ciphertexts of `target`'s ring at `level` in evaluation form, each with
// `metadata` and noise estimate `noise_bits`: phase times Q_level / modulus,
// divided by `divisor` mod Q_level, under z(X^(N/n)). Raises InvalidArgument
// unless n is a power of two below or at N, the modulus is odd, below 2^32 and
// coprime to every prime, the words are below it, and divisor is invertible.
std::vector<Ciphertext> embed_lwe(const std::uint32_t* words, std::size_t count, std::size_t n,
                                  std::uint64_t modulus, const RlweContextPtr& target, std::size_t level,
                                  const Metadata& metadata, std::uint64_t divisor, double noise_bits);

// The same for LWE ciphertexts mod 2^64 (the 64-bit torus sets' words, whose
// products wrap as that modulus does): words below 2^64, no modulus to give.
std::vector<Ciphertext> embed_torus_lwe(const std::uint64_t* words, std::size_t count, std::size_t n,
                                        const RlweContextPtr& target, std::size_t level, const Metadata& metadata,
                                        std::uint64_t divisor, double noise_bits);

// X^power a (negacyclic: X^N = -1; power below 2N), a host ciphertext in
// evaluation form. The error's norm is unchanged.
Ciphertext multiply_by_monomial(const Ciphertext& a, std::size_t power);

}  // namespace ringfire
