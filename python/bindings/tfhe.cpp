// Bindings of the FHEW/TFHE layer (ringfire/tfhe): parameters, the client's
// secret key, the evaluation keys with the bootstrapper, and the 32-bit NTT
// for tests. Ciphertexts cross as uint32 arrays of shape (count, n + 1).
#include <algorithm>
#include <cstring>

#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "common.h"
#include "tfhe_common.h"
#include "ringfire/io/serialize_tfhe.h"
#include "ringfire/rlwe/prng.h"
#include "ringfire/tfhe/bootstrapper.h"
#include "ringfire/tfhe/isa.h"
#include "ringfire/tfhe/lwe.h"
#include "ringfire/tfhe/ntt32.h"
#include "ringfire/tfhe/params.h"

namespace ringfire::python {

namespace {

using tfhe::u32;
using U32Array = nb::ndarray<std::uint32_t, nb::numpy, nb::c_contig, nb::device::cpu>;
using ConstU32Array = nb::ndarray<const std::uint32_t, nb::numpy, nb::c_contig, nb::device::cpu>;

U32Array new_u32(std::size_t rows, std::size_t cols) {
  auto* data = new std::uint32_t[rows * cols == 0 ? 1 : rows * cols]();
  nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<std::uint32_t*>(p); });
  const std::size_t shape[2] = {rows, cols};
  return U32Array(data, 2, shape, owner);
}

void check_below(const ConstU32Array& a, u32 bound, const char* op, const char* name) {
  const u32* p = a.data();
  for (std::size_t i = 0; i < a.size(); ++i)
    require(p[i] < bound, op, std::string(name) + ": a word is not below " + std::to_string(bound));
}

}  // namespace

