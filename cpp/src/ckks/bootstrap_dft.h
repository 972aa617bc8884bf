// The homomorphic DFTs of bootstrapping as products of sparse matrices.
//
// The encoder (encoder.h) computes slots z = F BR w from the coefficient
// vector w_k = c_k + i c_{k+N/2}: BR is the bit reversal and F the log2(n)
// butterfly stages S_1 .. S_log(n) (block length 2, 4, ..., n; stage S has
// twiddles exp(2 pi i (5^j mod 4 len) / (4 len))). Each stage is a matrix
// with three nonzero diagonals (0 and +-len/2), so
//   CoeffsToSlots = F^-1 = S_1^-1 ... S_log(n)^-1   (w, bit-reversed)
//   SlotsToCoeffs = F    = S_log(n) ... S_1         (from bit-reversed w)
// need no bit reversal at all: EvalMod works slot by slot, so the order of
// the coefficients in between does not matter. Stages are grouped into as
// many matrices as the level budget allows; a group of g stages has at most
// 2^(g+1) - 1 diagonals.
//
// Sparse packing (n < N/2 slots, n-periodic): the stages are the first
// log2(n) ones (twiddles depend only on the block length). The last
// CoeffsToSlots matrix is embedded in dimension 2n so that it outputs
// [v; 0], and the first SlotsToCoeffs matrix reads [re; im] (2n-periodic)
// as re + i im: one EvalMod then serves both halves.
#pragma once

#include <cstddef>
#include <vector>

#include "ringfire/ckks/linear_transform.h"

namespace ringfire::ckks::bootstrap {

using Diagonals = LinearTransform::Diagonals;

// The forward stage of block length `len` on n slots, and its exact inverse.
Diagonals forward_stage(std::size_t n, std::size_t len);
Diagonals inverse_stage(std::size_t n, std::size_t len);
// a * b (b applied first), both of dimension n.
Diagonals multiply(const Diagonals& a, const Diagonals& b, std::size_t n);

// How log2(n) stages split into `levels` groups: as even as possible, the
// smaller groups first (they run at the higher, costlier levels).
std::vector<std::size_t> group_sizes(std::size_t stages, std::size_t levels);

// The CoeffsToSlots matrices in the order they are applied, each times
// constant^(1/levels); with `embed` the last one is the 2n-dimensional
// [M 0; 0 0] (sparse packing).
std::vector<Diagonals> coeffs_to_slots(std::size_t n, std::size_t levels, Complex constant, bool embed);
// The SlotsToCoeffs matrices in the order they are applied; with `repack` the
// first one reads a 2n-periodic [re; im] as re + i im.
std::vector<Diagonals> slots_to_coeffs(std::size_t n, std::size_t levels, bool repack);

// The dimension of a factor: the length of its diagonals.
std::size_t dimension_of(const Diagonals& d);

}  // namespace ringfire::ckks::bootstrap
