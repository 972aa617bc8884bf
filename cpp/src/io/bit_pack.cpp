#include "ringfire/io/bit_pack.h"

#include <array>
#include <cstring>
#include <utility>

namespace ringfire::io {

namespace {

using u64 = std::uint64_t;
using u128 = unsigned __int128;

constexpr bool kLittleEndian = std::endian::native == std::endian::little;

u64 load_le64(const std::uint8_t* p) {
  u64 v = 0;
  if constexpr (kLittleEndian) {
    std::memcpy(&v, p, 8);
  } else {
    for (int i = 0; i < 8; ++i) v |= static_cast<u64>(p[i]) << (8 * i);
  }
  return v;
}

void store_le64(std::uint8_t* p, u64 v) {
  if constexpr (kLittleEndian) {
    std::memcpy(p, &v, 8);
  } else {
    for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
  }
}

constexpr u64 low_mask(unsigned bits) { return bits == 64 ? ~u64{0} : (u64{1} << bits) - 1; }

// Residues first .. last of a stream, each read from the 8 (or, when a residue
// can straddle nine bytes, 16) bytes from the byte it starts in: independent
// loads and shifts, no carried state, so the iterations overlap. The caller
// guarantees those bytes are inside `in`.
template <bool kWide>
bool unpack_range(const std::uint8_t* in, std::size_t first, std::size_t last, unsigned bits, u64 bound,
                  u64* out) {
  const u64 mask = low_mask(bits);
  bool outside = false;
  for (std::size_t i = first; i < last; ++i) {
    const std::size_t bit = i * bits;
    const std::uint8_t* p = in + (bit >> 3);
    const unsigned shift = bit & 7;
    u64 v;
    if constexpr (kWide) {
      const u128 w = static_cast<u128>(load_le64(p)) | static_cast<u128>(load_le64(p + 8)) << 64;
      v = static_cast<u64>(w >> shift) & mask;
    } else {
      v = (load_le64(p) >> shift) & mask;
    }
    out[i] = v;
    outside |= v >= bound;
  }
  return !outside;
}

// Appends residues to a little-endian bit stream: whole 64-bit words as they
// fill, the last partial word's bytes at close().
class BitStream {
 public:
  explicit BitStream(std::uint8_t* out) : out_(out) {}
  void put(u64 value, unsigned bits) {  // value < 2^bits
    pending_ |= static_cast<u128>(value) << held_;
    held_ += bits;
    if (held_ >= 64) {
      store_le64(out_, static_cast<u64>(pending_));
      out_ += 8;
      pending_ >>= 64;
      held_ -= 64;
    }
  }
  void close() {  // whole bytes: the caller's bit count is a multiple of 8
    for (; held_ > 0; held_ = held_ > 8 ? held_ - 8 : 0) {
      *out_++ = static_cast<std::uint8_t>(pending_);
      pending_ >>= 8;
    }
  }

