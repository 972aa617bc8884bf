// RNS base conversion on the CPU (see ring/base_converter.h for the math).
#include <cmath>
#include <vector>

#include "cpu_backend.h"
#include "parallel_for.h"
#include "ringfire/arith/modular.h"
#include "ringfire/base/buffer.h"
#include "ringfire/ring/multiword.h"

namespace ringfire::cpu {

namespace {

// Products of two 61-bit values are < 2^122: 63 of them fit in 128 bits.
constexpr std::size_t kLazyTerms = 63;

// The double-precision sum of |B| terms y_i / q_i (each < 1) is within
// |B| * 2^-52 of the truth; fractions this close to 1/2 are settled exactly.
constexpr double kRoundingMargin = 1.0 / (1ull << 36);

// v = round(sum_i y_i / q_i) exactly, for coefficients whose floating-point
// sum lands next to a half: forms S = sum_i y_i * (Q/q_i) in multiword
// arithmetic, S = u*Q + x with x in [0, Q), and v = u + [2x > Q].
u64 exact_rounded_quotient(const std::vector<u64>& y, std::size_t n, std::size_t c, const RnsBase& from) {
  const std::size_t len = from.size();
  std::vector<u64> acc(len + 1, 0), q_ext(from.product());
  q_ext.push_back(0);
  for (std::size_t i = 0; i < len; ++i) acc[len] += multiword::mul_word_add(from.qhat(i), y[i * n + c], acc.data(), len);
  u64 u = 0;
  while (multiword::greater_equal(acc.data(), q_ext.data(), len + 1)) {
    multiword::subtract(acc.data(), q_ext.data(), len + 1);
    ++u;
  }
  // 2x > Q, with x = acc < Q (acc has a spare top word for the doubling).
  std::vector<u64> twice(len + 1);
  multiword::mul_word(acc.data(), 2, twice.data(), len + 1);
  const bool above_half = !multiword::greater_equal(q_ext.data(), twice.data(), len + 1);
  return u + (above_half ? 1 : 0);
}

}  // namespace

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
        const double fraction = s - std::floor(s);
        v[c] = std::fabs(fraction - 0.5) < kRoundingMargin ? exact_rounded_quotient(y, n, c, from)
                                                            : static_cast<u64>(s + 0.5);
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
