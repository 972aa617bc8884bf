// See base_convert_avx512.h. Pass 3 runs 32 coefficients per step: four
// sums in registers, each source's factor broadcast once per step.
#include "base_convert_avx512.h"

#include "avx512_modular.h"
#include "rns_isa.h"

namespace ringfire::cpu {

namespace {

using namespace avx512;

template <class A>
RF_IFMA void scale(const u64* x, u64* y, std::size_t len, ShoupOperand w, u64 q) {
  const ZMod m = zmod(q);
  const typename A::Twiddle t = zbroadcast<A>(w.value, w.quotient);
  for (std::size_t c = 0; c < len; c += 8) zstore(y + c, zmul<A>(zload(x + c), t, m));
}

template <class A>
RF_IFMA void accumulate(const u64* y, std::size_t stride, std::size_t src, const ShoupOperand* f, const u64* v,
                        const u64* vq, u64* z, std::size_t len, u64 p) {
  const ZMod m = zmod(p);
  for (std::size_t c = 0; c < len; c += 32) {
    Z r[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512()};
    for (std::size_t i = 0; i < src; ++i) {
      const typename A::Twiddle t = zbroadcast<A>(f[i].value, f[i].quotient);
      const u64* yi = y + i * stride + c;
      for (int s = 0; s < 4; ++s)
        r[s] = zsub_if_ge(_mm512_add_epi64(r[s], A::mul_lazy(zload(yi + 8 * s), t, m)), m.two_q);
    }
    for (int s = 0; s < 4; ++s) {
      Z out = zsub_if_ge(r[s], m.q);
      if (vq != nullptr)
        out = zsub_mod(out, _mm512_i64gather_epi64(zload(v + c + 8 * s), reinterpret_cast<const long long*>(vq), 8), m);
      zstore(z + c + 8 * s, out);
    }
  }
}

}  // namespace

bool base_convert_on_avx512(std::size_t len) { return rns_isa() == RnsIsa::avx512 && len % 32 == 0; }

RF_IFMA void scale_block_avx512(const u64* x, u64* y, std::size_t len, ShoupOperand w, u64 q) {
  q < kIfmaBound ? scale<Ifma52>(x, y, len, w, q) : scale<Mul64>(x, y, len, w, q);
}

RF_IFMA void accumulate_block_avx512(const u64* y, std::size_t stride, std::size_t src, const ShoupOperand* f,
                                     bool sources_below_2_52, const u64* v, const u64* vq, u64* z, std::size_t len,
                                     u64 p) {
  if (sources_below_2_52 && p < kIfmaBound) return accumulate<Ifma52>(y, stride, src, f, v, vq, z, len, p);
  accumulate<Mul64>(y, stride, src, f, v, vq, z, len, p);
}

}  // namespace ringfire::cpu
