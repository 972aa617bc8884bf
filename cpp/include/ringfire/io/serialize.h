// Versioned binary serialization of parameters, plaintexts, ciphertexts and
// keys.
//
// Envelope (little-endian):
//   "RFHE" | version u16 | kind u16 | parameter identity (32 bytes, SHA-256) |
//   payload length u64 | payload | checksum u64 (FNV-1a over everything
//   before it). Versions 1 and 2 had a u64 fingerprint instead of the identity.
// Loading checks the magic, version, kind, length, checksum and the
// parameter identity (objects from other parameters are refused), then
// parses the payload with bounds checks and validates every field (levels,
// sizes, scales within the level's modulus, noise estimates, residues below
// their primes, key sources). Every polynomial must be present in the input
// before it is allocated, so a load allocates at most twice its input (a
// seed expands to one polynomial) plus one polynomial (a scalar plaintext).
// Malformed input raises InvalidArgument; it never crashes or reads out of
// bounds. The checksum detects accidents, not tampering: authenticate bytes
// that cross a trust boundary (ringfire.io in Python, docs/security.md).
//
// Ciphertexts and keys whose uniform part came from a seed store the 32-byte
// seed instead of that polynomial.
#pragma once

#include <cstdint>
#include <vector>

#include "ringfire/ckks/bootstrap.h"
#include "ringfire/io/byte_io.h"
#include "ringfire/rlwe/key_derivation.h"
#include "ringfire/rlwe/keys.h"
#include "ringfire/rlwe/subring.h"

namespace ringfire::io {

enum class Kind : std::uint16_t {
  parameters = 1,
  plaintext = 2,
  ciphertext = 3,
  public_key = 4,
  relin_key = 5,
  galois_keys = 6,
  secret_key = 7,
  bootstrap_keys = 8,  // Galois keys and the two encapsulation keys
  master_keys = 9,     // hierarchical rotation keys (rlwe/key_derivation.h)
  tfhe_evaluation_keys = 10,  // FHEW/TFHE bootstrapping + key-switching keys (serialize_tfhe.h)
  tfhe_ciphertexts = 11,      // FHEW/TFHE LWE ciphertexts (serialize_tfhe.h)
  embedding_key = 12,         // a subring's secret to the ring's (rlwe/subring.h); version 4 on
};

// Version 5 stores each limb of a polynomial (ciphertexts, plaintexts, public
// and switching keys) in the bits its prime needs, not 64-bit words
// (io/bit_pack.h): 6-38 % fewer bytes at the presets' primes; nothing else
// changed (FHEW/TFHE objects are as in version 4).
// Version 4 closes the envelope with the XXH64 checksum (io/checksum.h)
// instead of FNV-1a, which ran at ~0.3 GB/s and dominated saving and loading;
// nothing else changed. Version 3 replaced the 64-bit FNV-1a fingerprint in the header by the
// 32-byte SHA-256 parameter identity (Parameters::identity) and added the
// logical length to the metadata of ciphertexts and plaintexts. Version 2
// added the noise estimate and complex flag of ciphertexts, the complex flag
// of plaintexts and the source of switching keys. Versions 1 and 2 still
// load, matched to the parameters by their legacy fingerprint: their
// ciphertexts and plaintexts have no recorded length (all slots); version 1
// ciphertexts take a fresh encryption's noise estimate and count as real,
// its keys take their source from where they are stored.
constexpr std::uint16_t kFormatVersion = 5;
constexpr std::uint16_t kOldestReadableVersion = 1;

using Bytes = std::vector<std::uint8_t>;

const char* kind_name(Kind kind);
// The kind an envelope declares, after checking magic, version, length and
// checksum (not the fingerprint).
Kind peek_kind(const std::uint8_t* data, std::size_t size);
// The same from the header alone (magic, version, kind, length; not the
// checksum): for a caller that loads the object next, which checks the
// checksum itself (a third of a ciphertext's load was the second pass).
Kind envelope_kind(const std::uint8_t* data, std::size_t size);

Bytes save(const Parameters& params);
Bytes save(const Plaintext& plain);
Bytes save(const Ciphertext& cipher);
Bytes save(const PublicKey& key);
Bytes save(const RelinKey& key);
Bytes save(const EmbeddingKey& key);
Bytes save(const GaloisKeys& keys);
Bytes save(const SecretKey& key);
Bytes save(const ckks::BootstrapKeys& keys);
// Under the main parameters' identity: the level, then the master keys as a
// Galois key set of that level's derivation context (rebuilt on load).
Bytes save(const MasterKeys& keys);

// Keys streamed: the bytes save() returns, handed to `sink` in pieces (1 MiB
// buffers, polynomials straight from the key), never held whole: what
// writing keys to a file or a socket costs beyond the keys is ~1 MiB. A
// first pass over the key counts the payload's length for the header.
void save(const PublicKey& key, const Sink& sink);
void save(const RelinKey& key, const Sink& sink);
void save(const GaloisKeys& keys, const Sink& sink);
void save(const ckks::BootstrapKeys& keys, const Sink& sink);
// The bytes save(BootstrapKeys) writes for a seeded key set of `ctx` whose
// Galois keys are made for `galois_levels` (Bootstrapper::rotation_levels and
// the conjugation's): known before any key exists (ctx.bootstrap_plan()).
std::uint64_t bootstrap_keys_bytes(const RlweContextPtr& ctx, const std::vector<std::size_t>& galois_levels);
void save(const MasterKeys& keys, const Sink& sink);

// Parameters saved without the security check load only with
// insecure_no_security_check set (which warns; see Parameters).
Parameters load_parameters(const std::uint8_t* data, std::size_t size, bool insecure_no_security_check = false);
Plaintext load_plaintext(const RlweContextPtr& ctx, const std::uint8_t* data, std::size_t size);
Ciphertext load_ciphertext(const RlweContextPtr& ctx, const std::uint8_t* data, std::size_t size);
PublicKey load_public_key(const RlweContextPtr& ctx, const std::uint8_t* data, std::size_t size);
RelinKey load_relin_key(const RlweContextPtr& ctx, const std::uint8_t* data, std::size_t size);
EmbeddingKey load_embedding_key(const RlweContextPtr& ctx, const std::uint8_t* data, std::size_t size);
GaloisKeys load_galois_keys(const RlweContextPtr& ctx, const std::uint8_t* data, std::size_t size);
SecretKey load_secret_key(const RlweContextPtr& ctx, const std::uint8_t* data, std::size_t size);
ckks::BootstrapKeys load_bootstrap_keys(const RlweContextPtr& ctx, const std::uint8_t* data, std::size_t size);
MasterKeys load_master_keys(const RlweContextPtr& ctx, const std::uint8_t* data, std::size_t size);

// Keys read from a stream of `size` bytes (the whole envelope, version 4 on),
// parsed as they arrive: beyond the keys, a load holds one 32-byte stripe.
// Every field is validated as in the whole-buffer loads, and every length
// against `size` before anything is allocated for it; the checksum, checked
// at the end, decides whether the keys are returned.
PublicKey load_public_key(const RlweContextPtr& ctx, const Source& source, std::size_t size);
RelinKey load_relin_key(const RlweContextPtr& ctx, const Source& source, std::size_t size);
GaloisKeys load_galois_keys(const RlweContextPtr& ctx, const Source& source, std::size_t size);
ckks::BootstrapKeys load_bootstrap_keys(const RlweContextPtr& ctx, const Source& source, std::size_t size);
MasterKeys load_master_keys(const RlweContextPtr& ctx, const Source& source, std::size_t size);

}  // namespace ringfire::io
