#include "ringfire/rlwe/subring.h"

#include <string>
#include <utility>
#include <vector>

#include "ringfire/base/errors.h"
#include "ringfire/base/op_label.h"
#include "ringfire/rlwe/keygen.h"

namespace ringfire {

namespace {

constexpr const char* kOp = "rlwe.embed_in_ring";

// k = N / n, after checking that `small`'s ring is a subring of `target`'s with
// the same first `levels` primes.
std::size_t subring_factor(const RlweContext& small, const RlweContext& target, std::size_t levels) {
  const std::size_t n = small.n(), N = target.n();
  require(N >= n && N % n == 0, kOp,
          "the target ring's degree " + std::to_string(N) + " is not a multiple of " + std::to_string(n));
  require(small.params().scheme() == target.params().scheme(), kOp, "the two contexts are of different schemes");
  const auto& qs = small.params().q_primes();
  const auto& qt = target.params().q_primes();
  require(levels <= qs.size() && levels <= qt.size(), kOp,
          "the target context has " + std::to_string(qt.size()) + " primes; the ciphertext needs " +
              std::to_string(levels));
  for (std::size_t i = 0; i < levels; ++i)
    require(qs[i] == qt[i], kOp,
            "prime q_" + std::to_string(i) + " differs between the contexts (" + std::to_string(qs[i]) + " and " +
                std::to_string(qt[i]) + "): the subring's chain must be the target's first primes");
  return N / n;
}

}  // namespace

Ciphertext embed_in_ring(const Ciphertext& a, const RlweContextPtr& target) {
  const OpLabel label(kOp);
  require(target != nullptr, kOp, "no target context");
  require(a.device().is_host(), kOp, "the ciphertext lives on '" + a.device().str() + "': copy it to the host first");
  require(a.form() == Form::eval, kOp, "expected a ciphertext in evaluation form");
  const std::size_t k = subring_factor(*a.context(), *target, a.level() + 1);
  const std::size_t n = a.n(), rows = a.size() * (a.level() + 1);
  std::vector<u64> coefficients(a.data(), a.data() + a.size() * a.poly_words());
  Backend& cpu = backend_for(Device::cpu());
  cpu.ntt_inverse(coefficients.data(), a.size(), a.base());
  Ciphertext out(target, a.size(), a.level(), a.metadata(), Device::cpu());  // zeros between the spread words
  for (std::size_t row = 0; row < rows; ++row) {
    const u64* from = coefficients.data() + row * n;
    u64* to = out.data() + row * target->n();
    for (std::size_t j = 0; j < n; ++j) to[j * k] = from[j];
  }
  cpu.ntt_forward(out.data(), out.size(), out.base());
  out.set_noise_bits(a.noise_bits());  // coefficients and slot values are the same: so is the error
  return out;
}

SecretKey embedded_secret(const SecretKey& secret, const RlweContextPtr& target) {
  require(target != nullptr, kOp, "no target context");
  const std::size_t k = subring_factor(*secret.context(), *target, 0);
  std::vector<std::int8_t> spread(target->n(), 0);
  const auto& s = secret.coefficients();
  for (std::size_t j = 0; j < s.size(); ++j) spread[j * k] = s[j];
  return SecretKey(target, std::move(spread));  // the key holds the only copy, and wipes it
}

EmbeddingKey::EmbeddingKey(KeySwitchKey key, std::size_t subring_degree)
    : key_(std::move(key)), subring_degree_(subring_degree) {
  require(key_.source() == kEmbeddingSource, "rlwe.EmbeddingKey",
          "not an embedding key: it switches from source " + std::to_string(key_.source()));
  const std::size_t N = key_.context()->n();
  require(subring_degree_ >= 2 && subring_degree_ < N && N % subring_degree_ == 0 &&
              (subring_degree_ & (subring_degree_ - 1)) == 0,
          "rlwe.EmbeddingKey",
          "a subring of degree " + std::to_string(subring_degree_) + " does not sit in a ring of degree " +
              std::to_string(N) + " (a smaller power of two is needed)");
}

EmbeddingKey generate_embedding_key(const SecretKey& secret, const SecretKey& subring_secret, std::size_t level,
                                    Prng& prng) {
  require(subring_secret.context()->n() < secret.context()->n(), "rlwe.EmbeddingKey",
          "a subring of degree " + std::to_string(subring_secret.context()->n()) + " does not sit in a ring of degree " +
              std::to_string(secret.context()->n()) + " (a smaller power of two is needed)");
  const SecretKey embedded = embedded_secret(subring_secret, secret.context());
  return EmbeddingKey(generate_switch_key(secret, embedded.eval(), kEmbeddingSource, prng, level),
                      subring_secret.context()->n());
}

EmbeddingKey generate_embedding_key(const SecretKey& secret, const std::vector<std::int8_t>& subring_secret,
                                    std::size_t level, Prng& prng) {
  const std::size_t n = subring_secret.size(), N = secret.context()->n();
  require(n >= 2 && n < N && (n & (n - 1)) == 0, "rlwe.EmbeddingKey",
          "a subring secret of " + std::to_string(n) + " coefficients does not sit in a ring of degree " +
              std::to_string(N) + " (a smaller power of two is needed)");
  std::vector<std::int8_t> spread(N, 0);
  for (std::size_t j = 0; j < n; ++j) {
    require(subring_secret[j] >= -1 && subring_secret[j] <= 1, "rlwe.EmbeddingKey",
            "a subring secret's coefficients lie in [-1, 1]");
    spread[j * (N / n)] = subring_secret[j];
  }
  const SecretKey embedded(secret.context(), std::move(spread));  // the key holds the only copy, and wipes it
  return EmbeddingKey(generate_switch_key(secret, embedded.eval(), kEmbeddingSource, prng, level), n);
}

}  // namespace ringfire
