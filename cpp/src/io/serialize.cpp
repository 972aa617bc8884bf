#include "ringfire/io/serialize.h"

#include "envelope.h"

#include <algorithm>
#include <cmath>

#include "ringfire/arith/modular.h"
#include "ringfire/io/byte_io.h"
#include "ringfire/io/checksum.h"
#include "ringfire/rlwe/keygen.h"
#include "ringfire/rlwe/noise.h"

namespace ringfire::io {

namespace detail {

constexpr char kMagic[4] = {'R', 'F', 'H', 'E'};

// The trailing checksum: XXH64 from version 4, FNV-1a before.
std::uint64_t envelope_checksum(std::uint16_t version, const std::uint8_t* data, std::size_t size) {
  return version >= 4 ? checksum64(data, size) : fnv1a64(data, size);
}

void write_header(Writer& out, Kind kind, const Sha256Digest& identity, std::uint64_t payload_length) {
  out.raw(kMagic, 4);
  out.u16(kFormatVersion);
  out.u16(static_cast<std::uint16_t>(kind));
  out.raw(identity.data(), identity.size());
  out.u64(payload_length);
}

std::uint64_t read_le64(const std::uint8_t* bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(bytes[i]) << (8 * i);
  return v;
}

Writer start(Kind kind, const Sha256Digest& identity, std::size_t payload_bytes_hint) {
  Writer out;
  out.reserve(header_bytes(kFormatVersion) + payload_bytes_hint + 8);
  write_header(out, kind, identity, 0);  // the payload length, known at seal()
  return out;
}

Bytes seal(Writer& out) {
  constexpr std::size_t header = header_bytes(kFormatVersion);
  Bytes& b = out.bytes();
  const std::uint64_t length = b.size() - header;
  for (int i = 0; i < 8; ++i) b[header - 8 + i] = static_cast<std::uint8_t>(length >> (8 * i));
  out.u64(envelope_checksum(kFormatVersion, b.data(), b.size()));
  return std::move(b);
}

bool Header::made_under(const Parameters& params) const {
  return version >= 3 ? identity == params.identity() : legacy_fingerprint == params.legacy_fingerprint();
}

Header read_header(Reader& r, std::size_t size) {
  char magic[4];
  r.raw(magic, 4, "the magic bytes");
  require(std::equal(magic, magic + 4, kMagic), "io.load", "not a ringfire object (bad magic bytes)");
  const std::uint16_t version = r.u16("the version");
  require(version >= kOldestReadableVersion && version <= kFormatVersion, "io.load",
          "unsupported format version " + std::to_string(version) + " (this build reads versions " +
              std::to_string(kOldestReadableVersion) + " to " + std::to_string(kFormatVersion) +
              (version > kFormatVersion ? "; it was written by a newer ringfire" : "") + ")");
  const std::uint16_t kind = r.u16("the kind");
  require(kind >= 1 && kind <= kLastKind, "io.load", "unknown object kind " + std::to_string(kind));
  Header h{static_cast<Kind>(kind), version, {}, 0, 0};
  if (version >= 3) r.raw(h.identity.data(), h.identity.size(), "the parameter identity");
  else h.legacy_fingerprint = r.u64("the fingerprint");
  h.length = r.u64("the payload length");
  const std::size_t framing = header_bytes(version) + 8;
  require(h.length == size - std::min(size, framing) && size >= framing, "io.load",
          "truncated or padded: the header declares " + std::to_string(h.length) + " payload bytes, the input has " +
              std::to_string(size < framing ? 0 : size - framing));
  return h;
}

Envelope open(const std::uint8_t* data, std::size_t size) {
  require(data != nullptr || size == 0, "io.load", "no data");
  Reader r(data, size);
  const Header h = read_header(r, size);
  require(envelope_checksum(h.version, data, size - 8) == read_le64(data + size - 8), "io.load",
          "checksum mismatch: the data is corrupted");
  return {h, data + header_bytes(h.version), static_cast<std::size_t>(h.length)};
}

}  // namespace detail

namespace {

using namespace detail;

constexpr std::size_t kMaxCiphertextSize = 16;

void write_header(Writer& out, Kind kind, const Parameters& params, std::uint64_t payload_length) {
  detail::write_header(out, kind, params.identity(), payload_length);
}

Writer start(Kind kind, const Parameters& params, std::size_t payload_bytes_hint = 0) {
  return detail::start(kind, params.identity(), payload_bytes_hint);
}

// "a relinearization key", "an embedding key".
std::string with_article(Kind kind) {
  const std::string name = kind_name(kind);
  return (name.find_first_of("aeiou") == 0 ? "an " : "a ") + name;
}

// The object is the kind expected, made under `ctx`'s parameters (when given).
void expect(const Header& h, Kind expected, const RlweContext* ctx) {
  require(h.kind == expected, "io.load", "expected " + with_article(expected) + ", got " + with_article(h.kind));
  if (ctx)
    require(h.made_under(ctx->params()), "io.load",
            std::string("this ") + kind_name(h.kind) + " was made under different parameters (" +
                (h.version >= 3 ? "parameter identity" : "fingerprint") + " mismatch)");
}

Envelope open_as(Kind expected, const RlweContext* ctx, const std::uint8_t* data, std::size_t size) {
  Envelope e = open(data, size);
  expect(e, expected, ctx);
  return e;
}

// The bits format `version` stores a residue mod `q` in: 64 before version 5,
// then the prime's own (io/bit_pack.h).
unsigned stored_bits(const Modulus& q, std::uint16_t version) {
  return version >= 5 ? residue_bits(q.value()) : 64;
}

// Bytes of the first `limbs` limbs of a polynomial over `base` in format `version`.
std::size_t poly_bytes(const RnsBase& base, std::size_t limbs, std::uint16_t version = kFormatVersion) {
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < limbs; ++i) bytes += packed_bytes(base.n(), stored_bits(base.modulus(i), version));
  return bytes;
}

// The polynomial over all of `base`, limb by limb in its primes' bits.
void write_poly(Writer& w, const RnsBase& base, const u64* data) {
  const std::size_t n = base.n();
  for (std::size_t i = 0; i < base.size(); ++i) w.packed(data + i * n, n, stored_bits(base.modulus(i), kFormatVersion));
}

// Reads limbs x N residues over `base` as format `version` stores them, each
// checked below its prime.
void read_poly(Reader& r, const RnsBase& base, std::size_t limbs, u64* out, const char* what, std::uint16_t version) {
  const std::size_t n = base.n();
  r.need(poly_bytes(base, limbs, version), what);
  for (std::size_t i = 0; i < limbs; ++i)
    r.packed_residues(out + i * n, n, stored_bits(base.modulus(i), version), base.modulus(i).value(), what);
}

Seed read_seed(Reader& r) {
  Seed seed;
  r.raw(seed.data(), seed.size(), "a seed");
  return seed;
}

double log2_modulus(const RnsBase& base) {
  double bits = 0.0;
  for (const Modulus& m : base.moduli()) bits += std::log2(static_cast<double>(m.value()));
  return bits;
}

// Metadata, version 3: scale f64 | complex u8 | form u8 | correction u64 |
// length u32. Version 2 had no length (all slots); version 1 had the scale
// alone (evaluation form, real, CKKS).
void write_metadata(Writer& w, const Metadata& m) {
  w.f64(m.scale);
  w.u8(m.complex ? 1 : 0);
  w.u8(m.form == Form::eval ? 1 : 0);
  w.u64(m.correction);
  w.u32(m.length);
}

Metadata read_metadata(Reader& r, std::uint16_t version) {
  Metadata m;
  m.scale = r.f64("the scale");
  if (version < 2) return m;
  const std::uint8_t is_complex = r.u8("the complex flag"), form = r.u8("the form");
  require(is_complex <= 1, "io.load", "corrupt: bad complex flag");
  require(form <= 1, "io.load", "corrupt: bad form flag");
  m.complex = is_complex == 1;
  m.form = form == 1 ? Form::eval : Form::coeff;
  m.correction = r.u64("the correction factor");
  if (version >= 3) m.length = r.u32("the length");
  return m;
}

// Metadata that makes sense for the scheme: CKKS scales of at least `lowest`
// that leave a bit of the level's modulus for the sign (so decoding never
// divides by zero or returns values that cannot be there); BGV and BFV
// correction factors below t and invertible mod t (bgv/context.h); nothing
// else where a scheme has no such field.
void check_metadata(const Metadata& m, const RlweContext& ctx, std::size_t level, double lowest, const char* what) {
  const Parameters& params = ctx.params();
  const std::string prefix = std::string("corrupt: ") + what;
  const std::size_t slots = params.scheme() == Scheme::ckks ? ctx.n() / 2 : ctx.n();
  require(m.length <= slots || m.length == kBroadcastLength, "io.load",
          prefix + " length " + std::to_string(m.length) + " exceeds the " + std::to_string(slots) + " slots");
  if (params.scheme() == Scheme::ckks) {
    const double q_bits = log2_modulus(*ctx.level_base(level));
    require(std::isfinite(m.scale) && m.scale >= lowest && std::log2(m.scale) + 1.0 < q_bits, "io.load",
            prefix + " scale " + std::to_string(m.scale) + " is outside [" + std::to_string(lowest) + ", 2^" +
                std::to_string(static_cast<int>(q_bits) - 1) + ") at level " + std::to_string(level));
    require(m.correction == 1, "io.load", prefix + " CKKS objects have no correction factor");
    return;
  }
  require(m.scale == 1.0 && !m.complex, "io.load", prefix + " " + scheme_name(params.scheme()) + " objects have no scale");
  u64 inverse = 0;
  require(m.correction >= 1 && m.correction < params.plain_modulus() &&
              try_inv_mod(m.correction, params.plain_modulus(), inverse),
          "io.load",
          prefix + " correction factor " + std::to_string(m.correction) + " is not an invertible residue mod t");
}

// Version 2 payload of a ciphertext or public key:
//   size u32 | level u32 | metadata | noise_bits f64 | seeded u8 | [seed 32] |
//   the polynomials (c_1 omitted when seeded)
// Version 1: size | level | scale | seeded | ...
void write_ciphertext_payload(Writer& w, const Ciphertext& c) {
  w.u32(static_cast<std::uint32_t>(c.size()));
  w.u32(static_cast<std::uint32_t>(c.level()));
  write_metadata(w, c.metadata());
  // An estimate past the modulus says only that the noise may have overflowed (decryption
  // checks whether it did): written as the modulus, the largest the reader accepts, so that
  // every ciphertext that saves also loads. Below 2^-64 (the reader's floor) a norm is 0.
  const double top = log2_modulus(c.base());
  double noise_bits = c.noise_bits();
  if (!(std::isinf(noise_bits) && noise_bits < 0))  // -infinity: no noise, kept
    noise_bits = std::isnan(noise_bits) ? top : std::clamp(noise_bits, -64.0, top);
  w.f64(noise_bits);
  const bool seeded = c.seed().has_value() && c.size() == 2;
  w.u8(seeded ? 1 : 0);
  if (seeded) w.raw(c.seed()->data(), 32);
  for (std::size_t p = 0; p < c.size(); ++p)
    if (!(seeded && p == 1)) write_poly(w, c.base(), c.poly(p));
}

// What a ciphertext payload holds: a ciphertext, or a public key (a top-level
// pair of scale 1 whose noise is that of a fresh key).
enum class Holder { ciphertext, public_key };

Ciphertext read_ciphertext_payload(Reader& r, const RlweContextPtr& ctx, std::uint16_t version, Holder holder) {
  const std::uint32_t count = r.u32("the ciphertext size");
  const std::uint32_t level = r.u32("the level");
  require(count >= 1 && count <= kMaxCiphertextSize, "io.load", "corrupt: ciphertext size " + std::to_string(count));
  require(level <= ctx->max_level(), "io.load",
          "corrupt: level " + std::to_string(level) + " exceeds the maximum " + std::to_string(ctx->max_level()));
  const Metadata meta = read_metadata(r, version);
  double noise_bits = noise::add(noise::fresh_public(*ctx), noise::encoding(*ctx));  // version 1: a fresh one's
  if (version >= 2) {
    noise_bits = r.f64("the noise estimate");
    // -infinity (no noise) or a norm that fits the modulus.
    require((std::isinf(noise_bits) && noise_bits < 0) ||
                (std::isfinite(noise_bits) && noise_bits >= -64.0 &&
                 noise_bits <= log2_modulus(*ctx->level_base(level))),
            "io.load", "corrupt: the noise estimate 2^" + std::to_string(noise_bits) + " is out of range");
  }
  if (holder == Holder::public_key) {
    require(count == 2 && level == ctx->max_level() && meta == Metadata{}, "io.load",
            "corrupt: a public key is a top-level pair of scale 1 in evaluation form");
  } else {
    // A CKKS ciphertext holds at least one bit of scale; a public key (scale
    // 1) relabelled as a ciphertext is refused here.
    check_metadata(meta, *ctx, level, 2.0, "the ciphertext's");
  }
  const std::uint8_t seeded = r.u8("the seed flag");
  require(seeded <= 1 && (!seeded || count == 2), "io.load", "corrupt: bad seed flag");
  // Every stored polynomial must be present before any is allocated: memory
  // follows the input (a seed expands to one polynomial, at most doubling it).
  r.need((count - seeded) * poly_bytes(*ctx->level_base(level), level + 1, version) + (seeded ? 32 : 0),
         "the ciphertext polynomials");
  Ciphertext c(ctx, count, level, meta, Device::cpu(), kUninitialized);  // each polynomial read or expanded whole
  std::optional<Seed> seed;
  if (seeded) seed = read_seed(r);
  for (std::size_t p = 0; p < count; ++p) {
    if (seeded && p == 1) expand_uniform(*seed, c.base(), c.poly(1));
    else read_poly(r, c.base(), level + 1, c.poly(p), "a ciphertext polynomial", version);
  }
  c.set_seed(seed);
  c.set_noise_bits(noise_bits);
  return c;
}

// Version 2 payload of a switching key:
//   digits u32 | source u64 | level u32 | seeded u8 | per digit: b_j, then
//   a_j or its seed (polynomials over q_0..q_level and P)
// Version 1 had no source (it is implied by where the key is stored) and no
// level (always the top).
// The payload bytes write_switch_key makes (to reserve them at once).
std::size_t switch_key_bytes(const KeySwitchKey& k) {
  const bool seeded = k.seeds().size() == k.digits();
  const RnsBase& base = *k.context()->extended_base(k.level());
  const std::size_t poly = poly_bytes(base, base.size());
  return 17 + k.digits() * (poly + (seeded ? 32 : poly));
}

// The same for a seeded key that does not exist yet: made for `level` of `ctx`.
std::size_t seeded_switch_key_bytes(const RlweContext& ctx, std::size_t level) {
  const RnsBase& base = *ctx.extended_base(level);
  return 17 + ctx.digit_count(level) * (poly_bytes(base, base.size()) + 32);
}

std::size_t galois_payload_bytes(const GaloisKeys& keys) {
  std::size_t bytes = 4;
  for (u64 g : keys.elements()) bytes += 8 + switch_key_bytes(keys.get(g));
  return bytes;
}

void write_switch_key(Writer& w, const KeySwitchKey& k) {
  w.u32(static_cast<std::uint32_t>(k.digits()));
  w.u64(k.source());
  w.u32(static_cast<std::uint32_t>(k.level()));
  const bool seeded = k.seeds().size() == k.digits();
  w.u8(seeded ? 1 : 0);
  const RnsBase& base = *k.context()->extended_base(k.level());
  for (std::size_t j = 0; j < k.digits(); ++j) {
    write_poly(w, base, k.b(j));
    if (seeded) w.raw(k.seeds()[j].data(), 32);
    else write_poly(w, base, k.a(j));
  }
}

// What a switching key of `source` is, and what it switches from, for messages.
std::string key_role(u64 source) {
  if (source == kRelinearizationSource) return "the relinearization key";
  if (source == kEmbeddingSource) return "an embedding key";
  return "the key of Galois element " + std::to_string(source);
}

std::string key_source(u64 source) {
  if (source == kRelinearizationSource) return "s^2";
  if (source == kEmbeddingSource) return "an embedded subring secret";
  return "element " + std::to_string(source);
}

// `source`: what the key must switch from (its Galois element, or
// kRelinearizationSource); a version 2 key must say the same.
KeySwitchKey read_switch_key(Reader& r, const RlweContextPtr& ctx, std::uint16_t version, u64 source) {
  const std::uint32_t digits = r.u32("the digit count");
  std::size_t level = ctx->max_level();
  if (version >= 2) {
    const std::uint64_t stored = r.u64("the key's source");
    require(stored == source, "io.load",
            "corrupt: a key stored as " + key_role(source) + " says it switches from " + key_source(stored) +
                " (relabelled or mixed-up keys)");
    level = r.u32("the key's level");
    require(level <= ctx->max_level(), "io.load", "corrupt: key level " + std::to_string(level) + " is out of range");
  }
  const std::size_t expected = ctx->digit_count(level);
  require(digits == expected, "io.load",
          "corrupt: key has " + std::to_string(digits) + " digits, its level needs " + std::to_string(expected));
  const std::uint8_t seeded = r.u8("the seed flag");
  require(seeded <= 1, "io.load", "corrupt: bad seed flag");
  const RnsBase& base = *ctx->extended_base(level);
  // The whole key must be present before its 2 x digits polynomials are allocated.
  const std::size_t key_poly = poly_bytes(base, base.size(), version);
  r.need(digits * (key_poly + (seeded ? 32 : key_poly)), "the key polynomials");
  // A seeded key loads as one: its a_j are expanded on first use.
  KeySwitchKey k = seeded ? KeySwitchKey::seeded(ctx, source, level) : KeySwitchKey(ctx, source, level);
  for (std::size_t j = 0; j < digits; ++j) {
    read_poly(r, base, base.size(), k.b(j), "a key polynomial", version);
    if (seeded) k.seeds().push_back(read_seed(r));
    else read_poly(r, base, base.size(), k.a(j), "a key polynomial", version);
  }
  return k;
}

// Galois key set payload: count u32 | per key: element u64, switching key.
void write_galois_payload(Writer& w, const GaloisKeys& keys) {
  const std::vector<u64> elements = keys.elements();
  w.u32(static_cast<std::uint32_t>(elements.size()));
  for (u64 g : elements) {
    w.u64(g);
    write_switch_key(w, keys.get(g));
  }
}

GaloisKeys read_galois_payload(Reader& r, const RlweContextPtr& ctx, std::uint16_t version) {
  const std::uint32_t count = r.u32("the key count");
  require(count <= ctx->n(), "io.load", "corrupt: " + std::to_string(count) + " Galois keys");
  GaloisKeys keys(ctx);
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint64_t g = r.u64("a Galois element");
    require(g % 2 == 1 && g < 2 * ctx->n() && !keys.has(g), "io.load",
            "corrupt: bad or repeated Galois element " + std::to_string(g));
    keys.insert(read_switch_key(r, ctx, version, g));
  }
  return keys;
}

}  // namespace

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::parameters: return "parameters object";
    case Kind::plaintext: return "plaintext";
    case Kind::ciphertext: return "ciphertext";
    case Kind::public_key: return "public key";
    case Kind::relin_key: return "relinearization key";
    case Kind::galois_keys: return "Galois key set";
    case Kind::secret_key: return "secret key";
    case Kind::bootstrap_keys: return "bootstrap key set";
    case Kind::master_keys: return "master key set";
    case Kind::tfhe_evaluation_keys: return "tfhe evaluation key set";
    case Kind::tfhe_ciphertexts: return "tfhe ciphertext";
    case Kind::embedding_key: return "embedding key";
  }
  return "unknown object";
}

