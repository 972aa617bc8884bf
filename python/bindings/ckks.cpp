// Bindings of the ckks layer: the context (with its encoder), decryption to
// slots, and the explicit evaluator. Heavy calls release the GIL.
#include <nanobind/stl/complex.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <complex>
#include <cstring>

#include "common.h"
#include "ringfire/ckks/decryptor.h"
#include "ringfire/ckks/evaluator.h"
#include "ringfire/rlwe/evaluator.h"
#include "ringfire/rlwe/prng.h"
#include "ringfire/rlwe/encryptor.h"

namespace ringfire::python {

namespace {

using ckks::Complex;
using ComplexArray = nb::ndarray<const std::complex<double>, nb::numpy, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using OutComplexArray = nb::ndarray<std::complex<double>, nb::numpy, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

OutComplexArray to_numpy(std::vector<Complex> values) {
  auto* data = new std::complex<double>[values.size()];
  std::copy(values.begin(), values.end(), data);
  nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<std::complex<double>*>(p); });
  return OutComplexArray(data, {values.size()}, owner);
}

}  // namespace

void bind_ckks(nb::module_& m) {
  using ckks::Context;
  using ckks::ContextPtr;
  using ckks::Evaluator;
  using Release = nb::call_guard<nb::gil_scoped_release>;

  m.attr("SCALE_TOLERANCE") = ckks::kScaleTolerance;

  nb::class_<RlweContext>(m, "RlweContext")
      .def_prop_ro("fingerprint", &RlweContext::fingerprint)
      .def("galois_element", &RlweContext::galois_element, nb::arg("steps"))
      .def("conjugation_element", &RlweContext::conjugation_element)
      .def("rotation_of", &RlweContext::rotation_of, nb::arg("galois_element"),
           "The rotation step k in [0, N/2) with 5^k = g (mod 2N), or -1 (the conjugation).");

  nb::class_<Context>(m, "CkksContext")
      .def(nb::new_([](const Parameters& params) { return std::make_shared<const Context>(params); }),
           nb::arg("params"))
      .def_prop_ro("params", &Context::params, nb::rv_policy::reference_internal)
      .def_prop_ro("rlwe", &Context::rlwe)
      .def_prop_ro("slots", &Context::slots)
      .def_prop_ro("max_level", &Context::max_level)
      .def_prop_ro("fingerprint", &Context::fingerprint)
      .def_prop_ro("default_scale", &Context::default_scale)
      .def("scale_at", &Context::scale_at, nb::arg("level"))
      .def(
          "encode",
          [](const Context& c, ComplexArray values, std::size_t level, double scale) {
            const Complex* data = values.data();
            const std::size_t count = values.shape(0);
            nb::gil_scoped_release release;
            return c.encoder().encode(data, count, level, scale);
          },
          nb::arg("values"), nb::arg("level"), nb::arg("scale"))
      .def(
          "encode_scalar",
          [](const Context& c, Complex value, std::size_t level, double scale) {
            return c.encoder().encode_scalar(value, level, scale);
          },
          nb::arg("value"), nb::arg("level"), nb::arg("scale"))
      .def("decode", [](const Context& c, const Plaintext& p) { return to_numpy(c.encoder().decode(p)); })
      .def(
          "decrypt",
          [](const Context& c, const Ciphertext& ct, const SecretKey& sk, Prng& prng, const std::string& noise,
             double statistical_security, double decryptions) {
            ckks::DecryptOptions options;
            options.noise = noise == "estimate"         ? ckks::DecryptionNoise::estimate
                            : noise == "flooding"       ? ckks::DecryptionNoise::flooding
                            : noise == "insecure_exact" ? ckks::DecryptionNoise::insecure_exact
                                                        : throw InvalidArgument(tagged_message(
                                                              "ckks.decrypt", "unknown noise mode '" + noise + "'"));
            options.statistical_security = statistical_security;
            options.decryptions = decryptions;
            ckks::Decryption d;
            {
              // The flooding noise comes from a child of the context's generator (drawn under the GIL).
              Prng child = Prng::from_seed(prng.next_seed());
              nb::gil_scoped_release release;
              d = ckks::decrypt(c, ct, sk, options, child);
            }
            nb::dict info;
            info["noise_bits"] = d.noise_bits;
            info["measured"] = d.measured;
            info["added_noise_bits"] = d.added_noise_bits;
            info["precision_bits"] = d.precision_bits;
            return nb::make_tuple(to_numpy(std::move(d.slots)), info);
          },
          nb::arg("ciphertext"), nb::arg("secret_key"), nb::arg("prng"), nb::arg("noise") = "estimate",
          nb::arg("statistical_security") = 40.0, nb::arg("decryptions") = 1.0)
      .def("slots_to_coefficients", [](const Context& c, ComplexArray values) {
        require(values.shape(0) == c.slots(), "ckks.encode", "expected exactly one value per slot");
        std::vector<Complex> v(values.data(), values.data() + values.shape(0));
        return c.encoder().slots_to_coefficients(v);
      })
      .def("coefficients_to_slots", [](const Context& c, const std::vector<double>& coeffs) {
        return to_numpy(c.encoder().coefficients_to_slots(coeffs));
      });

  nb::class_<Evaluator, RlweEvaluator>(m, "Evaluator")
      .def(nb::init<ContextPtr>(), nb::arg("context"))
      .def("add", &Evaluator::add, Release())
      .def("add_inplace", &Evaluator::add_inplace, Release())
      .def("sub", &Evaluator::sub, Release())
      .def("sub_inplace", &Evaluator::sub_inplace, Release())
      .def("negate", &Evaluator::negate, Release())
      .def("negate_inplace", &Evaluator::negate_inplace, Release())
      .def("add_plain", &Evaluator::add_plain, Release())
      .def("add_plain_inplace", &Evaluator::add_plain_inplace, Release())
      .def("sub_plain", &Evaluator::sub_plain, Release())
      .def("sub_plain_inplace", &Evaluator::sub_plain_inplace, Release())
      .def("add_scalar", &Evaluator::add_scalar, Release())
      .def("add_scalar_inplace", &Evaluator::add_scalar_inplace, Release())
      .def("multiply", &Evaluator::multiply, Release())
      .def("square", &Evaluator::square, Release())
      .def("multiply_plain", &Evaluator::multiply_plain, Release())
      .def("multiply_plain_inplace", &Evaluator::multiply_plain_inplace, Release())
      .def("multiply_scalar", &Evaluator::multiply_scalar, Release())
      .def("multiply_scalar_inplace", &Evaluator::multiply_scalar_inplace, Release())
      .def("multiply_integer", &Evaluator::multiply_integer, Release())
      .def("multiply_integer_inplace", &Evaluator::multiply_integer_inplace, Release())
      .def("linear_combination", &Evaluator::linear_combination, nb::arg("inputs"), nb::arg("weights"),
           nb::arg("scale"), Release())
      .def("rescale", &Evaluator::rescale, Release())
      .def("rescale_inplace", &Evaluator::rescale_inplace, Release())
      .def("adjust_to", &Evaluator::adjust_to, Release())
      .def("conjugate", &Evaluator::conjugate, Release());
}

}  // namespace ringfire::python
