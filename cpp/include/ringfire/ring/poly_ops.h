// Checked polynomial operations. Each verifies that operands share a base
// and a device and are in the form the operation needs, raises
// InvalidArgument naming the operation otherwise, then runs the operands'
// device backend.
#pragma once

#include "ringfire/ring/base_converter.h"
#include "ringfire/ring/poly.h"

namespace ringfire {

// Coefficient -> evaluation form (and back), in place.
void ntt_inplace(Poly& p);
void intt_inplace(Poly& p);

// out = a + b, a - b, a * b (element-wise; the product needs eval form).
void add(const Poly& a, const Poly& b, Poly& out);
void sub(const Poly& a, const Poly& b, Poly& out);
void negate(const Poly& a, Poly& out);
void multiply(const Poly& a, const Poly& b, Poly& out);
void multiply_add(const Poly& a, const Poly& b, Poly& acc);

// Negacyclic product of two coefficient-form polynomials.
void poly_multiply(const Poly& a, const Poly& b, Poly& out, PolyMulMethod method = PolyMulMethod::ntt);

// out (over conv.to()) = a (over conv.from()) converted; coefficient form.
void base_convert(const Poly& a, const BaseConverter& conv, Poly& out, BaseConversion kind);

// out = a(X^galois_elt), galois_elt odd in [1, 2N); either form.
void automorphism(const Poly& a, u64 galois_elt, Poly& out);

}  // namespace ringfire
