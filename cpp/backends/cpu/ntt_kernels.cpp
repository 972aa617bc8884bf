// Negacyclic NTT kernels: Harvey lazy butterflies with Shoup twiddles, AVX2
// vectorisation (4 x 64-bit lanes, the 64x64-bit products assembled from
// 32-bit multiplies), cache blocking (the stages whose span fits in L1 run
// depth-first, block by block) and fused radix-4 passes for the two stages
// with tiny distances (k = 1, 2 or 2, 4), where lanes run across groups.
//
// Measured on Zen 3 (one core, 61-bit q): vectorised radix-2 stages beat
// radix-4 passes over the same data (the longer dependency chain of a radix-4
// butterfly hurts more than the halved loads/stores help), so the big-k
// stages are radix-2 and only the tiny-k ends are fused.
//
// Value ranges (q < 2^61, so 4q < 2^63: no overflow, and signed 64-bit
// compares order the values correctly):
//   forward (Cooley-Tukey): every stage maps [0, 4q) -> [0, 4q); the last
//     pass reduces to [0, q).
//   inverse (Gentleman-Sande): every stage maps [0, 2q) -> [0, 2q); the last
//     stage multiplies by the folded 1/N constants and reduces to [0, q).
// The outputs are fully reduced, so they do not depend on the pass structure.
//
// Stage numbering: the forward stage s (s = 0, 1, ...) has m = 2^s groups,
// pairs elements at distance k = N / 2^(s+1) and uses twiddle Psi_br[m + g]
// in group g. The inverse stage lm has m = 2^lm, distance k = N / 2^(lm+1)
// and twiddle Psi^-1_br[m + g]; it runs from lm = log2(N) - 1 down to 0.
#include "ntt_kernels.h"

#include "avx2_modular.h"
#include "ntt_stages.h"
#include "rns_isa.h"

#include "ringfire/ring/kernel_bodies.h"

#include <algorithm>


namespace ringfire::cpu {

namespace {

using namespace ntt_stages;

// ===========================================================================
// Scalar butterflies

// The scalar butterflies are the shared RF_HD bodies the CUDA kernels use
// (ring/kernel_bodies.h): Cooley-Tukey in/out [0, 4q), Gentleman-Sande [0, 2q).
using kernel::ct_butterfly;
using kernel::gs_butterfly;

// [0, 4q) -> [0, q).
inline u64 reduce_4q(u64 v, u64 q) {
  v -= (v >= 2 * q) ? 2 * q : 0;
  v -= (v >= q) ? q : 0;
  return v;
}

// ===========================================================================
// AVX2 kernels' own primitives (the shared ones: avx2_modular.h)

#if RF_CPU_AVX2
using namespace avx2;

// [p[0], p[0], p[1], p[1]] (two broadcast loads and a blend; vpermq is slow
// on Zen 3).
inline V vload_pairs(const u64* p) {
  return _mm256_blend_epi32(vbroadcast(p[0]), vbroadcast(p[1]), 0xF0);
}
// [lo[0], lo[1], hi[0], hi[1]] and its inverse.
inline V vload_halves(const u64* lo, const u64* hi) {
  const __m128i l = _mm_loadu_si128(reinterpret_cast<const __m128i*>(lo));
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(hi));
  return _mm256_inserti128_si256(_mm256_castsi128_si256(l), h, 1);
}
inline void vstore_halves(u64* lo, u64* hi, V v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(lo), _mm256_castsi256_si128(v));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(hi), _mm256_extracti128_si256(v, 1));
}

// Lane-wise ct_butterfly. In/out [0, 4q).
inline void vct(V& x, V& y, const VShoup& t, const VMod& m) {
  const V xv = vsub_if_ge(x, m.two_q);
  const V tv = vmul_shoup_lazy(y, t, m);
  x = _mm256_add_epi64(xv, tv);
  y = _mm256_add_epi64(_mm256_sub_epi64(xv, tv), m.two_q);
}

