// Bindings of the bgv layer (BGV and BFV): the context with its batch
// encoder, plaintext encoding, decryption with the noise budget, and the
// explicit evaluator. Heavy calls release the GIL.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "common.h"
#include "ringfire/bgv/decryptor.h"
#include "ringfire/bgv/evaluator.h"
#include "ringfire/bgv/noise.h"
#include "ringfire/bgv/plaintext.h"
#include "ringfire/rlwe/noise.h"

namespace ringfire::python {

namespace {

using bgv::ContextPtr;

std::vector<u64> to_vector(ConstU64Array values, std::size_t expected, const char* op) {
  require(values.ndim() == 1 && values.shape(0) == expected, op,
          "expected a 1-D array of " + std::to_string(expected) + " values");
  return std::vector<u64>(values.data(), values.data() + values.shape(0));
}

U64Array to_numpy(const std::vector<u64>& values) {
  U64Array out = new_array({values.size()});
  std::memcpy(out.data(), values.data(), values.size() * sizeof(u64));
  return out;
}

}  // namespace

void bind_bgv(nb::module_& m) {
  using Release = nb::call_guard<nb::gil_scoped_release>;

  nb::class_<bgv::Context>(m, "BgvContext")
      .def(nb::new_([](const Parameters& params) { return std::make_shared<const bgv::Context>(params); }),
           nb::arg("params"))
      .def_prop_ro("params", &bgv::Context::params, nb::rv_policy::reference_internal)
      .def_prop_ro("rlwe", &bgv::Context::rlwe)
      .def_prop_ro("max_level", &bgv::Context::max_level)
      .def_prop_ro("fingerprint", &bgv::Context::fingerprint)
      .def_prop_ro("plain_modulus", [](const bgv::Context& c) { return c.plain_modulus().value(); })
      .def_prop_ro("can_batch", &bgv::Context::can_batch)
      .def("batch_encode",
           [](const bgv::Context& c, ConstU64Array slots) {
             std::vector<u64> v = to_vector(slots, c.n(), "bgv.encode");
             std::vector<u64> out;
             {
               nb::gil_scoped_release release;
               out = c.batch_encoder().encode(v);
             }
             return to_numpy(out);
           },
           nb::arg("slots"))
      .def("batch_decode",
           [](const bgv::Context& c, ConstU64Array coefficients) {
             std::vector<u64> v = to_vector(coefficients, c.n(), "bgv.decode");
             std::vector<u64> out;
             {
               nb::gil_scoped_release release;
               out = c.batch_encoder().decode(v);
             }
             return to_numpy(out);
           },
           nb::arg("coefficients"))
      .def("encode",
           [](const bgv::Context& c, ConstU64Array coefficients, std::size_t level, u64 correction) {
             std::vector<u64> v = to_vector(coefficients, c.n(), "bgv.encode");
             nb::gil_scoped_release release;
             return bgv::encode_plaintext(c, v, level, correction);
           },
           nb::arg("coefficients"), nb::arg("level"), nb::arg("correction") = 1)
      .def("decode", [](const bgv::Context& c, const Plaintext& p) { return to_numpy(bgv::decode_plaintext(c, p)); },
           nb::arg("plaintext"))
      .def("decrypt",
           [](const bgv::Context& c, const Ciphertext& ct, const SecretKey& sk) {
             bgv::Decryption d;
             {
               nb::gil_scoped_release release;
               d = bgv::decrypt(c, sk, ct);
             }
             return nb::make_tuple(to_numpy(d.coefficients), d.noise_budget_bits);
           },
           nb::arg("ciphertext"), nb::arg("secret_key"))
      .def("noise_budget", [](const bgv::Context& c, const Ciphertext& ct, const SecretKey& sk) {
        nb::gil_scoped_release release;
        return bgv::noise_budget(c, sk, ct);
      }, nb::arg("ciphertext"), nb::arg("secret_key"))
      // The evaluator's noise estimates, for planning (bgv/noise.h).
      .def("product_noise_bits",
           [](const bgv::Context& c, double a, double b, bool scale_invariant) {
             return scale_invariant ? bgv::noise_estimate::scale_invariant_product(c, a, b)
                                    : bgv::noise_estimate::product(c, a, b);
           },
           nb::arg("a"), nb::arg("b"), nb::arg("scale_invariant"))
      .def("mod_reduce_noise_bits", &bgv::noise_estimate::mod_reduce, nb::arg("a"), nb::arg("level"))
      .def("budget_bits", &bgv::noise_estimate::budget_bits, nb::arg("noise_bits"), nb::arg("level"))
      .def("fresh_noise_bits",
           [](const bgv::Context& c) {
             return noise::add(noise::fresh_public(*c.rlwe()), noise::encoding(*c.rlwe()));
           })
      .def("rounding_noise_bits", [](const bgv::Context& c) { return noise::rounding(*c.rlwe()); })
      .def("key_switch_noise_bits", [](const bgv::Context& c, std::size_t level) {
        return noise::key_switch(*c.rlwe(), level);
      }, nb::arg("level"));

  nb::class_<bgv::Evaluator, RlweEvaluator>(m, "BgvEvaluator")
      .def(nb::init<ContextPtr>(), nb::arg("context"))
      .def("add", &bgv::Evaluator::add, Release())
      .def("add_inplace", &bgv::Evaluator::add_inplace, Release())
      .def("sub", &bgv::Evaluator::sub, Release())
      .def("sub_inplace", &bgv::Evaluator::sub_inplace, Release())
      .def("negate", &bgv::Evaluator::negate, Release())
      .def("negate_inplace", &bgv::Evaluator::negate_inplace, Release())
      .def("add_plain", &bgv::Evaluator::add_plain, Release())
      .def("add_plain_inplace", &bgv::Evaluator::add_plain_inplace, Release())
      .def("sub_plain", &bgv::Evaluator::sub_plain, Release())
      .def("sub_plain_inplace", &bgv::Evaluator::sub_plain_inplace, Release())
      .def("add_integer", &bgv::Evaluator::add_integer, nb::arg("a"), nb::arg("value"), Release())
      .def("add_integer_inplace", &bgv::Evaluator::add_integer_inplace, nb::arg("a"), nb::arg("value"), Release())
      .def("multiply", &bgv::Evaluator::multiply, Release())
      .def("square", &bgv::Evaluator::square, Release())
      .def("multiply_scale_invariant", &bgv::Evaluator::multiply_scale_invariant, Release())
      .def("square_scale_invariant", &bgv::Evaluator::square_scale_invariant, Release())
      .def("multiply_plain", &bgv::Evaluator::multiply_plain, Release())
      .def("multiply_plain_inplace", &bgv::Evaluator::multiply_plain_inplace, Release())
      .def("multiply_integer", &bgv::Evaluator::multiply_integer, nb::arg("a"), nb::arg("value"), Release())
      .def("multiply_integer_inplace", &bgv::Evaluator::multiply_integer_inplace, nb::arg("a"), nb::arg("value"),
           Release())
      .def("linear_combination", &bgv::Evaluator::linear_combination, nb::arg("inputs"), nb::arg("weights"),
           Release())
      .def("multiply_plain_sum", &bgv::Evaluator::multiply_plain_sum, nb::arg("inputs"), nb::arg("plains"),
           Release())
      .def("mod_reduce", &bgv::Evaluator::mod_reduce, Release())
      .def("mod_reduce_inplace", &bgv::Evaluator::mod_reduce_inplace, Release())
      .def("mod_reduce_to", &bgv::Evaluator::mod_reduce_to, nb::arg("a"), nb::arg("level"), Release())
      .def("match_corrections",
           [](const bgv::Evaluator& ev, const Ciphertext& a, const Ciphertext& b) {
             std::pair<Ciphertext, Ciphertext> out = [&] {
               nb::gil_scoped_release release;
               return ev.match_corrections(a, b);
             }();
             return nb::make_tuple(std::move(out.first), std::move(out.second));
           },
           nb::arg("a"), nb::arg("b"))
      .def("with_correction", &bgv::Evaluator::with_correction, nb::arg("a"), nb::arg("correction"), Release())
      .def("swap_rows", &bgv::Evaluator::swap_rows, Release());
}

}  // namespace ringfire::python
