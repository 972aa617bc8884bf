// Hybrid key switching (Han-Ki; the "dnum" variant of SEAL/OpenFHE):
//   1. ModUp: split c (over q_0..q_level) into digits, extend each digit's
//      residues to the other primes and P with a fast base conversion;
//   2. inner product of the extended digits with the key's (b_j, a_j);
//   3. ModDown: divide the two sums by P (base-convert their P part to Q,
//      subtract, multiply by P^-1).
// The result (out0, out1) satisfies out0 + out1 * s = c * s' + small error.
#pragma once

#include "ringfire/rlwe/keys.h"

namespace ringfire {

// c: one polynomial over q_0..q_level in evaluation form. out0/out1 receive
// polynomials over the same base in evaluation form (overwritten).
void key_switch(const RlweContext& context, const u64* c, std::size_t level, const KeySwitchKey& key, u64* out0,
                u64* out1);

}  // namespace ringfire
