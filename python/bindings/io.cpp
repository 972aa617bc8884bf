// Bindings of the io layer: to_bytes for every object and the loaders.
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>

#include <cstring>
#include <type_traits>

#include "common.h"
#include "ringfire/io/checksum.h"
#include "ringfire/io/key_image.h"
#include "ringfire/io/serialize.h"

namespace ringfire::python {

namespace {

const std::uint8_t* ptr(const nb::bytes& b) { return reinterpret_cast<const std::uint8_t*>(b.c_str()); }

// Saving serializes and copies into the Python bytes object with the GIL
// released: only the object's allocation holds it (a server's event loop and
// its other jobs run on while a round of ciphertexts is written).
template <class T>
void def_save(nb::module_& m, const char* name) {
  m.def(name, [](const T& object) {
    io::Bytes bytes;
    {
      nb::gil_scoped_release release;
      bytes = io::save(object);
    }
    nb::object out = nb::steal(PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(bytes.size())));
    if (!out.is_valid()) throw nb::python_error();
    char* dst = PyBytes_AS_STRING(out.ptr());  // not yet visible to any other thread
    {
      nb::gil_scoped_release release;
      std::memcpy(dst, bytes.data(), bytes.size());
    }
    return nb::borrow<nb::bytes>(out);
  });
}

// A Python write(memoryview) as a Sink: each piece is lent as a read-only
// view of the key's own memory (no copy), under the GIL.
io::Sink python_sink(const nb::callable& write) {
  return [&write](const std::uint8_t* data, std::size_t size) {
    nb::gil_scoped_acquire gil;
    nb::object view = nb::steal(PyMemoryView_FromMemory(
        reinterpret_cast<char*>(const_cast<std::uint8_t*>(data)), static_cast<Py_ssize_t>(size), PyBUF_READ));
    write(view);
  };
}

// A Python readinto(memoryview) -> count as a Source, filling the object's
// memory in place.
io::Source python_source(const nb::callable& readinto) {
  return [&readinto](std::uint8_t* out, std::size_t size) -> std::size_t {
    nb::gil_scoped_acquire gil;
    nb::object view = nb::steal(
        PyMemoryView_FromMemory(reinterpret_cast<char*>(out), static_cast<Py_ssize_t>(size), PyBUF_WRITE));
    nb::object got = readinto(view);
    const std::size_t n = got.is_none() ? 0 : nb::cast<std::size_t>(got);
    require(n <= size, "io.load", "the stream returned more bytes than asked for");
    return n;
  };
}

template <class T>
void def_stream_save(nb::module_& m, const char* name) {
  m.def(name, [](const T& object, const nb::callable& write) {
    const io::Sink sink = python_sink(write);
    nb::gil_scoped_release release;
    io::save(object, sink);
  });
}

template <class T>
void def_stream_load(nb::module_& m, const char* name,
                     T (*load)(const RlweContextPtr&, const io::Source&, std::size_t)) {
  m.def(name, [load](const RlweContextPtr& ctx, const nb::callable& readinto, std::size_t size) {
    const io::Source source = python_source(readinto);
    nb::gil_scoped_release release;
    return load(ctx, source, size);
  });
}

template <class T>
using WholeLoad = T (*)(const RlweContextPtr&, const std::uint8_t*, std::size_t);

}  // namespace

