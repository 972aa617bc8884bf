// Bindings of the rlwe layer: parameters, the CSPRNG, keys, ciphertexts and
// plaintexts (opaque handles; the Pythonic classes live in ringfire.ckks),
// key generation and encryption.
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstring>

#include "common.h"
#include "ringfire/base/queue.h"
#include "ringfire/rlwe/chacha20.h"
#include "ringfire/rlwe/encryptor.h"
#include "ringfire/rlwe/evaluator.h"
#include "ringfire/rlwe/key_derivation.h"
#include "ringfire/rlwe/keygen.h"
#include "ringfire/rlwe/lwe_packing.h"
#include "ringfire/rlwe/sampling.h"
#include "ringfire/rlwe/subring.h"
#include "ringfire/ring/backend.h"
#include "ringfire/rlwe/security.h"

namespace ringfire::python {

namespace {

Seed seed_from_bytes(const nb::bytes& data) {
  require(data.size() == 32, "rlwe.Prng", "a seed is exactly 32 bytes, got " + std::to_string(data.size()));
  Seed seed;
  std::memcpy(seed.data(), data.c_str(), 32);
  return seed;
}

// Polynomials of a ciphertext as a (size, level+1, N) uint64 array (a copy).
U64Array ciphertext_array(const Ciphertext& c) {
  require(c.device().is_host(), "rlwe.Ciphertext.polys",
          "the ciphertext lives on '" + c.device().str() + "': copy it to the host first (.to('cpu'))");
  U64Array out = new_array({c.size(), c.level() + 1, c.n()});
  std::memcpy(out.data(), c.data(), c.size() * c.poly_words() * 8);
  return out;
}

// The ciphertext's polynomials in coefficient form, [size][limb][n]: what a
// conversion to another scheme reads (the ring's NTT on the host).
U64Array ciphertext_coefficients(const Ciphertext& c) {
  require(c.device().is_host(), "rlwe.Ciphertext.coefficients",
          "the ciphertext lives on '" + c.device().str() + "': copy it to the host first (.to('cpu'))");
  require(c.form() == Form::eval, "rlwe.Ciphertext.coefficients", "expected a ciphertext in evaluation form");
  U64Array out = new_array({c.size(), c.level() + 1, c.n()});
  std::memcpy(out.data(), c.data(), c.size() * c.poly_words() * 8);
  nb::gil_scoped_release release;
  backend_for(Device::cpu()).ntt_inverse(out.data(), c.size(), c.base());
  return out;
}

// BGV/BFV metadata with a correction factor (the way back from FHEW writes c = 1).
Metadata with_correction(std::uint64_t correction) {
  Metadata meta;
  meta.correction = correction;
  return meta;
}

// The (count, n + 1) array of LWE words handed to `embed` (embed_lwe or embed_torus_lwe)
// with the GIL released.
template <class Word, class Embed>
std::vector<Ciphertext> embed_lwe_array(const nb::ndarray<const Word, nb::numpy, nb::c_contig, nb::device::cpu>& words,
                                        Embed embed) {
  require(words.ndim() == 2 && words.shape(1) >= 3, "rlwe.embed_lwe",
          std::string("LWE ciphertexts as a (count, n + 1) ") + (sizeof(Word) == 8 ? "uint64" : "uint32") + " array");
  const std::size_t count = words.shape(0), n = words.shape(1) - 1;
  nb::gil_scoped_release release;
  return embed(words.data(), count, n);
}

// x.to(device), issued on `queue` (0: the device's default queue).
template <class T>
T move_to(const T& x, const std::string& device, std::uint64_t queue) {
  const Device target = Device::parse(device);
  nb::gil_scoped_release release;
  const QueueScope scope(static_cast<QueueHandle>(queue));
  return x.to(target);
}

template <class T>
std::string device_of(const T& x) {
  return x.device().str();
}

constexpr const char* kMappedDoc =
    "Whether the key views a mapped key image (Context.map_keys) instead of this process's memory.";
constexpr const char* kExpandDoc =
    "Expands the seeded half of every switching key now (all in parallel); otherwise each key expands the "
    "first time it is used. Keys made by keygen or loaded from seeded bytes hold half their memory until then.";

constexpr const char* kToDoc =
    "A copy on `device` ('cpu', 'cuda', 'cuda:N'), issued on the queue handle `queue` (0: the device's default "
    "stream). Uploads return at once; a download to 'cpu' waits for the device (a sync point).";

}  // namespace

void bind_rlwe(nb::module_& m) {
  m.def("max_log_qp", [](std::size_t n, int security) { return max_log_qp(n, security); }, nb::arg("poly_degree"),
        nb::arg("security"));

  nb::class_<Parameters>(m, "Parameters")
      .def(nb::new_([](std::size_t n, const std::vector<int>& q_bits, const std::vector<int>& p_bits,
                       std::size_t dnum, int security, int scale_bits, bool insecure_no_security_check,
                       std::size_t reserved_levels, const std::string& scheme, u64 plain_modulus, int plain_bits,
                       int special_prime_bits, const std::vector<u64>& q_primes,
                       const std::vector<u64>& p_primes) {
             ParameterLiteral lit;
             lit.q_primes = q_primes;  // explicit primes: the bit sizes are then ignored
             lit.p_primes = p_primes;
             lit.special_prime_bits = special_prime_bits;
             lit.scheme = scheme == "ckks"  ? Scheme::ckks
                          : scheme == "bgv" ? Scheme::bgv
                          : scheme == "bfv" ? Scheme::bfv
                                            : throw InvalidArgument(tagged_message(
                                                  "rlwe.Parameters", "unknown scheme '" + scheme + "'"));
             lit.plain_modulus = plain_modulus;
             lit.plain_bits = plain_bits;
             lit.poly_degree = n;
             lit.q_bits = q_bits;
             lit.p_bits = p_bits;
             lit.dnum = dnum;
             lit.security = security;
             lit.scale_bits = scale_bits;
             lit.insecure_no_security_check = insecure_no_security_check;
             lit.reserved_levels = reserved_levels;
             return Parameters(lit);
           }),
           nb::arg("poly_degree"), nb::arg("q_bits"), nb::arg("p_bits"), nb::arg("dnum"), nb::arg("security"),
           nb::arg("scale_bits"), nb::arg("insecure_no_security_check") = false, nb::arg("reserved_levels") = 0,
           nb::arg("scheme") = "ckks", nb::arg("plain_modulus") = 0, nb::arg("plain_bits") = 0,
           nb::arg("special_prime_bits") = 0, nb::arg("q_primes") = std::vector<u64>{},
           nb::arg("p_primes") = std::vector<u64>{})
      .def_prop_ro("scheme", [](const Parameters& p) { return std::string(scheme_name(p.scheme())); })
      .def_prop_ro("plain_modulus", &Parameters::plain_modulus)
      .def_prop_ro("poly_degree", &Parameters::n)
      .def_prop_ro("q_primes", &Parameters::q_primes)
      .def_prop_ro("p_primes", &Parameters::p_primes)
      .def_prop_ro("max_level", &Parameters::max_level)
      .def_prop_ro("reserved_levels", &Parameters::reserved_levels)
      .def_prop_ro("user_max_level", &Parameters::user_max_level)
      .def_prop_ro("dnum", &Parameters::dnum)
      .def_prop_ro("alpha", &Parameters::alpha)
      .def_prop_ro("security", &Parameters::security)
      .def_prop_ro("scale_bits", &Parameters::scale_bits)
      .def_prop_ro("log_qp", &Parameters::log_qp)
      .def_prop_ro("fingerprint", &Parameters::fingerprint)
      .def_prop_ro(
          "identity",
          [](const Parameters& p) { return nb::bytes(reinterpret_cast<const char*>(p.identity().data()), 32); },
          "SHA-256 of the parameters: what serialized objects (format 3) carry")
      .def_prop_ro("legacy_fingerprint", &Parameters::legacy_fingerprint,
                   "The FNV-1a digest that format versions 1 and 2 stored")
      .def_prop_ro("shape_note", &Parameters::shape_note)
      .def("describe", &Parameters::describe)
      .def("__repr__", [](const Parameters& p) { return "Parameters(" + p.describe() + ")"; });

  m.attr("BROADCAST_LENGTH") = kBroadcastLength;

  nb::class_<Prng>(m, "Prng")
      .def_static("from_os", &Prng::from_os)
      .def_static("from_seed", [](const nb::bytes& seed) { return Prng::from_seed(seed_from_bytes(seed)); })
      .def_prop_ro("deterministic", &Prng::deterministic)
      .def("next_u64", &Prng::next_u64)
      .def("uniform_below", &Prng::uniform_below, nb::arg("bound"))
      .def(
          "uniform_below_many",
          [](Prng& p, std::uint64_t bound, std::size_t count) {
            U64Array out = new_array({count});
            u64* data = out.data();
            {
              nb::gil_scoped_release release;
              p.uniform_below_many(bound, data, count);
            }
            return out;
          },
          nb::arg("bound"), nb::arg("count"),
          "`count` values of uniform_below(bound), as a NumPy array (the same values and stream position)")
      .def(
          "gaussian_many",
          [](Prng& p, std::size_t count, double sigma) {
            U64Array out = new_array({count});
            {
              nb::gil_scoped_release release;
              sample_gaussian(p, reinterpret_cast<std::int64_t*>(out.data()), count, sigma);
            }
            return out;
          },
          nb::arg("count"), nb::arg("sigma") = kDefaultGaussianSigma,
          "`count` discrete Gaussian samples (rlwe/sampling.h) as two's-complement words: view them as int64")
      .def("bytes", [](Prng& p, std::size_t n) {
        std::vector<std::uint8_t> out(n);
        p.fill(out.data(), n);
        return nb::bytes(reinterpret_cast<const char*>(out.data()), n);
      });
  m.def("chacha20_block", [](const nb::bytes& key, const nb::bytes& nonce, std::uint32_t counter) {
    require(key.size() == 32 && nonce.size() == 12, "rlwe.chacha20", "key is 32 bytes and nonce 12");
    std::array<std::uint8_t, 32> k;
    std::array<std::uint8_t, 12> n;
    std::memcpy(k.data(), key.c_str(), 32);
    std::memcpy(n.data(), nonce.c_str(), 12);
    std::array<std::uint8_t, 64> block;
    chacha20_block(k, counter, n, block.data());
    return nb::bytes(reinterpret_cast<const char*>(block.data()), 64);
  });

  nb::class_<Ciphertext>(m, "Ciphertext")
      .def_prop_ro("size", &Ciphertext::size)
      .def_prop_ro("level", &Ciphertext::level)
      .def_prop_ro("scale", &Ciphertext::scale)
      .def_prop_ro("fingerprint", &Ciphertext::fingerprint)
      .def_prop_ro("seeded", [](const Ciphertext& c) { return c.seed().has_value(); })
      .def_prop_rw("noise_bits", &Ciphertext::noise_bits, &Ciphertext::set_noise_bits)
      .def_prop_ro("is_complex", &Ciphertext::is_complex)
      .def_prop_ro("correction", [](const Ciphertext& c) { return c.metadata().correction; })
      .def_prop_rw("length", &Ciphertext::length, &Ciphertext::set_length)
      .def("polys", &ciphertext_array)
      .def(
          "view",
          [](nb::handle self) {
            const Ciphertext& c = nb::cast<const Ciphertext&>(self);
            require(c.device().is_host(), "rlwe.Ciphertext.view", "the ciphertext lives on a device: copy it first");
            const std::size_t shape[3] = {c.size(), c.level() + 1, c.n()};
            return ConstU64Array(c.data(), 3, shape, self);
          },
          "The polynomials as a read-only (size, level+1, N) array over the ciphertext's own words (no "
          "copy; it keeps the ciphertext alive): for reading many large ciphertexts at once")
      .def(
          "writable_view",
          [](nb::handle self) {
            Ciphertext& c = nb::cast<Ciphertext&>(self);
            require(c.device().is_host(), "rlwe.Ciphertext.writable_view",
                    "the ciphertext lives on a device: copy it first");
            c.set_seed(std::nullopt);  // its words are about to change: no seed regenerates them
            const std::size_t shape[3] = {c.size(), c.level() + 1, c.n()};
            return U64Array(c.data(), 3, shape, self);
          },
          "As view(), writable: for filling a fresh clone with sums computed outside the library, "
          "limb by limb. Whoever writes keeps every word of limb i below its prime.")
      .def("coefficients", &ciphertext_coefficients)
      .def("clone", &Ciphertext::clone)
      .def_prop_ro("device", &device_of<Ciphertext>)
      .def("to", &move_to<Ciphertext>, nb::arg("device"), nb::arg("queue") = 0, kToDoc);
  nb::class_<Plaintext>(m, "Plaintext")
      .def_prop_ro("level", &Plaintext::level)
      .def_prop_ro("scale", &Plaintext::scale)
      .def_prop_ro("fingerprint", &Plaintext::fingerprint)
      .def_prop_ro("is_scalar", &Plaintext::is_scalar)
      .def_prop_ro("is_complex", &Plaintext::is_complex)
      .def_prop_ro("correction", [](const Plaintext& p) { return p.metadata().correction; })
      .def_prop_rw("length", &Plaintext::length, &Plaintext::set_length)
      .def_prop_ro("device", &device_of<Plaintext>)
      .def("to", &move_to<Plaintext>, nb::arg("device"), nb::arg("queue") = 0, kToDoc);
  nb::class_<SecretKey>(m, "SecretKey")
      .def_prop_ro("fingerprint", &SecretKey::fingerprint)
      .def("coefficients", [](const SecretKey& k) {
        std::vector<int> out(k.coefficients().begin(), k.coefficients().end());
        return out;
      });
  nb::class_<PublicKey>(m, "PublicKey")
      .def_prop_ro("fingerprint", &PublicKey::fingerprint)
      .def_prop_ro("device", &device_of<PublicKey>)
      .def("to", &move_to<PublicKey>, nb::arg("device"), nb::arg("queue") = 0, kToDoc);
  nb::class_<RelinKey>(m, "RelinKey")
      .def_prop_ro("fingerprint", &RelinKey::fingerprint)
      .def_prop_ro("level", [](const RelinKey& k) { return k.key().level(); })
      .def_prop_ro("nbytes", [](const RelinKey& k) { return k.key().bytes(); })
      .def_prop_ro("expanded", [](const RelinKey& k) { return k.key().expanded(); })
      .def_prop_ro("mapped", [](const RelinKey& k) { return k.key().mapped(); }, kMappedDoc)
      .def(
          "expand",
          [](const RelinKey& k) {
            nb::gil_scoped_release release;
            k.key().expand();
          },
          kExpandDoc)
      .def_prop_ro("device", &device_of<RelinKey>)
      .def("to", &move_to<RelinKey>, nb::arg("device"), nb::arg("queue") = 0, kToDoc);
  // Host-only: the way back that uses it runs the small ring on the host (rlwe/subring.h).
  nb::class_<EmbeddingKey>(m, "EmbeddingKey")
      .def_prop_ro("fingerprint", &EmbeddingKey::fingerprint)
      .def_prop_ro("level", [](const EmbeddingKey& k) { return k.key().level(); })
      .def_prop_ro("nbytes", [](const EmbeddingKey& k) { return k.key().bytes(); })
      .def_prop_ro("subring_degree", &EmbeddingKey::subring_degree)
      .def_prop_ro("device", &device_of<EmbeddingKey>);
  nb::class_<GaloisKeys>(m, "GaloisKeys")
      .def_prop_ro("fingerprint", &GaloisKeys::fingerprint)
      .def_prop_ro("device", &device_of<GaloisKeys>)
      .def("to", &move_to<GaloisKeys>, nb::arg("device"), nb::arg("queue") = 0, kToDoc)
      .def(
          "expand",
          [](const GaloisKeys& k) {
            nb::gil_scoped_release release;
            k.expand();
          },
          kExpandDoc)
      .def("elements", &GaloisKeys::elements)
      .def("__len__", &GaloisKeys::size)
      .def("has", &GaloisKeys::has, nb::arg("galois_element"))
      .def_prop_ro("nbytes", &GaloisKeys::bytes)
      .def_prop_ro(
          "mapped",
          [](const GaloisKeys& k) {
            const std::vector<u64> elements = k.elements();
            return !elements.empty() &&
                   std::all_of(elements.begin(), elements.end(), [&](u64 g) { return k.get(g).mapped(); });
          },
          kMappedDoc)
      .def("level", [](const GaloisKeys& k, u64 g) { return k.get(g).level(); }, nb::arg("galois_element"));

  // The scheme-neutral operations (the scheme evaluators derive from it).
  using Release = nb::call_guard<nb::gil_scoped_release>;
  nb::class_<RlweEvaluator>(m, "RlweEvaluator")
      .def("relinearize", &RlweEvaluator::relinearize, Release())
      .def("relinearize_inplace", &RlweEvaluator::relinearize_inplace, Release())
      .def("mod_switch",
           nb::overload_cast<const Ciphertext&, std::size_t>(&RlweEvaluator::mod_switch, nb::const_), Release())
      .def("mod_switch_inplace", &RlweEvaluator::mod_switch_inplace, Release())
      .def("mod_switch_plain",
           nb::overload_cast<const Plaintext&, std::size_t>(&RlweEvaluator::mod_switch, nb::const_), Release())
      .def("rotate", &RlweEvaluator::rotate, Release())
      .def("rotate_inplace", &RlweEvaluator::rotate_inplace, Release())
      .def("rotation_plan", &RlweEvaluator::rotation_plan)
      .def("rotate_many", &RlweEvaluator::rotate_many, Release())
      .def("apply_galois", &RlweEvaluator::apply_galois, Release())
      // The switch from an embedded subring secret to the ring's own (embed_in_ring's results).
      .def(
          "switch_key",
          [](const RlweEvaluator& ev, const Ciphertext& a, const EmbeddingKey& key) {
            return ev.switch_key(a, key.key());
          },
          Release());
  m.def("embed_in_ring", &embed_in_ring, nb::arg("ciphertext"), nb::arg("target"), Release());
  // The way back from FHEW into BGV/BFV (rlwe/lwe_packing.h).
  m.def(
      "embed_lwe",
      [](const nb::ndarray<const std::uint32_t, nb::numpy, nb::c_contig, nb::device::cpu>& words, std::uint64_t modulus,
         const RlweContextPtr& target, std::size_t level, std::uint64_t correction, std::uint64_t divisor,
         double noise_bits) {
        return embed_lwe_array(words, [&](const std::uint32_t* w, std::size_t count, std::size_t n) {
          return embed_lwe(w, count, n, modulus, target, level, with_correction(correction), divisor, noise_bits);
        });
      },
      nb::arg("words"), nb::arg("modulus"), nb::arg("target"), nb::arg("level"), nb::arg("correction"),
      nb::arg("divisor"), nb::arg("noise_bits"));
  m.def(
      "embed_torus_lwe",
      [](const nb::ndarray<const std::uint64_t, nb::numpy, nb::c_contig, nb::device::cpu>& words,
         const RlweContextPtr& target, std::size_t level, std::uint64_t correction, std::uint64_t divisor,
         double noise_bits) {
        return embed_lwe_array(words, [&](const std::uint64_t* w, std::size_t count, std::size_t n) {
          return embed_torus_lwe(w, count, n, target, level, with_correction(correction), divisor, noise_bits);
        });
      },
      nb::arg("words"), nb::arg("target"), nb::arg("level"), nb::arg("correction"), nb::arg("divisor"),
      nb::arg("noise_bits"), "embed_lwe for 64-bit words mod 2^64 (the torus sets)");
  m.def("multiply_by_monomial", &multiply_by_monomial, nb::arg("ciphertext"), nb::arg("power"), Release());
  m.def(
      "generate_embedding_key_from_coefficients",
      [](const SecretKey& secret, const nb::ndarray<const std::int8_t, nb::numpy, nb::c_contig, nb::device::cpu>&
                                      subring_secret,
         std::size_t level, Prng& parent) {
        require(subring_secret.ndim() == 1, "rlwe.EmbeddingKey", "a subring secret is a 1-D int8 array");
        std::vector<std::int8_t> coefficients(subring_secret.data(), subring_secret.data() + subring_secret.size());
        struct Wipe {  // the copy of the secret goes, whether the key is made or refused
          std::vector<std::int8_t>& words;
          ~Wipe() { secure_zero(words.data(), words.size()); }
        } wipe{coefficients};
        Prng prng = Prng::from_seed(parent.next_seed());
        nb::gil_scoped_release release;
        return generate_embedding_key(secret, coefficients, level, prng);
      },
      nb::arg("secret_key"), nb::arg("subring_secret"), nb::arg("level"), nb::arg("prng"),
      "`subring_secret`: its coefficients as an int8 array (FHEW's ring secret; the caller wipes it)");
  m.def(
      "generate_embedding_key",
      [](const SecretKey& secret, const SecretKey& subring_secret, std::size_t level, Prng& parent) {
        Prng prng = Prng::from_seed(parent.next_seed());
        nb::gil_scoped_release release;
        return generate_embedding_key(secret, subring_secret, level, prng);
      },
      nb::arg("secret_key"), nb::arg("subring_secret_key"), nb::arg("level"), nb::arg("prng"));

  // Key generation and encryption take a parent Prng (held under the GIL)
  // and run on a child generator with the GIL released.
  m.def("generate_secret_key", [](const RlweContextPtr& ctx, Prng& parent) {
    Prng prng = Prng::from_seed(parent.next_seed());
    nb::gil_scoped_release release;
    return generate_secret_key(ctx, prng);
  });
  m.def("generate_public_key", [](const SecretKey& sk, Prng& parent) {
    Prng prng = Prng::from_seed(parent.next_seed());
    nb::gil_scoped_release release;
    return generate_public_key(sk, prng);
  });
  m.def("generate_relin_key", [](const SecretKey& sk, Prng& parent) {
    Prng prng = Prng::from_seed(parent.next_seed());
    nb::gil_scoped_release release;
    return generate_relin_key(sk, prng);
  });
  m.def(
      "generate_galois_keys",
      [](const SecretKey& sk, const std::vector<u64>& elements, Prng& parent, std::optional<std::size_t> level) {
        Prng prng = Prng::from_seed(parent.next_seed());
        nb::gil_scoped_release release;
        return generate_galois_keys(sk, elements, prng, level.value_or(sk.context()->max_level()));
      },
      nb::arg("secret_key"), nb::arg("elements"), nb::arg("prng"), nb::arg("level") = nb::none());
  nb::class_<MasterKeys>(m, "MasterKeys")
      .def_prop_ro("fingerprint", [](const MasterKeys& k) { return k.context->fingerprint(); })
      .def_prop_ro("level", [](const MasterKeys& k) { return k.level; })
      .def_prop_ro("nbytes", &MasterKeys::bytes)
      .def_prop_ro("device", [](const MasterKeys&) { return std::string("cpu"); })
      .def("elements", [](const MasterKeys& k) { return k.keys.elements(); })
      .def("__len__", [](const MasterKeys& k) { return k.keys.size(); })
      .def("describe_derivation", [](const MasterKeys& k) { return k.derivation->params().describe(); });
  m.def(
      "generate_master_keys",
      [](const SecretKey& sk, std::size_t level, bool conjugate, Prng& parent) {
        Prng prng = Prng::from_seed(parent.next_seed());
        nb::gil_scoped_release release;
        return generate_master_keys(sk, level, conjugate, prng);
      },
      nb::arg("secret_key"), nb::arg("level"), nb::arg("conjugate"), nb::arg("prng"));
  m.def("derive_galois_keys", &derive_galois_keys, nb::arg("masters"), nb::arg("elements"),
        nb::call_guard<nb::gil_scoped_release>());
  m.def("highest_derivation_level", &highest_derivation_level, nb::arg("context"));
  m.def(
      "derivation_parameters",
      [](const RlweContext& ctx, std::size_t level) { return derivation_context(ctx, level)->params(); },
      nb::arg("context"), nb::arg("level"));
  m.def("encrypt_public", [](const PublicKey& pk, const Plaintext& pt, Prng& parent) {
    Prng prng = Prng::from_seed(parent.next_seed());
    nb::gil_scoped_release release;
    return encrypt_public(pk, pt, prng);
  });
  m.def("encrypt_secret", [](const SecretKey& sk, const Plaintext& pt, Prng& parent) {
    Prng prng = Prng::from_seed(parent.next_seed());
    nb::gil_scoped_release release;
    return encrypt_secret(sk, pt, prng);
  });
}

}  // namespace ringfire::python
