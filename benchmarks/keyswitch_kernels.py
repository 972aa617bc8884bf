#!/usr/bin/env python3
"""The CPU kernels of one CKKS key switch, timed one by one (BENCHMARKS.md, "CKKS key switching after
the kernel work").

    python benchmarks/keyswitch_kernels.py [--n 16] [--threads 1,2] [--reps 11] [--json out.json]

Shapes are those of set B's default key switch (N = 2^16, 21 Q primes, 5 special primes, dnum 3): a
ModUp digit converts 7 limbs to 19, ModDown converts 5 to 21, the inner product sums 3 digits over 26
limbs. Each row is the median seconds of ``reps`` calls after a warm-up, in one process.
"""
from __future__ import annotations

import argparse
import json

import ringfire as rf
from ringfire import _core

# (label, kernel, limbs, terms)
CASES = [
    ("exact conversion 7 -> 19 limbs (ModUp digit)", "convert", 19, 7),
    ("exact conversion 5 -> 21 limbs (ModDown)", "convert", 21, 5),
    ("inner product, 3 digits x 26 limbs", "inner_product", 26, 3),
    ("linear combination, 8 terms x 26 limbs", "linear_combination", 26, 8),
    ("sub, 26 limbs", "sub", 26, 1),
    ("multiply_scalar, 26 limbs", "multiply_scalar", 26, 1),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=16, help="log2 of the ring size (default 16)")
    ap.add_argument("--threads", default="1,2", help="comma list of thread counts")
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--bits", type=int, default=40, help="prime size (default 40, the CKKS middle primes)")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    rows = []
    for label, kernel, limbs, terms in CASES:
        row = {"kernel": label}
        for t in threads:
            rf.set_num_threads(t)
            row[f"ms_{t}t"] = 1e3 * _core.time_keyswitch_kernel(1 << args.n, limbs, terms, kernel, args.reps, args.bits)
        rows.append(row)
    rf.set_num_threads(max(threads))
    head = ["kernel"] + [f"{t} thread{'s' if t > 1 else ''} (ms)" for t in threads]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join([r["kernel"]] + [f"{r[f'ms_{t}t']:.2f}" for t in threads]) + " |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"n": 1 << args.n, "bits": args.bits, "reps": args.reps, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
