// Bindings of the ckks layer: the context (with its encoder), decryption to
// slots, and the explicit evaluator. Heavy calls release the GIL.
#include <nanobind/stl/complex.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <complex>
#include <cstring>

#include "common.h"
#include "ringfire/base/queue.h"
#include "ringfire/ckks/bootstrap.h"
#include "ringfire/ckks/decryptor.h"
#include "ringfire/ckks/evaluator.h"
#include "ringfire/ckks/polynomial.h"
#include "ringfire/ckks/simulator.h"
#include "ringfire/io/serialize.h"
#include "ringfire/rlwe/evaluator.h"
#include "ringfire/rlwe/prng.h"
#include "ringfire/rlwe/encryptor.h"

namespace ringfire::python {

namespace {

using ckks::Complex;
using ComplexArray = nb::ndarray<const std::complex<double>, nb::numpy, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using OutComplexArray = nb::ndarray<std::complex<double>, nb::numpy, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using RealArray = nb::ndarray<const double, nb::numpy, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// A LinearTransform from NumPy diagonals (real or complex): one C++ copy of the values, moved
// into the transform, which encodes them without the GIL.
template <typename Array>
void construct_transform(ckks::LinearTransform* self, ckks::ContextPtr context, const std::map<long long, Array>& arrays,
                         std::size_t level, double scale, std::size_t baby_steps, bool chained) {
  ckks::LinearTransform::Diagonals diagonals;
  for (const auto& [index, values] : arrays)
    diagonals.emplace(index, std::vector<Complex>(values.data(), values.data() + values.size()));
  nb::gil_scoped_release release;
  new (self) ckks::LinearTransform(
      std::move(context), std::move(diagonals), level, scale, baby_steps,
      chained ? ckks::LinearTransform::Evaluation::chained : ckks::LinearTransform::Evaluation::hoisted);
}

OutComplexArray to_numpy(std::vector<Complex> values) {
  auto* data = new std::complex<double>[values.size()];
  std::copy(values.begin(), values.end(), data);
  nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<std::complex<double>*>(p); });
  return OutComplexArray(data, {values.size()}, owner);
}

}  // namespace

