// Per-element kernel bodies shared by the CPU tests and the CUDA kernels
// (DESIGN.md: "share the scalar math, not the loops"). Each function here is
// what one GPU thread does for one element, butterfly or coefficient; the
// loops, launch geometry and memory layout belong to the backend. Everything
// is RF_HD, so cpp/tests/test_kernel_bodies.cpp runs these exact functions on
// the CPU against the CPU backend (the oracle), and the CUDA backend calls the
// same functions on the device.
//
// Value ranges follow cpu/ntt_kernels.cpp (q < 2^61, so 4q < 2^63):
//   forward CT butterflies map [0, 4q) -> [0, 4q); inverse GS butterflies map
//   [0, 2q) -> [0, 2q); the final store reduces to [0, q). Because every
//   transform output is fully reduced, it is a function of the input alone,
//   so any pass structure (radix-2 in global memory, stages fused in shared
//   memory, ...) is bit-identical to the CPU's AVX2/blocked loops.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>

#include "ringfire/arith/modular.h"
#include "ringfire/arith/reduction.h"
#include "ringfire/base/hd.h"
#include "ringfire/ring/multiword.h"

namespace ringfire::kernel {

// ===========================================================================
// NTT butterflies (Harvey lazy, Shoup twiddles).
//
// Why Shoup and not Barrett (seed 002 Alg. 4) in the butterflies: a twiddle
// is fixed per table entry, so its quotient floor(w 2^64 / q) is precomputed
// once; a Shoup product costs two 64x64 multiplies (one high, one low) plus
// one low multiply, against three for Barrett on a 128-bit product, and it
// keeps the result lazy in [0, 2q) with no correction. The twiddle and its
// constant sit next to each other in the device tables (one 16-byte load).

// Cooley-Tukey: (x, y) <- (x + w y, x - w y). In/out [0, 4q).
RF_HD void ct_butterfly(u64& x, u64& y, u64 w, u64 w_shoup, u64 q) {
  const u64 two_q = 2 * q;
  u64 xv = x;
  xv -= (xv >= two_q) ? two_q : 0;                      // [0, 2q)
  const u64 tv = mul_mod_shoup_lazy(y, w, w_shoup, q);  // [0, 2q)
  x = xv + tv;
  y = xv - tv + two_q;
}

// Gentleman-Sande: (x, y) <- (x + y, w (x - y)). In/out [0, 2q).
RF_HD void gs_butterfly(u64& x, u64& y, u64 w, u64 w_shoup, u64 q) {
  const u64 two_q = 2 * q;
  const u64 xv = x, yv = y;
  u64 s = xv + yv;
  s -= (s >= two_q) ? two_q : 0;
  x = s;
  y = mul_mod_shoup_lazy(xv - yv + two_q, w, w_shoup, q);
}

// The inverse transform's last stage (m = 1) with 1/N folded in:
// x' = (x + y) scale, y' = (x - y) last, last = psi^-br(1) scale.
// In [0, 2q), out [0, q).
RF_HD void gs_last_butterfly(u64& x, u64& y, ShoupOperand scale, ShoupOperand last, u64 q) {
  const u64 xv = x, yv = y;
  x = mul_mod_shoup(xv + yv, scale.value, scale.quotient, q);
  y = mul_mod_shoup(xv - yv + 2 * q, last.value, last.quotient, q);
}

// [0, 4q) -> [0, q).
RF_HD u64 reduce_4q(u64 v, u64 q) {
  v -= (v >= 2 * q) ? 2 * q : 0;
  v -= (v >= q) ? q : 0;
  return v;
}

// ===========================================================================
// NTT index maps.
//
// Forward stage s (and inverse stage lm = s) pairs elements at distance
// k = N / 2^(s+1); butterfly b (of N/2) touches x = 2 k g + j and x + k with
// g = b / k, j = b mod k, and twiddle index 2^s + g. A shared-memory pass
// works on a block of rows x cols elements (row r, column c is element
// first + r * stride + c); inside it, stage s pairs rows at distance
// k / stride. These two maps are all the index arithmetic the GPU kernels
// do, so the CPU test that replays a pass plan with them covers the kernels'
// addressing.

// Butterfly `pair` of a stage with distance `dist` (a power of two, given as
// log2): the index of its first element (the second is that + dist).
RF_HD std::size_t butterfly_first(std::size_t pair, int log_dist) {
  const std::size_t dist = std::size_t{1} << log_dist;
  return ((pair >> log_dist) << (log_dist + 1)) | (pair & (dist - 1));
}

// Twiddle index of the butterfly whose first element is global index i, at
// forward/inverse stage s of an N = 2^log_n transform: 2^s + i / (2k).
RF_HD std::size_t twiddle_index(std::size_t i, int s, int log_n) {
  return (std::size_t{1} << s) + (i >> (log_n - s));
}

// One shared-memory pass: stages [first_stage, first_stage + stages) of the
// forward transform (run backwards for the inverse) on blocks of
// rows = 2^stages elements spaced `stride` apart (stride = N >> (first_stage
// + stages)) times `cols` adjacent columns. A polynomial has
// blocks = 2^first_stage segments x stride / cols column chunks.
struct NttPass {
  int first_stage = 0;
  int stages = 0;
  int log_stride = 0;
  int log_cols = 0;
  // Global index of element (row 0, column 0) of block `block`.
  RF_HD std::size_t block_origin(std::size_t block, int log_n) const {
    const int log_chunks = log_stride - log_cols;  // column chunks per segment
    const std::size_t segment = block >> log_chunks;
    const std::size_t chunk = block & ((std::size_t{1} << log_chunks) - 1);
    return (segment << (log_n - first_stage)) | (chunk << log_cols);
  }
  // Global index of the block's local element e (row-major: e = r * cols + c).
  RF_HD std::size_t element(std::size_t origin, std::size_t e) const {
    const std::size_t r = e >> log_cols, c = e & ((std::size_t{1} << log_cols) - 1);
    return origin + (r << log_stride) + c;
  }
  std::size_t blocks() const {
    return (std::size_t{1} << first_stage) << (log_stride - log_cols);
  }
  RF_HD std::size_t block_elements() const { return std::size_t{1} << (stages + log_cols); }

