#include "ringfire/bgv/context.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "ringfire/arith/modular.h"
#include "ringfire/arith/primes.h"
#include "ringfire/base/errors.h"

namespace ringfire::bgv {

namespace {

constexpr const char* kOp = "bgv.Context";
constexpr int kAuxPrimeBits = 60;

RlweContextPtr make_rlwe(Parameters params) {
  require(params.scheme() == Scheme::bgv || params.scheme() == Scheme::bfv, kOp,
          std::string("needs BGV or BFV parameters, got ") + scheme_name(params.scheme()));
  return std::make_shared<const RlweContext>(std::move(params));
}

double log2_of(const std::vector<u64>& primes, std::size_t count) {
  double bits = 0.0;
  for (std::size_t i = 0; i < count; ++i) bits += std::log2(static_cast<double>(primes[i]));
  return bits;
}

}  // namespace

Context::Context(Parameters params) : rlwe_(make_rlwe(std::move(params))), t_(rlwe_->params().plain_modulus()) {
  const std::size_t n = rlwe_->n();
  const u64 t = t_.value();
  const std::vector<u64>& q = rlwe_->params().q_primes();
  if (is_ntt_friendly(t, n)) batch_ = std::make_unique<BatchEncoder>(n, t_);
  u64 q_level_mod_t = 1;  // Q_l mod t
  for (std::size_t i = 0; i < q.size(); ++i) {
    t_mod_q_.push_back(t % q[i]);
    t_inv_mod_q_.push_back(inv_mod(t % q[i], q[i]));
    const u64 qi_mod_t = q[i] % t;
    drop_factor_.push_back(inv_mod(qi_mod_t, t));
    q_level_mod_t = mul_mod(q_level_mod_t, qi_mod_t, t_);
    tensor_factor_.push_back(neg_mod(inv_mod(q_level_mod_t, t), t));
  }
  // R's candidates: 60-bit NTT primes that are none of Q's, P's or t, enough
  // for the top level (lower levels use a prefix).
  std::set<u64> used(q.begin(), q.end());
  used.insert(rlwe_->params().p_primes().begin(), rlwe_->params().p_primes().end());
  used.insert(t);
  const double needed = log2_of(q, q.size()) + std::log2(static_cast<double>(t)) + std::log2(static_cast<double>(n)) + 2.0;
  const std::size_t count = static_cast<std::size_t>(std::ceil(needed / (kAuxPrimeBits - 1))) + 1;
  for (u64 prime : find_ntt_primes(kAuxPrimeBits, count + used.size(), n))
    if (!used.count(prime) && aux_primes_.size() < count) aux_primes_.push_back(prime);
}

const BatchEncoder& Context::batch_encoder() const {
  require(batch_ != nullptr, "bgv.encode",
          "the plaintext modulus t=" + std::to_string(t_.value()) + " cannot batch N=" + std::to_string(n()) +
              " slots (batching needs a prime t = 1 mod " + std::to_string(2 * n()) +
              "): use coefficient encoding, or choose t with plain_bits=...");
  return *batch_;
}

const TensorBase& Context::tensor_base(std::size_t level) const {
  require(level <= max_level(), "bgv.multiply",
          "level " + std::to_string(level) + " exceeds the maximum " + std::to_string(max_level()));
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = tensor_bases_[level];
  if (slot) return *slot;
  const RnsBasePtr& q_base = rlwe_->level_base(level);
  const u64 t = t_.value();
  const double needed = log2_of(params().q_primes(), level + 1) + std::log2(static_cast<double>(t)) +
                        std::log2(static_cast<double>(n())) + 2.0;
  std::size_t r = 0;
  while (log2_of(aux_primes_, r) < needed) ++r;
  if (!aux_full_) aux_full_ = std::make_shared<const RnsBase>(n(), aux_primes_);  // NTT tables built once
  std::vector<std::size_t> prefix(r);
  for (std::size_t j = 0; j < r; ++j) prefix[j] = j;
  auto base = std::make_unique<TensorBase>();
  base->aux = aux_full_->select(prefix);
  base->q_to_aux = std::make_unique<BaseConverter>(q_base, base->aux);
  base->aux_to_q = std::make_unique<BaseConverter>(base->aux, q_base);
  for (std::size_t j = 0; j < r; ++j) {
    const Modulus& mod = base->aux->modulus(j);
    u64 q_mod_r = 1;
    for (std::size_t i = 0; i <= level; ++i) q_mod_r = mul_mod(q_mod_r, params().q_primes()[i] % mod.value(), mod);
    base->q_inverse_mod_aux.push_back(inv_mod(q_mod_r, mod.value()));
    base->t_mod_aux.push_back(t % mod.value());
  }
  slot = std::move(base);
  return *slot;
}

}  // namespace ringfire::bgv
