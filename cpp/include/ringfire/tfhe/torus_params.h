// Parameters of the 64-bit torus engine (TFHE in the KS-PBS order, as
// tfhe-rs and Concrete run it): ciphertexts live mod 2^64 under the "big" key
// z (the ring secret read as an LWE key of dimension N), and one programmable
// bootstrap is
//   LWE (N, 2^64) --key switch--> LWE (n, 2^64) --modulus switch--> LWE (n, 2N)
//   --blind rotation (CGGI, binary secret, f64 FFT; one bit per step or a
//     group of `grouping` bits)--> GLWE --sample extract--> LWE (N, 2^64).
// Secrets are uniform binary; errors are TUniform(b): integers in [-2^b, 2^b],
// the two ends at half weight (variance (2^(2b+1) + 1) / 6), as tfhe-rs's.
// Which sets are secure is decided where the named presets live
// (ringfire/tfhe/torus_params.py, with their sources); this file checks only
// that a set can run.
#pragma once

#include <cstddef>
#include <string>

#include "ringfire/base/sha256.h"

namespace ringfire::tfhe {

struct TorusParams {
  std::size_t lwe_dimension = 0;   // n: the key-switched LWE key the blind rotation reads
  std::size_t ring_dimension = 0;  // N (GLWE dimension k = 1); the modulus switch goes to 2N
  unsigned pbs_base_log = 0;       // log2 of the blind rotation's gadget base
  unsigned pbs_levels = 0;
  unsigned ks_base_log = 0;        // log2 of the key switch's base
  unsigned ks_levels = 0;
  unsigned lwe_noise_log2 = 0;     // TUniform bound of the key switch's (small key's) encryptions
  unsigned glwe_noise_log2 = 0;    // TUniform bound of the bootstrap key's and of fresh encryptions
  // Bits of s the blind rotation reads per step (multi-bit bootstrapping,
  // torus_bootstrapper.h): 1 is CGGI's one key per bit; g > 1 keeps 2^g - 1
  // keys per group of g bits and takes n / g steps.
  unsigned grouping = 1;

  // RGSW encryptions in the bootstrapping key: n, or (n / g)(2^g - 1).
  std::size_t bootstrap_key_count() const;

  // Raises InvalidArgument naming the first field that cannot run.
  void validate() const;
  std::string describe() const;
  // SHA-256 of every field (a domain tag first).
  Sha256Digest identity() const;
};

}  // namespace ringfire::tfhe
