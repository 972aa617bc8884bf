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
  auto lanes = [&](const std::vector<u32>& w, std::size_t first, std::size_t per_block, std::size_t stride,
                   std::vector<u32>& out, std::vector<u32>& out_shoup) {
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

inline V load(const u32* p) { return _mm256_loadu_si256(reinterpret_cast<const V*>(p)); }
inline void store(u32* p, V v) { _mm256_storeu_si256(reinterpret_cast<V*>(p), v); }
inline V splat(u32 x) { return _mm256_set1_epi32(static_cast<int>(x)); }
// x - bound if x >= bound (x < 2 bound + 2^32 - ... : bound <= 2^31, wraps otherwise).
inline V reduce_below(V x, V bound) { return _mm256_min_epu32(x, _mm256_sub_epi32(x, bound)); }

// y w mod q in [0, 2q) for any y (Shoup): ws = floor(w 2^32 / q), one value
// per lane. ws_odd holds the odd lanes' constants in the low halves.
// Odd lanes are moved to even positions by shuffles (port 5) rather than
// shifts, which would compete with the multiplies for ports 0 and 1.
inline V odd_to_even(V x) { return _mm256_shuffle_epi32(x, 0xF5); }
inline V mul_shoup(V y, V w, V ws, V ws_odd, V q) {
  const V even = odd_to_even(_mm256_mul_epu32(y, ws));
  const V odd = _mm256_mul_epu32(odd_to_even(y), ws_odd);
  const V hi = _mm256_blend_epi32(even, odd, 0xAA);
  return _mm256_sub_epi32(_mm256_mullo_epi32(y, w), _mm256_mullo_epi32(hi, q));
}

struct Twiddle {
  V w, ws, ws_odd;
};
inline Twiddle splat_twiddle(u32 w, u32 ws) { return {splat(w), splat(ws), splat(ws)}; }
inline Twiddle lane_twiddle(const u32* w, const u32* ws) {
  const V s = load(ws);
  return {load(w), s, odd_to_even(s)};
}

// Harvey's butterflies. CT: x, y in [0, 4q) -> [0, 4q).
inline void ct(V& x, V& y, const Twiddle& t, V q, V two_q) {
  x = reduce_below(x, two_q);
  const V p = mul_shoup(y, t.w, t.ws, t.ws_odd, q);
  y = _mm256_sub_epi32(_mm256_add_epi32(x, two_q), p);
  x = _mm256_add_epi32(x, p);
}
// GS: x, y in [0, 2q) -> [0, 2q).
inline void gs(V& x, V& y, const Twiddle& t, V q, V two_q) {
  const V d = _mm256_sub_epi32(_mm256_add_epi32(x, two_q), y);
  x = reduce_below(_mm256_add_epi32(x, y), two_q);
  y = mul_shoup(d, t.w, t.ws, t.ws_odd, q);
}

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
  const V q = splat(q_), two_q = splat(2 * q_);
  // The stages with t >= 8 two at a time (radix 4: one load and store of
  // four vectors for two butterflies each), the last odd one alone.
  std::size_t t = n_ / 2, m = 1;
  for (; t >= 16; m *= 4, t /= 4) {
    const std::size_t h = t / 2;
    for (std::size_t i = 0; i < m; ++i) {
      const Twiddle wa = splat_twiddle(fwd_[m + i], fwd_shoup_[m + i]);
      const Twiddle wb0 = splat_twiddle(fwd_[2 * m + 2 * i], fwd_shoup_[2 * m + 2 * i]);
      const Twiddle wb1 = splat_twiddle(fwd_[2 * m + 2 * i + 1], fwd_shoup_[2 * m + 2 * i + 1]);
      u32* x = a + 2 * i * t;
      for (std::size_t j = 0; j < h; j += 8) {
        V x0 = load(x + j), x1 = load(x + h + j), x2 = load(x + t + j), x3 = load(x + t + h + j);
        ct(x0, x2, wa, q, two_q);
        ct(x1, x3, wa, q, two_q);
        ct(x0, x1, wb0, q, two_q);
        ct(x2, x3, wb1, q, two_q);
        store(x + j, x0), store(x + h + j, x1), store(x + t + j, x2), store(x + t + h + j, x3);
      }
    }
  }
  if (t == 8) {
    for (std::size_t i = 0; i < m; ++i) {
      const Twiddle w = splat_twiddle(fwd_[m + i], fwd_shoup_[m + i]);
      u32* x = a + 2 * i * t;
      V vx = load(x), vy = load(x + 8);
      ct(vx, vy, w, q, two_q);
      store(x, vx), store(x + 8, vy);
    }
  }
  for (std::size_t b = 0; b < n_ / 64; ++b) {
    u32* block = a + 64 * b;
    V w[8];
    for (int k = 0; k < 8; ++k) w[k] = load(block + 8 * k);
    transpose8(w);  // w[j] lane k = index 64 b + 8 k + j
    const Twiddle t4 = lane_twiddle(&f4_[b * 8], &f4s_[b * 8]);
    for (int j = 0; j < 4; ++j) ct(w[j], w[j + 4], t4, q, two_q);
    for (int p = 0; p < 2; ++p) {
      const Twiddle t2 = lane_twiddle(&f2_[(b * 2 + p) * 8], &f2s_[(b * 2 + p) * 8]);
      ct(w[4 * p], w[4 * p + 2], t2, q, two_q);
      ct(w[4 * p + 1], w[4 * p + 3], t2, q, two_q);
    }
    for (int p = 0; p < 4; ++p) {
      const Twiddle t1 = lane_twiddle(&f1_[(b * 4 + p) * 8], &f1s_[(b * 4 + p) * 8]);
      ct(w[2 * p], w[2 * p + 1], t1, q, two_q);
    }
    for (int j = 0; j < 8; ++j) store(block + 8 * j, reduce_below(reduce_below(w[j], two_q), q));
  }
}

