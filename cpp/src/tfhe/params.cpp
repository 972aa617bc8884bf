#include "ringfire/tfhe/params.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "ringfire/arith/primes.h"
#include "ringfire/base/errors.h"

namespace ringfire::tfhe {

void Params::validate() const {
  const char* op = "tfhe.Params";
  const auto N = ring_dimension;
  require(N >= 64 && N <= 8192 && std::has_single_bit(N), op,
          "ring_dimension N must be a power of two in [64, 8192], got " + std::to_string(N));
  require(lwe_dimension >= 1 && lwe_dimension <= 4096, op,
          "lwe_dimension n must be in [1, 4096], got " + std::to_string(lwe_dimension));
  require(ring_modulus < (1u << 29) && is_ntt_friendly(ring_modulus, N), op,
          "ring_modulus Q must be a prime below 2^29 with Q = 1 mod 2N, got " + std::to_string(ring_modulus));
  require(gadget_base_log >= 1 && gadget_digits >= 1 && gadget_digits <= 8, op,
          "gadget_base_log must be >= 1 and gadget_digits in [1, 8]");
  // The lazy products of a blind-rotation step sum 2 d_g terms below Q^2 and
  // must stay below Q 2^32 (Montgomery reduction).
  require(2.0 * gadget_digits * ring_modulus < 4294967296.0, op,
          "2 * gadget_digits * Q must be below 2^32 (the blind rotation's lazy sums); got Q=" +
              std::to_string(ring_modulus) + ", d_g=" + std::to_string(gadget_digits));
  require(gadget_skip_bits + gadget_digits * gadget_base_log >= static_cast<unsigned>(std::bit_width(ring_modulus)) - 1,
          op,
          "the gadget (skip " + std::to_string(gadget_skip_bits) + " bits, then " + std::to_string(gadget_digits) +
              " digits of " + std::to_string(gadget_base_log) + " bits) must cover the " +
              std::to_string(std::bit_width(ring_modulus) - 1) + " bits of a centred residue mod Q");
  require(gadget_skip_bits < 24 && gadget_base_log <= 16, op, "gadget_skip_bits must be < 24, gadget_base_log <= 16");
  // Digits beyond Q's width would be zero, and their gadget factors 2^(skip + j log Bg) overflow.
  require(gadget_skip_bits + gadget_digits * gadget_base_log <= static_cast<unsigned>(std::bit_width(ring_modulus)) +
                                                                     gadget_base_log,
          op, "the gadget has more digits than Q needs (skip + d_g log Bg must be at most log2 Q + log Bg)");
  require(std::has_single_bit(ks_modulus) && ks_modulus >= lwe_modulus() && ks_modulus <= (1u << 24), op,
          "ks_modulus must be a power of two in [2N, 2^24], got " + std::to_string(ks_modulus));
  // The digits cover log2(Q_ks) bits, the top one possibly in part.
  const unsigned ks_bits = static_cast<unsigned>(std::countr_zero(ks_modulus));
  require(ks_base_log >= 1 && ks_digits >= 1 && ks_base_log * ks_digits >= ks_bits &&
              ks_base_log * (ks_digits - 1) < ks_bits,
          op, "ks_base_log * ks_digits must cover log2(ks_modulus) with no digit to spare");
  require(ks_base_log <= 8, op, "ks_base_log must be at most 8 (the key table holds 2^ks_base_log - 1 entries per digit)");
  require(std::isfinite(sigma) && sigma > 0 && sigma <= 64, op, "sigma must be in (0, 64]");
  require(automorphism_window < N / 2 && automorphism_window <= 64, op,
          "automorphism_window must be 0 (GINX) or in [1, min(64, N/2 - 1)], got " +
              std::to_string(automorphism_window));
}

std::string Params::describe() const {
  return "n=" + std::to_string(lwe_dimension) + " N=" + std::to_string(ring_dimension) + " Q=" +
         std::to_string(ring_modulus) + " Bg=2^" + std::to_string(gadget_base_log) + "x" +
         std::to_string(gadget_digits) + " (skip " + std::to_string(gadget_skip_bits) + ") Qks=" +
         std::to_string(ks_modulus) + " Bks=2^" + std::to_string(ks_base_log) + "x" + std::to_string(ks_digits) +
         (uses_automorphisms() ? " LMKCDEY w=" + std::to_string(automorphism_window) : "");
}

Sha256Digest Params::identity() const {
  std::vector<std::uint8_t> bytes;
  const char tag[] = "ringfire.tfhe.Params/1";
  bytes.insert(bytes.end(), tag, tag + sizeof(tag) - 1);
  auto put = [&](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  std::uint64_t sigma_bits;
  std::memcpy(&sigma_bits, &sigma, 8);
  for (std::uint64_t v : {std::uint64_t{lwe_dimension}, std::uint64_t{ring_dimension}, std::uint64_t{ring_modulus},
                          std::uint64_t{gadget_base_log}, std::uint64_t{gadget_digits}, std::uint64_t{gadget_skip_bits},
                          std::uint64_t{ks_modulus}, std::uint64_t{ks_base_log}, std::uint64_t{ks_digits}, sigma_bits})
    put(v);
  // Only where set: GINX sets keep the identity (and the saved keys) they had.
  if (uses_automorphisms()) {
    const char lmkcdey[] = "/lmkcdey";
    bytes.insert(bytes.end(), lmkcdey, lmkcdey + sizeof(lmkcdey) - 1);
    put(automorphism_window);
  }
  return sha256(bytes.data(), bytes.size());
}

}  // namespace ringfire::tfhe
