#include "ringfire/tfhe/ntt32.h"

#include "mod32.h"

#include <bit>

#include "ringfire/arith/modular.h"
#include "ringfire/arith/modulus.h"
#include "ringfire/arith/primes.h"
#include "ringfire/base/errors.h"
#include "ringfire/ring/ntt_tables.h"
#include "ringfire/rlwe/prng.h"

#if defined(__AVX2__)
#include <immintrin.h>
#define RF_TFHE_AVX2 1
#define RF_NTT32_TARGET  // the file's own target (the build's baseline with AVX2)
#include "ntt32_stages.h"
#else
#define RF_TFHE_AVX2 0
#endif

namespace ringfire::tfhe {

namespace {

using u64 = std::uint64_t;

u32 shoup_constant(u32 w, u32 q) { return static_cast<u32>((static_cast<u64>(w) << 32) / q); }

// The evaluation layout's position of Alg. 5's index e (a transpose inside
// each block of 64).
std::size_t layout_slot(std::size_t e) { return (e & ~std::size_t{63}) | ((e & 7) << 3) | ((e >> 3) & 7); }

}  // namespace

Ntt32::Ntt32(std::size_t n, u32 q, Isa isa) : n_(n), isa_(isa), q_(q) {
  check_isa(isa);
  if (isa_ == Isa::avx512 && n < 128) isa_ = Isa::avx2;  // it transforms two 64-blocks at a time
  require(n >= 64 && n <= (std::size_t{1} << 13) && std::has_single_bit(n), "tfhe.Ntt32",
          "N must be a power of two in [64, 8192], got " + std::to_string(n));
  require(q < (u32{1} << 29) && is_ntt_friendly(q, n), "tfhe.Ntt32",
          "q must be a prime below 2^29 with q = 1 mod 2N; got q=" + std::to_string(q) + ", N=" + std::to_string(n));
  log_n_ = std::countr_zero(n);
  // -q^-1 mod 2^32 by Newton's iteration (q is odd).
  u32 inv = q;
  for (int i = 0; i < 5; ++i) inv *= 2 - q * inv;
  neg_q_inv_ = ~inv + 1;
  r2_ = static_cast<u32>((static_cast<unsigned __int128>(1) << 64) % q);

  const NttTables tables(n, Modulus(q));
  fwd_.resize(n), fwd_shoup_.resize(n), inv_.resize(n), inv_shoup_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    fwd_[i] = static_cast<u32>(tables.forward()[i]);
    inv_[i] = static_cast<u32>(tables.inverse()[i]);
    fwd_shoup_[i] = shoup_constant(fwd_[i], q);
    inv_shoup_[i] = shoup_constant(inv_[i], q);
  }
  n_inv_ = static_cast<u32>(inv_mod(n, q));
  n_inv_shoup_ = shoup_constant(n_inv_, q);
  last_n_inv_ = mul_mod(inv_[1], n_inv_, q);
  last_n_inv_shoup_ = shoup_constant(last_n_inv_, q);

  const std::size_t blocks = n / 64;
  auto lanes = [&](const CacheAlignedVector<u32>& w, std::size_t first, std::size_t per_block, std::size_t stride,
                   CacheAlignedVector<u32>& out, CacheAlignedVector<u32>& out_shoup) {
    // Lane k of block b, pair p: the twiddle of group first + 8 stride b + stride k + p.
    out.resize(blocks * per_block * 8), out_shoup.resize(out.size());
    for (std::size_t b = 0; b < blocks; ++b)
      for (std::size_t p = 0; p < per_block; ++p)
        for (std::size_t k = 0; k < 8; ++k) {
          const u32 v = w[first + b * 8 * stride + stride * k + p];
          out[(b * per_block + p) * 8 + k] = v;
          out_shoup[(b * per_block + p) * 8 + k] = shoup_constant(v, q);
        }
  };
  // Stage t=4: group 8b + k; t=2: group 16b + 2k + p; t=1: group 32b + 4k + p.
  lanes(fwd_, n / 8, 1, 1, f4_, f4s_);
  lanes(fwd_, n / 4, 2, 2, f2_, f2s_);
  lanes(fwd_, n / 2, 4, 4, f1_, f1s_);
  lanes(inv_, n / 8, 1, 1, i4_, i4s_);
  lanes(inv_, n / 4, 2, 2, i2_, i2s_);
  lanes(inv_, n / 2, 4, 4, i1_, i1s_);
}

u32 Ntt32::to_montgomery(u32 x) const {
  // x R = REDC(x R^2).
  const u32 r = montgomery_reduce(static_cast<u64>(x) * r2_, q_, neg_q_inv_);
  return r >= q_ ? r - q_ : r;
}

// ---- scalar reference ------------------------------------------------------------

