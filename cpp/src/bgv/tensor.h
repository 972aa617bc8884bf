// The tensor product of two size-2 ciphertexts' polynomials, shared by the
// BGV and the scale-invariant (BFV) products.
#pragma once

#include "ringfire/ring/backend.h"

namespace ringfire::bgv {

// out = (a0 b0, a0 b1 + a1 b0, a1 b1), three polynomials over `base` back to
// back (evaluation form). `square`: b is a (one product fewer).
void tensor_polys(Backend& be, const u64* a0, const u64* a1, const u64* b0, const u64* b1, u64* out, bool square,
                  const RnsBase& base);

}  // namespace ringfire::bgv
