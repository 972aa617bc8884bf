// parallel_for over independent work items (limbs, polynomials) with the
// library's thread count; serial when OpenMP is absent or work is small.
#pragma once

#include <cstddef>

#include "ringfire/base/parallel.h"

namespace ringfire::cpu {

// Runs body(i) for i in [0, count). `cost` is the work per item in
// butterfly-sized units; below ~2^14 units in total threads do not pay off.
template <class Body>
void parallel_for(std::size_t count, std::size_t cost, Body&& body) {
  const int threads = num_threads();
#if defined(_OPENMP)
  if (threads > 1 && count > 1 && count * cost >= (std::size_t{1} << 14)) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(count); ++i) body(static_cast<std::size_t>(i));
    return;
  }
#endif
  (void)threads;
  for (std::size_t i = 0; i < count; ++i) body(i);
}

}  // namespace ringfire::cpu
