// SHA-256 (FIPS 180-4): the parameter identity that serialized objects carry
// (rlwe/params.h). Not a secret-dependent computation, so nothing here needs
// to be constant-time; a dependency (OpenSSL) for one hash of a few hundred
// bytes per context would cost more than these lines. Checked against the
// FIPS 180-4 examples and Python's hashlib (cpp/tests/test_sha256.cpp,
// tests/test_format.py).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace ringfire {

using Sha256Digest = std::array<std::uint8_t, 32>;

Sha256Digest sha256(const void* data, std::size_t bytes);

}  // namespace ringfire
