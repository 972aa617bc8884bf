// The CPU backend's products on AVX-512 IFMA, one limb at a time, for primes
// below 2^50 (avx512::kIfmaBound) and inputs reduced below them: eight words per
// step from the 52-bit multiply-adds. Each gives the words the scalar and AVX2
// loops give (fully reduced values); cpu_backend.cpp takes them where
// products_on_avx512 says so.
#pragma once

#include <cstddef>

#include "ringfire/arith/modular.h"

namespace ringfire::cpu {

// rns_isa() is avx512, q < 2^50 and n a multiple of 8.
bool products_on_avx512(u64 q, std::size_t n);

// (sum_t in[t] b[t], sum_t in[t] a[t]) mod q over words [offset, offset + n).
void inner_product_pair_limb_avx512(const u64* const* in, const u64* const* b, const u64* const* a, std::size_t terms,
                                    std::size_t offset, std::size_t n, u64 q, u64* out0, u64* out1);

// out = a b mod q, and acc = a b + acc mod q, over n words.
void multiply_limb_avx512(const u64* a, const u64* b, u64* out, std::size_t n, u64 q);
void multiply_add_limb_avx512(const u64* a, const u64* b, u64* acc, std::size_t n, u64 q);

// rns_isa() is avx512 and n a multiple of 8: the linear combination's Shoup
// products take any prime below 2^61 (64-bit lanes from 2^50 on).
bool shoup_products_on_avx512(std::size_t n);

// out = sum_t w[t] x[t] mod q over n words (w[t] Shoup operands mod q).
void linear_combination_limb_avx512(const u64* const* x, const ShoupOperand* w, std::size_t terms, u64* out,
                                    std::size_t n, u64 q);

// outs[o] = sum_t w[o terms + t] x[t] mod q over n words, for o < outputs: each input
// word is read once per four outputs.
void linear_combinations_limb_avx512(const u64* const* x, const ShoupOperand* w, std::size_t terms, u64* const* outs,
                                     std::size_t outputs, std::size_t n, u64 q);

}  // namespace ringfire::cpu
