// Passes 1 and 3 of the CPU base conversion (base_convert.cpp) on AVX-512:
// IFMA's 52-bit Shoup products where the primes allow, eight-lane 64-bit ones
// otherwise. The same fully reduced words as the AVX2 and scalar loops.
#pragma once

#include <cstddef>

#include "ringfire/arith/modular.h"

namespace ringfire::cpu {

// rns_isa() is avx512 and the block's length a multiple of 32.
bool base_convert_on_avx512(std::size_t len);

// y = x w mod q over len words (x < q).
void scale_block_avx512(const u64* x, u64* y, std::size_t len, ShoupOperand w, u64 q);

// z = sum_i y_i f_i (- vq[v]) mod p over len words, y_i at y + i * stride
// (y_i below its source prime; `sources_below_2_52` where every source prime
// is), f the row's factors; vq null for the fast conversion.
void accumulate_block_avx512(const u64* y, std::size_t stride, std::size_t src, const ShoupOperand* f,
                             bool sources_below_2_52, const u64* v, const u64* vq, u64* z, std::size_t len, u64 p);

}  // namespace ringfire::cpu