// Lane-wise gs_butterfly. In/out [0, 2q).
inline void vgs(V& x, V& y, const VShoup& t, const VMod& m) {
  const V s = _mm256_add_epi64(x, y);
  const V d = _mm256_add_epi64(_mm256_sub_epi64(x, y), m.two_q);
  x = vsub_if_ge(s, m.two_q);
  y = vmul_shoup_lazy(d, t, m);
}

// [0, 4q) -> [0, q).
inline V vreduce_4q(V v, const VMod& m) { return vsub_if_ge(vsub_if_ge(v, m.two_q), m.q); }
#endif

// ===========================================================================
// Forward kernels

// One radix-2 stage of distance k over `len` elements (a multiple of 2k):
// butterflies on (a[2gk + j], a[2gk + k + j]) with twiddle tw[g]. The
// Butterfly policy supplies the scalar and vector forms (CT or GS).
template <class Butterfly>
void radix2_stage(u64* a, std::size_t len, std::size_t k, StageTwiddles tw, u64 q) {
#if RF_CPU_AVX2
  const VMod m = vmod(q);
#endif
  for (std::size_t g = 0; g < len / (2 * k); ++g) {
    u64* x = a + 2 * g * k;
    u64* y = x + k;
    std::size_t j = 0;
#if RF_CPU_AVX2
    const VShoup w = vshoup(tw.w[g], tw.ws[g]);
    for (; j + 4 <= k; j += 4) {
      V xv = vload(x + j), yv = vload(y + j);
      Butterfly::vector(xv, yv, w, m);
      vstore(x + j, xv);
      vstore(y + j, yv);
    }
#endif
    for (; j < k; ++j) Butterfly::scalar(x[j], y[j], tw.w[g], tw.ws[g], q);
  }
}

struct CooleyTukey {
  static void scalar(u64& x, u64& y, u64 w, u64 ws, u64 q) { ct_butterfly(x, y, w, ws, q); }
#if RF_CPU_AVX2
  static void vector(V& x, V& y, const VShoup& w, const VMod& m) { vct(x, y, w, m); }
#endif
};

struct GentlemanSande {
  static void scalar(u64& x, u64& y, u64 w, u64 ws, u64 q) { gs_butterfly(x, y, w, ws, q); }
#if RF_CPU_AVX2
  static void vector(V& x, V& y, const VShoup& w, const VMod& m) { vgs(x, y, w, m); }
#endif
};

// One CT stage of distance k. In/out [0, 4q).
void forward_radix2(u64* a, std::size_t len, std::size_t k, StageTwiddles tw, u64 q) {
  radix2_stage<CooleyTukey>(a, len, k, tw, q);
}

// The last two CT stages (distances k and h = k/2) over `len` elements,
// reducing to [0, q): group g holds x0..x3 = a[2gk + j + {0, h, 2h, 3h}],
// j < h; t1 has one twiddle per group, t2 two. Input [0, 4q).
void forward_final_pair_scalar(u64* a, std::size_t len, std::size_t k, StageTwiddles t1, StageTwiddles t2, u64 q) {
  const std::size_t h = k / 2;
  for (std::size_t g = 0; g < len / (2 * k); ++g) {
    u64* x0 = a + 2 * g * k;
    u64* x1 = x0 + h;
    u64* x2 = x0 + 2 * h;
    u64* x3 = x0 + 3 * h;
    for (std::size_t j = 0; j < h; ++j) {
      u64 v0 = x0[j], v1 = x1[j], v2 = x2[j], v3 = x3[j];
      ct_butterfly(v0, v2, t1.w[g], t1.ws[g], q);
      ct_butterfly(v1, v3, t1.w[g], t1.ws[g], q);
      ct_butterfly(v0, v1, t2.w[2 * g], t2.ws[2 * g], q);
      ct_butterfly(v2, v3, t2.w[2 * g + 1], t2.ws[2 * g + 1], q);
      x0[j] = reduce_4q(v0, q);
      x1[j] = reduce_4q(v1, q);
      x2[j] = reduce_4q(v2, q);
      x3[j] = reduce_4q(v3, q);
    }
  }
}

