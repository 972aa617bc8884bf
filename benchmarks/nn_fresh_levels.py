#!/usr/bin/env python3
"""Client-aided results encrypted at the level they need vs at the top, same model, same run.

    python benchmarks/nn_fresh_levels.py

A small CNN (Conv 1->8, ReLU, Conv 8->8, ReLU, Gemm to 10) on 8x8 inputs, 64 images batch-packed,
on N = 2^14 with 5 levels (more than the model's 2): each ReLU's result is encrypted at the level
the next layers spend (the default) or at the top (the attribute overridden), alternately twice.
Prints the time of each encrypted run, the plan's peak and the first outputs (identical).
"""
import sys, time, numpy as np
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent / "tests"))
import ringfire as rf
from nn_models import make_model, node
r = np.random.default_rng(0)
data = make_model([node("Conv", ["x", "W1", "B1"], "c1", pads=[1, 1, 1, 1]), node("Relu", ["c1"], "r1"),
                   node("Conv", ["r1", "W2", "B2"], "c2", pads=[1, 1, 1, 1]), node("Relu", ["c2"], "r2"),
                   node("Flatten", ["r2"], "f"), node("Gemm", ["f", "W3", "B3"], "y")], (1, 8, 8),
                  {"W1": r.normal(0, .3, (8, 1, 3, 3)), "B1": np.zeros(8), "W2": r.normal(0, .1, (8, 8, 3, 3)),
                   "B2": np.zeros(8), "W3": r.normal(0, .05, (512, 10)), "B3": np.zeros(10)})
ctx = rf.ckks.Context(poly_degree=2**14, coeff_bits=[50, 30, 30, 30, 30, 30], scale_bits=30, special_bits=[50])
sk, keys = ctx.keygen()
x = r.uniform(-1, 1, (64, 1, 8, 8))
for label in ("lowered", "top", "lowered", "top"):
    model = rf.nn.load(data, ctx)
    model.plan()
    if label == "top":
        for n in model.graph.nodes:
            if "_fresh_level" in n.attrs: n.attrs["_fresh_level"] = ctx.max_level
    enc = ctx.encrypt_batch(x, keys)
    t = time.perf_counter()
    out = model(enc, client=rf.nn.LocalClient(ctx, sk, keys))
    dt = time.perf_counter() - t
    got = ctx.decrypt_batch(out, sk)
    print(label, f"{dt:.2f} s", "plan peak GiB", round(model.plan().peak_bytes / 2**30, 3), "out", got[0, :3].round(4))
