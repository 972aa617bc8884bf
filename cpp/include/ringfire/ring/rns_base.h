// An RNS base: N and distinct NTT-friendly primes q_0..q_{L-1}, their NTT
// tables, and the CRT constants to compose residues into integers mod
// Q = prod q_i and back. Immutable; shared by the polynomials that use it.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "ringfire/arith/modulus.h"
#include "ringfire/ring/ntt_tables.h"

namespace ringfire {

class RnsBase {
 public:
  // Raises InvalidArgument for an empty or repeated list, or a modulus that
  // is not NTT-friendly for N.
  RnsBase(std::size_t poly_degree, const std::vector<u64>& moduli);

  // The base made of this base's moduli at `indices` (in that order), sharing
  // their NTT tables, so the many sub-bases of a scheme (one per level, per
  // key-switching digit, ...) cost no table rebuilds.
  std::shared_ptr<const RnsBase> select(const std::vector<std::size_t>& indices) const;

  std::size_t n() const { return n_; }
  std::size_t size() const { return moduli_.size(); }
  const Modulus& modulus(std::size_t i) const { return moduli_[i]; }
  const std::vector<Modulus>& moduli() const { return moduli_; }
  const NttTables& ntt(std::size_t i) const { return *tables_[i]; }

  // Q as little-endian 64-bit words (size() words).
  const std::vector<u64>& product() const { return product_; }
  // (Q / q_i)^-1 mod q_i.
  u64 qhat_inverse(std::size_t i) const { return qhat_inverse_[i]; }
  // Q / q_i as little-endian words (size() words, top word may be 0).
  const u64* qhat(std::size_t i) const { return qhat_.data() + i * size(); }

  // CRT composition of `count` residue vectors (layout limbs x count) into
  // integers in [0, Q), written as size() little-endian words per value.
  void compose(const u64* residues, std::size_t count, u64* words) const;
  // The reverse: integers given as `word_count` little-endian words each
  // (any size) reduced modulo every q_i; output layout limbs x count.
  void decompose(const u64* words, std::size_t word_count, std::size_t count, u64* residues) const;

 private:
  RnsBase(std::size_t poly_degree, std::vector<Modulus> moduli, std::vector<std::shared_ptr<const NttTables>> tables);
  void check_distinct() const;
  void compute_crt_constants();

  std::size_t n_;
  std::vector<Modulus> moduli_;
  std::vector<std::shared_ptr<const NttTables>> tables_;
  std::vector<u64> product_;
  std::vector<u64> qhat_;
  std::vector<u64> qhat_inverse_;
};

using RnsBasePtr = std::shared_ptr<const RnsBase>;

}  // namespace ringfire
