// The CUDA backend's self-test: every Backend method on random inputs on both
// the CPU backend (the oracle) and the CUDA backend, compared bit for bit.
// Plain C++ (no CUDA headers) so the Python bindings can call it in every
// build; builds without CUDA link selftest_unavailable.cpp instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ringfire::cuda {

// Runs each method (uploads inputs, runs both backends, downloads) for
// polynomials of degree n (a power of two in [16, 2^17]) over `limbs` primes
// (1..32), inputs drawn from a generator seeded with `seed`. Returns
// (method, bit_identical) pairs in a fixed order. Raises NotSupported when
// no GPU is visible or the build has no CUDA backend, InvalidArgument for
// bad sizes.
std::vector<std::pair<std::string, bool>> selftest(std::size_t n, std::size_t limbs, std::uint64_t seed);

}  // namespace ringfire::cuda
