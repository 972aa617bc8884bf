// Bindings of the 128-bit modular arithmetic (odd moduli 3 <= q < 2^128).
// A 128-bit value crosses the boundary as two uint64 words (lo, hi) with
// value = lo + hi * 2^64; python/ringfire/arith128.py splits and joins Python
// ints. InvalidArgument (a std::invalid_argument) surfaces as ValueError.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "common.h"
#include "ringfire/arith/modulus128.h"

namespace ringfire::python {

namespace {

using Halves = std::pair<u64, u64>;  // (lo, hi)

u128 join(u64 lo, u64 hi) { return (static_cast<u128>(hi) << 64) | lo; }

Halves split(u128 v) { return {static_cast<u64>(v), static_cast<u64>(v >> 64)}; }

// One scalar operation modulo q. a (and b for add/sub/mul) must be reduced;
// for pow, b is the exponent (any 128-bit value); neg and inv ignore b.
Halves mod128_op(const std::string& name, u64 a_lo, u64 a_hi, u64 b_lo, u64 b_hi, u64 q_lo, u64 q_hi) {
  constexpr const char* op = "arith.mod128_op";
  const Modulus128 mod(join(q_lo, q_hi));  // validates q: odd, 3 <= q < 2^128
  const u128 q = mod.value(), a = join(a_lo, a_hi), b = join(b_lo, b_hi);
  require(a < q, op, "a=" + to_string(a) + " is not below q=" + to_string(q));
  const bool binary = name == "add" || name == "sub" || name == "mul";
  if (binary) require(b < q, op, "b=" + to_string(b) + " is not below q=" + to_string(q));
  if (name == "add") return split(mod.add(a, b));
  if (name == "sub") return split(mod.sub(a, b));
  if (name == "mul") return split(mod.mul(a, b));
  if (name == "neg") return split(mod.neg(a));
  if (name == "pow") return split(mod.pow(a, b));
  if (name == "inv") return split(mod.inv(a));
  throw_invalid(op, "unknown op '" + name + "' (expected add, sub, mul, neg, pow or inv)");
}

std::vector<Halves> find_primes128(int bits, std::size_t count, std::size_t poly_degree) {
  std::vector<Halves> out;
  for (u128 p : find_ntt_primes128(bits, count, poly_degree)) out.push_back(split(p));
  return out;
}

}  // namespace

void bind_arith128(nb::module_& m) {
  m.def("mod128_op", &mod128_op, nb::arg("op"), nb::arg("a_lo"), nb::arg("a_hi"), nb::arg("b_lo"),
        nb::arg("b_hi"), nb::arg("q_lo"), nb::arg("q_hi"),
        "(lo, hi) of op(a, b) mod q for op in add, sub, mul, neg, pow (b is the exponent), inv.");
  m.def("find_ntt_primes128", &find_primes128, nb::arg("bits"), nb::arg("count"), nb::arg("poly_degree"),
        "The `count` largest `bits`-bit primes = 1 mod 2N, decreasing, as (lo, hi) pairs.");
  m.def(
      "primitive_root128",
      [](u64 q_lo, u64 q_hi, std::size_t poly_degree) {
        return split(minimal_primitive_root128(join(q_lo, q_hi), poly_degree));
      },
      nb::arg("q_lo"), nb::arg("q_hi"), nb::arg("poly_degree"),
      "(lo, hi) of the smallest primitive 2N-th root of unity modulo the prime q.");
  m.def(
      "is_prime128", [](u64 lo, u64 hi) { return is_prime128(join(lo, hi)); }, nb::arg("lo"), nb::arg("hi"),
      "Primality of lo + hi * 2^64 (Miller-Rabin bases 2..41, Baillie-PSW above 2^81).");
}

}  // namespace ringfire::python
