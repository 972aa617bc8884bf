// See products_avx512.h. A product of two reduced words (below 2^50) is
// hi 2^52 + lo from vpmadd52huq/luq; sums of up to kTermsPerReduction of them
// keep hi below 2^51 and lo below 2^55, so one reduction (avx512_modular.h's
// zreduce_wide52) serves a whole chunk of an inner product's terms.
#include "products_avx512.h"

#include <algorithm>
#include <type_traits>

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

// The weights' Shoup products: IFMA's below 2^50, the 64-bit lanes' up to 2^61 (inputs below q).
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
// Under IFMA a lazy product is below 2q < 2^51: 4096 of them sum below 2^63 with no
// reduction between (one at the end, from the 64-bit lanes' Shoup product by 1).
constexpr std::size_t kLazyTerms = 4096;

// outs[g] = sum_t w[g terms + t] x[t] mod q over n words, for kOutputsAtOnce outputs, in
// blocks of words whose partial sums stay in L1 while the inputs stream through once.
template <class A>
RF_IFMA void four_linear_combinations(const u64* const* x, const ShoupOperand* w, std::size_t terms, u64* const* outs,
                                      std::size_t n, u64 q) {
  constexpr std::size_t G = kOutputsAtOnce, kBlock = 256;
  constexpr bool lazy = std::is_same_v<A, Ifma52>;
  const ZMod m = zmod(q);
  const ShoupOperand one = make_shoup(1, q);
  const Mul64::Twiddle by_one = zbroadcast<Mul64>(one.value, one.quotient);
  alignas(64) u64 acc[G][kBlock];
  for (std::size_t c0 = 0; c0 < n; c0 += kBlock) {
    const std::size_t len = std::min(kBlock, n - c0);
    for (std::size_t g = 0; g < G; ++g)
      for (std::size_t c = 0; c < len; c += 8) zstore(acc[g] + c, _mm512_setzero_si512());
    for (std::size_t t = 0; t < terms; ++t) {
      const u64* xt = x[t] + c0;
      typename A::Twiddle wt[G];
      for (std::size_t g = 0; g < G; ++g) wt[g] = zbroadcast<A>(w[g * terms + t].value, w[g * terms + t].quotient);
      for (std::size_t c = 0; c < len; c += 8) {
        const Z y = zload(xt + c);
        for (std::size_t g = 0; g < G; ++g) {
          const Z sum = _mm512_add_epi64(zload(acc[g] + c), A::mul_lazy(y, wt[g], m));
          zstore(acc[g] + c, lazy ? sum : zsub_if_ge(sum, m.two_q));
        }
      }
    }
    for (std::size_t g = 0; g < G; ++g)
      for (std::size_t c = 0; c < len; c += 8) {
        const Z sum = zload(acc[g] + c);  // lazy: below terms 2q < 2^63, else below 2q
        zstore(outs[g] + c0 + c, zsub_if_ge(lazy ? Mul64::mul_lazy(sum, by_one, m) : sum, m.q));
      }
  }
}

}  // namespace

bool shoup_products_on_avx512(std::size_t n) { return rns_isa() == RnsIsa::avx512 && n % 8 == 0; }

RF_IFMA void linear_combinations_limb_avx512(const u64* const* x, const ShoupOperand* w, std::size_t terms,
                                             u64* const* outs, std::size_t outputs, std::size_t n, u64 q) {
  std::size_t o = 0;
  for (; o + kOutputsAtOnce <= outputs; o += kOutputsAtOnce) {
    if (q < kIfmaBound && terms <= kLazyTerms) four_linear_combinations<Ifma52>(x, w + o * terms, terms, outs + o, n, q);
    else four_linear_combinations<Mul64>(x, w + o * terms, terms, outs + o, n, q);
  }
  for (; o < outputs; ++o) linear_combination_limb_avx512(x, w + o * terms, terms, outs[o], n, q);
}

RF_IFMA void linear_combination_limb_avx512(const u64* const* x, const ShoupOperand* w, std::size_t terms, u64* out,
                                            std::size_t n, u64 q) {
  q < kIfmaBound ? linear_combination<Ifma52>(x, w, terms, out, n, q)
                    : linear_combination<Mul64>(x, w, terms, out, n, q);
}

}  // namespace ringfire::cpu
