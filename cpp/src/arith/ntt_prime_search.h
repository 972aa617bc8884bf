// The search for NTT-friendly primes, shared by the word-size and the 128-bit
// versions (primes.cpp, modulus128.cpp): walk down from the largest
// `bits`-bit value that is 1 mod 2N, in steps of 2N, keeping the primes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ringfire/base/errors.h"

namespace ringfire::detail {

inline bool is_power_of_two(std::size_t n) { return n != 0 && (n & (n - 1)) == 0; }

// `count` primes q = 1 (mod 2 poly_degree) of exactly `bits` bits, largest
// first; Word is u64 or u128, is_prime the primality test for it.
template <class Word, class IsPrime>
std::vector<Word> find_ntt_primes(int bits, int max_bits, std::size_t count, std::size_t poly_degree,
                                  IsPrime is_prime, const char* op) {
  require(bits >= 2 && bits <= max_bits, op,
          "bits must be in [2, " + std::to_string(max_bits) + "], got " + std::to_string(bits));
  require(is_power_of_two(poly_degree), op, "poly_degree must be a power of two, got " + std::to_string(poly_degree));
  const Word step = 2 * static_cast<Word>(poly_degree);
  const Word low = Word{1} << (bits - 1);
  const Word high = bits == static_cast<int>(8 * sizeof(Word)) ? ~Word{0} : (Word{1} << bits) - 1;
  std::vector<Word> primes;
  if (step <= high) {
    for (Word candidate = (high - 1) / step * step + 1; candidate >= low && primes.size() < count;
         candidate -= step) {
      if (is_prime(candidate)) primes.push_back(candidate);
      if (candidate < step) break;
    }
  }
  require(primes.size() == count, op,
          "only " + std::to_string(primes.size()) + " primes of " + std::to_string(bits) +
              " bits are 1 mod 2N for N=" + std::to_string(poly_degree) + "; asked for " + std::to_string(count));
  return primes;
}

}  // namespace ringfire::detail
