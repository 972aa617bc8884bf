// Keys of the 64-bit torus engine (torus_params.h): the client's binary
// secrets, the key switch from the big key z to the small key s, and the
// bootstrapping key (RGSW encryptions of s under z, kept in the FFT domain).
//
// Conventions: an LWE ciphertext of dimension d is d + 1 words mod 2^64,
// a[0..d) then b, with phase b - <a, key>. A GLWE pair (A, B) has phase
// B - A z in Z_{2^64}[X]/(X^N + 1).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ringfire/rlwe/prng.h"
#include "ringfire/tfhe/key_buffer.h"
#include "ringfire/tfhe/negacyclic_fft.h"
#include "ringfire/tfhe/torus_params.h"

namespace ringfire::tfhe {

using u64 = std::uint64_t;

// A TUniform(2^bound_log2) sample: an integer in [-2^b, 2^b], the ends at half weight.
std::int64_t sample_tuniform(Prng& prng, unsigned bound_log2);

class TorusSecretKey {
 public:
  TorusSecretKey(const TorusParams& params, Prng& prng);
  // A saved key: s (n bits) and z (N bits), each 0 or 1.
  TorusSecretKey(const TorusParams& params, const std::vector<std::uint8_t>& s, const std::vector<std::uint8_t>& z);
  ~TorusSecretKey();
  TorusSecretKey(const TorusSecretKey&) = delete;
  TorusSecretKey& operator=(const TorusSecretKey&) = delete;

  const TorusParams& params() const { return params_; }
  const std::vector<std::uint8_t>& lwe() const { return s_; }
  const std::vector<std::uint8_t>& ring() const { return z_; }

  // count ciphertexts (count x (N + 1) words) of mu under z, TUniform(glwe) errors.
  void encrypt(const u64* mu, std::size_t count, u64* out, Prng& prng) const;
  // b - <a, z> of count ciphertexts of dimension N.
  void phases(const u64* cts, std::size_t count, u64* out) const;
  // b - <a, s> of count ciphertexts of dimension n (the key switch's output).
  void small_phases(const u64* cts, std::size_t count, u64* out) const;

 private:
  TorusParams params_;
  std::vector<std::uint8_t> s_, z_;
};

// A block of the key switch's table: sixteen words t of four rows (four
// consecutive rows of the (j, l) order), each word's top 24 bits w, rounded, split
// as w = low + high 2^16 (mod 2^24) with low a signed 16-bit number and high
// a byte. In the order the products read them (pmaddwd / pmaddubsw):
// low[lane][2] for rows 0 and 1, then for rows 2 and 3, then
// high[lane][4]: 192 bytes. o[t] -= sum_l d_l w_l 2^8 (mod 2^32) needs two
// pair products of the lows and one quad product of the highs per lane.
struct KeySwitchBlock {
  static constexpr std::size_t kLanes = 16, kRows = 4;
  std::int16_t low01[kLanes][2];
  std::int16_t low23[kLanes][2];
  std::uint8_t high[kLanes][kRows];
  // sum_l d_l w_l (mod 2^32) of lane k; shift by 8 for the table's words. The
  // lane's fields are read as three little-endian 32-bit words: the lows' pair
  // (sign-extended halves) and the four highs.
  std::uint32_t sum(std::size_t k, const std::uint32_t* d) const {
    std::uint32_t p01, p23, q;
    std::memcpy(&p01, low01[k], 4);
    std::memcpy(&p23, low23[k], 4);
    std::memcpy(&q, high[k], 4);
    const auto low = [](std::uint32_t p) { return static_cast<std::uint32_t>(static_cast<std::int32_t>(p << 16) >> 16); };
    const auto high_half = [](std::uint32_t p) { return static_cast<std::uint32_t>(static_cast<std::int32_t>(p) >> 16); };
    const std::uint32_t lows = d[0] * low(p01) + d[1] * high_half(p01) + d[2] * low(p23) + d[3] * high_half(p23);
    const std::uint32_t highs =
        d[0] * (q & 0xFFu) + d[1] * ((q >> 8) & 0xFFu) + d[2] * ((q >> 16) & 0xFFu) + d[3] * (q >> 24);
    return lows + (highs << 16);
  }
};
static_assert(sizeof(KeySwitchBlock) == 192);
static_assert(std::endian::native == std::endian::little, "KeySwitchBlock reads its lanes as little-endian words");

// LWE_s(z_j 2^(64 - B l)) for every coefficient j < N and level l <= L:
// N x L rows of n + 1 words. apply() subtracts digit x row for each digit of
// each a_j (signed digits, the low 64 - B L bits rounded away).
//
// Every row's a is expanded from one public seed (rows in order, n words
// each), so the key travels as the seed and the N L bodies (64 KB for
// STD128_T64) and is expanded again where it is loaded.
//
// The rows are kept as their top 24 bits, rounded, and the key switch runs
// mod 2^32: its output is only ever switched down to 2N <= 2^15, and the
// rounding adds an error of at most 2^7 units of 2^32 per row there (a
// variance of N L E[d^2] 2^16 / 12 units of 2^32, about 2^-34 of the torus
// for the presets, a 2^-13th of the key switch's own), while the table a
// bootstrap streams is 0.76 of the 32-bit words' (23 MB for STD128_T64; a
// lone lookup's key switch reads all of it). The words sit in blocks of
// sixteen words of four consecutive rows (KeySwitchBlock; words past n are
// zero), whose products take three multiply-add instructions per sixteen
// lanes of four rows. The 24-bit rows are computed from the 64-bit
// ones, which are public: they cannot be easier to attack than those.
class TorusKeySwitchKey {
 public:
  TorusKeySwitchKey(const TorusSecretKey& key, Prng& prng);
  // From its seed and bodies (bodies(): N L words), as saved.
  TorusKeySwitchKey(const TorusParams& params, const Prng::Seed& seed, const u64* bodies);
  // in: N + 1 words mod 2^64 under z; out: n + 1 words mod 2^32 under s.
  void apply(const u64* in, std::uint32_t* out) const;
  // count ciphertexts at once (count x (N + 1) words in, count x (n + 1) out):
  // each row of the table is read from memory once per kBatchLimit of them
  // (their outputs, 32 x 3.7 KB at STD128_T64, stay in the level-2 cache; the
  // table, 23 MB, is read four rows at a time: eight ciphertexts a read left
  // the key switch bound by the table's stream on the Xeon, BENCHMARKS.md).
  static constexpr std::size_t kBatchLimit = 32;
  void apply_many(const u64* in, std::size_t count, std::uint32_t* out) const;
  std::size_t bytes() const { return rows_.size() * sizeof(KeySwitchBlock) + words_.size() * sizeof(std::uint32_t); }
  // Bits of each table word kept (its top ones, rounded): the noise model's.
  static constexpr unsigned kWordBits = 24;
  const Prng::Seed& seed() const { return seed_; }
  const std::vector<u64>& bodies() const { return bodies_; }

