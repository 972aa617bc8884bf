// Harvey's lazy butterflies (values kept in [0, 4q) forward and [0, 2q)
// inverse; q < 2^61 keeps 4q < 2^64), with Shoup twiddle products.
#include "ntt_kernels.h"

namespace ringfire::cpu {

namespace {

// Forward stages m = 1, 2, ..., m_end/2 of Alg. 5. Input < 4q; output < 4q.
void forward_stages(u64* a, const NttTables& t, std::size_t m_end) {
  const u64 q = t.modulus().value();
  const u64 two_q = 2 * q;
  const u64* w = t.forward();
  const u64* ws = t.forward_shoup();
  std::size_t k = t.n() / 2;
  for (std::size_t m = 1; m < m_end; m <<= 1, k >>= 1) {
    for (std::size_t i = 0; i < m; ++i) {
      const u64 wv = w[m + i], wq = ws[m + i];
      u64* x = a + 2 * i * k;
      u64* y = x + k;
      for (std::size_t j = 0; j < k; ++j) {
        u64 xv = x[j];
        xv -= (xv >= two_q) ? two_q : 0;
        const u64 tv = mul_mod_shoup_lazy(y[j], wv, wq, q);
        x[j] = xv + tv;
        y[j] = xv - tv + two_q;
      }
    }
  }
}

// [0, 4q) -> [0, q).
void reduce_from_4q(u64* a, std::size_t n, u64 q) {
  const u64 two_q = 2 * q;
  for (std::size_t j = 0; j < n; ++j) {
    u64 v = a[j];
    v -= (v >= two_q) ? two_q : 0;
    v -= (v >= q) ? q : 0;
    a[j] = v;
  }
}

// Inverse stages m = m_start, m_start/2, ..., 2 of Alg. 6 (lazy, < 2q), then
// the last stage (m = 1) multiplying by `scale` and `last` = psi^-br(1)*scale.
void inverse_stages(u64* a, const NttTables& t, std::size_t m_start, ShoupOperand scale, ShoupOperand last) {
  const u64 q = t.modulus().value();
  const u64 two_q = 2 * q;
  const u64* w = t.inverse();
  const u64* ws = t.inverse_shoup();
  const std::size_t n = t.n();
  std::size_t k = n / (2 * m_start);
  for (std::size_t m = m_start; m > 1; m >>= 1, k <<= 1) {
    for (std::size_t i = 0; i < m; ++i) {
      const u64 wv = w[m + i], wq = ws[m + i];
      u64* x = a + 2 * i * k;
      u64* y = x + k;
      for (std::size_t j = 0; j < k; ++j) {
        const u64 xv = x[j], yv = y[j];
        u64 s = xv + yv;
        s -= (s >= two_q) ? two_q : 0;
        x[j] = s;
        y[j] = mul_mod_shoup_lazy(xv - yv + two_q, wv, wq, q);
      }
    }
  }
  u64* x = a;
  u64* y = a + n / 2;
  for (std::size_t j = 0; j < n / 2; ++j) {
    const u64 xv = x[j], yv = y[j];
    x[j] = mul_mod_shoup(xv + yv, scale.value, scale.quotient, q);
    y[j] = mul_mod_shoup(xv - yv + two_q, last.value, last.quotient, q);
  }
}

}  // namespace

void ntt_forward_limb(u64* a, const NttTables& t) {
  forward_stages(a, t, t.n());
  reduce_from_4q(a, t.n(), t.modulus().value());
}

void ntt_forward_truncated_limb(u64* a, const NttTables& t) {
  forward_stages(a, t, t.n() / 2);
  reduce_from_4q(a, t.n(), t.modulus().value());
}

void ntt_inverse_limb(u64* a, const NttTables& t) {
  inverse_stages(a, t, t.n() / 2, t.n_inv(), t.last_twiddle_n_inv());
}

void ntt_inverse_truncated_limb(u64* a, const NttTables& t) {
  inverse_stages(a, t, t.n() / 4, t.half_n_inv(), t.last_twiddle_half_n_inv());
}

}  // namespace ringfire::cpu
