#include "ringfire/tfhe/bootstrapper.h"

#include <algorithm>

#include "ringfire/base/errors.h"
#include "ringfire/base/parallel.h"
#include "ringfire/rlwe/sampling.h"

#if defined(__AVX2__)
#include <immintrin.h>
#define RF_TFHE_AVX2 1
#else
#define RF_TFHE_AVX2 0
#endif

namespace ringfire::tfhe {

namespace {

using u64 = std::uint64_t;

u32 add_mod(u32 a, u32 b, u32 q) { const u32 s = a + b; return s >= q ? s - q : s; }
u32 mul_mod(u32 a, u32 b, u32 q) { return static_cast<u32>(static_cast<u64>(a) * b % q); }

// dst = X^k src in Z_Q[X]/(X^N + 1), k in [0, 2N).
void rotate(const u32* src, std::size_t N, std::size_t k, u32 Q, u32* dst) {
  for (std::size_t i = 0; i < N; ++i) {
    const std::size_t e = (i + k) % (2 * N);
    const u32 v = src[i];
    if (e < N) dst[e] = v;
    else dst[e - N] = v == 0 ? 0 : Q - v;
  }
}

// Signed base-2^log_base digits of round(centred(v) / 2^skip), digit r of
// polynomial p written mod Q to D + (p d_g + r) N. Digit j is
// ((x + B/2) mod B) - B/2 of what the digits below it left; the last digit
// takes the rest (|it| <= B/2 + 1 when the gadget covers Q, Params::validate).
[[maybe_unused]] void decompose_scalar(const u32* poly, std::size_t N, const Params& p, u32* D) {
  const u32 Q = p.ring_modulus, half_q = Q / 2;
  const int skip = static_cast<int>(p.gadget_skip_bits), lb = static_cast<int>(p.gadget_base_log);
  const std::int32_t round = skip > 0 ? (1 << (skip - 1)) : 0;
  const std::int32_t base = 1 << lb, mask = base - 1, half = base / 2;
  const unsigned dg = p.gadget_digits;
  for (std::size_t c = 0; c < N; ++c) {
    const u32 v = poly[c];
    std::int32_t x = static_cast<std::int32_t>(v > half_q ? v - Q : v);  // wraps to the centred value
    x = (x + round) >> skip;
    for (unsigned j = 0; j + 1 < dg; ++j) {
      const std::int32_t d = ((x + half) & mask) - half;
      x = (x - d) >> lb;
      D[j * N + c] = static_cast<u32>(d) + (d < 0 ? Q : 0);
    }
    D[(dg - 1) * N + c] = static_cast<u32>(x) + (x < 0 ? Q : 0);
  }
}

#if RF_TFHE_AVX2
void decompose(const u32* poly, std::size_t N, const Params& p, u32* D) {
  const __m256i Q = _mm256_set1_epi32(static_cast<int>(p.ring_modulus));
  const __m256i half_q = _mm256_set1_epi32(static_cast<int>(p.ring_modulus / 2));
  const int skip = static_cast<int>(p.gadget_skip_bits), lb = static_cast<int>(p.gadget_base_log);
  const __m256i round = _mm256_set1_epi32(skip > 0 ? (1 << (skip - 1)) : 0);
  const __m256i mask = _mm256_set1_epi32((1 << lb) - 1), half = _mm256_set1_epi32(1 << (lb - 1));
  const __m128i skip_count = _mm_cvtsi32_si128(skip), lb_count = _mm_cvtsi32_si128(lb);
  const __m256i zero = _mm256_setzero_si256();
  const unsigned dg = p.gadget_digits;
  auto modq = [&](__m256i d) { return _mm256_add_epi32(d, _mm256_and_si256(_mm256_cmpgt_epi32(zero, d), Q)); };
  for (std::size_t c = 0; c < N; c += 8) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(poly + c));
    __m256i x = _mm256_sub_epi32(v, _mm256_and_si256(_mm256_cmpgt_epi32(v, half_q), Q));
    x = _mm256_sra_epi32(_mm256_add_epi32(x, round), skip_count);
    for (unsigned j = 0; j + 1 < dg; ++j) {
      const __m256i d = _mm256_sub_epi32(_mm256_and_si256(_mm256_add_epi32(x, half), mask), half);
      x = _mm256_sra_epi32(_mm256_sub_epi32(x, d), lb_count);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(D + j * N + c), modq(d));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(D + (dg - 1) * N + c), modq(x));
  }
}
#else
void decompose(const u32* poly, std::size_t N, const Params& p, u32* D) { decompose_scalar(poly, N, p, D); }
#endif