 private:
  // Expands every row's a from seed_ and rounds the rows to 24 bits, with bodies_ as b.
  void expand();

  // o -= rows first_row .. first_row + 3 (first_row a multiple of 4) times digits d, on
  // isa_'s lanes.
  void subtract_four_rows(std::uint32_t* o, std::size_t first_row, const std::uint32_t* d) const;

  TorusParams params_;
  Prng::Seed seed_{};
  std::vector<u64> bodies_;  // [j][l]
  std::size_t blocks_per_row_ = 0;  // ceil((n + 1) / 16)
  KeyBuffer<KeySwitchBlock> rows_;  // vector ISAs: [four rows of the (j, l) order][block]
  // The scalar ISA: the same 24-bit words as plain rows, [j L + l][n + 1] words w 2^8
  // (compilers vectorize a plain row loop; the blocks' interleaved fields took 1.9x as long).
  KeyBuffer<std::uint32_t> words_;
  // How apply_many's products run: sixteen lanes (AVX-512), eight (AVX2) or
  // one word at a time; default_isa() when the key is made, one word at a
  // time for bases above 2^7 (the highs' byte products sum pairs in 16 bits:
  // 2 x 255 x 2^6 fits, 2 x 255 x 2^7 does not).
  Isa isa_ = Isa::scalar;
};

// RGSW(s_i) under z for each i < n (multi-bit sets: RGSW([group k's bits
// are p]) for each group k < n / g and pattern p in [1, 2^g), count
// TorusParams::bootstrap_key_count(); below, s_i stands for either message),
// in the FFT domain: rows (component c,
// level l) are GLWE pairs whose phase is -s_i g_l z + e (c = 0, the mask's)
// or s_i g_l + e (c = 1, the body's), g_l = 2^(64 - B l). Both messages sit
// in B (B = A z + e - s_i g_l z for c = 0, rather than adding s_i g_l to A:
// the same phase, so the same external product), so every A is expanded from
// one public seed (rows in order i, c, l) and the key travels as the seed and
// the B polynomials: count 2L N words (30 MB for STD128_T64).
//
// In memory the transforms are laid out for the blind rotation, which reads
// the keys of one step (one coefficient, or one group's 2^g - 1 patterns)
// point by point: per step, per block of lanes() points, [pattern][row c L +
// l][A re, A im, B re, B im][lanes()] doubles -- one sequential stream per
// step. (Row by row, a group's 24 streams 8 KiB apart thrashed the level-1
// cache's sets and the prefetchers: a multi-bit step ran at half the speed
// of memory.)
class TorusBootstrapKey {
 public:
  TorusBootstrapKey(const TorusSecretKey& key, const NegacyclicFft& fft, Prng& prng);
  // From its seed and bodies (bodies(): count 2L N words), as saved.
  TorusBootstrapKey(const TorusParams& params, const NegacyclicFft& fft, const Prng::Seed& seed, const u64* bodies);
  // Points per block: four, or eight where the transform runs on AVX-512
  // (NegacyclicFft::wide), whose products then read eight at a time.
  static constexpr std::size_t kNarrowLanes = 4, kWideLanes = 8;
  std::size_t lanes() const { return lanes_; }
  // The keys of step t (coefficient t, or group t's patterns), laid out as above.
  const double* step(std::size_t t) const { return data_.data() + t * step_stride_; }
  std::size_t step_bytes() const { return step_stride_ * sizeof(double); }
  // Bytes in memory: the transformed rows and the bodies kept for saving.
  std::size_t bytes() const { return data_.size() * sizeof(double) + bodies_.size() * sizeof(u64); }
  const Prng::Seed& seed() const { return seed_; }
  const std::vector<u64>& bodies() const { return bodies_; }

 private:
  // Expands every A from seed_ and transforms it and its body from bodies_.
  void expand(const NegacyclicFft& fft);

  TorusParams params_;
  Prng::Seed seed_{};
  std::size_t patterns_ = 1, step_stride_ = 0, lanes_ = kNarrowLanes;
  std::vector<u64> bodies_;  // [i][c L + l][N]
  KeyBuffer<double> data_;
};

// out = a z exactly (mod 2^64, negacyclic) for a binary z given by its
// transform (z_re, z_im): a is split into 16-bit pieces whose products with
// z (below 2^16 N) come back exact from a double-precision transform.
void multiply_by_binary(const NegacyclicFft& fft, const u64* a, const double* z_re, const double* z_im, u64* out);

}  // namespace ringfire::tfhe
