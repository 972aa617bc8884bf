// ChaCha20, 16 blocks side by side in AVX-512 registers (one 32-bit lane per
// block): the rotations are single instructions (vprold) that AVX2 spells as
// two shifts and an OR, and a 16x16 transpose in registers writes the blocks
// back in byte order. And uniform sampling's rejection step, 8 words at once
// compressed in a register (vpcompressq) instead of a branch per word.
#include "prng_avx512.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

// GCC 12's AVX-512 headers start some intrinsics from _mm512_undefined_*, which
// -Wuninitialized reports once they are inlined here.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#define RF_AVX512F __attribute__((target("avx512f")))

// The shared rounds are instantiated here with AVX-512 vectors: compiled for
// AVX-512 too, so that the quarter rounds inline into them.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f"))), apply_to = function)
#include "chacha20_rounds.h"
#pragma clang attribute pop
#else
#pragma GCC push_options
#pragma GCC target("avx512f")
#include "chacha20_rounds.h"
#pragma GCC pop_options
#endif

namespace ringfire::detail {

namespace {

using Z = __m512i;

RF_AVX512F inline void quarter_round(Z& a, Z& b, Z& c, Z& d) {
  a = _mm512_add_epi32(a, b); d = _mm512_rol_epi32(_mm512_xor_si512(d, a), 16);
  c = _mm512_add_epi32(c, d); b = _mm512_rol_epi32(_mm512_xor_si512(b, c), 12);
  a = _mm512_add_epi32(a, b); d = _mm512_rol_epi32(_mm512_xor_si512(d, a), 8);
  c = _mm512_add_epi32(c, d); b = _mm512_rol_epi32(_mm512_xor_si512(b, c), 7);
}

// x[i] holds word i of the 16 blocks (lane l = block l); writes block l's 16
// words to out + 64 l. Two interleaving passes leave, in each 128-bit quarter j
// of y[4m + t], words 4m..4m+3 of block 4j + t; a 4x4 transpose of quarters
// then gathers block 4j + t's four quarters.
RF_AVX512F inline void store_transposed(const Z x[16], std::uint8_t* out) {
  Z a[16], y[16];
  for (int k = 0; k < 8; ++k) {
    a[2 * k] = _mm512_unpacklo_epi32(x[2 * k], x[2 * k + 1]);
    a[2 * k + 1] = _mm512_unpackhi_epi32(x[2 * k], x[2 * k + 1]);
  }
  for (int m = 0; m < 4; ++m) {
    y[4 * m + 0] = _mm512_unpacklo_epi64(a[4 * m], a[4 * m + 2]);
    y[4 * m + 1] = _mm512_unpackhi_epi64(a[4 * m], a[4 * m + 2]);
    y[4 * m + 2] = _mm512_unpacklo_epi64(a[4 * m + 1], a[4 * m + 3]);
    y[4 * m + 3] = _mm512_unpackhi_epi64(a[4 * m + 1], a[4 * m + 3]);
  }
  for (int t = 0; t < 4; ++t) {
    const Z low01 = _mm512_shuffle_i32x4(y[t], y[4 + t], 0x44);    // y0.q0 y0.q1 y1.q0 y1.q1
    const Z high01 = _mm512_shuffle_i32x4(y[t], y[4 + t], 0xEE);   // y0.q2 y0.q3 y1.q2 y1.q3
    const Z low23 = _mm512_shuffle_i32x4(y[8 + t], y[12 + t], 0x44);
    const Z high23 = _mm512_shuffle_i32x4(y[8 + t], y[12 + t], 0xEE);
    const Z blocks[4] = {_mm512_shuffle_i32x4(low01, low23, 0x88), _mm512_shuffle_i32x4(low01, low23, 0xDD),
                         _mm512_shuffle_i32x4(high01, high23, 0x88), _mm512_shuffle_i32x4(high01, high23, 0xDD)};
    for (int j = 0; j < 4; ++j) _mm512_storeu_si512(out + 64 * (4 * j + t), blocks[j]);
  }
}

}  // namespace

bool prng_avx512_available() {
  static const bool available = __builtin_cpu_supports("avx512f");
  return available;
}

RF_AVX512F void chacha20_blocks16_avx512(const std::uint32_t state[16], std::uint8_t* out) {
  Z start[16], x[16];
  for (int i = 0; i < 16; ++i) start[i] = _mm512_set1_epi32(static_cast<int>(state[i]));
  start[12] = _mm512_add_epi32(start[12], _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  for (int i = 0; i < 16; ++i) x[i] = start[i];
  chacha20_rounds(x, [](Z& a, Z& b, Z& c, Z& d) RF_AVX512F { quarter_round(a, b, c, d); });
  for (int i = 0; i < 16; ++i) x[i] = _mm512_add_epi32(x[i], start[i]);
  store_transposed(x, out);  // x86 is little-endian: each word's bytes are already in RFC order
}

RF_AVX512F std::size_t accept_below_avx512(const std::uint8_t* words, std::size_t available, std::uint64_t mask,
                                           std::uint64_t bound, std::uint64_t* out, std::size_t& done,
                                           std::size_t wanted) {
  const Z masks = _mm512_set1_epi64(static_cast<long long>(mask));
  const Z bounds = _mm512_set1_epi64(static_cast<long long>(bound));
  std::size_t used = 0;
  for (; used + 8 <= available && done + 8 <= wanted; used += 8) {
    const Z w = _mm512_and_si512(_mm512_loadu_si512(words + 8 * used), masks);
    const __mmask8 keep = _mm512_cmplt_epu64_mask(w, bounds);
    // Compressed in a register, then stored whole: vpcompressq with a memory operand is
    // microcoded on AMD's Zen 4 (tens of cycles a store). The lanes past the kept ones land
    // at out[done + popcount, done + 8), inside `wanted` (the loop's bound), and the next
    // words overwrite them.
    _mm512_storeu_si512(out + done, _mm512_maskz_compress_epi64(keep, w));
    done += static_cast<std::size_t>(__builtin_popcount(keep));
  }
  return used;
}

}  // namespace ringfire::detail

#else

namespace ringfire::detail {
bool prng_avx512_available() { return false; }
void chacha20_blocks16_avx512(const std::uint32_t*, std::uint8_t*) {}
std::size_t accept_below_avx512(const std::uint8_t*, std::size_t, std::uint64_t, std::uint64_t, std::uint64_t*,
                                std::size_t&, std::size_t) {
  return 0;
}
}  // namespace ringfire::detail

#endif