Kind peek_kind(const std::uint8_t* data, std::size_t size) { return open(data, size).kind; }

Kind envelope_kind(const std::uint8_t* data, std::size_t size) {
  require(data != nullptr || size == 0, "io.load", "no data");
  Reader r(data, size);
  return read_header(r, size).kind;
}

// ---- save ---------------------------------------------------------------------

// Version 2 payload of parameters:
//   N u64 | L+1 u32 | q primes | k u32 | p primes | dnum u32 | security u32 |
//   scale_bits u32 | scheme u8 | plain modulus u64 | reserved levels u32
// Version 1 ended after scale_bits (CKKS).
Bytes save(const Parameters& params) {
  Writer w = start(Kind::parameters, params);
  w.u64(params.n());
  w.u32(static_cast<std::uint32_t>(params.q_primes().size()));
  w.words(params.q_primes().data(), params.q_primes().size());
  w.u32(static_cast<std::uint32_t>(params.p_primes().size()));
  w.words(params.p_primes().data(), params.p_primes().size());
  w.u32(static_cast<std::uint32_t>(params.dnum()));
  w.u32(static_cast<std::uint32_t>(params.security()));
  w.u32(static_cast<std::uint32_t>(params.scale_bits()));
  w.u8(static_cast<std::uint8_t>(params.scheme()));
  w.u64(params.plain_modulus());
  w.u32(static_cast<std::uint32_t>(params.reserved_levels()));
  return seal(w);
}

