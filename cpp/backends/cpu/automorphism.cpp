// a(X) -> a(X^k) for odd k, in either form.
//   coeff: X^i -> X^(ik mod 2N), negated when ik mod 2N >= N (X^N = -1).
//   eval:  slot s of the bit-reversed NTT holds a(psi^(2 br(s) + 1)), so the
//          automorphism is the slot permutation s -> s' with
//          2 br(s') + 1 = (2 br(s) + 1) k mod 2N.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "cpu_backend.h"
#include "parallel_for.h"
#include "ringfire/arith/modular.h"

namespace ringfire::cpu {

namespace {

using Permutation = std::vector<std::uint32_t>;

// The evaluation-form permutation of one Galois element: slot s takes slot
// source[s]. Building it costs two bit reversals per slot -- at N = 2^16
// several times the gather itself -- so each (N, element) is built once and
// kept (32-bit indices: N <= 2^17). A bootstrap uses about 50 elements; the
// cache is emptied when it reaches kMaxCached tables (256 KiB each at 2^16,
// so at most 16 MiB; 32 MiB at 2^17). Measured on 8 limbs at N = 2^16: 115-182
// instead of 420-477 us per limb on one thread.
constexpr std::size_t kMaxCached = 64;

std::shared_ptr<const Permutation> eval_permutation(std::size_t n, int log_n, u64 galois_elt) {
  static std::mutex mutex;
  static std::map<std::pair<std::size_t, u64>, std::shared_ptr<const Permutation>> cache;
  const auto key = std::make_pair(n, galois_elt);
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  auto source = std::make_shared<Permutation>(n);
  const u64 two_n_mask = 2 * n - 1;
  for (std::size_t s = 0; s < n; ++s) {
    const u64 exponent = ((2 * reverse_bits(s, log_n) + 1) * galois_elt) & two_n_mask;
    (*source)[s] = static_cast<std::uint32_t>(reverse_bits((exponent - 1) / 2, log_n));
  }
  std::lock_guard<std::mutex> lock(mutex);
  if (cache.size() >= kMaxCached) cache.clear();
  return cache.emplace(key, std::move(source)).first->second;
}

}  // namespace

void CpuBackend::automorphism(const u64* in, u64* out, std::size_t batch, const RnsBase& base, u64 galois_elt,
                              Form form) {
  const std::size_t n = base.n();
  const u64 two_n_mask = 2 * n - 1;
  const int log_n = base.ntt(0).log_n();
  if (form == Form::coeff) {
    parallel_for(batch * base.size(), n, [&](std::size_t index) {
      const u64 q = base.modulus(index % base.size()).value();
      const u64* x = in + index * n;
      u64* z = out + index * n;
      for (std::size_t i = 0; i < n; ++i) {
        const u64 target = (i * galois_elt) & two_n_mask;
        if (target < n) {
          z[target] = x[i];
        } else {
          z[target - n] = neg_mod(x[i], q);
        }
      }
    });
    return;
  }
  // Evaluation form: one permutation shared by every limb.
  const std::shared_ptr<const Permutation> permutation = eval_permutation(n, log_n, galois_elt);
  const std::uint32_t* source = permutation->data();
  parallel_for(batch * base.size(), n, [&](std::size_t index) {
    const u64* x = in + index * n;
    u64* z = out + index * n;
    for (std::size_t s = 0; s < n; ++s) z[s] = x[source[s]];
  });
}

}  // namespace ringfire::cpu
