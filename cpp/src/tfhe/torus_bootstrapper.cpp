#include "ringfire/tfhe/torus_bootstrapper.h"

#include <algorithm>
#include <bit>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "ringfire/base/errors.h"
#include "ringfire/base/parallel.h"

namespace ringfire::tfhe {

namespace {

// sums[o] = sum_r spectra[r] * key[r][o] for the two output polynomials o, in
// one pass over the key (rows x 2 polynomials x (re, im) x M doubles): the
// key is streamed from memory once per step, and the sums never are.
void external_product_sums(const double* __restrict spectra, const double* __restrict key, std::size_t rows,
                           std::size_t M, double* __restrict sums) {
  std::size_t j = 0;
#if defined(__AVX2__)
  for (; j + 4 <= M; j += 4) {
    __m256d ar = _mm256_setzero_pd(), ai = ar, br = ar, bi = ar;
    for (std::size_t r = 0; r < rows; ++r) {
      const double* s = spectra + r * 2 * M + j;
      const double* k = key + r * 4 * M + j;
      const __m256d sr = _mm256_loadu_pd(s), si = _mm256_loadu_pd(s + M);
      const __m256d kar = _mm256_loadu_pd(k), kai = _mm256_loadu_pd(k + M);
      const __m256d kbr = _mm256_loadu_pd(k + 2 * M), kbi = _mm256_loadu_pd(k + 3 * M);
      ar = _mm256_fnmadd_pd(si, kai, _mm256_fmadd_pd(sr, kar, ar));
      ai = _mm256_fmadd_pd(si, kar, _mm256_fmadd_pd(sr, kai, ai));
      br = _mm256_fnmadd_pd(si, kbi, _mm256_fmadd_pd(sr, kbr, br));
      bi = _mm256_fmadd_pd(si, kbr, _mm256_fmadd_pd(sr, kbi, bi));
    }
    _mm256_storeu_pd(sums + j, ar), _mm256_storeu_pd(sums + M + j, ai);
    _mm256_storeu_pd(sums + 2 * M + j, br), _mm256_storeu_pd(sums + 3 * M + j, bi);
  }
#endif
  for (; j < M; ++j) {
    double ar = 0, ai = 0, br = 0, bi = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      const double sr = spectra[r * 2 * M + j], si = spectra[r * 2 * M + M + j];
      const double* k = key + r * 4 * M + j;
      ar += sr * k[0] - si * k[M], ai += sr * k[M] + si * k[0];
      br += sr * k[2 * M] - si * k[3 * M], bi += sr * k[3 * M] + si * k[2 * M];
    }
    sums[j] = ar, sums[M + j] = ai, sums[2 * M + j] = br, sums[3 * M + j] = bi;
  }
}

}  // namespace

struct TorusBootstrapper::Scratch {
  explicit Scratch(const TorusParams& p)
      : N(p.ring_dimension),
        M(p.ring_dimension / 2),
        L(p.pbs_levels),
        switched(p.lwe_dimension + 1),
        acc(2 * N),
        diff(N),
        rest(N),
        digits(L * N),
        spectra(2 * L * 2 * M),
        sums(2 * 2 * M) {}
  std::size_t N, M, L;
  std::vector<std::uint32_t> switched;
  std::vector<u64> acc, diff, rest;
  std::vector<std::int32_t> digits;  // [l][N]
  std::vector<double> spectra;       // [c L + l][re, im][M]
  std::vector<double> sums;          // [A, B][re, im][M]
};

TorusBootstrapper::TorusBootstrapper(const TorusSecretKey& key, Prng& prng) : params_(key.params()) {
  params_.validate();
  fft_ = std::make_unique<NegacyclicFft>(params_.ring_dimension);
  ksk_ = std::make_unique<TorusKeySwitchKey>(key, prng);
  bsk_ = std::make_unique<TorusBootstrapKey>(key, *fft_, prng);
}

