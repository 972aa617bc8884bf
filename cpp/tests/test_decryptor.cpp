// CKKS decryption modes (ckks/decryptor.h): the exact mode is the raw
// decoding, the default adds noise of the ciphertext's measured size, flooding
// adds the amount its formula states; the carried noise estimates follow the
// measured noise through the operations; noise-only results are refused; and
// the scratch copy of m + e never returns to the pool unwiped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <random>
#include <vector>

#include "ckks_test_support.h"
#include "ringfire/ckks/decryptor.h"
#include "ringfire/ckks/evaluator.h"
#include "ringfire/rlwe/encryptor.h"
#include "ringfire/rlwe/keygen.h"

namespace ringfire {
namespace {

using ckks::Complex;
using ckks::DecryptionNoise;
using ckks::DecryptOptions;
using test::expect_invalid;
using test::small_literal;

struct Keys {
  ckks::ContextPtr ctx = std::make_shared<const ckks::Context>(Parameters(small_literal()));
  Prng prng = Prng::from_seed(Prng::Seed{42});
  SecretKey sk = generate_secret_key(ctx->rlwe(), prng);
  PublicKey pk = generate_public_key(sk, prng);
  RelinKey rk = generate_relin_key(sk, prng);
  GaloisKeys gk = generate_galois_keys(sk, {ctx->rlwe()->galois_element(3)}, prng);
  ckks::Evaluator ev{ctx};

