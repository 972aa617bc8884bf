#!/usr/bin/env python3
"""The CPU kernels of one CKKS key switch, timed one by one (BENCHMARKS.md, "CKKS key switching after
the kernel work").

    python benchmarks/keyswitch_kernels.py [--n 16] [--threads 1,2] [--reps 11] [--isa avx2,avx512] [--json out.json]

Shapes are those of set B's default key switch (N = 2^16, 21 Q primes, 5 special primes, dnum 3): a
ModUp digit converts 7 limbs to 19, ModDown converts 5 to 21, the inner product sums 3 digits over 26
limbs; the NTTs and the product run over 26 limbs. Each row is the median seconds of ``reps`` calls
after a warm-up, in one process. ``--isa``: the RNS kernels' instruction sets to time side by side
(``rf.set_rns_isa``, each case under each in turn; default: the one in use).
"""
from __future__ import annotations

import argparse
import json

import os
import sys

import ringfire as rf
from ringfire import _core

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
from _common import cpu_model  # noqa: E402

# (label, kernel, limbs, terms)
CASES = [
    ("exact conversion 7 -> 19 limbs (ModUp digit)", "convert", 19, 7),
    ("exact conversion 5 -> 21 limbs (ModDown)", "convert", 21, 5),
    ("inner product, 3 digits x 26 limbs", "inner_product", 26, 3),
    ("linear combination, 8 terms x 26 limbs", "linear_combination", 26, 8),
    ("sub, 26 limbs", "sub", 26, 1),
    ("multiply_scalar, 26 limbs", "multiply_scalar", 26, 1),
    ("multiply, 26 limbs", "multiply", 26, 1),
    ("forward NTT, 26 limbs", "ntt_forward", 26, 1),
    ("inverse NTT, 26 limbs", "ntt_inverse", 26, 1),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=16, help="log2 of the ring size (default 16)")
    ap.add_argument("--threads", default="1,2", help="comma list of thread counts")
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--bits", type=int, default=40, help="prime size (default 40, the CKKS middle primes)")
    ap.add_argument("--isa", help="comma list of RNS instruction sets to compare (avx2, avx512)")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    isas = args.isa.split(",") if args.isa else [rf.rns_isa()]
    rows = []
    for label, kernel, limbs, terms in CASES:
        row = {"kernel": label}
        for t in threads:
            rf.set_num_threads(t)
            for isa in isas:
                rf.set_rns_isa(isa)
                row[f"ms_{t}t_{isa}"] = 1e3 * _core.time_keyswitch_kernel(1 << args.n, limbs, terms, kernel, args.reps,
                                                                          args.bits)
        rows.append(row)
    rf.set_num_threads(max(threads))
    columns = [(t, isa) for t in threads for isa in isas]
    head = ["kernel"] + [f"{t} thread{'s' if t > 1 else ''}, {isa} (ms)" for t, isa in columns]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join([r["kernel"]] + [f"{r[f'ms_{t}t_{isa}']:.2f}" for t, isa in columns]) + " |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"n": 1 << args.n, "bits": args.bits, "reps": args.reps, "isas": isas, "cpu": cpu_model(),
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
