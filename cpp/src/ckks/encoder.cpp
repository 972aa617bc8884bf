#include "ringfire/ckks/encoder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <vector>

#include "ringfire/arith/integral_doubles.h"
#include "ringfire/arith/modular.h"
#include "ringfire/base/errors.h"
#include "ringfire/base/op_label.h"
#include "ringfire/ring/multiword.h"
#include "ringfire/rlwe/prng.h"
#include "special_fft.h"

namespace ringfire::ckks {

namespace {

double log2_of(const std::vector<u64>& words) {
  double value = 0.0;
  for (std::size_t i = words.size(); i-- > 0;) value = value * 0x1p64 + static_cast<double>(words[i]);
  return std::log2(value);
}

// Raises unless |magnitude| (the largest scaled coefficient) is finite and
// fits the modulus of `base` with a bit to spare for the sign.
void require_fits(double magnitude, const RnsBase& base, std::size_t level, const char* op, const std::string& what,
                  const std::string& where, const std::string& advice) {
  require(std::isfinite(magnitude), op, what + " infinity" + where + " (the product overflows a double)" + advice);
  const double q_bits = log2_of(base.product());
  if (magnitude == 0.0 || std::log2(magnitude) < q_bits - 1) return;
  char bits[32];
  std::snprintf(bits, sizeof bits, "2^%.1f", std::log2(magnitude));
  throw_invalid(op, what + " " + bits + where + ", which does not fit the " +
                        std::to_string(static_cast<int>(q_bits)) + "-bit modulus at level " + std::to_string(level) +
                        advice);
}

// A plaintext's metadata: its scale, and whether any value has an imaginary part.
Metadata metadata_of(const Complex* values, std::size_t count, double scale) {
  Metadata meta{.scale = scale};
  meta.complex = std::any_of(values, values + count, [](const Complex& v) { return v.imag() != 0.0; });
  return meta;
}

}  // namespace

Encoder::Encoder(RlweContextPtr context)
    : context_(std::move(context)),
      n_(context_->n()),
      slots_(n_ / 2),
      roots_(2 * n_ + 1),
      bit_reverse_(slots_) {
  const std::size_t m = 2 * n_;
  for (std::size_t k = 0; k <= m; ++k) {
    const double angle = 2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(m);
    roots_[k] = Complex(std::cos(angle), std::sin(angle));
  }
  int log_slots = 0;
  while ((std::size_t{1} << log_slots) < slots_) ++log_slots;
  for (std::size_t i = 0; i < slots_; ++i) bit_reverse_[i] = reverse_bits(i, log_slots);
  const std::vector<u64>& rot_group = context_->rotation_group();  // 5^j mod 2N
  forward_twiddles_.resize(slots_ > 1 ? slots_ - 1 : 0);
  inverse_twiddles_.resize(forward_twiddles_.size());
  for (std::size_t len = 2; len <= slots_; len <<= 1) {
    const std::size_t half = len >> 1, quarter_m = len << 2;
    for (std::size_t j = 0; j < half; ++j) {
      const u64 r = rot_group[j] % quarter_m;
      forward_twiddles_[half - 1 + j] = roots_[r * (m / quarter_m)];
      inverse_twiddles_[half - 1 + j] = roots_[(quarter_m - r) * (m / quarter_m)];
    }
  }
}

// z_j = sum_k w_k xi^(5^j k): decimation in time over the rotation group;
// at block length len the twiddle is a primitive (4 len)-th root raised to 5^j.
void Encoder::fft_forward(Complex* v) const {
  const std::size_t n = slots_;
  for (std::size_t i = 0; i < n; ++i)
    if (i < bit_reverse_[i]) std::swap(v[i], v[bit_reverse_[i]]);
  for (std::size_t len = 2; len <= n; len <<= 1)
    special_fft::forward_stage(v, n, len, forward_twiddles_.data() + (len / 2 - 1));
}

// The exact inverse of fft_forward, including the 1/n.
void Encoder::fft_inverse(Complex* v) const {
  const std::size_t n = slots_;
  for (std::size_t len = n; len >= 2; len >>= 1)
    special_fft::inverse_stage(v, n, len, inverse_twiddles_.data() + (len / 2 - 1));
  for (std::size_t i = 0; i < n; ++i)
    if (i < bit_reverse_[i]) std::swap(v[i], v[bit_reverse_[i]]);
  const double inv = 1.0 / static_cast<double>(n);
  for (std::size_t i = 0; i < n; ++i) v[i] *= inv;
}

std::vector<Complex> Encoder::coefficients_to_slots(const std::vector<double>& coeffs) const {
  require(coeffs.size() == n_, "ckks.decode", "expected " + std::to_string(n_) + " coefficients");
  std::vector<Complex> w(slots_);
  for (std::size_t k = 0; k < slots_; ++k) w[k] = Complex(coeffs[k], coeffs[k + slots_]);
  fft_forward(w.data());
  return w;
}

std::vector<double> Encoder::slots_to_coefficients(const std::vector<Complex>& slots) const {
  require(slots.size() == slots_, "ckks.encode", "expected " + std::to_string(slots_) + " slots");
  std::vector<Complex> w(slots);
  fft_inverse(w.data());
  std::vector<double> coeffs(n_);
  for (std::size_t k = 0; k < slots_; ++k) {
    coeffs[k] = w[k].real();
    coeffs[k + slots_] = w[k].imag();
  }
  return coeffs;
}

std::vector<u64> Encoder::scalar_residues(double value, std::size_t level, double scale, const char* op) const {
  require(std::isfinite(value), op, "values must be finite");
  require(std::isfinite(scale) && scale > 0, op, "scale must be positive and finite");
  const RnsBase& base = *context_->level_base(level);
  const double scaled = std::round(value * scale);
  require_fits(std::fabs(scaled), base, level, op, "value * scale reaches", "", "");
  std::vector<u64> residues(base.size());
  for (std::size_t i = 0; i < base.size(); ++i) residues[i] = reduce_integral_double(scaled, base.modulus(i));
  return residues;
}

bool Encoder::check_values(const Complex* values, std::size_t count, std::size_t level, double scale) const {
  constexpr const char* op = "ckks.encode";
  require(count <= slots_, op, "got " + std::to_string(count) + " values but there are only " +
                                   std::to_string(slots_) + " slots");
  require(std::isfinite(scale) && scale > 0, op, "scale must be positive and finite");
  require(level <= context_->max_level(), op, "level " + std::to_string(level) + " exceeds the maximum " +
                                                  std::to_string(context_->max_level()));
  bool uniform_real = count > 0;
  for (std::size_t i = 0; i < count; ++i) {
    require(std::isfinite(values[i].real()) && std::isfinite(values[i].imag()), op, "values must be finite");
    uniform_real = uniform_real && values[i] == values[0] && values[i].imag() == 0.0;
  }
  return uniform_real;
}

void Encoder::coefficients_into(const Complex* values, std::size_t count, std::size_t level, double scale,
                                u64* out) const {
  // The slots' transform in place in a buffer this thread keeps (three fresh vectors of N/2
  // complex numbers a call cost a fifth of an encoding in the allocator).
  thread_local std::vector<Complex> w;
  w.assign(slots_, Complex(0.0, 0.0));
  std::copy(values, values + count, w.begin());
  fft_inverse(w.data());
  const RnsBase& base = *context_->level_base(level);
  // Coefficient k is w[k].real() below N/2 and w[k - N/2].imag() from there: laid out in that
  // order, scaled and rounded, so that each limb reduces one contiguous row.
  thread_local std::vector<double> coeffs;
  coeffs.resize(n_);
  double largest = 0.0;
  for (std::size_t k = 0; k < slots_; ++k) {
    coeffs[k] = std::round(w[k].real() * scale);
    coeffs[k + slots_] = std::round(w[k].imag() * scale);
    largest = std::max({largest, std::fabs(coeffs[k]), std::fabs(coeffs[k + slots_])});
  }
  require_fits(largest, base, level, "ckks.encode", "values * scale reach", " in the coefficients",
               "; lower the scale or the values");
  for (std::size_t i = 0; i < base.size(); ++i)
    reduce_integral_doubles(coeffs.data(), n_, largest, base.modulus(i), out + i * n_);
}

Plaintext Encoder::encode(const Complex* values, std::size_t count, std::size_t level, double scale) const {
  const OpLabel op_label("ckks.encode");
  if (check_values(values, count, level, scale) && count == slots_) return encode_scalar(values[0], level, scale);
  Plaintext plain(context_, level, metadata_of(values, count, scale), Device::cpu(), kUninitialized);
  coefficients_into(values, count, level, scale, plain.data());
  backend_for(plain.device()).ntt_forward(plain.data(), 1, *context_->level_base(level));
  return plain;
}

Metadata Encoder::encode_coefficients(const Complex* values, std::size_t count, std::size_t level, double scale,
                                      u64* out) const {
  const OpLabel op_label("ckks.encode");
  if (check_values(values, count, level, scale) && count == slots_) {
    // encode_scalar's constant in every evaluation point is the constant coefficient alone.
    const std::vector<u64> residues = scalar_residues(values[0].real(), level, scale, "ckks.encode");
    std::fill_n(out, residues.size() * n_, u64{0});
    for (std::size_t i = 0; i < residues.size(); ++i) out[i * n_] = residues[i];
    return Metadata{.scale = scale};
  }
  coefficients_into(values, count, level, scale, out);
  return metadata_of(values, count, scale);
}

Plaintext Encoder::encode_scalar(Complex value, std::size_t level, double scale) const {
  const OpLabel op_label("ckks.encode");
  if (value.imag() != 0.0) {
    // i in every slot is X^(N/2), so a complex constant is a + b X^(N/2):
    // not a constant polynomial, and not eligible for the scalar shortcut.
    const RnsBase& base = *context_->level_base(level);
    const std::vector<u64> re = scalar_residues(value.real(), level, scale, "ckks.encode");
    const std::vector<u64> im = scalar_residues(value.imag(), level, scale, "ckks.encode");
    Plaintext plain(context_, level, Metadata{.scale = scale, .complex = true});
    for (std::size_t i = 0; i < base.size(); ++i) {
      plain.data()[i * n_] = re[i];
      plain.data()[i * n_ + slots_] = im[i];
    }
    backend_for(plain.device()).ntt_forward(plain.data(), 1, base);
    return plain;
  }
  std::vector<u64> residues = scalar_residues(value.real(), level, scale, "ckks.encode");
  Plaintext plain(context_, level, Metadata{.scale = scale}, Device::cpu(), kUninitialized);
  // A constant polynomial is the same constant at every evaluation point.
  for (std::size_t i = 0; i < residues.size(); ++i) std::fill_n(plain.data() + i * n_, n_, residues[i]);
  plain.set_scalar(std::move(residues), value);
  return plain;
}

std::vector<Complex> Encoder::decode_coefficients(const u64* coeffs, std::size_t level, double scale,
                                                  double* largest_bits) const {
  const RnsBase& base = *context_->level_base(level);
  const std::size_t len = base.size();
  std::vector<u64> words(n_ * len);
  base.compose(coeffs, n_, words.data());
  // Centre: values above Q/2 stand for value - Q.
  std::vector<u64> half(base.product());
  for (std::size_t i = 0; i < len; ++i) half[i] = (half[i] >> 1) | (i + 1 < len ? half[i + 1] << 63 : 0);
  std::vector<u64> negated(len);
  std::vector<double> real(n_);
  const double inv_scale = 1.0 / scale;
  double largest = 0.0;  // in units of the scale (a double holds any level's Q / scale here)
  // One or two limbs (rounds of client-aided layers, results at the lowest levels): the same
  // centring and the same doubles, on 128-bit integers instead of word arrays.
  const auto centred = [&](std::size_t k, bool negative, double value) {
    real[k] = (negative ? -value : value) * inv_scale;
    largest = std::max(largest, std::fabs(real[k]));
  };
  if (len <= 2) {
    const auto wide = [&](const u64* w) { return len == 1 ? u128{w[0]} : (static_cast<u128>(w[1]) << 64) | w[0]; };
    const u128 q = wide(base.product().data()), half_q = q >> 1;
    for (std::size_t k = 0; k < n_; ++k) {
      const u128 x = wide(words.data() + k * len);
      const bool negative = x > half_q;
      const u128 m = negative ? q - x : x;
      centred(k, negative, static_cast<double>(static_cast<u64>(m >> 64)) * 0x1p64 + static_cast<double>(static_cast<u64>(m)));
    }
  } else {
    for (std::size_t k = 0; k < n_; ++k) {
      const u64* x = words.data() + k * len;
      const bool negative = multiword::greater_equal(x, half.data(), len) &&
                            !std::equal(x, x + len, half.data());
      const u64* magnitude = x;
      if (negative) {
        std::copy(base.product().begin(), base.product().end(), negated.begin());
        multiword::subtract(negated.data(), x, len);
        magnitude = negated.data();
      }
      double value = 0.0;
      for (std::size_t i = len; i-- > 0;) value = value * 0x1p64 + static_cast<double>(magnitude[i]);
      centred(k, negative, value);
    }
  }
  if (largest_bits != nullptr) *largest_bits = std::log2(largest) + std::log2(scale);
  std::vector<Complex> slots = coefficients_to_slots(real);
  // These are a decryption's m + e in other forms: wipe them.
  secure_zero(words.data(), words.size() * sizeof(u64));
  secure_zero(negated.data(), negated.size() * sizeof(u64));
  secure_zero(real.data(), real.size() * sizeof(double));
  return slots;
}

std::vector<Complex> Encoder::decode(const Plaintext& plain) const {
  const OpLabel op_label("ckks.decode");
  require(plain.fingerprint() == context_->fingerprint(), "ckks.decode",
          "the plaintext was made under different parameters");
  Buffer coeffs(plain.poly_words());
  Backend& be = backend_for(plain.device());
  be.copy(plain.data(), coeffs.data(), plain.poly_words());
  be.ntt_inverse(coeffs.data(), 1, plain.base());
  return decode_coefficients(coeffs.data(), plain.level(), plain.scale());
}

}  // namespace ringfire::ckks