void bind_tfhe(nb::module_& m) {
  using namespace tfhe;
  nb::class_<Params>(m, "TfheParams")
      .def(nb::init<>())
      .def_rw("lwe_dimension", &Params::lwe_dimension)
      .def_rw("ring_dimension", &Params::ring_dimension)
      .def_rw("ring_modulus", &Params::ring_modulus)
      .def_rw("gadget_base_log", &Params::gadget_base_log)
      .def_rw("gadget_digits", &Params::gadget_digits)
      .def_rw("gadget_skip_bits", &Params::gadget_skip_bits)
      .def_rw("ks_modulus", &Params::ks_modulus)
      .def_rw("ks_base_log", &Params::ks_base_log)
      .def_rw("ks_digits", &Params::ks_digits)
      .def_rw("sigma", &Params::sigma)
      .def_rw("automorphism_window", &Params::automorphism_window)
      .def_prop_ro("lwe_modulus", &Params::lwe_modulus)
      .def_prop_ro("identity", [](const Params& p) { return digest_bytes(p.identity()); })
      .def("validate", &Params::validate)
      .def("__repr__", [](const Params& p) { return "TfheParams(" + p.describe() + ")"; });

  nb::class_<tfhe::SecretKey>(m, "TfheSecretKey")
      .def(nb::init<const Params&, Prng&>(), nb::arg("params"), nb::arg("prng"))
      .def("secret_bytes", &secret_key_bytes<tfhe::SecretKey>)
      .def_static(
          "from_secret_bytes",
          [](const Params& params, const nb::bytes& data) { return secret_key_from_bytes<tfhe::SecretKey>(params, data, "tfhe.SecretKey"); },
          nb::arg("params"), nb::arg("data"))
      .def("encrypt",
           [](const tfhe::SecretKey& key, const ConstU32Array& phases, Prng& prng) {
             const std::size_t count = phases.size();
             check_below(phases, key.params().lwe_modulus(), "tfhe.encrypt", "phases");
             U32Array out = new_u32(count, key.params().lwe_dimension + 1);
             key.encrypt(phases.data(), count, out.data(), prng);
             return out;
           },
           nb::arg("phases"), nb::arg("prng"))
      .def("phases",
           [](const tfhe::SecretKey& key, const ConstU32Array& cts) {
             const std::size_t count = rows_of(cts, key.params().lwe_dimension + 1, "tfhe.decrypt", "ciphertexts");
             U32Array out = new_u32(1, count);
             key.phases(cts.data(), count, out.data());
             return out;
           },
           nb::arg("ciphertexts"))
      .def("ring_phases",
           [](const tfhe::SecretKey& key, const ConstU32Array& acc) {
             const std::size_t N = key.params().ring_dimension;
             require(acc.ndim() == 2 && acc.shape(0) == 2 && acc.shape(1) == N, "tfhe.ring_phases",
                     "an RLWE pair of shape (2, N)");
             U32Array out = new_u32(1, N);
             key.ring_phases(acc.data(), out.data());
             return out;
           },
           nb::arg("acc"));

  nb::class_<Bootstrapper>(m, "TfheBootstrapper")
      .def(
          "__init__",
          [](Bootstrapper* self, const tfhe::SecretKey& key, Prng& prng, const std::string& isa) {
            const Isa chosen = isa.empty() ? default_isa() : parse_isa(isa);
            nb::gil_scoped_release release;
            new (self) Bootstrapper(key, prng, chosen);
          },
          nb::arg("secret_key"), nb::arg("prng"), nb::arg("isa") = "")
      .def_prop_ro("isa", [](const Bootstrapper& b) { return isa_name(b.isa()); })
      .def_prop_ro("key_id", &evaluation_key_id<Bootstrapper>)
      .def("save",
           [](const Bootstrapper& b) {
             io::Bytes bytes;
             {
               nb::gil_scoped_release release;
               bytes = io::save(b);
             }
             return nb::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
           })
      .def_prop_ro("bootstrap_key_bytes", &Bootstrapper::bootstrap_key_bytes)
      .def_prop_ro("key_switch_key_bytes", &Bootstrapper::key_switch_key_bytes)
      .def(
          "bootstrap",
          [](const Bootstrapper& b, const ConstU32Array& cts, const ConstU32Array& tv, int threads,
             std::size_t outputs, std::size_t batch) {
            const Params& p = b.params();
            const std::size_t count = rows_of(cts, p.lwe_dimension + 1, "tfhe.bootstrap", "ciphertexts");
            require(tv.ndim() == 1 && tv.shape(0) == p.ring_dimension, "tfhe.bootstrap",
                    "the test vector must have N=" + std::to_string(p.ring_dimension) + " coefficients");
            require(outputs >= 1 && outputs <= p.ring_dimension, "tfhe.bootstrap",
                    "outputs per ciphertext must lie in [1, N]");
            check_below(cts, p.lwe_modulus(), "tfhe.bootstrap", "ciphertexts");
            U32Array out = new_u32(count * outputs, p.lwe_dimension + 1);
            {
              nb::gil_scoped_release release;
              b.bootstrap_many(cts.data(), count, tv.data(), out.data(), threads, outputs, batch);
            }
            return out;
          },
          nb::arg("ciphertexts"), nb::arg("test_vector"), nb::arg("threads") = 0, nb::arg("outputs") = 1,
          nb::arg("batch") = Bootstrapper::kRotationBatch,
          "`batch`: ciphertexts per thread that step through the key together (GINX; the same bits for any)")
      .def(
          "bootstrap_to_ring",
          [](const Bootstrapper& b, const ConstU32Array& cts, const ConstU32Array& tv, int threads, std::size_t batch) {
            const Params& p = b.params();
            const std::size_t count = rows_of(cts, p.lwe_dimension + 1, "tfhe.bootstrap", "ciphertexts");
            require(tv.ndim() == 1 && tv.shape(0) == p.ring_dimension, "tfhe.bootstrap",
                    "the test vector must have N=" + std::to_string(p.ring_dimension) + " coefficients");
            check_below(cts, p.lwe_modulus(), "tfhe.bootstrap", "ciphertexts");
            U32Array out = new_u32(count, p.ring_dimension + 1);
            {
              nb::gil_scoped_release release;
              b.bootstrap_to_ring_many(cts.data(), count, tv.data(), out.data(), threads, batch);
            }
            return out;
          },
          nb::arg("ciphertexts"), nb::arg("test_vector"), nb::arg("threads") = 0,
          nb::arg("batch") = Bootstrapper::kRotationBatch,
          "The bootstraps' LWE ciphertexts of dimension N under the ring secret, mod Q, before their key switch "
          "(the way back into BGV/BFV starts there)")
      .def(
          "blind_rotate",
          [](const Bootstrapper& b, const ConstU32Array& ct, const ConstU32Array& tv) {
            const Params& p = b.params();
            rows_of(ct, p.lwe_dimension + 1, "tfhe.blind_rotate", "ciphertext");
            require(ct.ndim() == 1 && tv.ndim() == 1 && tv.shape(0) == p.ring_dimension, "tfhe.blind_rotate",
                    "one ciphertext and a test vector of N coefficients");
            check_below(ct, p.lwe_modulus(), "tfhe.blind_rotate", "ciphertext");
            U32Array out = new_u32(2, p.ring_dimension);
            nb::gil_scoped_release release;
            b.blind_rotate(ct.data(), tv.data(), out.data());
            return out;
          },
          nb::arg("ciphertext"), nb::arg("test_vector"))
      .def(
          "switch_ring_lwe",
          [](const Bootstrapper& b, const ConstU32Array& cts) {
            const Params& p = b.params();
            const std::size_t count = rows_of(cts, p.ring_dimension + 1, "tfhe.switch_ring_lwe", "ciphertexts");
            U32Array out = new_u32(count, p.lwe_dimension + 1);
            nb::gil_scoped_release release;
            b.switch_ring_lwe(cts.data(), count, out.data());
            return out;
          },
          nb::arg("ciphertexts"),
          "LWE ciphertexts of dimension N under the ring secret, mod Q, to gate ciphertexts (the bootstrap's "
          "key switch and modulus switches)");

  m.def(
      "tfhe_load_evaluation_keys",
      [](const Params& params, const nb::bytes& data) {
        nb::gil_scoped_release release;
        return io::load_tfhe_evaluation_keys(params, reinterpret_cast<const std::uint8_t*>(data.c_str()), data.size());
      },
      nb::arg("params"), nb::arg("data"));
  m.def(
      "tfhe_save_ciphertexts",
      [](const Params& params, int encoding, int bits, const std::vector<std::uint64_t>& shape,
         const ConstU32Array& words) {
        require(encoding >= 0 && encoding <= 2 && bits >= 0 && bits <= 64, "tfhe.save", "bad encoding or bits");
        rows_of(words, params.lwe_dimension + 1, "tfhe.save", "ciphertexts");
        io::TfheCiphertexts cts{static_cast<std::uint8_t>(encoding), static_cast<std::uint8_t>(bits), shape,
                                std::vector<std::uint32_t>(words.data(), words.data() + words.size())};
        const io::Bytes bytes = io::save(params, cts);
        return nb::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      },
      nb::arg("params"), nb::arg("encoding"), nb::arg("bits"), nb::arg("shape"), nb::arg("words"));
  m.def(
      "tfhe_load_ciphertexts",
      [](const Params& params, const nb::bytes& data) {
        io::TfheCiphertexts cts =
            io::load_tfhe_ciphertexts(params, reinterpret_cast<const std::uint8_t*>(data.c_str()), data.size());
        const std::size_t width = params.lwe_dimension + 1;
        U32Array words = new_u32(cts.words.size() / width, width);
        std::memcpy(words.data(), cts.words.data(), cts.words.size() * 4);
        return nb::make_tuple(cts.encoding, cts.bits, nb::tuple(nb::cast(cts.shape)), words);
      },
      nb::arg("params"), nb::arg("data"));

  m.def("tfhe_best_isa", [] { return isa_name(best_isa()); });
  m.def("tfhe_default_isa", [] { return isa_name(default_isa()); });
  m.def("tfhe_set_default_isa", [](const std::string& name) { set_default_isa(parse_isa(name)); }, nb::arg("isa"));

  nb::class_<Ntt32>(m, "Ntt32")
      .def(
          "__init__",
          [](Ntt32* self, std::size_t n, u32 q, const std::string& isa) {
            new (self) Ntt32(n, q, isa.empty() ? default_isa() : parse_isa(isa));
          },
          nb::arg("n"), nb::arg("q"), nb::arg("isa") = "")
      .def_prop_ro("isa", [](const Ntt32& t) { return isa_name(t.isa()); })
      .def("forward",
           [](const Ntt32& t, U32Array a, bool scalar) {
             require(a.ndim() == 1 && a.shape(0) == t.n(), "tfhe.Ntt32", "one polynomial of N words");
             require(*std::max_element(a.data(), a.data() + t.n()) < t.modulus(), "tfhe.Ntt32",
                     "the forward transform reads values below q");
             scalar ? t.forward_scalar(a.data()) : t.forward(a.data());
           },
           nb::arg("a"), nb::arg("scalar") = false)
      .def("inverse",
           [](const Ntt32& t, U32Array a, bool scalar) {
             require(a.ndim() == 1 && a.shape(0) == t.n(), "tfhe.Ntt32", "one polynomial of N words");
             require(*std::max_element(a.data(), a.data() + t.n()) < 2 * t.modulus(), "tfhe.Ntt32",
                     "the inverse reads values below 2q");
             scalar ? t.inverse_scalar(a.data()) : t.inverse(a.data());
           },
           nb::arg("a"), nb::arg("scalar") = false);
}

}  // namespace ringfire::python
