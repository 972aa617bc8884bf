"""Tutorial 9: comparisons on encrypted vectors (CKKS): which readings exceed their limits,
the larger of two sensors slot by slot, and which of eight channels ran hottest.

A client encrypts two vectors of temperature readings (every slot of the ciphertext, within
±100 degrees) and sends them with its evaluation keys. The server, without the secret key:

* compares the two sensors slot by slot (1 where the first reads higher, 0 where lower);
* takes their slot-wise maximum;
* finds the largest of eight channel readings and marks its position (a one-hot vector),
  at a finer resolution, since two channels lie close together.

Each comparison is a composite polynomial (docs/comparison.md) right wherever the inputs
differ by more than the stated resolution: 2 x 100 x 2^-8 = 0.78 degrees here. The toy
bootstrapping ring keeps this quick (it is NOT secure); "N16_BOOT" is the 128-bit choice
with the same code. Run: python examples/09_encrypted_comparisons.py
"""

import time
import warnings

import numpy as np

import ringfire as rf
from ringfire.ckks.comparison import slot_rotations

warnings.simplefilter("ignore", RuntimeWarning)  # the toy ring warns that it is insecure
BOUND, CHANNELS = 100.0, 8

# ---- the client ----------------------------------------------------------------------
ctx = rf.ckks.Context.preset("N12_BOOT_INSECURE")
sk, keys = ctx.keygen(bootstrap=True, rotations=slot_rotations(CHANNELS))
rng = np.random.default_rng(9)
first = rng.uniform(-40, 95, ctx.slots)
second = first + rng.choice([-1, 1], ctx.slots) * rng.uniform(1.0, 20.0, ctx.slots)  # never closer than 1 degree
second = np.clip(second, -BOUND, BOUND)
channels = np.array([61.2, 58.9, 70.4, 66.0, 12.5, 69.1, 40.0, 55.5])
a, b, c = ctx.encrypt(first, keys), ctx.encrypt(second, keys), ctx.encrypt(channels, keys)

# ---- the server ----------------------------------------------------------------------
ev = ctx.evaluator(keys)
t = time.perf_counter()
higher = ev.compare(a, b, bound=BOUND)
larger = ev.max(a, b, bound=BOUND)
# Channels 2 and 5 differ by 1.3 degrees: the position needs a finer resolution than the
# default 8 bits give (ties within (3 + log2(8)/2) x 0.78 = 3.5 degrees are not broken there);
# 12 bits make that 0.22 degrees, for two more polynomial steps per comparison.
# return_max=True: the position and the largest value from one tournament.
where, hottest = ev.argmax_of_slots(c, CHANNELS, bound=BOUND, precision_bits=12, return_max=True)
print(f"server: compare, max, the largest channel and its position in {time.perf_counter() - t:.1f} s "
      f"over {ctx.slots} slots")

# ---- the client checks ---------------------------------------------------------------
got_higher = ctx.decrypt(higher, sk).real
got_larger = ctx.decrypt(larger, sk).real
got_hottest = ctx.decrypt(hottest, sk).real[0]
got_where = ctx.decrypt(where, sk).real
assert np.max(np.abs(got_higher - (first > second))) < 1e-3, "compare"
assert np.max(np.abs(got_larger - np.maximum(first, second))) < 1e-2, "max"
assert abs(got_hottest - channels.max()) < 1e-2, "largest channel"
assert np.argmax(got_where) == np.argmax(channels) and np.sort(got_where)[-2] < 1e-3, "its position"
print(f"client: first sensor higher in {int(np.round(got_higher).sum())} of {ctx.slots} slots; "
      f"max within {np.max(np.abs(got_larger - np.maximum(first, second))):.1e}; "
      f"hottest channel {int(np.argmax(got_where))} at {got_hottest:.2f} degrees")
