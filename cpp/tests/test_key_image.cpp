// Key images (io/key_image.h): mapped keys hold the same words as the keys
// they were written from and switch to bit-identical ciphertexts; seeded keys
// come back seeded; the mapping outlives the file's name; and a foreign,
// truncated, padded or corrupted image raises InvalidArgument before anything
// is read out of bounds. Fixed seeds throughout.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ckks_test_support.h"
#include "ringfire/base/errors.h"
#include "ringfire/ckks/evaluator.h"
#include "ringfire/io/key_image.h"
#include "ringfire/rlwe/encryptor.h"
#include "ringfire/rlwe/keygen.h"
#include "ringfire/rlwe/prng.h"

namespace ringfire {
namespace {

using test::expect_invalid;
using test::small_literal;

Prng::Seed seed_of(std::uint8_t first) {
  Prng::Seed seed{};
  for (std::size_t i = 0; i < seed.size(); ++i) seed[i] = static_cast<std::uint8_t>(first * 7 + 13 * i);
  return seed;
}

struct Env {
  ckks::ContextPtr ctx;
  SecretKey sk;
  PublicKey pk;
  RelinKey rk;
  GaloisKeys gk;
};

Env& env() {
  static Env e = [] {
    auto ctx = std::make_shared<const ckks::Context>(Parameters(small_literal()));
    Prng prng = Prng::from_seed(seed_of(1));
    SecretKey sk = generate_secret_key(ctx->rlwe(), prng);
    PublicKey pk = generate_public_key(sk, prng);
    RelinKey rk = generate_relin_key(sk, prng);
    GaloisKeys gk =
        generate_galois_keys(sk, {ctx->rlwe()->galois_element(1), ctx->rlwe()->galois_element(5)}, prng);
    return Env{ctx, std::move(sk), std::move(pk), std::move(rk), std::move(gk)};
  }();
  return e;
}

// A file in the temporary directory, removed with the object.
struct TempPath {
  std::string path;
  explicit TempPath(const std::string& name)
      : path((std::filesystem::temp_directory_path() /
              ("ringfire-key-image-" + std::to_string(::getpid()) + "-" + name))
                 .string()) {}
  ~TempPath() { std::filesystem::remove(path); }
};

std::vector<std::uint8_t> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_all(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void expect_same_key(const KeySwitchKey& a, const KeySwitchKey& b) {
  ASSERT_EQ(a.digits(), b.digits());
  ASSERT_EQ(a.level(), b.level());
  EXPECT_EQ(a.source(), b.source());
  for (std::size_t j = 0; j < a.digits(); ++j) {
    EXPECT_TRUE(std::equal(a.b(j), a.b(j) + a.poly_words(), b.b(j))) << "b of digit " << j;
    EXPECT_TRUE(std::equal(a.a(j), a.a(j) + a.poly_words(), b.a(j))) << "a of digit " << j;
  }
}

void expect_same_ciphertext(const Ciphertext& a, const Ciphertext& b) {
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.level(), b.level());
  EXPECT_TRUE(std::equal(a.data(), a.data() + a.size() * a.poly_words(), b.data()));
}

Ciphertext some_ciphertext(std::uint8_t seed) {
  const Env& e = env();
  std::vector<ckks::Complex> z(e.ctx->slots());
  for (std::size_t i = 0; i < z.size(); ++i) z[i] = {0.001 * static_cast<double>(i % 97), -0.5};
  const std::size_t level = e.ctx->rlwe()->max_level();
  Prng prng = Prng::from_seed(seed_of(seed));
  return encrypt_public(e.pk, e.ctx->encoder().encode(z.data(), z.size(), level, e.ctx->scale_at(level)), prng);
}

TEST(KeyImage, ExpandedKeysMapToTheSameWordsAndSwitchTheSame) {
  const Env& e = env();
  e.rk.key().expand();
  TempPath relin("relin"), galois("galois");
  const std::uint64_t written = io::save_image(e.rk, relin.path);
  EXPECT_EQ(written, std::filesystem::file_size(relin.path));
  EXPECT_EQ(io::image_kind(relin.path), io::Kind::relin_key);
  const RelinKey rk = io::map_relin_key(e.ctx->rlwe(), relin.path, true);
  EXPECT_TRUE(rk.key().mapped());
  EXPECT_TRUE(rk.key().expanded());
  expect_same_key(rk.key(), e.rk.key());

  e.gk.get(e.ctx->rlwe()->galois_element(1)).expand();
  e.gk.get(e.ctx->rlwe()->galois_element(5)).expand();
  io::save_image(e.gk, galois.path);
  const GaloisKeys gk = io::map_galois_keys(e.ctx->rlwe(), galois.path, true);
  EXPECT_EQ(gk.elements(), e.gk.elements());
  for (u64 g : gk.elements()) expect_same_key(gk.get(g), e.gk.get(g));

  // The name can go: the mapping keeps the pages.
  std::filesystem::remove(relin.path);
  ckks::Evaluator ev(e.ctx);
  const Ciphertext a = some_ciphertext(2), b = some_ciphertext(3);
  expect_same_ciphertext(ev.relinearize(ev.multiply(a, b), rk), ev.relinearize(ev.multiply(a, b), e.rk));
  expect_same_ciphertext(ev.rotate(a, 5, gk), ev.rotate(a, 5, e.gk));
}

TEST(KeyImage, SeededKeysKeepTheirSeedsAndExpandAsBefore) {
  const Env& e = env();
  Prng prng = Prng::from_seed(seed_of(9));
  const RelinKey seeded = generate_relin_key(e.sk, prng);
  ASSERT_FALSE(seeded.key().expanded());
  TempPath path("seeded");
  io::save_image(seeded, path.path);
  EXPECT_LT(std::filesystem::file_size(path.path), seeded.key().bytes() / 2 + 64 * 1024);
  const RelinKey mapped = io::map_relin_key(e.ctx->rlwe(), path.path, true);
  EXPECT_TRUE(mapped.key().mapped());
  EXPECT_FALSE(mapped.key().expanded());
  EXPECT_EQ(mapped.key().seeds(), seeded.key().seeds());
  // Written expanded from the seeds, a digit at a time: the image maps expanded, the key stays seeded.
  TempPath expanded("expanded");
  io::save_image(seeded, expanded.path, true);
  const RelinKey whole = io::map_relin_key(e.ctx->rlwe(), expanded.path, true);
  EXPECT_TRUE(whole.key().mapped());
  EXPECT_TRUE(whole.key().expanded());
  EXPECT_FALSE(seeded.key().expanded());
  expect_same_key(whole.key(), seeded.key());  // reading the seeded key's a_j expands it (after the check above)
  expect_same_key(mapped.key(), seeded.key());  // reading a_j expands both from the same seeds
}

TEST(KeyImage, RefusesForeignTruncatedPaddedAndCorruptImages) {
  const Env& e = env();
  TempPath good("good"), bad("bad");
  io::save_image(e.rk, good.path);
  const std::vector<std::uint8_t> bytes = read_all(good.path);
  const RlweContextPtr& rlwe = e.ctx->rlwe();
  auto refused = [&](const std::vector<std::uint8_t>& image, const std::string& fragment, bool verify = true) {
    write_all(bad.path, image);
    expect_invalid([&] { (void)io::map_relin_key(rlwe, bad.path, verify); }, fragment);
  };
  // Truncated anywhere: in the header, the table, the padding, the keys.
  for (std::size_t size : {std::size_t{0}, std::size_t{7}, std::size_t{79}, std::size_t{100}, std::size_t{4096},
                           bytes.size() / 2, bytes.size() - 1})
    refused(std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + static_cast<long>(size)),
            size < 80 ? "truncated" : "");
  // A byte appended.
  {
    std::vector<std::uint8_t> padded = bytes;
    padded.push_back(0);
    refused(padded, "truncated or padded");
  }
  // Every header and table byte flipped: the magic, the version, or the header's checksum catches it.
  std::size_t table_end = 80;  // the header, then the table (its length is the u64 at byte 64)
  for (int i = 0; i < 8; ++i) table_end += static_cast<std::size_t>(bytes[64 + i]) << (8 * i);
  ASSERT_LT(table_end, 4096u);
  for (std::size_t i = 0; i < 4096 && i < bytes.size(); i += (i < table_end ? 1 : 97)) {
    std::vector<std::uint8_t> flipped = bytes;
    flipped[i] ^= 0x20;
    write_all(bad.path, flipped);
    if (i >= table_end) {  // the padding before the data is not covered; it must still map
      EXPECT_NO_THROW((void)io::map_relin_key(rlwe, bad.path, true)) << "byte " << i;
      continue;
    }
    expect_invalid([&] { (void)io::map_relin_key(rlwe, bad.path, true); }, "");
  }
  // A key word flipped: the data checksum, when verified.
  {
    std::vector<std::uint8_t> flipped = bytes;
    flipped[bytes.size() - 100] ^= 1;
    refused(flipped, "checksum");
    write_all(bad.path, flipped);
    EXPECT_NO_THROW((void)io::map_relin_key(rlwe, bad.path, false));  // documented: verify reads the data
  }
  // The wrong kind, and other parameters.
  expect_invalid([&] { (void)io::map_galois_keys(rlwe, good.path, true); }, "not a Galois key set");
  ParameterLiteral other = small_literal();
  other.q_bits = {50, 40, 41};
  auto foreign = std::make_shared<const ckks::Context>(Parameters(other));
  expect_invalid([&] { (void)io::map_relin_key(foreign->rlwe(), good.path, true); }, "other parameters");
  expect_invalid([&] { (void)io::image_kind(good.path + ".missing"); }, "cannot open");
}

}  // namespace
}  // namespace ringfire