namespace {
// Objects on a GPU are downloaded first: the envelope always holds host words.
bool on_host(const Device& device) { return device.is_host(); }
}  // namespace

Bytes save(const Plaintext& plain) {
  if (!on_host(plain.device())) return save(plain.to(Device::cpu()));
  Writer w = start(Kind::plaintext, plain.context()->params(), poly_bytes(plain.base(), plain.base().size()));
  w.u32(static_cast<std::uint32_t>(plain.level()));
  write_metadata(w, plain.metadata());
  w.u8(plain.is_scalar() ? 1 : 0);
  if (plain.is_scalar()) {
    w.f64(plain.scalar_value().real());
    w.f64(plain.scalar_value().imag());
    w.words(plain.scalar_residues().data(), plain.scalar_residues().size());
  } else {
    write_poly(w, plain.base(), plain.data());
  }
  return seal(w);
}

Bytes save(const Ciphertext& cipher) {
  if (!on_host(cipher.device())) return save(cipher.to(Device::cpu()));
  Writer w = start(Kind::ciphertext, cipher.context()->params(),
                   64 + cipher.size() * poly_bytes(cipher.base(), cipher.base().size()));
  write_ciphertext_payload(w, cipher);
  return seal(w);
}

namespace {

// A public key: the ciphertext payload of its part over Q, then (keys that
// reach the special primes) u8 1 | b over P | a over P unless the Q part is
// seeded (a's P limbs continue the seed's stream). Files without the tail
// hold keys over Q alone, which encrypt the older, noisier way.
void write_public_key_payload(Writer& w, const PublicKey& key) {
  write_ciphertext_payload(w, key.key());
  if (key.covers_special()) {
    const RnsBase& special = *key.key().context()->special_base();
    w.u8(1);
    write_poly(w, special, key.special(0));
    if (!key.key().seed().has_value()) write_poly(w, special, key.special(1));
  }
}

// Payload: the Galois key set's payload, then the key to the ephemeral
// sparse secret and the key back.
void write_bootstrap_payload(Writer& w, const ckks::BootstrapKeys& keys) {
  write_galois_payload(w, keys.galois);
  write_switch_key(w, keys.to_sparse);
  write_switch_key(w, keys.from_sparse);
}

// Payload: the derivation level u32, then the master keys as a Galois key
// set of that level's derivation context.
void write_master_payload(Writer& w, const MasterKeys& keys) {
  w.u32(static_cast<std::uint32_t>(keys.level));
  write_galois_payload(w, keys.keys);
}

// The envelope of a key kind, saved whole or streamed.
struct KeyKind {
  template <class T>
  static Bytes save(Kind kind, const Parameters& params, std::size_t hint, const T& key,
                    void (*payload)(Writer&, const T&)) {
    Writer w = start(kind, params, hint);
    payload(w, key);
    return seal(w);
  }

