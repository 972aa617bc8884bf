// BGV/BFV decryption and the noise budget.
//
// Decryption computes x = c(s) over Q_l, then z = [t x]_{Q_l} (centred), which
// is [m sigma]_t + t e; the message is z mod t times sigma^-1. That is right
// exactly while |z| < Q_l / 2. The noise budget is how far z is from that
// bound: log2(Q_l / 2) - log2(max |z|) bits (SEAL's invariant noise budget
// for BFV, the same quantity for BGV). Every product and key switch spends
// some of it; at 0 decryption fails.
//
// Unlike CKKS, the result reveals nothing about the secret key: it is the
// exact message, and the noise is discarded. A decryption whose budget is
// gone is detected rather than returned: when max |z| / Q_l exceeds 1/4
// (less than one bit left) the noise has overflowed or is about to, and the
// coefficients are no longer trustworthy; decrypt raises then.
#pragma once

#include <vector>

#include "ringfire/bgv/context.h"
#include "ringfire/rlwe/keys.h"

namespace ringfire::bgv {

struct Decryption {
  std::vector<u64> coefficients;  // m mod t, N of them
  // The noise budget in bits from max |z| / Q_l in double precision: exact to
  // a fraction of a bit below about 45 bits; above, a lower bound (49 bits at
  // most; noise_budget gives the exact value).
  double noise_budget_bits = 0.0;
};

// Raises InvalidArgument when the noise budget is below one bit (the result
// would be wrong), naming the budget.
Decryption decrypt(const Context& ctx, const SecretKey& key, const Ciphertext& cipher);

// The exact noise budget in bits (multiword arithmetic over the CRT): 0 or
// below means decryption is wrong.
double noise_budget(const Context& ctx, const SecretKey& key, const Ciphertext& cipher);

}  // namespace ringfire::bgv
