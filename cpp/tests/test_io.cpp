// Serialization: every object kind survives a round trip bit for bit (and
// re-serializes to the same bytes), seeded objects stay compact, and
// malformed input — truncations, flipped bytes, foreign parameters, the
// wrong kind, corrupt fields behind a valid checksum — raises
// InvalidArgument rather than crashing. Fixed seeds throughout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ckks_test_support.h"
#include "ringfire/base/errors.h"
#include "ringfire/ckks/evaluator.h"
#include "ringfire/io/byte_io.h"
#include "ringfire/io/checksum.h"
#include "ringfire/io/serialize.h"
#include "ringfire/rlwe/encryptor.h"
#include "ringfire/rlwe/keygen.h"
#include "ringfire/rlwe/noise.h"
#include "ringfire/rlwe/prng.h"

namespace ringfire {
namespace {

using ckks::Complex;
using io::Bytes;
using io::Writer;

using test::expect_invalid;
using test::kN;
using test::small_literal;
constexpr std::size_t kHeader = 48;     // magic, version, kind, parameter identity (32 bytes), length
constexpr std::size_t kLengthAt = 40;   // where the header's payload length is
constexpr std::size_t kOldHeader = 24;  // versions 1 and 2: a u64 fingerprint instead of the identity

Prng::Seed seed_from(std::uint8_t first) {
  Prng::Seed seed{};
  for (std::size_t i = 0; i < seed.size(); ++i) seed[i] = static_cast<std::uint8_t>(first * 3 + 11 * i);
  return seed;
}

bool same_words(const u64* a, const u64* b, std::size_t words) { return std::equal(a, a + words, b); }

// Bytes of a polynomial over `base` as format version 5 stores it: N residues
// per limb in the bits of its prime, computed here from the primes alone.
std::size_t packed_poly_bytes(const RnsBase& base) {
  std::size_t bits = 0;
  for (std::size_t i = 0; i < base.size(); ++i) {
    const u64 q = base.modulus(i).value();
    unsigned width = 0;
    while ((q - 1) >> width) ++width;
    bits += width * base.n();
  }
  return bits / 8;
}

std::uint64_t read_le64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void write_le64(std::uint8_t* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

// Recomputes the trailing checksum (of the version the header names: FNV-1a
// before version 4) after a deliberate edit, so the edit reaches the payload
// parser.
void reseal(Bytes& b) {
  const unsigned version = b[4] | (b[5] << 8);
  const std::size_t body = b.size() - 8;
  write_le64(b.data() + body, version >= 4 ? io::checksum64(b.data(), body) : fnv1a64(b.data(), body));
}

struct Env {
  ckks::ContextPtr ctx;
  RlweContextPtr rlwe;
  SecretKey sk;
  PublicKey pk;
  RelinKey rk;
  GaloisKeys gk;

  static Env make() {
    auto ctx = std::make_shared<const ckks::Context>(Parameters(small_literal()));
    const RlweContextPtr& rlwe = ctx->rlwe();
    Prng prng = Prng::from_seed(seed_from(1));
    SecretKey sk = generate_secret_key(rlwe, prng);
    PublicKey pk = generate_public_key(sk, prng);
    RelinKey rk = generate_relin_key(sk, prng);
    GaloisKeys gk = generate_galois_keys(sk, {rlwe->galois_element(1), rlwe->conjugation_element()}, prng);
    return Env{ctx, rlwe, std::move(sk), std::move(pk), std::move(rk), std::move(gk)};
  }

  std::vector<Complex> values(std::uint64_t seed) const {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::vector<Complex> z(ctx->slots());
    for (auto& v : z) v = Complex(u(rng), u(rng));
    return z;
  }

  Plaintext encode(const std::vector<Complex>& z, std::size_t level) const {
    return ctx->encoder().encode(z.data(), z.size(), level, ctx->scale_at(level));
  }

  double error(const Ciphertext& c, const std::vector<Complex>& want) const {
    Buffer plain(c.poly_words());
    decrypt_core(sk, c, plain.data());
    const auto got = ctx->encoder().decode_coefficients(plain.data(), c.level(), c.scale());
    double worst = 0.0;
    for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
    return worst;
  }
};

Env& env() {
  static Env e = Env::make();
  return e;
}

void expect_same_ciphertext(const Ciphertext& a, const Ciphertext& b) {
  EXPECT_EQ(a.fingerprint(), b.fingerprint());
  EXPECT_EQ(a.size(), b.size());
  EXPECT_EQ(a.level(), b.level());
  EXPECT_EQ(a.scale(), b.scale());
  EXPECT_EQ(a.seed(), b.seed());
  if (a.size() == b.size() && a.level() == b.level()) {
    EXPECT_TRUE(same_words(a.data(), b.data(), a.size() * a.poly_words())) << "ciphertext words differ";
  }
}

void expect_same_switch_key(const KeySwitchKey& a, const KeySwitchKey& b) {
  ASSERT_EQ(a.digits(), b.digits());
  EXPECT_EQ(a.seeds(), b.seeds());
  for (std::size_t j = 0; j < a.digits(); ++j) {
    EXPECT_TRUE(same_words(a.b(j), b.b(j), a.poly_words())) << "b of digit " << j;
    EXPECT_TRUE(same_words(a.a(j), b.a(j), a.poly_words())) << "a of digit " << j;
  }
}

// ---- round trips -----------------------------------------------------------------

TEST(IoChecksum, MatchesThePublishedXxh64Vectors) {
  // XXH64 with seed 0 (the values the xxHash project publishes).
  EXPECT_EQ(io::checksum64("", 0), 0xEF46DB3751D8E999ULL);
  EXPECT_EQ(io::checksum64("a", 1), 0xD24EC4F1A98C6E5BULL);
  EXPECT_EQ(io::checksum64("abc", 3), 0x44BC2CF5AD770999ULL);
  // Every byte counts, at every position of a stripe and of the tail.
  std::vector<std::uint8_t> data(100);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(i * 37 + 11);
  const std::uint64_t whole = io::checksum64(data.data(), data.size());
  // Through the four-lane stripes too: the xxHash project's own code (its Python binding,
  // xxhash 4.1.0) gives these for the same bytes.
  EXPECT_EQ(whole, 0x4826E367566EA023ULL);
  std::vector<std::uint8_t> longer(1000);
  for (std::size_t i = 0; i < longer.size(); ++i) longer[i] = static_cast<std::uint8_t>(i * 37 + 11);
  EXPECT_EQ(io::checksum64(longer.data(), longer.size(), 0x1234), 0xBDF58A703B7F11B6ULL);
  for (std::size_t i = 0; i < data.size(); ++i) {
    data[i] ^= 1;
    EXPECT_NE(io::checksum64(data.data(), data.size()), whole) << i;
    data[i] ^= 1;
  }
}

// A stream takes its input in any pieces, empty ones as null pointers included (an empty
// table read from a key image: the fuzzer's find under UBSan).
TEST(IoChecksum, StreamsInPiecesAndEmptyOnes) {
  io::Checksum64Stream stream;
  stream.update("ab", 2);
  stream.update(nullptr, 0);  // with a partial stripe pending
  stream.update("c", 1);
  EXPECT_EQ(stream.digest(), io::checksum64("abc", 3));
}

TEST(IoRoundTrip, Parameters) {
  const test::CapturedWarnings quiet;  // variant 1 uses the named opt-out
  for (int variant : {0, 1, 2}) {
    ParameterLiteral lit = small_literal();
    if (variant == 1) {  // two special primes, two digits, no security check
      lit.p_bits = {60, 60};
      lit.dnum = 2;
      lit.insecure_no_security_check = true;
    }
    if (variant == 2) {  // BGV with its plaintext modulus
      lit = small_literal(0);
      lit.scheme = Scheme::bgv;
      lit.plain_modulus = 786433;
    }
    const Parameters p(lit);
    const Bytes blob = io::save(p);
    EXPECT_EQ(io::peek_kind(blob.data(), blob.size()), io::Kind::parameters);
    if (variant == 1)  // insecure parameters load only through the named opt-out
      expect_invalid([&] { io::load_parameters(blob.data(), blob.size()); }, "insecure_no_security_check");
    const Parameters q = io::load_parameters(blob.data(), blob.size(), variant == 1);
    EXPECT_EQ(q.n(), p.n());
    EXPECT_EQ(q.q_primes(), p.q_primes());
    EXPECT_EQ(q.p_primes(), p.p_primes());
    EXPECT_EQ(q.dnum(), p.dnum());
    EXPECT_EQ(q.alpha(), p.alpha());
    EXPECT_EQ(q.security(), p.security());
    EXPECT_EQ(q.scale_bits(), p.scale_bits());
    EXPECT_EQ(q.scheme(), p.scheme());
    EXPECT_EQ(q.plain_modulus(), p.plain_modulus());
    EXPECT_EQ(q.fingerprint(), p.fingerprint());
    EXPECT_EQ(io::save(q), blob);
  }
}

TEST(IoRoundTrip, Plaintexts) {
  const Env& e = env();
  // A vector plaintext at each level.
  for (std::size_t level = 0; level <= 2; ++level) {
    const Plaintext p = e.encode(e.values(level + 1), level);
    const Bytes blob = io::save(p);
    const Plaintext q = io::load_plaintext(e.rlwe, blob.data(), blob.size());
    EXPECT_EQ(q.level(), p.level());
    EXPECT_EQ(q.scale(), p.scale());
    EXPECT_FALSE(q.is_scalar());
    EXPECT_TRUE(same_words(q.data(), p.data(), p.poly_words()));
    EXPECT_EQ(io::save(q), blob);
  }
  // A scalar plaintext (negative value: residues q_i - r) stays scalar and
  // is stored compactly.
  const Plaintext s = e.ctx->encoder().encode_scalar(Complex(-1.5, 0.0), 2, e.ctx->scale_at(2));
  ASSERT_TRUE(s.is_scalar());
  const Bytes blob = io::save(s);
  EXPECT_LT(blob.size(), 200u);
  const Plaintext t = io::load_plaintext(e.rlwe, blob.data(), blob.size());
  ASSERT_TRUE(t.is_scalar());
  EXPECT_EQ(t.scalar_value(), s.scalar_value());
  EXPECT_EQ(t.scalar_residues(), s.scalar_residues());
  EXPECT_EQ(t.scale(), s.scale());
  EXPECT_TRUE(same_words(t.data(), s.data(), s.poly_words()));
  EXPECT_EQ(io::save(t), blob);
  // A complex constant is a full polynomial.
  const Plaintext c = e.ctx->encoder().encode_scalar(Complex(0.5, 0.5), 1, e.ctx->scale_at(1));
  const Bytes cblob = io::save(c);
  const Plaintext d = io::load_plaintext(e.rlwe, cblob.data(), cblob.size());
  EXPECT_FALSE(d.is_scalar());
  EXPECT_TRUE(same_words(d.data(), c.data(), c.poly_words()));
}

TEST(IoRoundTrip, Ciphertexts) {
  const Env& e = env();
  ckks::Evaluator ev(e.ctx);
  Prng prng = Prng::from_seed(seed_from(2));
  const auto z = e.values(7);

  // Public-key encryption: both polynomials stored.
  const Ciphertext pub = encrypt_public(e.pk, e.encode(z, 2), prng);
  const Bytes pub_blob = io::save(pub);
  EXPECT_EQ(pub_blob.size(), kHeader + 39 + 2 * packed_poly_bytes(pub.base()) + 8);
  EXPECT_LT(pub_blob.size(), 2 * pub.poly_words() * 8);  // smaller than the words
  const Ciphertext pub2 = io::load_ciphertext(e.rlwe, pub_blob.data(), pub_blob.size());
  expect_same_ciphertext(pub2, pub);
  EXPECT_EQ(io::save(pub2), pub_blob);
  EXPECT_LT(e.error(pub2, z), 0x1p-20);

  // Secret-key encryption: c_1 travels as its 32-byte seed.
  const Ciphertext sec = encrypt_secret(e.sk, e.encode(z, 1), prng);
  ASSERT_TRUE(sec.seed().has_value());
  const Bytes sec_blob = io::save(sec);
  EXPECT_EQ(sec_blob.size(), kHeader + 39 + 32 + packed_poly_bytes(sec.base()) + 8);
  const Ciphertext sec2 = io::load_ciphertext(e.rlwe, sec_blob.data(), sec_blob.size());
  expect_same_ciphertext(sec2, sec);
  EXPECT_EQ(io::save(sec2), sec_blob);
  EXPECT_LT(e.error(sec2, z), 0x1p-20);

  // A seeded ciphertext whose c_0 changed (c_1 and the seed still agree).
  const Ciphertext shifted = ev.add_scalar(sec, Complex(0.25, 0.0));
  ASSERT_TRUE(shifted.seed().has_value());
  const Bytes shifted_blob = io::save(shifted);
  const Ciphertext shifted2 = io::load_ciphertext(e.rlwe, shifted_blob.data(), shifted_blob.size());
  expect_same_ciphertext(shifted2, shifted);

  // Size 3 (an unrelinearized product) and a rescaled one at level 0.
  const Ciphertext three = ev.multiply(pub, pub);
  const Bytes three_blob = io::save(three);
  const Ciphertext three2 = io::load_ciphertext(e.rlwe, three_blob.data(), three_blob.size());
  expect_same_ciphertext(three2, three);
  EXPECT_EQ(io::save(three2), three_blob);
  const Ciphertext low = ev.rescale(ev.relinearize(ev.multiply(sec, sec), e.rk));
  const Bytes low_blob = io::save(low);
  const Ciphertext low2 = io::load_ciphertext(e.rlwe, low_blob.data(), low_blob.size());
  expect_same_ciphertext(low2, low);
  EXPECT_EQ(io::save(low2), low_blob);
}

// Loads, encodings, encryptions and clones write every word of the polynomials they allocate
// (they skip zeroing them first): made in pool memory left full of all-ones words (above every
// prime), they equal the same objects made before.
TEST(IoRoundTrip, ObjectsMadeInReusedMemoryDependOnlyOnTheirInput) {
  const Env& e = env();
  const auto z = e.values(11);
  const RnsBase& top = *e.rlwe->level_base(2);
  const auto make_all = [&] {
    std::vector<Plaintext> plains;
    std::vector<Ciphertext> ciphers;
    Prng prng = Prng::from_seed(seed_from(9));
    for (std::size_t level = 0; level <= 2; ++level) {
      plains.push_back(e.encode(z, level));
      plains.push_back(e.ctx->encoder().encode_scalar(Complex(-0.75, 0.0), level, e.ctx->scale_at(level)));
      plains.push_back(plains.back().clone());
      ciphers.push_back(encrypt_secret(e.sk, plains[3 * level], prng));
      std::vector<u64> message((level + 1) * kN);
      const Metadata meta = e.ctx->encoder().encode_coefficients(z.data(), z.size(), level, e.ctx->scale_at(level),
                                                                 message.data());
      ciphers.push_back(encrypt_secret_coefficients(e.sk, e.rlwe, level, meta, message.data(), prng));
      ciphers.push_back(encrypt_public(e.pk, plains[3 * level], prng));
    }
    std::vector<Plaintext> loaded_plains;
    for (const Plaintext& p : plains) {
      const Bytes blob = io::save(p);
      loaded_plains.push_back(io::load_plaintext(e.rlwe, blob.data(), blob.size()));
    }
    std::vector<Ciphertext> loaded;
    for (const Ciphertext& c : ciphers) {
      const Bytes blob = io::save(c);  // seeded (secret key) and whole (public key)
      loaded.push_back(io::load_ciphertext(e.rlwe, blob.data(), blob.size()));
    }
    plains.insert(plains.end(), std::make_move_iterator(loaded_plains.begin()),
                  std::make_move_iterator(loaded_plains.end()));
    ciphers.insert(ciphers.end(), std::make_move_iterator(loaded.begin()), std::make_move_iterator(loaded.end()));
    return std::make_pair(std::move(plains), std::move(ciphers));
  };
  const auto [plains, ciphers] = make_all();
  {
    // Blocks of every size those objects take, filled and given back to the pool's free lists.
    std::vector<Buffer> junk;
    for (int copies = 0; copies < 16; ++copies)
      for (std::size_t limbs = 1; limbs <= 2 * top.size(); ++limbs) {
        junk.emplace_back(limbs * kN);
        std::fill_n(junk.back().data(), junk.back().size(), ~u64{0});
      }
  }
  const auto [plains2, ciphers2] = make_all();
  ASSERT_EQ(plains2.size(), plains.size());
  for (std::size_t i = 0; i < plains.size(); ++i) {
    EXPECT_TRUE(same_words(plains2[i].data(), plains[i].data(), plains[i].poly_words())) << "plaintext " << i;
    EXPECT_EQ(plains2[i].scalar_residues(), plains[i].scalar_residues()) << "plaintext " << i;
  }
  ASSERT_EQ(ciphers2.size(), ciphers.size());
  for (std::size_t i = 0; i < ciphers.size(); ++i) {
    SCOPED_TRACE("ciphertext " + std::to_string(i));
    expect_same_ciphertext(ciphers2[i], ciphers[i]);
  }
}

TEST(IoRoundTrip, Keys) {
  const Env& e = env();
  // Public key: a seeded top-level pair.
  {
    const Bytes blob = io::save(e.pk);
    const PublicKey k = io::load_public_key(e.rlwe, blob.data(), blob.size());
    expect_same_ciphertext(k.key(), e.pk.key());
    EXPECT_TRUE(k.key().seed().has_value());
    EXPECT_EQ(io::save(k), blob);
    // The part over P travels as b alone (a's P limbs come from the seed) and encrypts the same.
    ASSERT_TRUE(k.covers_special());
    const std::size_t p_words = e.rlwe->special_count() * e.rlwe->n();
    EXPECT_TRUE(same_words(k.special(0), e.pk.special(0), p_words));
    EXPECT_TRUE(same_words(k.special(1), e.pk.special(1), p_words));
    Prng p1 = Prng::from_seed(seed_from(21)), p2 = Prng::from_seed(seed_from(21));
    const Plaintext m = e.encode(e.values(5), 2);
    expect_same_ciphertext(encrypt_public(k, m, p1), encrypt_public(e.pk, m, p2));
  }
  // A key over Q alone (files written before encryption ran over Q P) still loads and
  // encrypts, the older way: its noise is the larger sqrt(N)-wide one.
  {
    const PublicKey q_only(e.pk.key().clone());
    const Bytes blob = io::save(q_only);
    const PublicKey k = io::load_public_key(e.rlwe, blob.data(), blob.size());
    EXPECT_FALSE(k.covers_special());
    Prng prng = Prng::from_seed(seed_from(22));
    const Plaintext m = e.encode(e.values(6), 2);
    const Ciphertext old_way = encrypt_public(k, m, prng), new_way = encrypt_public(e.pk, m, prng);
    EXPECT_GT(old_way.noise_bits(), new_way.noise_bits() + 3.0);
    EXPECT_EQ(io::save(k), blob);
  }
  // Relinearization key: b polynomials plus seeds.
  {
    const Bytes blob = io::save(e.rk);
    const KeySwitchKey& key = e.rk.key();
    EXPECT_EQ(blob.size(), kHeader + 17 + key.digits() * (packed_poly_bytes(*e.rlwe->extended_base(key.level())) + 32) + 8);
    const RelinKey k = io::load_relin_key(e.rlwe, blob.data(), blob.size());
    expect_same_switch_key(k.key(), e.rk.key());
    EXPECT_EQ(io::save(k), blob);
  }
  // A switch key without seeds stores its a polynomials.
  {
    Prng prng = Prng::from_seed(seed_from(3));
    Buffer s2(e.rlwe->key_base()->size() * kN);
    backend_for(Device::cpu()).multiply(e.sk.eval(), e.sk.eval(), s2.data(), 1, *e.rlwe->key_base());
    KeySwitchKey raw = generate_switch_key(e.sk, s2.data(), kRelinearizationSource, prng);
    (void)raw.a(0);  // expanded while it has its seeds
    raw.seeds().clear();
    const RelinKey unseeded(std::move(raw));
    const Bytes blob = io::save(unseeded);
    const KeySwitchKey& key = unseeded.key();
    EXPECT_EQ(blob.size(), kHeader + 17 + 2 * key.digits() * packed_poly_bytes(*e.rlwe->extended_base(key.level())) + 8);
    const RelinKey k = io::load_relin_key(e.rlwe, blob.data(), blob.size());
    expect_same_switch_key(k.key(), unseeded.key());
    EXPECT_EQ(io::save(k), blob);
  }
  // Galois keys.
  {
    const Bytes blob = io::save(e.gk);
    const GaloisKeys k = io::load_galois_keys(e.rlwe, blob.data(), blob.size());
    EXPECT_EQ(k.elements(), e.gk.elements());
    for (u64 g : e.gk.elements()) expect_same_switch_key(k.get(g), e.gk.get(g));
    EXPECT_EQ(io::save(k), blob);
    // The loaded keys work.
    ckks::Evaluator ev(e.ctx);
    Prng prng = Prng::from_seed(seed_from(4));
    const auto z = e.values(9);
    const Ciphertext c = encrypt_public(e.pk, e.encode(z, 2), prng);
    std::vector<Complex> want(z.size());
    for (std::size_t i = 0; i < z.size(); ++i) want[i] = std::conj(z[(i + 1) % z.size()]);
    EXPECT_LT(e.error(ev.conjugate(ev.rotate(c, 1, k), k), want), 0x1p-20);
    // An empty set too.
    const GaloisKeys none(e.rlwe);
    const Bytes empty_blob = io::save(none);
    EXPECT_EQ(io::load_galois_keys(e.rlwe, empty_blob.data(), empty_blob.size()).size(), 0u);
  }
  // Secret key.
  {
    const Bytes blob = io::save(e.sk);
    const SecretKey k = io::load_secret_key(e.rlwe, blob.data(), blob.size());
    EXPECT_EQ(k.coefficients(), e.sk.coefficients());
    EXPECT_TRUE(same_words(k.eval(), e.sk.eval(), e.rlwe->key_base()->size() * kN));
    EXPECT_EQ(io::save(k), blob);
  }
}

TEST(IoRoundTrip, KindsAndNames) {
  const Env& e = env();
  Prng prng = Prng::from_seed(seed_from(5));
  const Ciphertext c = encrypt_secret(e.sk, e.encode(e.values(3), 0), prng);
  const std::vector<std::pair<Bytes, io::Kind>> blobs{
      {io::save(e.ctx->params()), io::Kind::parameters},
      {io::save(e.encode(e.values(4), 0)), io::Kind::plaintext},
      {io::save(c), io::Kind::ciphertext},
      {io::save(e.pk), io::Kind::public_key},
      {io::save(e.rk), io::Kind::relin_key},
      {io::save(e.gk), io::Kind::galois_keys},
      {io::save(e.sk), io::Kind::secret_key}};
  for (const auto& [blob, kind] : blobs) {
    EXPECT_EQ(io::peek_kind(blob.data(), blob.size()), kind);
    EXPECT_EQ(io::envelope_kind(blob.data(), blob.size()), kind);
    EXPECT_EQ(std::memcmp(blob.data(), "RFHE", 4), 0);
    EXPECT_EQ(blob[4] | (blob[5] << 8), io::kFormatVersion);
    EXPECT_TRUE(std::equal(blob.begin() + 8, blob.begin() + 40, e.ctx->params().identity().begin()));
    EXPECT_EQ(read_le64(blob.data() + 8), e.ctx->fingerprint());  // the identity's first 8 bytes
    EXPECT_EQ(read_le64(blob.data() + kLengthAt), blob.size() - kHeader - 8);
    EXPECT_EQ(read_le64(blob.data() + blob.size() - 8), io::checksum64(blob.data(), blob.size() - 8));
  }
  EXPECT_EQ(std::string(io::kind_name(io::Kind::ciphertext)), "ciphertext");
  EXPECT_EQ(std::string(io::kind_name(io::Kind::galois_keys)), "Galois key set");
}

// ---- malformed input --------------------------------------------------------------

TEST(IoMalformed, EveryTruncationOfParameters) {
  const Bytes blob = io::save(env().ctx->params());
  for (std::size_t len = 0; len < blob.size(); ++len) {
    EXPECT_THROW(io::load_parameters(blob.data(), len), InvalidArgument) << "length " << len;
    EXPECT_THROW(io::peek_kind(blob.data(), len), InvalidArgument) << "length " << len;
    EXPECT_THROW(io::envelope_kind(blob.data(), len), InvalidArgument) << "length " << len;
  }
  EXPECT_THROW(io::load_parameters(nullptr, 0), InvalidArgument);
  EXPECT_THROW(io::envelope_kind(nullptr, 0), InvalidArgument);
  // Padding is refused too.
  Bytes padded(blob);
  padded.push_back(0);
  EXPECT_THROW(io::load_parameters(padded.data(), padded.size()), InvalidArgument);
}

TEST(IoMalformed, TruncatedCiphertexts) {
  const Env& e = env();
  Prng prng = Prng::from_seed(seed_from(6));
  const auto z = e.values(11);
  for (bool seeded : {true, false}) {
    const Plaintext p = e.encode(z, 1);
    const Ciphertext c = seeded ? encrypt_secret(e.sk, p, prng) : encrypt_public(e.pk, p, prng);
    const Bytes blob = io::save(c);
    std::size_t tried = 0;
    for (std::size_t len = 0; len < blob.size(); len += (len < 64 || len + 64 > blob.size()) ? 1 : 97) {
      EXPECT_THROW(io::load_ciphertext(e.rlwe, blob.data(), len), InvalidArgument) << "length " << len;
      ++tried;
    }
    EXPECT_GT(tried, 200u);
    // The same bytes in a larger buffer, declared short: still refused.
    Bytes copy(blob);
    EXPECT_THROW(io::load_ciphertext(e.rlwe, copy.data(), copy.size() - 1), InvalidArgument);
    EXPECT_NO_THROW(io::load_ciphertext(e.rlwe, copy.data(), copy.size()));
  }
}

TEST(IoMalformed, ByteFlips) {
  const Env& e = env();
  Prng prng = Prng::from_seed(seed_from(7));
  const Ciphertext c = encrypt_secret(e.sk, e.encode(e.values(12), 0), prng);
  const Bytes blob = io::save(c);
  auto load = [&](const Bytes& b) { (void)io::load_ciphertext(e.rlwe, b.data(), b.size()); };

  // Every header byte (and every checksum byte), with several masks.
  std::vector<std::size_t> positions;
  for (std::size_t i = 0; i < kHeader; ++i) positions.push_back(i);
  for (std::size_t i = blob.size() - 8; i < blob.size(); ++i) positions.push_back(i);
  for (std::size_t pos : positions)
    for (std::uint8_t mask : {std::uint8_t{0x01}, std::uint8_t{0x80}, std::uint8_t{0xff}}) {
      Bytes bad(blob);
      bad[pos] ^= mask;
      EXPECT_THROW(load(bad), InvalidArgument) << "byte " << pos << " ^ " << int(mask);
    }
  // 200 random payload bytes, random nonzero masks.
  std::mt19937_64 rng(77);
  std::uniform_int_distribution<std::size_t> where(kHeader, blob.size() - 9);
  std::uniform_int_distribution<int> what(1, 255);
  for (int t = 0; t < 200; ++t) {
    Bytes bad(blob);
    const std::size_t pos = where(rng);
    bad[pos] ^= static_cast<std::uint8_t>(what(rng));
    EXPECT_THROW(load(bad), InvalidArgument) << "byte " << pos;
  }
  // The header-only kind does not read the payload: the load that follows is the check.
  Bytes payload_flip(blob);
  payload_flip[kHeader + 3] ^= 0x40;
  EXPECT_EQ(io::envelope_kind(payload_flip.data(), payload_flip.size()), io::Kind::ciphertext);
  EXPECT_THROW((void)io::peek_kind(payload_flip.data(), payload_flip.size()), InvalidArgument);
  EXPECT_THROW(load(payload_flip), InvalidArgument);
  // The parameters blob: every byte, one mask.
  const Bytes pblob = io::save(e.ctx->params());
  for (std::size_t pos = 0; pos < pblob.size(); ++pos) {
    Bytes bad(pblob);
    bad[pos] ^= 0x10;
    EXPECT_THROW(io::load_parameters(bad.data(), bad.size()), InvalidArgument) << "byte " << pos;
  }
  EXPECT_NO_THROW(load(blob));
}

TEST(IoMalformed, ForeignParametersAndWrongKind) {
  const Env& e = env();
  Prng prng = Prng::from_seed(seed_from(8));
  auto other = std::make_shared<const ckks::Context>(Parameters(small_literal(39)));
  ASSERT_NE(other->fingerprint(), e.ctx->fingerprint());
  const SecretKey other_sk = generate_secret_key(other->rlwe(), prng);
  const auto z = e.values(13);
  const Plaintext op = other->encoder().encode(z.data(), z.size(), 1, other->scale_at(1));
  const Ciphertext oc = encrypt_secret(other_sk, op, prng);

  Bytes blob = io::save(oc);
  expect_invalid([&] { io::load_ciphertext(e.rlwe, blob.data(), blob.size()); }, "different parameters");
  EXPECT_NO_THROW(io::load_ciphertext(other->rlwe(), blob.data(), blob.size()));
  blob = io::save(op);
  expect_invalid([&] { io::load_plaintext(e.rlwe, blob.data(), blob.size()); }, "different parameters");
  blob = io::save(other_sk);
  expect_invalid([&] { io::load_secret_key(e.rlwe, blob.data(), blob.size()); }, "different parameters");
  blob = io::save(generate_public_key(other_sk, prng));
  expect_invalid([&] { io::load_public_key(e.rlwe, blob.data(), blob.size()); }, "different parameters");
  blob = io::save(generate_relin_key(other_sk, prng));
  expect_invalid([&] { io::load_relin_key(e.rlwe, blob.data(), blob.size()); }, "different parameters");
  blob = io::save(GaloisKeys(other->rlwe()));
  expect_invalid([&] { io::load_galois_keys(e.rlwe, blob.data(), blob.size()); }, "different parameters");

  // The wrong kind.
  const Bytes plain_blob = io::save(e.encode(z, 0));
  expect_invalid([&] { io::load_ciphertext(e.rlwe, plain_blob.data(), plain_blob.size()); },
                 "expected a ciphertext, got a plaintext");
  const Bytes pk_blob = io::save(e.pk);
  expect_invalid([&] { io::load_ciphertext(e.rlwe, pk_blob.data(), pk_blob.size()); }, "expected a ciphertext");
  const Bytes ct_blob = io::save(encrypt_public(e.pk, e.encode(z, 2), prng));
  expect_invalid([&] { io::load_public_key(e.rlwe, ct_blob.data(), ct_blob.size()); }, "expected a public key");
  expect_invalid([&] { io::load_plaintext(e.rlwe, ct_blob.data(), ct_blob.size()); }, "expected a plaintext");
  expect_invalid([&] { io::load_parameters(ct_blob.data(), ct_blob.size()); }, "expected a parameters object");
  expect_invalid([&] { io::load_relin_key(e.rlwe, pk_blob.data(), pk_blob.size()); },
                 "expected a relinearization key");
  const Bytes rk_blob = io::save(e.rk);
  expect_invalid([&] { io::load_galois_keys(e.rlwe, rk_blob.data(), rk_blob.size()); }, "expected a Galois key set");
  expect_invalid([&] { io::load_secret_key(e.rlwe, rk_blob.data(), rk_blob.size()); }, "expected a secret key");
}

// Corrupt fields behind a recomputed checksum reach the payload checks.
TEST(IoMalformed, CorruptFieldsWithValidChecksum) {
  const Env& e = env();
  Prng prng = Prng::from_seed(seed_from(9));
  const Ciphertext c = encrypt_public(e.pk, e.encode(e.values(14), 1), prng);
  const Bytes blob = io::save(c);
  // Payload layout: size u32 | level u32 | scale f64 | complex u8 | form u8 | correction u64 | length u32 |
  // noise f64 | seed flag u8 | polys.
  const std::size_t size_at = kHeader, level_at = kHeader + 4, scale_at = kHeader + 8, complex_at = kHeader + 16,
                    form_at = kHeader + 17, correction_at = kHeader + 18, length_at = kHeader + 26,
                    noise_at = kHeader + 30, flag_at = kHeader + 38, poly_at = kHeader + 39;
  auto edited = [&](auto edit) {
    Bytes b(blob);
    edit(b);
    reseal(b);
    return b;
  };
  auto load = [&](const Bytes& b) { (void)io::load_ciphertext(e.rlwe, b.data(), b.size()); };
  expect_invalid([&] { load(edited([&](Bytes& b) { b[size_at] = 0; })); }, "corrupt");
  expect_invalid([&] { load(edited([&](Bytes& b) { b[size_at] = 17; })); }, "corrupt");
  expect_invalid([&] { load(edited([&](Bytes& b) { b[size_at] = 3; })); }, "truncated");
  expect_invalid([&] { load(edited([&](Bytes& b) { b[level_at] = 3; })); }, "corrupt: level");
  expect_invalid([&] { load(edited([&](Bytes& b) { b[level_at] = 0; })); }, "trailing bytes");
  expect_invalid([&] { load(edited([&](Bytes& b) { write_le64(b.data() + scale_at, 0); })); }, "scale");
  expect_invalid([&] { load(edited([&](Bytes& b) { b[scale_at + 7] |= 0x80; })); }, "scale");  // negative
  expect_invalid([&] { load(edited([&](Bytes& b) { write_le64(b.data() + scale_at, 0x7ff0000000000000ULL); })); },
                 "scale");  // infinity
  expect_invalid([&] { load(edited([&](Bytes& b) { b[flag_at] = 2; })); }, "seed flag");
  // Scales that cannot describe data: below 2 (a public key's 1, a subnormal
  // whose inverse is infinite) or as large as the modulus.
  for (double bad : {1.0, 1e-300, 0x1p95, 1e300}) {
    std::uint64_t bits;
    std::memcpy(&bits, &bad, 8);
    expect_invalid([&] { load(edited([&](Bytes& b) { write_le64(b.data() + scale_at, bits); })); }, "scale");
  }
  // Noise estimates that are not numbers, or larger than the modulus.
  for (double bad : {std::nan(""), 1e6, 1e300, -1e300}) {
    std::uint64_t bits;
    std::memcpy(&bits, &bad, 8);
    expect_invalid([&] { load(edited([&](Bytes& b) { write_le64(b.data() + noise_at, bits); })); }, "noise");
  }
  expect_invalid([&] { load(edited([&](Bytes& b) { b[complex_at] = 2; })); }, "complex flag");
  expect_invalid([&] { load(edited([&](Bytes& b) { b[form_at] = 2; })); }, "form flag");
  expect_invalid([&] { load(edited([&](Bytes& b) { b[correction_at] = 3; })); }, "no correction factor");
  // A length beyond the slots (N/2 for CKKS); kBroadcastLength is allowed.
  expect_invalid([&] { load(edited([&](Bytes& b) { b[length_at + 2] = 1; })); }, "exceeds the");
  EXPECT_NO_THROW(load(edited([&](Bytes& b) { std::fill_n(b.begin() + length_at, 4, 0xff); })));
  // A residue at or above its prime.
  expect_invalid([&] { load(edited([&](Bytes& b) { write_le64(b.data() + poly_at, e.rlwe->params().q_primes()[0]); })); },
                 "outside [0, q)");
  expect_invalid([&] { load(edited([&](Bytes& b) { write_le64(b.data() + poly_at, ~0ULL); })); }, "outside [0, q)");
  // A declared length that disagrees with the input.
  expect_invalid(
      [&] { load(edited([&](Bytes& b) { write_le64(b.data() + kLengthAt, read_le64(b.data() + kLengthAt) + 1); })); },
      "truncated or padded");
  // Another parameter identity.
  expect_invalid([&] { load(edited([&](Bytes& b) { b[20] ^= 1; })); }, "parameter identity mismatch");
  EXPECT_NO_THROW(load(edited([](Bytes&) {})));

  // Secret key coefficients outside {-1, 0, 1}.
  Bytes sk_blob = io::save(e.sk);
  sk_blob[kHeader + 5] = 2;
  reseal(sk_blob);
  expect_invalid([&] { io::load_secret_key(e.rlwe, sk_blob.data(), sk_blob.size()); }, "corrupt");
  // A repeated or even Galois element.
  Bytes gk_blob = io::save(e.gk);
  write_le64(gk_blob.data() + kHeader + 4, 4);
  reseal(gk_blob);
  expect_invalid([&] { io::load_galois_keys(e.rlwe, gk_blob.data(), gk_blob.size()); }, "Galois element");
  // A Galois key relabelled with another (valid, unused) element: its
  // recorded source disagrees.
  Bytes relabelled = io::save(e.gk);
  const u64 first = read_le64(relabelled.data() + kHeader + 4);
  u64 unused = 3;
  while (e.gk.has(unused)) unused += 2;
  ASSERT_NE(first, unused);
  write_le64(relabelled.data() + kHeader + 4, unused);
  reseal(relabelled);
  expect_invalid([&] { io::load_galois_keys(e.rlwe, relabelled.data(), relabelled.size()); }, "relabelled");
  // A relinearization key presented as a Galois key set (one key under g).
  {
    const Bytes rk = io::save(e.rk);
    Writer w;
    w.raw(rk.data(), kHeader);
    w.u32(1);
    w.u64(first);
    w.raw(rk.data() + kHeader, rk.size() - kHeader - 8);
    w.u64(0);  // the checksum, resealed below
    Bytes forged = w.bytes();
    forged[6] = static_cast<std::uint8_t>(io::Kind::galois_keys);
    write_le64(forged.data() + kLengthAt, forged.size() - kHeader - 8);
    reseal(forged);
    expect_invalid([&] { io::load_galois_keys(e.rlwe, forged.data(), forged.size()); }, "says it switches from s^2");
  }
  // Parameters that do not match their identity (scale_bits 40 -> 39 is
  // valid on its own).
  Bytes p_blob = io::save(e.ctx->params());
  // before scheme u8, t u64, reserved levels u32, checksum
  const std::size_t scale_bits_at = p_blob.size() - 8 - 4 - 8 - 1 - 4;
  ASSERT_EQ(p_blob[scale_bits_at], 40);
  p_blob[scale_bits_at] = 39;
  reseal(p_blob);
  expect_invalid([&] { io::load_parameters(p_blob.data(), p_blob.size()); }, "do not match their identity");
  // A public key that is not a top-level pair.
  const Ciphertext low = encrypt_public(e.pk, e.encode(e.values(15), 0), prng);
  Bytes fake_pk = io::save(low);
  fake_pk[6] = static_cast<std::uint8_t>(io::Kind::public_key);
  reseal(fake_pk);
  expect_invalid([&] { io::load_public_key(e.rlwe, fake_pk.data(), fake_pk.size()); }, "top-level pair");
  // Kinds are not interchangeable: a public key relabelled as a ciphertext
  // (the payloads share a layout) is refused by its scale of 1.
  Bytes pk_as_ct = io::save(e.pk);
  pk_as_ct[6] = static_cast<std::uint8_t>(io::Kind::ciphertext);
  reseal(pk_as_ct);
  expect_invalid([&] { load(pk_as_ct); }, "scale");
}

// A current blob rewritten as format version 1 or 2: the header's identity
// replaced by the legacy fingerprint, `count` payload bytes dropped at each
// payload offset in `drops` (back to front).
Bytes as_old_version(const Bytes& current, std::uint16_t version, std::uint64_t legacy_fingerprint,
                     std::vector<std::pair<std::size_t, std::size_t>> drops) {
  Bytes payload(current.begin() + kHeader, current.end() - 8);
  std::sort(drops.rbegin(), drops.rend());
  for (const auto& [at, count] : drops)
    payload.erase(payload.begin() + static_cast<std::ptrdiff_t>(at),
                  payload.begin() + static_cast<std::ptrdiff_t>(at + count));
  Writer w;
  w.raw(current.data(), 4);
  w.u16(version);
  w.raw(current.data() + 6, 2);
  w.u64(legacy_fingerprint);
  w.u64(payload.size());
  w.raw(payload.data(), payload.size());
  w.u64(0);
  Bytes b = w.bytes();
  EXPECT_EQ(b.size(), kOldHeader + payload.size() + 8);
  reseal(b);
  return b;
}

// Format version 4 stored every residue in a 64-bit word. The version 4 image
// of a current object: its payload walked as `layout` (runs of bytes kept as
// they are, and polynomials over a base, unpacked to words), under its header
// with version 4.
struct Run {
  std::size_t bytes = 0;
  const RnsBase* poly = nullptr;
};

Bytes as_version_four(const Bytes& current, const std::vector<Run>& layout) {
  const std::uint8_t* p = current.data() + kHeader;
  Writer w;
  w.raw(current.data(), kHeader);
  for (const Run& run : layout) {
    if (run.poly == nullptr) {
      w.raw(p, run.bytes);
      p += run.bytes;
      continue;
    }
    const RnsBase& base = *run.poly;
    std::vector<u64> words(base.n());
    for (std::size_t i = 0; i < base.size(); ++i) {
      const unsigned bits = io::residue_bits(base.modulus(i).value());
      EXPECT_TRUE(io::unpack_residues(p, base.n(), bits, base.modulus(i).value(), words.data()));
      p += io::packed_bytes(base.n(), bits);
      for (u64 v : words) w.u64(v);
    }
  }
  EXPECT_EQ(p, current.data() + current.size() - 8) << "the layout does not cover the payload";
  w.u64(0);
  Bytes b = w.bytes();
  b[4] = 4;
  b[5] = 0;
  write_le64(b.data() + kLengthAt, b.size() - kHeader - 8);
  reseal(b);
  return b;
}

// An unseeded ciphertext's payload: 39 bytes of fields, then its polynomials.
std::vector<Run> ciphertext_layout(const Ciphertext& c) {
  std::vector<Run> layout{{39, nullptr}};
  for (std::size_t p = 0; p < c.size(); ++p) layout.push_back({0, &c.base()});
  return layout;
}

// A seeded switching key's payload: 17 bytes of fields, then b_j and a seed per digit.
std::vector<Run> seeded_key_layout(const KeySwitchKey& k) {
  std::vector<Run> layout{{17, nullptr}};
  for (std::size_t j = 0; j < k.digits(); ++j) {
    layout.push_back({0, k.context()->extended_base(k.level()).get()});
    layout.push_back({32, nullptr});
  }
  return layout;
}

// Files of format version 1 (no noise estimate, complex flag or key source)
// and 2 (no length, a 64-bit fingerprint) and 3 (an FNV-1a checksum) still load.
TEST(IoRoundTrip, ReadsVersionOneFiles) {
  const Env& e = env();
  const std::uint64_t legacy = e.ctx->params().legacy_fingerprint();
  auto as_version_one = [&](const Bytes& current, std::size_t at, std::size_t count) {
    return as_old_version(current, 1, legacy, {{at, count}});
  };
  Prng prng = Prng::from_seed(seed_from(11));
  const auto z = e.values(18);
  const Ciphertext c = encrypt_public(e.pk, e.encode(z, 2), prng);
  const Bytes c_v4 = as_version_four(io::save(c), ciphertext_layout(c));
  const Bytes old_ct = as_version_one(c_v4, 16, 22);  // complex, form, correction, length, noise
  const Ciphertext loaded = io::load_ciphertext(e.rlwe, old_ct.data(), old_ct.size());
  EXPECT_FALSE(loaded.is_complex());
  // Version 1 recorded no estimate: a fresh encryption over Q's (how such files were made).
  EXPECT_NEAR(loaded.noise_bits(), noise::add(noise::fresh_public(*e.rlwe), noise::encoding(*e.rlwe)), 1e-9);
  EXPECT_TRUE(same_words(loaded.data(), c.data(), c.size() * c.poly_words()));
  const Bytes params = io::save(e.ctx->params());
  // scheme u8 + t u64 + reserved levels u32
  const Bytes old_params = as_version_one(params, params.size() - kHeader - 8 - 13, 13);
  const Parameters loaded_params = io::load_parameters(old_params.data(), old_params.size());
  EXPECT_EQ(loaded_params.scheme(), Scheme::ckks);
  EXPECT_EQ(loaded_params.fingerprint(), e.ctx->params().fingerprint());
  const Bytes old_rk = as_version_one(as_version_four(io::save(e.rk), seeded_key_layout(e.rk.key())), 4, 12);  // source u64, level u32
  expect_same_switch_key(io::load_relin_key(e.rlwe, old_rk.data(), old_rk.size()).key(), e.rk.key());
  // Version 2: the length (payload offset 26) is absent and means all slots.
  Ciphertext with_length = c.clone();
  with_length.set_length(5);
  const Bytes v3_blob = as_version_four(io::save(with_length), ciphertext_layout(with_length));
  EXPECT_EQ(io::load_ciphertext(e.rlwe, v3_blob.data(), v3_blob.size()).metadata().length, 5u);
  const Bytes v2_ct = as_old_version(v3_blob, 2, legacy, {{26, 4}});
  const Ciphertext from_v2 = io::load_ciphertext(e.rlwe, v2_ct.data(), v2_ct.size());
  EXPECT_EQ(from_v2.metadata().length, 0u);
  EXPECT_NEAR(from_v2.noise_bits(), c.noise_bits(), 1e-9);
  EXPECT_TRUE(same_words(from_v2.data(), c.data(), c.size() * c.poly_words()));
  // A version 2 file whose fingerprint is another parameter set's.
  const Bytes v2_other = as_old_version(v3_blob, 2, legacy ^ 1, {{26, 4}});
  expect_invalid([&] { io::load_ciphertext(e.rlwe, v2_other.data(), v2_other.size()); }, "fingerprint mismatch");
  // Version 4 differs from 5 only by its residues in 64-bit words.
  EXPECT_TRUE(same_words(io::load_ciphertext(e.rlwe, c_v4.data(), c_v4.size()).data(), c.data(), c.size() * c.poly_words()));
  const Bytes rk_v4 = as_version_four(io::save(e.rk), seeded_key_layout(e.rk.key()));
  expect_same_switch_key(io::load_relin_key(e.rlwe, rk_v4.data(), rk_v4.size()).key(), e.rk.key());
  // Words read as packed residues are refused (values above the primes, or bytes left over),
  // and packed residues read as words too short.
  Bytes v4_as_v5 = c_v4;
  v4_as_v5[4] = 5;
  reseal(v4_as_v5);
  expect_invalid([&] { io::load_ciphertext(e.rlwe, v4_as_v5.data(), v4_as_v5.size()); }, "corrupt");
  Bytes v5_as_v4 = io::save(c);
  v5_as_v4[4] = 4;
  reseal(v5_as_v4);
  expect_invalid([&] { io::load_ciphertext(e.rlwe, v5_as_v4.data(), v5_as_v4.size()); }, "truncated");
  // Version 3 differs from 4 only by its FNV-1a checksum.
  const Bytes v3 = [&] {
    Bytes b = c_v4;
    b[4] = 3;
    reseal(b);
    return b;
  }();
  EXPECT_TRUE(same_words(io::load_ciphertext(e.rlwe, v3.data(), v3.size()).data(), c.data(), c.size() * c.poly_words()));
  Bytes v3_with_new_checksum = v3;
  write_le64(v3_with_new_checksum.data() + v3.size() - 8, io::checksum64(v3.data(), v3.size() - 8));
  expect_invalid([&] { io::load_ciphertext(e.rlwe, v3_with_new_checksum.data(), v3_with_new_checksum.size()); },
                 "checksum mismatch");
  const Bytes newer = [&] {
    Bytes b = io::save(c);
    b[4] = io::kFormatVersion + 1;
    reseal(b);
    return b;
  }();
  expect_invalid([&] { io::load_ciphertext(e.rlwe, newer.data(), newer.size()); }, "written by a newer ringfire");
}

// Memory follows the input: a blob that declares large objects but holds
// few bytes fails before anything of the declared size is allocated.
TEST(IoMalformed, LoadsAllocateNoMoreThanTheirInput) {
  const Env& e = env();
  auto held = [] {
    const PoolStats s = host_pool().stats();
    return s.bytes_in_use + s.bytes_cached;
  };
  // Keep only the header and the first fields of each object.
  auto stub = [](const Bytes& full, std::size_t payload_bytes) {
    Bytes b(full.begin(), full.begin() + kHeader + payload_bytes);
    write_le64(b.data() + kLengthAt, payload_bytes);
    b.resize(b.size() + 8);
    reseal(b);
    return b;
  };
  Prng prng = Prng::from_seed(seed_from(10));
  const Ciphertext c = encrypt_public(e.pk, e.encode(e.values(16), 2), prng);
  const Plaintext p = e.encode(e.values(17), 2);
  // Each object cut after its leading fields (sizes, level, flags).
  const std::vector<std::pair<Bytes, std::function<void(const Bytes&)>>> cases{
      {stub(io::save(e.rk), 13), [&](const Bytes& b) { io::load_relin_key(e.rlwe, b.data(), b.size()); }},
      {stub(io::save(e.gk), 25), [&](const Bytes& b) { io::load_galois_keys(e.rlwe, b.data(), b.size()); }},
      {stub(io::save(e.pk), 39), [&](const Bytes& b) { io::load_public_key(e.rlwe, b.data(), b.size()); }},
      {stub(io::save(c), 39), [&](const Bytes& b) { io::load_ciphertext(e.rlwe, b.data(), b.size()); }},
      {stub(io::save(p), 27), [&](const Bytes& b) { io::load_plaintext(e.rlwe, b.data(), b.size()); }},
      {stub(io::save(e.sk), 10), [&](const Bytes& b) { io::load_secret_key(e.rlwe, b.data(), b.size()); }},
  };
  const std::size_t before = held();
  for (const auto& [blob, load] : cases) expect_invalid([&] { load(blob); }, "truncated");
  EXPECT_EQ(held(), before) << "a refused load allocated pool memory";
}

}  // namespace
}  // namespace ringfire
