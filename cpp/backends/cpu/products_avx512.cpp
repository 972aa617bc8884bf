// See products_avx512.h. A product of two reduced words (below 2^50) is
// hi 2^52 + lo from vpmadd52huq/luq; sums of up to kTermsPerReduction of them
// keep hi below 2^51 and lo below 2^55, so one reduction (avx512_modular.h's
// zreduce_wide52) serves a whole chunk of an inner product's terms.
#include "products_avx512.h"

#include <algorithm>

#include "avx512_modular.h"
#include "rns_isa.h"

namespace ringfire::cpu {

namespace {

using namespace avx512;

// Products below 2^100 have hi below 2^48: eight of them sum below 2^51.
constexpr std::size_t kTermsPerReduction = 8;

}  // namespace

bool products_on_avx512(u64 q, std::size_t n) {
  return rns_isa() == RnsIsa::avx512 && q < kIfmaBound && n % 8 == 0;
}

RF_IFMA void inner_product_pair_limb_avx512(const u64* const* in, const u64* const* b, const u64* const* a,
                                            std::size_t terms, std::size_t offset, std::size_t n, u64 q, u64* out0,
                                            u64* out1) {
  const ZMod m = zmod(q);
  const Wide52 w = wide52(q);
  const Z zero = _mm512_setzero_si512();
  for (std::size_t t0 = 0; t0 < terms; t0 += kTermsPerReduction) {
    const std::size_t t1 = std::min(terms, t0 + kTermsPerReduction);
    for (std::size_t c = offset; c < offset + n; c += 8) {
      Z lo0 = zero, hi0 = zero, lo1 = zero, hi1 = zero;
      for (std::size_t t = t0; t < t1; ++t) {
        const Z x = zload(in[t] + c), kb = zload(b[t] + c), ka = zload(a[t] + c);
        lo0 = _mm512_madd52lo_epu64(lo0, x, kb);
        hi0 = _mm512_madd52hi_epu64(hi0, x, kb);
        lo1 = _mm512_madd52lo_epu64(lo1, x, ka);
        hi1 = _mm512_madd52hi_epu64(hi1, x, ka);
      }
      Z r0 = zreduce_wide52(hi0, lo0, w, m), r1 = zreduce_wide52(hi1, lo1, w, m);
      if (t0 > 0) {
        r0 = zsub_if_ge(_mm512_add_epi64(r0, zload(out0 + c)), m.q);
        r1 = zsub_if_ge(_mm512_add_epi64(r1, zload(out1 + c)), m.q);
      }
      zstore(out0 + c, r0);
      zstore(out1 + c, r1);
    }
  }
}

RF_IFMA void multiply_limb_avx512(const u64* a, const u64* b, u64* out, std::size_t n, u64 q) {
  const ZMod m = zmod(q);
  const Wide52 w = wide52(q);
  for (std::size_t j = 0; j < n; j += 8) zstore(out + j, zmul_mod52(zload(a + j), zload(b + j), w, m));
}

RF_IFMA void multiply_add_limb_avx512(const u64* a, const u64* b, u64* acc, std::size_t n, u64 q) {
  const ZMod m = zmod(q);
  const Wide52 w = wide52(q);
  for (std::size_t j = 0; j < n; j += 8)
    zstore(acc + j, zsub_if_ge(_mm512_add_epi64(zmul_mod52(zload(a + j), zload(b + j), w, m), zload(acc + j)), m.q));
}

namespace {

// The weights' Shoup products on the 64-bit lanes, for primes from 2^50 up to 2^61 (inputs
// below q; below 2^50 the IFMA products summed unreduced take over, below).
template <class A>
RF_IFMA void linear_combination(const u64* const* x, const ShoupOperand* w, std::size_t terms, u64* out,
                                std::size_t n, u64 q) {
  const ZMod m = zmod(q);
  // Blocks of 512 words: the partial sums stay in L1 while the terms stream through, two at a time.
  constexpr std::size_t kBlock = 512;
  alignas(64) u64 acc[kBlock];
  for (std::size_t c0 = 0; c0 < n; c0 += kBlock) {
    const std::size_t len = std::min(kBlock, n - c0);
    std::size_t t = 0;
    for (std::size_t c = 0; c < len; c += 8) zstore(acc + c, _mm512_setzero_si512());
    for (; t + 2 <= terms; t += 2) {
      const u64 *x0 = x[t] + c0, *x1 = x[t + 1] + c0;
      const typename A::Twiddle w0 = zbroadcast<A>(w[t].value, w[t].quotient);
      const typename A::Twiddle w1 = zbroadcast<A>(w[t + 1].value, w[t + 1].quotient);
      for (std::size_t c = 0; c < len; c += 8) {
        Z sum = zsub_if_ge(_mm512_add_epi64(zload(acc + c), A::mul_lazy(zload(x0 + c), w0, m)), m.two_q);
        sum = zsub_if_ge(_mm512_add_epi64(sum, A::mul_lazy(zload(x1 + c), w1, m)), m.two_q);
        zstore(acc + c, sum);
      }
    }
    for (; t < terms; ++t) {
      const u64* xt = x[t] + c0;
      const typename A::Twiddle wt = zbroadcast<A>(w[t].value, w[t].quotient);
      for (std::size_t c = 0; c < len; c += 8)
        zstore(acc + c, zsub_if_ge(_mm512_add_epi64(zload(acc + c), A::mul_lazy(zload(xt + c), wt, m)), m.two_q));
    }
    for (std::size_t c = 0; c < len; c += 8) zstore(out + c0 + c, zsub_if_ge(zload(acc + c), m.q));
  }
}

// Outputs summed side by side: each input block, loaded once, meets four outputs' weights.
constexpr std::size_t kOutputsAtOnce = 4;
// Words per block: four outputs' partial sums (8 KiB) stay in L1 while the inputs stream by.
constexpr std::size_t kDenseBlock = 256;

// outs[g] = sum_t w[g terms + t] x[t] mod q over n words, for G outputs, q < 2^50: each
// product hi 2^52 + lo from vpmadd52huq/luq summed in registers over a chunk of
// kTermsPerReduction terms (the inner product's bound), then one reduction per chunk.
template <std::size_t G>
RF_IFMA void linear_combinations_ifma(const u64* const* x, const ShoupOperand* w, std::size_t terms, u64* const* outs,
                                      std::size_t n, u64 q) {
  constexpr std::size_t T = kTermsPerReduction;
  if (terms == 0) {  // every weight was 0 (the caller leaves those terms out)
    for (std::size_t g = 0; g < G; ++g)
      for (std::size_t c = 0; c < n; c += 8) zstore(outs[g] + c, _mm512_setzero_si512());
    return;
  }
  const ZMod m = zmod(q);
  const Wide52 wide = wide52(q);
  alignas(64) u64 acc[G][kDenseBlock];
  for (std::size_t c0 = 0; c0 < n; c0 += kDenseBlock) {
    const std::size_t len = std::min(kDenseBlock, n - c0);
    for (std::size_t t0 = 0; t0 < terms; t0 += T) {
      const std::size_t chunk = std::min(T, terms - t0);
      Z wz[T][G];
      const u64* xt[T];
      for (std::size_t t = 0; t < chunk; ++t) {
        xt[t] = x[t0 + t] + c0;
        for (std::size_t g = 0; g < G; ++g) wz[t][g] = zset1(w[g * terms + t0 + t].value);
      }
      for (std::size_t c = 0; c < len; c += 8) {
        Z lo[G], hi[G];
        for (std::size_t g = 0; g < G; ++g) lo[g] = hi[g] = _mm512_setzero_si512();
        for (std::size_t t = 0; t < chunk; ++t) {
          const Z y = zload(xt[t] + c);
          for (std::size_t g = 0; g < G; ++g) {
            lo[g] = _mm512_madd52lo_epu64(lo[g], y, wz[t][g]);
            hi[g] = _mm512_madd52hi_epu64(hi[g], y, wz[t][g]);
          }
        }
        for (std::size_t g = 0; g < G; ++g) {
          const Z r = zreduce_wide52(hi[g], lo[g], wide, m);
          zstore(acc[g] + c, t0 == 0 ? r : zsub_if_ge(_mm512_add_epi64(r, zload(acc[g] + c)), m.q));
        }
      }
    }
    for (std::size_t g = 0; g < G; ++g)
      for (std::size_t c = 0; c < len; c += 8) zstore(outs[g] + c0 + c, zload(acc[g] + c));
  }
}

// The same for primes from 2^50 on: Shoup products on the 64-bit lanes, each sum kept in [0, 2q).
RF_IFMA void four_linear_combinations_mul64(const u64* const* x, const ShoupOperand* w, std::size_t terms,
                                            u64* const* outs, std::size_t n, u64 q) {
  constexpr std::size_t G = kOutputsAtOnce;
  const ZMod m = zmod(q);
  alignas(64) u64 acc[G][kDenseBlock];
  for (std::size_t c0 = 0; c0 < n; c0 += kDenseBlock) {
    const std::size_t len = std::min(kDenseBlock, n - c0);
    for (std::size_t g = 0; g < G; ++g)
      for (std::size_t c = 0; c < len; c += 8) zstore(acc[g] + c, _mm512_setzero_si512());
    for (std::size_t t = 0; t < terms; ++t) {
      const u64* xt = x[t] + c0;
      Mul64::Twiddle wt[G];
      for (std::size_t g = 0; g < G; ++g) wt[g] = zbroadcast<Mul64>(w[g * terms + t].value, w[g * terms + t].quotient);
      for (std::size_t c = 0; c < len; c += 8) {
        const Z y = zload(xt + c);
        for (std::size_t g = 0; g < G; ++g)
          zstore(acc[g] + c, zsub_if_ge(_mm512_add_epi64(zload(acc[g] + c), Mul64::mul_lazy(y, wt[g], m)), m.two_q));
      }
    }
    for (std::size_t g = 0; g < G; ++g)
      for (std::size_t c = 0; c < len; c += 8) zstore(outs[g] + c0 + c, zsub_if_ge(zload(acc[g] + c), m.q));
  }
}

}  // namespace

bool shoup_products_on_avx512(std::size_t n) { return rns_isa() == RnsIsa::avx512 && n % 8 == 0; }

RF_IFMA void linear_combinations_limb_avx512(const u64* const* x, const ShoupOperand* w, std::size_t terms,
                                             u64* const* outs, std::size_t outputs, std::size_t n, u64 q) {
  std::size_t o = 0;
  for (; o + kOutputsAtOnce <= outputs; o += kOutputsAtOnce) {
    if (q < kIfmaBound) linear_combinations_ifma<kOutputsAtOnce>(x, w + o * terms, terms, outs + o, n, q);
    else four_linear_combinations_mul64(x, w + o * terms, terms, outs + o, n, q);
  }
  const std::size_t rest = outputs - o;  // the last one to three outputs
  if (q < kIfmaBound && rest == 3) return linear_combinations_ifma<3>(x, w + o * terms, terms, outs + o, n, q);
  if (q < kIfmaBound && rest == 2) return linear_combinations_ifma<2>(x, w + o * terms, terms, outs + o, n, q);
  for (; o < outputs; ++o) linear_combination_limb_avx512(x, w + o * terms, terms, outs[o], n, q);
}

RF_IFMA void linear_combination_limb_avx512(const u64* const* x, const ShoupOperand* w, std::size_t terms, u64* out,
                                            std::size_t n, u64 q) {
  if (q < kIfmaBound) return linear_combinations_ifma<1>(x, w, terms, &out, n, q);
  linear_combination<Mul64>(x, w, terms, out, n, q);
}

}  // namespace ringfire::cpu
