// The envelope every serialized object travels in (serialize.h has the
// format): writing its header and closing checksum, and opening one with
// every check, shared by the RLWE objects (serialize.cpp) and the FHEW/TFHE
// ones (serialize_tfhe.cpp).
#pragma once

#include <cstdint>

#include "ringfire/base/sha256.h"
#include "ringfire/io/byte_io.h"
#include "ringfire/io/serialize.h"

namespace ringfire::io::detail {

// Header bytes: magic, version, kind, the parameter identity (32 bytes from
// version 3, a u64 fingerprint before), the payload length.
constexpr std::size_t header_bytes(std::uint16_t version) { return 4 + 2 + 2 + (version >= 3 ? 32 : 8) + 8; }
inline constexpr std::uint16_t kLastKind = static_cast<std::uint16_t>(Kind::embedding_key);

std::uint64_t envelope_checksum(std::uint16_t version, const std::uint8_t* data, std::size_t size);
// The header of the current version: magic, version, kind, parameter
// identity, payload length.
void write_header(Writer& out, Kind kind, const Sha256Digest& identity, std::uint64_t payload_length);
// A little-endian u64 from 8 bytes (the checksum that closes an envelope).
std::uint64_t read_le64(const std::uint8_t* bytes);
// An envelope is written in place: the header (its payload length patched by
// seal), the payload, the checksum — the payload is never copied again.
Writer start(Kind kind, const Sha256Digest& identity, std::size_t payload_bytes_hint = 0);
Bytes seal(Writer& out);

struct Header {
  Kind kind;
  std::uint16_t version;
  Sha256Digest identity;             // version 3
  std::uint64_t legacy_fingerprint;  // versions 1 and 2
  std::uint64_t length;              // of the payload

  // Whether the object was made under `params`.
  bool made_under(const Parameters& params) const;
};

// A whole envelope in memory: its header and where its payload lies.
struct Envelope : Header {
  const std::uint8_t* payload;
  std::size_t payload_size;
};

// Magic, version, kind, parameter identity and payload length, read from
// `r`; `size` is the whole envelope's (checked against the length).
Header read_header(Reader& r, std::size_t size);
// Header, length and checksum checked.
Envelope open(const std::uint8_t* data, std::size_t size);

}  // namespace ringfire::io::detail