void Ntt32::forward_scalar(u32* a) const {
  const u32 q = q_;
  std::size_t t = n_;
  for (std::size_t m = 1; m < n_; m *= 2) {
    t /= 2;
    for (std::size_t i = 0; i < m; ++i) {
      const u32 w = fwd_[m + i];
      for (std::size_t j = 2 * i * t; j < 2 * i * t + t; ++j) {
        const u32 x = a[j], y = mul_mod(a[j + t], w, q);
        a[j] = add_mod(x, y, q);
        a[j + t] = sub_mod(x, y, q);
      }
    }
  }
  std::vector<u32> tmp(a, a + n_);
  for (std::size_t e = 0; e < n_; ++e) a[layout_slot(e)] = tmp[e];
  secure_zero(tmp.data(), tmp.size() * sizeof(u32));  // key generation transforms secrets here
}

void Ntt32::inverse_scalar(u32* a, u32* accumulate) const {
  const u32 q = q_;
  {
    std::vector<u32> tmp(a, a + n_);
    for (std::size_t e = 0; e < n_; ++e) a[e] = tmp[layout_slot(e)] % q;
    secure_zero(tmp.data(), tmp.size() * sizeof(u32));
  }
  std::size_t t = 1;
  for (std::size_t m = n_ / 2; m >= 1; m /= 2) {
    for (std::size_t i = 0; i < m; ++i) {
      const u32 w = inv_[m + i];
      for (std::size_t j = 2 * i * t; j < 2 * i * t + t; ++j) {
        const u32 x = a[j], y = a[j + t];
        a[j] = add_mod(x, y, q);
        a[j + t] = mul_mod(sub_mod(x, y, q), w, q);
      }
    }
    t *= 2;
  }
  for (std::size_t i = 0; i < n_; ++i) a[i] = mul_mod(a[i], n_inv_, q);
  if (accumulate != nullptr)
    for (std::size_t i = 0; i < n_; ++i) accumulate[i] = add_mod(accumulate[i], a[i], q);
}

// ---- AVX2 ------------------------------------------------------------------------

#if RF_TFHE_AVX2
namespace {

using V = __m256i;

// Eight 32-bit lanes (ntt32_stages.h's lane type).
struct Avx2Lanes {
  using V = __m256i;
  static constexpr std::size_t width = 8;
  static V load(const u32* p) { return _mm256_loadu_si256(reinterpret_cast<const V*>(p)); }
  static void store(u32* p, V v) { _mm256_storeu_si256(reinterpret_cast<V*>(p), v); }
  static V splat(u32 x) { return _mm256_set1_epi32(static_cast<int>(x)); }
  static V add(V x, V y) { return _mm256_add_epi32(x, y); }
  static V sub(V x, V y) { return _mm256_sub_epi32(x, y); }
  // x - bound if x >= bound (bound <= 2^31: an x below bound wraps above x).
  static V reduce_below(V x, V bound) { return _mm256_min_epu32(x, _mm256_sub_epi32(x, bound)); }
  // Odd lanes to even positions by a shuffle (port 5) rather than a shift,
  // which would compete with the multiplies for ports 0 and 1.
  static V odd_to_even(V x) { return _mm256_shuffle_epi32(x, 0xF5); }
  // y w mod q in [0, 2q) for any y (Shoup): ws = floor(w 2^32 / q), one value
  // per lane; ws_odd holds the odd lanes' constants in the low halves.
  static V mul_shoup(V y, V w, V ws, V ws_odd, V q) {
    const V even = odd_to_even(_mm256_mul_epu32(y, ws));
    const V odd = _mm256_mul_epu32(odd_to_even(y), ws_odd);
    const V hi = _mm256_blend_epi32(even, odd, 0xAA);
    return _mm256_sub_epi32(_mm256_mullo_epi32(y, w), _mm256_mullo_epi32(hi, q));
  }
};
using L = Avx2Lanes;

inline Twiddle<L> lane_twiddle(const u32* w, const u32* ws) { return make_twiddle<L>(L::load(w), L::load(ws)); }

inline void transpose8(V r[8]) {
  const V t0 = _mm256_unpacklo_epi32(r[0], r[1]), t1 = _mm256_unpackhi_epi32(r[0], r[1]);
  const V t2 = _mm256_unpacklo_epi32(r[2], r[3]), t3 = _mm256_unpackhi_epi32(r[2], r[3]);
  const V t4 = _mm256_unpacklo_epi32(r[4], r[5]), t5 = _mm256_unpackhi_epi32(r[4], r[5]);
  const V t6 = _mm256_unpacklo_epi32(r[6], r[7]), t7 = _mm256_unpackhi_epi32(r[6], r[7]);
  const V u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
  const V u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
  const V u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
  const V u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
  r[0] = _mm256_permute2x128_si256(u0, u4, 0x20);
  r[1] = _mm256_permute2x128_si256(u1, u5, 0x20);
  r[2] = _mm256_permute2x128_si256(u2, u6, 0x20);
  r[3] = _mm256_permute2x128_si256(u3, u7, 0x20);
  r[4] = _mm256_permute2x128_si256(u0, u4, 0x31);
  r[5] = _mm256_permute2x128_si256(u1, u5, 0x31);
  r[6] = _mm256_permute2x128_si256(u2, u6, 0x31);
  r[7] = _mm256_permute2x128_si256(u3, u7, 0x31);
}

}  // namespace

