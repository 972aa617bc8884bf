#!/usr/bin/env python3
"""What a CKKS key holder does per ciphertext: encode, encrypt with the secret key, decrypt
(noise flooding on, as released), at each level of a preset, one thread; and what a server
does with each ciphertext such a client sends: load it (its second polynomial expanded from
its seed).

A client-aided model's rounds are made of these (a round of the digits CNN: 256 decryptions
and 64 encryptions at N = 2^13, levels 0 and 1). Each figure is the best of five batches of
``--calls / 5`` calls, in microseconds; every decryption is checked against the input.

    python benchmarks/ckks_client_ops.py [--preset N13_D2] [--calls 2000] [--json out.json]

To compare two builds, run it under each (``PYTHONPATH=<package dir>``), alternating.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import numpy as np

import ringfire as rf


def best_of_five(fn, calls: int) -> float:
    fn()
    per_batch = max(1, calls // 5)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(per_batch):
            fn()
        best = min(best, (time.perf_counter() - start) / per_batch)
    return best * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="N13_D2")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--json")
    args = ap.parse_args()
    rf.set_num_threads(1)
    ctx = rf.ckks.Context.preset(args.preset)
    sk, keys = ctx.keygen()
    x = np.random.default_rng(0).uniform(-1, 1, ctx.slots)
    rows = []
    for level in range(ctx.max_level + 1):
        ct = ctx.encrypt(x, keys.public, level=level)
        error = float(np.max(np.abs(ctx.decrypt(ct, sk) - x)))
        if error > 1e-3:
            raise SystemExit(f"level {level}: decryption error {error:.2e}")
        values = x.astype(np.complex128)
        seeded = ctx.encrypt(x, sk, level=level).to_bytes()
        rows.append({
            "level": level,
            "encode_us": best_of_five(lambda: ctx._core.encode(values, level, ctx.scale_at(level)), args.calls),
            "encrypt_secret_key_us": best_of_five(lambda: ctx.encrypt(x, sk, level=level), args.calls),
            "decrypt_us": best_of_five(lambda: ctx.decrypt(ct, sk), args.calls),
            "load_seeded_us": best_of_five(lambda: ctx.load(seeded), args.calls),
            "max_abs_error": error,
        })
    print(f"{args.preset}, one thread, best of five batches (µs per call)", file=sys.stderr)
    print("| level | encode | encrypt (secret key) | decrypt (flooding) | load (seeded) | error |", file=sys.stderr)
    print("|---|---|---|---|---|---|", file=sys.stderr)
    for r in rows:
        print(f"| {r['level']} | {r['encode_us']:.0f} | {r['encrypt_secret_key_us']:.0f} | {r['decrypt_us']:.0f} | "
              f"{r['load_seeded_us']:.0f} | {r['max_abs_error']:.1e} |", file=sys.stderr)
    out = {"preset": args.preset, "date": time.strftime("%Y-%m-%d"), "ringfire": str(pathlib.Path(rf.__file__).parent),
           "rows": rows}
    print(json.dumps(out, indent=2))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
