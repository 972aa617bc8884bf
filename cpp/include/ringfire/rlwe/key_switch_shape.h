// The shape of hybrid key switching: how many special primes P and how many
// digits (dnum) the ciphertext primes are cut into. More special primes mean
// wider digits, so fewer of them: fewer NTTs and base conversions in ModUp,
// a shorter inner product and smaller keys, at the price of log2(P) bits of
// the security budget. Within that budget the fastest shape is chosen from a
// cost model of one key switch (counts of NTT butterflies, base-conversion
// products, inner-product terms and element-wise passes, weighted by times
// measured on an AVX2 CPU, averaged over the levels), so a user who gives
// only the size of the special primes gets the fast shape, not SEAL's
// one-prime convention.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ringfire {

struct KeySwitchShape {
  std::size_t special_count = 1;
  std::size_t dnum = 1;
  double cost = 0.0;              // model time of one key switch, averaged over levels (ns)
  double one_prime_cost = 0.0;    // the same with one special prime (SEAL's convention)
  std::string reason;             // why this shape: the bound, or no faster shape
};

// The fewest digits whose widest one (alpha = ceil(count / dnum) consecutive
// primes) has at most p_bits + 1 bits: what Parameters takes for dnum = 0.
// q_bits: log2 of each ciphertext prime (or its nominal size).
std::size_t fewest_digits(const std::vector<double>& q_bits, double p_bits);

// Model time (ns) of one key switch at N = n with the given ciphertext
// primes, special primes and digits, averaged over the levels 0..L (or at
// the top level only: BFV keeps its ciphertexts there).
double key_switch_cost(std::size_t n, const std::vector<int>& q_bits, std::size_t special_count, std::size_t dnum,
                       bool top_level_only = false);

// The fastest shape with special primes of `special_bits` bits whose total
// log2(QP) stays within `max_log_qp` (infinity: no bound). Shapes within 3%
// of the fastest count as ties, won by the fewest digits (smaller keys).
KeySwitchShape choose_key_switch_shape(std::size_t n, const std::vector<int>& q_bits, int special_bits,
                                       double max_log_qp, bool top_level_only = false);

}  // namespace ringfire
