#include "ringfire/rlwe/security.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ringfire/base/errors.h"

namespace ringfire {
namespace {

// Max log2(QP), uniform ternary secret, classical attacks (bkz.sieve cost model).
//
// N = 1024 .. 32768: Table "Ternary" of the Homomorphic Encryption Security
// Standard (Albrecht, Chase, Chen, Ding, Goldwasser, Gorbunov, Halevi, Hoffstein,
// Laine, Lauter, Lokam, Micciancio, Moody, Morrison, Sahai, Vaikuntanathan,
// HomomorphicEncryption.org, Nov 2018). The same numbers are Microsoft SEAL's
// native/src/seal/util/hestdparms.h (SEAL_HE_STD_PARMS_{128,192,256}_TC) and
// OpenFHE's StdLatticeParm table (HEStd_ternary, HEStd_*_classic).
//
// N = 65536 and 131072: not in the 2018 standard. Taken from OpenFHE's current
// table (src/core/include/lattice/stdlatticeparms.h, 2023+, entries
// HEStd_ternary x {65536, 131072}), computed with the lattice estimator:
// 1747 / 3523 (128-bit), 1199 / 2411 (192-bit), 929 / 1866 (256-bit).
// Older OpenFHE releases (v1.0, src/core/lib/lattice/stdlatticeparms.cpp) listed
// only N = 65536 with larger values (1772 / 1228 / 956); we take the newer,
// more conservative estimates. SEAL stops at N = 32768.
struct Row {
  std::size_t n;
  int bits128;
  int bits192;
  int bits256;
};

constexpr Row kTable[] = {
    {1024, 27, 19, 14},         {2048, 54, 37, 29},         {4096, 109, 75, 58},
    {8192, 218, 152, 118},      {16384, 438, 305, 237},     {32768, 881, 611, 476},
    {65536, 1747, 1199, 929},   {131072, 3523, 2411, 1866},
};

constexpr const char* kOp = "rlwe.security";

// log_qp with one decimal, or more when one decimal would round it down onto
// the bound and make the message look self-contradictory ("<= 109 ... = 109.0").
std::string format_log_qp(double log_qp, int bound) {
  char text[64];
  for (int digits = 1; digits <= 6; ++digits) {
    std::snprintf(text, sizeof(text), "%.*f", digits, log_qp);
    if (std::strtod(text, nullptr) > bound) break;
  }
  return text;
}

}  // namespace

int max_log_qp(std::size_t n, int security_bits) {
  require(security_bits == 128 || security_bits == 192 || security_bits == 256, kOp,
          "unknown security level " + std::to_string(security_bits) +
              "-bit; the HE standard tables cover 128, 192 and 256 bits");
  for (const Row& row : kTable) {
    if (row.n != n) continue;
    return security_bits == 128 ? row.bits128 : security_bits == 192 ? row.bits192 : row.bits256;
  }
  throw_invalid(kOp, "no security table entry for N=" + std::to_string(n) +
                         "; the HE standard tables cover N = 1024, 2048, ..., 131072");
}

void check_security(std::size_t n, double log_qp, int security_bits) {
  require(std::isfinite(log_qp) && log_qp >= 0.0, kOp,
          "log2(QP) must be a finite non-negative number, got " + std::to_string(log_qp));
  const int bound = max_log_qp(n, security_bits);
  if (log_qp > bound) {
    throw_invalid(kOp, "N=" + std::to_string(n) + " allows log2(QP) <= " + std::to_string(bound) +
                           " at " + std::to_string(security_bits) +
                           "-bit security; these parameters have log2(QP) = " + format_log_qp(log_qp, bound) +
                           " (use a larger poly_degree, or fewer or smaller primes)");
  }
}

}  // namespace ringfire
