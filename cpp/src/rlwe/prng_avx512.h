// The Prng's kernels for CPUs with AVX-512 (prng_avx512.cpp): 16 ChaCha20
// blocks at once (chosen by chacha20_blocks) and the rejection step of uniform
// sampling (chosen by Prng::uniform_below_many). The build targets AVX2
// machines; these are compiled for AVX-512 F alone, per function, and chosen
// at run time.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ringfire::detail {

inline constexpr std::size_t kChaCha20Avx512Blocks = 16;

// Whether this CPU runs the kernels below (checked once).
bool prng_avx512_available();

// Blocks for counters state[12] + 0..15 (mod 2^32) of the RFC 8439 state
// `state`, written back to back (1024 bytes); the same bytes as 16 calls of the
// block function. Only where prng_avx512_available().
void chacha20_blocks16_avx512(const std::uint32_t state[16], std::uint8_t* out);

// The rejection step in groups of 8 words: reads little-endian words at
// `words` (at most `available`), keeps w & mask where it is below `bound`, in
// order, into out[done...], while a whole group fits in both the words left and
// the count left to `wanted`; returns the words read and advances `done`. The
// caller finishes word by word. Only where prng_avx512_available().
std::size_t accept_below_avx512(const std::uint8_t* words, std::size_t available, std::uint64_t mask,
                                std::uint64_t bound, std::uint64_t* out, std::size_t& done, std::size_t wanted);

}  // namespace ringfire::detail
