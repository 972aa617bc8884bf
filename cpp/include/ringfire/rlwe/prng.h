// Prng: a cryptographically secure generator built on ChaCha20 (RFC 8439),
// seeded either from the operating system or from a 32-byte seed.
//
// Stream layout (a stable format: seeds expanded into the uniform `a` of keys
// and ciphertexts must give the same polynomial on every platform and in every
// version, so this must never change):
//   The generator's output is the byte string  B(0) || B(1) || B(2) || ...
//   where B(i) = ChaCha20_block(key = seed,
//                               counter = i mod 2^32,
//                               nonce = LE32(floor(i / 2^32)) || 0x00 * 8)
//   i.e. the RFC 8439 keystream with key = seed, nonce = 0 and counter 0, 1, 2,
//   ...; after 2^32 blocks (256 GiB) the first nonce word counts on.
//   Every call consumes the next bytes of that string, in call order:
//   - fill(out, n):      the next n bytes;
//   - next_u64():        the next 8 bytes, read little-endian;
//   - uniform_below(b):  next_u64() & m, repeated until the value is < b, with
//                        m = 2^len(b-1) - 1 (m = 0 and no draw when b = 1);
//   - next_seed():       the next 32 bytes.
//   How the bytes are buffered internally has no effect on the values.
//
// A Prng is move-only: a copy would replay the same stream, which would reuse
// secret randomness. Fork independent streams with from_seed(next_seed()).
// Not thread-safe; use one Prng per thread.
//
// Process forks: a child process inherits a copy of every generator, which
// would replay the parent's stream there (the same encryption randomness in
// both processes, the same keys generated after the fork). A generator made
// by from_os() therefore reseeds itself from the operating system the first
// time it is used in a forked child (base/fork.h). A generator made by
// from_seed() keeps its stream in the child: it is deterministic by request.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ringfire/base/errors.h"

namespace ringfire {

// Zeroes memory that held secrets (volatile stores the optimiser keeps), e.g.
// before a buffer goes back to a pool.
void secure_zero(void* p, std::size_t n);

class Prng {
 public:
  using Seed = std::array<std::uint8_t, 32>;

  // Bytes of keystream generated per refill (16 ChaCha20 blocks): large
  // enough for the multi-block kernel, small enough to stay in L1.
  static constexpr std::size_t kBufferBytes = 16 * 64;

  // A fresh seed of 32 bytes from getrandom(2), or /dev/urandom where that
  // system call is unavailable. Raises std::runtime_error when neither works.
  static Prng from_os();
  // A deterministic generator: the same seed gives the same stream (layout
  // above) on every platform.
  static Prng from_seed(const Seed& seed);
  // The generator from_seed(seed) is after consuming `position` bytes (the
  // stream is seekable: ChaCha20 computes any block directly).
  static Prng from_seed_at(const Seed& seed, std::uint64_t position);

  Prng(Prng&& other) noexcept = default;
  Prng& operator=(Prng&& other) noexcept = default;
  Prng(const Prng&) = delete;
  Prng& operator=(const Prng&) = delete;
  // Wipes the seed, key and buffered keystream.
  ~Prng();

  // The seed this generator was created from. It determines the whole stream:
  // treat it as secret unless the stream is meant to be public.
  const Seed& seed() const { return seed_; }

  // Whether the stream is fixed by its seed (from_seed, which includes children
  // seeded from another generator): it is kept across forks, and what derives
  // from it is reproducible exactly when that seed is (from_os: false).
  bool deterministic() const { return !reseeds_on_fork_; }

  // Total bytes consumed so far (the position in the stream above).
  std::uint64_t position() const { return next_block_ * 64 - (kBufferBytes - pos_); }

  // Writes the next n bytes of the stream to out.
  void fill(std::uint8_t* out, std::size_t n);

  // The next 8 bytes of the stream as a little-endian integer.
  std::uint64_t next_u64() {
    if (reseeds_on_fork_) reseed_if_forked();
    if (kBufferBytes - pos_ >= 8) {
      const std::uint64_t v = load_le64(buffer_.data() + pos_);
      pos_ += 8;
      return v;
    }
    std::uint8_t bytes[8];
    fill(bytes, 8);
    return load_le64(bytes);
  }

  // Uniform in [0, bound), without bias: draws next_u64() masked to the
  // smallest power of two >= bound and rejects values >= bound (fewer than 2
  // draws on average). The rejections depend only on discarded randomness, so
  // the returned value's timing reveals nothing about it.
  // Raises InvalidArgument when bound == 0.
  std::uint64_t uniform_below(std::uint64_t bound) {
    if (bound <= 1) {
      require(bound == 1, "rlwe.Prng.uniform_below", "bound must be at least 1");
      return 0;
    }
    const std::uint64_t mask = ~std::uint64_t{0} >> std::countl_zero(bound - 1);
    for (;;) {
      const std::uint64_t x = next_u64() & mask;
      if (x < bound) return x;
    }
  }

  // out[i] = uniform_below(bound) for i = 0..count-1, in that order: the same
  // values and the same stream position as the loop, several times faster (the
  // words are read straight from the keystream buffer, rejections without a branch).
  // Raises InvalidArgument when bound == 0.
  void uniform_below_many(std::uint64_t bound, std::uint64_t* out, std::size_t count);

  // A child seed: the next 32 bytes of the stream. from_seed(next_seed())
  // gives a generator independent of this one's later output.
  Seed next_seed();

 private:
  explicit Prng(const Seed& seed);

  // In a forked child, replaces an OS-seeded stream by a fresh one.
  void reseed_if_forked();
  void reseed_from_os();
  void set_key(const Seed& seed);

  static std::uint64_t load_le64(const std::uint8_t* p) {
    std::uint64_t v;
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(&v, p, 8);
    } else {
      v = 0;
      for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    }
    return v;
  }

  // Writes `blocks` whole blocks starting at next_block_ and advances it.
  void generate(std::uint8_t* out, std::size_t blocks);
  void refill();

  Seed seed_{};
  std::uint32_t key_words_[8] = {};
  std::uint64_t next_block_ = 0;  // index i of the next block B(i) to generate
  std::size_t pos_ = kBufferBytes;  // read position in buffer_; kBufferBytes = empty
  alignas(64) std::array<std::uint8_t, kBufferBytes> buffer_{};
  bool reseeds_on_fork_ = false;        // OS-seeded
  std::uint64_t fork_generation_ = 0;  // fork_generation() when last seeded
};

}  // namespace ringfire
