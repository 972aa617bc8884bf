#include "ringfire/tfhe/torus_params.h"

#include <bit>
#include <vector>

#include "ringfire/base/errors.h"

namespace ringfire::tfhe {

void TorusParams::validate() const {
  const char* op = "tfhe.TorusParams";
  const auto N = ring_dimension;
  require(N >= 64 && N <= 16384 && std::has_single_bit(N), op,
          "ring_dimension N must be a power of two in [64, 16384], got " + std::to_string(N));
  require(lwe_dimension >= 1 && lwe_dimension <= 4096, op,
          "lwe_dimension n must be in [1, 4096], got " + std::to_string(lwe_dimension));
  // At least one bit is rounded away by each decomposition (the rounding
  // below reads bit shift - 1), and a digit times a key word must stay exact
  // enough in a double (digits below 2^30).
  require(pbs_base_log >= 1 && pbs_base_log <= 30 && pbs_levels >= 1 && pbs_base_log * pbs_levels <= 63, op,
          "pbs_base_log must be in [1, 30] and pbs_base_log * pbs_levels at most 63");
  require(ks_base_log >= 1 && ks_base_log <= 16 && ks_levels >= 1 && ks_base_log * ks_levels <= 63, op,
          "ks_base_log must be in [1, 16] and ks_base_log * ks_levels at most 63");
  require(lwe_noise_log2 <= 60 && glwe_noise_log2 <= 60, op, "the TUniform bounds must be at most 2^60");
  require(grouping >= 1 && grouping <= 4 && lwe_dimension % grouping == 0, op,
          "grouping must be in [1, 4] and divide lwe_dimension n=" + std::to_string(lwe_dimension) + ", got " +
              std::to_string(grouping));
}

std::size_t TorusParams::bootstrap_key_count() const {
  return grouping <= 1 ? lwe_dimension : lwe_dimension / grouping * ((std::size_t{1} << grouping) - 1);
}

std::string TorusParams::describe() const {
  return "n=" + std::to_string(lwe_dimension) + " N=" + std::to_string(ring_dimension) + " pbs=2^" +
         std::to_string(pbs_base_log) + "x" + std::to_string(pbs_levels) + " ks=2^" + std::to_string(ks_base_log) +
         "x" + std::to_string(ks_levels) + " noise=TU(2^" + std::to_string(lwe_noise_log2) + "), TU(2^" +
         std::to_string(glwe_noise_log2) + ")" + (grouping > 1 ? " multi-bit " + std::to_string(grouping) : "");
}

Sha256Digest TorusParams::identity() const {
  std::vector<std::uint8_t> bytes;
  const char tag[] = "ringfire.tfhe.TorusParams/1";
  bytes.insert(bytes.end(), tag, tag + sizeof(tag) - 1);
  for (std::uint64_t v : {std::uint64_t{lwe_dimension}, std::uint64_t{ring_dimension}, std::uint64_t{pbs_base_log},
                          std::uint64_t{pbs_levels}, std::uint64_t{ks_base_log}, std::uint64_t{ks_levels},
                          std::uint64_t{lwe_noise_log2}, std::uint64_t{glwe_noise_log2}})
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  // Only multi-bit sets hash their grouping: the one-bit sets keep the
  // identity their saved keys and ciphertexts carry.
  if (grouping > 1)
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<std::uint8_t>(std::uint64_t{grouping} >> (8 * i)));
  return sha256(bytes.data(), bytes.size());
}

}  // namespace ringfire::tfhe
