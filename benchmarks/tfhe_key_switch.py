#!/usr/bin/env python3
"""The torus engine's key switch alone, one ciphertext at a time (a lone lookup's first step,
which reads the whole table), and in batches of 32 (which read it once for all).

    python benchmarks/tfhe_key_switch.py [--sets STD128_T64,STD128_T64_LP] [--calls 200] [--json out.json]

One thread. Each set makes its keys, then times ``key_switch`` (the binding of
``TorusKeySwitchKey::apply_many``) on fresh encryptions: the median and best of ``--calls``
calls of one ciphertext, and of a tenth as many batches of 32 (per ciphertext). The table's
bytes in memory are printed beside. To compare two builds, run it under each (``PYTHONPATH``)
in turn; ``RINGFIRE_TFHE_ISA=avx2`` times the eight-lane products on an AVX-512 CPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings

import numpy as np


def time_set(name: str, calls: int) -> dict:
    import ringfire as rf
    rf.set_num_threads(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = rf.tfhe.Context(name)
        sk = ctx.keygen()
    engine = ctx._require_keys()
    big = sk._native.encrypt(np.zeros(32, dtype=np.uint64), ctx._prng)  # under the big key: N + 1 words each
    rows = {}
    for label, cts, repeat in (("one", big[:1], calls), ("batch of 32", big, max(1, calls // 10))):
        engine.key_switch(cts)  # warm: the table in the caches it fits
        seconds = []
        for _ in range(repeat):
            start = time.perf_counter()
            engine.key_switch(cts)
            seconds.append((time.perf_counter() - start) / len(cts))
        rows[label] = {"median_us": statistics.median(seconds) * 1e6, "best_us": min(seconds) * 1e6}
    return {"set": name, "isa": engine.isa, "table_bytes": engine.key_switch_key_bytes, **rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="STD128_T64,STD128_T64_LP")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--json")
    args = ap.parse_args()
    out = [time_set(name, args.calls) for name in args.sets.split(",")]
    print("| set | kernels | table | one ciphertext: median / best µs | in a batch of 32: median / best µs per ciphertext |")
    print("|---|---|---|---|---|")
    for r in out:
        print(f"| {r['set']} | {r['isa']} | {r['table_bytes'] / 1e6:.1f} MB | {r['one']['median_us']:.0f} / "
              f"{r['one']['best_us']:.0f} | {r['batch of 32']['median_us']:.1f} / {r['batch of 32']['best_us']:.1f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