TorusBootstrapper::TorusBootstrapper(const TorusParams& params, const Prng::Seed& bootstrap_seed,
                                     const u64* bootstrap_bodies, const Prng::Seed& key_switch_seed,
                                     const u64* key_switch_bodies)
    : params_(params) {
  params_.validate();
  fft_ = std::make_unique<NegacyclicFft>(params_.ring_dimension);
  ksk_ = std::make_unique<TorusKeySwitchKey>(params_, key_switch_seed, key_switch_bodies);
  bsk_ = std::make_unique<TorusBootstrapKey>(params_, *fft_, bootstrap_seed, bootstrap_bodies);
}

void TorusBootstrapper::switch_input(const u64* in, std::uint32_t* switched, u64* small, std::size_t outputs) const {
  const std::size_t n = params_.lwe_dimension;
  thread_local std::vector<std::uint32_t> words;
  words.resize(n + 1);
  ksk_->apply(in, words.data());
  if (small != nullptr)
    for (std::size_t t = 0; t <= n; ++t) small[t] = static_cast<u64>(words[t]) << 32;
  // Centred modulus switch to 2N / outputs (then scaled back by outputs):
  // each a_t is rounded, with error e_t; the phase's error is then
  // e_b - sum e_t s_t, and with s_t = 1/2 + (s_t - 1/2) its part -1/2 sum e_t
  // is known here, so b absorbs it before its own rounding. What remains,
  // sum e_t (s_t - 1/2), has half the variance: n / 48 instead of n / 24
  // (binary s, E[(s - 1/2)^2] = 1/4). Nothing secret is read.
  const unsigned log2m = static_cast<unsigned>(std::countr_zero(2 * params_.ring_dimension / outputs));
  const unsigned shift = 32 - log2m;
  const std::uint32_t mask = (std::uint32_t{1} << log2m) - 1, scale = static_cast<std::uint32_t>(outputs);
  std::int64_t errors = 0;  // sum of (rounded a_t) 2^shift - a_t: |each| <= 2^(shift - 1)
  for (std::size_t t = 0; t < n; ++t) {
    const std::uint64_t rounded = (std::uint64_t{words[t]} + (std::uint64_t{1} << (shift - 1))) >> shift;
    errors += static_cast<std::int64_t>(rounded << shift) - static_cast<std::int64_t>(words[t]);
    switched[t] = (static_cast<std::uint32_t>(rounded) & mask) * scale;
  }
  // round((b + errors / 2) / 2^shift) = floor((2 b + errors + 2^shift) / 2^(shift + 1))
  const std::int64_t doubled = 2 * static_cast<std::int64_t>(words[n]) + errors + (std::int64_t{1} << shift);
  switched[n] = (static_cast<std::uint32_t>(doubled >> (shift + 1)) & mask) * scale;
}

void TorusBootstrapper::step(const double* key, std::uint32_t exponent, u64* acc, Scratch& sc) const {
  const std::size_t N = sc.N, M = sc.M, L = sc.L;
  const unsigned B = params_.pbs_base_log, shift = 64 - B * static_cast<unsigned>(L);
  const u64 mask = (u64{1} << B) - 1, half = u64{1} << (B - 1);
  for (std::size_t c = 0; c < 2; ++c) {
    const u64* poly = acc + c * N;
    // diff = X^exponent poly - poly (exponent in [1, 2N))
    u64* diff = sc.diff.data();
    const std::size_t e = exponent;
    if (e < N) {
      for (std::size_t j = 0; j < e; ++j) diff[j] = (0 - poly[N - e + j]) - poly[j];
      for (std::size_t j = e; j < N; ++j) diff[j] = poly[j - e] - poly[j];
    } else {
      const std::size_t f = e - N;  // X^e = -X^f
      for (std::size_t j = 0; j < f; ++j) diff[j] = poly[N - f + j] - poly[j];
      for (std::size_t j = f; j < N; ++j) diff[j] = (0 - poly[j - f]) - poly[j];
    }
    // Signed digits of the top B L bits, rounded; level L (the least
    // significant) first, each level's carry going up to the next.
    u64* rest = sc.rest.data();
    for (std::size_t j = 0; j < N; ++j) rest[j] = (diff[j] >> shift) + ((diff[j] >> (shift - 1)) & 1);
    for (std::size_t l = L; l >= 1; --l) {
      std::int32_t* digits = sc.digits.data() + (l - 1) * N;
      for (std::size_t j = 0; j < N; ++j) {
        const u64 d = rest[j] & mask, carry = d >= half ? 1 : 0;
        digits[j] = static_cast<std::int32_t>(static_cast<std::int64_t>(d) - static_cast<std::int64_t>(carry << B));
        rest[j] = (rest[j] >> B) + carry;
      }
    }
    for (std::size_t l = 0; l < L; ++l) {
      double* spec = sc.spectra.data() + (c * L + l) * 2 * M;
      fft_->forward(sc.digits.data() + l * N, spec, spec + M);
    }
  }
  external_product_sums(sc.spectra.data(), key, 2 * L, M, sc.sums.data());
  for (std::size_t o = 0; o < 2; ++o) fft_->backward_add(sc.sums.data() + o * 2 * M, sc.sums.data() + o * 2 * M + M, acc + o * N);
}