// Polynomials and the level/scale simulator.
void bind_ckks_circuits(nb::module_& m) {
  using ckks::Polynomial;
  using ckks::SimCiphertext;
  using ckks::Simulator;
  using ckks::ContextPtr;

  nb::class_<Polynomial>(m, "Polynomial")
      .def(
          "__init__",
          [](Polynomial* self, const std::string& basis, std::vector<double> coeffs, double a, double b) {
            require(basis == "chebyshev" || basis == "monomial", "ckks.Polynomial",
                    "basis must be 'chebyshev' or 'monomial', got '" + basis + "'");
            new (self) Polynomial(basis == "chebyshev" ? ckks::Basis::chebyshev : ckks::Basis::monomial,
                                  std::move(coeffs), a, b);
          },
          nb::arg("basis"), nb::arg("coefficients"), nb::arg("a") = -1.0, nb::arg("b") = 1.0)
      .def_prop_ro("basis", [](const Polynomial& p) { return std::string(ckks::basis_name(p.basis())); })
      .def_prop_ro("coefficients", &Polynomial::coefficients)
      .def_prop_ro("interval", [](const Polynomial& p) { return nb::make_tuple(p.a(), p.b()); })
      .def_prop_ro("degree", &Polynomial::degree)
      .def_prop_ro("depth", &Polynomial::depth)
      .def("is_odd", &Polynomial::is_odd)
      .def("is_even", &Polynomial::is_even)
      .def("__call__", [](const Polynomial& p, double x) { return p(x); }, nb::arg("x"));

  using ckks::LinearTransform;
  nb::class_<LinearTransform>(m, "LinearTransform")
      // NumPy arrays, not lists: a list holds a 32-byte Python object per value, five times a
      // real array's bytes, all at once. Real diagonals (a model's) come as they are.
      .def("__init__", &construct_transform<RealArray>, nb::arg("context"), nb::arg("diagonals"), nb::arg("level"),
           nb::arg("scale") = 0.0, nb::arg("baby_steps") = 0, nb::arg("chained") = false)
      .def("__init__", &construct_transform<ComplexArray>, nb::arg("context"), nb::arg("diagonals"),
           nb::arg("level"), nb::arg("scale") = 0.0, nb::arg("baby_steps") = 0, nb::arg("chained") = false)
      .def_prop_ro("chained",
                   [](const LinearTransform& t) { return t.evaluation() == LinearTransform::Evaluation::chained; })
      .def_static(
          "diagonals_of",
          // As NumPy arrays, like the constructor takes them (lists: a Python object per value).
          [](ComplexArray matrix, std::size_t n) {
            nb::dict out;
            for (auto& [index, values] :
                 LinearTransform::diagonals_of(std::vector<Complex>(matrix.data(), matrix.data() + matrix.size()), n))
              out[nb::int_(index)] = to_numpy(std::move(values));
            return out;
          },
          nb::arg("matrix"), nb::arg("n"))
      .def_static("best_baby_steps", &LinearTransform::best_baby_steps, nb::arg("indices"), nb::arg("n"))
      .def_prop_ro("dimension", &LinearTransform::dimension)
      .def_prop_ro("level", &LinearTransform::level)
      .def_prop_ro("scale", &LinearTransform::scale)
      .def_prop_ro("baby_steps", &LinearTransform::baby_steps)
      .def_prop_ro("diagonal_count", &LinearTransform::diagonal_count)
      .def_prop_ro("device", [](const LinearTransform& lt) { return lt.device().str(); })
      .def("rotations", &LinearTransform::rotations)
      .def("to", [](const LinearTransform& lt, const std::string& device) {
        const Device target = Device::parse(device);
        nb::gil_scoped_release release;
        return lt.to(target);
      });

  nb::class_<SimCiphertext>(m, "SimCiphertext")
      .def(nb::init<>())
      .def("__init__",
           [](SimCiphertext* self, std::size_t level, double scale, std::size_t size) {
             new (self) SimCiphertext{level, scale, size};
           },
           nb::arg("level"), nb::arg("scale"), nb::arg("size") = 2)
      .def_rw("level", &SimCiphertext::level)
      .def_rw("scale", &SimCiphertext::scale)
      .def_rw("size", &SimCiphertext::size);

  nb::class_<Simulator>(m, "Simulator")
      .def(nb::init<ContextPtr>(), nb::arg("context"))
      .def("fresh", &Simulator::fresh, nb::arg("level"))
      .def("add", &Simulator::add)
      .def("multiply", &Simulator::multiply)
      .def("multiply_plain", &Simulator::multiply_plain, nb::arg("a"), nb::arg("scale"))
      .def("multiply_scalar", &Simulator::multiply_scalar, nb::arg("a"), nb::arg("scale"))
      .def("relinearize", &Simulator::relinearize)
      .def("rescale", &Simulator::rescale)
      .def("mod_switch", &Simulator::mod_switch, nb::arg("a"), nb::arg("level"))
      .def("adjust_to", &Simulator::adjust_to, nb::arg("a"), nb::arg("level"))
      .def("rotate", &Simulator::rotate)
      .def("evaluate_polynomial", &Simulator::evaluate_polynomial, nb::arg("x"), nb::arg("polynomial"),
           nb::arg("target_scale") = 0.0)
      .def("linear_transform", &Simulator::linear_transform, nb::arg("x"), nb::arg("transform"),
           nb::arg("rescale") = true)
      .def("reset_counts", &Simulator::reset_counts)
      .def_prop_ro("counts", [](const Simulator& s) {
        const ckks::SimCounts& c = s.counts();
        nb::dict out;
        out["multiplications"] = c.multiplications;
        out["plain_multiplications"] = c.plain_multiplications;
        out["constant_multiplications"] = c.constant_multiplications;
        out["additions"] = c.additions;
        out["rescales"] = c.rescales;
        out["relinearizations"] = c.relinearizations;
        out["rotations"] = c.rotations;
        out["hoisted_mod_ups"] = c.hoisted_mod_ups;
        out["key_switches"] = c.key_switches();
        nb::dict by_level;
        for (auto [level, count] : c.key_switches_by_level) by_level[nb::int_(level)] = count;
        out["key_switches_by_level"] = by_level;
        return out;
      });
}

