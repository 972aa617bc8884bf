#include "cpu_backend.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "avx2_modular.h"
#include "ntt_kernels.h"
#include "parallel_for.h"
#include "products_avx512.h"
#include "ringfire/arith/modular.h"
#include "ringfire/ring/kernel_bodies.h"

namespace ringfire::cpu {

namespace {

// Runs body(limb pointers..., modulus, tables) over every (polynomial, limb).
template <class Body>
void for_each_limb(std::size_t batch, const RnsBase& base, std::size_t cost, Body&& body) {
  const std::size_t limbs = base.size();
  parallel_for(batch * limbs, cost, [&](std::size_t index) {
    const std::size_t limb = index % limbs;
    body(index * base.n(), limb);
  });
}

// s0[c] (+)= sum_g in[g][at + c] * b[g][at + c], s1 likewise with a, for
// G terms at once: the sums stay in registers across the G products.
template <std::size_t G>
void add_products(const u64* const* in, const u64* const* b, const u64* const* a, std::size_t at, std::size_t len,
                  u128* s0, u128* s1, bool first) {
  const u64 *x[G], *kb[G], *ka[G];
  for (std::size_t g = 0; g < G; ++g) {
    x[g] = in[g] + at;
    kb[g] = b[g] + at;
    ka[g] = a[g] + at;
  }
  for (std::size_t c = 0; c < len; ++c) {
    u128 p0 = first ? 0 : s0[c], p1 = first ? 0 : s1[c];
    for (std::size_t g = 0; g < G; ++g) {
      p0 += mul_wide(x[g][c], kb[g][c]);
      p1 += mul_wide(x[g][c], ka[g][c]);
    }
    s0[c] = p0;
    s1[c] = p1;
  }
}

// Element-wise operations on reduced words, each with a scalar form and, on
// AVX2 targets, a four-lane one; both give the same fully reduced words.
struct AddOp {
  static u64 scalar(u64 x, u64 y, u64 q) { return add_mod(x, y, q); }
#if RF_CPU_AVX2
  static avx2::V vec(avx2::V x, avx2::V y, const avx2::VMod& m) {
    return avx2::vsub_if_ge(_mm256_add_epi64(x, y), m.q);
  }
#endif
};
struct SubOp {
  static u64 scalar(u64 x, u64 y, u64 q) { return sub_mod(x, y, q); }
#if RF_CPU_AVX2
  static avx2::V vec(avx2::V x, avx2::V y, const avx2::VMod& m) { return avx2::vsub_mod(x, y, m); }
#endif
};
// y is unused: negation is sub from zero.
struct NegateOp {
  static u64 scalar(u64 x, u64 /*y*/, u64 q) { return neg_mod(x, q); }
#if RF_CPU_AVX2
  static avx2::V vec(avx2::V x, avx2::V /*y*/, const avx2::VMod& m) {
    return avx2::vsub_mod(_mm256_setzero_si256(), x, m);
  }
#endif
};

// out = Op(a, b) word by word over every (polynomial, limb); b == nullptr
// for unary operations.
template <class Op>
void map_words(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base) {
  const std::size_t n = base.n();
  for_each_limb(batch, base, n / 4, [&](std::size_t offset, std::size_t limb) {
    const u64 q = base.modulus(limb).value();
    const u64* x = a + offset;
    const u64* y = b ? b + offset : nullptr;
    u64* z = out + offset;
    std::size_t j = 0;
#if RF_CPU_AVX2
    const avx2::VMod m = avx2::vmod(q);
    const avx2::V zero = _mm256_setzero_si256();
    for (; j + 4 <= n; j += 4) avx2::vstore(z + j, Op::vec(avx2::vload(x + j), y ? avx2::vload(y + j) : zero, m));
#endif
    for (; j < n; ++j) z[j] = Op::scalar(x[j], y ? y[j] : 0, q);
  });
}

}  // namespace

CpuBackend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

void CpuBackend::ntt_forward(u64* data, std::size_t batch, const RnsBase& base) {
  const std::size_t n = base.n();
  for_each_limb(batch, base, n * 8, [&](std::size_t offset, std::size_t limb) {
    ntt_forward_limb(data + offset, base.ntt(limb));
  });
}

void CpuBackend::ntt_inverse(u64* data, std::size_t batch, const RnsBase& base) {
  const std::size_t n = base.n();
  for_each_limb(batch, base, n * 8, [&](std::size_t offset, std::size_t limb) {
    ntt_inverse_limb(data + offset, base.ntt(limb));
  });
}

void CpuBackend::add(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base) {
  map_words<AddOp>(a, b, out, batch, base);
}

void CpuBackend::sub(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base) {
  map_words<SubOp>(a, b, out, batch, base);
}

void CpuBackend::inner_product_pair(const u64* const* in, const u64* const* b, const u64* const* a, std::size_t terms,
                                    u64* out0, u64* out1, const RnsBase& base) {
  const std::size_t n = base.n();
  // Blocks of coefficients: the two 128-bit sums of a block stay in L1 while
  // the digits stream through once, up to three at a time with the sums in
  // registers (the same sums as inner_product_pair_body, so the same words).
  constexpr std::size_t kBlock = 256;
  for_each_limb(1, base, n * terms, [&](std::size_t offset, std::size_t limb) {
    const Modulus& mod = base.modulus(limb);
    const u64 q = mod.value();
    if (products_on_avx512(q, n)) return inner_product_pair_limb_avx512(in, b, a, terms, offset, n, q, out0, out1);
    u128 s0[kBlock], s1[kBlock];
    for (std::size_t c0 = 0; c0 < n; c0 += kBlock) {
      const std::size_t len = std::min(kBlock, n - c0), at = offset + c0;
      for (std::size_t t0 = 0; t0 < terms; t0 += kernel::kInnerProductChunk) {
        const std::size_t t1 = std::min(terms, t0 + kernel::kInnerProductChunk);
        for (std::size_t t = t0; t < t1;) {
          const bool first = t == t0;
          switch (std::min<std::size_t>(t1 - t, 3)) {
            case 3: add_products<3>(in + t, b + t, a + t, at, len, s0, s1, first); t += 3; break;
            case 2: add_products<2>(in + t, b + t, a + t, at, len, s0, s1, first); t += 2; break;
            default: add_products<1>(in + t, b + t, a + t, at, len, s0, s1, first); t += 1; break;
          }
        }
        for (std::size_t c = 0; c < len; ++c) {
          const u64 r0 = reduce_u128(s0[c], mod), r1 = reduce_u128(s1[c], mod);
          out0[at + c] = t0 == 0 ? r0 : add_mod(out0[at + c], r0, q);
          out1[at + c] = t0 == 0 ? r1 : add_mod(out1[at + c], r1, q);
        }
      }
    }
  });
}

void CpuBackend::linear_combination(const u64* const* inputs, const u64* weights, std::size_t terms, u64* out,
                                    std::size_t batch, const RnsBase& base) {
  const std::size_t n = base.n(), limbs = base.size();
  // A weight is fixed per (term, limb), so each product is a Shoup product,
  // summed lazily in [0, 2q) over a block of coefficients that stays in L1
  // (no 128-bit sums, no reduction per term; AVX2 four words at a time). The
  // AVX-512 kernels (products_avx512.cpp) take the terms whose weight is not 0.
  constexpr std::size_t kBlock = 512;
  for_each_limb(batch, base, n * terms, [&](std::size_t offset, std::size_t limb) {
    const u64 q = base.modulus(limb).value();
    thread_local std::vector<ShoupOperand> w;
    thread_local std::vector<const u64*> x;
    w.clear();
    x.clear();
    for (std::size_t t = 0; t < terms; ++t) {
      const u64 weight = weights[t * limbs + limb];
      if (weight == 0) continue;
      w.push_back(make_shoup(weight, q));
      x.push_back(inputs[t] + offset);
    }
    if (shoup_products_on_avx512(n)) return linear_combination_limb_avx512(x.data(), w.data(), w.size(), out + offset, n, q);
#if RF_CPU_AVX2
    const avx2::VMod m = avx2::vmod(q);
#endif
    alignas(32) u64 acc[kBlock];
    for (std::size_t c0 = 0; c0 < n; c0 += kBlock) {
      const std::size_t len = std::min(kBlock, n - c0);
      std::fill(acc, acc + len, 0);
      std::size_t t = 0;
#if RF_CPU_AVX2
      // Two terms per pass over the block: half the loads and stores of acc.
      for (; t + 2 <= w.size(); t += 2) {
        const u64 *x0 = x[t] + c0, *x1 = x[t + 1] + c0;
        const avx2::VShoup w0 = avx2::vshoup(w[t].value, w[t].quotient);
        const avx2::VShoup w1 = avx2::vshoup(w[t + 1].value, w[t + 1].quotient);
        std::size_t c = 0;
        for (; c + 4 <= len; c += 4) {
          avx2::V sum = _mm256_add_epi64(avx2::vload(acc + c), avx2::vmul_shoup_lazy(avx2::vload(x0 + c), w0, m));
          sum = avx2::vsub_if_ge(sum, m.two_q);
          sum = _mm256_add_epi64(sum, avx2::vmul_shoup_lazy(avx2::vload(x1 + c), w1, m));
          avx2::vstore(acc + c, avx2::vsub_if_ge(sum, m.two_q));
        }
        for (; c < len; ++c)
          acc[c] = kernel::base_convert_shoup_step(kernel::base_convert_shoup_step(acc[c], x0[c], w[t], q), x1[c],
                                                   w[t + 1], q);
      }
#endif
      for (; t < w.size(); ++t) {
        const u64* xt = x[t] + c0;
        for (std::size_t c = 0; c < len; ++c) acc[c] = kernel::base_convert_shoup_step(acc[c], xt[c], w[t], q);
      }
      u64* z = out + offset + c0;
      for (std::size_t c = 0; c < len; ++c) z[c] = acc[c] >= q ? acc[c] - q : acc[c];
    }
  });
}

void CpuBackend::linear_combinations(const u64* const* inputs, const u64* weights, std::size_t terms,
                                     u64* const* outs, std::size_t outputs, std::size_t batch, const RnsBase& base) {
  const std::size_t n = base.n(), limbs = base.size();
  // Only the AVX-512 kernels share an input's loads among outputs; elsewhere one output at a time.
  if (outputs < 2 || !shoup_products_on_avx512(n))
    return Backend::linear_combinations(inputs, weights, terms, outs, outputs, batch, base);
  for_each_limb(batch, base, n * terms * outputs, [&](std::size_t offset, std::size_t limb) {
    const u64 q = base.modulus(limb).value();
    thread_local std::vector<ShoupOperand> w;
    thread_local std::vector<const u64*> x;
    thread_local std::vector<u64*> o;
    w.resize(outputs * terms);
    x.resize(terms);
    o.resize(outputs);
    for (std::size_t t = 0; t < terms; ++t) x[t] = inputs[t] + offset;
    for (std::size_t k = 0; k < outputs; ++k) {
      o[k] = outs[k] + offset;
      for (std::size_t t = 0; t < terms; ++t) w[k * terms + t] = make_shoup(weights[(k * terms + t) * limbs + limb], q);
    }
    linear_combinations_limb_avx512(x.data(), w.data(), terms, o.data(), outputs, n, q);
  });
}


void CpuBackend::add_scalar(const u64* a, const u64* scalars, u64* out, std::size_t batch, const RnsBase& base) {
  const std::size_t n = base.n();
  for_each_limb(batch, base, n / 4, [&](std::size_t offset, std::size_t limb) {
    const u64 q = base.modulus(limb).value(), s = scalars[limb];
    std::size_t j = offset;
#if RF_CPU_AVX2
    const avx2::VMod m = avx2::vmod(q);
    const avx2::V vs = avx2::vbroadcast(s);
    for (; j + 4 <= offset + n; j += 4) avx2::vstore(out + j, AddOp::vec(avx2::vload(a + j), vs, m));
#endif
    for (; j < offset + n; ++j) out[j] = add_mod(a[j], s, q);
  });
}

void CpuBackend::copy(const u64* src, u64* dst, std::size_t words) {
  if (words) std::memcpy(dst, src, words * sizeof(u64));
}

void CpuBackend::zero(u64* dst, std::size_t words) {
  if (words) std::memset(dst, 0, words * sizeof(u64));
}

void CpuBackend::negate(const u64* a, u64* out, std::size_t batch, const RnsBase& base) {
  map_words<NegateOp>(a, nullptr, out, batch, base);
}

void CpuBackend::multiply(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base) {
  const std::size_t n = base.n();
  for_each_limb(batch, base, n, [&](std::size_t offset, std::size_t limb) {
    const Modulus& mod = base.modulus(limb);
    if (products_on_avx512(mod.value(), n)) return multiply_limb_avx512(a + offset, b + offset, out + offset, n, mod.value());
    for (std::size_t j = offset; j < offset + n; ++j) out[j] = mul_mod(a[j], b[j], mod);
  });
}

void CpuBackend::multiply_add(const u64* a, const u64* b, u64* acc, std::size_t batch, const RnsBase& base) {
  const std::size_t n = base.n();
  for_each_limb(batch, base, n, [&](std::size_t offset, std::size_t limb) {
    const Modulus& mod = base.modulus(limb);
    if (products_on_avx512(mod.value(), n)) return multiply_add_limb_avx512(a + offset, b + offset, acc + offset, n, mod.value());
    for (std::size_t j = offset; j < offset + n; ++j) acc[j] = mad_mod(a[j], b[j], acc[j], mod);
  });
}

void CpuBackend::multiply_scalar(const u64* a, const u64* scalars, u64* out, std::size_t batch,
                                 const RnsBase& base) {
  const std::size_t n = base.n();
  for_each_limb(batch, base, n, [&](std::size_t offset, std::size_t limb) {
    const u64 q = base.modulus(limb).value();
    const ShoupOperand s = make_shoup(scalars[limb], q);
    std::size_t j = offset;
#if RF_CPU_AVX2
    const avx2::VMod m = avx2::vmod(q);
    const avx2::VShoup vs = avx2::vshoup(s.value, s.quotient);
    for (; j + 4 <= offset + n; j += 4) avx2::vstore(out + j, avx2::vmul_shoup(avx2::vload(a + j), vs, m));
#endif
    for (; j < offset + n; ++j) out[j] = mul_mod_shoup(a[j], s.value, s.quotient, q);
  });
}

}  // namespace ringfire::cpu
