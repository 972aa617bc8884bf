// The vector-width-independent stages of the 32-bit NTT (ntt32.h): Harvey's
// butterflies, the radix-4 stages between groups of at least one vector, the
// odd stage left over, and the inverse's last stage with 1/N folded in. The
// AVX2 path (ntt32.cpp) and the AVX-512 path (ntt32_avx512.cpp) instantiate
// them with their lane type; only the in-block stages (t < one vector),
// which shuffle lanes, are written per width.
//
// A lane type L provides: V (the register), width (u32 lanes), and static
// load, store, splat, add, sub, reduce_below(x, bound) (x - bound where
// x >= bound), odd_to_even (lanes 2i+1 to 2i) and mul_shoup(y, w, ws, ws_odd,
// q) (y w mod q in [0, 2q) by Shoup's method).
//
// Each including file defines RF_NTT32_TARGET (its target attribute, or
// nothing) first: the AVX-512 file compiles these for AVX-512 function by
// function, so the templates must carry its attribute there. The anonymous
// namespace gives each file its own copy.
#pragma once

#ifndef RF_NTT32_TARGET
#error "define RF_NTT32_TARGET (the target attribute of the including file, or nothing) before ntt32_stages.h"
#endif

#include <cstddef>

#include "ringfire/tfhe/ntt32.h"

