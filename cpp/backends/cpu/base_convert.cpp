// RNS base conversion on the CPU (see ring/base_converter.h for the math).
//
// Two layouts, by the number of source primes:
// * few (key-switching digits, ModDown from P): pass by pass over whole
//   limbs, pass 3 one target limb per task with Shoup products summed in
//   [0, 2p) — cheaper than a 128-bit reduction per coefficient, and the few
//   y streams prefetch well;
// * many (the scale-invariant product's extensions): block by block over the
//   coefficients, so a block's y values for every source prime stay in
//   cache while they serve every target prime, sums lazy in 128 bits (2.2x
//   the per-limb layout's speed at 20 x 20 primes, measured).
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu_backend.h"
#include "ntt_kernels.h"
#include "parallel_for.h"
#include "ringfire/arith/modular.h"
#include "ringfire/base/buffer.h"
#include "ringfire/ring/kernel_bodies.h"

namespace ringfire::cpu {

namespace {

// Products of two 61-bit values are < 2^122: 63 of them fit in 128 bits.
constexpr std::size_t kLazyTerms = kernel::kBaseConvLazyTerms;
// Coefficients per block in the many-sources layout.
constexpr std::size_t kBlock = 256;
// Up to this many source primes, the per-limb layout (measured faster there).
constexpr std::size_t kFewSources = 6;

// v * Q mod p_j for v in [0, src]: v is a small count, so a table replaces a
// product per word. Row j at [j * (src + 1)].
std::vector<u64> v_times_q_table(const BaseConverter& conv) {
  const std::size_t src = conv.from().size(), dst = conv.to().size();
  std::vector<u64> table(dst * (src + 1), 0);
  for (std::size_t j = 0; j < dst; ++j) {
    const u64 pv = conv.to().modulus(j).value();
    for (std::size_t t = 1; t <= src; ++t)
      table[j * (src + 1) + t] = add_mod(table[j * (src + 1) + t - 1], conv.q_mod_p()[j], pv);
  }
  return table;
}

// out_limb(poly, j) is where target limb j of polynomial `poly` goes; with
// to_eval, each target limb is transformed (forward NTT) by the task that
// computed it.
template <class OutLimb>
void convert_few_sources(const u64* in, std::size_t batch, const BaseConverter& conv, BaseConversion kind,
                         OutLimb out_limb, bool to_eval) {
  const RnsBase& from = conv.from();
  const RnsBase& to = conv.to();
  const std::size_t n = from.n(), src = from.size(), dst = to.size();
  const bool exact = kind == BaseConversion::exact;
  // Pass 1 (parallel over polynomial x source limb): y_i = [x_i * (Q/q_i)^-1]_{q_i}.
  Buffer y_buffer(batch * src * n);
  u64* y_all = y_buffer.data();
  parallel_for(batch * src, n, [&](std::size_t index) {
    const std::size_t i = index % src;
    const Modulus& qi = from.modulus(i);
    const ShoupOperand inv = make_shoup(from.qhat_inverse(i), qi.value());
    const u64* x = in + index * n;
    u64* y = y_all + index * n;
    for (std::size_t c = 0; c < n; ++c) y[c] = kernel::base_convert_scale_body(x[c], inv, qi.value());
  });
  // Pass 2 (exact only, parallel over polynomial x coefficient chunk):
  // v = round(sum_i y_i / q_i), how many times Q sits in the fast result
  // (0 <= v <= |B|). Pool memory: a std::vector this large would be mapped
  // and faulted in at every call.
  Buffer v_all(exact ? batch * n : 1);
  if (exact) {
    constexpr std::size_t kChunk = 1024;
    const std::size_t chunks = (n + kChunk - 1) / kChunk;
    parallel_for(batch * chunks, kChunk * src, [&](std::size_t index) {
      const std::size_t poly = index / chunks, c0 = (index % chunks) * kChunk, c1 = std::min(n, c0 + kChunk);
      const u64* y_poly = y_all + poly * src * n;
      std::vector<u64> acc(src + 1);  // multiword scratch for the near-half rule
      u64* v = v_all.data() + poly * n;
      // The shared bodies (ring/kernel_bodies.h) keep the CPU and GPU results bit-identical.
      for (std::size_t c = c0; c < c1; ++c) {
        double s = 0.0;
        for (std::size_t i = 0; i < src; ++i) s = kernel::base_convert_sum_step(s, y_poly[i * n + c], conv.q_reciprocal()[i]);
        v[c] = kernel::base_convert_near_half(s)
                   ? kernel::exact_rounded_quotient(y_poly + c, n, from.qhat(0), from.product().data(), src, acc.data())
                   : kernel::base_convert_rounded(s);
      }
    });
  }
  const std::vector<u64> v_times_q = exact ? v_times_q_table(conv) : std::vector<u64>();
  // Pass 3 (parallel over polynomial x target limb): z_j = sum_i y_i * (Q/q_i mod p_j) - v * Q.
  parallel_for(batch * dst, n * src, [&](std::size_t index) {
    const std::size_t poly = index / dst, j = index % dst;
    const u64* y = y_all + poly * src * n;
    u64* z = out_limb(poly, j);
    const u64 pv = to.modulus(j).value();
    const u64* factors = conv.qhat_mod_p() + j * src;
    const u64* v = exact ? v_all.data() + poly * n : nullptr;
    const u64* vq = exact ? v_times_q.data() + j * (src + 1) : nullptr;
    ShoupOperand f[kFewSources];
    for (std::size_t i = 0; i < src; ++i) f[i] = make_shoup(factors[i], pv);
    const u64 two_p = 2 * pv;
    for (std::size_t c = 0; c < n; ++c) {
      u64 r = 0;
      for (std::size_t i = 0; i < src; ++i) {
        r += mul_mod_shoup_lazy(y[i * n + c], f[i].value, f[i].quotient, pv);
        r -= (r >= two_p) ? two_p : 0;
      }
      r -= (r >= pv) ? pv : 0;
      z[c] = v ? sub_mod(r, vq[v[c]], pv) : r;
    }
    if (to_eval) ntt_forward_limb(z, to.ntt(j));
  });
}

// The many-sources layout; out_limb as above (coefficient form).
template <class OutLimb>
void convert_blocked(const u64* in, std::size_t batch, const BaseConverter& conv, BaseConversion kind,
                     OutLimb out_limb) {
  const RnsBase& from = conv.from();
  const RnsBase& to = conv.to();
  const std::size_t n = from.n(), src = from.size(), dst = to.size();
  const std::size_t blocks = (n + kBlock - 1) / kBlock;
  const bool exact = kind == BaseConversion::exact;
  const std::vector<u64> v_times_q = exact ? v_times_q_table(conv) : std::vector<u64>();
  std::vector<ShoupOperand> qhat_inv(src);
  for (std::size_t i = 0; i < src; ++i) qhat_inv[i] = make_shoup(from.qhat_inverse(i), from.modulus(i).value());
  parallel_for(batch * blocks, kBlock * src * (dst + 1), [&](std::size_t index) {
    const std::size_t poly = index / blocks, c0 = (index % blocks) * kBlock, len = std::min(kBlock, n - c0);
    thread_local std::vector<u64> scratch;
    scratch.resize(src * kBlock + kBlock + src + 1);
    u64* y = scratch.data();      // y_i of coefficient c at y[c * src + i]
    u64* v = y + src * kBlock;    // the rounded quotients (exact)
    u64* multiword = v + kBlock;  // near-half scratch, src + 1 words
    // Pass 1: y_i = [x_i * (Q/q_i)^-1]_{q_i}.
    for (std::size_t i = 0; i < src; ++i) {
      const u64* x = in + (poly * src + i) * n + c0;
      const u64 qi = from.modulus(i).value();
      for (std::size_t c = 0; c < len; ++c) y[c * src + i] = kernel::base_convert_scale_body(x[c], qhat_inv[i], qi);
    }
    // Pass 2 (exact): v = round(sum_i y_i / q_i); the sum runs over i in order,
    // as the GPU's does (ring/kernel_bodies.h).
    if (exact) {
      const double* r = conv.q_reciprocal();
      for (std::size_t c = 0; c < len; ++c) {
        const u64* yc = y + c * src;
        double s = 0.0;
        for (std::size_t i = 0; i < src; ++i) s = kernel::base_convert_sum_step(s, yc[i], r[i]);
        v[c] = kernel::base_convert_near_half(s)
                   ? kernel::exact_rounded_quotient(yc, 1, from.qhat(0), from.product().data(), src, multiword)
                   : kernel::base_convert_rounded(s);
      }
    }
    // Pass 3: z_j = sum_i y_i * (Q/q_i mod p_j) - v * Q, summed lazily in a
    // 128-bit register (one reduction per 63 terms).
    for (std::size_t j = 0; j < dst; ++j) {
      const Modulus& p = to.modulus(j);
      const u64 pv = p.value();
      const u64* f = conv.qhat_mod_p() + j * src;
      const u64* vq = exact ? v_times_q.data() + j * (src + 1) : nullptr;
      u64* z = out_limb(poly, j) + c0;
      for (std::size_t c = 0; c < len; ++c) {
        const u64* yc = y + c * src;
        u64 r = 0;
        for (std::size_t i0 = 0; i0 < src; i0 += kLazyTerms) {
          u128 acc = 0;
          const std::size_t i1 = std::min(src, i0 + kLazyTerms);
          for (std::size_t i = i0; i < i1; ++i) acc += mul_wide(yc[i], f[i]);
          r = add_mod(r, reduce_u128(acc, p), pv);
        }
        z[c] = exact ? sub_mod(r, vq[v[c]], pv) : r;
      }
    }
  });
}

}  // namespace

void CpuBackend::base_convert(const u64* in, u64* out, std::size_t batch, const BaseConverter& conv,
                              BaseConversion kind) {
  const RnsBase& from = conv.from();
  const RnsBase& to = conv.to();
  const std::size_t n = from.n(), src = from.size(), dst = to.size();
  if (src == 1 && kind == BaseConversion::exact) {
    // One source prime (rescaling): round(x / q) is 1 exactly when x > q/2
    // (q is odd, so never a tie), and the result is the centred lift x or
    // x - q reduced mod p_j: one pass, the same words as the general path.
    const u64 q = from.modulus(0).value(), half = q >> 1;
    parallel_for(batch * dst, n, [&](std::size_t index) {
      const std::size_t poly = index / dst, j = index % dst;
      const u64 pv = to.modulus(j).value();
      const u64 minus_q = (pv - q % pv) % pv;
      const ShoupOperand one = make_shoup(1, pv);  // x mod p for any 64-bit x
      const u64* x = in + poly * n;
      u64* z = out + index * n;
      for (std::size_t c = 0; c < n; ++c) {
        const u64 r = mul_mod_shoup(x[c], one.value, one.quotient, pv);
        const u64 upper = 0 - static_cast<u64>(x[c] > half);  // all ones when x stands for x - q
        z[c] = add_mod(r, minus_q & upper, pv);
      }
    });
    return;
  }
  auto contiguous = [out, dst, n](std::size_t poly, std::size_t j) { return out + (poly * dst + j) * n; };
  if (src <= kFewSources) convert_few_sources(in, batch, conv, kind, contiguous, false);
  else convert_blocked(in, batch, conv, kind, contiguous);
}

void CpuBackend::base_convert_ntt(const u64* in, u64* /*scratch*/, u64* const* out_limbs, const BaseConverter& conv,
                                  BaseConversion kind) {
  const RnsBase& to = conv.to();
  auto scattered = [out_limbs](std::size_t, std::size_t j) { return out_limbs[j]; };
  if (conv.from().size() <= kFewSources) {
    convert_few_sources(in, 1, conv, kind, scattered, true);
    return;
  }
  convert_blocked(in, 1, conv, kind, scattered);
  parallel_for(to.size(), to.n() * 8, [&](std::size_t j) { ntt_forward_limb(out_limbs[j], to.ntt(j)); });
}

}  // namespace ringfire::cpu
