#!/usr/bin/env python3
"""Scheme switching CKKS -> FHEW (ringfire.switching): time per step and per slot, and agreement with NumPy.

    python benchmarks/switching.py [--degree 16] [--slots 16,512] [--fhew STD128] [--bits 3]
        [--threads 1] [--repeat 3] [--json out.json]

A CKKS context of ring degree 2^degree with thirteen 40-bit levels above a 60-bit q_0 (the
way back takes twelve; 128-bit secure), the FHEW set given. For each slot count: the client's
key generation (the ring-switching key and the encrypted LWE secret), then per call the CKKS
steps (replication, SlotsToCoefficients), the switch proper (ring switch, extraction, FHEW key
switch), a comparison a > b of two vectors of bits-bit integers (the switch of a - b and one
FHEW bootstrap per slot), and the way back into CKKS slots (homomorphic LWE decryption and
the reduction mod 1). The FHEW results are decrypted with the FHEW key and the CKKS ones with
the CKKS key, and both compared with NumPy. OpenFHE's scheme switching runs beside it in
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


def run(degree: int, slots: int, fhew_name: str, bits: int, repeat: int) -> dict:
    ctx = rf.ckks.Context(2 ** degree, [60] + [40] * 13 + [60], 40)
    fhew = rf.tfhe.Context(fhew_name)
    fsk = fhew.keygen()
    switch = rf.switching.CkksToFhew(ctx, fhew, slots=slots)
    back = rf.switching.FhewToCkks(fhew, ctx, slots=slots)
    t = time.perf_counter()
    sk, keys = ctx.keygen(rotations=sorted(set(switch.rotations()) | set(back.rotations())))
    ckks_keygen = time.perf_counter() - t
    t = time.perf_counter()
    key = switch.keygen(sk, fsk)
    switch_keygen = time.perf_counter() - t
    t = time.perf_counter()
    back_key = back.keygen(fsk, keys)
    back_keygen = time.perf_counter() - t
    ev = ctx.evaluator(keys)
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 1 << bits, slots), rng.integers(0, 1 << bits, slots)
    ca, cb = ctx.encrypt(a.astype(float), keys), ctx.encrypt(b.astype(float), keys)
    switch(ev, ca, key, bits=bits)  # builds the transform once, as a server would at start-up

    low = ev.mod_switch(ca, 1)  # where the switch runs its CKKS steps
    replicate_s, x = timed(lambda: switch._replicate(ev, low), repeat)
    transform = switch._transform(x.level, bits, x.scale)
    transform_s, _ = timed(lambda: ev.linear_transform(x, transform), repeat)
    switch_s, lwe = timed(lambda: switch(ev, ca, key, bits=bits), repeat)
    wrong_switch = int((fhew.decrypt(lwe, fsk) != a).sum())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the lookup's failure-probability warning: counted below instead
        compare_s, greater = timed(lambda: switch.compare(ev, ca, cb, key, bits=bits), repeat)
    wrong_compare = int((fhew.decrypt(greater, fsk) != (a > b)).sum())
    back_s, bits_back = timed(lambda: back(ev, greater, back_key), repeat)
    error = np.abs(ctx.decrypt(bits_back, sk).real - (a > b))
    return {
        "ckks_degree": 2 ** degree, "fhew": fhew_name, "fhew_ring": fhew.params.ring_dimension, "slots": slots,
        "bits": bits, "threads": rf.num_threads(),
        "keygen_s": {"ckks_with_rotations": round(ckks_keygen, 3), "ring_switch_key": round(switch_keygen, 4),
                     "lwe_secret_encryption": round(back_keygen, 4)},
        "ring_switch_key_bytes": key.nbytes, "rotations": len(switch.rotations()),
        "replicate_s": round(replicate_s, 4), "slots_to_coefficients_s": round(transform_s, 4),
        "switch_s": round(switch_s, 4), "switch_ms_per_slot": round(1e3 * switch_s / slots, 3),
        "compare_s": round(compare_s, 4), "compare_ms_per_slot": round(1e3 * compare_s / slots, 3),
        "back_s": round(back_s, 4), "round_trip_s": round(compare_s + back_s, 4),
        "round_trip_ms_per_slot": round(1e3 * (compare_s + back_s) / slots, 3),
        "back_error_max": float(error.max()), "back_error_max_log2": round(float(np.log2(error.max())), 2),
        "back_levels": back.depth,
        "wrong_switch": wrong_switch, "wrong_compare": wrong_compare,
        "lwe_error_variance_model": round(lwe.variance, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--degree", type=int, default=16)
    ap.add_argument("--slots", default="16,512")
    ap.add_argument("--fhew", default="STD128")
    ap.add_argument("--bits", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    rf.set_num_threads(args.threads)
    rows = [run(args.degree, int(s), args.fhew, args.bits, args.repeat) for s in args.slots.split(",")]
    print("| N | FHEW | slots | threads | replicate s | StC s | switch s (ms/slot) | compare in FHEW s (ms/slot) | "
          "back s | round trip s (ms/slot) | back max error | wrong |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| 2^{args.degree} | {r['fhew']} | {r['slots']} | {r['threads']} | {r['replicate_s']:.3f} | "
              f"{r['slots_to_coefficients_s']:.3f} | {r['switch_s']:.3f} ({r['switch_ms_per_slot']:.2f}) | "
              f"{r['compare_s']:.3f} ({r['compare_ms_per_slot']:.2f}) | {r['back_s']:.3f} | "
              f"{r['round_trip_s']:.3f} ({r['round_trip_ms_per_slot']:.2f}) | 2^{r['back_error_max_log2']} | "
              f"{r['wrong_switch']} / {r['wrong_compare']} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "switching", "date": time.strftime("%Y-%m-%d"), "cpu": cpu_model(),
                       "nproc": os.cpu_count(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