namespace {

// A bootstrap's phase seconds as a dict (empty when not timed); `middle` names
// the phase between CoeffsToSlots and SlotsToCoeffs (EvalMod, or a lookup's table).
nb::dict timings_dict(const ckks::BootstrapTimings& t, bool timed, const char* middle) {
  nb::dict times;
  if (!timed) return times;
  times["mod_raise"] = t.mod_raise;
  times["coeffs_to_slots"] = t.coeffs_to_slots;
  times[middle] = t.eval_mod;
  times["slots_to_coeffs"] = t.slots_to_coeffs;
  return times;
}

}  // namespace

// Bootstrapping: the configuration, its plan, the keys and the bootstrapper.

void bind_ckks_bootstrap(nb::module_& m) {
  using ckks::BootstrapConfig;
  using ckks::Bootstrapper;
  using ckks::BootstrapKeys;
  using ckks::ContextPtr;
  using ckks::Evaluator;
  using Release = nb::call_guard<nb::gil_scoped_release>;

  nb::class_<BootstrapConfig>(m, "BootstrapConfig")
      .def(nb::init<>())
      .def_rw("slots", &BootstrapConfig::slots)
      .def_rw("cts_levels", &BootstrapConfig::cts_levels)
      .def_rw("stc_levels", &BootstrapConfig::stc_levels)
      .def_rw("k", &BootstrapConfig::k)
      .def_rw("double_angles", &BootstrapConfig::double_angles)
      .def_rw("cos_degree", &BootstrapConfig::cos_degree)
      .def_rw("arcsine_degree", &BootstrapConfig::arcsine_degree)
      .def_rw("log_message_ratio", &BootstrapConfig::log_message_ratio)
      .def_rw("ephemeral_weight", &BootstrapConfig::ephemeral_weight)
      .def_rw("stc_first", &BootstrapConfig::stc_first)
      .def_rw("chained_rotations", &BootstrapConfig::chained_rotations);

  nb::class_<BootstrapKeys>(m, "BootstrapKeys")
      .def_prop_ro("galois", [](const BootstrapKeys& k) -> const GaloisKeys& { return k.galois; },
                   nb::rv_policy::reference_internal)
      .def_prop_ro("device", [](const BootstrapKeys& k) { return k.from_sparse.device().str(); })
      .def("expand",
           [](const BootstrapKeys& k) {
             nb::gil_scoped_release release;
             k.expand();
           })
      .def_prop_rw(
          "expand_per_use", [](const BootstrapKeys& k) { return k.from_sparse.expands_per_use(); },
          [](BootstrapKeys& k, bool per_use) { k.set_expand_per_use(per_use); },
          "Whether keys whose uniform halves are not in memory expand them at each use instead of keeping them "
          "(the default for bootstrapping keys: half the memory, for up to a tenth of a bootstrap's time).")
      .def_prop_ro("resident_bytes", &BootstrapKeys::resident_bytes)
      .def_prop_ro("mapped", [](const BootstrapKeys& k) { return k.from_sparse.mapped(); },
                   "Whether the keys view a mapped key image (Context.map_keys) instead of this process's memory.")
      .def(
          "to",
          [](const BootstrapKeys& k, const std::string& device, std::uint64_t queue) {
            const Device target = Device::parse(device);
            nb::gil_scoped_release release;
            const QueueScope scope(static_cast<QueueHandle>(queue));
            return k.to(target);
          },
          nb::arg("device"), nb::arg("queue") = 0)
      .def_prop_ro("fingerprint", [](const BootstrapKeys& k) { return k.galois.fingerprint(); })
      .def("__len__", [](const BootstrapKeys& k) { return k.galois.size(); });

  nb::class_<Bootstrapper>(m, "Bootstrapper")
      .def(
          "__init__",
          [](Bootstrapper* self, ContextPtr context, const BootstrapConfig& config) {
            nb::gil_scoped_release release;
            new (self) Bootstrapper(std::move(context), config);
          },
          nb::arg("context"), nb::arg("config"))
      .def_prop_ro("slots", &Bootstrapper::slots)
      .def_prop_ro("output_level", &Bootstrapper::output_level)
      .def_prop_ro("input_level_min", &Bootstrapper::input_level_min)
      .def_prop_ro("rotation_levels", &Bootstrapper::rotation_levels)
      .def_prop_ro("conjugation_level", &Bootstrapper::conjugation_level)
      .def("plan", [](const Bootstrapper& b) {
        ckks::BootstrapPlan p;
        {
          nb::gil_scoped_release release;
          p = b.plan();
        }
        nb::dict out;
        out["output_level"] = p.output_level;
        out["input_level_min"] = p.input_level_min;
        out["levels_consumed"] = p.levels_consumed;
        out["cts_levels"] = p.cts_levels;
        out["eval_mod_levels"] = p.eval_mod_levels;
        out["stc_levels"] = p.stc_levels;
        out["cos_degree"] = p.cos_degree;
        out["arcsine_degree"] = p.arcsine_degree;
        out["cos_fit_error_log2"] = p.cos_fit_error_log2;
        out["rotation_keys"] = p.rotation_keys;
        out["key_bytes"] = p.key_bytes;
        std::vector<std::size_t> galois_levels{b.conjugation_level()};
        for (const auto& [step, level] : b.rotation_levels()) galois_levels.push_back(level);
        out["wire_bytes"] = io::bootstrap_keys_bytes(b.context()->rlwe(), galois_levels);
        out["plaintext_bytes"] = p.plaintext_bytes;
        out["temporary_bytes"] = p.temporary_bytes;
        out["temporary_in_use_bytes"] = p.temporary_in_use_bytes;
        out["diagonals"] = p.diagonals;
        out["failure_log2"] = p.failure_log2;
        out["key_switches"] = p.counts.key_switches();
        out["rotations"] = p.counts.rotations;
        out["relinearizations"] = p.counts.relinearizations;
        out["multiplications"] = p.counts.multiplications;
        out["rescales"] = p.counts.rescales;
        return out;
      })
      .def(
          "bootstrap",
          [](const Bootstrapper& b, const Evaluator& ev, const Ciphertext& ct, const RelinKey& relin,
             const BootstrapKeys& keys, double target_scale, bool timed, std::int64_t bound) {
            ckks::BootstrapTimings t;
            Ciphertext out = [&] {
              nb::gil_scoped_release release;
              return b.bootstrap(ev, ct, relin, keys, target_scale, timed ? &t : nullptr, bound);
            }();
            return nb::make_tuple(std::move(out), timings_dict(t, timed, "eval_mod"));
          },
          nb::arg("evaluator"), nb::arg("ciphertext"), nb::arg("relin_key"), nb::arg("keys"),
          nb::arg("target_scale") = 0.0, nb::arg("timed") = false, nb::arg("bound") = 1)
      .def(
          "bootstrap_pair",
          [](const Bootstrapper& b, const Evaluator& ev, const Ciphertext& x, const Ciphertext& y,
             const RelinKey& relin, const BootstrapKeys& keys, std::int64_t bound) {
            std::pair<Ciphertext, Ciphertext> out = [&] {
              nb::gil_scoped_release release;
              return b.bootstrap_pair(ev, x, y, relin, keys, bound);
            }();
            return nb::make_tuple(std::move(out.first), std::move(out.second));
          },
          nb::arg("evaluator"), nb::arg("a"), nb::arg("b"), nb::arg("relin_key"), nb::arg("keys"),
          nb::arg("bound") = 1)
      .def(
          "functional_bootstrap",
          [](const Bootstrapper& b, const Evaluator& ev, const Ciphertext& ct, const RelinKey& relin,
             const BootstrapKeys& keys, const std::vector<std::vector<double>>& tables, bool timed, bool flat) {
            ckks::BootstrapTimings t;
            std::vector<Ciphertext> out = [&] {
              nb::gil_scoped_release release;
              return b.functional_bootstrap(ev, ct, relin, keys, tables, timed ? &t : nullptr, flat);
            }();
            return nb::make_tuple(std::move(out), timings_dict(t, timed, "eval_lut"));
          },
          nb::arg("evaluator"), nb::arg("ciphertext"), nb::arg("relin_key"), nb::arg("keys"), nb::arg("tables"),
          nb::arg("timed") = false, nb::arg("flat") = false)
      .def(
          "functional_bootstrap_pair",
          [](const Bootstrapper& b, const Evaluator& ev, const Ciphertext& ct, const RelinKey& relin,
             const BootstrapKeys& keys, const std::vector<std::vector<double>>& tables, bool timed, bool flat) {
            ckks::BootstrapTimings t;
            auto out = [&] {
              nb::gil_scoped_release release;
              return b.functional_bootstrap_pair(ev, ct, relin, keys, tables, timed ? &t : nullptr, flat);
            }();
            return nb::make_tuple(std::move(out.first), std::move(out.second), timings_dict(t, timed, "eval_lut"));
          },
          nb::arg("evaluator"), nb::arg("ciphertext"), nb::arg("relin_key"), nb::arg("keys"), nb::arg("tables"),
          nb::arg("timed") = false, nb::arg("flat") = false)
      .def("functional_output_level", &Bootstrapper::functional_output_level, nb::arg("table_size"),
           nb::arg("flat") = false)
      .def_prop_ro("functional_input_level_min", &Bootstrapper::functional_input_level_min)
      .def("bootstrap_twice", &Bootstrapper::bootstrap_twice, nb::arg("evaluator"), nb::arg("ciphertext"),
           nb::arg("relin_key"), nb::arg("keys"), nb::arg("correction_bits"), Release())
      .def("simulate", [](const Bootstrapper& b, const ckks::Simulator& sim, const ckks::SimCiphertext& ct) {
        return b.bootstrap(sim, ct);
      });

  m.def(
      "generate_bootstrap_keys",
      [](const Bootstrapper& b, const SecretKey& sk, Prng& prng) {
        Prng child = Prng::from_seed(prng.next_seed());
        nb::gil_scoped_release release;
        return ckks::generate_bootstrap_keys(b, sk, child);
      },
      nb::arg("bootstrapper"), nb::arg("secret_key"), nb::arg("prng"));
}

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
      .def("switch_key_bytes", &RlweContext::switch_key_bytes, nb::arg("level"),
           "Bytes of one switching key made for `level`.")
      .def("digit_count", &RlweContext::digit_count, nb::arg("level"),
           "Key-switching digits at `level` (a switching key holds one pair per digit).")
      .def("rotation_of", &RlweContext::rotation_of, nb::arg("galois_element"),
           "The rotation step k in [0, N/2) with 5^k = g (mod 2N), or -1 (the conjugation).");

  nb::class_<Context>(m, "CkksContext")
      .def(nb::new_([](const Parameters& params) { return std::make_shared<const Context>(params); }),
           nb::arg("params"))
      .def_prop_ro("params", &Context::params, nb::rv_policy::reference_internal)
      .def_prop_ro("rlwe", &Context::rlwe)
      .def_prop_ro("slots", &Context::slots)
      .def_prop_ro("max_level", &Context::max_level)
      .def_prop_ro("user_max_level", &Context::user_max_level)
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
          "encode_encrypt_secret",
          [](const Context& c, const SecretKey& sk, ComplexArray values, std::size_t level, double scale,
             Prng& parent) {
            // encrypt_secret(sk, encode(values)) in one pass: the same ciphertext, a forward NTT
            // per limb fewer, and the same draws from `parent` as the two calls.
            const Complex* data = values.data();
            const std::size_t count = values.shape(0);
            require(level <= c.max_level(), "ckks.encode", "level " + std::to_string(level) +
                                                              " exceeds the maximum " + std::to_string(c.max_level()));
            Buffer message((level + 1) * c.rlwe()->n());
            const Metadata meta = [&] {
              nb::gil_scoped_release release;
              return c.encoder().encode_coefficients(data, count, level, scale, message.data());
            }();
            Prng prng = Prng::from_seed(parent.next_seed());  // after the encoding's checks, as before
            nb::gil_scoped_release release;
            return encrypt_secret_coefficients(sk, c.rlwe(), level, meta, message.data(), prng);
          },
          nb::arg("secret_key"), nb::arg("values"), nb::arg("level"), nb::arg("scale"), nb::arg("prng"))
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
             double statistical_security, double decryptions, double value_bound) {
            ckks::DecryptOptions options;
            options.noise = noise == "estimate"         ? ckks::DecryptionNoise::estimate
                            : noise == "flooding"       ? ckks::DecryptionNoise::flooding
                            : noise == "insecure_exact" ? ckks::DecryptionNoise::insecure_exact
                                                        : throw InvalidArgument(tagged_message(
                                                              "ckks.decrypt", "unknown noise mode '" + noise + "'"));
            options.statistical_security = statistical_security;
            options.decryptions = decryptions;
            options.value_bound = value_bound;
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
          nb::arg("statistical_security") = 40.0, nb::arg("decryptions") = 1.0, nb::arg("value_bound") = -1.0)
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
      .def("divide_by_integer", &Evaluator::divide_by_integer, Release())
      .def("linear_combination", &Evaluator::linear_combination, nb::arg("inputs"), nb::arg("weights"),
           nb::arg("scale"), Release())
      .def("linear_combinations", &Evaluator::linear_combinations, nb::arg("inputs"), nb::arg("weights"),
           nb::arg("scale"), Release())
      .def("rescale", &Evaluator::rescale, Release())
      .def("rescale_inplace", &Evaluator::rescale_inplace, Release())
      .def("relinearize_rescale", &Evaluator::relinearize_rescale, nb::arg("a"), nb::arg("key"), Release())
      .def("adjust_to", &Evaluator::adjust_to, Release())
      .def("weighted_sum", &Evaluator::weighted_sum, nb::arg("inputs"), nb::arg("values"), nb::arg("level"),
           nb::arg("scale"), nb::arg("constant") = 0.0, Release())
      .def("evaluate_polynomial", &Evaluator::evaluate_polynomial, nb::arg("x"), nb::arg("polynomial"),
           nb::arg("relin_key"), nb::arg("target_scale") = 0.0, Release())
      .def("linear_transform", &Evaluator::linear_transform, nb::arg("x"), nb::arg("transform"), nb::arg("keys"),
           nb::arg("rescale") = true, Release())
      .def("multiply_by_i", &Evaluator::multiply_by_i, nb::arg("a"), nb::arg("negative") = false, Release())
      .def("conjugate", &Evaluator::conjugate, Release())
      .def("restore_imaginary_noise",
           [](const Evaluator& ev, const Ciphertext& a) {
             Ciphertext out = a.clone();
             ev.restore_imaginary_noise(out);
             return out;
           },
           Release());

  bind_ckks_circuits(m);
  bind_ckks_bootstrap(m);
}

}  // namespace ringfire::python
