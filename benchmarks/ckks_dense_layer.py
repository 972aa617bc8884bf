#!/usr/bin/env python3
"""A dense layer's outputs under batch packing: one ``linear_combination`` per output against
``linear_combinations`` over groups of eight outputs (what ``ringfire.nn`` runs), at N = 2^13
level 1 (N13_D2, a layer's input after the first rescale). Each figure is the best of five
runs of the whole layer, in milliseconds; the two ways are checked to give the same bytes.

    python benchmarks/ckks_dense_layer.py [--threads 1] [--json out.json]

The inputs of a layer with many inputs outgrow the cache (64 ciphertexts of 256 KiB are
16 MiB): one output at a time streams them from memory once per output, the grouped kernel
once per four outputs (the CPU's AVX-512 path; elsewhere the two ways are the same loop).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import numpy as np

import ringfire as rf
from ckks_client_ops import best_of_five  # a sibling script (benchmarks/ is on sys.path)

LAYERS = [(64, 32), (32, 10), (128, 64)]  # (inputs, outputs): the digits MLP's two layers, a wider one
GROUP = 8


def best_ms(fn) -> float:
    """The best of five runs after a warm-up (ckks_client_ops.best_of_five, one call a run), in ms."""
    return best_of_five(fn, 5) / 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json")
    args = ap.parse_args()
    rf.set_num_threads(args.threads)
    ctx = rf.ckks.Context.preset("N13_D2")
    sk, keys = ctx.keygen()
    ev = ctx.evaluator(keys)
    rng = np.random.default_rng(0)
    scale = ctx.scale_at(1)
    rows = []
    for inputs, outputs in LAYERS:
        # Computed ciphertexts (both polynomials stored), as a layer's inputs are.
        xs = [ev.add(c, c) for c in (ctx.encrypt(rng.uniform(-1, 1, 64), sk, level=1) for _ in range(inputs))]
        w = rng.uniform(-1, 1, (outputs, inputs))
        one = [ev.linear_combination(xs, w[j], scale) for j in range(outputs)]
        grouped = [c for g in range(0, outputs, GROUP) for c in ev.linear_combinations(xs, w[g:g + GROUP], scale)]
        if any(a.to_bytes() != b.to_bytes() for a, b in zip(one, grouped)):
            raise SystemExit(f"{inputs} -> {outputs}: the grouped outputs differ from one at a time")
        t_one = best_ms(lambda: [ev.linear_combination(xs, w[j], scale) for j in range(outputs)])
        t_grouped = best_ms(lambda: [ev.linear_combinations(xs, w[g:g + GROUP], scale)
                                          for g in range(0, outputs, GROUP)])
        rows.append({"inputs": inputs, "outputs": outputs, "one_at_a_time_ms": t_one, "grouped_ms": t_grouped,
                     "speedup": t_one / t_grouped})
    print(f"N13_D2 level 1, {args.threads} thread(s), ISA {rf.rns_isa()}, best of five (ms per layer)", file=sys.stderr)
    print("| inputs -> outputs | one output at a time | eight at a time | speed-up |", file=sys.stderr)
    print("|---|---|---|---|", file=sys.stderr)
    for r in rows:
        print(f"| {r['inputs']} -> {r['outputs']} | {r['one_at_a_time_ms']:.1f} | {r['grouped_ms']:.1f} | "
              f"{r['speedup']:.2f}× |", file=sys.stderr)
    out = {"preset": "N13_D2", "level": 1, "threads": args.threads, "isa": rf.rns_isa(),
           "date": time.strftime("%Y-%m-%d"), "rows": rows}
    print(json.dumps(out, indent=2))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