#if RF_CPU_AVX2
// k = 4 (h = 2): one 8-element group per step, as lo = a[0..3], hi = a[4..7].
// Stage 1 pairs lo with hi (one twiddle); stage 2 pairs [a0 a1 a4 a5] with
// [a2 a3 a6 a7] (twiddles t2[2g], t2[2g], t2[2g+1], t2[2g+1]).
void forward_final_pair_k4_avx2(u64* a, std::size_t len, StageTwiddles t1, StageTwiddles t2, u64 q) {
  const VMod m = vmod(q);
  for (std::size_t g = 0; g < len / 8; ++g) {
    u64* p = a + 8 * g;
    V lo = vload(p), hi = vload(p + 4);
    vct(lo, hi, vshoup(t1.w[g], t1.ws[g]), m);
    V x = _mm256_permute2x128_si256(lo, hi, 0x20), y = _mm256_permute2x128_si256(lo, hi, 0x31);
    vct(x, y, vshoup(vload_pairs(t2.w + 2 * g), vload_pairs(t2.ws + 2 * g)), m);
    x = vreduce_4q(x, m);
    y = vreduce_4q(y, m);
    vstore_halves(p, p + 4, x);
    vstore_halves(p + 2, p + 6, y);
  }
}

// k = 2 (h = 1): two 4-element groups P, Q per step. Stage 1 pairs
// [p0 p1 q0 q1] with [p2 p3 q2 q3] (twiddles t1[g], t1[g], t1[g+1], t1[g+1]);
// stage 2 pairs [p0 p2 q0 q2] with [p1 p3 q1 q3] (t2[2g .. 2g+3]).
void forward_final_pair_k2_avx2(u64* a, std::size_t len, StageTwiddles t1, StageTwiddles t2, u64 q) {
  const VMod m = vmod(q);
  for (std::size_t g = 0; g < len / 4; g += 2) {
    u64* p = a + 4 * g;
    V x = vload_halves(p, p + 4), y = vload_halves(p + 2, p + 6);
    vct(x, y, vshoup(vload_pairs(t1.w + g), vload_pairs(t1.ws + g)), m);
    V u = _mm256_unpacklo_epi64(x, y), v = _mm256_unpackhi_epi64(x, y);
    vct(u, v, vshoup(vload(t2.w + 2 * g), vload(t2.ws + 2 * g)), m);
    u = vreduce_4q(u, m);
    v = vreduce_4q(v, m);
    vstore_halves(p, p + 4, _mm256_unpacklo_epi64(u, v));
    vstore_halves(p + 2, p + 6, _mm256_unpackhi_epi64(u, v));
  }
}
#endif

void forward_final_pair(u64* a, std::size_t len, std::size_t k, StageTwiddles t1, StageTwiddles t2, u64 q) {
#if RF_CPU_AVX2
  if (k == 4) return forward_final_pair_k4_avx2(a, len, t1, t2, q);
  if (k == 2 && len >= 8) return forward_final_pair_k2_avx2(a, len, t1, t2, q);
#endif
  forward_final_pair_scalar(a, len, k, t1, t2, q);
}

// ===========================================================================
// Forward driver

// Forward stage s (m = 2^s, k = N / 2^(s+1)) on [offset, offset + len).
void forward_stage(u64* a, const NttTables& t, int s, std::size_t offset, std::size_t len) {
  const std::size_t m = std::size_t{1} << s;
  const std::size_t k = t.n() / (2 * m);
  forward_radix2(a + offset, len, k, forward_twiddles(t, m, k, offset), t.modulus().value());
}

// Stages s and s + 1 fused, the output reduced to [0, q).
void forward_final_stages(u64* a, const NttTables& t, int s, std::size_t offset, std::size_t len) {
  const std::size_t m = std::size_t{1} << s;
  const std::size_t k = t.n() / (2 * m);
  forward_final_pair(a + offset, len, k, forward_twiddles(t, m, k, offset), forward_twiddles(t, 2 * m, k / 2, offset),
                     t.modulus().value());
}

