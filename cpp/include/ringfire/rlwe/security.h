// Security bounds for RLWE parameters: the largest log2(QP) that keeps a ring
// dimension N at a given classical security level with a uniform ternary
// secret (Albrecht et al., "Homomorphic Encryption Security Standard",
// HomomorphicEncryption.org, 2018 — the ternary-secret, classical table),
// extended to N = 2^16 and 2^17 with OpenFHE's lattice-estimator values.
// Sources and the exact numbers are in security.cpp.
#pragma once

#include <cstddef>

namespace ringfire {

enum class SecurityLevel { bits128 = 128, bits192 = 192, bits256 = 256 };

// Max log2(QP) for ring dimension n at security_bits in {128, 192, 256}.
// Raises InvalidArgument for an N outside {2^10, ..., 2^17} or another level.
int max_log_qp(std::size_t n, int security_bits);
inline int max_log_qp(std::size_t n, SecurityLevel level) {
  return max_log_qp(n, static_cast<int>(level));
}

// Raises InvalidArgument ("N=4096 allows log2(QP) <= 109 at 128-bit security;
// these parameters have log2(QP) = 120.3") when log_qp exceeds the bound, or
// when n / security_bits have no table entry (0 included: the only way past
// the check is ParameterLiteral::insecure_no_security_check, which warns).
void check_security(std::size_t n, double log_qp, int security_bits);
inline void check_security(std::size_t n, double log_qp, SecurityLevel level) {
  check_security(n, log_qp, static_cast<int>(level));
}

}  // namespace ringfire
