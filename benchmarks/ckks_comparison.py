#!/usr/bin/env python3
"""Comparisons on packed CKKS ciphertexts (``ev.sign``, ``ev.compare``, ``ev.max``;
ringfire.ckks.comparison): time per call and per slot, and agreement with NumPy.

    python benchmarks/ckks_comparison.py [--presets N16_D30,N16_BOOT] [--precision-bits 8]
        [--repeat 3] [--threads 1] [--argmax 16] [--json out.json]

Inputs are uniform in [-1, 1] on every slot; "right" counts slots whose inputs differ by at
least the stated resolution (|x| >= 2^-precision_bits for sign, |a - b| >= 2 * 2^-precision_bits
for compare) and whose result is within 2^-error_bits of the exact answer. On N16_D30 the whole
circuit fits the levels; on N16_BOOT it bootstraps where they run out. OpenFHE's
EvalCompareSchemeSwitching (CKKS -> FHEW -> CKKS, 16 slots) took 3.36 s per slot on this
machine (research/tfhe_anchors.md); a CKKS comparison costs the same for 16 slots as for all,
so per slot at 16 slots is the call's time / 16.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings

import numpy as np

import ringfire as rf
from ringfire.ckks.comparison import sign_plan, slot_rotations


def timed(fn, repeat: int):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def run(preset: str, precision_bits: float, error_bits: float, repeat: int, argmax: int) -> dict:
    ctx = rf.ckks.Context.preset(preset)
    t = time.perf_counter()
    sk, keys = ctx.keygen(bootstrap=ctx.can_bootstrap, rotations=slot_rotations(argmax) if argmax else ())
    keygen = time.perf_counter() - t
    ev = ctx.evaluator(keys)
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, ctx.slots), rng.uniform(-1, 1, ctx.slots)
    ca, cb = ctx.encrypt(a, keys), ctx.encrypt(b, keys)
    kw = dict(precision_bits=precision_bits, error_bits=error_bits)
    plan = sign_plan(precision_bits, error_bits)
    row = {"preset": preset, "slots": ctx.slots, "levels": ctx.max_level, "bootstraps": ctx.can_bootstrap,
           "precision_bits": precision_bits, "error_bits": error_bits, "g_steps": plan.g_steps,
           "f_steps": plan.f_steps, "depth": plan.depth, "keygen_s": round(keygen, 2), "threads": rf.num_threads()}
    tol = 2.0 ** -error_bits
    seconds, s = timed(lambda: ev.sign(ca, **kw), repeat)
    got, sure = ctx.decrypt(s, sk).real, np.abs(a) >= 2.0 ** -precision_bits
    row["sign"] = {"s": round(seconds, 3), "ms_per_slot": seconds / ctx.slots * 1e3,
                   "ms_per_slot_at_16": seconds / 16 * 1e3,
                   "right": float(np.mean(np.abs(got[sure] - np.sign(a[sure])) <= tol)),
                   "max_error": float(np.max(np.abs(got[sure] - np.sign(a[sure])))),
                   "within_unit": bool(np.max(np.abs(got)) <= 1 + 1e-4)}
    seconds, c = timed(lambda: ev.compare(ca, cb, **kw), repeat)
    got, sure = ctx.decrypt(c, sk).real, np.abs(a - b) >= 2 * 2.0 ** -precision_bits
    want = (a > b).astype(float)
    row["compare"] = {"s": round(seconds, 3), "ms_per_slot": seconds / ctx.slots * 1e3,
                      "ms_per_slot_at_16": seconds / 16 * 1e3,
                      "right": float(np.mean(np.abs(got[sure] - want[sure]) <= tol)),
                      "max_error": float(np.max(np.abs(got[sure] - want[sure])))}
    seconds, m = timed(lambda: ev.max(ca, cb, **kw), repeat)
    got = ctx.decrypt(m, sk).real
    row["max"] = {"s": round(seconds, 3), "ms_per_slot": seconds / ctx.slots * 1e3,
                  "max_error": float(np.max(np.abs(got - np.maximum(a, b)))),
                  "bound": 2.0 ** -precision_bits}
    if argmax and ctx.can_bootstrap:  # the largest of `argmax` slots and its position
        v = rng.uniform(-1, 1, argmax)
        cv = ctx.encrypt(v, keys)
        seconds, top = timed(lambda: ev.max_of_slots(cv, argmax, **kw), 1)
        top = float(ctx.decrypt(top, sk).real[0])
        t = time.perf_counter()
        hot = ctx.decrypt(ev.argmax_of_slots(cv, argmax, **kw), sk).real
        gap = float(np.diff(np.sort(v))[-1])
        row["argmax"] = {"count": argmax, "max_s": round(seconds, 2), "argmax_s": round(time.perf_counter() - t, 2),
                         "max_error": abs(top - float(v.max())), "gap_top_two": gap,
                         "one_hot_error": float(np.max(np.abs(hot - np.eye(argmax)[np.argmax(v)])))}
    row["date"] = time.strftime("%Y-%m-%d")
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", default="N16_D30,N16_BOOT")
    ap.add_argument("--precision-bits", type=float, default=8)
    ap.add_argument("--error-bits", type=float, default=12)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, help="CPU threads (default: the library's)")
    ap.add_argument("--argmax", type=int, default=16,
                    help="also the largest of this many slots and its position, where the context bootstraps (0: no)")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.threads:
        rf.set_num_threads(args.threads)
    rows = []
    for preset in args.presets.split(","):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # toy sets warn that they are insecure
            rows.append(run(preset, args.precision_bits, args.error_bits, args.repeat, args.argmax))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print("| preset | threads | slots | depth | sign s | ms/slot (all) | ms/slot at 16 | right | compare s | right | max s | max err |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        s, c, m = r["sign"], r["compare"], r["max"]
        print(f"| {r['preset']} | {r['threads']} | {r['slots']} | {r['depth']} | {s['s']:.2f} | {s['ms_per_slot']:.4f} | "
              f"{s['ms_per_slot_at_16']:.0f} | {s['right']:.4f} | {c['s']:.2f} | {c['right']:.4f} | {m['s']:.2f} | "
              f"{m['max_error']:.1e} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
