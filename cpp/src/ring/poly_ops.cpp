#include "ringfire/ring/poly_ops.h"

#include <string>

#include "ringfire/base/errors.h"

namespace ringfire {

namespace {

const char* form_name(Form f) { return f == Form::coeff ? "coeff" : "eval"; }

void check_same(const char* op, const Poly& a, const Poly& b) {
  require(a.base_ptr() == b.base_ptr() || (a.base().n() == b.base().n() && a.base().moduli() == b.base().moduli()),
          op, "operands use different RNS bases");
  require(a.device() == b.device(), op, [&] { return different_devices(a.device(), b.device()); });
}

void check_form(const char* op, const Poly& p, Form expected) {
  require(p.form() == expected, op,
          std::string("expected ") + form_name(expected) + " form, got " + form_name(p.form()));
}

Backend& backend(const Poly& p) { return backend_for(p.device()); }

}  // namespace

void ntt_inplace(Poly& p) {
  check_form("ring.ntt", p, Form::coeff);
  backend(p).ntt_forward(p.data(), 1, p.base());
  p.set_form(Form::eval);
}

void intt_inplace(Poly& p) {
  check_form("ring.intt", p, Form::eval);
  backend(p).ntt_inverse(p.data(), 1, p.base());
  p.set_form(Form::coeff);
}

void add(const Poly& a, const Poly& b, Poly& out) {
  check_same("ring.add", a, b);
  check_same("ring.add", a, out);
  require(a.form() == b.form(), "ring.add", "operands are in different forms");
  backend(a).add(a.data(), b.data(), out.data(), 1, a.base());
  out.set_form(a.form());
}

void sub(const Poly& a, const Poly& b, Poly& out) {
  check_same("ring.sub", a, b);
  check_same("ring.sub", a, out);
  require(a.form() == b.form(), "ring.sub", "operands are in different forms");
  backend(a).sub(a.data(), b.data(), out.data(), 1, a.base());
  out.set_form(a.form());
}

void negate(const Poly& a, Poly& out) {
  check_same("ring.negate", a, out);
  backend(a).negate(a.data(), out.data(), 1, a.base());
  out.set_form(a.form());
}

void multiply(const Poly& a, const Poly& b, Poly& out) {
  check_same("ring.multiply", a, b);
  check_same("ring.multiply", a, out);
  check_form("ring.multiply", a, Form::eval);
  check_form("ring.multiply", b, Form::eval);
  backend(a).multiply(a.data(), b.data(), out.data(), 1, a.base());
  out.set_form(Form::eval);
}

void multiply_add(const Poly& a, const Poly& b, Poly& acc) {
  check_same("ring.multiply_add", a, b);
  check_same("ring.multiply_add", a, acc);
  check_form("ring.multiply_add", a, Form::eval);
  check_form("ring.multiply_add", b, Form::eval);
  check_form("ring.multiply_add", acc, Form::eval);
  backend(a).multiply_add(a.data(), b.data(), acc.data(), 1, a.base());
}

void poly_multiply(const Poly& a, const Poly& b, Poly& out, PolyMulMethod method) {
  check_same("ring.poly_multiply", a, b);
  check_same("ring.poly_multiply", a, out);
  check_form("ring.poly_multiply", a, Form::coeff);
  check_form("ring.poly_multiply", b, Form::coeff);
  backend(a).poly_multiply(a.data(), b.data(), out.data(), 1, a.base(), method);
  out.set_form(Form::coeff);
}

void base_convert(const Poly& a, const BaseConverter& conv, Poly& out, BaseConversion kind) {
  constexpr const char* op = "ring.base_convert";
  require(a.base().moduli() == conv.from().moduli() && a.n() == conv.from().n(), op,
          "input is not over the converter's source base");
  require(out.base().moduli() == conv.to().moduli() && out.n() == conv.to().n(), op,
          "output is not over the converter's target base");
  require(a.device() == out.device(), op, [&] { return different_devices(a.device(), out.device()); });
  check_form(op, a, Form::coeff);
  backend(a).base_convert(a.data(), out.data(), 1, conv, kind);
  out.set_form(Form::coeff);
}

void automorphism(const Poly& a, u64 galois_elt, Poly& out) {
  constexpr const char* op = "ring.automorphism";
  check_same(op, a, out);
  require(&a != &out, op, "output must not alias the input");
  require((galois_elt & 1) == 1 && galois_elt < 2 * a.n(), op,
          "galois element must be odd and below 2N, got " + std::to_string(galois_elt));
  backend(a).automorphism(a.data(), out.data(), 1, a.base(), galois_elt, a.form());
  out.set_form(a.form());
}

}  // namespace ringfire
