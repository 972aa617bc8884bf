// RNS base conversion on the CPU (see ring/base_converter.h for the math).
#include <cmath>
#include <vector>

#include "cpu_backend.h"
#include "parallel_for.h"
#include "ringfire/arith/modular.h"
#include "ringfire/base/buffer.h"
#include "ringfire/ring/kernel_bodies.h"

namespace ringfire::cpu {

namespace {

// Products of two 61-bit values are < 2^122: 63 of them fit in 128 bits.
constexpr std::size_t kLazyTerms = kernel::kBaseConvLazyTerms;
// Up to this many source limbs, pass 3 sums Shoup products instead.
constexpr std::size_t kShoupTerms = 8;

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
  // Pass 1 (parallel over polynomial x source limb): y_i = [x_i * (Q/q_i)^-1]_{q_i}.
  Buffer y_buffer(batch * src * n);
  u64* y_all = y_buffer.data();
  parallel_for(batch * src, n, [&](std::size_t index) {
    const std::size_t i = index % src;
    const Modulus& qi = from.modulus(i);
    const ShoupOperand inv = make_shoup(from.qhat_inverse(i), qi.value());
    const u64* x = in + index * n;
    u64* y = y_all + index * n;
    for (std::size_t c = 0; c < n; ++c) y[c] = mul_mod_shoup(x[c], inv.value, inv.quotient, qi.value());
  });
  // Pass 2 (exact only, parallel over polynomial x coefficient chunk):
  // v = round(sum_i y_i / q_i), how many times Q sits in the fast result
  // (0 <= v <= |B|).
  std::vector<u64> v_all;
  if (kind == BaseConversion::exact) {
    v_all.resize(batch * n);
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
  // Pass 3 (parallel over polynomial x target limb): z_j = sum_i y_i * (Q/q_i mod p_j) - v * Q.
  parallel_for(batch * dst, n * src, [&](std::size_t index) {
    const std::size_t poly = index / dst, j = index % dst;
    const u64* y = y_all + poly * src * n;
    u64* z = out + index * n;
    const Modulus& p = to.modulus(j);
    const u64 pv = p.value();
    const u64* factors = conv.qhat_mod_p() + j * src;
    const u64 q_mod_p = conv.q_mod_p()[j];
    const u64* v = kind == BaseConversion::exact ? v_all.data() + poly * n : nullptr;
    // v * Q mod p for v in [0, |B|]: v is a small count, so a table replaces a product per word.
    std::vector<u64> v_times_q(v ? src + 1 : 0);
    for (std::size_t t = 1; t < v_times_q.size(); ++t) v_times_q[t] = add_mod(v_times_q[t - 1], q_mod_p, pv);
    if (src <= kShoupTerms) {
      // Few source limbs (key-switching digits): Shoup products kept in
      // [0, 2p) and summed with a conditional subtraction, cheaper than a
      // 128-bit reduction per coefficient.
      ShoupOperand f[kShoupTerms];
      for (std::size_t i = 0; i < src; ++i) f[i] = make_shoup(factors[i], pv);
      const u64 two_p = 2 * pv;
      for (std::size_t c = 0; c < n; ++c) {
        u64 r = 0;
        for (std::size_t i = 0; i < src; ++i) {
          r += mul_mod_shoup_lazy(y[i * n + c], f[i].value, f[i].quotient, pv);
          r -= (r >= two_p) ? two_p : 0;
        }
        r -= (r >= pv) ? pv : 0;
        if (v) r = sub_mod(r, v_times_q[v[c]], pv);
        z[c] = r;
      }
      return;
    }
    for (std::size_t c = 0; c < n; ++c) {
      u128 acc = 0;
      u64 r = 0;
      for (std::size_t i = 0; i < src; ++i) {
        acc += mul_wide(y[i * n + c], factors[i]);
        if ((i + 1) % kLazyTerms == 0) {
          r = add_mod(r, reduce_u128(acc, p), pv);
          acc = 0;
        }
      }
      r = add_mod(r, reduce_u128(acc, p), pv);
      if (v) r = sub_mod(r, v_times_q[v[c]], pv);
      z[c] = r;
    }
  });
}

}  // namespace ringfire::cpu
