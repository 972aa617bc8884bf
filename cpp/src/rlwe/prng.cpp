#include "ringfire/rlwe/prng.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "prng_avx512.h"
#include "ringfire/base/fork.h"
#include "ringfire/rlwe/chacha20.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#if defined(__linux__) && __has_include(<sys/random.h>)
#include <sys/random.h>
#define RINGFIRE_HAS_GETRANDOM 1
#else
#define RINGFIRE_HAS_GETRANDOM 0
#endif

namespace ringfire {
namespace {

// Fills out[0, n) from getrandom(2). Returns 0 on success, else the errno.
int read_getrandom(std::uint8_t* out, std::size_t n) {
#if RINGFIRE_HAS_GETRANDOM
  std::size_t got = 0;
  while (got < n) {
    // Flags 0: block until the pool is initialised, never return weak bytes.
    const ssize_t r = getrandom(out + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    got += static_cast<std::size_t>(r);
  }
  return 0;
#else
  (void)out;
  (void)n;
  return ENOSYS;
#endif
}

// Fills out[0, n) from /dev/urandom. Returns 0 on success, else the errno.
int read_dev_urandom(std::uint8_t* out, std::size_t n) {
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  std::size_t got = 0;
  int err = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, out + got, n - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      err = errno;
      break;
    }
    if (r == 0) {  // a truncated device: never accept a short seed
      err = EIO;
      break;
    }
    got += static_cast<std::size_t>(r);
  }
  ::close(fd);
  return err;
}

}  // namespace

void secure_zero(void* p, std::size_t n) {
  if (n == 0) return;
  // memset at full speed (these buffers reach megabytes: a decryption's
  // m + e), then a compiler barrier that claims to read the memory, so the
  // stores cannot be removed as dead (what glibc's explicit_bzero does).
  std::memset(p, 0, n);
  asm volatile("" : : "r"(p) : "memory");
}

Prng::Prng(const Seed& seed) { set_key(seed); }

void Prng::set_key(const Seed& seed) {
  seed_ = seed;
  for (int i = 0; i < 8; ++i)
    key_words_[i] = static_cast<std::uint32_t>(seed[4 * i]) |
                    (static_cast<std::uint32_t>(seed[4 * i + 1]) << 8) |
                    (static_cast<std::uint32_t>(seed[4 * i + 2]) << 16) |
                    (static_cast<std::uint32_t>(seed[4 * i + 3]) << 24);
}

Prng::~Prng() {
  secure_zero(seed_.data(), seed_.size());
  secure_zero(key_words_, sizeof(key_words_));
  secure_zero(buffer_.data(), buffer_.size());
}

Prng Prng::from_seed(const Seed& seed) { return Prng(seed); }

Prng Prng::from_seed_at(const Seed& seed, std::uint64_t position) {
  Prng prng(seed);
  prng.next_block_ = position / kChaCha20BlockBytes;
  if (position % kChaCha20BlockBytes != 0) {
    prng.refill();  // the buffer starts at the position's block
    prng.pos_ = static_cast<std::size_t>(position % kChaCha20BlockBytes);
  }
  return prng;
}

Prng Prng::from_os() {
  Prng prng(Seed{});
  prng.reseed_from_os();
  prng.reseeds_on_fork_ = true;
  return prng;
}

void Prng::reseed_from_os() {
  Seed seed{};
  const int getrandom_err = read_getrandom(seed.data(), seed.size());
  if (getrandom_err != 0) {
    const int urandom_err = read_dev_urandom(seed.data(), seed.size());
    if (urandom_err != 0) {
      throw std::runtime_error(
          "[rlwe.Prng.from_os] cannot seed from the operating system: getrandom(2) failed (" +
          std::string(std::strerror(getrandom_err)) + ") and /dev/urandom could not be read (" +
          std::string(std::strerror(urandom_err)) + ")");
    }
  }
  set_key(seed);
  secure_zero(seed.data(), seed.size());
  secure_zero(buffer_.data(), buffer_.size());
  next_block_ = 0;
  pos_ = kBufferBytes;
  fork_generation_ = fork_generation();
}

void Prng::reseed_if_forked() {
  if (fork_generation() != fork_generation_) reseed_from_os();
}

void Prng::generate(std::uint8_t* out, std::size_t blocks) {
  while (blocks > 0) {
    // Block index i -> counter i mod 2^32, nonce word 0 = i / 2^32 (header).
    // A run never crosses a counter wrap, so chacha20_blocks sees one nonce.
    const auto counter = static_cast<std::uint32_t>(next_block_);
    const std::uint64_t before_wrap = (std::uint64_t{1} << 32) - counter;
    const std::size_t run = static_cast<std::size_t>(std::min<std::uint64_t>(blocks, before_wrap));
    const std::uint32_t nonce_words[3] = {static_cast<std::uint32_t>(next_block_ >> 32), 0, 0};
    chacha20_blocks(key_words_, counter, nonce_words, out, run);
    next_block_ += run;
    out += run * kChaCha20BlockBytes;
    blocks -= run;
  }
}

