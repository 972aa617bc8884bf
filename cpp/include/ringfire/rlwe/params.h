// RLWE parameters: a literal (what the user asked for) becomes a validated,
// immutable Parameters object with concrete primes and a fingerprint that
// every key, plaintext and ciphertext made under it carries.
//
// Moduli: Q = q_0 * ... * q_L (the ciphertext modulus; level l uses
// q_0..q_l, rescaling drops the last), and P = p_0 * ... * p_{k-1} (special
// primes, used only inside hybrid key switching). Key-switching keys live
// modulo QP; Q's primes are cut into `dnum` digits of `alpha` primes each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ringfire/arith/modulus.h"
#include "ringfire/base/sha256.h"

namespace ringfire {

// The scheme a parameter set serves. It changes what ciphertexts mean, so it
// is part of the fingerprint (as the plaintext modulus is).
enum class Scheme : std::uint8_t { ckks = 1, bgv = 2, bfv = 3 };
const char* scheme_name(Scheme scheme);

struct ParameterLiteral {
  Scheme scheme = Scheme::ckks;
  std::uint64_t plain_modulus = 0;  // BGV/BFV: t (>= 2, coprime to Q); CKKS: 0
  // BGV/BFV without a plain_modulus: t becomes the largest prime of exactly
  // this many bits with t = 1 (mod 2N) (so slots can be batched) that is not
  // one of the ciphertext or special primes.
  int plain_bits = 0;
  std::size_t poly_degree = 0;
  std::vector<int> q_bits;        // bit sizes of q_0..q_L
  std::vector<int> p_bits;        // bit sizes of the special primes (>= 1 of them)
  // Instead of p_bits: special primes of this size, as many as make key
  // switching fastest within the security bound (rlwe/key_switch_shape.h);
  // Parameters::describe() says what was chosen and why.
  int special_prime_bits = 0;
  std::size_t dnum = 0;           // 0: the fewest digits P covers (see Parameters)
  int security = 128;             // 128, 192 or 256 bits (HE-standard bound on log2(QP))
  int scale_bits = 0;             // CKKS default scale 2^scale_bits (0: none)
  // The top primes kept for the library's own circuits (bootstrapping):
  // fresh ciphertexts start at level L - reserved_levels, the top of the
  // user's chain, and only bootstrapping works above it.
  std::size_t reserved_levels = 0;
  // The one way to parameters beyond the security bound (toy sizes in
  // tests): skips the check, records security 0, and warns (base/warning.h)
  // every time such parameters are made or loaded.
  bool insecure_no_security_check = false;
  // Explicit primes (loading serialized parameters): when q_primes is not
  // empty, q_bits and p_bits are ignored and these primes are validated.
  std::vector<u64> q_primes;
  std::vector<u64> p_primes;
};

class Parameters {
 public:
  // Generates the primes (distinct, NTT-friendly for N, largest of each
  // size first) — or takes the literal's explicit ones — and validates
  // everything, raising InvalidArgument with the limit that was broken: N a
  // power of two in [2^10, 2^17], prime sizes in [20, 60], dnum in [1, L+1]
  // (0: the fewest digits the special primes cover),
  // log2(QP) within the HE-standard bound, the plaintext modulus (CKKS: none;
  // BGV/BFV: 2 <= t < 2^60, coprime to every prime). Explicit primes are
  // checked against the security bound before they are tested for
  // primality, so oversized input (a crafted file) fails fast.
  explicit Parameters(const ParameterLiteral& literal);

  Scheme scheme() const { return scheme_; }
  // t for BGV/BFV, 0 for CKKS.
  std::uint64_t plain_modulus() const { return plain_modulus_; }
  std::size_t n() const { return n_; }
  std::size_t slots() const { return n_ / 2; }
  const std::vector<u64>& q_primes() const { return q_; }
  const std::vector<u64>& p_primes() const { return p_; }
  std::size_t max_level() const { return q_.size() - 1; }
  std::size_t reserved_levels() const { return reserved_levels_; }
  // Where fresh ciphertexts start: max_level() - reserved_levels().
  std::size_t user_max_level() const { return max_level() - reserved_levels_; }
  std::size_t dnum() const { return dnum_; }
  // Primes per digit: ceil((L+1) / dnum).
  std::size_t alpha() const { return alpha_; }
  // 128, 192 or 256; 0 for parameters made with insecure_no_security_check.
  int security() const { return security_; }
  int scale_bits() const { return scale_bits_; }
  double log_qp() const { return log_qp_; }
  // Why the key-switching shape is what it is, when Parameters chose it
  // (ParameterLiteral::special_prime_bits); empty otherwise.
  const std::string& shape_note() const { return shape_note_; }
  // The parameter identity: SHA-256 of everything that gives a ciphertext
  // its meaning (scheme, t, N, the primes, dnum, security, scale_bits, the
  // reserved levels). Serialized objects (format version 3) carry it, so an
  // object made under other parameters is refused even if someone crafted
  // parameters to collide with a weak digest.
  const Sha256Digest& identity() const { return identity_; }
  // The identity's first 8 bytes (little-endian): for display and in-process
  // checks that two objects share parameters.
  std::uint64_t fingerprint() const { return fingerprint_; }
  // The FNV-1a digest that format versions 1 and 2 stored instead (CKKS
  // digests of version 1 had no scheme, t or reserved levels): how files from
  // then are matched to these parameters.
  std::uint64_t legacy_fingerprint() const { return legacy_fingerprint_; }
  std::string describe() const;

 private:
  void validate();
  void compute_identity();
  void check_security_level(bool insecure_no_security_check);
  void check_plain_modulus() const;
  std::string describe_log_qp() const;

  Scheme scheme_;
  std::uint64_t plain_modulus_;
  std::size_t n_;
  std::vector<u64> q_, p_;
  std::size_t dnum_, alpha_ = 0, reserved_levels_;
  int security_, scale_bits_;
  double log_qp_ = 0.0;
  Sha256Digest identity_{};
  std::uint64_t fingerprint_ = 0, legacy_fingerprint_ = 0;
  std::string shape_note_;
};

// FNV-1a, 64-bit: the digest behind fingerprints and io checksums (detects
// accidental corruption; it is not a cryptographic MAC).
std::uint64_t fnv1a64(const void* data, std::size_t bytes, std::uint64_t state = 0xcbf29ce484222325ULL);

}  // namespace ringfire