// out_b, out_a (evaluation layout, < 2Q) = (X^a - 1) sum_r D_r BK+_r + (X^-a - 1) sum_r D_r BK-_r.
[[maybe_unused]] void product_scalar(const u32* D, std::size_t R, const u32* key, const u32* mp, const u32* mm, std::size_t N, u32 Q,
                    u32 nqinv, u32* out_b, u32* out_a) {
  for (std::size_t c = 0; c < N / 8; ++c) {
    const u32* kc = key + c * R * 32;
    for (std::size_t l = 0; l < 8; ++l) {
      const std::size_t slot = 8 * c + l;
      u64 acc[4] = {0, 0, 0, 0};
      for (std::size_t r = 0; r < R; ++r) {
        const u64 d = D[r * N + slot];
        for (std::size_t k = 0; k < 4; ++k) acc[k] += d * kc[(r * 4 + k) * 8 + l];
      }
      u32 S[4];
      for (std::size_t k = 0; k < 4; ++k) S[k] = Ntt32::montgomery_reduce(acc[k], Q, nqinv);
      out_b[slot] = Ntt32::montgomery_reduce(u64{S[0]} * mp[slot] + u64{S[2]} * mm[slot], Q, nqinv);
      out_a[slot] = Ntt32::montgomery_reduce(u64{S[1]} * mp[slot] + u64{S[3]} * mm[slot], Q, nqinv);
    }
  }
}

#if RF_TFHE_AVX2
using V = __m256i;
inline V load(const u32* p) { return _mm256_loadu_si256(reinterpret_cast<const V*>(p)); }
inline void store(u32* p, V v) { _mm256_storeu_si256(reinterpret_cast<V*>(p), v); }
// The odd lanes in even positions (a shuffle: port 5, not the multipliers').
inline V odd(V x) { return _mm256_shuffle_epi32(x, 0xF5); }
// Montgomery reduction of the even- and odd-lane 64-bit sums, packed back
// into eight 32-bit lanes in [0, 2Q).
inline V reduce_pack(V even, V odd_lanes, V q, V nqinv) {
  const V te = _mm256_srli_epi64(_mm256_add_epi64(even, _mm256_mul_epu32(_mm256_mul_epu32(even, nqinv), q)), 32);
  const V to = _mm256_add_epi64(odd_lanes, _mm256_mul_epu32(_mm256_mul_epu32(odd_lanes, nqinv), q));
  return _mm256_blend_epi32(te, to, 0xAA);  // the odd sums' results sit in their high halves
}

// next_key: the next coefficient's key, prefetched into L2 at the pace this
// one is read (one step ahead: the blind rotation reads 2 R N 8 bytes of key
// per step, more than L2 keeps, and L3 alone cannot feed the products).
void product_avx2(const u32* D, std::size_t R, const u32* key, const u32* mp, const u32* mm, std::size_t N, u32 Q,
                  u32 nqinv, u32* out_b, u32* out_a, const char* next_key) {
  const V q = _mm256_set1_epi32(static_cast<int>(Q)), ni = _mm256_set1_epi32(static_cast<int>(nqinv));
  for (std::size_t c = 0; c < N / 8; ++c) {
    const u32* kc = key + c * R * 32;
    if (next_key != nullptr)
      for (std::size_t off = 0; off < R * 128; off += 64) _mm_prefetch(next_key + c * R * 128 + off, _MM_HINT_T1);
    V ae[4], ao[4];
    for (int k = 0; k < 4; ++k) ae[k] = ao[k] = _mm256_setzero_si256();
    for (std::size_t r = 0; r < R; ++r) {
      const V d = load(D + r * N + 8 * c), d_odd = odd(d);
      for (int k = 0; k < 4; ++k) {
        const V kv = load(kc + (r * 4 + k) * 8);
        ae[k] = _mm256_add_epi64(ae[k], _mm256_mul_epu32(d, kv));
        ao[k] = _mm256_add_epi64(ao[k], _mm256_mul_epu32(d_odd, odd(kv)));
      }
    }
    V S[4];
    for (int k = 0; k < 4; ++k) S[k] = reduce_pack(ae[k], ao[k], q, ni);
    const V vp = load(mp + 8 * c), vm = load(mm + 8 * c), vp_odd = odd(vp), vm_odd = odd(vm);
    for (int o = 0; o < 2; ++o) {  // o = 0: b (S0, S2), o = 1: a (S1, S3)
      const V plus = S[o], minus = S[o + 2];
      const V even = _mm256_add_epi64(_mm256_mul_epu32(plus, vp), _mm256_mul_epu32(minus, vm));
      const V odds = _mm256_add_epi64(_mm256_mul_epu32(odd(plus), vp_odd), _mm256_mul_epu32(odd(minus), vm_odd));
      store((o == 0 ? out_b : out_a) + 8 * c, reduce_pack(even, odds, q, ni));
    }
  }
}
#endif

}  // namespace

