#!/usr/bin/env python3
"""Where a bootstrap's error comes from: the toy ring (N = 2^12, the N16_BOOT circuit) with
one part of the modulus chain changed at a time.

    python benchmarks/bootstrap_error_sources.py [--json out.json]

The baseline is N12_BOOT_INSECURE: q_0 of 60 bits, 3 user primes of 40, SlotsToCoeffs on 3
primes of 45, EvalMod on 11 of 60, CoeffsToSlots on 3 of 56, 3 special primes of 60. Each row narrows or widens the
primes of one phase (or changes the message ratio) and reports the bootstrap's own error:
the mean and the worst slot, in bits, against the input's exact decryption, averaged over
three secret-key encryptions of uniform data in [-1, 1]. A phase whose primes matter is
where the error is made. Insecure by construction (a toy ring); about a minute.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings

import numpy as np

import ringfire as rf

SEED = bytes(range(32))
BASE = dict(q0=60, stc=45, eval_mod=60, cts=56, ratio=7, special=60)
VARIANTS = [
    ("baseline", {}),
    ("CoeffsToSlots primes 56 -> 60 bits", {"cts": 60}),
    ("CoeffsToSlots primes 56 -> 50 bits", {"cts": 50}),
    ("SlotsToCoeffs primes 45 -> 55 bits", {"stc": 55}),
    ("SlotsToCoeffs primes 45 -> 40 bits", {"stc": 40}),
    ("EvalMod primes 60 -> 55 bits", {"eval_mod": 55}),
    # A key-switching digit of three 61-bit primes needs special primes that cover it.
    ("special primes 60 -> 61 bits", {"special": 61}),
    ("EvalMod and special primes 60 -> 61 bits", {"eval_mod": 61, "special": 61}),
    ("message ratio 2^7 -> 2^6", {"ratio": 6}),
    ("message ratio 2^7 -> 2^8", {"ratio": 8}),
]


def own_error_bits(q0, stc, eval_mod, cts, ratio, special, samples=3):
    options = dict(rf.ckks.PRESETS["N12_BOOT_INSECURE"])
    options["coeff_bits"] = [q0] + [40] * 3 + [stc] * 3 + [eval_mod] * 11 + [cts] * 3
    options["special_bits"] = [special] * len(options["special_bits"])
    options["bootstrap"] = {**options["bootstrap"], "log_message_ratio": ratio}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the toy ring says it is insecure
        ctx = rf.ckks.Context(**options, insecure_deterministic_seed=SEED)
        sk, _ = ctx.keygen(bootstrap=True)
        bits = []
        for seed in range(samples):
            ct = ctx.encrypt(np.random.default_rng(seed).uniform(-1, 1, ctx.slots), sk)
            before = ctx.decrypt(ct, sk, insecure_exact=True)
            err = np.abs(ctx.decrypt(ct.bootstrap(), sk, insecure_exact=True) - before)
            bits.append((-np.log2(err.mean()), -np.log2(err.max())))
    return np.mean(bits, axis=0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args()
    rows = []
    print("| change | own error, mean bits | worst slot, bits |")
    print("|---|---|---|")
    for label, change in VARIANTS:
        mean, worst = own_error_bits(**{**BASE, **change})
        rows.append({"change": label, "mean_bits": float(mean), "min_bits": float(worst)})
        print(f"| {label} | {mean:.2f} | {worst:.2f} |", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