 private:
  std::uint8_t* out_;
  u128 pending_ = 0;  // bits not yet written, lowest first
  unsigned held_ = 0;  // how many
};

// Eight residues of kBits bits fill exactly kBits bytes. With the width a
// constant and the eight steps unrolled, every word index and shift below is
// known at compile time: each residue is two shifts and two ors into words kept
// in registers, and groups are independent.
template <unsigned kBits>
void pack_groups(const u64* in, std::size_t groups, std::uint8_t* out) {
  constexpr u64 kMask = low_mask(kBits);
  for (std::size_t g = 0; g < groups; ++g, in += 8, out += kBits) {
    u64 words[9] = {};
#pragma GCC unroll 8
    for (unsigned j = 0; j < 8; ++j) {
      const u64 v = in[j] & kMask;
      const unsigned bit = j * kBits, word = bit / 64, shift = bit % 64;
      words[word] |= v << shift;
      if (shift + kBits > 64) words[word + 1] |= v >> (64 - shift);
    }
    // Word by word from registers: copying the array whole would read back bytes of
    // two stores at once, which the CPU cannot forward from its store buffer (2.5x
    // slower here).
#pragma GCC unroll 8
    for (unsigned k = 0; k < kBits / 8; ++k) store_le64(out + 8 * k, words[k]);
#pragma GCC unroll 8
    for (unsigned k = 0; k < kBits % 8; ++k)
      out[8 * (kBits / 8) + k] = static_cast<std::uint8_t>(words[kBits / 8] >> (8 * k));
  }
}

// The reverse, for groups whose reads stay inside the input (each residue reads
// the 8 bytes from the one it starts in, and a ninth where it straddles them).
template <unsigned kBits>
bool unpack_groups(const std::uint8_t* in, std::size_t groups, u64 bound, u64* out) {
  constexpr u64 kMask = low_mask(kBits);
  bool outside = false;
  for (std::size_t g = 0; g < groups; ++g, in += kBits, out += 8) {
#pragma GCC unroll 8
    for (unsigned j = 0; j < 8; ++j) {
      const unsigned bit = j * kBits, shift = bit % 8;
      const std::uint8_t* p = in + bit / 8;
      u64 v = load_le64(p) >> shift;
      if (shift + kBits > 64) v |= static_cast<u64>(p[8]) << (64 - shift);
      v &= kMask;
      out[j] = v;
      outside |= v >= bound;
    }
  }
  return !outside;
}

using PackGroups = void (*)(const u64*, std::size_t, std::uint8_t*);
using UnpackGroups = bool (*)(const std::uint8_t*, std::size_t, u64, u64*);

// Indexed by the width (0 is never asked for).
template <std::size_t... kWidths>
constexpr std::array<PackGroups, sizeof...(kWidths)> pack_table(std::index_sequence<kWidths...>) {
  return {&pack_groups<static_cast<unsigned>(kWidths == 0 ? 1 : kWidths)>...};
}

template <std::size_t... kWidths>
constexpr std::array<UnpackGroups, sizeof...(kWidths)> unpack_table(std::index_sequence<kWidths...>) {
  return {&unpack_groups<static_cast<unsigned>(kWidths == 0 ? 1 : kWidths)>...};
}

constexpr auto kPackGroups = pack_table(std::make_index_sequence<65>{});
constexpr auto kUnpackGroups = unpack_table(std::make_index_sequence<65>{});

}  // namespace

void pack_residues(const u64* in, std::size_t count, unsigned bits, std::uint8_t* out) {
  // Whole groups of eight at the width's own speed; a remainder (only short test
  // inputs have one: N is a power of two) the general way, from a byte boundary.
  const std::size_t groups = count / 8;
  kPackGroups[bits](in, groups, out);
  BitStream rest(out + groups * bits);
  for (std::size_t i = 8 * groups; i < count; ++i) rest.put(in[i] & low_mask(bits), bits);
  rest.close();
}

bool unpack_residues(const std::uint8_t* in, std::size_t count, unsigned bits, u64 bound, u64* out) {
  const std::size_t size = packed_bytes(count, bits);
  // A residue starting at bit offset s of its byte spans s + bits <= 7 + bits bits.
  const bool wide = bits > 57;
  const std::size_t window = wide ? 16 : 8;
  // Residues whose window ends inside the input read it in place; the last few
  // read from a copy of the input's tail padded with zeros.
  std::size_t direct = count;
  while (direct > 0 && ((direct - 1) * bits >> 3) + window > size) --direct;
  // Whole groups of eight first, at the width's own speed: group g reads at most
  // bits + 9 bytes from its start, g * bits.
  const std::size_t groups = size >= bits + 9 ? (size - bits - 9) / bits + 1 : 0;
  bool inside = kUnpackGroups[bits](in, groups, bound, out);
  inside &= wide ? unpack_range<true>(in, 8 * groups, direct, bits, bound, out)
                 : unpack_range<false>(in, 8 * groups, direct, bits, bound, out);
  if (direct == count) return inside;
  const std::size_t from = (direct * bits) >> 3;  // the byte the first remaining residue starts in
  std::uint8_t tail[64] = {};
  std::memcpy(tail, in + from, size - from);  // at most window + bits/8 bytes: fits
  // Residue i of the stream sits (i - direct) * bits + (direct * bits & 7) bits into the tail.
  const unsigned skew = (direct * bits) & 7;
  for (std::size_t i = direct; i < count; ++i) {
    const std::size_t bit = (i - direct) * bits + skew;
    const std::uint8_t* p = tail + (bit >> 3);
    const u128 w = static_cast<u128>(load_le64(p)) | static_cast<u128>(load_le64(p + 8)) << 64;
    const u64 v = static_cast<u64>(w >> (bit & 7)) & low_mask(bits);
    out[i] = v;
    inside &= v < bound;
  }
  return inside;
}

}  // namespace ringfire::io
