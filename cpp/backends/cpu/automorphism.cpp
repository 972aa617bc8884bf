// a(X) -> a(X^k) for odd k, in either form.
//   coeff: X^i -> X^(ik mod 2N), negated when ik mod 2N >= N (X^N = -1).
//   eval:  slot s of the bit-reversed NTT holds a(psi^(2 br(s) + 1)), so the
//          automorphism is the slot permutation s -> s' with
//          2 br(s') + 1 = (2 br(s) + 1) k mod 2N.
#include <vector>

#include "cpu_backend.h"
#include "parallel_for.h"
#include "ringfire/arith/modular.h"

namespace ringfire::cpu {

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
  std::vector<std::size_t> source(n);
  for (std::size_t s = 0; s < n; ++s) {
    const u64 exponent = ((2 * reverse_bits(s, log_n) + 1) * galois_elt) & two_n_mask;
    source[s] = reverse_bits((exponent - 1) / 2, log_n);
  }
  parallel_for(batch * base.size(), n, [&](std::size_t index) {
    const u64* x = in + index * n;
    u64* z = out + index * n;
    for (std::size_t s = 0; s < n; ++s) z[s] = x[source[s]];
  });
}

}  // namespace ringfire::cpu
