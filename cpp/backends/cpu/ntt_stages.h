// What the AVX2 (ntt_kernels.cpp) and AVX-512 (ntt_kernels_avx512.cpp) NTT
// kernels share: the cache block their depth-first passes run in and where a
// stage's twiddles start for a span of the polynomial.
#pragma once

#include "ringfire/ring/ntt_tables.h"

namespace ringfire::cpu::ntt_stages {

// Elements per cache block (16 KiB of data): passes whose span fits in a
// block run depth-first inside it.
inline constexpr std::size_t kBlock = 2048;

// Twiddles of one stage, starting at the first group a pass touches.
struct StageTwiddles {
  const u64* w;
  const u64* ws;
};

// Twiddles of forward stage m (distance k) for the span starting at element `offset`.
inline StageTwiddles forward_twiddles(const NttTables& t, std::size_t m, std::size_t k, std::size_t offset) {
  const std::size_t first = m + offset / (2 * k);
  return {t.forward() + first, t.forward_shoup() + first};
}

// The same for inverse stage m.
inline StageTwiddles inverse_twiddles(const NttTables& t, std::size_t m, std::size_t k, std::size_t offset) {
  const std::size_t first = m + offset / (2 * k);
  return {t.inverse() + first, t.inverse_shoup() + first};
}

}  // namespace ringfire::cpu::ntt_stages