// Stages 0 .. num_stages-1 of Alg. 5; input [0, 4q), output [0, q).
void forward_transform(u64* a, const NttTables& t, int num_stages) {
  const u64 q = t.modulus().value();
  const std::size_t n = t.n();
  if (num_stages == 1) {  // N = 4, truncated
    forward_stage(a, t, 0, 0, n);
    for (std::size_t j = 0; j < n; ++j) a[j] = reduce_4q(a[j], q);
    return;
  }
  const int last_pair = num_stages - 2;
  // Breadth-first while a stage's span 2k = N / 2^s exceeds the block.
  int s = 0;
  for (; s < last_pair && (n >> s) > kBlock; ++s) forward_stage(a, t, s, 0, n);
  // Depth-first: the remaining stages block by block (the final pair's span
  // is at most 16 elements, so it always fits).
  const std::size_t block = std::min(n, kBlock);
  for (std::size_t offset = 0; offset < n; offset += block) {
    for (int r = s; r < last_pair; ++r) forward_stage(a, t, r, offset, block);
    forward_final_stages(a, t, last_pair, offset, block);
  }
}

// ===========================================================================
// Inverse kernels

// One GS stage of distance k. In/out [0, 2q).
void inverse_radix2(u64* a, std::size_t len, std::size_t k, StageTwiddles tw, u64 q) {
  radix2_stage<GentlemanSande>(a, len, k, tw, q);
}

// The first two GS stages (distances k then 2k) over `len` elements: group
// g holds x0..x3 = a[4gk + j + {0, k, 2k, 3k}], j < k; t1 has two twiddles
// per group, t2 one. In/out [0, 2q).
void inverse_head_pair_scalar(u64* a, std::size_t len, std::size_t k, StageTwiddles t1, StageTwiddles t2, u64 q) {
  for (std::size_t g = 0; g < len / (4 * k); ++g) {
    u64* x0 = a + 4 * g * k;
    u64* x1 = x0 + k;
    u64* x2 = x0 + 2 * k;
    u64* x3 = x0 + 3 * k;
    for (std::size_t j = 0; j < k; ++j) {
      u64 v0 = x0[j], v1 = x1[j], v2 = x2[j], v3 = x3[j];
      gs_butterfly(v0, v1, t1.w[2 * g], t1.ws[2 * g], q);
      gs_butterfly(v2, v3, t1.w[2 * g + 1], t1.ws[2 * g + 1], q);
      gs_butterfly(v0, v2, t2.w[g], t2.ws[g], q);
      gs_butterfly(v1, v3, t2.w[g], t2.ws[g], q);
      x0[j] = v0;
      x1[j] = v1;
      x2[j] = v2;
      x3[j] = v3;
    }
  }
}

#if RF_CPU_AVX2
// k = 2: one 8-element group per step. Stage 1 pairs [a0 a1 a4 a5] with
// [a2 a3 a6 a7] (twiddles t1[2g], t1[2g], t1[2g+1], t1[2g+1]); stage 2
// pairs a[0..3] with a[4..7] (one twiddle).
void inverse_head_pair_k2_avx2(u64* a, std::size_t len, StageTwiddles t1, StageTwiddles t2, u64 q) {
  const VMod m = vmod(q);
  for (std::size_t g = 0; g < len / 8; ++g) {
    u64* p = a + 8 * g;
    V x = vload_halves(p, p + 4), y = vload_halves(p + 2, p + 6);
    vgs(x, y, vshoup(vload_pairs(t1.w + 2 * g), vload_pairs(t1.ws + 2 * g)), m);
    V lo = _mm256_permute2x128_si256(x, y, 0x20), hi = _mm256_permute2x128_si256(x, y, 0x31);
    vgs(lo, hi, vshoup(t2.w[g], t2.ws[g]), m);
    vstore(p, lo);
    vstore(p + 4, hi);
  }
}