void TorusBootstrapper::rotate(const std::uint32_t* switched, const u64* tv, u64* acc, Scratch& sc) const {
  const std::size_t N = params_.ring_dimension, n = params_.lwe_dimension;
  // acc = (0, X^-b TV), X^-b = X^(2N - b)
  std::fill(acc, acc + N, u64{0});
  const std::size_t e = (2 * N - switched[n]) % (2 * N);
  u64* body = acc + N;
  if (e < N) {
    for (std::size_t j = 0; j < e; ++j) body[j] = 0 - tv[N - e + j];
    for (std::size_t j = e; j < N; ++j) body[j] = tv[j - e];
  } else {
    const std::size_t f = e - N;
    for (std::size_t j = 0; j < f; ++j) body[j] = tv[N - f + j];
    for (std::size_t j = f; j < N; ++j) body[j] = 0 - tv[j - f];
  }
  for (std::size_t i = 0; i < n; ++i)
    if (switched[i] != 0) step(bsk_->coefficient(i), switched[i], acc, sc);
}

void TorusBootstrapper::bootstrap_one(const u64* in, const u64* tv, u64* out, std::size_t outputs,
                                      Scratch& sc) const {
  const std::size_t N = params_.ring_dimension;
  switch_input(in, sc.switched.data(), nullptr, outputs);
  rotate(sc.switched.data(), tv, sc.acc.data(), sc);
  const u64* A = sc.acc.data();
  const u64* Bp = sc.acc.data() + N;
  for (std::size_t k = 0; k < outputs; ++k) {
    u64* o = out + k * (N + 1);
    // Coefficient k of (A, B) as an LWE ciphertext under z.
    for (std::size_t t = 0; t <= k; ++t) o[t] = A[k - t];
    for (std::size_t t = k + 1; t < N; ++t) o[t] = 0 - A[N + k - t];
    o[N] = Bp[k];
  }
}

void TorusBootstrapper::bootstrap_many(const u64* in, std::size_t count, const u64* tv, u64* out, int threads,
                                       std::size_t outputs) const {
  const std::size_t N = params_.ring_dimension;
  require(outputs >= 1 && outputs <= N && std::has_single_bit(outputs), "tfhe.bootstrap",
          "outputs per ciphertext must be a power of two in [1, N=" + std::to_string(N) + "], got " +
              std::to_string(outputs));
  const std::size_t parts = std::min<std::size_t>(count, threads > 0 ? threads : num_threads());
  auto body = [&](std::size_t begin, std::size_t end) {
    Scratch sc(params_);
    for (std::size_t c = begin; c < end; ++c) bootstrap_one(in + c * (N + 1), tv, out + c * outputs * (N + 1), outputs, sc);
  };
  parallel_ranges(count, parts, body);
}

}  // namespace ringfire::tfhe
