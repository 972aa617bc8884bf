#!/usr/bin/env python3
"""The torus engine's noise model against measured errors, over fresh keys.

    python benchmarks/tfhe_noise_model.py [--sets STD128_T64,STD128_T64_LP] [--keys 4]
                                          [--samples 20000] [--fft-bootstraps 1000] [--json out.json]

* The key switch: for each set and each of ``--keys`` fresh key pairs, ``--samples``
  encryptions of zero under the big key, key-switched to the small key (a bootstrap's first
  step), and the variance of their phases at q = 2N against ``TorusParameterSet.switch_terms()``'
  key-switch terms (rounding, key errors, the table's 24-bit words).
* The FFT's rounding (``--fft-bootstraps``, 0 to skip): bootstraps of zero on each set's ring
  with a gadget of two levels and TUniform(2^3) key errors, where the transform's rounding is
  the only term of the output error, against ``bootstrap_terms()["fft"]``.

A ratio near 1 says the model holds; the sampling error of a variance from 20,000 samples is
about 1 % (from 1000, about 4.5 %), and each key's own errors move it by about as much again.
"""

from __future__ import annotations

import argparse
import dataclasses
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


def fft_set(name: str, keys: int, bootstraps: int) -> dict:
    """The FFT's rounding alone on `name`'s ring: two gadget levels of the set's base, at most
    2^23 (the two levels' 46 bits leave 18 to round away, a negligible term), keys with
    TUniform(2^3) errors."""
    import ringfire as rf
    base = rf.tfhe.TORUS_PRESETS[name]
    params = dataclasses.replace(base, name=f"{name}_FFT_ALONE", pbs_base_log=min(base.pbs_base_log, 23),
                                 pbs_levels=2, glwe_noise_log2=3)
    model = params.bootstrap_terms()["fft"]
    ratios = []
    for k in range(keys):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ctx = rf.tfhe.Context(params, insecure=True)
            sk = ctx.keygen()
        y = ctx.lut(lambda m: m, bits=2)(ctx.encrypt(np.zeros(bootstraps, dtype=np.int64), sk, bits=2))
        errors = sk._native.phases(y.data)[0].astype(np.int64).astype(np.float64) * (params.lwe_modulus / 2.0 ** 64)
        ratios.append(float(np.var(errors)) / params.bootstrap_variance())
        print(f"  {name} FFT alone, key {k + 1}/{keys}: measured / model {ratios[-1]:.3f}", file=sys.stderr, flush=True)
    return {"set": name, "ring": params.ring_dimension, "gadget": f"2^{params.pbs_base_log} x 2", "model_fft": model,
            "bootstraps": bootstraps, "ratios": ratios, "mean": statistics.fmean(ratios), "min": min(ratios),
            "max": max(ratios)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="STD128_T64,STD128_T64_LP")
    parser.add_argument("--keys", type=int, default=4)
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--fft-bootstraps", type=int, default=1000, help="0: skip the FFT's part")
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args()
    if args.keys < 1 or args.samples < 100:
        parser.error("--keys must be at least 1 and --samples at least 100")
    rows = [run_set(name, args.keys, args.samples) for name in args.sets.split(",")]
    print(f"{'set':<16} {'model at q':>10} {'keys':>5} {'measured / model: mean':>23} {'min':>6} {'max':>6}")
    for r in rows:
        print(f"{r['set']:<16} {r['model']:>10.3f} {len(r['ratios']):>5} {r['mean']:>23.3f} {r['min']:>6.3f} "
              f"{r['max']:>6.3f}")
    fft = [fft_set(name, args.keys, args.fft_bootstraps) for name in args.sets.split(",")] if args.fft_bootstraps else []
    if fft:
        print(f"\n{'the FFT alone':<16} {'ring':>6} {'gadget':>9} {'keys':>5} {'measured / model: mean':>23} "
              f"{'min':>6} {'max':>6}")
        for r in fft:
            print(f"{r['set']:<16} {r['ring']:>6} {r['gadget']:>9} {len(r['ratios']):>5} {r['mean']:>23.3f} "
                  f"{r['min']:>6.3f} {r['max']:>6.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "tfhe_noise_model", "key_switch": rows, "fft": fft}, f, indent=1)


if __name__ == "__main__":
    main()
