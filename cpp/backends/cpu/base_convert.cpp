// RNS base conversion on the CPU (see ring/base_converter.h for the math).
#include <vector>

#include "cpu_backend.h"
#include "parallel_for.h"
#include "ringfire/arith/modular.h"
#include "ringfire/base/buffer.h"

namespace ringfire::cpu {

namespace {
// Products of two 61-bit values are < 2^122: 63 of them fit in 128 bits.
constexpr std::size_t kLazyTerms = 63;
}

void CpuBackend::base_convert(const u64* in, u64* out, std::size_t batch, const BaseConverter& conv,
                              BaseConversion kind) {
  const RnsBase& from = conv.from();
  const RnsBase& to = conv.to();
  const std::size_t n = from.n(), src = from.size(), dst = to.size();
  parallel_for(batch, n * src * dst, [&](std::size_t poly) {
    const u64* x = in + poly * src * n;
    u64* z = out + poly * dst * n;
    // y_i = [x_i * (Q/q_i)^-1]_{q_i}
    std::vector<u64> y(src * n);
    for (std::size_t i = 0; i < src; ++i) {
      const Modulus& qi = from.modulus(i);
      const ShoupOperand inv = make_shoup(from.qhat_inverse(i), qi.value());
      for (std::size_t c = 0; c < n; ++c) y[i * n + c] = mul_mod_shoup(x[i * n + c], inv.value, inv.quotient, qi.value());
    }
    // v = round(sum_i y_i / q_i): how many times Q sits in the fast result.
    std::vector<u64> v;
    if (kind == BaseConversion::exact) {
      v.resize(n);
      for (std::size_t c = 0; c < n; ++c) {
        double s = 0.0;
        for (std::size_t i = 0; i < src; ++i) s += static_cast<double>(y[i * n + c]) * conv.q_reciprocal()[i];
        v[c] = static_cast<u64>(s + 0.5);
      }
    }
    for (std::size_t j = 0; j < dst; ++j) {
      const Modulus& p = to.modulus(j);
      const u64* factors = conv.qhat_mod_p() + j * src;
      const u64 q_mod_p = conv.q_mod_p()[j];
      for (std::size_t c = 0; c < n; ++c) {
        u128 acc = 0;
        u64 r = 0;
        for (std::size_t i = 0; i < src; ++i) {
          acc += mul_wide(y[i * n + c], factors[i]);
          if ((i + 1) % kLazyTerms == 0) {
            r = add_mod(r, reduce_u128(acc, p), p.value());
            acc = 0;
          }
        }
        r = add_mod(r, reduce_u128(acc, p), p.value());
        if (kind == BaseConversion::exact)
          r = sub_mod(r, mul_mod(v[c] % p.value(), q_mod_p, p), p.value());
        z[j * n + c] = r;
      }
    }
  });
}

}  // namespace ringfire::cpu
