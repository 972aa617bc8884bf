"""Tutorial 2: automorphisms and RNS base conversion.

Automorphisms X -> X^k are how HE schemes rotate encrypted slots; base
conversion moves residues between prime sets (key switching, rescaling).
Run: python examples/02_automorphisms_and_base_conversion.py
"""

import numpy as np

from ringfire import ring

N = 1024
qs = ring.find_primes(50, 2, N)
ps = ring.find_primes(60, 3, N)
rng = np.random.default_rng(7)
a = np.stack([rng.integers(0, q, N, dtype=np.uint64) for q in qs])

# In evaluation form an automorphism is a permutation of slots; it commutes with the NTT.
k = 5
lhs = ring.ntt(ring.automorphism(a, k, qs), qs)
rhs = ring.automorphism(ring.ntt(a, qs), k, qs, form="eval")
assert np.array_equal(lhs, rhs)
print(f"X -> X^{k}: coefficient and evaluation forms agree")

# Exact conversion recovers the centered integer modulo the new primes.
src = ring.RnsBase(N, qs)
values = src.compose(a)
centered = [v if v <= src.product // 2 else v - src.product for v in map(int, values)]
converted = ring.base_convert(a, qs, ps, exact=True)
assert all(int(converted[j, i]) == centered[i] % p for j, p in enumerate(ps) for i in range(N))
fast = ring.base_convert(a, qs, ps)
overflow = {(int(fast[0, i]) - centered[i]) * pow(src.product, -1, ps[0]) % ps[0] for i in range(N)}
print(f"exact base conversion: all {N} coefficients centered; fast conversion adds u*Q with u in {sorted(overflow)}")
