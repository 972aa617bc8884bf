// parallel_for over independent work items (limbs, polynomials) with the
// library's thread count; serial when the work is small.
#pragma once

#include <cstddef>

#include "ringfire/base/parallel.h"

namespace ringfire::cpu {

// Runs body(i) for i in [0, count), in num_threads() static blocks. `cost`
// is the work per item in butterfly-sized units; below ~2^14 units in total
// threads do not pay off.
template <class Body>
void parallel_for(std::size_t count, std::size_t cost, Body&& body) {
  const int threads = num_threads();
  if (threads > 1 && count > 1 && count * cost >= (std::size_t{1} << 14)) {
    auto ranges = [&body](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) body(i);
    };
    parallel_ranges(count, static_cast<std::size_t>(threads), ranges);
    return;
  }
  for (std::size_t i = 0; i < count; ++i) body(i);
}

}  // namespace ringfire::cpu