void Prng::refill() {
  generate(buffer_.data(), kBufferBytes / kChaCha20BlockBytes);
  pos_ = 0;
}

void Prng::fill(std::uint8_t* out, std::size_t n) {
  if (reseeds_on_fork_) reseed_if_forked();
  while (n > 0) {
    if (pos_ == kBufferBytes) {
      // Buffer empty and a large request: write whole blocks straight to the
      // caller (same bytes, no copy), then buffer only the tail.
      if (n >= kBufferBytes) {
        const std::size_t blocks = n / kChaCha20BlockBytes;
        generate(out, blocks);
        out += blocks * kChaCha20BlockBytes;
        n -= blocks * kChaCha20BlockBytes;
        continue;
      }
      refill();
    }
    const std::size_t take = std::min(n, kBufferBytes - pos_);
    std::memcpy(out, buffer_.data() + pos_, take);
    pos_ += take;
    out += take;
    n -= take;
  }
}

namespace {

#if defined(__AVX2__)
// Where a lane of four words lands when the lanes `keep` (bit i: word i) are packed to
// the front: the two 32-bit halves of each kept word in order, the others after them.
struct PackIndices {
  alignas(32) std::int32_t lanes[16][8];
  constexpr PackIndices() : lanes{} {
    for (int keep = 0; keep < 16; ++keep) {
      int at = 0;
      for (int pass = 0; pass < 2; ++pass)
        for (int word = 0; word < 4; ++word)
          if (((keep >> word) & 1) == (pass == 0 ? 1 : 0)) {
            lanes[keep][at++] = 2 * word;
            lanes[keep][at++] = 2 * word + 1;
          }
    }
  }
};
constexpr PackIndices kPack;

// uniform_below_many's step four words at a time: each masked candidate kept when
// below `bound` (a signed compare, so bounds below 2^63 only), the kept ones packed to
// the front and stored whole at out + done. The words past the kept ones land inside
// `wanted` (the loop's bound) and the next words overwrite them. Returns the words read.
std::size_t accept_below_avx2(const std::uint8_t* words, std::size_t available, std::uint64_t mask,
                              std::uint64_t bound, std::uint64_t* out, std::size_t& done, std::size_t wanted) {
  if (bound >> 63) return 0;
  const __m256i masks = _mm256_set1_epi64x(static_cast<long long>(mask));
  const __m256i bounds = _mm256_set1_epi64x(static_cast<long long>(bound));
  std::size_t used = 0;
  for (; used + 4 <= available && done + 4 <= wanted; used += 4) {
    const __m256i w =
        _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + 8 * used)), masks);
    const int keep = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(bounds, w)));
    const __m256i order = _mm256_load_si256(reinterpret_cast<const __m256i*>(kPack.lanes[keep]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + done), _mm256_permutevar8x32_epi32(w, order));
    done += static_cast<std::size_t>(__builtin_popcount(static_cast<unsigned>(keep)));
  }
  return used;
}
#else
std::size_t accept_below_avx2(const std::uint8_t*, std::size_t, std::uint64_t, std::uint64_t, std::uint64_t*,
                              std::size_t&, std::size_t) {
  return 0;  // built without AVX2: the word-at-a-time loop takes every word
}
#endif
}  // namespace

void Prng::uniform_below_many(std::uint64_t bound, std::uint64_t* out, std::size_t count) {
  if (bound <= 1) {
    require(bound == 1, "rlwe.Prng.uniform_below", "bound must be at least 1");
    std::fill(out, out + count, std::uint64_t{0});
    return;
  }
  if (reseeds_on_fork_) reseed_if_forked();
  const std::uint64_t mask = ~std::uint64_t{0} >> std::countl_zero(bound - 1);
  const bool avx512 = detail::prng_avx512_available();
  std::size_t done = 0;
  while (done < count) {
    if (pos_ == kBufferBytes) refill();
    if (kBufferBytes - pos_ < 8) {  // a word straddling two refills: the one-value path
      out[done++] = uniform_below(bound);
      continue;
    }
    // Every whole word left in the buffer, stopping once `count` are accepted: the
    // candidate is always written, and kept by advancing only when it is below bound.
    const std::uint8_t* words = buffer_.data() + pos_;
    const std::size_t available = (kBufferBytes - pos_) / 8;
    std::size_t used = avx512 ? detail::accept_below_avx512(words, available, mask, bound, out, done, count)
                              : accept_below_avx2(words, available, mask, bound, out, done, count);
    for (; used < available && done < count; ++used) {
      const std::uint64_t x = load_le64(words + 8 * used) & mask;
      out[done] = x;
      done += x < bound;
    }
    pos_ += 8 * used;
  }
}

Prng::Seed Prng::next_seed() {
  Seed child;
  fill(child.data(), child.size());
  return child;
}

}  // namespace ringfire
