"""Tutorial 4: fifty iterations of an encrypted logistic map, kept alive by bootstrapping.

Each slot holds x_0 in (0, 1) and its own growth rate r in [1.5, 2.9]; the
map x <- r x (1 - x) converges to 1 - 1/r. One iteration costs two levels
(the product, then the plaintext r), so without bootstrapping a ciphertext
with a handful of levels dies after a few iterations; here it is refreshed
whenever fewer than two levels are left, and the result is checked against
NumPy running the same map.

The default is the toy ring N12_BOOT_INSECURE (seconds; NOT secure, it
warns). For the 128-bit preset (about 17 s per bootstrap on two cores and
15 GB of memory): python examples/04_bootstrapped_logistic_map.py N16_BOOT
"""

import sys
import time
import warnings

import numpy as np

import ringfire as rf

preset = sys.argv[1] if len(sys.argv) > 1 else "N12_BOOT_INSECURE"
iterations = 50
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the toy preset's insecurity warning; it is said above
    ctx = rf.ckks.Context.preset(preset)
print(ctx.bootstrap_plan())

sk, keys = ctx.keygen(bootstrap=True)
rng = np.random.default_rng(7)
x0 = rng.uniform(0.05, 0.95, ctx.slots)
r = rng.uniform(1.5, 2.9, ctx.slots)

ct = ctx.encrypt(x0, keys)
want = x0.copy()
bootstraps, start = 0, time.perf_counter()
for step in range(1, iterations + 1):
    if ct.level < 2:
        ct = ct.bootstrap()
        bootstraps += 1
    ct = (ct * (1 - ct)) * r
    want = r * want * (1 - want)
    if step % 10 == 0:
        got = ctx.decrypt(ct, sk)
        bits = -np.log2(np.max(np.abs(got - want)))
        print(f"iteration {step:2d}: level {ct.level}, {bootstraps} bootstraps so far, "
              f"{bits:.1f} bits of precision (worst slot, against NumPy)")

got = ctx.decrypt(ct, sk)
bits = -np.log2(np.max(np.abs(got - want)))
print(f"{iterations} iterations, {bootstraps} bootstraps in {time.perf_counter() - start:.1f} s; "
      f"converged to 1 - 1/r within 2^-{-np.log2(np.max(np.abs(got - (1 - 1 / r)))):.1f}")
assert bootstraps >= iterations - 1, "every iteration but the first needed a bootstrap"
assert bits >= 20, f"precision fell to {bits:.1f} bits"
