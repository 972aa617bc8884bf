// Key images: switching keys laid out on disk exactly as they sit in memory,
// so that a process maps them read-only instead of loading them.
//
// A loaded key is anonymous memory: every process that serves it holds its own
// copy (N16_BOOT's bootstrapping keys: 3.5 GiB seeded, 7 GiB expanded), a
// restart parses it again, and the kernel can only swap it, never drop it. An
// image mapped with mmap is file-backed: its pages live in the page cache,
// shared by every process that maps the same file, read in on first touch and
// dropped under memory pressure (they are clean), and a restart finds them
// still cached. `ringfire serve` writes one image per checked key upload and
// maps it from then on (docs/serving.md).
//
// Layout (little-endian):
//   header (80 bytes): "RFKEYIMG" | version u16 | kind u16 (io::Kind) |
//     key count u32 | parameter identity (32 bytes) | data bytes u64 |
//     data checksum u64 (XXH64 of the data) | table bytes u64 |
//     header checksum u64 (XXH64 of the 72 bytes before it, then the table)
//   table, per key: source u64 | level u32 | digits u32 | context u8 (0: the
//     parameters', 1: bootstrapping's encapsulation context) | halves u8 (2:
//     b_j and a_j stored; 1: b_j only, a_j expanded from the seeds) |
//     seeded u8 | 5 zero bytes | digits x 32-byte seeds when seeded
//   data, from the first 4 KiB boundary after the table: per key, its b_j
//     then (halves 2) its a_j, each digits x (level + 1 + k) x N words and
//     starting on a 4 KiB boundary.
// The order of keys: a Galois key set's by element; bootstrapping keys' Galois
// keys, then the encapsulation keys to and from the sparse secret.
//
// Mapping checks everything but the data before it maps (magic, version,
// kind, parameter identity, header checksum, every level, digit count,
// source and context, and that the layout the table implies is exactly the
// file's size), so a foreign, truncated or corrupted header is refused with
// InvalidArgument and nothing is read out of bounds. The data's checksum is
// checked when `verify` is set (it reads every page once: about a second for
// N16_BOOT's keys from the page cache); an image is a copy of keys that were
// checked when they were loaded, so a process that wrote it may skip that.
// Like the envelope's checksum, it catches accidents, not an attacker: an
// image belongs in storage only its owner can write. Replace an image by
// renaming a new file over it, never by rewriting it in place: a mapped file
// truncated under its readers faults (SIGBUS) on their next read.
#pragma once

#include <string>

#include "ringfire/ckks/bootstrap.h"
#include "ringfire/io/serialize.h"
#include "ringfire/rlwe/keys.h"

namespace ringfire::io {

constexpr std::uint16_t kKeyImageVersion = 1;

// Writes the image of host keys to `path` (created or truncated; write it
// beside its final name and rename it there to publish it whole). A key's a_j
// are stored when it holds them expanded, or, with `expand`, expanded from its
// seeds one digit at a time as they are written (the key itself stays seeded:
// writing costs one polynomial of memory, not the a_j); else its seeds.
// Raises DeviceError on an I/O error, InvalidArgument for keys on another
// device. Returns the bytes written.
std::uint64_t save_image(const RelinKey& key, const std::string& path, bool expand = false);
std::uint64_t save_image(const GaloisKeys& keys, const std::string& path, bool expand = false);
std::uint64_t save_image(const ckks::BootstrapKeys& keys, const std::string& path, bool expand = false);

// The kind of key an image at `path` holds (after checking its header).
Kind image_kind(const std::string& path);

// Keys whose polynomials view a read-only private mapping of the image at
// `path` (kept mapped while any of them lives), under `ctx`'s parameters.
RelinKey map_relin_key(const RlweContextPtr& ctx, const std::string& path, bool verify);
GaloisKeys map_galois_keys(const RlweContextPtr& ctx, const std::string& path, bool verify);
ckks::BootstrapKeys map_bootstrap_keys(const RlweContextPtr& ctx, const std::string& path, bool verify);

}  // namespace ringfire::io
