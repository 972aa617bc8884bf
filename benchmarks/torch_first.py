#!/usr/bin/env python3
"""Does importing (and using) PyTorch before ringfire slow ringfire down?

    python benchmarks/torch_first.py none     # ringfire alone
    python benchmarks/torch_first.py torch    # torch imported and run first

OpenMP runtimes keep their threads spinning after a parallel region; a library that
shares the process and also uses OpenMP can then lose its cores to them. ringfire runs
its loops on its own thread pool (cpp/src/base/parallel.cpp), not on OpenMP, so the two
lines should match. Medians of 30 calls at the N13_D2 preset, both threads.
"""
import sys
import time

if len(sys.argv) != 2 or sys.argv[1] not in ("none", "torch"):
    sys.exit(__doc__)
if sys.argv[1] == "torch":
    import torch
    x = torch.randn(512, 512)
    for _ in range(20):
        x = torch.tanh(x @ x / 512)  # wakes torch's OpenMP threads

import numpy as np  # noqa: E402

import ringfire as rf  # noqa: E402

ctx = rf.ckks.Context.preset("N13_D2")
sk, keys = ctx.keygen(rotations=[1])
v = np.random.default_rng(0).uniform(-1, 1, ctx.slots)
ct = ctx.encrypt(v, keys)


def median_ms(f, reps=30):
    f()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


print(f"{sys.argv[1]}: encrypt {median_ms(lambda: ctx.encrypt(v, keys)):.2f} ms, "
      f"multiply {median_ms(lambda: ct * ct):.2f} ms, rotate {median_ms(lambda: ct.rotate(1)):.2f} ms")
