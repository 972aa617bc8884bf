// The ChaCha20 stream cipher of RFC 8439 (256-bit key, 96-bit nonce, 32-bit
// block counter): the block function (§2.3) and the keystream / encryption of
// §2.4. Portable C++: every word is read and written little-endian explicitly,
// so the bytes are identical on every host. The multi-block path computes
// several blocks side by side in a layout compilers vectorise (one SIMD lane
// per block), which is what makes the Prng fast enough to expand seeds into
// the uniform polynomials of keys and ciphertexts.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace ringfire {

inline constexpr std::size_t kChaCha20KeyBytes = 32;
inline constexpr std::size_t kChaCha20NonceBytes = 12;
inline constexpr std::size_t kChaCha20BlockBytes = 64;

using ChaCha20Key = std::array<std::uint8_t, kChaCha20KeyBytes>;
using ChaCha20Nonce = std::array<std::uint8_t, kChaCha20NonceBytes>;

// RFC 8439 §2.3: the 64-byte block for (key, counter, nonce).
void chacha20_block(const ChaCha20Key& key, std::uint32_t counter, const ChaCha20Nonce& nonce,
                    std::uint8_t* out);

// `block_count` consecutive blocks for counters counter, counter+1, ... written
// back to back (block_count * 64 bytes). RFC 8439 forbids the 32-bit counter to
// wrap within one message, so this raises InvalidArgument when
// counter + block_count > 2^32.
void chacha20_keystream(const ChaCha20Key& key, std::uint32_t counter, const ChaCha20Nonce& nonce,
                        std::uint8_t* out, std::size_t block_count);

// RFC 8439 §2.4: out = in XOR keystream(key, counter, nonce), `size` bytes; the
// last block is used partially. in == out is allowed. Raises InvalidArgument
// when the message would make the counter wrap.
void chacha20_xor(const ChaCha20Key& key, std::uint32_t counter, const ChaCha20Nonce& nonce,
                  const std::uint8_t* in, std::uint8_t* out, std::size_t size);

// The word-level core behind the functions above (and Prng): key as 8 words
// and nonce as 3 words, already decoded little-endian as in the RFC's state
// layout (state[4..11] = key, state[13..15] = nonce). Block j uses counter
// (counter + j) mod 2^32 — this function does wrap; callers that need more
// than 2^32 blocks advance the nonce themselves.
void chacha20_blocks(const std::uint32_t key_words[8], std::uint32_t counter,
                     const std::uint32_t nonce_words[3], std::uint8_t* out, std::size_t block_count);

}  // namespace ringfire
