// Batch encoding (SIMD slots) for BGV and BFV: N integers mod t <-> one
// plaintext polynomial mod t.
//
// With t prime and t = 1 (mod 2N), X^N + 1 splits into N linear factors mod
// t, one per primitive 2N-th root zeta^(2k+1), and the CRT makes the
// plaintext ring a product of N copies of Z_t. The slots follow SEAL's layout
// (a 2 x N/2 matrix): slot i of row 0 is m(zeta^(5^i)), slot i of row 1 is
// m(zeta^(-5^i)). So the Galois map X -> X^(5^k) rotates both rows left by k
// and X -> X^(2N-1) swaps the rows (rlwe/context.h names the elements).
// Encoding is one inverse NTT mod t, decoding one forward NTT.
#pragma once

#include <cstddef>
#include <vector>

#include "ringfire/arith/modulus.h"
#include "ringfire/ring/rns_base.h"

namespace ringfire::bgv {

class BatchEncoder {
 public:
  // Raises InvalidArgument unless t is a prime with t = 1 (mod 2N).
  BatchEncoder(std::size_t poly_degree, const Modulus& t);

  std::size_t slots() const { return base_->n(); }

  // N slot values in [0, t) (row 0 then row 1) -> N coefficients in [0, t).
  std::vector<u64> encode(const std::vector<u64>& slots) const;
  // The inverse: N coefficients in [0, t) -> N slot values in [0, t).
  std::vector<u64> decode(const std::vector<u64>& coefficients) const;

 private:
  RnsBasePtr base_;  // the one prime t, with its NTT tables
  std::vector<std::size_t> slot_position_;  // slot -> index in the NTT's (bit-reversed) output
};

}  // namespace ringfire::bgv
