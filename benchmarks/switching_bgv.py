#!/usr/bin/env python3
"""Scheme switching BGV/BFV -> FHEW (ringfire.switching.BgvToFhew, BgvSlotsToFhew): time per
coefficient or slot, and agreement with NumPy.

    python benchmarks/switching_bgv.py [--degree 16] [--counts 16,256,4096] [--fhew STD128]
        [--threads 1] [--repeat 3] [--slots] [--json out.json]

For BGV and BFV at ring degree 2^degree (the default chain, 128-bit) with t = 16 (coefficient
encoding; FHEW's 3-bit integers with their padding bit): the client's switching key, then per
call the switch of the first `count` coefficients (level 0, the ring switches, extraction and
FHEW's key switch) and a comparison a > b ending in FHEW (the switch of a - b, one bootstrap per
coefficient). Results are decrypted with the FHEW key and compared with NumPy. No peer switches
BGV or BFV to FHEW (OpenFHE's scheme switching starts from CKKS: benchmarks/switching.py).

With --slots: a 20-bit batching t, the first `count` slots read as 3-bit integers
(BgvSlotsToFhew): the slot map's level, time and Galois keys, then the same switch and
comparison per slot, and the max per slot (--method: the slot map's, auto by default: staged
from 1024 slots; max reads one bit wider, where STD128 misreads about 2 % and STD128_LUT holds).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

import ringfire as rf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
from _common import cpu_model  # noqa: E402
from ckks_comparison import timed  # noqa: E402  (median of `repeat` calls, with the last result)


def run(scheme: str, degree: int, count: int, fhew, fsk, repeat: int, slots: bool = False,
        method: str = "auto") -> dict:
    # Slots: a 20-bit batching prime the context chooses (65537 batches only up to N = 2^15).
    ctx = (getattr(rf, scheme).Context(2 ** degree, plain_bits=20) if slots else
           getattr(rf, scheme).Context(2 ** degree, plain_modulus=16))
    t_plain = ctx.plain_modulus
    sk, keys = ctx.keygen()
    switch = (rf.switching.BgvSlotsToFhew(ctx, fhew, count=count, bits=3, method=method) if slots else
              rf.switching.BgvToFhew(ctx, fhew))
    t = time.perf_counter()
    key = switch.keygen(sk, fsk)
    keygen_s = time.perf_counter() - t
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 8, count), rng.integers(0, 8, count)
    ca, cb = (ctx.encrypt(v if slots else ctx.encode_coefficients(v), keys) for v in (a, b))
    extra = {}
    if slots:
        low = switch.reader.working_copy(ca, key.galois.level)
        factor = switch.to_fhew.factor(low.level, low.correction)
        map_s, _ = timed(lambda: switch.slot_map(low, key.galois, factor), 1)  # the first call: diagonals encoded
        extra = {"map_method": switch.slot_map.method, "map_level": low.level, "map_first_call_s": round(map_s, 4), "galois_key_bytes": len(key.galois.to_bytes()),
                 "galois_keys": len(switch.rotations) + 1}
        switch_s, lwe = timed(lambda: switch(ca, key), repeat)
    else:
        switch_s, lwe = timed(lambda: switch(ca, key, count=count), repeat)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the bootstraps' failure-probability warning: counted below instead
        compare_s, greater = timed(lambda: (switch.compare(ca, cb, key) if slots else
                                            switch.compare(ca, cb, key, count=count)), repeat)
        if slots:  # max per slot: two switches one bit wider and a table
            max_s, larger = timed(lambda: switch.max(ca, cb, key), repeat)
            extra.update(max_s=round(max_s, 4), max_ms_per_slot=round(1e3 * max_s / count, 3),
                         wrong_max=int((fhew.decrypt(larger, fsk) != np.maximum(a, b)).sum()))
    return {
        "scheme": scheme, "degree": 2 ** degree, "t": t_plain, "layout": "slots" if slots else "coefficients",
        "fhew": fhew.params.name, "count": count,
        "threads": rf.num_threads(), "levels": ctx.max_level, "switch_keygen_s": round(keygen_s, 4),
        "ring_switch_key_bytes": (key.switch if slots else key).nbytes, **extra,
        "switch_s": round(switch_s, 4), "switch_ms_per_coefficient": round(1e3 * switch_s / count, 3),
        "compare_fhew_s": round(compare_s, 4), "compare_fhew_ms_per_coefficient": round(1e3 * compare_s / count, 3),
        "wrong_switch": int((fhew.decrypt(lwe, fsk) != a).sum()),
        "wrong_compare": int((fhew.decrypt(greater, fsk) != (a > b)).sum()),
        "lwe_error_variance_model": round(lwe.variance, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--degree", type=int, default=16)
    ap.add_argument("--counts", default="16,256,4096")
    ap.add_argument("--fhew", default="STD128")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--slots", action="store_true", help="a 20-bit batching t: read slots (BgvSlotsToFhew)")
    ap.add_argument("--method", default="auto", choices=["auto", "dense", "staged"], help="--slots: the slot map's")
    ap.add_argument("--json")
    args = ap.parse_args()
    rf.set_num_threads(args.threads)
    fhew = rf.tfhe.Context(args.fhew)
    fsk = fhew.keygen()
    rows = [run(scheme, args.degree, int(c), fhew, fsk, args.repeat, args.slots, args.method)
            for scheme in ("bgv", "bfv") for c in args.counts.split(",")]
    what = "slots" if args.slots else "coefficients"
    print(f"| scheme | N | t | FHEW | {what} | threads | switch s (ms each) | compare to FHEW s (ms each) | wrong |"
          + (" map, its level, first call s | Galois keys MB | max s (ms each), wrong |" if args.slots else ""))
    print("|---|---|---|---|---|---|---|---|---|" + ("---|---|---|" if args.slots else ""))
    for r in rows:
        print(f"| {r['scheme'].upper()} | 2^{args.degree} | {r['t']} | {r['fhew']} | {r['count']} | {r['threads']} | "
              f"{r['switch_s']:.3f} ({r['switch_ms_per_coefficient']:.2f}) | "
              f"{r['compare_fhew_s']:.3f} ({r['compare_fhew_ms_per_coefficient']:.2f}) | "
              f"{r['wrong_switch']} / {r['wrong_compare']} |"
              + (f" {r['map_method']}, {r['map_level']}, {r['map_first_call_s']:.3f} | "
                 f"{r['galois_key_bytes'] / 1e6:.1f} | {r['max_s']:.3f} ({r['max_ms_per_slot']:.2f}), "
                 f"{r['wrong_max']} |" if args.slots else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "switching_bgv", "date": time.strftime("%Y-%m-%d"), "cpu": cpu_model(),
                       "nproc": os.cpu_count(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