  // A counting pass sizes the payload (the header carries its length), then
  // the object streams through the sink: buffered in 1 MiB pieces, whole
  // polynomials handed over as they are, hashed on the way.
  template <class T>
  static void stream(Kind kind, const Parameters& params, const Sink& sink, const T& key,
                     void (*payload)(Writer&, const T&)) {
    Writer counter = Writer::counting();
    payload(counter, key);
    Writer w(sink);
    write_header(w, kind, params, counter.written());
    payload(w, key);
    require(w.written() == header_bytes(kFormatVersion) + counter.written(), "io.save",
            "internal: the payload changed size between its two passes");
    w.finish();  // the checksum of everything written, outside what it covers
  }
};

void write_relin_payload(Writer& w, const RelinKey& key) { write_switch_key(w, key.key()); }

// Embedding key payload: the subring's degree u32, then the switching key.
void write_embedding_payload(Writer& w, const EmbeddingKey& key) {
  w.u32(static_cast<std::uint32_t>(key.subring_degree()));
  write_switch_key(w, key.key());
}

}  // namespace

Bytes save(const PublicKey& key) {
  if (!on_host(key.device())) return save(key.to(Device::cpu()));
  return KeyKind::save(Kind::public_key, key.key().context()->params(), 4 * key.key().poly_words() * 8, key,
                       &write_public_key_payload);
}

