// Bindings of the io layer: to_bytes for every object and the loaders.
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>

#include "common.h"
#include "ringfire/io/serialize.h"

namespace ringfire::python {

namespace {

nb::bytes as_bytes(const io::Bytes& b) { return nb::bytes(reinterpret_cast<const char*>(b.data()), b.size()); }
const std::uint8_t* ptr(const nb::bytes& b) { return reinterpret_cast<const std::uint8_t*>(b.c_str()); }

}  // namespace

void bind_io(nb::module_& m) {
  m.def("save_parameters", [](const Parameters& p) { return as_bytes(io::save(p)); });
  m.def("save_plaintext", [](const Plaintext& p) { return as_bytes(io::save(p)); });
  m.def("save_ciphertext", [](const Ciphertext& c) { return as_bytes(io::save(c)); });
  m.def("save_public_key", [](const PublicKey& k) { return as_bytes(io::save(k)); });
  m.def("save_relin_key", [](const RelinKey& k) { return as_bytes(io::save(k)); });
  m.def("save_galois_keys", [](const GaloisKeys& k) { return as_bytes(io::save(k)); });
  m.def("save_secret_key", [](const SecretKey& k) { return as_bytes(io::save(k)); });
  m.def("fnv1a64", [](const nb::bytes& b) { return fnv1a64(b.c_str(), b.size()); },
        "The FNV-1a digest behind fingerprints and checksums.");
  m.def("peek_kind", [](const nb::bytes& b) {
    return std::string(io::kind_name(io::peek_kind(ptr(b), b.size())));
  });
  m.def("load_parameters", [](const nb::bytes& b) { return io::load_parameters(ptr(b), b.size()); });
  m.def("load_plaintext", [](const RlweContextPtr& c, const nb::bytes& b) { return io::load_plaintext(c, ptr(b), b.size()); });
  m.def("load_ciphertext", [](const RlweContextPtr& c, const nb::bytes& b) { return io::load_ciphertext(c, ptr(b), b.size()); });
  m.def("load_public_key", [](const RlweContextPtr& c, const nb::bytes& b) { return io::load_public_key(c, ptr(b), b.size()); });
  m.def("load_relin_key", [](const RlweContextPtr& c, const nb::bytes& b) { return io::load_relin_key(c, ptr(b), b.size()); });
  m.def("load_galois_keys", [](const RlweContextPtr& c, const nb::bytes& b) { return io::load_galois_keys(c, ptr(b), b.size()); });
  m.def("load_secret_key", [](const RlweContextPtr& c, const nb::bytes& b) { return io::load_secret_key(c, ptr(b), b.size()); });
}

}  // namespace ringfire::python