namespace ringfire::tfhe {
namespace {

template <class L>
struct Twiddle {
  typename L::V w, ws, ws_odd;
};

template <class L>
RF_NTT32_TARGET inline Twiddle<L> splat_twiddle(u32 w, u32 ws) {
  return {L::splat(w), L::splat(ws), L::splat(ws)};
}

template <class L>
RF_NTT32_TARGET inline Twiddle<L> make_twiddle(typename L::V w, typename L::V ws) {
  return {w, ws, L::odd_to_even(ws)};
}

// Cooley-Tukey: x, y in [0, 4q) -> [0, 4q).
template <class L>
RF_NTT32_TARGET inline void ct(typename L::V& x, typename L::V& y, const Twiddle<L>& t, typename L::V q,
                               typename L::V two_q) {
  x = L::reduce_below(x, two_q);
  const typename L::V p = L::mul_shoup(y, t.w, t.ws, t.ws_odd, q);
  y = L::sub(L::add(x, two_q), p);
  x = L::add(x, p);
}

// Gentleman-Sande: x, y in [0, 2q) -> [0, 2q).
template <class L>
RF_NTT32_TARGET inline void gs(typename L::V& x, typename L::V& y, const Twiddle<L>& t, typename L::V q,
                               typename L::V two_q) {
  const typename L::V d = L::sub(L::add(x, two_q), y);
  x = L::reduce_below(L::add(x, y), two_q);
  y = L::mul_shoup(d, t.w, t.ws, t.ws_odd, q);
}

// The forward stages from t = N/2 down to t = width: two at a time (radix 4:
// one load and store of four vectors for two butterflies each) while both
// have t >= width, the odd one left alone. Returns m, the group count of the
// next stage (t = width / 2).
template <class L>
RF_NTT32_TARGET inline std::size_t forward_wide_stages(u32* a, std::size_t n, const u32* w, const u32* ws,
                                                       typename L::V q, typename L::V two_q) {
  using V = typename L::V;
  constexpr std::size_t W = L::width;
  std::size_t t = n / 2, m = 1;
  for (; t >= 2 * W; m *= 4, t /= 4) {
    const std::size_t h = t / 2;
    for (std::size_t i = 0; i < m; ++i) {
      const Twiddle<L> wa = splat_twiddle<L>(w[m + i], ws[m + i]);
      const Twiddle<L> wb0 = splat_twiddle<L>(w[2 * m + 2 * i], ws[2 * m + 2 * i]);
      const Twiddle<L> wb1 = splat_twiddle<L>(w[2 * m + 2 * i + 1], ws[2 * m + 2 * i + 1]);
      u32* x = a + 2 * i * t;
      for (std::size_t j = 0; j < h; j += W) {
        V x0 = L::load(x + j), x1 = L::load(x + h + j), x2 = L::load(x + t + j), x3 = L::load(x + t + h + j);
        ct<L>(x0, x2, wa, q, two_q);
        ct<L>(x1, x3, wa, q, two_q);
        ct<L>(x0, x1, wb0, q, two_q);
        ct<L>(x2, x3, wb1, q, two_q);
        L::store(x + j, x0), L::store(x + h + j, x1), L::store(x + t + j, x2), L::store(x + t + h + j, x3);
      }
    }
  }
  if (t == W) {
    for (std::size_t i = 0; i < m; ++i) {
      const Twiddle<L> tw = splat_twiddle<L>(w[m + i], ws[m + i]);
      u32* x = a + 2 * i * t;
      V vx = L::load(x), vy = L::load(x + W);
      ct<L>(vx, vy, tw, q, two_q);
      L::store(x, vx), L::store(x + W, vy);
    }
    m *= 2;
  }
  return m;
}

// The inverse stages from group size t = width (m = N / (2 width) groups) up
// to t = N/4: two at a time (radix 4), the odd one alone. The last stage
// (t = N/2) is inverse_last_stage's.
template <class L>
RF_NTT32_TARGET inline void inverse_wide_stages(u32* a, std::size_t n, const u32* w, const u32* ws,
                                                typename L::V q, typename L::V two_q) {
  using V = typename L::V;
  constexpr std::size_t W = L::width;
  std::size_t t = W, m = n / (2 * W);
  for (; m >= 4; m /= 4, t *= 4) {
    for (std::size_t g = 0; g < m / 2; ++g) {
      const Twiddle<L> wa0 = splat_twiddle<L>(w[m + 2 * g], ws[m + 2 * g]);
      const Twiddle<L> wa1 = splat_twiddle<L>(w[m + 2 * g + 1], ws[m + 2 * g + 1]);
      const Twiddle<L> wb = splat_twiddle<L>(w[m / 2 + g], ws[m / 2 + g]);
      u32* x = a + 4 * g * t;
      for (std::size_t j = 0; j < t; j += W) {
        V x0 = L::load(x + j), x1 = L::load(x + t + j), x2 = L::load(x + 2 * t + j), x3 = L::load(x + 3 * t + j);
        gs<L>(x0, x1, wa0, q, two_q);
        gs<L>(x2, x3, wa1, q, two_q);
        gs<L>(x0, x2, wb, q, two_q);
        gs<L>(x1, x3, wb, q, two_q);
        L::store(x + j, x0), L::store(x + t + j, x1), L::store(x + 2 * t + j, x2), L::store(x + 3 * t + j, x3);
      }
    }
  }
  if (m == 2) {
    for (std::size_t i = 0; i < 2; ++i) {
      const Twiddle<L> tw = splat_twiddle<L>(w[2 + i], ws[2 + i]);
      u32* x = a + 2 * i * t;
      for (std::size_t j = 0; j < t; j += W) {
        V vx = L::load(x + j), vy = L::load(x + t + j);
        gs<L>(vx, vy, tw, q, two_q);
        L::store(x + j, vx), L::store(x + t + j, vy);
      }
    }
  }
}

// The inverse's last stage (t = N/2) with 1/N folded in (scale = 1/N, last =
// psi^-br(1)/N, each with its Shoup constant), outputs reduced below q and
// written to `accumulate` (added to it) when given, else to `a`.
template <class L>
RF_NTT32_TARGET inline void inverse_last_stage(u32* a, u32* accumulate, std::size_t n, u32 n_inv, u32 n_inv_shoup,
                                               u32 last_n_inv, u32 last_n_inv_shoup, typename L::V q,
                                               typename L::V two_q) {
  using V = typename L::V;
  const Twiddle<L> scale = splat_twiddle<L>(n_inv, n_inv_shoup);
  const Twiddle<L> last = splat_twiddle<L>(last_n_inv, last_n_inv_shoup);
  u32* x = a;
  u32* y = a + n / 2;
  u32* ax = accumulate == nullptr ? x : accumulate;
  u32* ay = ax + n / 2;
  for (std::size_t j = 0; j < n / 2; j += L::width) {
    const V vx = L::load(x + j), vy = L::load(y + j);
    const V s = L::add(vx, vy);
    const V d = L::sub(L::add(vx, two_q), vy);
    V rx = L::reduce_below(L::mul_shoup(s, scale.w, scale.ws, scale.ws_odd, q), q);
    V ry = L::reduce_below(L::mul_shoup(d, last.w, last.ws, last.ws_odd, q), q);
    if (accumulate != nullptr) {
      rx = L::reduce_below(L::add(rx, L::load(ax + j)), q);
      ry = L::reduce_below(L::add(ry, L::load(ay + j)), q);
    }
    L::store(ax + j, rx);
    L::store(ay + j, ry);
  }
}

}  // namespace
}  // namespace ringfire::tfhe