Bytes save(const RelinKey& key) {
  if (!on_host(key.device())) return save(key.to(Device::cpu()));
  return KeyKind::save(Kind::relin_key, key.key().context()->params(), switch_key_bytes(key.key()), key,
                       &write_relin_payload);
}

Bytes save(const EmbeddingKey& key) {
  require(on_host(key.device()), "io.save", "an embedding key lives on the host");
  return KeyKind::save(Kind::embedding_key, key.key().context()->params(), 4 + switch_key_bytes(key.key()), key,
                       &write_embedding_payload);
}

Bytes save(const GaloisKeys& keys) {
  if (!on_host(keys.device())) return save(keys.to(Device::cpu()));
  return KeyKind::save(Kind::galois_keys, keys.context()->params(), galois_payload_bytes(keys), keys,
                       &write_galois_payload);
}

Bytes save(const ckks::BootstrapKeys& keys) {
  if (!on_host(keys.from_sparse.device())) return save(keys.to(Device::cpu()));
  return KeyKind::save(Kind::bootstrap_keys, keys.galois.context()->params(),
                       galois_payload_bytes(keys.galois) + switch_key_bytes(keys.to_sparse) +
                           switch_key_bytes(keys.from_sparse),
                       keys, &write_bootstrap_payload);
}

Bytes save(const MasterKeys& keys) {
  return KeyKind::save(Kind::master_keys, keys.context->params(), 4 + galois_payload_bytes(keys.keys), keys,
                       &write_master_payload);
}