BootstrapKey::BootstrapKey(const SecretKey& key, const Ntt32& ntt, Prng& prng) {
  const Params& p = key.params();
  const std::size_t n = p.lwe_dimension, N = p.ring_dimension, R = 2 * p.gadget_digits;
  const u32 Q = p.ring_modulus;
  stride_ = N * R * 4;
  data_.assign(n * stride_, 0);
  Prng public_a = Prng::from_seed(prng.next_seed());

  std::vector<u32> zhat(N), A(N), E(N);
  for (std::size_t c = 0; c < N; ++c) zhat[c] = key.ring()[c] < 0 ? Q - 1 : static_cast<u32>(key.ring()[c]);
  ntt.forward(zhat.data());
  std::vector<std::int64_t> e(N);
  std::vector<u32> gadget(p.gadget_digits);
  for (unsigned j = 0; j < p.gadget_digits; ++j)
    gadget[j] = static_cast<u32>((u64{1} << (p.gadget_skip_bits + j * p.gadget_base_log)) % Q);

  for (std::size_t i = 0; i < n; ++i) {
    u32* out = data_.data() + i * stride_;
    for (int t = 0; t < 2; ++t) {
      const u32 m = key.lwe()[i] == (t == 0 ? 1 : -1) ? 1 : 0;
      for (std::size_t r = 0; r < R; ++r) {
        const bool on_a = r >= p.gadget_digits;
        const u32 g = m * gadget[r % p.gadget_digits];
        for (std::size_t c = 0; c < N; ++c) A[c] = static_cast<u32>(public_a.uniform_below(Q));
        sample_gaussian(prng, e.data(), N, p.sigma);
        for (std::size_t c = 0; c < N; ++c) E[c] = e[c] < 0 ? static_cast<u32>(Q + e[c]) : static_cast<u32>(e[c]);
        ntt.forward(A.data());
        ntt.forward(E.data());
        for (std::size_t s = 0; s < N; ++s) {
          // B = A z + e (+ m g on the b rows); A (+ m g on the a rows). NTT(constant) = constant.
          u32 b = add_mod(mul_mod(A[s], zhat[s], Q), E[s], Q);
          u32 a = A[s];
          if (on_a) a = add_mod(a, g, Q);
          else b = add_mod(b, g, Q);
          const std::size_t chunk = s / 8, lane = s % 8;
          u32* dst = out + (chunk * R + r) * 32 + lane;
          dst[(2 * t) * 8] = ntt.to_montgomery(b);
          dst[(2 * t + 1) * 8] = ntt.to_montgomery(a);
        }
      }
    }
  }
  secure_zero(e.data(), e.size() * sizeof(std::int64_t));
  secure_zero(E.data(), E.size() * sizeof(u32));
  secure_zero(zhat.data(), zhat.size() * sizeof(u32));
}

