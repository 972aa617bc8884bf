// What the bindings of both FHEW/TFHE engines (tfhe.cpp: 32-bit; tfhe_torus.cpp:
// 64-bit torus) share: a secret key's raw bytes in and out (wiped on the way),
// and the evaluation keys' identity.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common.h"
#include "ringfire/base/sha256.h"
#include "ringfire/rlwe/prng.h"
#include "ringfire/tfhe/bootstrapper.h"

namespace ringfire::python {

inline nb::bytes digest_bytes(const Sha256Digest& d) {
  return nb::bytes(reinterpret_cast<const char*>(d.data()), d.size());
}

// s then z, one byte per coefficient: sealed by the Python layer before it leaves.
template <class Key>
nb::bytes secret_key_bytes(const Key& key) {
  std::string out(key.lwe().begin(), key.lwe().end());
  out.append(key.ring().begin(), key.ring().end());
  nb::bytes b(out.data(), out.size());
  secure_zero(out.data(), out.size());
  return b;
}

// A key from secret_key_bytes' layout under params (n + N bytes, checked).
template <class Key, class Params>
std::unique_ptr<Key> secret_key_from_bytes(const Params& params, const nb::bytes& data, const char* op) {
  using Coefficient = typename std::decay_t<decltype(std::declval<const Key&>().lwe())>::value_type;
  const std::size_t n = params.lwe_dimension, total = n + params.ring_dimension;
  require(data.size() == total, op,
          "a secret key of " + std::to_string(total) + " bytes expected, got " + std::to_string(data.size()));
  const auto* p = reinterpret_cast<const Coefficient*>(data.c_str());
  std::vector<Coefficient> s(p, p + n), z(p + n, p + total);
  auto key = std::make_unique<Key>(params, s, z);
  secure_zero(s.data(), s.size());
  secure_zero(z.data(), z.size());
  return key;
}

// The public seed of a blind-rotation key: GINX's or LMKCDEY's, or the torus engine's.
inline const Prng::Seed& blind_rotation_seed(const tfhe::Bootstrapper& b) { return b.blind_rotation_seed(); }
template <class Bootstrapper>
const Prng::Seed& blind_rotation_seed(const Bootstrapper& b) {
  return b.bootstrap_key().seed();
}

// The evaluation keys' identity: SHA-256 of their two public seeds (the same for
// the keys a client made and the copy a server loaded).
template <class Bootstrapper>
nb::bytes evaluation_key_id(const Bootstrapper& b) {
  std::uint8_t seeds[64];
  std::memcpy(seeds, blind_rotation_seed(b).data(), 32);
  std::memcpy(seeds + 32, b.key_switch_key().seed().data(), 32);
  return digest_bytes(sha256(seeds, 64));
}

}  // namespace ringfire::python
