// Bindings of the arith layer: element-wise modular arithmetic over NumPy
// uint64 vectors with a selectable reduction (seed 002 §II-B), and scalars.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "common.h"
#include "ringfire/arith/modular.h"
#include "ringfire/arith/primes.h"

namespace ringfire::python {

namespace {

void check_lengths(const char* op, std::size_t a, std::size_t b, std::size_t out) {
  require(a == b && a == out, op,
          "arrays differ in length: " + std::to_string(a) + ", " + std::to_string(b) + ", " + std::to_string(out));
}

template <class Reduce>
void mul_loop(const u64* a, const u64* b, u64* out, std::size_t n, Reduce reduce) {
  for (std::size_t i = 0; i < n; ++i) out[i] = reduce(mul_wide(a[i], b[i]));
}

// out[i] = a[i] * b[i] mod q with the named reduction.
void mul_mod_array(ConstU64Array a, ConstU64Array b, U64Array out, u64 q, const std::string& method) {
  constexpr const char* op = "arith.mul_mod";
  check_lengths(op, a.size(), b.size(), out.size());
  const Modulus mod(q);
  const u64 *pa = a.data(), *pb = b.data();
  u64* po = out.data();
  const std::size_t n = a.size();
  nb::gil_scoped_release release;
  if (method == "barrett") {
    mul_loop(pa, pb, po, n, [&](u128 x) { return reduce_barrett_classic(x, mod); });
  } else if (method == "dhem") {
    require(mod.supports_dhem(), op,
            "the Dhem-Quisquater reduction (seed 002 Alg. 3) needs 4 bits of headroom: len(q) <= " +
                std::to_string(kDhemMaxBits) + " bits and q != 2^59 (floor(2^(2m+3)/q) must fit 64 bits), but q=" +
                std::to_string(q) + " has " + std::to_string(mod.bits()) + " bits");
    mul_loop(pa, pb, po, n, [&](u128 x) { return reduce_dhem(x, mod); });
  } else if (method == "alg4") {
    mul_loop(pa, pb, po, n, [&](u128 x) { return reduce_alg4(x, mod); });
  } else if (method == "shoup") {
    for (std::size_t i = 0; i < n; ++i) po[i] = mul_mod_shoup(pa[i], pb[i], shoup_precompute(pb[i], q), q);
  } else if (method == "native") {
    mul_loop(pa, pb, po, n, [&](u128 x) { return static_cast<u64>(x % q); });
  } else {
    throw_invalid(op, "unknown method '" + method + "' (expected barrett, dhem, alg4, shoup or native)");
  }
}

// out[i] = op(a[i], b[i], c[i]) for op in add, sub, neg (b unused), mad.
void elementwise(const std::string& name, ConstU64Array a, ConstU64Array b, ConstU64Array c, U64Array out, u64 q) {
  const std::string op = "arith." + name;
  check_lengths(op.c_str(), a.size(), b.size(), out.size());
  require(c.size() == a.size(), op, "arrays differ in length");
  const Modulus mod(q);
  const u64 *pa = a.data(), *pb = b.data(), *pc = c.data();
  u64* po = out.data();
  const std::size_t n = a.size();
  nb::gil_scoped_release release;
  if (name == "add_mod") {
    for (std::size_t i = 0; i < n; ++i) po[i] = add_mod(pa[i], pb[i], q);
  } else if (name == "sub_mod") {
    for (std::size_t i = 0; i < n; ++i) po[i] = sub_mod(pa[i], pb[i], q);
  } else if (name == "neg_mod") {
    for (std::size_t i = 0; i < n; ++i) po[i] = neg_mod(pa[i], q);
  } else if (name == "mad_mod") {
    for (std::size_t i = 0; i < n; ++i) po[i] = mad_mod(pa[i], pb[i], pc[i], mod);
  } else {
    throw_invalid(op, "unknown operation");
  }
}

}  // namespace

void bind_arith(nb::module_& m) {
  m.def("mul_mod", &mul_mod_array, nb::arg("a"), nb::arg("b"), nb::arg("out"), nb::arg("q"), nb::arg("method"));
  m.def("elementwise", &elementwise, nb::arg("op"), nb::arg("a"), nb::arg("b"), nb::arg("c"), nb::arg("out"),
        nb::arg("q"));
  m.def(
      "pow_mod", [](u64 a, u64 e, u64 q) { return pow_mod(a % q, e, Modulus(q)); }, nb::arg("a"), nb::arg("e"),
      nb::arg("q"));
  m.def("inv_mod", &inv_mod, nb::arg("a"), nb::arg("q"));
  m.def(
      "modulus_constants",
      [](u64 q) {
        const Modulus mod(q);
        nb::dict d;
        d["q"] = mod.value();
        d["bits"] = mod.bits();
        d["mu_classic"] = mod.mu_classic();
        d["mu_dhem"] = mod.mu_dhem();
        d["mu_alg4"] = mod.mu_alg4();
        d["supports_dhem"] = mod.supports_dhem();
        return d;
      },
      nb::arg("q"));
  m.def("shoup_precompute", &shoup_precompute, nb::arg("w"), nb::arg("q"));
  m.def("is_prime", &is_prime, nb::arg("n"));
  m.def("find_ntt_primes", &find_ntt_primes, nb::arg("bits"), nb::arg("count"), nb::arg("poly_degree"));
  m.def("minimal_primitive_root", &minimal_primitive_root, nb::arg("q"), nb::arg("poly_degree"));
  m.def("is_ntt_friendly", &is_ntt_friendly, nb::arg("q"), nb::arg("poly_degree"));
}

}  // namespace ringfire::python
