// FHEW/TFHE parameters: the LWE ciphertexts gates and lookup tables act on,
// the ring of the blind rotation, and the key switch between them.
//
// One bootstrap (FHEW order, as OpenFHE's binfhe):
//   LWE (n, q = 2N) --blind rotation over R_Q, ternary secret, GINX or LMKCDEY--> RLWE
//   --sample extract--> LWE (N, Q) --modulus switch--> LWE (N, Q_ks)
//   --key switch--> LWE (n, Q_ks) --modulus switch--> LWE (n, q).
// Which sets are secure is decided where the named presets live (the Python
// package, ringfire/tfhe/params.py, with their sources); this file checks
// only that a set can run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ringfire/base/sha256.h"

namespace ringfire::tfhe {

struct Params {
  std::size_t lwe_dimension = 0;    // n
  std::size_t ring_dimension = 0;   // N; LWE ciphertexts live mod q = 2N
  std::uint32_t ring_modulus = 0;   // Q: a prime < 2^29, Q = 1 mod 2N
  unsigned gadget_base_log = 0;     // log2 Bg of the RGSW gadget
  unsigned gadget_digits = 0;       // d_g
  unsigned gadget_skip_bits = 0;    // low bits the approximate gadget drops
  std::uint32_t ks_modulus = 0;     // Q_ks: a power of two in [q, 2^24]
  unsigned ks_base_log = 0;         // log2 B_ks
  unsigned ks_digits = 0;           // d_ks: B_ks^d_ks >= Q_ks, the top digit in part
  double sigma = 3.19;              // error width of every key and encryption
  // The blind rotation: 0 for GINX (bootstrapper.h); w >= 1 for LMKCDEY
  // (automorphism_key.h), whose keys switch the automorphisms X -> X^(5^k)
  // for k = 1..w (and X -> X^-5): a longer window means fewer key switches.
  unsigned automorphism_window = 0;

  std::uint32_t lwe_modulus() const { return static_cast<std::uint32_t>(2 * ring_dimension); }
  bool uses_automorphisms() const { return automorphism_window > 0; }
  // Raises InvalidArgument naming the first field that cannot run.
  void validate() const;
  std::string describe() const;
  // SHA-256 of every field (a domain tag first): what serialized keys and
  // ciphertexts are checked against.
  Sha256Digest identity() const;
};

}  // namespace ringfire::tfhe
