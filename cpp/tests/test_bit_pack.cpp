// Residues packed in the bits their prime needs (io/bit_pack.h): against a
// reference that moves one bit at a time, for every width from 1 to 64 and
// lengths around the word boundaries; values at or above the bound are
// reported wherever they sit; packing writes no byte past its output and
// unpacking reads none past its input (each ends at a page the test makes
// inaccessible).
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "ringfire/io/bit_pack.h"

namespace ringfire::io {
namespace {

using u64 = std::uint64_t;

// Bit j of residue i is bit i * bits + j of the stream, bit k of the stream is bit k % 8 of byte k / 8.
std::vector<std::uint8_t> reference_pack(const std::vector<u64>& values, unsigned bits) {
  std::vector<std::uint8_t> out(packed_bytes(values.size(), bits), 0);
  for (std::size_t i = 0; i < values.size(); ++i)
    for (unsigned j = 0; j < bits; ++j)
      if (values[i] >> j & 1) {
        const std::size_t k = i * bits + j;
        out[k / 8] = static_cast<std::uint8_t>(out[k / 8] | 1u << (k % 8));
      }
  return out;
}

std::vector<u64> random_residues(std::size_t count, unsigned bits, std::mt19937_64& rng) {
  std::vector<u64> v(count);
  const u64 mask = bits == 64 ? ~u64{0} : (u64{1} << bits) - 1;
  for (auto& x : v) x = rng() & mask;
  if (count > 0) v[count - 1] = mask;  // every bit of the last residue set: the tail is exercised
  return v;
}

// For every width and a few lengths that fit in two pages: residues packed so that their
// bytes end exactly where a page the process cannot touch begins, then check(values, bits,
// packed). A store or a read past the packed bytes faults instead of passing unnoticed.
template <class Check>
void pack_before_a_guard_page(std::uint64_t seed, Check check) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  void* map = mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  auto* base = static_cast<std::uint8_t*>(map);
  ASSERT_EQ(mprotect(base + 2 * page, page, PROT_NONE), 0);
  std::mt19937_64 rng(seed);
  for (unsigned bits = 1; bits <= 64; ++bits) {
    for (std::size_t count : {8u, 16u, 40u, 256u}) {
      const std::size_t size = packed_bytes(count, bits);
      if (size > 2 * page) continue;
      const std::vector<u64> values = random_residues(count, bits, rng);
      std::uint8_t* at = base + 2 * page - size;
      pack_residues(values.data(), count, bits, at);
      check(values, bits, at);
    }
  }
  munmap(map, 3 * page);
}

TEST(BitPack, MatchesABitByBitReferenceAtEveryWidth) {
  std::mt19937_64 rng(5);
  for (unsigned bits = 1; bits <= 64; ++bits) {
    // Groups of eight and the remainders only short inputs have (count * bits whole bytes).
    for (std::size_t count : {1u, 2u, 3u, 4u, 5u, 8u, 12u, 16u, 20u, 24u, 64u, 72u, 1024u}) {
      if (count * bits % 8 != 0) continue;
      const std::vector<u64> values = random_residues(count, bits, rng);
      std::vector<std::uint8_t> packed(packed_bytes(count, bits));
      pack_residues(values.data(), count, bits, packed.data());
      ASSERT_EQ(packed, reference_pack(values, bits)) << bits << " bits, " << count << " residues";
      std::vector<u64> back(count, 0xdead);
      const u64 bound = bits == 64 ? ~u64{0} : u64{1} << bits;
      EXPECT_TRUE(unpack_residues(packed.data(), count, bits, bound, back.data()) || bits == 64);
      ASSERT_EQ(back, values) << bits << " bits, " << count << " residues";
    }
  }
}

// Inputs above their width (keys and ciphertexts never hold any, but the contract
// says each is taken mod 2^bits) in the long runs the vector loop packs.
TEST(BitPack, LongRunsKeepTheLowBitsOfEachInputAtEveryWidth) {
  std::mt19937_64 rng(11);
  for (unsigned bits = 1; bits < 64; ++bits) {
    for (std::size_t count : {8u, 64u, 256u, 4096u}) {
      std::vector<u64> values(count), low(count);
      for (std::size_t i = 0; i < count; ++i) {
        values[i] = rng();
        low[i] = values[i] & ((u64{1} << bits) - 1);
      }
      std::vector<std::uint8_t> packed(packed_bytes(count, bits));
      pack_residues(values.data(), count, bits, packed.data());
      ASSERT_EQ(packed, reference_pack(low, bits)) << bits << " bits, " << count << " residues";
    }
  }
}

// Packing writes no byte past its output (see pack_before_a_guard_page).
TEST(BitPack, PackingWritesNothingPastItsOutput) {
  pack_before_a_guard_page(13, [](const std::vector<u64>& values, unsigned bits, const std::uint8_t* out) {
    const std::size_t size = packed_bytes(values.size(), bits);
    ASSERT_EQ(std::vector<std::uint8_t>(out, out + size), reference_pack(values, bits))
        << bits << " bits, " << values.size() << " residues";
  });
}

TEST(BitPack, SizesAndWidths) {
  EXPECT_EQ(residue_bits(0x3fffffffffc0001ull), 58u);  // a 58-bit prime's residues need 58 bits
  EXPECT_EQ(residue_bits(65537), 17u);
  EXPECT_EQ(residue_bits(3), 2u);
  EXPECT_EQ(packed_bytes(8192, 50), 51200u);
  EXPECT_EQ(packed_bytes(8192, 64), 65536u);
}

TEST(BitPack, PackingKeepsTheLowBitsOfEachInput) {
  const std::vector<u64> values = {~u64{0}, 1, 0x1ff, 0, 5, 6, 7, 8};
  std::vector<std::uint8_t> packed(packed_bytes(values.size(), 8));
  pack_residues(values.data(), values.size(), 8, packed.data());
  EXPECT_EQ(packed, (std::vector<std::uint8_t>{0xff, 1, 0xff, 0, 5, 6, 7, 8}));
}

TEST(BitPack, AValueAtOrAboveTheBoundIsReportedWhereverItSits) {
  std::mt19937_64 rng(7);
  for (unsigned bits : {17u, 41u, 50u, 57u, 58u, 60u, 61u}) {
    const u64 q = (u64{1} << (bits - 1)) + 1;  // residues below q fit in `bits` bits
    for (std::size_t at : {std::size_t{0}, std::size_t{1}, std::size_t{500}, std::size_t{1022}, std::size_t{1023}}) {
      std::vector<u64> values(1024);
      for (auto& x : values) x = rng() % q;
      for (u64 bad : {q, (u64{1} << bits) - 1}) {
        values[at] = bad;
        std::vector<std::uint8_t> packed(packed_bytes(values.size(), bits));
        pack_residues(values.data(), values.size(), bits, packed.data());
        std::vector<u64> back(values.size());
        EXPECT_FALSE(unpack_residues(packed.data(), values.size(), bits, q, back.data()))
            << bits << " bits, " << bad << " at " << at;
        EXPECT_EQ(back[at], bad);  // unpacked whole, then refused
      }
      values[at] = q - 1;
      std::vector<std::uint8_t> packed(packed_bytes(values.size(), bits));
      pack_residues(values.data(), values.size(), bits, packed.data());
      std::vector<u64> back(values.size());
      EXPECT_TRUE(unpack_residues(packed.data(), values.size(), bits, q, back.data()));
    }
  }
}

// Unpacking reads no byte past its input (see pack_before_a_guard_page).
TEST(BitPack, UnpackingReadsNothingPastItsInput) {
  pack_before_a_guard_page(9, [](const std::vector<u64>& values, unsigned bits, const std::uint8_t* in) {
    std::vector<u64> back(values.size());
    const u64 bound = bits == 64 ? ~u64{0} : u64{1} << bits;
    unpack_residues(in, values.size(), bits, bound, back.data());
    ASSERT_EQ(back, values) << bits << " bits, " << values.size() << " residues";
  });
}

}  // namespace
}  // namespace ringfire::io