  Ciphertext encrypt(const std::vector<Complex>& z, std::size_t level) {
    const Plaintext p = ctx->encoder().encode(z.data(), z.size(), level, ctx->scale_at(level));
    return encrypt_public(pk, p, prng);
  }
  ckks::Decryption decrypt(const Ciphertext& c, DecryptionNoise noise, double s = 40.0) {
    DecryptOptions options;
    options.noise = noise;
    options.statistical_security = s;
    return ckks::decrypt(*ctx, c, sk, options, prng);
  }
};

Keys& keys() {
  static Keys k;
  return k;
}

std::vector<Complex> real_values(std::size_t count, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<Complex> z(count);
  for (auto& v : z) v = Complex(u(rng), 0.0);
  return z;
}

// Root mean square of a - b over the slots.
double rms(const std::vector<Complex>& a, const std::vector<Complex>& b) {
  double sum = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += std::norm(a[i] - b[i]);
  return std::sqrt(sum / static_cast<double>(a.size()));
}

TEST(Decryptor, ExactModeIsTheRawDecoding) {
  Keys& k = keys();
  const auto z = real_values(k.ctx->slots(), 1);
  const Ciphertext c = k.encrypt(z, 2);
  Buffer m(c.poly_words());
  decrypt_core(k.sk, c, m.data());
  const auto raw = k.ctx->encoder().decode_coefficients(m.data(), c.level(), c.scale());
  EXPECT_EQ(k.decrypt(c, DecryptionNoise::insecure_exact).slots, raw);
}

TEST(Decryptor, DefaultAddsNoiseOfTheMeasuredSize) {
  Keys& k = keys();
  const auto z = real_values(k.ctx->slots(), 2);
  const Ciphertext c = k.encrypt(z, 2);
  const auto exact = k.decrypt(c, DecryptionNoise::insecure_exact);
  const auto noisy = k.decrypt(c, DecryptionNoise::estimate);
  ASSERT_TRUE(noisy.measured);
  // The measured noise of a fresh public-key encryption agrees with its estimate.
  EXPECT_NEAR(noisy.noise_bits, c.noise_bits(), 1.0);
  // sqrt(2) times the per-coefficient noise: added noise_bits - log2(N)/2 + 1/2.
  const double n = static_cast<double>(k.ctx->rlwe()->n());
  EXPECT_NEAR(noisy.added_noise_bits, noisy.noise_bits - 0.5 * std::log2(n) + 0.5, 1e-9);
  // A Gaussian of sigma per coefficient moves the slots by sqrt(N) sigma / scale (rms).
  const double expected = std::sqrt(n) * std::exp2(noisy.added_noise_bits) / c.scale();
  const double moved = rms(noisy.slots, exact.slots);
  EXPECT_GT(moved, 0.8 * expected);
  EXPECT_LT(moved, 1.25 * expected);
  // The reported precision is the one observed against the true values.
  EXPECT_NEAR(-std::log2(rms(noisy.slots, z)), noisy.precision_bits, 0.5);
}

TEST(Decryptor, FloodingAddsWhatItsFormulaStates) {
  Keys& k = keys();
  const auto z = real_values(k.ctx->slots(), 3);
  const Ciphertext c = k.encrypt(z, 2);
  for (double s : {8.0, 16.0, 24.0}) {
    const auto flooded = k.decrypt(c, DecryptionNoise::flooding, s);
    EXPECT_NEAR(flooded.added_noise_bits, flooded.noise_bits + s / 2.0, 1e-9) << s;
    EXPECT_NEAR(-std::log2(rms(flooded.slots, z)), flooded.precision_bits, 0.5) << s;
  }
  // 64 bits of statistical distance at a 40-bit scale leave nothing (the noise
  // grows by 32 bits over a fresh one's): refused, with the scale it needs.
  expect_invalid([&] { k.decrypt(c, DecryptionNoise::flooding, 64.0); }, "need a scale above");
  expect_invalid([&] { k.decrypt(c, DecryptionNoise::flooding, 4.0); }, "8 to 128 bits of statistical security, got 4");
}

TEST(Decryptor, ComplexDataUsesTheCarriedEstimate) {
  Keys& k = keys();
  std::vector<Complex> z = real_values(k.ctx->slots(), 4);
  z[0] = Complex(0.25, 0.5);
  const Ciphertext c = k.encrypt(z, 2);
  ASSERT_TRUE(c.is_complex());
  const auto d = k.decrypt(c, DecryptionNoise::estimate);
  EXPECT_FALSE(d.measured);
  EXPECT_EQ(d.noise_bits, c.noise_bits());
  EXPECT_GT(-std::log2(std::abs(d.slots[0] - z[0])), 20.0);
}

// The carried estimate follows the measured noise through the operations
// (within 2 bits, on data in [-1, 1]).
TEST(Decryptor, CarriedEstimatesFollowTheMeasuredNoise) {
  Keys& k = keys();
  const auto x = real_values(k.ctx->slots(), 5), y = real_values(k.ctx->slots(), 6);
  const Ciphertext a = k.encrypt(x, 2), b = k.encrypt(y, 2);
  const Ciphertext product = k.ev.rescale(k.ev.relinearize(k.ev.multiply(a, b), k.rk));
  const Ciphertext rotated = k.ev.rotate(a, 3, k.gk);
  const Ciphertext scaled = k.ev.rescale(k.ev.multiply_scalar(a, Complex(0.3, 0.0), 0x1p40));
  const Ciphertext sum = k.ev.add(a, b);
  const Ciphertext deeper = k.ev.rescale(k.ev.relinearize(k.ev.multiply(product, k.ev.mod_switch(a, 1)), k.rk));
  for (const Ciphertext* c : {&product, &rotated, &scaled, &sum, &deeper}) {
    const auto d = k.decrypt(*c, DecryptionNoise::estimate);
    EXPECT_NEAR(c->noise_bits(), d.noise_bits, 2.0) << "level " << c->level();
  }
}

// Evaluator::restore_imaginary_noise: a ciphertext whose real parts carry
// more error than its imaginary parts (as after x + conj(x)) gets noise of
// its estimate there, which decryption then measures; its real parts stay.
TEST(Decryptor, NoisePutBackInTheImaginaryPartsIsMeasured) {
  Keys& k = keys();
  const auto z = real_values(k.ctx->slots(), 9);
  Ciphertext c = k.encrypt(z, 2);
  const auto before = k.decrypt(c, DecryptionNoise::insecure_exact);
  c.set_noise_bits(c.noise_bits() + 6.0);  // what the real parts would hold
  Ciphertext again = c.clone();
  k.ev.restore_imaginary_noise(c);
  k.ev.restore_imaginary_noise(again);
  EXPECT_FALSE(c.is_complex());
  EXPECT_NEAR(c.noise_bits(), before.noise_bits + 6.0, 1.0);
  const auto after = k.decrypt(c, DecryptionNoise::estimate);
  ASSERT_TRUE(after.measured);
  EXPECT_NEAR(after.noise_bits, c.noise_bits(), 0.3);
  const auto raw = k.decrypt(c, DecryptionNoise::insecure_exact);
  double moved = 0.0;
  for (std::size_t j = 0; j < z.size(); ++j) moved = std::max(moved, std::abs(raw.slots[j].real() - before.slots[j].real()));
  EXPECT_LT(moved, 0x1p-36);  // the plaintext's rounding only, at scale 2^40
  // Seeded by the ciphertext: the same words, the same draw.
  EXPECT_TRUE(std::equal(c.data(), c.data() + 2 * c.poly_words(), again.data()));
  std::vector<Complex> w = z;
  w[0] = Complex(0.0, 1.0);
  Ciphertext complex_data = k.encrypt(w, 2);
  expect_invalid([&] { k.ev.restore_imaginary_noise(complex_data); }, "applies to real ciphertexts");
}

TEST(Decryptor, NoiseOnlyResultsAreRefused) {
  Keys& k = keys();
  Prng prng = Prng::from_seed(Prng::Seed{7});
  const SecretKey stranger = generate_secret_key(k.ctx->rlwe(), prng);
  const Ciphertext c = k.encrypt(real_values(k.ctx->slots(), 7), 2);
  DecryptOptions options;
  expect_invalid([&] { ckks::decrypt(*k.ctx, c, stranger, options, prng); }, "exceeds its scale");
  options.noise = DecryptionNoise::insecure_exact;  // the raw noise, for those who ask
  EXPECT_NO_THROW(ckks::decrypt(*k.ctx, c, stranger, options, prng));
}

TEST(Decryptor, TheScratchCopyOfTheMessageIsWiped) {
  Keys& k = keys();
  const Ciphertext c = k.encrypt(real_values(k.ctx->slots(), 8), 2);
  host_pool().flush();  // the next block of this size is the one decrypt used
  (void)k.decrypt(c, DecryptionNoise::estimate);
  const Buffer reused(c.poly_words());
  for (std::size_t i = 0; i < reused.size(); ++i) ASSERT_EQ(reused.data()[i], 0u) << "word " << i;
}

}  // namespace
}  // namespace ringfire
