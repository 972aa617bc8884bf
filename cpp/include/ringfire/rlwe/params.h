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

namespace ringfire {

struct ParameterLiteral {
  std::size_t poly_degree = 0;
  std::vector<int> q_bits;        // bit sizes of q_0..q_L
  std::vector<int> p_bits;        // bit sizes of the special primes (>= 1 of them)
  std::size_t dnum = 0;           // 0: the largest digit P can cover (see Parameters)
  int security = 128;             // 128, 192 or 256 bits (HE-standard bound on log2(QP))
  int scale_bits = 0;             // CKKS default scale 2^scale_bits (0: none)
  // The one way to parameters beyond the security bound (toy sizes in
  // tests): skips the check, records security 0, and warns (base/warning.h)
  // every time such parameters are made or loaded.
  bool insecure_no_security_check = false;
};

class Parameters {
 public:
  // Generates the primes (distinct, NTT-friendly for N, largest of each
  // size first) and validates everything, raising InvalidArgument with the
  // limit that was broken: N a power of two in [2^10, 2^17], prime sizes in
  // [20, 60], dnum in [1, L+1], and log2(QP) within the HE-standard bound.
  explicit Parameters(const ParameterLiteral& literal);
  // Explicit primes (used when loading serialized parameters); validated the
  // same way. security 0 (saved without the check) is refused unless
  // insecure_no_security_check is set, which warns. The security bound is
  // checked before the primes are tested, so oversized input fails fast.
  Parameters(std::size_t poly_degree, std::vector<u64> q_primes, std::vector<u64> p_primes, std::size_t dnum,
             int security, int scale_bits, bool insecure_no_security_check = false);

  std::size_t n() const { return n_; }
  std::size_t slots() const { return n_ / 2; }
  const std::vector<u64>& q_primes() const { return q_; }
  const std::vector<u64>& p_primes() const { return p_; }
  std::size_t max_level() const { return q_.size() - 1; }
  std::size_t dnum() const { return dnum_; }
  // Primes per digit: ceil((L+1) / dnum).
  std::size_t alpha() const { return alpha_; }
  // 128, 192 or 256; 0 for parameters made with insecure_no_security_check.
  int security() const { return security_; }
  int scale_bits() const { return scale_bits_; }
  double log_qp() const { return log_qp_; }
  // A 64-bit digest of (N, primes, dnum, security, scale_bits).
  std::uint64_t fingerprint() const { return fingerprint_; }
  std::string describe() const;

 private:
  void validate();
  void check_security_level(bool insecure_no_security_check);

  std::size_t n_;
  std::vector<u64> q_, p_;
  std::size_t dnum_, alpha_ = 0;
  int security_, scale_bits_;
  double log_qp_ = 0.0;
  std::uint64_t fingerprint_ = 0;
};

// FNV-1a, 64-bit: the digest behind fingerprints and io checksums (detects
// accidental corruption; it is not a cryptographic MAC).
std::uint64_t fnv1a64(const void* data, std::size_t bytes, std::uint64_t state = 0xcbf29ce484222325ULL);

}  // namespace ringfire
