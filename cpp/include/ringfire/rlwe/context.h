// RlweContext: everything derived once from Parameters and shared by the
// objects made under them — the key base QP (Q's primes, then P's), the base
// of each level, the P base, and the hybrid key-switching digits with their
// base converters (built lazily, thread-safe).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "ringfire/ring/base_converter.h"
#include "ringfire/ring/rns_base.h"
#include "ringfire/rlwe/params.h"

namespace ringfire {

class RlweContext {
 public:
  explicit RlweContext(Parameters params);

  const Parameters& params() const { return params_; }
  std::size_t n() const { return params_.n(); }
  std::size_t max_level() const { return params_.max_level(); }
  std::uint64_t fingerprint() const { return params_.fingerprint(); }

  // q_0..q_L then p_0..p_{k-1}: the base of keys.
  const RnsBasePtr& key_base() const { return key_base_; }
  // q_0..q_level.
  const RnsBasePtr& level_base(std::size_t level) const;
  // The single prime at key-base index i (q_i for i <= L, then P's).
  const RnsBasePtr& prime_base(std::size_t i) const { return prime_bases_.at(i); }
  // p_0..p_{k-1}.
  const RnsBasePtr& special_base() const { return special_base_; }
  // q_0..q_level, p_0..p_{k-1}.
  const RnsBasePtr& extended_base(std::size_t level) const;
  std::size_t special_count() const { return params_.p_primes().size(); }

  // Key-switching digits active at `level`: digit j covers Q indices
  // [j*alpha, min((j+1)*alpha, level+1)).
  std::size_t digit_count(std::size_t level) const;
  // Bytes of one switching key made for `level`: a (b_j, a_j) pair per
  // digit, each over q_0..q_level and P.
  std::uint64_t switch_key_bytes(std::size_t level) const {
    return static_cast<std::uint64_t>(2 * digit_count(level) * (level + 1 + special_count()) * n() * sizeof(u64));
  }
  std::pair<std::size_t, std::size_t> digit_range(std::size_t level, std::size_t digit) const;
  // ModUp converter for a digit at a level: from the digit's primes to the
  // rest of extended_base(level), in extended order with the digit removed.
  const BaseConverter& mod_up(std::size_t level, std::size_t digit) const;
  // ModDown converter: P -> q_0..q_level.
  const BaseConverter& mod_down(std::size_t level) const;
  // Fused ModDown-and-rescale converter: q_level, p_0..p_{k-1} (in that
  // order, as they sit in an extended polynomial) -> q_0..q_{level-1}
  // (level >= 1); its exact form is the centred residue mod q_level * P.
  const BaseConverter& mod_down_rescale(std::size_t level) const;
  // Drop converter: q_{to+1}..q_from -> q_0..q_to (from > to); its exact form is
  // the centred residue mod their product (a rescale drops one prime; modulus
  // switching several at once).
  const BaseConverter& drop_lift(std::size_t from, std::size_t to) const;
  // ModRaise converter: q_0 -> q_0..q_level; its exact form lifts a level-0
  // polynomial's centred residues to the whole chain (bootstrapping).
  const BaseConverter& mod_raise_lift(std::size_t level) const;
  // P^-1 mod q_i (i <= L) and P mod q_i.
  u64 p_inverse_mod_q(std::size_t i) const { return p_inv_mod_q_[i]; }
  u64 p_mod_q(std::size_t i) const { return p_mod_q_[i]; }
  // q_level^-1 mod q_i for i < level (rescale constants).
  u64 q_last_inverse(std::size_t level, std::size_t i) const { return q_last_inv_[level][i]; }

  // Galois elements: 5^steps mod 2N (steps taken mod N/2, negative = right),
  // and 2N - 1 for complex conjugation (BGV: swapping the rows).
  u64 galois_element(long long steps) const;
  u64 conjugation_element() const { return 2 * n() - 1; }
  // The rotation group: 5^j mod 2N for j in [0, N/2).
  const std::vector<u64>& rotation_group() const { return rotation_group_; }
  // The discrete logarithm: the step j in [0, N/2) with 5^j = g (mod 2N), or
  // -1 when g is not a power of 5 (the conjugation, an even number).
  long long rotation_of(u64 galois_element) const;

 private:
  Parameters params_;
  RnsBasePtr key_base_, special_base_;
  std::vector<RnsBasePtr> level_bases_, extended_bases_, prime_bases_;
  std::vector<u64> p_inv_mod_q_, p_mod_q_;
  std::vector<std::vector<u64>> q_last_inv_;
  std::vector<u64> rotation_group_;
  std::vector<std::int32_t> rotation_of_;  // indexed by g < 2N
  mutable std::mutex mutex_;
  mutable std::map<std::pair<std::size_t, std::size_t>, std::unique_ptr<BaseConverter>> mod_up_;
  mutable std::map<std::size_t, std::unique_ptr<BaseConverter>> mod_down_;
  mutable std::map<std::pair<std::size_t, std::size_t>, std::unique_ptr<BaseConverter>> drop_lift_;
  mutable std::map<std::size_t, std::unique_ptr<BaseConverter>> mod_down_rescale_;
  mutable std::map<std::size_t, std::unique_ptr<BaseConverter>> mod_raise_lift_;
};

using RlweContextPtr = std::shared_ptr<const RlweContext>;

}  // namespace ringfire
