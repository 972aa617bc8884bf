"""Tutorial 5: an exact encrypted matrix-vector product mod t, then its square.

A client holds an integer vector x (length d = 64) and encrypts it; a server
holds an integer matrix W and computes y = (W x)^2 mod t without seeing x,
using batching (one ciphertext holds x tiled over a 2 x N/2 slot matrix),
hoisted rotations and the diagonal method (Halevi-Shoup):

    W x = sum_k diag_k(W) * rotate(x, k),   diag_k(W)[i] = W[i, (i + k) mod d]

Both schemes give the same exact answer; the script checks every entry
against NumPy's integer arithmetic mod t and prints the noise budget left.
Run: python examples/05_exact_matrix_vector.py [bgv|bfv]
"""

import sys
import time

import numpy as np

import ringfire as rf

scheme = {"bgv": rf.bgv, "bfv": rf.bfv}[sys.argv[1] if len(sys.argv) > 1 else "bfv"]
d = 64
ctx = scheme.Context(poly_degree=2**13, plain_bits=20)   # 128-bit, t a 20-bit batching prime
t = ctx.plain_modulus
rows = ctx.row_size                                       # N/2 slots per row; d divides it
print(ctx)

# The client: keys (rotations 1..d-1 for the diagonals) and the encrypted vector.
sk, keys = ctx.keygen(rotations=range(1, d))
rng = np.random.default_rng(5)
x = rng.integers(-1000, 1000, d)
ct_x = ctx.encrypt(np.tile(x, ctx.slots // d), keys)     # x repeated: rotations wrap inside each copy

# The server: W in plaintext, the product with hoisted rotations (one key-switch setup for all d-1).
W = rng.integers(-50, 50, (d, d))
start = time.perf_counter()
ev = ctx.evaluator(keys)
rotated = [ct_x] + ev.rotate_many(ct_x, list(range(1, d)))
acc = None
for k in range(d):
    diagonal = np.array([W[i, (i + k) % d] for i in range(d)])
    term = rotated[k] * np.tile(diagonal, ctx.slots // d)   # plaintext product, exact mod t
    acc = term if acc is None else acc + term
y = acc * acc                                             # ciphertext product, relinearized
elapsed = time.perf_counter() - start

# The client decrypts and checks against NumPy, exactly.
got = ctx.decrypt(y, sk)[:d]
want = ((W.astype(object) @ x.astype(object)) ** 2) % t
want = np.array([v - t if v > t // 2 else v for v in want], dtype=np.int64)   # centred, as decrypt returns
assert np.array_equal(got, want), "the encrypted result differs from NumPy"
print(f"y = (W x)^2 mod t for d={d}: all {d} entries exact; server time {elapsed:.2f} s, "
      f"noise budget left {ctx.noise_budget(y, sk):.0f} bits")
