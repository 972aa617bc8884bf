// The CKKS encoder: N/2 complex slots <-> a plaintext polynomial.
//
// Slot j holds m(zeta^(5^j)) / scale with zeta = exp(i*pi/N), so the Galois
// map X -> X^(5^k) rotates the slots left by k and X -> X^(2N-1) conjugates
// them. Encoding runs the "special" inverse FFT over that rotation group
// (O(N log N)), scales, rounds and reduces modulo each prime; decoding
// composes the residues with the CRT, centres them and runs the forward FFT.
#pragma once

#include <complex>
#include <vector>

#include "ringfire/rlwe/ciphertext.h"

namespace ringfire::ckks {

using Complex = std::complex<double>;

class Encoder {
 public:
  explicit Encoder(RlweContextPtr context);

  std::size_t slots() const { return slots_; }

  // Up to N/2 values (shorter input is zero-padded). Raises InvalidArgument
  // for non-finite values, a non-positive scale, or values whose scaled
  // coefficients would not fit in q_0..q_level. A vector whose entries are
  // all one real value becomes a scalar plaintext (see Plaintext::is_scalar).
  Plaintext encode(const Complex* values, std::size_t count, std::size_t level, double scale) const;
  // A constant in every slot.
  Plaintext encode_scalar(Complex value, std::size_t level, double scale) const;
  // What encode() gives before its forward NTT: the plaintext's coefficients over q_0..q_level
  // written to `out` (level + 1 limbs of N words), and its metadata. For an encryption that adds
  // its error to them first and transforms once (rlwe::encrypt_secret_coefficients).
  Metadata encode_coefficients(const Complex* values, std::size_t count, std::size_t level, double scale,
                               u64* out) const;
  // round(value * scale) mod q_i for each prime of the level: the residues a
  // real constant takes (in either form).
  std::vector<u64> scalar_residues(double value, std::size_t level, double scale, const char* op) const;

  // The slots of a coefficient-form polynomial over q_0..q_level (its
  // temporaries are wiped: they may hold a decryption's m + e). With
  // `largest_bits`, log2 of the largest centred coefficient is written there
  // (-inf for the zero polynomial): how close the data came to wrapping.
  std::vector<Complex> decode_coefficients(const u64* coeffs, std::size_t level, double scale,
                                           double* largest_bits = nullptr) const;
  // The slots of a plaintext (evaluation form).
  std::vector<Complex> decode(const Plaintext& plain) const;

  // The FFT pair on their own (exposed for tests): coefficients -> slots
  // (values are the N real coefficients already divided by the scale), and
  // slots -> real coefficients.
  std::vector<Complex> coefficients_to_slots(const std::vector<double>& coeffs) const;
  std::vector<double> slots_to_coefficients(const std::vector<Complex>& slots) const;

 private:
  // The checks encode() makes; whether the values are all one real number.
  bool check_values(const Complex* values, std::size_t count, std::size_t level, double scale) const;
  // The coefficients of values that are not all one real number: the inverse FFT, scaled,
  // rounded and reduced into each limb of `out`.
  void coefficients_into(const Complex* values, std::size_t count, std::size_t level, double scale, u64* out) const;
  void fft_forward(Complex* v) const;
  void fft_inverse(Complex* v) const;

  RlweContextPtr context_;
  std::size_t n_, slots_;
  std::vector<Complex> roots_;          // exp(2*pi*i*k / 2N), k in [0, 2N]
  // The butterflies' twiddles in the order the FFTs read them: the stage of half-length h
  // at [h - 1, 2h - 1) (the same roots_ entries, gathered once instead of per butterfly
  // with a 64-bit modulo each; the results are bit-identical).
  std::vector<Complex> forward_twiddles_, inverse_twiddles_;
  std::vector<std::size_t> bit_reverse_;
};

}  // namespace ringfire::ckks
