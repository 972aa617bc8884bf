// Bindings of the 64-bit torus engine (ringfire/tfhe/torus_*.h): parameters,
// the client's binary secrets, and the bootstrapper with its evaluation keys.
// Ciphertexts cross as uint64 arrays of shape (count, N + 1).
#include <algorithm>
#include <cstring>
#include <vector>

#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "common.h"
#include "tfhe_common.h"
#include "ringfire/rlwe/prng.h"
#include "ringfire/tfhe/torus_bootstrapper.h"

namespace ringfire::python {

void bind_tfhe_torus(nb::module_& m) {
  using namespace tfhe;
  nb::class_<TorusParams>(m, "TfheTorusParams")
      .def(nb::init<>())
      .def_rw("lwe_dimension", &TorusParams::lwe_dimension)
      .def_rw("ring_dimension", &TorusParams::ring_dimension)
      .def_rw("pbs_base_log", &TorusParams::pbs_base_log)
      .def_rw("pbs_levels", &TorusParams::pbs_levels)
      .def_rw("ks_base_log", &TorusParams::ks_base_log)
      .def_rw("ks_levels", &TorusParams::ks_levels)
      .def_rw("lwe_noise_log2", &TorusParams::lwe_noise_log2)
      .def_rw("glwe_noise_log2", &TorusParams::glwe_noise_log2)
      .def_rw("grouping", &TorusParams::grouping)
      .def_prop_ro("bootstrap_key_count", &TorusParams::bootstrap_key_count)
      .def_prop_ro("identity", [](const TorusParams& p) { return digest_bytes(p.identity()); })
      .def("validate", &TorusParams::validate)
      .def("__repr__", [](const TorusParams& p) { return "TfheTorusParams(" + p.describe() + ")"; });

  nb::class_<TorusSecretKey>(m, "TfheTorusSecretKey")
      .def(nb::init<const TorusParams&, Prng&>(), nb::arg("params"), nb::arg("prng"))
      .def("secret_bytes", &secret_key_bytes<TorusSecretKey>)
      .def_static(
          "from_secret_bytes",
          [](const TorusParams& params, const nb::bytes& data) { return secret_key_from_bytes<TorusSecretKey>(params, data, "tfhe.TorusSecretKey"); },
          nb::arg("params"), nb::arg("data"))
      .def(
          "encrypt",
          [](const TorusSecretKey& key, const ConstU64Array& mu, Prng& prng) {
            U64Array out = new_array({mu.size(), key.params().ring_dimension + 1});
            key.encrypt(mu.data(), mu.size(), out.data(), prng);
            return out;
          },
          nb::arg("messages"), nb::arg("prng"))
      .def(
          "phases",
          [](const TorusSecretKey& key, const ConstU64Array& cts) {
            const std::size_t count = rows_of(cts, key.params().ring_dimension + 1, "tfhe.decrypt", "ciphertexts");
            U64Array out = new_array({1, count});
            key.phases(cts.data(), count, out.data());
            return out;
          },
          nb::arg("ciphertexts"))
      .def(
          "small_phases",
          [](const TorusSecretKey& key, const ConstU64Array& cts) {
            const std::size_t count = rows_of(cts, key.params().lwe_dimension + 1, "tfhe.small_phases", "ciphertexts");
            U64Array out = new_array({1, count});
            key.small_phases(cts.data(), count, out.data());
            return out;
          },
          nb::arg("ciphertexts"));

  nb::class_<TorusBootstrapper>(m, "TfheTorusBootstrapper")
      .def(
          "__init__",
          [](TorusBootstrapper* self, const TorusSecretKey& key, Prng& prng) {
            nb::gil_scoped_release release;
            new (self) TorusBootstrapper(key, prng);
          },
          nb::arg("secret_key"), nb::arg("prng"))
      .def_static(
          "from_keys",
          [](const TorusParams& params, const nb::bytes& bootstrap_seed, const ConstU64Array& bootstrap_bodies,
             const nb::bytes& key_switch_seed, const ConstU64Array& key_switch_bodies) {
            params.validate();
            const char* op = "tfhe.load_evaluation_keys";
            require(bootstrap_seed.size() == 32 && key_switch_seed.size() == 32, op, "seeds of 32 bytes expected");
            const std::size_t bsk = params.bootstrap_key_count() * 2 * params.pbs_levels * params.ring_dimension;
            const std::size_t ksk = params.ring_dimension * params.ks_levels;
            require(bootstrap_bodies.size() == bsk, op,
                    "the bootstrapping key has " + std::to_string(bsk) + " body words, got " +
                        std::to_string(bootstrap_bodies.size()));
            require(key_switch_bodies.size() == ksk, op,
                    "the key-switching key has " + std::to_string(ksk) + " body words, got " +
                        std::to_string(key_switch_bodies.size()));
            Prng::Seed bs{}, ks{};
            std::memcpy(bs.data(), bootstrap_seed.c_str(), 32);
            std::memcpy(ks.data(), key_switch_seed.c_str(), 32);
            nb::gil_scoped_release release;
            return std::make_unique<TorusBootstrapper>(params, bs, bootstrap_bodies.data(), ks,
                                                       key_switch_bodies.data());
          },
          nb::arg("params"), nb::arg("bootstrap_seed"), nb::arg("bootstrap_bodies"), nb::arg("key_switch_seed"),
          nb::arg("key_switch_bodies"))
      .def_prop_ro("key_id", &evaluation_key_id<TorusBootstrapper>)
      // (bootstrap seed, key-switch seed, bootstrap bodies, key-switch bodies): what save_evaluation_keys writes.
      .def("seeded_parts",
           [](const TorusBootstrapper& b) {
             const auto& bb = b.bootstrap_key().bodies();
             const auto& kb = b.key_switch_key().bodies();
             U64Array bsk = new_array({bb.size()}), ksk = new_array({kb.size()});
             std::memcpy(bsk.data(), bb.data(), bb.size() * 8);
             std::memcpy(ksk.data(), kb.data(), kb.size() * 8);
             auto seed = [](const Prng::Seed& s) { return nb::bytes(reinterpret_cast<const char*>(s.data()), 32); };
             return nb::make_tuple(seed(b.bootstrap_key().seed()), seed(b.key_switch_key().seed()), bsk, ksk);
           })
      // A bootstrap's first step alone: count ciphertexts under the big key (N + 1 words) to
      // n + 1 words mod 2^32 under the small one (benchmarks/tfhe_key_switch.py times it).
      .def(
          "key_switch",
          [](const TorusBootstrapper& b, const ConstU64Array& cts) {
            const std::size_t N = b.params().ring_dimension, n = b.params().lwe_dimension;
            const std::size_t count = rows_of(cts, N + 1, "tfhe.key_switch", "ciphertexts");
            std::vector<std::uint32_t> words(count * (n + 1));
            {
              nb::gil_scoped_release release;
              b.key_switch_key().apply_many(cts.data(), count, words.data());
            }
            U64Array out = new_array({count, n + 1});
            std::copy(words.begin(), words.end(), out.data());
            return out;
          },
          nb::arg("ciphertexts"))
      .def_prop_ro("isa", [](const TorusBootstrapper& b) { return isa_name(b.isa()); })
      .def_prop_ro("bootstrap_key_bytes", &TorusBootstrapper::bootstrap_key_bytes)
      .def_prop_ro("key_switch_key_bytes", &TorusBootstrapper::key_switch_key_bytes)
      .def(
          "bootstrap",
          [](const TorusBootstrapper& b, const ConstU64Array& cts, const ConstU64Array& tv, int threads,
             std::size_t outputs) {
            const TorusParams& p = b.params();
            const std::size_t count = rows_of(cts, p.ring_dimension + 1, "tfhe.bootstrap", "ciphertexts");
            require(tv.ndim() == 1 && tv.shape(0) == p.ring_dimension, "tfhe.bootstrap",
                    "the test vector must have N=" + std::to_string(p.ring_dimension) + " coefficients");
            require(outputs >= 1 && outputs <= p.ring_dimension, "tfhe.bootstrap",
                    "outputs per ciphertext must lie in [1, N]");
            U64Array out = new_array({count * outputs, p.ring_dimension + 1});
            {
              nb::gil_scoped_release release;
              b.bootstrap_many(cts.data(), count, tv.data(), out.data(), threads, outputs);
            }
            return out;
          },
          nb::arg("ciphertexts"), nb::arg("test_vector"), nb::arg("threads") = 0, nb::arg("outputs") = 1)
      .def(
          "switch_input",
          [](const TorusBootstrapper& b, const ConstU64Array& cts, std::size_t outputs) {
            const TorusParams& p = b.params();
            const std::size_t count = rows_of(cts, p.ring_dimension + 1, "tfhe.switch_input", "ciphertexts");
            require(outputs >= 1 && outputs <= p.ring_dimension && (outputs & (outputs - 1)) == 0, "tfhe.switch_input",
                    "outputs must be a power of two in [1, N]");
            U64Array small = new_array({count, p.lwe_dimension + 1});
            U64Array switched = new_array({count, p.lwe_dimension + 1});
            std::vector<std::uint32_t> words(p.lwe_dimension + 1);
            {
              nb::gil_scoped_release release;
              for (std::size_t c = 0; c < count; ++c) {
                b.switch_input(cts.data() + c * (p.ring_dimension + 1), words.data(),
                               small.data() + c * (p.lwe_dimension + 1), outputs);
                std::copy(words.begin(), words.end(), switched.data() + c * (p.lwe_dimension + 1));
              }
            }
            return nb::make_tuple(small, switched);
          },
          nb::arg("ciphertexts"), nb::arg("outputs") = 1,
          "The key switch (n + 1 words, multiples of 2^32 mod 2^64 under s) and the centred modulus switch (mod 2N, "
          "multiples of outputs) of each ciphertext: what the blind rotation reads, for noise measurements");
}

}  // namespace ringfire::python
