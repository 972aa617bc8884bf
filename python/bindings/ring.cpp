// Bindings of the ring layer: RNS bases, base converters, and the batched
// polynomial kernels over NumPy arrays shaped (..., L, N).
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "common.h"
#include "ringfire/ring/backend.h"
#include "ringfire/ring/base_converter.h"
#include "ringfire/ring/rns_base.h"
#include "ringfire/ring/trace.h"

namespace ringfire::python {

namespace {

// Number of (L, N) polynomials in an array; raises unless the size matches.
std::size_t batch_of(const char* op, std::size_t size, const RnsBase& base) {
  const std::size_t poly_words = base.size() * base.n();
  require(size % poly_words == 0 && size != 0, op,
          "array of " + std::to_string(size) + " words is not a stack of (L=" + std::to_string(base.size()) +
              ", N=" + std::to_string(base.n()) + ") polynomials");
  return size / poly_words;
}

// Raises ValueError naming the first coefficient that is not below its q.
void check_reduced(const char* op, const u64* data, std::size_t batch, const RnsBase& base) {
  const std::size_t n = base.n(), limbs = base.size();
  for (std::size_t p = 0; p < batch; ++p) {
    for (std::size_t l = 0; l < limbs; ++l) {
      const u64 q = base.modulus(l).value();
      const u64* x = data + (p * limbs + l) * n;
      for (std::size_t j = 0; j < n; ++j) {
        if (x[j] >= q)
          throw_invalid(op, "value " + std::to_string(x[j]) + " at limb " + std::to_string(l) + ", index " +
                                std::to_string(j) + " is not below its modulus q=" + std::to_string(q));
      }
    }
  }
}

Backend& cpu() { return backend_for(Device::cpu()); }

Form parse_form(const char* op, const std::string& form) {
  if (form == "coeff") return Form::coeff;
  if (form == "eval") return Form::eval;
  throw_invalid(op, "form must be 'coeff' or 'eval', got '" + form + "'");
}

}  // namespace

void bind_ring(nb::module_& m) {
  nb::class_<RnsBase>(m, "RnsBase")
      .def(nb::new_([](std::size_t n, const std::vector<u64>& moduli) {
             return std::make_shared<const RnsBase>(n, moduli);
           }),
           nb::arg("poly_degree"), nb::arg("moduli"))
      .def_prop_ro("poly_degree", &RnsBase::n)
      .def_prop_ro("size", &RnsBase::size)
      .def_prop_ro("moduli",
                   [](const RnsBase& b) {
                     std::vector<u64> q;
                     for (const Modulus& mod : b.moduli()) q.push_back(mod.value());
                     return q;
                   })
      .def("psi", [](const RnsBase& b, std::size_t i) { return b.ntt(i).psi(); }, nb::arg("limb"))
      .def(
          "compose",
          [](const RnsBase& b, ConstU64Array residues) {
            const std::size_t count = residues.size() / b.size();
            require(residues.size() == count * b.size(), "ring.crt_compose", "expected an (L, count) array");
            for (std::size_t l = 0; l < b.size(); ++l)
              for (std::size_t c = 0; c < count; ++c)
                require(residues.data()[l * count + c] < b.modulus(l).value(), "ring.crt_compose",
                        "residue at limb " + std::to_string(l) + ", index " + std::to_string(c) +
                            " is not below its modulus");
            U64Array words = new_array({count, b.size()});
            b.compose(residues.data(), count, words.data());
            return words;
          },
          nb::arg("residues"))
      .def(
          "decompose",
          [](const RnsBase& b, ConstU64Array words, std::size_t word_count) {
            const std::size_t count = words.size() / word_count;
            require(word_count > 0 && words.size() == count * word_count, "ring.crt_decompose",
                    "expected a (count, words) array");
            U64Array residues = new_array({b.size(), count});
            b.decompose(words.data(), word_count, count, residues.data());
            return residues;
          },
          nb::arg("words"), nb::arg("word_count"));

  nb::class_<BaseConverter>(m, "BaseConverter")
      .def(nb::new_([](std::shared_ptr<const RnsBase> from, std::shared_ptr<const RnsBase> to) {
             return std::make_shared<BaseConverter>(from, to);
           }),
           nb::arg("source"), nb::arg("target"));

  m.def(
      "ntt_forward",
      [](U64Array data, const RnsBase& base) {
        const std::size_t batch = batch_of("ring.ntt", data.size(), base);
        check_reduced("ring.ntt", data.data(), batch, base);
        nb::gil_scoped_release release;
        cpu().ntt_forward(data.data(), batch, base);
      },
      nb::arg("data"), nb::arg("base"));
  m.def(
      "ntt_inverse",
      [](U64Array data, const RnsBase& base) {
        const std::size_t batch = batch_of("ring.intt", data.size(), base);
        check_reduced("ring.intt", data.data(), batch, base);
        nb::gil_scoped_release release;
        cpu().ntt_inverse(data.data(), batch, base);
      },
      nb::arg("data"), nb::arg("base"));
  m.def(
      "poly_multiply",
      [](ConstU64Array a, ConstU64Array b, U64Array out, const RnsBase& base, const std::string& method) {
        constexpr const char* op = "ring.poly_mul";
        const std::size_t batch = batch_of(op, a.size(), base);
        require(b.size() == a.size() && out.size() == a.size(), op, "operands differ in shape");
        require(method == "ntt" || method == "karatsuba", op,
                "method must be 'ntt' or 'karatsuba', got '" + method + "'");
        check_reduced(op, a.data(), batch, base);
        check_reduced(op, b.data(), batch, base);
        nb::gil_scoped_release release;
        cpu().poly_multiply(a.data(), b.data(), out.data(), batch, base,
                            method == "karatsuba" ? PolyMulMethod::karatsuba : PolyMulMethod::ntt);
      },
      nb::arg("a"), nb::arg("b"), nb::arg("out"), nb::arg("base"), nb::arg("method"));
  m.def(
      "automorphism",
      [](ConstU64Array a, U64Array out, const RnsBase& base, u64 galois_elt, const std::string& form) {
        constexpr const char* op = "ring.automorphism";
        const std::size_t batch = batch_of(op, a.size(), base);
        require(out.size() == a.size(), op, "output differs in shape");
        require(a.data() != out.data(), op, "output must not alias the input");
        require((galois_elt & 1) == 1 && galois_elt < 2 * base.n(), op,
                "galois element must be odd and below 2N=" + std::to_string(2 * base.n()) + ", got " +
                    std::to_string(galois_elt));
        const Form f = parse_form(op, form);
        check_reduced(op, a.data(), batch, base);
        nb::gil_scoped_release release;
        cpu().automorphism(a.data(), out.data(), batch, base, galois_elt, f);
      },
      nb::arg("a"), nb::arg("out"), nb::arg("base"), nb::arg("galois_elt"), nb::arg("form"));
  m.def(
      "base_convert",
      [](ConstU64Array a, U64Array out, const BaseConverter& conv, const std::string& kind) {
        constexpr const char* op = "ring.base_convert";
        const std::size_t batch = batch_of(op, a.size(), conv.from());
        require(out.size() == batch * conv.to().size() * conv.to().n(), op, "output has the wrong size");
        require(kind == "fast" || kind == "exact", op, "kind must be 'fast' or 'exact', got '" + kind + "'");
        check_reduced(op, a.data(), batch, conv.from());
        nb::gil_scoped_release release;
        cpu().base_convert(a.data(), out.data(), batch, conv,
                           kind == "exact" ? BaseConversion::exact : BaseConversion::fast);
      },
      nb::arg("a"), nb::arg("out"), nb::arg("converter"), nb::arg("kind"));

  // Tracing (ring/trace.h): entries come back as dicts for ringfire.trace.
  m.def("trace_start", &start_trace, nb::arg("dry_run"), "Opens the process-wide backend trace.");
  m.def("trace_open", &trace_open, "Whether a backend trace is open.");
  m.def(
      "trace_stop",
      []() {
        nb::list out;
        for (const TraceEntry& e : stop_trace()) {
          nb::dict d;
          d["kernel"] = e.kernel;
          d["label"] = e.label;
          d["device"] = e.device;
          d["n"] = e.n;
          d["limbs"] = e.limbs;
          d["source_limbs"] = e.source_limbs;
          d["terms"] = e.terms;
          d["calls"] = e.calls;
          d["polys"] = e.polys;
          d["words"] = e.words;
          d["bytes_read"] = e.bytes_read;
          d["bytes_written"] = e.bytes_written;
          d["nanoseconds"] = e.nanoseconds;
          out.append(d);
        }
        return out;
      },
      "Closes the backend trace and returns its entries.");
}

}  // namespace ringfire::python
