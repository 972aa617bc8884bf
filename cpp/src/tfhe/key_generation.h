// What both blind-rotation keys (bootstrapper.cpp's GINX key, automorphism_key.cpp's
// LMKCDEY key) are generated from: the gadget's factors and the ring secret mod Q.
#pragma once

#include <cstdint>
#include <vector>

#include "ringfire/tfhe/params.h"

namespace ringfire::tfhe {

// The gadget factors 2^(skip + j log Bg) mod Q, j < d_g.
inline std::vector<std::uint32_t> gadget_factors(const Params& p) {
  std::vector<std::uint32_t> g(p.gadget_digits);
  for (unsigned j = 0; j < p.gadget_digits; ++j)
    g[j] = static_cast<std::uint32_t>((std::uint64_t{1} << (p.gadget_skip_bits + j * p.gadget_base_log)) %
                                      p.ring_modulus);
  return g;
}

// A ternary polynomial's coefficients mod Q.
inline std::vector<std::uint32_t> ternary_mod(const std::vector<std::int8_t>& v, std::uint32_t Q) {
  std::vector<std::uint32_t> out(v.size());
  for (std::size_t c = 0; c < v.size(); ++c) out[c] = v[c] < 0 ? Q - 1 : static_cast<std::uint32_t>(v[c]);
  return out;
}

}  // namespace ringfire::tfhe