void save(const PublicKey& key, const Sink& sink) {
  if (!on_host(key.device())) return save(key.to(Device::cpu()), sink);
  KeyKind::stream(Kind::public_key, key.key().context()->params(), sink, key, &write_public_key_payload);
}

void save(const RelinKey& key, const Sink& sink) {
  if (!on_host(key.device())) return save(key.to(Device::cpu()), sink);
  KeyKind::stream(Kind::relin_key, key.key().context()->params(), sink, key, &write_relin_payload);
}

void save(const GaloisKeys& keys, const Sink& sink) {
  if (!on_host(keys.device())) return save(keys.to(Device::cpu()), sink);
  KeyKind::stream(Kind::galois_keys, keys.context()->params(), sink, keys, &write_galois_payload);
}

void save(const ckks::BootstrapKeys& keys, const Sink& sink) {
  if (!on_host(keys.from_sparse.device())) return save(keys.to(Device::cpu()), sink);
  KeyKind::stream(Kind::bootstrap_keys, keys.galois.context()->params(), sink, keys, &write_bootstrap_payload);
}

void save(const MasterKeys& keys, const Sink& sink) {
  KeyKind::stream(Kind::master_keys, keys.context->params(), sink, keys, &write_master_payload);
}

Bytes save(const SecretKey& key) {
  Writer w = start(Kind::secret_key, key.context()->params(), key.coefficients().size());
  // Two bits per coefficient would do; one byte keeps the format obvious.
  w.raw(key.coefficients().data(), key.coefficients().size());
  return seal(w);
}

std::uint64_t bootstrap_keys_bytes(const RlweContextPtr& ctx, const std::vector<std::size_t>& galois_levels) {
  std::uint64_t bytes = header_bytes(kFormatVersion) + 4;
  for (std::size_t level : galois_levels) bytes += 8 + seeded_switch_key_bytes(*ctx, level);
  const RlweContextPtr sparse = ckks::encapsulation_context(*ctx);
  bytes += seeded_switch_key_bytes(*sparse, sparse->max_level()) + seeded_switch_key_bytes(*ctx, ctx->max_level());
  return bytes + 8;  // the checksum
}

// ---- load ---------------------------------------------------------------------

Parameters load_parameters(const std::uint8_t* data, std::size_t size, bool insecure_no_security_check) {
  const Envelope e = open_as(Kind::parameters, nullptr, data, size);
  Reader r(e.payload, e.payload_size);
  ParameterLiteral lit;
  lit.poly_degree = static_cast<std::size_t>(r.u64("the ring degree"));
  const std::uint32_t q_count = r.u32("the prime count");
  require(q_count >= 1 && q_count <= 256, "io.load", "corrupt: " + std::to_string(q_count) + " ciphertext primes");
  r.need(q_count * 8ull, "the ciphertext primes");
  lit.q_primes.resize(q_count);
  for (auto& v : lit.q_primes) v = r.u64("a prime");
  const std::uint32_t p_count = r.u32("the special prime count");
  require(p_count >= 1 && p_count <= 64, "io.load", "corrupt: " + std::to_string(p_count) + " special primes");
  r.need(p_count * 8ull, "the special primes");
  lit.p_primes.resize(p_count);
  for (auto& v : lit.p_primes) v = r.u64("a prime");
  lit.dnum = r.u32("dnum");
  const std::uint32_t security = r.u32("the security level");
  lit.scale_bits = static_cast<int>(r.u32("the scale bits"));
  if (e.version >= 2) {
    const std::uint8_t scheme = r.u8("the scheme");
    require(scheme >= 1 && scheme <= 3, "io.load", "corrupt: unknown scheme " + std::to_string(scheme));
    lit.scheme = static_cast<Scheme>(scheme);
    lit.plain_modulus = r.u64("the plaintext modulus");
    lit.reserved_levels = r.u32("the reserved levels");
  }
  r.expect_end();
  require(security != 0 || insecure_no_security_check, "io.load",
          "these parameters were saved without the security check (security 0); load them only for tests, with "
          "insecure_no_security_check");
  lit.security = security == 0 ? 128 : static_cast<int>(security);
  lit.insecure_no_security_check = security == 0;
  Parameters params(lit);
  require(e.made_under(params), "io.load", "corrupt: the parameters do not match their identity");
  return params;
}