void bind_io(nb::module_& m) {
  def_save<Parameters>(m, "save_parameters");
  def_save<Plaintext>(m, "save_plaintext");
  def_save<Ciphertext>(m, "save_ciphertext");
  def_save<PublicKey>(m, "save_public_key");
  def_save<RelinKey>(m, "save_relin_key");
  def_save<EmbeddingKey>(m, "save_embedding_key");
  def_save<GaloisKeys>(m, "save_galois_keys");
  def_save<SecretKey>(m, "save_secret_key");
  def_save<ckks::BootstrapKeys>(m, "save_bootstrap_keys");
  def_save<MasterKeys>(m, "save_master_keys");
  m.def("fnv1a64", [](const nb::bytes& b) { return fnv1a64(b.c_str(), b.size()); },
        "The FNV-1a digest behind legacy fingerprints and the checksums of format versions 1-3.");
  m.def("checksum64", [](const nb::bytes& b) { return io::checksum64(b.c_str(), b.size()); },
        "The XXH64 checksum that closes objects of format version 4 on.");
  // The kind from the header alone, for a load that follows (it checks the checksum).
  m.def("envelope_kind", [](const nb::bytes& b) {
    return std::string(io::kind_name(io::envelope_kind(ptr(b), b.size())));
  });
  m.def("peek_kind", [](const nb::bytes& b) {
    const std::uint8_t* data = ptr(b);
    const std::size_t size = b.size();
    nb::gil_scoped_release release;  // the checksum reads every byte
    return std::string(io::kind_name(io::peek_kind(data, size)));
  });
  m.def(
      "load_parameters",
      [](const nb::bytes& b, bool insecure_no_security_check) {
        return io::load_parameters(ptr(b), b.size(), insecure_no_security_check);
      },
      nb::arg("data"), nb::arg("insecure_no_security_check") = false);
  // Loads parse and validate with the GIL released (the bytes object is
  // immutable and kept alive by the call), so other Python threads run on.
  auto def_load = [&m](const char* name, auto load) {  // a function pointer
    m.def(name, [load](const RlweContextPtr& c, const nb::bytes& b) {
      const std::uint8_t* data = ptr(b);
      const std::size_t size = b.size();
      nb::gil_scoped_release release;
      return load(c, data, size);
    });
  };
  def_load("load_plaintext", &io::load_plaintext);
  def_load("load_ciphertext", &io::load_ciphertext);
  def_load("load_public_key", WholeLoad<PublicKey>(&io::load_public_key));
  def_load("load_relin_key", WholeLoad<RelinKey>(&io::load_relin_key));
  def_load("load_embedding_key", &io::load_embedding_key);
  def_load("load_galois_keys", WholeLoad<GaloisKeys>(&io::load_galois_keys));
  def_load("load_secret_key", &io::load_secret_key);
  def_load("load_bootstrap_keys", WholeLoad<ckks::BootstrapKeys>(&io::load_bootstrap_keys));
  def_load("load_master_keys", WholeLoad<MasterKeys>(&io::load_master_keys));
  // Streamed keys (ringfire.io.save_to / Context.load_from): the GIL is
  // released except while Python moves a piece.
  def_stream_save<PublicKey>(m, "stream_public_key");
  def_stream_save<RelinKey>(m, "stream_relin_key");
  def_stream_save<GaloisKeys>(m, "stream_galois_keys");
  def_stream_save<ckks::BootstrapKeys>(m, "stream_bootstrap_keys");
  def_stream_save<MasterKeys>(m, "stream_master_keys");
  def_stream_load<PublicKey>(m, "stream_load_public_key", &io::load_public_key);
  def_stream_load<RelinKey>(m, "stream_load_relin_key", &io::load_relin_key);
  def_stream_load<GaloisKeys>(m, "stream_load_galois_keys", &io::load_galois_keys);
  def_stream_load<ckks::BootstrapKeys>(m, "stream_load_bootstrap_keys", &io::load_bootstrap_keys);
  def_stream_load<MasterKeys>(m, "stream_load_master_keys", &io::load_master_keys);
  // Key images (io/key_image.h): written and mapped with the GIL released.
  auto def_save_image = [&m](auto tag) {
    using T = typename decltype(tag)::type;
    m.def(
        "save_key_image",
        [](const T& keys, const std::string& path, bool expand) {
          nb::gil_scoped_release release;
          return io::save_image(keys, path, expand);
        },
        nb::arg("keys"), nb::arg("path"), nb::arg("expand") = false);
  };
  def_save_image(std::type_identity<RelinKey>{});
  def_save_image(std::type_identity<GaloisKeys>{});
  def_save_image(std::type_identity<ckks::BootstrapKeys>{});
  m.def("key_image_kind", [](const std::string& path) {
    nb::gil_scoped_release release;
    return std::string(io::kind_name(io::image_kind(path)));
  });
  auto def_map = [&m](const char* name, auto map) {  // a function pointer
    m.def(name, [map](const RlweContextPtr& c, const std::string& path, bool verify) {
      nb::gil_scoped_release release;
      return map(c, path, verify);
    });
  };
  def_map("map_relin_key", &io::map_relin_key);
  def_map("map_galois_keys", &io::map_galois_keys);
  def_map("map_bootstrap_keys", &io::map_bootstrap_keys);
}

}  // namespace ringfire::python