void Ntt32::inverse_avx2(u32* a, u32* accumulate) const {
  const V q = splat(q_), two_q = splat(2 * q_);
  for (std::size_t b = 0; b < n_ / 64; ++b) {
    u32* block = a + 64 * b;
    V w[8];
    for (int j = 0; j < 8; ++j) w[j] = load(block + 8 * j);  // w[j] lane k = index 64 b + 8 k + j
    for (int p = 0; p < 4; ++p) {
      const Twiddle t1 = lane_twiddle(&i1_[(b * 4 + p) * 8], &i1s_[(b * 4 + p) * 8]);
      gs(w[2 * p], w[2 * p + 1], t1, q, two_q);
    }
    for (int p = 0; p < 2; ++p) {
      const Twiddle t2 = lane_twiddle(&i2_[(b * 2 + p) * 8], &i2s_[(b * 2 + p) * 8]);
      gs(w[4 * p], w[4 * p + 2], t2, q, two_q);
      gs(w[4 * p + 1], w[4 * p + 3], t2, q, two_q);
    }
    const Twiddle t4 = lane_twiddle(&i4_[b * 8], &i4s_[b * 8]);
    for (int j = 0; j < 4; ++j) gs(w[j], w[j + 4], t4, q, two_q);
    transpose8(w);
    for (int k = 0; k < 8; ++k) store(block + 8 * k, w[k]);
  }
  // Stages t = 8 ... N/4 two at a time (radix 4), an odd one alone.
  std::size_t t = 8, m = n_ / 16;
  for (; m >= 4; m /= 4, t *= 4) {
    for (std::size_t g = 0; g < m / 2; ++g) {
      const Twiddle wa0 = splat_twiddle(inv_[m + 2 * g], inv_shoup_[m + 2 * g]);
      const Twiddle wa1 = splat_twiddle(inv_[m + 2 * g + 1], inv_shoup_[m + 2 * g + 1]);
      const Twiddle wb = splat_twiddle(inv_[m / 2 + g], inv_shoup_[m / 2 + g]);
      u32* x = a + 4 * g * t;
      for (std::size_t j = 0; j < t; j += 8) {
        V x0 = load(x + j), x1 = load(x + t + j), x2 = load(x + 2 * t + j), x3 = load(x + 3 * t + j);
        gs(x0, x1, wa0, q, two_q);
        gs(x2, x3, wa1, q, two_q);
        gs(x0, x2, wb, q, two_q);
        gs(x1, x3, wb, q, two_q);
        store(x + j, x0), store(x + t + j, x1), store(x + 2 * t + j, x2), store(x + 3 * t + j, x3);
      }
    }
  }
  if (m == 2) {
    for (std::size_t i = 0; i < 2; ++i) {
      const Twiddle w = splat_twiddle(inv_[2 + i], inv_shoup_[2 + i]);
      u32* x = a + 2 * i * t;
      for (std::size_t j = 0; j < t; j += 8) {
        V vx = load(x + j), vy = load(x + t + j);
        gs(vx, vy, w, q, two_q);
        store(x + j, vx), store(x + t + j, vy);
      }
    }
  }
  // Last stage (t = N/2) with 1/N folded in; outputs reduced below q.
  const Twiddle scale = splat_twiddle(n_inv_, n_inv_shoup_);
  const Twiddle last = splat_twiddle(last_n_inv_, last_n_inv_shoup_);
  u32* x = a;
  u32* y = a + n_ / 2;
  u32* ax = accumulate == nullptr ? x : accumulate;
  u32* ay = ax + n_ / 2;
  for (std::size_t j = 0; j < n_ / 2; j += 8) {
    const V vx = load(x + j), vy = load(y + j);
    const V s = _mm256_add_epi32(vx, vy);
    const V d = _mm256_sub_epi32(_mm256_add_epi32(vx, two_q), vy);
    V rx = reduce_below(mul_shoup(s, scale.w, scale.ws, scale.ws_odd, q), q);
    V ry = reduce_below(mul_shoup(d, last.w, last.ws, last.ws_odd, q), q);
    if (accumulate != nullptr) {
      rx = reduce_below(_mm256_add_epi32(rx, load(ax + j)), q);
      ry = reduce_below(_mm256_add_epi32(ry, load(ay + j)), q);
    }
    store(ax + j, rx);
    store(ay + j, ry);
  }
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
