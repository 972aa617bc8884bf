"""Tutorial 1: negacyclic polynomial products in RNS form.

Multiplies two random polynomials of Z_Q[X]/(X^N + 1), with Q a product of
three 61-bit NTT-friendly primes, three ways -- NTT, Karatsuba-fused NTT and
schoolbook over Python integers via the CRT -- and checks they agree.
Run: python examples/01_polynomial_products.py
"""

import numpy as np

from ringfire import ring

N = 256
moduli = ring.find_primes(61, 3, N)
base = ring.RnsBase(N, moduli)
print(f"N = {N}, Q = {' * '.join(map(str, moduli))} ({base.product.bit_length()} bits)")

rng = np.random.default_rng(1)
a_int = [int(rng.integers(0, 1 << 62)) ** 3 % base.product for _ in range(N)]
b_int = [int(rng.integers(0, 1 << 62)) ** 3 % base.product for _ in range(N)]
a, b = base.decompose(a_int), base.decompose(b_int)          # (L, N) residues

c_ntt = ring.poly_mul(a, b, moduli)
c_kar = ring.poly_mul(a, b, moduli, method="karatsuba")
assert np.array_equal(c_ntt, c_kar)

# Reference: the product over the integers, reduced by X^N = -1 and mod Q.
ref = [0] * N
for i, x in enumerate(a_int):
    for j, y in enumerate(b_int):
        k = i + j
        ref[k % N] += x * y if k < N else -x * y
ref = [v % base.product for v in ref]
assert [int(v) for v in base.compose(c_ntt)] == ref
print("NTT, Karatsuba-fused and big-integer schoolbook products agree.")
