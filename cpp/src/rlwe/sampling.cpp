#include "ringfire/rlwe/sampling.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ringfire/base/errors.h"
#include "ringfire/rlwe/prng.h"

namespace ringfire {
namespace {

using u64 = std::uint64_t;

// Bytes drawn per round by sample_ternary (stack scratch).
constexpr std::size_t kTernaryChunk = 4096;
// Samples per sign word in sample_gaussian.
constexpr std::size_t kGaussianGroup = 64;

// 2^64 * x for x in [0, 1/2], rounded to nearest.
u64 to_fixed64(double x) { return static_cast<u64>(std::round(std::ldexp(x, 64))); }

// The CDT of |x| for D_{Z,sigma} cut at bound = floor(6 sigma):
// T[k] ~ 2^64 * P(|x| <= k) for k = 0 .. bound-1 (P(|x| <= bound) = 1 is
// implicit). Entries below 1/2 come from the head sum and the others as
// 2^64 - (tail sum), so the tiny tail probabilities keep their relative
// precision instead of vanishing in 1 - epsilon.
std::vector<u64> gaussian_cdt(double sigma, std::size_t bound) {
  std::vector<double> p(bound + 1);
  const double two_sigma_sq = 2.0 * sigma * sigma;
  double total = 0.0;
  for (std::size_t k = 0; k <= bound; ++k) {
    const double kk = static_cast<double>(k);
    // |x| = k > 0 collects both x = k and x = -k.
    p[k] = (k == 0 ? 1.0 : 2.0) * std::exp(-kk * kk / two_sigma_sq);
    total += p[k];
  }
  for (double& v : p) v /= total;

  std::vector<double> tail(bound + 2, 0.0);  // tail[k] = P(|x| >= k)
  for (std::size_t k = bound + 1; k-- > 0;) tail[k] = tail[k + 1] + p[k];

  std::vector<u64> table(bound);
  double head = 0.0;  // P(|x| <= k)
  for (std::size_t k = 0; k < bound; ++k) {
    head += p[k];
    table[k] = head <= 0.5 ? to_fixed64(head) : u64{0} - to_fixed64(tail[k + 1]);
  }
  return table;
}

}  // namespace

void sample_ternary(Prng& prng, std::int8_t* out, std::size_t n) {
  std::uint8_t bytes[kTernaryChunk];
  std::size_t produced = 0;
  while (produced < n) {
    // Draw exactly as many bytes as values still missing: the accepted ones
    // are written in order, the rest of the stream is left untouched.
    const std::size_t m = std::min(n - produced, kTernaryChunk);
    prng.fill(bytes, m);
    for (std::size_t i = 0; i < m; ++i) {
      const unsigned b = bytes[i];
      // b % 3 by a constant is a multiply and shift (no data-dependent
      // timing). The slot is always written — produced + i < n here — and only
      // advanced for an accepted byte, so there is no branch on b at all.
      out[produced] = static_cast<std::int8_t>(static_cast<int>(b % 3u) - 1);
      produced += static_cast<std::size_t>(b != 255u);
    }
  }
  // Scratch held secret key material.
  volatile std::uint8_t* wipe = bytes;
  for (std::size_t i = 0; i < sizeof(bytes); ++i) wipe[i] = 0;
}

void sample_sparse_ternary(Prng& prng, std::int8_t* out, std::size_t n, std::size_t weight) {
  require(weight >= 1 && weight <= n, "rlwe.sample_sparse_ternary",
          "the Hamming weight must be in [1, " + std::to_string(n) + "], got " + std::to_string(weight));
  std::vector<std::uint32_t> index(n);
  for (std::size_t i = 0; i < n; ++i) index[i] = static_cast<std::uint32_t>(i);
  std::fill(out, out + n, std::int8_t{0});
  for (std::size_t i = 0; i < weight; ++i) {
    const std::size_t j = i + static_cast<std::size_t>(prng.uniform_below(n - i));
    std::swap(index[i], index[j]);
    out[index[i]] = static_cast<std::int8_t>((prng.next_u64() & 1) ? 1 : -1);
  }
  volatile std::uint32_t* wipe = index.data();
  for (std::size_t i = 0; i < weight; ++i) wipe[i] = 0;
}

void sample_gaussian(Prng& prng, std::int64_t* out, std::size_t n, double sigma) {
  require(std::isfinite(sigma) && sigma > 0.0 && sigma <= kMaxGaussianSigma, "rlwe.sample_gaussian",
          "sigma must be in (0, " + std::to_string(static_cast<int>(kMaxGaussianSigma)) + "], got " +
              std::to_string(sigma));
  const auto bound = static_cast<std::size_t>(std::floor(kGaussianTailCut * sigma));
  const std::vector<u64> table = gaussian_cdt(sigma, bound);

  u64 words[1 + kGaussianGroup];
  u64 magnitude[kGaussianGroup];
  for (std::size_t start = 0; start < n; start += kGaussianGroup) {
    const std::size_t count = std::min(kGaussianGroup, n - start);
    prng.fill(reinterpret_cast<std::uint8_t*>(words), (1 + count) * 8);
    // fill() wrote bytes; the stream layout reads them as little-endian words.
    if constexpr (std::endian::native != std::endian::little) {
      for (std::size_t i = 0; i <= count; ++i) {
        const auto* b = reinterpret_cast<const std::uint8_t*>(&words[i]);
        u64 v = 0;
        for (int j = 7; j >= 0; --j) v = (v << 8) | b[j];
        words[i] = v;
      }
    }
    const u64 signs = words[0];
    const u64* r = words + 1;
    // Full-table scan, table entry outer so the inner loop over samples is a
    // branch-free vector compare-and-add.
    for (std::size_t j = 0; j < count; ++j) magnitude[j] = 0;
    for (const u64 t : table)
      for (std::size_t j = 0; j < count; ++j) magnitude[j] += static_cast<u64>(r[j] >= t);
    for (std::size_t j = 0; j < count; ++j) {
      const auto m = static_cast<std::int64_t>(magnitude[j]);
      const auto neg = -static_cast<std::int64_t>((signs >> j) & 1u);  // 0 or all ones
      out[start + j] = (m ^ neg) - neg;                                  // m or -m
    }
  }
  volatile u64* wipe_words = words;
  for (std::size_t i = 0; i < 1 + kGaussianGroup; ++i) wipe_words[i] = 0;
  volatile u64* wipe_mag = magnitude;
  for (std::size_t i = 0; i < kGaussianGroup; ++i) wipe_mag[i] = 0;
}

void sample_wide_gaussian(Prng& prng, double* out, std::size_t n, double sigma) {
  require(sigma >= 0.0 && std::isfinite(sigma), "rlwe.sample_wide_gaussian",
          "sigma must be finite and non-negative, got " + std::to_string(sigma));
  // Marsaglia's polar method on candidate pairs drawn in batches: as many pairs as the outputs
  // still missing would take were every pair kept, so the batches read the stream exactly as far
  // as drawing pair by pair does, and give the same values. The logarithms one at a time (the C
  // library has no vector logarithm without -ffast-math); the rest in loops the compiler
  // vectorizes (this file is compiled without errno for the square roots; a decryption's
  // flooding took a fifth of it, pair by pair).
  constexpr std::size_t kPairs = 256;
  std::uint8_t bytes[16 * kPairs];
  double u[kPairs], v[kPairs], s[kPairs], factor[kPairs];
  // 53 random bits, signed: [-1, 1) in steps of 2^-52, from the stream's next little-endian word.
  const auto uniform = [&bytes](std::size_t word) {
    u64 w;
    std::memcpy(&w, bytes + 8 * word, 8);
    if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
    return static_cast<double>(static_cast<std::int64_t>(w) >> 11) * 0x1p-52;
  };
  for (std::size_t i = 0; i < n;) {
    const std::size_t pairs = std::min(kPairs, (n - i + 1) / 2);
    prng.fill(bytes, 16 * pairs);
    std::size_t kept = 0;
    for (std::size_t p = 0; p < pairs; ++p) {
      // Fused as written (as the compiler fused it before): the same bits on every target.
      const double a = uniform(2 * p), b = uniform(2 * p + 1), t = std::fma(a, a, b * b);
      u[kept] = a;
      v[kept] = b;
      s[kept] = t;
      kept += (t < 1.0 && t != 0.0) ? 1 : 0;  // outside the unit disc (or its centre): dropped
    }
    for (std::size_t p = 0; p < kept; ++p) factor[p] = std::log(s[p]);
    for (std::size_t p = 0; p < kept; ++p) factor[p] = sigma * std::sqrt(-2.0 * factor[p] / s[p]);
    for (std::size_t p = 0; p < kept && i < n; ++p) {
      out[i++] = u[p] * factor[p];
      if (i < n) out[i++] = v[p] * factor[p];
    }
  }
  secure_zero(bytes, sizeof bytes);
  secure_zero(u, sizeof u);
  secure_zero(v, sizeof v);
  secure_zero(s, sizeof s);
  secure_zero(factor, sizeof factor);
}

void sample_uniform(Prng& prng, const RnsBase& base, std::uint64_t* out) {
  const std::size_t n = base.n();
  for (std::size_t i = 0; i < base.size(); ++i) {
    prng.uniform_below_many(base.modulus(i).value(), out + i * n, n);
  }
}

void ternary_to_rns(const std::int8_t* s, std::size_t n, const RnsBase& base, std::uint64_t* out) {
  for (std::size_t i = 0; i < base.size(); ++i) {
    const u64 q = base.modulus(i).value();
    u64* row = out + i * n;
    for (std::size_t j = 0; j < n; ++j) {
      const auto v = static_cast<std::int64_t>(s[j]);
      // v < 0: the sign mask selects q, and (2^64 + v) + q wraps to q + v.
      const u64 negative_mask = static_cast<u64>(v >> 63);
      row[j] = static_cast<u64>(v) + (q & negative_mask);
    }
  }
}

void signed_to_rns(const std::int64_t* e, std::size_t n, const RnsBase& base, std::uint64_t* out) {
  u64 too_large = 0;
  for (std::size_t i = 0; i < base.size(); ++i) {
    const u64 q = base.modulus(i).value();
    u64* row = out + i * n;
    for (std::size_t j = 0; j < n; ++j) {
      const std::int64_t v = e[j];
      const u64 negative_mask = static_cast<u64>(v >> 63);
      // |v| without a branch (INT64_MIN gives 2^63, which is >= any q).
      const u64 magnitude = (static_cast<u64>(v) ^ negative_mask) - negative_mask;
      too_large |= static_cast<u64>(magnitude >= q);
      row[j] = static_cast<u64>(v) + (q & negative_mask);
    }
  }
  // One check after the loops: it reveals only that some input was out of
  // range (a caller bug), not which one.
  require(too_large == 0, "rlwe.signed_to_rns",
          "a value has magnitude >= some modulus q_i; only |e| < q_i can be mapped");
}

}  // namespace ringfire
