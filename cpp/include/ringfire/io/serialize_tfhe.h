// FHEW/TFHE objects in the envelope of serialize.h (same magic, version,
// checksum and parameter identity, here tfhe::Params::identity()).
//
// Evaluation keys (kind 10): payload = bootstrapping-key seed (32 bytes) |
// its B polynomials (n x 2 x 2d_g x N u32, coefficient form, each < Q) |
// key-switching seed (32 bytes) | its bodies (N d_ks (B_ks - 1) words, each
// < Q_ks: u16 up to Q_ks = 2^16, u32 above). The uniform parts are expanded from the seeds on load
// (tfhe/bootstrapper.h), so the bytes are half the keys in memory.
//
// Ciphertexts (kind 11): payload = encoding u8 (0 booleans, 1 integers with a
// padding bit, 2 radix-2 unsigned integers) | bits u8 | ndim u8 (<= 8) | the
// shape (ndim u64) | count u64 | count x (n + 1) u16 words, each < q. The
// count must equal the shape's size (times bits for encoding 2).
//
// Loads check the kind and the parameter identity, the exact payload length
// before allocating, and every word's range; malformed input raises
// InvalidArgument.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ringfire/io/serialize.h"
#include "ringfire/tfhe/bootstrapper.h"

namespace ringfire::io {

Bytes save(const tfhe::Bootstrapper& keys);
// The loaded keys run on `isa` (tfhe/isa.h).
std::unique_ptr<tfhe::Bootstrapper> load_tfhe_evaluation_keys(const tfhe::Params& params, const std::uint8_t* data,
                                                               std::size_t size, tfhe::Isa isa = tfhe::default_isa());

struct TfheCiphertexts {
  std::uint8_t encoding = 0;
  std::uint8_t bits = 0;
  std::vector<std::uint64_t> shape;
  std::vector<std::uint32_t> words;  // count x (n + 1)
};

Bytes save(const tfhe::Params& params, const TfheCiphertexts& cts);
TfheCiphertexts load_tfhe_ciphertexts(const tfhe::Params& params, const std::uint8_t* data, std::size_t size);

}  // namespace ringfire::io
