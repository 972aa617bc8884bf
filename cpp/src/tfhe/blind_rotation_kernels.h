// The per-element bodies of one blind-rotation step (bootstrapper.cpp), one
// set per instruction set (isa.h), all bit-identical:
//   decompose: signed gadget digits of a polynomial (coefficient form);
//   product:   the two lazy sums of digits times keys, and their products
//              with the two monomials, in the evaluation form (GINX);
//   mac:       the lazy sums of digits times one key (LMKCDEY).
// The key layout they read (BootstrapKey): per LWE coefficient,
// [chunk of 16 slots][row r < R][b+, a+, b-, a-][16], Montgomery form.
#pragma once

#include <cstddef>

#if defined(__x86_64__)
#include <xmmintrin.h>  // _mm_prefetch (SSE: every x86-64)
#endif

#include "ringfire/tfhe/isa.h"
#include "ringfire/tfhe/ntt32.h"
#include "ringfire/tfhe/params.h"

namespace ringfire::tfhe::kernels {

inline constexpr std::size_t kChunk = 16;

// Digit r of polynomial p (p = 0: b, 1: a) goes to D + (p d_g + r) N.
void decompose(Isa isa, const u32* poly, std::size_t N, const Params& p, u32* D);

// out_b, out_a (evaluation layout, < 2Q) = (X^a - 1) sum_r D_r BK+_r +
// (X^-a - 1) sum_r D_r BK-_r; mp, mm: Montgomery(NTT(X^{+-a}) - 1).
// next_key, next_mp, next_mm (or null): the next step's key and monomials
// (prefetch_next below). Only chunks [chunk_begin, chunk_end) of the N /
// kChunk are computed, so that several ciphertexts can take a block of the
// key in turn while it sits in the nearest caches.
struct ProductArgs {
  const u32* D;
  std::size_t R, N;
  const u32* key;
  const u32 *mp, *mm;
  u32 Q, neg_q_inv;
  u32 *out_b, *out_a;
  const char* next_key;
  const u32 *next_mp, *next_mm;
  std::size_t chunk_begin, chunk_end;
};
void product(Isa isa, const ProductArgs& args);

// Chunk c's share of the next step's key and monomials, prefetched into L2
// while the product reads this step's (one step ahead: a blind rotation
// reads more key than L2 keeps, and L3 alone cannot feed the products).
// Without next_key only the monomials are (the other accumulators of a batch,
// whose key the first one prefetches).
inline void prefetch_next(const ProductArgs& g, std::size_t c) {
#if defined(__x86_64__)
  if (g.next_key != nullptr) {
    const std::size_t bytes = g.R * 4 * kChunk * sizeof(u32);
    const char* key = g.next_key + c * bytes;
    for (std::size_t off = 0; off < bytes; off += 64) _mm_prefetch(key + off, _MM_HINT_T1);
  }
  if (g.next_mp == nullptr) return;
  _mm_prefetch(reinterpret_cast<const char*>(g.next_mp + c * kChunk), _MM_HINT_T1);
  _mm_prefetch(reinterpret_cast<const char*>(g.next_mm + c * kChunk), _MM_HINT_T1);
#else
  (void)g, (void)c;
#endif
}

// The LMKCDEY steps' product (automorphism_key.cpp): out_b, out_a (evaluation
// layout, < 2Q) = sum_r D_r K_r for one key of R rows, laid out
// [chunk of 16 slots][row r < R][b, a][16], Montgomery form. R Q^2 < Q 2^32.
struct MacArgs {
  const u32* D;
  std::size_t R, N;
  const u32* key;
  u32 Q, neg_q_inv;
  u32 *out_b, *out_a;
  const char* next_key;  // the next product's key of the same shape, prefetched (or null)
};
void mac(Isa isa, const MacArgs& args);

void decompose_scalar(const u32* poly, std::size_t N, const Params& p, u32* D);
void mac_scalar(const MacArgs& args);
void mac_avx2(const MacArgs& args);
void decompose_avx2(const u32* poly, std::size_t N, const Params& p, u32* D);
void decompose_avx512(const u32* poly, std::size_t N, const Params& p, u32* D);
void product_scalar(const ProductArgs& args);
void product_avx2(const ProductArgs& args);
void product_avx512(const ProductArgs& args);

}  // namespace ringfire::tfhe::kernels
