#include "ringfire/ring/rns_base.h"

#include <algorithm>
#include <string>

#include "ringfire/arith/modular.h"
#include "ringfire/base/errors.h"
#include "ringfire/ring/multiword.h"

namespace ringfire {

RnsBase::RnsBase(std::size_t poly_degree, const std::vector<u64>& moduli) : n_(poly_degree) {
  require(!moduli.empty(), "ring.RnsBase", "needs at least one modulus");
  moduli_.reserve(moduli.size());
  for (u64 q : moduli) moduli_.emplace_back(q);
  check_distinct();
  tables_.reserve(moduli.size());
  for (const Modulus& m : moduli_) tables_.push_back(std::make_shared<const NttTables>(n_, m));
  compute_crt_constants();
}

RnsBase::RnsBase(std::size_t poly_degree, std::vector<Modulus> moduli,
                 std::vector<std::shared_ptr<const NttTables>> tables)
    : n_(poly_degree), moduli_(std::move(moduli)), tables_(std::move(tables)) {
  require(!moduli_.empty(), "ring.RnsBase", "needs at least one modulus");
  check_distinct();
  compute_crt_constants();
}

std::shared_ptr<const RnsBase> RnsBase::select(const std::vector<std::size_t>& indices) const {
  std::vector<Modulus> moduli;
  std::vector<std::shared_ptr<const NttTables>> tables;
  for (std::size_t i : indices) {
    require(i < size(), "ring.RnsBase.select",
            "index " + std::to_string(i) + " is out of range for a base of " + std::to_string(size()) + " moduli");
    moduli.push_back(moduli_[i]);
    tables.push_back(tables_[i]);
  }
  return std::shared_ptr<const RnsBase>(new RnsBase(n_, std::move(moduli), std::move(tables)));
}

void RnsBase::check_distinct() const {
  for (std::size_t i = 0; i < moduli_.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      require(moduli_[i].value() != moduli_[j].value(), "ring.RnsBase",
              "modulus " + std::to_string(moduli_[i].value()) + " appears twice");
}

void RnsBase::compute_crt_constants() {
  const std::size_t len = size();
  // Q = prod q_i, and Q/q_i for each i, as len-word integers.
  product_.assign(len, 0);
  product_[0] = 1;
  std::vector<u64> scratch(len);
  for (const Modulus& m : moduli_) {
    multiword::mul_word(product_.data(), m.value(), scratch.data(), len);
    product_ = scratch;
  }
  qhat_.assign(len * len, 0);
  qhat_inverse_.resize(len);
  for (std::size_t i = 0; i < len; ++i) {
    u64* qhat_i = qhat_.data() + i * len;
    qhat_i[0] = 1;
    u64 qhat_mod_qi = 1;
    for (std::size_t j = 0; j < len; ++j) {
      if (j == i) continue;
      multiword::mul_word(qhat_i, moduli_[j].value(), scratch.data(), len);
      std::copy(scratch.begin(), scratch.end(), qhat_i);
      qhat_mod_qi = mul_mod(qhat_mod_qi, moduli_[j].value() % moduli_[i].value(), moduli_[i]);
    }
    qhat_inverse_[i] = inv_mod(qhat_mod_qi, moduli_[i].value());
  }
}

void RnsBase::compose(const u64* residues, std::size_t count, u64* words) const {
  const std::size_t len = size();
  if (len == 1) {  // x mod q_0 is x
    std::copy(residues, residues + count, words);
    return;
  }
  if (len == 2) {  // Garner: x = r_0 + q_0 [(r_1 - r_0) q_0^-1]_{q_1}, below q_0 q_1: the same words
    const u64 q0 = moduli_[0].value(), q1 = moduli_[1].value();
    for (std::size_t c = 0; c < count; ++c) {
      const u64 r0 = residues[c];
      const u64 t = mul_mod(sub_mod(residues[count + c], r0 % q1, q1), qhat_inverse_[1], moduli_[1]);
      const u128 x = static_cast<u128>(t) * q0 + r0;
      words[2 * c] = static_cast<u64>(x);
      words[2 * c + 1] = static_cast<u64>(x >> 64);
    }
    return;
  }
  if (len == 3) {  // Garner again (decryptions at level 2): x = r_0 + q_0 (t_1 + q_1 t_2), below Q
    const Modulus &m1 = moduli_[1], &m2 = moduli_[2];
    const u64 q0 = moduli_[0].value(), q1 = m1.value(), q2 = m2.value();
    const u64 q0_inv_1 = inv_mod(reduce_u128(q0, m1), q1), q0_inv_2 = inv_mod(reduce_u128(q0, m2), q2);
    const u64 q1_inv_2 = inv_mod(reduce_u128(q1, m2), q2);
    for (std::size_t c = 0; c < count; ++c) {
      const u64 r0 = residues[c];
      const u64 t1 = mul_mod(sub_mod(residues[count + c], reduce_u128(r0, m1), q1), q0_inv_1, m1);
      const u64 s2 = mul_mod(sub_mod(residues[2 * count + c], reduce_u128(r0, m2), q2), q0_inv_2, m2);
      const u64 t2 = mul_mod(sub_mod(s2, reduce_u128(t1, m2), q2), q1_inv_2, m2);
      const u128 v = static_cast<u128>(t2) * q1 + t1;  // below q_1 q_2 < 2^122
      const u128 low = static_cast<u128>(static_cast<u64>(v)) * q0 + r0;
      const u128 high = static_cast<u128>(static_cast<u64>(v >> 64)) * q0 + (low >> 64);
      words[3 * c] = static_cast<u64>(low);
      words[3 * c + 1] = static_cast<u64>(high);
      words[3 * c + 2] = static_cast<u64>(high >> 64);
    }
    return;
  }
  std::vector<u64> acc(len + 1);
  std::vector<u64> q_ext(product_);
  q_ext.push_back(0);
  for (std::size_t c = 0; c < count; ++c) {
    std::fill(acc.begin(), acc.end(), 0);
    // x = sum_i [x_i * qhat_inv_i]_{q_i} * (Q/q_i)  (mod Q); the sum is < len * Q.
    for (std::size_t i = 0; i < len; ++i) {
      const u64 y = mul_mod(residues[i * count + c], qhat_inverse_[i], moduli_[i]);
      acc[len] += multiword::mul_word_add(qhat(i), y, acc.data(), len);
    }
    while (multiword::greater_equal(acc.data(), q_ext.data(), len + 1))
      multiword::subtract(acc.data(), q_ext.data(), len + 1);
    std::copy(acc.begin(), acc.begin() + len, words + c * len);
  }
}

void RnsBase::decompose(const u64* words, std::size_t word_count, std::size_t count, u64* residues) const {
  for (std::size_t i = 0; i < size(); ++i)
    for (std::size_t c = 0; c < count; ++c)
      residues[i * count + c] = multiword::mod_modulus(words + c * word_count, word_count, moduli_[i]);
}

}  // namespace ringfire