Bootstrapper::Bootstrapper(const SecretKey& key, Prng& prng) : params_(key.params()) {
  params_.validate();
  const std::size_t N = params_.ring_dimension;
  const u32 Q = params_.ring_modulus;
  ntt_ = std::make_unique<Ntt32>(N, Q);
  bsk_ = std::make_unique<BootstrapKey>(key, *ntt_, prng);
  ksk_ = std::make_unique<KeySwitchKey>(key, prng);
  monomials_.assign(2 * N * N, 0);
  for (std::size_t k = 0; k < 2 * N; ++k) {
    u32* row = monomials_.data() + k * N;
    if (k < N) row[k] = 1;
    else row[k - N] = Q - 1;
    ntt_->forward(row);
    for (std::size_t s = 0; s < N; ++s) row[s] = ntt_->to_montgomery(row[s] == 0 ? Q - 1 : row[s] - 1);
  }
}

void Bootstrapper::step(u32* acc, std::size_t i, u32 exponent, u32* scratch) const {
  const std::size_t N = params_.ring_dimension, R = 2 * params_.gadget_digits;
  const u32 Q = params_.ring_modulus;
  u32* D = scratch;
  u32* out_b = D + R * N;
  u32* out_a = out_b + N;
  decompose(acc, N, params_, D);
  decompose(acc + N, N, params_, D + params_.gadget_digits * N);
  for (std::size_t r = 0; r < R; ++r) ntt_->forward(D + r * N);
  const char* next_key = i + 1 < params_.lwe_dimension ? reinterpret_cast<const char*>(bsk_->coefficient(i + 1)) : nullptr;
  const u32* mp = monomials_.data() + exponent * N;
  const u32* mm = monomials_.data() + ((2 * N - exponent) % (2 * N)) * N;
#if RF_TFHE_AVX2
  product_avx2(D, R, bsk_->coefficient(i), mp, mm, N, Q, ntt_->neg_q_inverse(), out_b, out_a, next_key);
#else
  product_scalar(D, R, bsk_->coefficient(i), mp, mm, N, Q, ntt_->neg_q_inverse(), out_b, out_a);
#endif
  ntt_->inverse(out_b, acc);
  ntt_->inverse(out_a, acc + N);
}

void Bootstrapper::blind_rotate(const u32* in, const u32* test_vector, u32* acc) const {
  const std::size_t n = params_.lwe_dimension, N = params_.ring_dimension;
  const u32 q = params_.lwe_modulus(), Q = params_.ring_modulus;
  for (std::size_t c = 0; c < N; ++c)
    require(test_vector[c] < Q, "tfhe.bootstrap", "test vector coefficients must be below Q");
  const u32 b = in[n] % q;
  rotate(test_vector, N, (q - b) % q, Q, acc);
  std::fill(acc + N, acc + 2 * N, 0u);
  std::vector<u32> scratch((2 * params_.gadget_digits + 2) * N);
  for (std::size_t i = 0; i < n; ++i) {
    const u32 a = in[i] % q;
    if (a != 0) step(acc, i, a, scratch.data());
  }
}

void Bootstrapper::bootstrap(const u32* in, const u32* test_vector, u32* out) const {
  const std::size_t n = params_.lwe_dimension, N = params_.ring_dimension;
  const u32 Q = params_.ring_modulus;
  std::vector<u32> acc(2 * N), extracted(N + 1), switched(n + 1);
  blind_rotate(in, test_vector, acc.data());
  // Sample extraction of the constant coefficient: under z, phase = b_0 -
  // a_0 z_0 + sum_{j>0} a_{N-j} z_j.
  const u32* a = acc.data() + N;
  extracted[0] = a[0];
  for (std::size_t j = 1; j < N; ++j) extracted[j] = a[N - j] == 0 ? 0 : Q - a[N - j];
  extracted[N] = acc[0];
  switch_modulus(extracted.data(), N + 1, Q, params_.ks_modulus, extracted.data());
  ksk_->apply(extracted.data(), switched.data());
  switch_modulus(switched.data(), n + 1, params_.ks_modulus, params_.lwe_modulus(), out);
}

void Bootstrapper::bootstrap_many(const u32* in, std::size_t count, const u32* test_vector, u32* out,
                                  int threads) const {
  const std::size_t width = params_.lwe_dimension + 1;
  const std::size_t parts = std::min<std::size_t>(count, threads > 0 ? threads : num_threads());
  auto body = [&](std::size_t begin, std::size_t end) {
    for (std::size_t c = begin; c < end; ++c) bootstrap(in + c * width, test_vector, out + c * width);
  };
  parallel_ranges(count, parts, body);
}

}  // namespace ringfire::tfhe
