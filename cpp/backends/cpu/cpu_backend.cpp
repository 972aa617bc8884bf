#include "cpu_backend.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "ntt_kernels.h"
#include "parallel_for.h"
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
  const std::size_t n = base.n();
  for_each_limb(batch, base, n / 4, [&](std::size_t offset, std::size_t limb) {
    const u64 q = base.modulus(limb).value();
    for (std::size_t j = offset; j < offset + n; ++j) out[j] = add_mod(a[j], b[j], q);
  });
}

void CpuBackend::sub(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base) {
  const std::size_t n = base.n();
  for_each_limb(batch, base, n / 4, [&](std::size_t offset, std::size_t limb) {
    const u64 q = base.modulus(limb).value();
    for (std::size_t j = offset; j < offset + n; ++j) out[j] = sub_mod(a[j], b[j], q);
  });
}

void CpuBackend::inner_product_pair(const u64* const* in, const u64* const* b, const u64* const* a, std::size_t terms,
                                    u64* out0, u64* out1, const RnsBase& base) {
  const std::size_t n = base.n();
  // Blocks of coefficients: the two 128-bit sums of a block stay in L1 while
  // every digit streams through once (the same sums as inner_product_pair_body,
  // term by term, so the same words).
  constexpr std::size_t kBlock = 256;
  for_each_limb(1, base, n * terms, [&](std::size_t offset, std::size_t limb) {
    const Modulus& mod = base.modulus(limb);
    const u64 q = mod.value();
    u128 s0[kBlock], s1[kBlock];
    for (std::size_t c0 = 0; c0 < n; c0 += kBlock) {
      const std::size_t len = std::min(kBlock, n - c0), at = offset + c0;
      std::fill(out0 + at, out0 + at + len, 0);
      std::fill(out1 + at, out1 + at + len, 0);
      for (std::size_t t0 = 0; t0 < terms; t0 += kernel::kInnerProductChunk) {
        const std::size_t t1 = std::min(terms, t0 + kernel::kInnerProductChunk);
        std::fill(s0, s0 + len, 0);
        std::fill(s1, s1 + len, 0);
        for (std::size_t t = t0; t < t1; ++t) {
          const u64 *x = in[t] + at, *kb = b[t] + at, *ka = a[t] + at;
          for (std::size_t c = 0; c < len; ++c) {
            s0[c] += mul_wide(x[c], kb[c]);
            s1[c] += mul_wide(x[c], ka[c]);
          }
        }
        for (std::size_t c = 0; c < len; ++c) {
          out0[at + c] = add_mod(out0[at + c], reduce_u128(s0[c], mod), q);
          out1[at + c] = add_mod(out1[at + c], reduce_u128(s1[c], mod), q);
        }
      }
    }
  });
}

void CpuBackend::linear_combination(const u64* const* inputs, const u64* weights, std::size_t terms, u64* out,
                                    std::size_t batch, const RnsBase& base) {
  const std::size_t n = base.n(), limbs = base.size();
  // Products are < 2^122 for 61-bit primes: 32 of them fit a 128-bit sum.
  constexpr std::size_t kChunk = 32;
  for_each_limb(batch, base, n * terms, [&](std::size_t offset, std::size_t limb) {
    const Modulus& mod = base.modulus(limb);
    std::vector<u128> acc(n, 0);
    std::vector<u64> partial(n, 0);
    for (std::size_t t0 = 0; t0 < terms; t0 += kChunk) {
      const std::size_t t1 = std::min(terms, t0 + kChunk);
      for (std::size_t t = t0; t < t1; ++t) {
        const u64 w = weights[t * limbs + limb];
        if (w == 0) continue;
        const u64* x = inputs[t] + offset;
        for (std::size_t j = 0; j < n; ++j) acc[j] += mul_wide(x[j], w);
      }
      for (std::size_t j = 0; j < n; ++j) {
        partial[j] = add_mod(partial[j], reduce_u128(acc[j], mod), mod.value());
        acc[j] = 0;
      }
    }
    std::copy(partial.begin(), partial.end(), out + offset);
  });
}


void CpuBackend::add_scalar(const u64* a, const u64* scalars, u64* out, std::size_t batch, const RnsBase& base) {
  const std::size_t n = base.n();
  for_each_limb(batch, base, n / 4, [&](std::size_t offset, std::size_t limb) {
    const u64 q = base.modulus(limb).value(), s = scalars[limb];
    for (std::size_t j = offset; j < offset + n; ++j) out[j] = add_mod(a[j], s, q);
  });
}

void CpuBackend::copy(const u64* src, u64* dst, std::size_t words) {
  if (words) std::memcpy(dst, src, words * sizeof(u64));
}

void CpuBackend::zero(u64* dst, std::size_t words) {
  if (words) std::memset(dst, 0, words * sizeof(u64));
}

void CpuBackend::negate(const u64* a, u64* out, std::size_t batch, const RnsBase& base) {
  const std::size_t n = base.n();
  for_each_limb(batch, base, n / 4, [&](std::size_t offset, std::size_t limb) {
    const u64 q = base.modulus(limb).value();
    for (std::size_t j = offset; j < offset + n; ++j) out[j] = neg_mod(a[j], q);
  });
}

void CpuBackend::multiply(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base) {
  const std::size_t n = base.n();
  for_each_limb(batch, base, n, [&](std::size_t offset, std::size_t limb) {
    const Modulus& mod = base.modulus(limb);
    for (std::size_t j = offset; j < offset + n; ++j) out[j] = mul_mod(a[j], b[j], mod);
  });
}

void CpuBackend::multiply_add(const u64* a, const u64* b, u64* acc, std::size_t batch, const RnsBase& base) {
  const std::size_t n = base.n();
  for_each_limb(batch, base, n, [&](std::size_t offset, std::size_t limb) {
    const Modulus& mod = base.modulus(limb);
    for (std::size_t j = offset; j < offset + n; ++j) acc[j] = mad_mod(a[j], b[j], acc[j], mod);
  });
}

void CpuBackend::multiply_scalar(const u64* a, const u64* scalars, u64* out, std::size_t batch,
                                 const RnsBase& base) {
  const std::size_t n = base.n();
  for_each_limb(batch, base, n, [&](std::size_t offset, std::size_t limb) {
    const u64 q = base.modulus(limb).value();
    const ShoupOperand s = make_shoup(scalars[limb], q);
    for (std::size_t j = offset; j < offset + n; ++j) out[j] = mul_mod_shoup(a[j], s.value, s.quotient, q);
  });
}

}  // namespace ringfire::cpu