void Ntt32::forward_avx2(u32* a) const {
  const V q = L::splat(q_), two_q = L::splat(2 * q_);
  forward_wide_stages<L>(a, n_, fwd_.data(), fwd_shoup_.data(), q, two_q);
  // The in-block stages t = 4, 2, 1, one block of 64 at a time.
  for (std::size_t b = 0; b < n_ / 64; ++b) {
    u32* block = a + 64 * b;
    V w[8];
    for (int k = 0; k < 8; ++k) w[k] = L::load(block + 8 * k);
    transpose8(w);  // w[j] lane k = index 64 b + 8 k + j
    const Twiddle<L> t4 = lane_twiddle(&f4_[b * 8], &f4s_[b * 8]);
    for (int j = 0; j < 4; ++j) ct<L>(w[j], w[j + 4], t4, q, two_q);
    for (int p = 0; p < 2; ++p) {
      const Twiddle<L> t2 = lane_twiddle(&f2_[(b * 2 + p) * 8], &f2s_[(b * 2 + p) * 8]);
      ct<L>(w[4 * p], w[4 * p + 2], t2, q, two_q);
      ct<L>(w[4 * p + 1], w[4 * p + 3], t2, q, two_q);
    }
    for (int p = 0; p < 4; ++p) {
      const Twiddle<L> t1 = lane_twiddle(&f1_[(b * 4 + p) * 8], &f1s_[(b * 4 + p) * 8]);
      ct<L>(w[2 * p], w[2 * p + 1], t1, q, two_q);
    }
    for (int j = 0; j < 8; ++j) L::store(block + 8 * j, L::reduce_below(L::reduce_below(w[j], two_q), q));
  }
}

void Ntt32::inverse_avx2(u32* a, u32* accumulate) const {
  const V q = L::splat(q_), two_q = L::splat(2 * q_);
  for (std::size_t b = 0; b < n_ / 64; ++b) {
    u32* block = a + 64 * b;
    V w[8];
    for (int j = 0; j < 8; ++j) w[j] = L::load(block + 8 * j);  // w[j] lane k = index 64 b + 8 k + j
    for (int p = 0; p < 4; ++p) {
      const Twiddle<L> t1 = lane_twiddle(&i1_[(b * 4 + p) * 8], &i1s_[(b * 4 + p) * 8]);
      gs<L>(w[2 * p], w[2 * p + 1], t1, q, two_q);
    }
    for (int p = 0; p < 2; ++p) {
      const Twiddle<L> t2 = lane_twiddle(&i2_[(b * 2 + p) * 8], &i2s_[(b * 2 + p) * 8]);
      gs<L>(w[4 * p], w[4 * p + 2], t2, q, two_q);
      gs<L>(w[4 * p + 1], w[4 * p + 3], t2, q, two_q);
    }
    const Twiddle<L> t4 = lane_twiddle(&i4_[b * 8], &i4s_[b * 8]);
    for (int j = 0; j < 4; ++j) gs<L>(w[j], w[j + 4], t4, q, two_q);
    transpose8(w);
    for (int k = 0; k < 8; ++k) L::store(block + 8 * k, w[k]);
  }
  inverse_wide_stages<L>(a, n_, inv_.data(), inv_shoup_.data(), q, two_q);
  inverse_last_stage<L>(a, accumulate, n_, n_inv_, n_inv_shoup_, last_n_inv_, last_n_inv_shoup_, q, two_q);
}

#else

void Ntt32::forward_avx2(u32* a) const { forward_scalar(a); }
void Ntt32::inverse_avx2(u32* a, u32* accumulate) const { inverse_scalar(a, accumulate); }

#endif

void Ntt32::forward(u32* a) const {
  switch (isa_) {
    case Isa::avx512: return forward_avx512(a);
    case Isa::avx2: return forward_avx2(a);
    case Isa::scalar: return forward_scalar(a);
  }
}

void Ntt32::inverse(u32* a, u32* accumulate) const {
  switch (isa_) {
    case Isa::avx512: return inverse_avx512(a, accumulate);
    case Isa::avx2: return inverse_avx2(a, accumulate);
    case Isa::scalar: return inverse_scalar(a, accumulate);
  }
}

}  // namespace ringfire::tfhe
