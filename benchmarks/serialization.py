#!/usr/bin/env python3
"""Saving and loading: ``to_bytes`` and ``ctx.load`` of ciphertexts (seeded and public-key,
at the top level and lower, as a service's inputs and rounds travel) and of a
relinearization key, in MB/s, and the envelope checksum of format version 4 on (XXH64)
against the FNV-1a of versions 1-3 over the same bytes, in one run. The format version
written is printed: run it under two builds to compare them.

    python benchmarks/serialization.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import numpy as np

import ringfire as rf
from ringfire import _core


def best_seconds(fn, repeat: int) -> float:
    """The fastest of `repeat` calls (the least disturbed by the machine's noise)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def row(name: str, obj, ctx, repeat: int) -> dict:
    data = obj.to_bytes()
    save = best_seconds(obj.to_bytes, repeat)
    load = best_seconds(lambda: ctx.load(data), repeat)
    return {"object": name, "bytes": len(data), "save_ms": 1e3 * save, "load_ms": 1e3 * load,
            "save_mb_s": len(data) / save / 1e6, "load_mb_s": len(data) / load / 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    ctx = rf.ckks.Context.preset("N13_D2")
    sk, keys = ctx.keygen()
    x = np.random.default_rng(1).uniform(-1, 1, ctx.slots)
    rows.append(row("N13_D2 ciphertext, secret-key (seeded)", ctx.encrypt(x, sk), ctx, 200))
    rows.append(row("N13_D2 ciphertext, public-key", ctx.encrypt(x, keys), ctx, 200))
    rows.append(row("N13_D2 ciphertext, seeded, level 1", ctx.encrypt(x, sk, level=1), ctx, 200))
    rows.append(row("N13_D2 ciphertext, public-key, level 0", ctx.encrypt(x, keys, level=0), ctx, 200))
    big = rf.ckks.Context.preset("N16_D30")
    big_sk, big_keys = big.keygen()
    rows.append(row("N16_D30 relinearization key (seeded)", big_keys.relin, big, 5))
    blob = bytes(np.random.default_rng(2).integers(0, 256, 64 << 20, dtype=np.uint8))
    checksums = {name: len(blob) / best_seconds(lambda f=f: f(blob), 3) / 1e9
                 for name, f in (("xxh64 (version 4 on)", _core.checksum64), ("fnv1a64 (versions 1-3)", _core.fnv1a64))}
    print(f"{'object':42} {'bytes':>10} {'save ms':>9} {'load ms':>9} {'save MB/s':>10} {'load MB/s':>10}",
          file=sys.stderr)
    for r in rows:
        print(f"{r['object']:42} {r['bytes']:>10} {r['save_ms']:>9.3f} {r['load_ms']:>9.3f} "
              f"{r['save_mb_s']:>10.0f} {r['load_mb_s']:>10.0f}", file=sys.stderr)
    for name, gbs in checksums.items():
        print(f"checksum {name}: {gbs:.2f} GB/s", file=sys.stderr)
    version = int.from_bytes(ctx.encrypt(x, sk).to_bytes()[4:6], "little")
    print(f"format version {version}", file=sys.stderr)
    out = {"date": time.strftime("%Y-%m-%d"), "format_version": version, "rows": rows, "checksum_gb_s": checksums}
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        pathlib.Path(args.json).write_text(text)


if __name__ == "__main__":
    main()