// k = 1: two 4-element groups P, Q per step. Stage 1 pairs [p0 p2 q0 q2]
// with [p1 p3 q1 q3] (twiddles t1[2g .. 2g+3]); stage 2 pairs
// [p0 p1 q0 q1] with [p2 p3 q2 q3] (t2[g], t2[g], t2[g+1], t2[g+1]).
void inverse_head_pair_k1_avx2(u64* a, std::size_t len, StageTwiddles t1, StageTwiddles t2, u64 q) {
  const VMod m = vmod(q);
  for (std::size_t g = 0; g < len / 4; g += 2) {
    u64* p = a + 4 * g;
    const V x = vload_halves(p, p + 4), y = vload_halves(p + 2, p + 6);
    V u = _mm256_unpacklo_epi64(x, y), v = _mm256_unpackhi_epi64(x, y);
    vgs(u, v, vshoup(vload(t1.w + 2 * g), vload(t1.ws + 2 * g)), m);
    V s = _mm256_unpacklo_epi64(u, v), d = _mm256_unpackhi_epi64(u, v);
    vgs(s, d, vshoup(vload_pairs(t2.w + g), vload_pairs(t2.ws + g)), m);
    vstore_halves(p, p + 4, s);
    vstore_halves(p + 2, p + 6, d);
  }
}
#endif

void inverse_head_pair(u64* a, std::size_t len, std::size_t k, StageTwiddles t1, StageTwiddles t2, u64 q) {
#if RF_CPU_AVX2
  if (k == 2) return inverse_head_pair_k2_avx2(a, len, t1, t2, q);
  if (k == 1 && len >= 8) return inverse_head_pair_k1_avx2(a, len, t1, t2, q);
#endif
  inverse_head_pair_scalar(a, len, k, t1, t2, q);
}

// The last stage alone (m = 1; only N = 4 truncated needs it):
// x' = (x + y) scale, y' = (x - y) last with last = psi^-br(1) scale.
// In [0, 2q), out [0, q).
void inverse_last_stage(u64* a, std::size_t n, ShoupOperand scale, ShoupOperand last, u64 q) {
  u64* x = a;
  u64* y = a + n / 2;
  for (std::size_t j = 0; j < n / 2; ++j) {
    const u64 xv = x[j], yv = y[j];
    x[j] = mul_mod_shoup(xv + yv, scale.value, scale.quotient, q);
    y[j] = mul_mod_shoup(xv - yv + 2 * q, last.value, last.quotient, q);
  }
}

// The last two stages (m = 2, then m = 1 with the scale folded in) on
// x0..x3 = a[j + {0, 1, 2, 3} N/4]; in [0, 2q), out [0, q).
void inverse_last_two_stages(u64* a, const NttTables& t, ShoupOperand scale, ShoupOperand last) {
  const u64 q = t.modulus().value();
  const u64 two_q = 2 * q;
  const std::size_t h = t.n() / 4;
  const u64 w0 = t.inverse()[2], w0s = t.inverse_shoup()[2];
  const u64 w1 = t.inverse()[3], w1s = t.inverse_shoup()[3];
  u64* x0 = a;
  u64* x1 = a + h;
  u64* x2 = a + 2 * h;
  u64* x3 = a + 3 * h;
  std::size_t j = 0;
#if RF_CPU_AVX2
  const VMod m = vmod(q);
  const VShoup vw0 = vshoup(w0, w0s), vw1 = vshoup(w1, w1s);
  const VShoup vs = vshoup(scale.value, scale.quotient), vl = vshoup(last.value, last.quotient);
  for (; j + 4 <= h; j += 4) {
    V v0 = vload(x0 + j), v1 = vload(x1 + j), v2 = vload(x2 + j), v3 = vload(x3 + j);
    vgs(v0, v1, vw0, m);
    vgs(v2, v3, vw1, m);
    vstore(x0 + j, vmul_shoup(_mm256_add_epi64(v0, v2), vs, m));
    vstore(x2 + j, vmul_shoup(_mm256_add_epi64(_mm256_sub_epi64(v0, v2), m.two_q), vl, m));
    vstore(x1 + j, vmul_shoup(_mm256_add_epi64(v1, v3), vs, m));
    vstore(x3 + j, vmul_shoup(_mm256_add_epi64(_mm256_sub_epi64(v1, v3), m.two_q), vl, m));
  }
#endif
  for (; j < h; ++j) {
    u64 v0 = x0[j], v1 = x1[j], v2 = x2[j], v3 = x3[j];
    gs_butterfly(v0, v1, w0, w0s, q);
    gs_butterfly(v2, v3, w1, w1s, q);
    x0[j] = mul_mod_shoup(v0 + v2, scale.value, scale.quotient, q);
    x2[j] = mul_mod_shoup(v0 - v2 + two_q, last.value, last.quotient, q);
    x1[j] = mul_mod_shoup(v1 + v3, scale.value, scale.quotient, q);
    x3[j] = mul_mod_shoup(v1 - v3 + two_q, last.value, last.quotient, q);
  }
}

