// Primality and NTT-friendly primes: p = 1 (mod 2N) so Z_p holds a primitive
// 2N-th root of unity and X^N + 1 splits into linear factors.
#pragma once

#include <cstddef>
#include <vector>

#include "ringfire/arith/wide.h"

namespace ringfire {

// Deterministic Miller-Rabin for all 64-bit inputs (bases 2..37).
bool is_prime(u64 n);

// The `count` largest distinct primes of exactly `bits` bits with
// p = 1 (mod 2 * poly_degree), in decreasing order. Deterministic.
// Raises InvalidArgument when bits is outside [2, 61], poly_degree is not a
// power of two, or fewer than `count` such primes exist.
std::vector<u64> find_ntt_primes(int bits, std::size_t count, std::size_t poly_degree);

// The smallest primitive 2N-th root of unity modulo prime q (q = 1 mod 2N).
// Deterministic; raises InvalidArgument if q is not such a prime.
u64 minimal_primitive_root(u64 q, std::size_t poly_degree);

// True when q is a prime below 2^61 with q = 1 (mod 2N).
bool is_ntt_friendly(u64 q, std::size_t poly_degree);

}  // namespace ringfire
