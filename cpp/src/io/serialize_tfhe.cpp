#include "ringfire/io/serialize_tfhe.h"

#include <algorithm>
#include <bit>
#include <string>

#include "envelope.h"

namespace ringfire::io {

namespace {

using detail::Envelope;
using tfhe::u32;

constexpr std::size_t kSeedBytes = 32;

std::size_t bootstrap_body_words(const tfhe::Params& p) {
  if (p.uses_automorphisms()) return tfhe::AutomorphismKey::body_words(p);
  return p.lwe_dimension * 2 * (2 * p.gadget_digits) * p.ring_dimension;
}
std::size_t key_switch_entries(const tfhe::Params& p) {
  return p.ring_dimension * p.ks_digits * ((std::size_t{1} << p.ks_base_log) - 1);
}
// Key-switching bodies travel as u16 up to Q_ks = 2^16, as u32 above.
std::size_t key_switch_word_bytes(const tfhe::Params& p) { return p.ks_modulus > (1u << 16) ? 4 : 2; }

Envelope open_tfhe(Kind kind, const tfhe::Params& params, const std::uint8_t* data, std::size_t size) {
  params.validate();
  Envelope e = detail::open(data, size);
  require(e.kind == kind, "io.load", std::string("expected a ") + kind_name(kind) + ", got a " + kind_name(e.kind));
  require(e.version >= 4 && e.identity == params.identity(), "io.load",
          std::string("this ") + kind_name(kind) + " was made under different tfhe parameters (identity mismatch)");
  return e;
}

Prng::Seed read_seed(Reader& r, const char* what) {
  Prng::Seed seed;
  r.raw(seed.data(), seed.size(), what);
  return seed;
}

}  // namespace

Bytes save(const tfhe::Bootstrapper& keys) {
  const tfhe::Params& p = keys.params();
  const std::vector<u32> bodies = keys.blind_rotation_bodies();
  const std::vector<u32> ks = keys.key_switch_key().bodies();
  const std::size_t ks_word = key_switch_word_bytes(p);
  Writer w = detail::start(Kind::tfhe_evaluation_keys, p.identity(),
                           2 * kSeedBytes + bodies.size() * 4 + ks.size() * ks_word);
  w.raw(keys.blind_rotation_seed().data(), kSeedBytes);
  for (u32 v : bodies) w.u32(v);
  w.raw(keys.key_switch_key().seed().data(), kSeedBytes);
  for (u32 v : ks) {
    if (ks_word == 2) w.u16(static_cast<std::uint16_t>(v));
    else w.u32(v);
  }
  return detail::seal(w);
}

std::unique_ptr<tfhe::Bootstrapper> load_tfhe_evaluation_keys(const tfhe::Params& params, const std::uint8_t* data,
                                                               std::size_t size, tfhe::Isa isa) {
  const Envelope e = open_tfhe(Kind::tfhe_evaluation_keys, params, data, size);
  const std::size_t words = bootstrap_body_words(params), entries = key_switch_entries(params);
  const std::size_t ks_word = key_switch_word_bytes(params);
  const std::size_t expected = 2 * kSeedBytes + words * 4 + entries * ks_word;
  require(e.payload_size == expected, "io.load",
          "tfhe evaluation keys: the payload has " + std::to_string(e.payload_size) + " bytes, these parameters need " +
              std::to_string(expected));
  Reader r(e.payload, e.payload_size);
  const Prng::Seed bsk_seed = read_seed(r, "the bootstrapping-key seed");
  std::vector<u32> bodies(words);
  for (auto& v : bodies) v = r.u32("a bootstrapping-key body");
  const Prng::Seed ksk_seed = read_seed(r, "the key-switching seed");
  std::vector<u32> ks(entries);
  for (auto& v : ks) v = ks_word == 2 ? r.u16("a key-switching body") : r.u32("a key-switching body");
  auto ntt = tfhe::Bootstrapper::make_ntt(params, isa);
  auto ksk = std::make_unique<tfhe::KeySwitchKey>(params, ksk_seed, ks.data());
  if (params.uses_automorphisms()) {
    auto bsk = std::make_unique<tfhe::AutomorphismKey>(params, *ntt, bsk_seed, bodies.data());
    return std::make_unique<tfhe::Bootstrapper>(params, std::move(bsk), std::move(ksk), isa);
  }
  auto bsk = std::make_unique<tfhe::BootstrapKey>(params, *ntt, bsk_seed, bodies.data());
  return std::make_unique<tfhe::Bootstrapper>(params, std::move(bsk), std::move(ksk), isa);
}

Bytes save(const tfhe::Params& params, const TfheCiphertexts& cts) {
  params.validate();
  const std::size_t width = params.lwe_dimension + 1;
  require(cts.shape.size() <= 8 && cts.words.size() % width == 0 && cts.encoding <= 2, "io.save",
          "tfhe ciphertexts: malformed (shape, encoding or word count)");
  std::uint64_t elements = 1;
  for (std::uint64_t d : cts.shape) elements *= d;
  require(cts.words.size() / width == elements * (cts.encoding == 2 ? cts.bits : 1) &&
              (cts.encoding == 0) == (cts.bits == 0),
          "io.save", "tfhe ciphertexts: the count does not match the shape, encoding and bits");
  for (u32 v : cts.words)
    require(v < params.lwe_modulus(), "io.save", "tfhe ciphertexts: a word is not below q");
  Writer w = detail::start(Kind::tfhe_ciphertexts, params.identity(), 19 + 8 * cts.shape.size() + cts.words.size() * 2);
  w.u8(cts.encoding);
  w.u8(cts.bits);
  w.u8(static_cast<std::uint8_t>(cts.shape.size()));
  for (std::uint64_t d : cts.shape) w.u64(d);
  w.u64(cts.words.size() / width);
  for (u32 v : cts.words) w.u16(static_cast<std::uint16_t>(v));
  return detail::seal(w);
}

TfheCiphertexts load_tfhe_ciphertexts(const tfhe::Params& params, const std::uint8_t* data, std::size_t size) {
  const Envelope e = open_tfhe(Kind::tfhe_ciphertexts, params, data, size);
  Reader r(e.payload, e.payload_size);
  TfheCiphertexts out;
  out.encoding = r.u8("the encoding");
  out.bits = r.u8("the bits");
  const std::uint8_t ndim = r.u8("the number of dimensions");
  require(out.encoding <= 2, "io.load", "tfhe ciphertexts: unknown encoding " + std::to_string(out.encoding));
  const unsigned log_n = static_cast<unsigned>(std::bit_width(params.ring_dimension) - 1);
  const bool bits_ok = out.encoding == 0 ? out.bits == 0
                       : out.encoding == 1 ? out.bits >= 1 && out.bits + 1u <= log_n
                                           : out.bits >= 1 && out.bits <= 64;
  require(bits_ok, "io.load", "tfhe ciphertexts: " + std::to_string(out.bits) + " bits do not fit encoding " +
                                  std::to_string(out.encoding));
  require(ndim <= 8, "io.load", "tfhe ciphertexts: " + std::to_string(ndim) + " dimensions (at most 8)");
  const std::size_t width = params.lwe_dimension + 1;
  // The element count, capped by what the payload can hold (no overflow).
  const std::uint64_t cap = r.remaining() / (2 * width) + 1;
  std::uint64_t elements = 1;
  for (std::uint8_t d = 0; d < ndim; ++d) {
    const std::uint64_t dim = r.u64("a dimension");
    require(dim <= cap && elements * std::max<std::uint64_t>(dim, 1) <= cap, "io.load",
            "tfhe ciphertexts: the shape is larger than the data");
    out.shape.push_back(dim);
    elements *= dim;
  }
  const std::uint64_t count = r.u64("the count");
  const std::uint64_t expected = elements * (out.encoding == 2 ? out.bits : 1);
  require(count == expected, "io.load",
          "tfhe ciphertexts: " + std::to_string(count) + " ciphertexts for a shape of " + std::to_string(expected));
  require(r.remaining() == count * width * 2, "io.load",
          "tfhe ciphertexts: the payload holds " + std::to_string(r.remaining()) + " bytes of words, " +
              std::to_string(count * width * 2) + " expected");
  out.words.resize(count * width);
  const u32 q = params.lwe_modulus();
  for (auto& v : out.words) {
    v = r.u16("a ciphertext word");
    require(v < q, "io.load", [&] { return "tfhe ciphertexts: a word is not below q=" + std::to_string(q); });
  }
  return out;
}

}  // namespace ringfire::io
