// The per-device caches of constant tables the kernels read: twiddles and
// limb constants per (N, moduli), base-conversion constants per converter
// (uploaded once, on first use).
#include "cuda_backend.h"

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "ringfire/arith/modular.h"

namespace ringfire::cuda {
namespace {

template <class T>
T* upload(const std::vector<T>& host, std::vector<void*>& owned) {
  T* device = nullptr;
  const std::size_t bytes = std::max<std::size_t>(host.size(), 1) * sizeof(T);
  check(cudaMalloc(&device, bytes), "cuda.upload");
  owned.push_back(device);
  if (!host.empty()) check(cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "cuda.upload");
  return device;
}

}  // namespace

// The constants of limb (N, q), its twiddle tables uploaded on first use.
// Called with cache_mutex_ held.
LimbConstants CudaBackend::limb_entry(const NttTables& t) {
  auto& entry = tables_[{t.n(), t.modulus().value()}];
  if (entry.first == nullptr) {
    // Twiddle and Shoup constant interleaved: one 16-byte load per butterfly.
    std::vector<ulonglong2> fwd(t.n()), inv(t.n());
    for (std::size_t i = 0; i < t.n(); ++i) {
      fwd[i] = make_ulonglong2(t.forward()[i], t.forward_shoup()[i]);
      inv[i] = make_ulonglong2(t.inverse()[i], t.inverse_shoup()[i]);
    }
    entry = {upload(fwd, owned_), upload(inv, owned_)};
  }
  LimbConstants c;
  c.forward = entry.first;
  c.inverse = entry.second;
  c.modulus = t.modulus();
  c.n_inv = t.n_inv();
  c.last_n_inv = t.last_twiddle_n_inv();
  return c;
}

const LimbConstants* CudaBackend::limb_constants(const RnsBase& base) {
  const RnsBase* one = &base;
  return stacked_limb_constants(&one, 1);
}

const LimbConstants* CudaBackend::stacked_limb_constants(const RnsBase* const* bases, std::size_t count) {
  std::vector<u64> key{bases[0]->n()};
  for (std::size_t b = 0; b < count; ++b) {
    if (b > 0) key.push_back(0);  // no modulus is 0: the bases stay apart in the key
    for (const Modulus& m : bases[b]->moduli()) key.push_back(m.value());
  }
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (auto it = bases_.find(key); it != bases_.end()) return it->second;
  std::vector<LimbConstants> host;
  for (std::size_t b = 0; b < count; ++b)
    for (std::size_t l = 0; l < bases[b]->size(); ++l) host.push_back(limb_entry(bases[b]->ntt(l)));
  LimbConstants* device = upload(host, owned_);
  bases_[key] = device;
  return device;
}

const ConverterConstants& CudaBackend::converter_constants(const BaseConverter& conv) {
  const RnsBase& from = conv.from();
  const RnsBase& to = conv.to();
  std::vector<u64> key{from.n(), from.size()};
  for (const Modulus& m : from.moduli()) key.push_back(m.value());
  for (const Modulus& m : to.moduli()) key.push_back(m.value());
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (auto it = converters_.find(key); it != converters_.end()) return *it->second;
  const std::size_t src = from.size(), dst = to.size();
  std::vector<Modulus> from_mod(from.moduli()), to_mod(to.moduli());
  std::vector<ShoupOperand> inv(src), factors_shoup(src * dst), neg_q_mod_p(dst);
  std::vector<double> recip(conv.q_reciprocal(), conv.q_reciprocal() + src);
  std::vector<u64> qhat_words(src * src), q_words(from.product()), factors(conv.qhat_mod_p(), conv.qhat_mod_p() + src * dst);
  std::vector<u64> q_mod_p(conv.q_mod_p(), conv.q_mod_p() + dst);
  for (std::size_t i = 0; i < src; ++i) {
    inv[i] = make_shoup(from.qhat_inverse(i), from.modulus(i).value());
    std::copy(from.qhat(i), from.qhat(i) + src, qhat_words.begin() + i * src);
  }
  for (std::size_t j = 0; j < dst; ++j)
    for (std::size_t i = 0; i < src; ++i)
      factors_shoup[j * src + i] = make_shoup(factors[j * src + i], to.modulus(j).value());
  for (std::size_t j = 0; j < dst; ++j)
    neg_q_mod_p[j] = make_shoup(neg_mod(q_mod_p[j], to.modulus(j).value()), to.modulus(j).value());
  auto cc = std::make_unique<ConverterConstants>();
  cc->from = upload(from_mod, owned_);
  cc->qhat_inv = upload(inv, owned_);
  cc->reciprocal = upload(recip, owned_);
  cc->qhat_words = upload(qhat_words, owned_);
  cc->q_words = upload(q_words, owned_);
  cc->to = upload(to_mod, owned_);
  cc->qhat_mod_p = upload(factors, owned_);
  cc->qhat_mod_p_shoup = upload(factors_shoup, owned_);
  cc->q_mod_p = upload(q_mod_p, owned_);
  cc->neg_q_mod_p = upload(neg_q_mod_p, owned_);
  return *(converters_[key] = std::move(cc));
}

}  // namespace ringfire::cuda