  // The twiddles a block needs, gathered once per block (the GPU kernel keeps
  // them in shared memory instead of reading the global table per butterfly).
  // Within a block, stage s's twiddle depends only on the row, and its global
  // index is 2^s + (origin >> (log_n - s)) + (row >> (first + stages - s)): the
  // block's twiddles of stage s are 2^(s - first) consecutive table entries.
  // Slot 2^(s - first) + j holds the j-th of them, so a block needs the
  // 2^stages - 1 slots [1, 2^stages).
  RF_HD std::size_t twiddle_slots() const { return std::size_t{1} << stages; }
  // Slot of the twiddle of stage s at tile row `row` (any column).
  std::size_t twiddle_slot(int s, std::size_t row) const {
    return (std::size_t{1} << (s - first_stage)) + (row >> (first_stage + stages - s));
  }
  // Global twiddle-table index that slot `slot` (>= 1) of the block at
  // `origin` holds. The CUDA pass kernel spells this and twiddle_slot out in
  // 32-bit arithmetic (a count of leading zeros for the log: a loop there
  // cost the 11-stage pass ~15 % more instructions); the CPU replay of the
  // kernel calls these.
  std::size_t twiddle_slot_source(std::size_t slot, std::size_t origin, int log_n) const {
    const int k = std::bit_width(slot) - 1;  // floor(log2(slot)): the slot's stage, relative to first_stage
    const int s = first_stage + k;
    return (std::size_t{1} << s) + (origin >> (log_n - s)) + (slot - (std::size_t{1} << k));
  }
};

// Row of limb `limb` of polynomial `poly` where an NTT's last pass stores it
// for key switching's ModUp: polynomial p's `limbs` converted limbs surround
// its own gap_len limbs, which start at row gap_at + p * gap_step, and the
// polynomials are limbs + gap_len rows apart (gap_len = 0: rows in order).
RF_HD std::size_t gapped_row(std::size_t poly, std::size_t limb, std::size_t limbs, std::size_t gap_at,
                             std::size_t gap_step, std::size_t gap_len) {
  return poly * (limbs + gap_len) + limb + (limb >= gap_at + poly * gap_step ? gap_len : 0);
}

// Elements one shared-memory block holds (16 KiB of 64-bit words): small
// enough for several resident blocks per SM, large enough that an N = 2^17
// transform needs just two passes (a strided head pass and a contiguous tail).
inline constexpr int kLogTile = 11;
// A strided pass keeps at least 2^5 = 32 adjacent columns so each warp's
// loads are 256 contiguous bytes (fully coalesced).
inline constexpr int kMinLogCols = 5;

// The passes of a forward transform of `stages` stages (log_n for a full
// transform): the contiguous tail pass takes the last kLogTile stages (all of
// them when N <= 2^kLogTile), strided head passes of at most
// kLogTile - kMinLogCols stages take the rest, so N up to 2^17 takes two
// passes: two reads and two writes of the data instead of log2(N). Returns
// the pass count; `out` receives them in forward order.
inline int plan_ntt_passes(int log_n, int stages, NttPass* out, int max_passes) {
  const int tail = stages < kLogTile ? stages : kLogTile;
  int count = 0;
  int head_stages = stages - tail;
  int s = 0;
  const int head_max = kLogTile - kMinLogCols;
  while (head_stages > 0 && count < max_passes) {
    const int take = head_stages < head_max ? head_stages : head_max;
    NttPass p;
    p.first_stage = s;
    p.stages = take;
    p.log_stride = log_n - (s + take);
    const int want_cols = kLogTile - take;
    p.log_cols = want_cols < p.log_stride ? want_cols : p.log_stride;
    out[count++] = p;
    s += take;
    head_stages -= take;
  }
  if (tail > 0 && count < max_passes) {
    NttPass p;
    p.first_stage = s;
    p.stages = tail;
    p.log_stride = log_n - (s + tail);
    p.log_cols = 0;
    out[count++] = p;
  }
  return count;
}

// ===========================================================================
// Element-wise bodies (one coefficient each).

// acc + a * b (mod q) with one reduction (seed 000 mad_mod).
RF_HD u64 multiply_add_body(u64 a, u64 b, u64 acc, const Modulus& mod) { return mad_mod(a, b, acc, mod); }

// a * s (mod q) for a scalar fixed per limb, with its Shoup constant.
RF_HD u64 multiply_scalar_body(u64 a, ShoupOperand s, u64 q) { return mul_mod_shoup(a, s.value, s.quotient, q); }

// Key-switching inner product at one word: (sum_t in[t] b[t], sum_t in[t] a[t])
// mod q over the words at `index` of `terms` digit/key polynomials, with lazy
// 128-bit sums reduced every kInnerProductChunk terms (products < 2^122 for
// 61-bit primes). `accumulate` adds the result to (out0, out1).
inline constexpr std::size_t kInnerProductChunk = 32;

RF_HD void inner_product_pair_body(const u64* const* in, const u64* const* b, const u64* const* a, std::size_t terms,
                                   std::size_t index, const Modulus& mod, u64& out0, u64& out1) {
  const u64 q = mod.value();
  u64 r0 = 0, r1 = 0;
  for (std::size_t t0 = 0; t0 < terms; t0 += kInnerProductChunk) {
    const std::size_t t1 = terms < t0 + kInnerProductChunk ? terms : t0 + kInnerProductChunk;
    u128 s0 = 0, s1 = 0;
    for (std::size_t t = t0; t < t1; ++t) {
      const u64 x = in[t][index];
      s0 += mul_wide(x, b[t][index]);
      s1 += mul_wide(x, a[t][index]);
    }
    r0 = add_mod(r0, reduce_u128(s0, mod), q);
    r1 = add_mod(r1, reduce_u128(s1, mod), q);
  }
  out0 = r0;
  out1 = r1;
}

// Terms one 128-bit accumulator of linear_combination holds before it is
// reduced: products are < 2^122 for 61-bit primes.
inline constexpr std::size_t kLinearCombinationChunk = 32;

// ===========================================================================
// Automorphism index maps (see cpu/automorphism.cpp for the math).

// Bit reversal of the low `bits` bits of x (bits >= 1).
RF_HD std::size_t reverse_bits_hd(std::size_t x, int bits) {
#if RF_DEVICE_PASS
  return static_cast<std::size_t>(__brevll(static_cast<unsigned long long>(x)) >> (64 - bits));
#else
  std::size_t r = 0;
  for (int i = 0; i < bits; ++i) {
    r = (r << 1) | (x & 1);
    x >>= 1;
  }
  return r;
#endif
}

// Coefficient form: X^i -> X^(i k mod 2N). Returns the target index in
// [0, N) and sets `negate` when i k mod 2N >= N (X^N = -1).
RF_HD std::size_t automorphism_coeff_target(std::size_t i, u64 galois_elt, std::size_t n, bool& negate) {
  const u64 target = (i * galois_elt) & (2 * n - 1);
  negate = target >= n;
  return negate ? target - n : target;
}

// Evaluation form (bit-reversed slots): the slot of the input that output
// slot s reads, with 2 br(src) + 1 = (2 br(s) + 1) k mod 2N.
RF_HD std::size_t automorphism_eval_source(std::size_t s, u64 galois_elt, int log_n) {
  const u64 two_n_mask = (u64{2} << log_n) - 1;
  const u64 exponent = ((2 * reverse_bits_hd(s, log_n) + 1) * galois_elt) & two_n_mask;
  return reverse_bits_hd((exponent - 1) / 2, log_n);
}

// ===========================================================================
// Base conversion bodies (see ring/base_converter.h and cpu/base_convert.cpp).

// Source limbs up to which the inner sum uses Shoup products (as the CPU).
inline constexpr std::size_t kBaseConvShoupTerms = 8;
// Products < 2^122: 63 of them fit a 128-bit sum.
inline constexpr std::size_t kBaseConvLazyTerms = 63;
// |fraction - 1/2| below this is settled with multiword integers.
inline constexpr double kBaseConvRoundingMargin = 1.0 / (1ull << 36);

// Pass 1: y_i = x_i * (Q/q_i)^-1 mod q_i.
RF_HD u64 base_convert_scale_body(u64 x, ShoupOperand qhat_inv, u64 q) {
  return mul_mod_shoup(x, qhat_inv.value, qhat_inv.quotient, q);
}

// Pass 3, few source limbs: r += y * f (Shoup, lazy) kept in [0, 2p).
RF_HD u64 base_convert_shoup_step(u64 r, u64 y, ShoupOperand f, u64 p) {
  r += mul_mod_shoup_lazy(y, f.value, f.quotient, p);
  r -= (r >= 2 * p) ? 2 * p : 0;
  return r;
}

// Pass 3, exact kind: r - v Q (mod p), r < p. v <= the source limb count,
// below any prime, so it needs no reduction (a 64-bit % by a run-time value
// costs ~100 instructions on a GPU, once per output word).
RF_HD u64 base_convert_subtract_vq(u64 r, u64 v, u64 q_mod_p, const Modulus& p) {
  return sub_mod(r, mul_mod(v, q_mod_p, p), p.value());
}

// Pass 2: one step of s = sum_i y_i / q_i, in double with separate rounding
// of the product and the sum, as the CPU computes it (no fused multiply-add,
// which nvcc would otherwise contract this into).
RF_HD double base_convert_sum_step(double s, u64 y, double reciprocal) {
#if RF_DEVICE_PASS
  return __dadd_rn(s, __dmul_rn(static_cast<double>(y), reciprocal));
#else
  return s + static_cast<double>(y) * reciprocal;
#endif
}

// Pass 2: whether the double-precision sum is too close to a half to round
// (then the multiword rule below decides).
RF_HD bool base_convert_near_half(double s) {
  const double fraction = s - floor(s);
  return fabs(fraction - 0.5) < kBaseConvRoundingMargin;
}

// Pass 2: v = round(s) when s is not near a half.
RF_HD u64 base_convert_rounded(double s) { return static_cast<u64>(s + 0.5); }

// a (len + 1 words) >= b (len words, an implicit zero top word).
RF_HD bool multiword_ge_ext(const u64* a, const u64* b, std::size_t len) {
  if (a[len] != 0) return true;
  for (std::size_t i = len; i-- > 0;) {
    if (a[i] != b[i]) return a[i] > b[i];
  }
  return true;
}

// a (len + 1 words) -= b (len words, an implicit zero top word).
RF_HD void multiword_subtract_ext(u64* a, const u64* b, std::size_t len) {
  u64 borrow = 0;
  for (std::size_t i = 0; i <= len; ++i) {
    const u64 bw = (i < len ? b[i] : 0);
    const u64 bi = bw + borrow;
    const u64 next_borrow = (bi < borrow) || (a[i] < bi);
    a[i] -= bi;
    borrow = next_borrow;
  }
}

// Pass 2, the multiword rule (one coefficient): v = round(sum_i y_i / q_i)
// exactly. Forms S = sum_i y_i (Q/q_i) in len + 1 words, S = u Q + x with
// x in [0, Q) (u < len subtractions), and v = u + [2x > Q]. `y` holds the
// coefficient's y_i at y[i * y_stride]; qhat holds Q/q_i at [i * len], q_words
// holds Q; acc is len + 1 words of scratch. The loops here run over the
// words of one coefficient's integers, never over coefficients.
RF_HD u64 exact_rounded_quotient(const u64* y, std::size_t y_stride, const u64* qhat, const u64* q_words,
                                 std::size_t len, u64* acc) {
  for (std::size_t w = 0; w <= len; ++w) acc[w] = 0;
  for (std::size_t i = 0; i < len; ++i) acc[len] += multiword::mul_word_add(qhat + i * len, y[i * y_stride], acc, len);
  u64 u = 0;
  while (multiword_ge_ext(acc, q_words, len)) {
    multiword_subtract_ext(acc, q_words, len);
    ++u;
  }
  // 2x > Q, comparing word by word from the top with x doubled on the fly
  // (x < Q, so 2x fits len + 1 words).
  u64 twice_top = acc[len - 1] >> 63;  // word len of 2x
  if (twice_top != 0) return u + 1;     // 2x >= 2^(64 len) > Q
  for (std::size_t i = len; i-- > 0;) {
    const u64 twice = (acc[i] << 1) | (i > 0 ? acc[i - 1] >> 63 : 0);
    if (twice != q_words[i]) return u + (twice > q_words[i] ? 1 : 0);
  }
  return u;  // 2x == Q: not above half
}

}  // namespace ringfire::kernel
