#include "ringfire/tfhe/torus_bootstrapper.h"

#include <algorithm>
#include <bit>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "ringfire/base/errors.h"
#include "ringfire/base/parallel.h"
#include "torus_kernels.h"

namespace ringfire::tfhe {

namespace {

// The key's blocks of points in the four-lane layout (the eight-lane one's
// products are torus_kernels_avx512.cpp's).
constexpr std::size_t kLanes = TorusBootstrapKey::kNarrowLanes;

using torus_kernels::Operand;

// Four-lane doubles where AVX2 is compiled in, one double otherwise: the
// products below are written once for both.
#if defined(__AVX2__)
using Vec = __m256d;
constexpr std::size_t kWidth = 4;
inline Vec load(const double* p) { return _mm256_loadu_pd(p); }
inline void store(double* p, Vec v) { _mm256_storeu_pd(p, v); }
inline Vec zero() { return _mm256_setzero_pd(); }
inline Vec fmadd(Vec a, Vec b, Vec c) { return _mm256_fmadd_pd(a, b, c); }
inline Vec fnmadd(Vec a, Vec b, Vec c) { return _mm256_fnmadd_pd(a, b, c); }
#else
using Vec = double;
constexpr std::size_t kWidth = 1;
inline Vec load(const double* p) { return *p; }
inline void store(double* p, Vec v) { *p = v; }
inline Vec zero() { return 0.0; }
inline Vec fmadd(Vec a, Vec b, Vec c) { return a * b + c; }
inline Vec fnmadd(Vec a, Vec b, Vec c) { return c - a * b; }
#endif

// The two output polynomials' values (A, B; real, imaginary) at kWidth points.
struct Pair {
  Vec ar, ai, br, bi;
};

// (x, y) += (u + i v) * (p, q), componentwise complex.
inline void multiply_add(Vec u, Vec v, Vec pr, Vec pi, Vec& xr, Vec& xi) {
  xr = fnmadd(v, pi, fmadd(u, pr, xr));
  xi = fmadd(v, pr, fmadd(u, pi, xi));
}

// sum_r spectra[r] * rows[r][A, B] at kWidth points: spectra points at the
// first point (its rows 2 S apart, re then im S apart), rows at the same
// point of the first key row (TorusBootstrapKey's blocked layout: A re, A im,
// B re, B im, kLanes each, 4 kLanes per row).
template <std::size_t kRows>
inline Pair row_products(const double* spectra, const double* rows_at, std::size_t any_rows, std::size_t S) {
  const std::size_t rows = kRows != 0 ? kRows : any_rows;
  Pair t{zero(), zero(), zero(), zero()};
  for (std::size_t r = 0; r < rows; ++r) {
    const Vec sr = load(spectra + r * 2 * S), si = load(spectra + r * 2 * S + S);
    const double* k = rows_at + r * 4 * kLanes;
    multiply_add(sr, si, load(k), load(k + kLanes), t.ar, t.ai);
    multiply_add(sr, si, load(k + 2 * kLanes), load(k + 3 * kLanes), t.br, t.bi);
  }
  return t;
}

inline void store_pair(double* sums, std::size_t S, const Pair& t) {
  store(sums, t.ar), store(sums + S, t.ai), store(sums + 2 * S, t.br), store(sums + 3 * S, t.bi);
}

// For each operand: sums[o] = sum_r spectra[r] * key[r][o] for the two output
// polynomials o, in one pass over the step's key (TorusBootstrapKey's blocked
// layout). Each block of the key is read from memory once for all the
// operands: a batch of ciphertexts shares the key's stream, the bootstrap's
// largest memory cost.
void external_product_sums(const double* __restrict key, std::size_t rows, std::size_t M, std::size_t S,
                           const Operand* ops, std::size_t count) {
  for (std::size_t j = 0; j < M; j += kLanes) {
    const double* block = key + j * rows * 4;
    for (std::size_t o = 0; o < count; ++o)
      for (std::size_t x = 0; x < kLanes; x += kWidth)
        store_pair(ops[o].sums + j + x, S, row_products<0>(ops[o].spectra + j + x, block + x, rows, S));
  }
}

// X^m - 1 in the FFT domain: root(e_k m) - 1 at point k (NegacyclicFft::exponents).
// Where the transform's blocks of four are shifts of each other (the passes
// built here), one lookup per block and a product by the four lanes' own
// roots; otherwise one lookup per point.
void monomial_minus_one(const NegacyclicFft& fft, std::uint32_t m, double* __restrict re, double* __restrict im) {
  const std::size_t M = fft.points();
  const std::uint32_t mask = static_cast<std::uint32_t>(2 * fft.ring_dimension() - 1);
  const std::uint32_t* exps = fft.exponents();
  const double* roots_re = fft.roots_re();
  const double* roots_im = fft.roots_im();
  if (!fft.shifted_blocks()) {
    for (std::size_t k = 0; k < M; ++k) {
      const std::uint32_t at = (exps[k] * m) & mask;
      re[k] = roots_re[at] - 1.0, im[k] = roots_im[at];
    }
    return;
  }
  double lane_re[4], lane_im[4];
  for (std::size_t i = 0; i < 4; ++i) {
    const std::uint32_t at = (fft.lane_offsets()[i] * m) & mask;
    lane_re[i] = roots_re[at], lane_im[i] = roots_im[at];
  }
  if (fft.wide())  // eight lanes (M is a multiple of 8 wherever the transform is)
    return torus_kernels::monomial_minus_one_wide(roots_re, roots_im, exps, m, mask, lane_re, lane_im, M, re, im);
#if defined(__AVX2__)
  // (GCC's own vectorization of the loop below gathered the roots through
  // vector extracts: 15 % of a multi-bit bootstrap.)
  const __m256d lr = _mm256_loadu_pd(lane_re), li = _mm256_loadu_pd(lane_im), one = _mm256_set1_pd(1.0);
  for (std::size_t k = 0; k < M; k += 4) {
    const std::uint32_t at = (exps[k] * m) & mask;
    const __m256d br = _mm256_broadcast_sd(roots_re + at), bi = _mm256_broadcast_sd(roots_im + at);
    _mm256_storeu_pd(re + k, _mm256_sub_pd(_mm256_fmsub_pd(br, lr, _mm256_mul_pd(bi, li)), one));
    _mm256_storeu_pd(im + k, _mm256_fmadd_pd(br, li, _mm256_mul_pd(bi, lr)));
  }
#else
  for (std::size_t k = 0; k < M; k += 4) {
    const std::uint32_t at = (exps[k] * m) & mask;
    const double br = roots_re[at], bi = roots_im[at];
    for (std::size_t i = 0; i < 4; ++i) {
      re[k + i] = br * lane_re[i] - bi * lane_im[i] - 1.0;
      im[k + i] = br * lane_im[i] + bi * lane_re[i];
    }
  }
#endif
}

// Multi-bit, for each operand: sums[o] = sum over its listed patterns p of
// (X^{m_p} - 1) sum_r spectra[r] * key_p[r][o], in the FFT domain: one pass
// over the group's keys (blocked by points, all patterns together) for all
// the operands. kRows: the rows' count when known at compile time (2: one
// gadget level, every preset; the spectra's loads then stay in registers
// across the patterns), 0 otherwise.
template <std::size_t kRows>
void multi_bit_sums(const double* __restrict key, std::size_t patterns, std::size_t any_rows, std::size_t M,
                    std::size_t S, const Operand* ops, std::size_t count) {
  const std::size_t rows = kRows != 0 ? kRows : any_rows;
  const std::size_t block_doubles = patterns * rows * 4 * kLanes;
  for (std::size_t j = 0; j < M; j += kLanes) {
    const double* block = key + j * patterns * rows * 4;
#if defined(__AVX2__)
    // The key is read once per block for every operand: fetch the blocks
    // ahead (the hardware's prefetchers alone left the loads waiting), within
    // this step's key.
    if (j + 8 * kLanes < M) {
      const char* ahead = reinterpret_cast<const char*>(block + 8 * block_doubles);
      for (std::size_t b = 0; b < block_doubles * sizeof(double); b += 64) _mm_prefetch(ahead + b, _MM_HINT_T0);
    }
#endif
    for (std::size_t o = 0; o < count; ++o) {
      const Operand& op = ops[o];
      for (std::size_t x = 0; x < kLanes; x += kWidth) {
        Pair sum{zero(), zero(), zero(), zero()};
        for (std::size_t a = 0; a < op.active; ++a) {
          const Pair t = row_products<kRows>(op.spectra + j + x, block + op.which[a] * rows * 4 * kLanes + x, rows, S);
          const Vec mr = load(op.monos + a * 2 * S + j + x), mi = load(op.monos + a * 2 * S + S + j + x);
          multiply_add(mr, mi, t.ar, t.ai, sum.ar, sum.ai);
          multiply_add(mr, mi, t.br, t.bi, sum.br, sum.bi);
        }
        store_pair(op.sums + j + x, S, sum);
      }
    }
  }
}

}  // namespace

struct TorusBootstrapper::Scratch {
  // `index`: the ciphertext's place in its batch (see the arena below).
  Scratch(const TorusParams& p, std::size_t index)
      : N(p.ring_dimension),
        M(p.ring_dimension / 2),
        L(p.pbs_levels),
        S(M + kPad),
        patterns(p.grouping > 1 ? (std::size_t{1} << p.grouping) - 1 : 0),
        switched(p.lwe_dimension + 1),
        acc(2 * N),
        diff(N),
        rest(N),
        digits(L * N),
        which(patterns) {
    // The products read every array below at the same point j, for every
    // ciphertext of the batch at once: arrays M doubles apart (a multiple of
    // 4 KiB) would all fall in the same level-1 cache sets. Each array is
    // therefore kPad doubles (a cache line) further along than the last, and
    // each ciphertext's arrays start past the previous ciphertext's.
    const std::size_t arrays = 4 * L + 4 + 2 * patterns, lead = index * arrays * kPad;
    arena.assign(lead + arrays * S, 0.0);
    spectra = arena.data() + lead;
    sums = spectra + 4 * L * S;
    monos = sums + 4 * S;
  }
  // The arena's pointers stay valid when a Scratch moves (its buffer moves
  // with it), not when it is copied.
  Scratch(Scratch&&) = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  static constexpr std::size_t kPad = 8;
  std::size_t N, M, L, S, patterns;
  std::vector<std::uint32_t> switched;
  CacheAlignedVector<u64> acc, diff, rest;
  CacheAlignedVector<std::int32_t> digits;  // [l][N]
  std::vector<std::size_t> which;           // multi-bit: the listed patterns (index p - 1)
  CacheAlignedVector<double> arena;
  double* spectra = nullptr;  // [c L + l][re, im], arrays of M every S doubles
  double* sums = nullptr;     // [A, B][re, im]
  double* monos = nullptr;    // multi-bit: [listed pattern][re, im], X^m - 1
};

TorusBootstrapper::TorusBootstrapper(const TorusSecretKey& key, Prng& prng) : params_(key.params()) {
  params_.validate();
  fft_ = std::make_unique<NegacyclicFft>(params_.ring_dimension);
  ksk_ = std::make_unique<TorusKeySwitchKey>(key, prng);
  bsk_ = std::make_unique<TorusBootstrapKey>(key, *fft_, prng);
  slots_per_step_ = fft_->prefetch_slots() * (2 * params_.pbs_levels + 2);
}

TorusBootstrapper::TorusBootstrapper(const TorusParams& params, const Prng::Seed& bootstrap_seed,
                                     const u64* bootstrap_bodies, const Prng::Seed& key_switch_seed,
                                     const u64* key_switch_bodies)
    : params_(params) {
  params_.validate();
  fft_ = std::make_unique<NegacyclicFft>(params_.ring_dimension);
  ksk_ = std::make_unique<TorusKeySwitchKey>(params_, key_switch_seed, key_switch_bodies);
  bsk_ = std::make_unique<TorusBootstrapKey>(params_, *fft_, bootstrap_seed, bootstrap_bodies);
  slots_per_step_ = fft_->prefetch_slots() * (2 * params_.pbs_levels + 2);
}

Isa TorusBootstrapper::isa() const {
  if (fft_->wide()) return Isa::avx512;
#if defined(__AVX2__)
  return Isa::avx2;
#else
  return Isa::scalar;
#endif
}

void TorusBootstrapper::switch_input(const u64* in, std::uint32_t* switched, u64* small, std::size_t outputs) const {
  const std::size_t n = params_.lwe_dimension;
  std::vector<std::uint32_t> words(n + 1);
  ksk_->apply(in, words.data());
  if (small != nullptr)
    for (std::size_t t = 0; t <= n; ++t) small[t] = static_cast<u64>(words[t]) << 32;
  switch_modulus(words.data(), switched, outputs);
}

void TorusBootstrapper::switch_modulus(const std::uint32_t* words, std::uint32_t* switched, std::size_t outputs) const {
  const std::size_t n = params_.lwe_dimension;
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

void TorusBootstrapper::transform_digits(const u64* poly, std::size_t c, Scratch& sc, LinesAhead& ahead) const {
  const std::size_t N = sc.N, L = sc.L;
  const unsigned B = params_.pbs_base_log;
  if (L == 1) {
    // One level (every preset): the transform takes the digits as it reads the
    // words; the rest of this function, and the scratch's rest and digits, serve
    // gadgets of several levels.
    double* spec = sc.spectra + c * 2 * sc.S;
    fft_->forward_top_digits(poly, B, spec, spec + sc.S, &ahead);
    return;
  }
  const unsigned shift = 64 - B * static_cast<unsigned>(L);
  const u64 mask = (u64{1} << B) - 1, half = u64{1} << (B - 1);
  // Signed digits of the top B L bits, rounded; level L (the least
  // significant) first, each level's carry going up to the next.
  u64* rest = sc.rest.data();
  for (std::size_t j = 0; j < N; ++j) rest[j] = (poly[j] >> shift) + ((poly[j] >> (shift - 1)) & 1);
  for (std::size_t l = L; l >= 1; --l) {
    std::int32_t* digits = sc.digits.data() + (l - 1) * N;
    for (std::size_t j = 0; j < N; ++j) {
      const u64 d = rest[j] & mask, carry = d >= half ? 1 : 0;
      digits[j] = static_cast<std::int32_t>(static_cast<std::int64_t>(d) - static_cast<std::int64_t>(carry << B));
      rest[j] = (rest[j] >> B) + carry;
    }
  }
  for (std::size_t l = 0; l < L; ++l) {
    double* spec = sc.spectra + (c * L + l) * 2 * sc.S;
    fft_->forward(sc.digits.data() + l * N, spec, spec + sc.S, &ahead);
  }
}

void TorusBootstrapper::add_sums_back(Scratch& sc, LinesAhead& ahead) const {
  const std::size_t N = sc.N, S = sc.S;
  for (std::size_t o = 0; o < 2; ++o)
    fft_->backward_add(sc.sums + o * 2 * S, sc.sums + o * 2 * S + S, sc.acc.data() + o * N, &ahead);
}

void TorusBootstrapper::fetch_keys_of(std::size_t next, std::size_t count, LinesAhead& ahead) const {
  const std::size_t steps = params_.lwe_dimension / params_.grouping, slots = slots_per_step_ * count;
  if (next >= steps || slots == 0) return;
  // Spread over every transform of the batch, rounded up so that all are asked
  // for before the products (a batch's transforms fetching them at the pace of
  // one ciphertext's made its multi-bit steps 4 % slower).
  const std::size_t lines = (bsk_->step_bytes() + LinesAhead::kLine - 1) / LinesAhead::kLine;
  ahead.start(bsk_->step(next), bsk_->step_bytes(), (lines + slots - 1) / slots);
}

void TorusBootstrapper::step(std::size_t i, Scratch* batch, std::size_t count, LinesAhead& ahead) const {
  Operand ops[kBatch];
  Scratch* moved[kBatch];
  std::size_t listed = 0;
  for (std::size_t b = 0; b < count; ++b) {
    Scratch& sc = batch[b];
    const std::size_t e = sc.switched[i], N = sc.N;
    if (e == 0) continue;  // X^0 acc - acc = 0 (a public word)
    for (std::size_t c = 0; c < 2; ++c) {
      const u64* poly = sc.acc.data() + c * N;
      // diff = X^e poly - poly (e in [1, 2N))
      u64* diff = sc.diff.data();
      if (e < N) {
        for (std::size_t j = 0; j < e; ++j) diff[j] = (0 - poly[N - e + j]) - poly[j];
        for (std::size_t j = e; j < N; ++j) diff[j] = poly[j - e] - poly[j];
      } else {
        const std::size_t f = e - N;  // X^e = -X^f
        for (std::size_t j = 0; j < f; ++j) diff[j] = poly[N - f + j] - poly[j];
        for (std::size_t j = f; j < N; ++j) diff[j] = (0 - poly[j - f]) - poly[j];
      }
      transform_digits(diff, c, sc, ahead);
    }
    ops[listed] = {sc.spectra, sc.sums, nullptr, nullptr, 0};
    moved[listed++] = &sc;
  }
  if (listed == 0) return;
  if (bsk_->lanes() == kLanes)
    external_product_sums(bsk_->step(i), 2 * batch[0].L, batch[0].M, batch[0].S, ops, listed);
  else
    torus_kernels::external_product_sums_wide(bsk_->step(i), 2 * batch[0].L, batch[0].M, batch[0].S, ops, listed);
  fetch_keys_of(i + 1, listed, ahead);
  for (std::size_t b = 0; b < listed; ++b) add_sums_back(*moved[b], ahead);
}

void TorusBootstrapper::multi_bit_step(std::size_t group, Scratch* batch, std::size_t count,
                                       LinesAhead& ahead) const {
  const unsigned g = params_.grouping;
  const std::size_t patterns = (std::size_t{1} << g) - 1;
  Operand ops[kBatch];
  Scratch* moved[kBatch];
  std::size_t listed = 0;
  for (std::size_t b = 0; b < count; ++b) {
    Scratch& sc = batch[b];
    const std::size_t two_n = 2 * sc.N, S = sc.S;
    // Pattern p's monomial: X^(sum of the a_t its bits select). Patterns whose
    // exponent is 0 mod 2N add nothing (X^0 - 1 = 0); which ones they are
    // depends only on the public switched words.
    std::size_t active = 0;
    for (std::size_t p = 1; p <= patterns; ++p) {
      std::size_t m = 0;
      for (unsigned j = 0; j < g; ++j)
        if ((p >> j) & 1) m += sc.switched[group * g + j];
      m %= two_n;
      if (m == 0) continue;
      sc.which[active] = p - 1;
      monomial_minus_one(*fft_, static_cast<std::uint32_t>(m), sc.monos + active * 2 * S, sc.monos + active * 2 * S + S);
      ++active;
    }
    if (active == 0) continue;
    for (std::size_t c = 0; c < 2; ++c) transform_digits(sc.acc.data() + c * sc.N, c, sc, ahead);
    ops[listed] = {sc.spectra, sc.sums, sc.monos, sc.which.data(), active};
    moved[listed++] = &sc;
  }
  if (listed == 0) return;
  const std::size_t rows = 2 * batch[0].L;
  if (bsk_->lanes() == kLanes)
    (rows == 2 ? multi_bit_sums<2> : multi_bit_sums<0>)(bsk_->step(group), patterns, rows, batch[0].M, batch[0].S,
                                                        ops, listed);
  else
    torus_kernels::multi_bit_sums_wide(bsk_->step(group), patterns, rows, batch[0].M, batch[0].S, ops, listed);
  fetch_keys_of(group + 1, listed, ahead);
  for (std::size_t b = 0; b < listed; ++b) add_sums_back(*moved[b], ahead);
}

void TorusBootstrapper::rotate(const u64* tv, Scratch* batch, std::size_t count) const {
  const std::size_t N = params_.ring_dimension, n = params_.lwe_dimension;
  for (std::size_t b = 0; b < count; ++b) {
    // acc = (0, X^-b TV), X^-b = X^(2N - b)
    u64* acc = batch[b].acc.data();
    std::fill(acc, acc + N, u64{0});
    const std::size_t e = (2 * N - batch[b].switched[n]) % (2 * N);
    u64* body = acc + N;
    if (e < N) {
      for (std::size_t j = 0; j < e; ++j) body[j] = 0 - tv[N - e + j];
      for (std::size_t j = e; j < N; ++j) body[j] = tv[j - e];
    } else {
      const std::size_t f = e - N;
      for (std::size_t j = 0; j < f; ++j) body[j] = tv[N - f + j];
      for (std::size_t j = f; j < N; ++j) body[j] = 0 - tv[j - f];
    }
  }
  LinesAhead ahead;
  fetch_keys_of(0, count, ahead);
  if (params_.grouping > 1) {
    for (std::size_t k = 0; k < n / params_.grouping; ++k) multi_bit_step(k, batch, count, ahead);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) step(i, batch, count, ahead);
}

void TorusBootstrapper::bootstrap_batch(const std::uint32_t* words, std::size_t count, const u64* tv, u64* out,
                                        std::size_t outputs, Scratch* batch) const {
  const std::size_t N = params_.ring_dimension;
  const std::size_t n = params_.lwe_dimension;
  for (std::size_t b = 0; b < count; ++b) switch_modulus(words + b * (n + 1), batch[b].switched.data(), outputs);
  rotate(tv, batch, count);
  for (std::size_t b = 0; b < count; ++b) {
    const u64* A = batch[b].acc.data();
    const u64* Bp = A + N;
    for (std::size_t k = 0; k < outputs; ++k) {
      u64* o = out + (b * outputs + k) * (N + 1);
      // Coefficient k of (A, B) as an LWE ciphertext under z.
      for (std::size_t t = 0; t <= k; ++t) o[t] = A[k - t];
      for (std::size_t t = k + 1; t < N; ++t) o[t] = 0 - A[N + k - t];
      o[N] = Bp[k];
    }
  }
}

void TorusBootstrapper::bootstrap_many(const u64* in, std::size_t count, const u64* tv, u64* out, int threads,
                                       std::size_t outputs) const {
  const std::size_t N = params_.ring_dimension;
  require(outputs >= 1 && outputs <= N && std::has_single_bit(outputs), "tfhe.bootstrap",
          "outputs per ciphertext must be a power of two in [1, N=" + std::to_string(N) + "], got " +
              std::to_string(outputs));
  const std::size_t parts = std::min<std::size_t>(count, threads > 0 ? threads : num_threads());
  const std::size_t n = params_.lwe_dimension, switched = TorusKeySwitchKey::kBatchLimit;
  auto body = [&](std::size_t begin, std::size_t end) {
    std::vector<Scratch> batch;
    batch.reserve(kBatch);
    for (std::size_t b = 0; b < std::min(kBatch, end - begin); ++b) batch.emplace_back(params_, b);
    // The key switch for up to kBatchLimit ciphertexts at once (its table read
    // once for them all), then their rotations kBatch at a time.
    std::vector<std::uint32_t> words(std::min(switched, end - begin) * (n + 1));
    for (std::size_t first = begin; first < end; first += switched) {
      const std::size_t last = std::min(end, first + switched);
      ksk_->apply_many(in + first * (N + 1), last - first, words.data());
      for (std::size_t c = first; c < last; c += kBatch) {
        const std::size_t take = std::min(kBatch, last - c);
        bootstrap_batch(words.data() + (c - first) * (n + 1), take, tv, out + c * outputs * (N + 1), outputs,
                        batch.data());
      }
    }
  };
  parallel_ranges(count, parts, body);
}

}  // namespace ringfire::tfhe
