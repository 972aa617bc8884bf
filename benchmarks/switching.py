#!/usr/bin/env python3
"""Scheme switching CKKS -> FHEW (ringfire.switching): time per step and per slot, and agreement with NumPy.

    python benchmarks/switching.py [--degree 16] [--slots 16,512] [--fhew STD128] [--bits 3]
        [--way-back-degrees auto|16,15] [--threads 1] [--repeat 3] [--json out.json]

A CKKS context of ring degree 2^degree with fifteen 40-bit levels above a 60-bit q_0 (the
way back takes thirteen; 128-bit secure), the FHEW set given, rf.switching.SchemeSwitch with
3 output bits. For each slot count: the client's key generation (the ring-switching key and
the encrypted LWE secret), then per call the CKKS step of the way there (SlotsToCoefficients
at level 1), the switch (those steps, the ring switch, extraction and the
FHEW key switch), a comparison a > b of two vectors of bits-bit integers ending in FHEW (the
switch of a - b and one bootstrap per slot), the same comparison ending in CKKS slots, and a
bits-bit table with 3 output bits ending in CKKS slots (3 bootstraps per slot, one way back for
all bits), and the way back alone (`SchemeSwitch.back` of one fresh FHEW bit per slot).
``--way-back-degrees``: the ring degrees (log2) the way back runs in, each a row of its own
(`ring_degree=`; `auto`, the default, is SchemeSwitch's own choice), alternated per slot count.
FHEW results are decrypted with the FHEW key and CKKS ones with the CKKS key, and all
compared with NumPy. OpenFHE's scheme switching runs beside it in
benchmarks/peers/openfhe_scheme_switching.py.
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


def run(degree: int, slots: int, fhew_name: str, bits: int, repeat: int, way_back_degree: int | None) -> dict:
    ctx = rf.ckks.Context(2 ** degree, [60] + [40] * 15 + [60], 40)
    fhew = rf.tfhe.Context(fhew_name)
    fsk = fhew.keygen()
    switch = rf.switching.SchemeSwitch(ctx, fhew, slots=slots, out_bits=3,
                                       ring_degree=None if way_back_degree is None else 2 ** way_back_degree)
    t = time.perf_counter()
    sk, keys = ctx.keygen(rotations=switch.rotations())
    ckks_keygen = time.perf_counter() - t
    t = time.perf_counter()
    key = switch.keygen(sk, fsk, keys)
    switch_keygen = time.perf_counter() - t
    ev = ctx.evaluator(keys)
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 1 << bits, slots), rng.integers(0, 1 << bits, slots)
    ca, cb = ctx.encrypt(a.astype(float), keys), ctx.encrypt(b.astype(float), keys)
    table = (5 * np.arange(1 << bits) + 3) % 8                 # 3 output bits
    to_fhew = switch.to_fhew
    to_fhew(ev, ca, key.ring, bits=bits)  # builds the transform once, as a server would at start-up

    x = rf.ckks.magnitude.restore(ev.mod_switch(ca, 1), None)  # where and how the switch runs its transform
    transform = to_fhew._transform(x.level, bits, x.scale)
    transform_s, _ = timed(lambda: ev.linear_transform(x, transform), repeat)
    switch_s, lwe = timed(lambda: to_fhew(ev, ca, key.ring, bits=bits), repeat)
    wrong_switch = int((fhew.decrypt(lwe, fsk) != a).sum())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the bootstraps' failure-probability warning: counted below instead
        compare_s, greater = timed(lambda: to_fhew.compare(ev, ca, cb, key.ring, bits=bits), repeat)
        round_s, greater_ckks = timed(lambda: switch.compare(ev, ca, cb, key, bits=bits), repeat)
        lut_s, looked_up = timed(lambda: switch.lut(ev, ca, table, key, bits=bits), repeat)
    fresh_bits = fhew.encrypt(a % 2, fsk, bits=1)
    back_s, returned = timed(lambda: switch.back(ev, fresh_bits, key), repeat)
    back_error = np.abs(ctx.decrypt(returned, sk).real - a % 2)
    wrong_compare = int((fhew.decrypt(greater, fsk) != (a > b)).sum())
    compare_error = np.abs(ctx.decrypt(greater_ckks, sk).real - (a > b))
    lut_error = np.abs(ctx.decrypt(looked_up, sk).real - table[a])
    return {
        "ckks_degree": 2 ** degree, "way_back_degree": switch.to_ckks.work.poly_degree, "fhew": fhew_name,
        "fhew_ring": fhew.params.ring_dimension, "slots": slots,
        "bits": bits, "threads": rf.num_threads(), "ckks_levels": ctx.max_level, "way_back_levels": switch.depth,
        "keygen_s": {"ckks_with_rotations": round(ckks_keygen, 3), "switch_keys": round(switch_keygen, 4)},
        "ring_switch_key_bytes": key.ring.nbytes, "rotations": len(switch.rotations()),
        "slots_to_coefficients_s": round(transform_s, 4),
        "switch_s": round(switch_s, 4), "switch_ms_per_slot": round(1e3 * switch_s / slots, 3),
        "compare_fhew_s": round(compare_s, 4), "compare_fhew_ms_per_slot": round(1e3 * compare_s / slots, 3),
        "compare_ckks_s": round(round_s, 4), "compare_ckks_ms_per_slot": round(1e3 * round_s / slots, 3),
        "lut3_ckks_s": round(lut_s, 4), "lut3_ckks_ms_per_slot": round(1e3 * lut_s / slots, 3),
        "way_back_s": round(back_s, 4), "way_back_error_max_log2": round(float(np.log2(back_error.max())), 2),
        "compare_ckks_error_max_log2": round(float(np.log2(compare_error.max())), 2),
        "lut3_ckks_error_max_log2": round(float(np.log2(lut_error.max())), 2),
        "wrong_switch": wrong_switch, "wrong_compare_fhew": wrong_compare,
        "wrong_compare_ckks": int((compare_error >= 0.5).sum()), "wrong_lut3_ckks": int((lut_error >= 0.5).sum()),
        "lwe_error_variance_model": round(lwe.variance, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--degree", type=int, default=16)
    ap.add_argument("--slots", default="16,512")
    ap.add_argument("--fhew", default="STD128")
    ap.add_argument("--bits", type=int, default=3)
    ap.add_argument("--way-back-degrees", default="auto", help="comma-separated log2 ring degrees, or auto")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    rf.set_num_threads(args.threads)
    back_degrees = [None if d == "auto" else int(d) for d in args.way_back_degrees.split(",")]
    rows = [run(args.degree, int(s), args.fhew, args.bits, args.repeat, d)
            for s in args.slots.split(",") for d in back_degrees]
    print("| N | way back in | FHEW | slots | threads | StC s | switch s (ms/slot) | compare to FHEW s (ms/slot) | "
          "compare to CKKS s (ms/slot), max error | 3-bit table to CKKS s (ms/slot), max error | way back s | wrong |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        back_in = r["way_back_degree"].bit_length() - 1
        print(f"| 2^{args.degree} | 2^{back_in} | {r['fhew']} | {r['slots']} | {r['threads']} | "
              f"{r['slots_to_coefficients_s']:.3f} | {r['switch_s']:.3f} ({r['switch_ms_per_slot']:.2f}) | "
              f"{r['compare_fhew_s']:.3f} ({r['compare_fhew_ms_per_slot']:.2f}) | "
              f"{r['compare_ckks_s']:.3f} ({r['compare_ckks_ms_per_slot']:.2f}), 2^{r['compare_ckks_error_max_log2']} | "
              f"{r['lut3_ckks_s']:.3f} ({r['lut3_ckks_ms_per_slot']:.2f}), 2^{r['lut3_ckks_error_max_log2']} | "
              f"{r['way_back_s']:.3f}, 2^{r['way_back_error_max_log2']} | "
              f"{r['wrong_switch']} / {r['wrong_compare_fhew']} / {r['wrong_compare_ckks']} / {r['wrong_lut3_ckks']} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "switching", "date": time.strftime("%Y-%m-%d"), "cpu": cpu_model(),
                       "nproc": os.cpu_count(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
