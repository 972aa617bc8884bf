// The torus engine's kernels that have AVX-512 (and AVX2) forms (torus_kernels_avx512.cpp):
// the blind rotation's key products in the FFT domain (torus_bootstrapper.cpp;
// the eight-lane forms read keys laid out in blocks of eight points,
// TorusBootstrapKey::lanes() == 8) and the key switch's rows (torus_keys.cpp).
// Called only where the CPU has AVX-512 and the default ISA is it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ringfire/tfhe/torus_keys.h"

namespace ringfire::tfhe::torus_kernels {

// One ciphertext's part in a step's products: its transformed digits, where
// its sums go, and (multi-bit) its patterns' X^m - 1 and which patterns they are.
// Each of their arrays holds M consecutive doubles, and consecutive arrays
// start S >= M doubles apart.
struct Operand {
  const double* spectra;  // [c L + l][re, im]
  double* sums;           // [A, B][re, im]
  const double* monos;    // [listed pattern][re, im]
  const std::size_t* which;
  std::size_t active;
};

// For each operand: sums[o] = sum_r spectra[r] * key[r][o], the step's key in
// blocks of eight points; the same arithmetic in the same order as the
// four-lane form.
void external_product_sums_wide(const double* key, std::size_t rows, std::size_t M, std::size_t S,
                                const Operand* ops, std::size_t count);
// Multi-bit: sums[o] = sum over the listed patterns p of (X^{m_p} - 1) sum_r
// spectra[r] * key_p[r][o], likewise.
void multi_bit_sums_wide(const double* key, std::size_t patterns, std::size_t rows, std::size_t M, std::size_t S,
                         const Operand* ops, std::size_t count);

// Multi-bit: X^m - 1 in the FFT domain, eight points at a time, where each
// block of four points k..k+3 evaluates at e_k + the four lanes' offsets
// (NegacyclicFft::shifted_blocks): re + i im = root(e_k m) root(lane m) - 1,
// the lanes' roots in lane_re / lane_im; the same products and fused
// multiply-adds as the four-lane form. M a multiple of 8.
void monomial_minus_one_wide(const double* roots_re, const double* roots_im, const std::uint32_t* exponents,
                             std::uint32_t m, std::uint32_t mask, const double* lane_re, const double* lane_im,
                             std::size_t M, double* re, double* im);

// The key switch's rows, four levels at once: o[t] -= (sum_l d[l] w_l[t]) 2^8
// mod 2^32 for t < count, from the blocks of those levels (KeySwitchBlock),
// sixteen words at a time; d[l] signed digits with |d| <= 2^6 (the highs'
// byte products sum pairs in 16 bits, saturating beyond).
void subtract_four_rows_wide(std::uint32_t* o, const KeySwitchBlock* blocks, const std::uint32_t* digits,
                             std::size_t count);
// The same on eight lanes, for AVX2 CPUs.
void subtract_four_rows_narrow(std::uint32_t* o, const KeySwitchBlock* blocks, const std::uint32_t* digits,
                               std::size_t count);

}  // namespace ringfire::tfhe::torus_kernels
