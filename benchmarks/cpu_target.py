"""CKKS operations timed under one build, for comparing CPU targets (RINGFIRE_ARCH).

Build the package twice (e.g. RINGFIRE_ARCH=native and RINGFIRE_ARCH=x86-64-v3, into
two directories on PYTHONPATH) and alternate runs:
    for r in 1 2 3; do for d in native v3; do PYTHONPATH=$d python benchmarks/cpu_target.py; done; done
Prints one JSON object: median milliseconds of 7 calls (one warm-up), one thread.
"""
import sys, time, json, numpy as np, ringfire as rf
rf.set_num_threads(1)
out = {}
for log_n, coeff in [(14, [60]+[40]*6+[60]), (16, [60]+[40]*20+[60])]:
    ctx = rf.ckks.Context(poly_degree=2**log_n, coeff_bits=coeff, scale_bits=40)
    sk, keys = ctx.keygen(rotations=[1])
    x = np.random.default_rng(0).uniform(-1,1,ctx.slots)
    a = ctx.encrypt(x, keys); b = ctx.encrypt(x, keys)
    for name, fn in [("mul_relin_rescale", lambda: a*b), ("rotate", lambda: a.rotate(1)), ("encrypt", lambda: ctx.encrypt(x, keys)), ("add", lambda: a+b)]:
        fn(); ts=[]
        for _ in range(7):
            t=time.perf_counter(); fn(); ts.append(time.perf_counter()-t)
        out[f"N2^{log_n} {name}"] = 1000*float(np.median(ts))
print(json.dumps(out))
