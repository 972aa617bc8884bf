#!/usr/bin/env python3
"""The torus engine's key-switch error against its noise model, over fresh keys.

    python benchmarks/tfhe_key_switch_noise.py [--sets STD128_T64,STD128_T64_LP] [--keys 4]
                                               [--samples 20000] [--json out.json]

For each set and each of ``--keys`` fresh key pairs: ``--samples`` encryptions of zero
under the big key, key-switched to the small key (a bootstrap's first step), and the
variance of their phases at q = 2N against ``TorusParameterSet.switch_terms()``' key-switch
terms (rounding, key errors, the table's 24-bit words). A ratio near 1 says the model holds;
the sampling error of a variance from 20,000 samples is about 1 %, and each key's own errors
move it by about as much again. The table prints every key's ratio and the spread.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import warnings

import numpy as np

KEY_SWITCH_TERMS = ("key_switch_rounding", "key_switch_keys", "key_switch_words")


def measure_key(ctx, samples: int) -> float:
    """The measured variance of one fresh key pair's key-switch error at q."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk = ctx.keygen()
    params = ctx.params
    zeros = sk._native.encrypt(np.zeros(samples, dtype=np.uint64), ctx._prng)
    switched, _ = ctx._bootstrapper.switch_input(zeros)
    phases = sk._native.small_phases(switched)[0].astype(np.int64).astype(np.float64)
    return float(np.var(phases * (params.lwe_modulus / 2.0 ** 64)))


def run_set(name: str, keys: int, samples: int) -> dict:
    import ringfire as rf
    ctx = rf.tfhe.Context(name)
    terms = ctx.params.switch_terms()
    model = sum(terms[t] for t in KEY_SWITCH_TERMS)
    ratios = []
    for k in range(keys):
        ratios.append(measure_key(ctx, samples) / model)
        print(f"  {name} key {k + 1}/{keys}: measured / model {ratios[-1]:.3f}", file=sys.stderr, flush=True)
    return {"set": name, "model": model, "terms": {t: terms[t] for t in KEY_SWITCH_TERMS}, "samples": samples,
            "ratios": ratios, "mean": statistics.fmean(ratios), "min": min(ratios), "max": max(ratios)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="STD128_T64,STD128_T64_LP")
    parser.add_argument("--keys", type=int, default=4)
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args()
    if args.keys < 1 or args.samples < 100:
        parser.error("--keys must be at least 1 and --samples at least 100")
    rows = [run_set(name, args.keys, args.samples) for name in args.sets.split(",")]
    print(f"{'set':<16} {'model at q':>10} {'keys':>5} {'measured / model: mean':>23} {'min':>6} {'max':>6}")
    for r in rows:
        print(f"{r['set']:<16} {r['model']:>10.3f} {len(r['ratios']):>5} {r['mean']:>23.3f} {r['min']:>6.3f} "
              f"{r['max']:>6.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "tfhe_key_switch_noise", "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
