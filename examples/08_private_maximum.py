"""Tutorial 8: a server finds the largest of encrypted salaries without seeing any (FHEW/TFHE).

A client encrypts 12-bit integers bit by bit and sends the server the evaluation keys
(seeded: about 29 MB) and the ciphertexts, as bytes. The server, which never holds the
secret key, computes with gates that bootstrap every bit:

* the maximum, by a tournament of encrypted comparisons and selects;
* for every salary, whether it exceeds a public threshold;
* the payroll total, by ripple-carry additions (exact modulo 2^16 here, enough for the sum).

The client decrypts and checks every answer against Python's integers. STD128_LP keeps
every gate's failure probability below 2^-128 (docs/tfhe.md).
Run: python examples/08_private_maximum.py
"""

import time

import numpy as np

import ringfire as rf

# ---- the client ----------------------------------------------------------------------
client = rf.tfhe.Context.preset("STD128_LP")
sk = client.keygen()
salaries = np.array([3120, 2875, 4095, 1999])          # below 2^12
bits = 16                                              # room for the sum of four 12-bit values
keys_bytes = client.save_evaluation_keys()
data = client.encrypt_uint(salaries, sk, bits=bits).to_bytes()
print(f"client: {len(keys_bytes) / 1e6:.1f} MB of evaluation keys, {len(data) / 1e3:.0f} kB of ciphertexts")

# ---- the server (its own context: evaluation keys only) ---------------------------------
server = rf.tfhe.Context.preset("STD128_LP")
server.load_evaluation_keys(keys_bytes)
x = server.load(data)
start = time.perf_counter()
best = x
while len(best) > 1:                                   # a tournament: half the candidates per round
    half = len(best) // 2
    best = best[:half].max(best[half:2 * half]) if len(best) % 2 == 0 else best
above = x > 3000                                       # an encrypted boolean per salary
total = x[0]
for i in range(1, len(x)):
    total = total + x[i]
print(f"server: maximum, 4 comparisons with a threshold and a sum in {time.perf_counter() - start:.1f} s")
replies = [best.to_bytes(), above.to_bytes(), total.to_bytes()]

# ---- the client again ------------------------------------------------------------------
best, above, total = (client.load(r) for r in replies)
got = (int(client.decrypt(best, sk)[0]), client.decrypt(above, sk).tolist(), int(client.decrypt(total, sk)))
want = (int(salaries.max()), (salaries > 3000).tolist(), int(salaries.sum()))
print("maximum", got[0], "above 3000", got[1], "total", got[2])
assert got == want, (got, want)
