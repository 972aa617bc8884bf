"""One-bit against multi-bit blind rotation on the torus engine, interleaved.

``STD128_T64`` (one key per bit of s, 918 steps) against ``STD128_T64_MB`` (groups of
two bits, 459 steps of three keys) and the same keys with groups of three (seven keys
per step; made with ``dataclasses.replace``, so it carries no security claim of its own
and runs with ``insecure=True``). Each round times a batch of 64 4-bit table lookups
per set on one thread and on all threads, the sets in turn, so that this host's drift
(a third within minutes) falls on all of them alike; the table reports each set's best
and median over the rounds and its ratio to ``STD128_T64``, and checks every output.

    python benchmarks/tfhe_multibit.py [--rounds 10] [--json out.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import statistics
import sys
import time
import warnings

import numpy as np

import ringfire as rf


def contexts() -> dict[str, tuple]:
    sets = {"STD128_T64": rf.tfhe.PRESETS["STD128_T64"], "STD128_T64_MB": rf.tfhe.PRESETS["STD128_T64_MB"],
            "groups of 3": dataclasses.replace(rf.tfhe.PRESETS["STD128_T64"], name="STD128_T64_MB3", grouping=3)}
    out = {}
    for label, params in sets.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the hand-made set's insecure=True warning
            ctx = rf.tfhe.Context(params, insecure=params.name not in rf.tfhe.PRESETS)
        t0 = time.perf_counter()
        sk = ctx.keygen()
        keygen = time.perf_counter() - t0
        values = np.random.default_rng(1).integers(0, 16, 64)
        x = ctx.encrypt(values, sk, bits=4)
        table = ctx.lut(lambda m: (5 * m + 3) % 16, bits=4)
        out[label] = (ctx, sk, table, x, (5 * values + 3) % 16, keygen)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--json", type=pathlib.Path, default=None)
    args = ap.parse_args()
    sets = contexts()
    times = {(label, threads): [] for label in sets for threads in (1, 0)}
    exact = {label: True for label in sets}
    for _ in range(args.rounds):
        for threads in (1, 0):
            for label, (ctx, sk, table, x, want, _) in sets.items():
                ctx.threads = threads
                t0 = time.perf_counter()
                y = table(x)
                times[(label, threads)].append((time.perf_counter() - t0) / x.size * 1e3)
                exact[label] &= bool((ctx.decrypt(y, sk) == want).all())
    rows = []
    for (label, threads), ms in times.items():
        base = times[("STD128_T64", threads)]
        ctx = sets[label][0]
        rows.append({"set": label, "threads": threads or rf._core.num_threads(), "best_ms": min(ms),
                     "median_ms": statistics.median(ms), "best_ratio": min(ms) / min(base),
                     "median_ratio": statistics.median(ms) / statistics.median(base),
                     "bootstrap_key_mb": ctx.evaluation_key_bytes["bootstrap"] / 1e6, "keygen_s": sets[label][5],
                     "exact": exact[label], "p_fail_lut4_log2": ctx.failure_probability("lut", bits=4, log2=True)})
    print("| set | threads | ms per lookup, best / median | ratio to STD128_T64, best / median | bootstrap key in "
          "memory (MB) | key generation (s) | log2 p_fail, 4 bits | all exact |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['set']} | {r['threads']} | {r['best_ms']:.2f} / {r['median_ms']:.2f} | "
              f"{r['best_ratio']:.2f} / {r['median_ratio']:.2f} | {r['bootstrap_key_mb']:.0f} | {r['keygen_s']:.2f} | "
              f"{r['p_fail_lut4_log2']:.1f} | {r['exact']} |")
    if args.json:
        args.json.write_text(json.dumps({"rounds": args.rounds, "batch": 64, "results": rows}, indent=1))
        print(f"wrote {args.json}")
    return 0 if all(exact.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
