#include "ringfire/ckks/decryptor.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "ringfire/base/errors.h"
#include "ringfire/base/op_label.h"
#include "ringfire/rlwe/encryptor.h"
#include "ringfire/rlwe/noise.h"
#include "ringfire/rlwe/sampling.h"

namespace ringfire::ckks {

namespace {

constexpr const char* kOp = "ckks.decrypt";

std::string bits_text(double bits) {
  char text[32];
  std::snprintf(text, sizeof text, "2^%.1f", bits);
  return text;
}

std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// log2 ||e||_2 from the imaginary parts of real slots (see the header).
double measured_noise_bits(const std::vector<Complex>& slots, double scale, std::size_t n) {
  double sum = 0.0;
  for (const Complex& z : slots) sum += z.imag() * z.imag();
  return 0.5 * std::log2(4.0 / static_cast<double>(n) * sum) + std::log2(scale);
}

void check_options(const DecryptOptions& options) {
  if (options.noise != DecryptionNoise::flooding) return;
  require(options.statistical_security >= 8.0 && options.statistical_security <= 128.0, kOp,
          "noise flooding takes 8 to 128 bits of statistical security, got " +
              number_text(options.statistical_security));
  require(options.decryptions >= 1.0 && std::isfinite(options.decryptions), kOp,
          "the number of decryptions must be at least 1, got " + number_text(options.decryptions));
}

}  // namespace

Decryption decrypt(const Context& context, const Ciphertext& cipher, const SecretKey& key,
                   const DecryptOptions& options, Prng& prng) {
  const OpLabel op_label("ckks.decrypt");
  check_options(options);
  require(cipher.fingerprint() == context.fingerprint(), kOp,
          "the ciphertext was made under different parameters (fingerprint mismatch)");
  const Encoder& encoder = context.encoder();
  const RlweContext& rlwe = *context.rlwe();
  const std::size_t n = rlwe.n();
  const double scale = cipher.scale();

  Decryption out;
  {
    Buffer m(cipher.poly_words());
    decrypt_core(key, cipher, m.data());
    out.slots = encoder.decode_coefficients(m.data(), cipher.level(), scale);
    secure_zero(m.data(), m.size() * sizeof(u64));  // m + e: never back to the pool as it is
  }
  out.noise_bits = std::max(cipher.noise_bits(), noise::encoding(rlwe));
  if (!cipher.is_complex()) {
    out.measured = true;
    const double measured = std::max(measured_noise_bits(out.slots, scale, n), noise::encoding(rlwe));
    out.noise_bits = options.noise == DecryptionNoise::flooding ? std::max(measured, out.noise_bits) : measured;
  }
  // Slot rms error = ||e_total||_2 / scale (Parseval), so precision = log2(scale) - log2 ||e_total||.
  const double noise_precision = std::log2(scale) - out.noise_bits;
  if (options.noise != DecryptionNoise::insecure_exact)
    require(noise_precision > 0.0, kOp,
            "the ciphertext's noise (" + bits_text(out.noise_bits) + ") exceeds its scale (" +
                bits_text(std::log2(scale)) +
                "): the result would be noise. The values outgrew what the parameters hold, the computation was "
                "deeper than its levels allow, or the ciphertext was not made by this key");

  double sigma_bits = -std::numeric_limits<double>::infinity();
  if (options.noise == DecryptionNoise::estimate) {
    // sqrt(2) times the per-coefficient noise ||e|| / sqrt(N).
    sigma_bits = out.noise_bits - 0.5 * std::log2(static_cast<double>(n)) + 0.5;
  } else if (options.noise == DecryptionNoise::flooding) {
    sigma_bits = out.noise_bits + options.statistical_security / 2.0 + 0.5 * std::log2(options.decryptions);
  }
  out.added_noise_bits = sigma_bits;
  // Total error norm: ||e||^2 + N sigma^2.
  const double total_bits = noise::add(2.0 * out.noise_bits, 2.0 * sigma_bits + std::log2(static_cast<double>(n))) / 2.0;
  out.precision_bits = std::log2(scale) - total_bits;
  if (options.noise == DecryptionNoise::flooding)
    require(out.precision_bits > 0.0, kOp,
            "noise flooding at " + number_text(options.statistical_security) + " bits of statistical security over " +
                number_text(options.decryptions) + " decryption(s) adds " + bits_text(sigma_bits) +
                " per coefficient to a ciphertext of noise " + bits_text(out.noise_bits) +
                ", which leaves no precision at its scale " + bits_text(std::log2(scale)) +
                ": 10 bits of precision need a scale above " + bits_text(total_bits + 10.0) +
                " here (larger scale_bits and base prime), or fewer bits of statistical security or decryptions");

  if (options.noise != DecryptionNoise::insecure_exact) {
    // Gaussian noise of sigma on each of the N coefficients is, after the
    // canonical embedding, independent complex Gaussian noise on the N/2
    // slots with real and imaginary parts of deviation sqrt(N/2) sigma
    // (the embedding is sqrt(N) times a unitary map of the coefficients):
    // the same distribution, added without a second FFT.
    const double slot_sigma = std::exp2(sigma_bits) * std::sqrt(static_cast<double>(n) / 2.0) / scale;
    std::vector<double> flood(n);
    sample_wide_gaussian(prng, flood.data(), n, slot_sigma);
    for (std::size_t j = 0; j < out.slots.size(); ++j) out.slots[j] += Complex(flood[2 * j], flood[2 * j + 1]);
    secure_zero(flood.data(), flood.size() * sizeof(double));
  }
  return out;
}

}  // namespace ringfire::ckks
