// Twiddle tables for the negacyclic NTT over Z_q[X]/(X^N + 1).
//
// Forward: merged Cooley-Tukey (seed 002 Alg. 5), normal -> bit-reversed order,
//   twiddles Psi_br[i] = psi^br(i) read as Psi_br[m + i] at stage m.
// Inverse: merged Gentleman-Sande (Alg. 6), bit-reversed -> normal order,
//   twiddles psi^-br(i); the 1/N scaling is folded into the last stage.
// Every twiddle carries its Shoup constant (Harvey butterflies).
#pragma once

#include <cstddef>
#include <vector>

#include "ringfire/arith/modulus.h"
#include "ringfire/arith/reduction.h"

namespace ringfire {

class NttTables {
 public:
  // Raises InvalidArgument unless N is a power of two in [4, 2^17] and q is
  // an NTT-friendly prime for N. psi defaults to the minimal primitive root.
  NttTables(std::size_t poly_degree, const Modulus& modulus);

  std::size_t n() const { return n_; }
  int log_n() const { return log_n_; }
  const Modulus& modulus() const { return modulus_; }
  u64 psi() const { return psi_; }

  // psi^br(i), i in [0, N) and Shoup constants.
  const u64* forward() const { return forward_.data(); }
  const u64* forward_shoup() const { return forward_shoup_.data(); }
  // psi^-br(i) ... used as Alg. 6's Psi^-1_br[m + i].
  const u64* inverse() const { return inverse_.data(); }
  const u64* inverse_shoup() const { return inverse_shoup_.data(); }

  // Final-stage constants with the 1/N scale folded in: the sum output is
  // multiplied by n_inv, the difference output by psi^-br(1) * n_inv.
  ShoupOperand n_inv() const { return n_inv_; }
  ShoupOperand last_twiddle_n_inv() const { return last_n_inv_; }
  // The same for the Karatsuba-fused product (seed 002 Alg. 8), whose inverse
  // transform skips one stage and so scales by (N/2)^-1.
  ShoupOperand half_n_inv() const { return half_n_inv_; }
  ShoupOperand last_twiddle_half_n_inv() const { return last_half_n_inv_; }
  // Squares of the last forward stage's twiddles, for seed 002 Alg. 7:
  // square_last[i] = (psi^br(N/2 + i))^2, i in [0, N/2).
  const u64* last_stage_squares() const { return last_squares_.data(); }
  const u64* last_stage_squares_shoup() const { return last_squares_shoup_.data(); }

 private:
  std::size_t n_;
  int log_n_;
  Modulus modulus_;
  u64 psi_;
  std::vector<u64> forward_, forward_shoup_, inverse_, inverse_shoup_;
  std::vector<u64> last_squares_, last_squares_shoup_;
  ShoupOperand n_inv_, last_n_inv_, half_n_inv_, last_half_n_inv_;
};

// Bit reversal of the low `bits` bits of x.
inline std::size_t reverse_bits(std::size_t x, int bits) {
  std::size_t r = 0;
  for (int i = 0; i < bits; ++i) {
    r = (r << 1) | (x & 1);
    x >>= 1;
  }
  return r;
}

}  // namespace ringfire