// ===========================================================================
// Inverse driver

// Inverse stage lm (m = 2^lm, k = N / 2^(lm+1)) on [offset, offset + len).
void inverse_stage(u64* a, const NttTables& t, int lm, std::size_t offset, std::size_t len) {
  const std::size_t m = std::size_t{1} << lm;
  const std::size_t k = t.n() / (2 * m);
  inverse_radix2(a + offset, len, k, inverse_twiddles(t, m, k, offset), t.modulus().value());
}

// Stages lm and lm - 1 fused.
void inverse_head_stages(u64* a, const NttTables& t, int lm, std::size_t offset, std::size_t len) {
  const std::size_t m = std::size_t{1} << lm;
  const std::size_t k = t.n() / (2 * m);
  inverse_head_pair(a + offset, len, k, inverse_twiddles(t, m, k, offset), inverse_twiddles(t, m / 2, 2 * k, offset),
                    t.modulus().value());
}

// Alg. 6 from stage lm_start down to 0; input [0, 2q), output [0, q).
// Stages lm_start .. 1 are plain GS stages, stage 0 carries the scale:
// the first two (tiny k) run fused, then radix-2 stages, then stages 1 and 0
// fused with the scale.
void inverse_transform(u64* a, const NttTables& t, int lm_start, ShoupOperand scale, ShoupOperand last) {
  const std::size_t n = t.n();
  if (lm_start == 0) {  // N = 4, truncated
    inverse_last_stage(a, n, scale, last, t.modulus().value());
    return;
  }
  // Depth-first, block by block: the head pair (span at most 8) and the
  // radix-2 stages whose span 2k = N / 2^lm fits in the block.
  const std::size_t block = std::min(n, kBlock);
  const bool head_pair = lm_start >= 3;
  int lm_depth = head_pair ? lm_start - 2 : lm_start;  // first radix-2 stage
  int lm = lm_depth;
  while (lm >= 2 && (n >> lm) <= block) --lm;
  for (std::size_t offset = 0; offset < n; offset += block) {
    if (head_pair) inverse_head_stages(a, t, lm_start, offset, block);
    for (int r = lm_depth; r > lm; --r) inverse_stage(a, t, r, offset, block);
  }
  // Breadth-first for the larger spans, then the scaled last two stages.
  for (; lm >= 2; --lm) inverse_stage(a, t, lm, 0, n);
  inverse_last_two_stages(a, t, scale, last);
}

}  // namespace

namespace {

bool on_avx512(const NttTables& t) { return rns_isa() == RnsIsa::avx512 && ntt_avx512_fits(t); }

}  // namespace

void ntt_forward_limb(u64* a, const NttTables& t) {
  if (on_avx512(t)) return ntt_forward_limb_avx512(a, t);
  forward_transform(a, t, t.log_n());
}

void ntt_forward_truncated_limb(u64* a, const NttTables& t) {
  if (on_avx512(t)) return ntt_forward_truncated_limb_avx512(a, t);
  forward_transform(a, t, t.log_n() - 1);
}

void ntt_inverse_limb(u64* a, const NttTables& t) {
  if (on_avx512(t)) return ntt_inverse_limb_avx512(a, t);
  inverse_transform(a, t, t.log_n() - 1, t.n_inv(), t.last_twiddle_n_inv());
}

void ntt_inverse_truncated_limb(u64* a, const NttTables& t) {
  if (on_avx512(t)) return ntt_inverse_truncated_limb_avx512(a, t);
  inverse_transform(a, t, t.log_n() - 2, t.half_n_inv(), t.last_twiddle_half_n_inv());
}

}  // namespace ringfire::cpu
