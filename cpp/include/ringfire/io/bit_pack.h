#pragma once
// Residues stored in the bits their prime needs (format version 5 on): a residue
// mod a 50-bit prime takes 50 bits on the wire and on disk, not a 64-bit word.
// Each limb of a polynomial is a little-endian bit stream, the first residue in
// the lowest bits of the first byte; N residues of b bits fill N * b / 8 bytes
// exactly (N is a power of two, at least 8), so limbs stay byte-aligned and one
// limb's size depends on its prime alone. The 40- to 60-bit primes of the
// presets make ciphertexts and keys 6-38 % smaller than 64-bit words, for a pass
// of shifts that costs a small fraction of the copy it saves.

#include <bit>
#include <cstddef>
#include <cstdint>

namespace ringfire::io {

// The bits a residue mod q needs: those of q - 1.
inline unsigned residue_bits(std::uint64_t q) { return static_cast<unsigned>(std::bit_width(q - 1)); }

// The bytes `count` residues of `bits` bits take (count * bits is a multiple of 8).
inline std::size_t packed_bytes(std::size_t count, unsigned bits) { return count * bits / 8; }

// Writes packed_bytes(count, bits) bytes; each input is taken mod 2^bits
// (a residue below its prime already fits). 1 <= bits <= 64.
void pack_residues(const std::uint64_t* in, std::size_t count, unsigned bits, std::uint8_t* out);

// Reads packed_bytes(count, bits) bytes (no further: the input may end there)
// into `count` words; false if any is >= `bound` (every word is written even
// so, without an early exit, so the loop stays branch-free).
bool unpack_residues(const std::uint8_t* in, std::size_t count, unsigned bits, std::uint64_t bound,
                     std::uint64_t* out);

}  // namespace ringfire::io
