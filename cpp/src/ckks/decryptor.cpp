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

double log2_modulus(const Context& context, std::size_t level) {
  double bits = 0.0;
  for (std::size_t i = 0; i <= level; ++i) bits += std::log2(static_cast<double>(context.params().q_primes()[i]));
  return bits;
}

// Values whose coefficients reach Q_l / 2 wrap around modulo Q_l and decrypt
// wrong. A legitimate coefficient is at most scale * max|x| (the coefficients
// are averages of the slots), so values below max_value(level) = Q_l / (2
// scale) cannot wrap; a wrapped one is a residue anywhere in (-Q_l/2, Q_l/2],
// most often (data just past the wrap point) near -Q_l/2. So a coefficient of
// Q_l / 4 or more is refused unless a known bound on the values proves it
// legitimate: without a bound, data between max_value / 2 and max_value is
// refused too (the documented price of deciding from the coefficients
// alone). The imaginary parts, which reveal most other wraps, stay clean
// when only the constant coefficient wraps: data with a large mean.
void check_not_wrapped(const Context& context, std::size_t level, double scale, double largest_bits,
                       double value_bound) {
  const double modulus_bits = log2_modulus(context, level);
  if (!(largest_bits >= modulus_bits - 2.0)) return;
  const double max_value_bits = modulus_bits - 1.0 - std::log2(scale);
  if (value_bound >= 0.0 && std::log2(value_bound) < max_value_bits) return;
  throw_invalid(kOp, "the values outgrew level " + std::to_string(level) + ": a coefficient reached " +
      bits_text(largest_bits) + " where the level's modulus is " + bits_text(modulus_bits) + ", so at scale " +
      bits_text(std::log2(scale)) + " the slots held values near or beyond max_value(" + std::to_string(level) +
      ") = " + bits_text(max_value_bits) + " and may have wrapped (wrong, not noisy). Fixes: a larger first prime "
      "(coeff_bits[0]) or a smaller scale (scale_bits), scaling the data down before encrypting, fewer levels "
      "spent before the large values appear, or bootstrap(bound=...) to refresh them at full range");
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
  double largest_bits = 0.0;
  {
    Buffer m(cipher.poly_words());
    decrypt_core(key, cipher, m.data());
    out.slots = encoder.decode_coefficients(m.data(), cipher.level(), scale, &largest_bits);
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
  // After the noise check, whose message also covers a wrong key (garbage fills the
  // coefficients too); `insecure_exact` returns the raw values, as it does the raw noise.
  if (options.noise != DecryptionNoise::insecure_exact)
    check_not_wrapped(context, cipher.level(), scale, largest_bits, options.value_bound);

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