Plaintext load_plaintext(const RlweContextPtr& ctx, const std::uint8_t* data, std::size_t size) {
  const Envelope e = open_as(Kind::plaintext, ctx.get(), data, size);
  Reader r(e.payload, e.payload_size);
  const std::uint32_t level = r.u32("the level");
  require(level <= ctx->max_level(), "io.load", "corrupt: level " + std::to_string(level) + " is out of range");
  const Metadata meta = read_metadata(r, e.version);
  check_metadata(meta, *ctx, level, 1.0, "the plaintext's");
  const std::uint8_t scalar = r.u8("the scalar flag");
  require(scalar <= 1, "io.load", "corrupt: bad scalar flag");
  // A scalar plaintext (level + 1 residues) expands to one polynomial, as
  // every plaintext is held; otherwise the polynomial must be present.
  r.need(scalar ? 16 + (level + 1) * 8 : poly_bytes(*ctx->level_base(level), level + 1, e.version), "the plaintext");
  Plaintext plain(ctx, level, meta, Device::cpu(), kUninitialized);  // either branch writes every limb whole
  const RnsBase& base = plain.base();
  if (scalar) {
    const double re = r.f64("the scalar value"), im = r.f64("the scalar value");
    std::vector<u64> residues(level + 1);
    r.need(residues.size() * 8, "the scalar residues");
    for (std::size_t i = 0; i < residues.size(); ++i) {
      r.residues(&residues[i], 1, base.modulus(i).value(), "the scalar residues");
      std::fill_n(plain.data() + i * plain.n(), plain.n(), residues[i]);
    }
    plain.set_scalar(std::move(residues), {re, im});
  } else {
    read_poly(r, base, level + 1, plain.data(), "the plaintext polynomial", e.version);
  }
  r.expect_end();
  return plain;
}

Ciphertext load_ciphertext(const RlweContextPtr& ctx, const std::uint8_t* data, std::size_t size) {
  const Envelope e = open_as(Kind::ciphertext, ctx.get(), data, size);
  Reader r(e.payload, e.payload_size);
  Ciphertext c = read_ciphertext_payload(r, ctx, e.version, Holder::ciphertext);
  r.expect_end();
  return c;
}

namespace {

PublicKey read_public_key_payload(Reader& r, const RlweContextPtr& ctx, std::uint16_t version) {
  Ciphertext c = read_ciphertext_payload(r, ctx, version, Holder::public_key);
  if (r.remaining() == 0) return PublicKey(std::move(c));  // a key over Q alone
  require(r.u8("the special-prime flag") == 1, "io.load", "corrupt: bad special-prime flag in a public key");
  const RnsBase& special = *ctx->special_base();
  const std::size_t words = special.size() * ctx->n();
  const bool seeded = c.seed().has_value();
  r.need(poly_bytes(special, special.size(), version) * (seeded ? 1 : 2), "the public key over the special primes");
  Buffer tail(2 * words);
  read_poly(r, special, special.size(), tail.data(), "a public-key polynomial", version);
  if (seeded) {
    // a over Q then P from the seed: its P limbs follow the Q limbs in the stream.
    const RnsBase& key_base = *ctx->key_base();
    Buffer a(key_base.size() * ctx->n());
    expand_uniform(*c.seed(), key_base, a.data());
    std::copy(a.data() + (key_base.size() - special.size()) * ctx->n(), a.data() + a.size(), tail.data() + words);
  } else {
    read_poly(r, special, special.size(), tail.data() + words, "a public-key polynomial", version);
  }
  return PublicKey(std::move(c), std::move(tail));
}

RelinKey read_relin_payload(Reader& r, const RlweContextPtr& ctx, std::uint16_t version) {
  return RelinKey(read_switch_key(r, ctx, version, kRelinearizationSource));
}

EmbeddingKey read_embedding_payload(Reader& r, const RlweContextPtr& ctx, std::uint16_t version) {
  require(version >= 4, "io.load", "corrupt: embedding keys exist from format version 4 on");
  const std::uint32_t degree = r.u32("the subring's degree");
  require(degree >= 2 && degree < ctx->n() && (degree & (degree - 1)) == 0, "io.load",
          "corrupt: a subring of degree " + std::to_string(degree) + " in a ring of degree " +
              std::to_string(ctx->n()));
  return EmbeddingKey(read_switch_key(r, ctx, version, kEmbeddingSource), degree);
}

ckks::BootstrapKeys read_bootstrap_payload(Reader& r, const RlweContextPtr& ctx, std::uint16_t version) {
  GaloisKeys galois = read_galois_payload(r, ctx, version);
  KeySwitchKey to_sparse = read_switch_key(r, ckks::encapsulation_context(*ctx), version, kToSparseSource);
  KeySwitchKey from_sparse = read_switch_key(r, ctx, version, kFromSparseSource);
  ckks::BootstrapKeys keys{std::move(galois), std::move(to_sparse), std::move(from_sparse)};
  keys.set_expand_per_use(true);  // as keygen makes them (bootstrap.h); keys loaded expanded stay so
  return keys;
}

MasterKeys read_master_payload(Reader& r, const RlweContextPtr& ctx, std::uint16_t version) {
  const std::uint32_t level = r.u32("the derivation level");
  require(level <= ctx->max_level(), "io.load", "corrupt: derivation level " + std::to_string(level) + " is out of range");
  RlweContextPtr derivation = derivation_context(*ctx, level);
  GaloisKeys keys = read_galois_payload(r, derivation, version);
  return MasterKeys(ctx, level, std::move(derivation), std::move(keys));
}

// A whole envelope in memory: checked (checksum first), then parsed.
template <class T>
T load_whole(Kind kind, const RlweContextPtr& ctx, const std::uint8_t* data, std::size_t size,
             T (*parse)(Reader&, const RlweContextPtr&, std::uint16_t)) {
  const Envelope e = open_as(kind, ctx.get(), data, size);
  Reader r(e.payload, e.payload_size);
  T out = parse(r, ctx, e.version);
  r.expect_end();
  return out;
}

// A streamed envelope of `size` bytes: parsed as it arrives (every bound
// checked against the declared length, so a polynomial is allocated only
// once the rest of the envelope may hold it), hashed on the way; the
// checksum at the end decides whether the object is returned.
template <class T>
T load_streamed(Kind kind, const RlweContextPtr& ctx, const Source& source, std::size_t size,
                T (*parse)(Reader&, const RlweContextPtr&, std::uint16_t)) {
  require(size >= header_bytes(kFormatVersion) + 8, "io.load", "truncated: " + std::to_string(size) + " bytes");
  Reader r(source, size - 8);
  const Header h = read_header(r, size);
  require(h.version >= 4, "io.load", "streamed loading reads format version 4 on; load older files whole");
  expect(h, kind, ctx.get());
  T out = parse(r, ctx, h.version);
  r.expect_end();
  std::uint8_t tail[8];
  r.trailer(tail, 8);
  require(r.digest() == read_le64(tail), "io.load", "checksum mismatch: the data is corrupted");
  return out;
}

}  // namespace

