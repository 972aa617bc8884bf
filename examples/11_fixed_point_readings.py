"""Tutorial 11: fixed-point statistics on wide encrypted integers (FHEW/TFHE, one ciphertext each).

A client has eight temperature readings in fixed point (units of 1/16 degree, below 2^9)
and encrypts each as one 16-bit integer, one ciphertext per reading. The server, which
never holds the secret key, computes:

* the total, by additions (free: no bootstrap; it stays below 2^12);
* the mean, floor(total / 8), by the homomorphic floor ``total >> 3`` (two bootstraps);
* which readings lie above the mean, exactly: the sign of ``total - 8 x`` (x > total / 8),
  a 16-bit sign in seven bootstraps;
* every reading rounded down to whole degrees, the fixed-point rescale ``x >> 4`` (two).

A table could not do any of this on the whole value: tables read at most 10 bits on this
ring. Signs and floors clear the low bits four at a time instead (Micciancio and
Polyakov's large-precision sign), so they need precise bootstraps: STD128_T64_WIDE has
tfhe-rs's 128-bit keys with a three-level gadget, good for 18-bit signs after a bootstrap
(docs/tfhe.md). The server cannot tell fresh ciphertexts from bootstrapped ones, so its
noise model counts every loaded one as bootstrapped, and the sum of eight such (times 8, for
the comparison) as 72 of them: a 16-bit sign of it fails with probability 2^-89 at worst. The
client decrypts and checks every answer against Python's integers.
Run: python examples/11_fixed_point_readings.py
"""

import time

import numpy as np

import ringfire as rf

# ---- the client ----------------------------------------------------------------------
client = rf.tfhe.Context.preset("STD128_T64_WIDE")
sk = client.keygen()
degrees = np.array([21.5, 19.25, 23.0, 22.75, 18.0, 20.5, 24.125, 21.0])
readings = np.round(degrees * 16).astype(np.int64)     # fixed point: 4 fractional bits, below 2^9
keys_bytes = client.save_evaluation_keys()
data = client.encrypt(readings, sk, bits=16).to_bytes()
print(f"client: {len(keys_bytes) / 1e6:.0f} MB of evaluation keys (seeded), {len(data) / 1e3:.0f} kB of ciphertexts")

# ---- the server (its own context: evaluation keys only) ---------------------------------
server = rf.tfhe.Context.preset("STD128_T64_WIDE")
server.load_evaluation_keys(keys_bytes)
x = server.load(data)
start = time.perf_counter()
order = np.arange(len(x))
total = x                                              # the total in every element: x rotated and added
for i in range(1, len(x)):
    total = total + x[np.roll(order, i)]               # 16-bit integers: exact while below 2^16
mean = total[0] >> 3                                   # a 13-bit integer: floor(total / 8)
above = server.sign(total - x * 8)                     # total - 8 x wraps past 2^15 where x > mean
whole = x >> 4                                         # whole degrees: 12-bit integers
print(f"server: total, mean, eight comparisons and eight rescales in {time.perf_counter() - start:.1f} s")
replies = [r.to_bytes() for r in (total, mean, above, whole)]

# ---- the client again ------------------------------------------------------------------
total, mean, above, whole = (client.load(r) for r in replies)
got = (client.decrypt(total, sk).tolist(), int(client.decrypt(mean, sk)), client.decrypt(above, sk).tolist(),
       client.decrypt(whole, sk).tolist())
want = ([int(readings.sum())] * len(readings), int(readings.sum()) >> 3, (8 * readings > readings.sum()).tolist(),
        (readings >> 4).tolist())
print(f"mean {got[1] / 16:.4f} degrees; above it: {got[2]}; whole degrees: {got[3]}")
assert got == want, (got, want)
print("every answer matches Python's integers")
