// Scalar arithmetic modulo a word below 2^31, for the tfhe layer's table
// building, key generation and scalar reference (the vector kernels use
// Shoup and Montgomery forms): the arith layer's add, subtract and negate,
// narrowed to 32-bit words, and a product by its 64-bit remainder.
#pragma once

#include <cstdint>

#include "ringfire/arith/modular.h"

namespace ringfire::tfhe {

inline std::uint32_t add_mod(std::uint32_t a, std::uint32_t b, std::uint32_t q) {
  return static_cast<std::uint32_t>(ringfire::add_mod(a, b, q));
}
inline std::uint32_t sub_mod(std::uint32_t a, std::uint32_t b, std::uint32_t q) {
  return static_cast<std::uint32_t>(ringfire::sub_mod(a, b, q));
}
inline std::uint32_t neg_mod(std::uint32_t a, std::uint32_t q) {
  return static_cast<std::uint32_t>(ringfire::neg_mod(a, q));
}
inline std::uint32_t mul_mod(std::uint32_t a, std::uint32_t b, std::uint32_t q) {
  return static_cast<std::uint32_t>(static_cast<std::uint64_t>(a) * b % q);
}

}  // namespace ringfire::tfhe