PublicKey load_public_key(const RlweContextPtr& ctx, const std::uint8_t* data, std::size_t size) {
  return load_whole(Kind::public_key, ctx, data, size, &read_public_key_payload);
}

RelinKey load_relin_key(const RlweContextPtr& ctx, const std::uint8_t* data, std::size_t size) {
  return load_whole(Kind::relin_key, ctx, data, size, &read_relin_payload);
}

EmbeddingKey load_embedding_key(const RlweContextPtr& ctx, const std::uint8_t* data, std::size_t size) {
  return load_whole(Kind::embedding_key, ctx, data, size, &read_embedding_payload);
}

GaloisKeys load_galois_keys(const RlweContextPtr& ctx, const std::uint8_t* data, std::size_t size) {
  return load_whole(Kind::galois_keys, ctx, data, size, &read_galois_payload);
}

ckks::BootstrapKeys load_bootstrap_keys(const RlweContextPtr& ctx, const std::uint8_t* data, std::size_t size) {
  return load_whole(Kind::bootstrap_keys, ctx, data, size, &read_bootstrap_payload);
}

MasterKeys load_master_keys(const RlweContextPtr& ctx, const std::uint8_t* data, std::size_t size) {
  return load_whole(Kind::master_keys, ctx, data, size, &read_master_payload);
}

PublicKey load_public_key(const RlweContextPtr& ctx, const Source& source, std::size_t size) {
  return load_streamed(Kind::public_key, ctx, source, size, &read_public_key_payload);
}

RelinKey load_relin_key(const RlweContextPtr& ctx, const Source& source, std::size_t size) {
  return load_streamed(Kind::relin_key, ctx, source, size, &read_relin_payload);
}

GaloisKeys load_galois_keys(const RlweContextPtr& ctx, const Source& source, std::size_t size) {
  return load_streamed(Kind::galois_keys, ctx, source, size, &read_galois_payload);
}

ckks::BootstrapKeys load_bootstrap_keys(const RlweContextPtr& ctx, const Source& source, std::size_t size) {
  return load_streamed(Kind::bootstrap_keys, ctx, source, size, &read_bootstrap_payload);
}

MasterKeys load_master_keys(const RlweContextPtr& ctx, const Source& source, std::size_t size) {
  return load_streamed(Kind::master_keys, ctx, source, size, &read_master_payload);
}

SecretKey load_secret_key(const RlweContextPtr& ctx, const std::uint8_t* data, std::size_t size) {
  const Envelope e = open_as(Kind::secret_key, ctx.get(), data, size);
  Reader r(e.payload, e.payload_size);
  r.need(ctx->n(), "the secret coefficients");
  std::vector<std::int8_t> s(ctx->n());
  r.raw(s.data(), s.size(), "the secret coefficients");
  r.expect_end();
  for (std::int8_t c : s) require(c >= -1 && c <= 1, "io.load", "corrupt: secret coefficients must be -1, 0 or 1");
  return SecretKey(ctx, std::move(s));
}

}  // namespace ringfire::io
