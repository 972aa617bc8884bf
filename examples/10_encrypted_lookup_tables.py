"""Tutorial 10: lookup tables on encrypted integers (CKKS functional bootstrapping).

A client holds two vectors of 5-bit readings (integers 0..31, one per slot of a ciphertext,
2048 of them on the toy ring) from two meters, encrypts them and sends them with its
bootstrapping keys. The server, without the secret key:

* converts the first meter's raw codes through a calibration table (any function of the
  code: here a logarithmic curve measured once in the lab), in one functional bootstrap;
* from the difference of the two meters, in one more functional bootstrap, gets three tables
  at once (``ev.luts``): which meter reads higher, by how much (|a - b|), and the larger
  reading (b + max(a - b, 0)).

A functional bootstrap is a bootstrap whose EvalMod evaluates a table instead of the sine
(docs/lookup.md): the results come back refreshed near the top of the chain, exact up to
CKKS's error (about 2^-25 here). The toy bootstrapping ring keeps this quick (it is NOT
secure); "N16_BOOT" is the 128-bit choice with the same code.
Run: python examples/10_encrypted_lookup_tables.py
"""

import time
import warnings

import numpy as np

import ringfire as rf

warnings.simplefilter("ignore", RuntimeWarning)  # the toy ring warns that it is insecure
CODES = 32  # 5-bit readings
CALIBRATION = 20.0 * np.log1p(np.arange(CODES) / 4.0)  # code -> physical units, from the lab

# ---- the client ----------------------------------------------------------------------
ctx = rf.ckks.Context.preset("N12_BOOT_INSECURE")
sk, keys = ctx.keygen(bootstrap=True)
rng = np.random.default_rng(10)
first, second = rng.integers(0, CODES, ctx.slots), rng.integers(0, CODES, ctx.slots)
a, b = ctx.encrypt(first.astype(float), keys), ctx.encrypt(second.astype(float), keys)

# ---- the server ----------------------------------------------------------------------
ev = ctx.evaluator(keys)
t = time.perf_counter()
calibrated = ev.lut(a, CALIBRATION, modulus=CODES)
# a - b lies in [-31, 31]: signed integers modulo 64.
higher, gap, excess = ev.luts(ev.sub(a, b), [lambda k: float(k > 0), abs, lambda k: max(k, 0)],
                              modulus=2 * CODES, signed=True)
larger = ev.add(ev.adjust_to(b, excess.level), excess)
print(f"server: a calibration table and three comparison tables on {ctx.slots} slots "
      f"in {time.perf_counter() - t:.1f} s (two functional bootstraps)")

# ---- the client checks ---------------------------------------------------------------
checks = {"calibrated": (calibrated, CALIBRATION[first]), "first higher": (higher, first > second),
          "|a - b|": (gap, np.abs(first - second)), "max(a, b)": (larger, np.maximum(first, second))}
for name, (ct, want) in checks.items():
    error = np.abs(ctx.decrypt(ct, sk).real - want).max()
    assert error < 1e-5, (name, error)
    print(f"client: {name:12s} right in every slot, largest error {error:.1e}")
