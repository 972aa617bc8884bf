#!/usr/bin/env python3
"""Functional bootstrapping of BGV/BFV coefficients through FHEW
(ringfire.switching.BgvFunctionalBootstrap): time per value, its parts, the noise budget the
result keeps, and agreement with NumPy.

    python benchmarks/bgv_functional_bootstrap.py [--degree 13] [--counts 64] [--t 4,16,32]
        [--fhew STD128,STD128_LUT] [--last STD128_T64_WIDE] [--schemes bgv] [--level L] [--threads 1]
        [--repeat 3] [--json out.json]

For each scheme, ring degree 2^degree (the default chain, 128-bit), plaintext modulus t and
FHEW set: the client's keys (time, bytes), then per call a table f(m) = t - 1 - m on `count`
integers in [0, t / 2), landing at the top level or at `--level` (seed 003's ciphertexts keep
three primes: --degree 16 --level 2), median of `repeat`; with --last, the last bootstrap runs
on that torus set (the integers moved there from the FHEW set first, LweToTorus). Its parts,
timed alone on the same input: the switch (to FHEW, and with --last on to the torus set), the
last set's bootstraps alone (`apply` of a table of the same size), and the way back as what is
left. Results are decrypted and compared with NumPy; the noise budget is the decryptor's (the
least over the calls) beside the library's estimate, and what a product of a result with
itself leaves (None where it does not decrypt). The peers run in this repository's benchmarks
do not bootstrap BGV/BFV through FHEW (OpenFHE's scheme switching starts from CKKS:
benchmarks/switching.py).
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


def run(scheme: str, degree: int, t: int, count: int, fhew, fsk, repeat: int, level=None, last=None) -> dict:
    ctx = getattr(rf, scheme).Context(2 ** degree, plain_modulus=t)
    sk, keys = ctx.keygen()
    last_ctx, last_sk = last or (None, None)
    fbs = rf.switching.BgvFunctionalBootstrap(ctx, fhew, count=count, level=level, last=last_ctx)
    start = time.perf_counter()
    fkeys = fbs.keygen(sk, fsk) if last is None else fbs.keygen(sk, fsk, last_sk)
    keygen_s = time.perf_counter() - start
    key_bytes = len(fkeys.to_bytes())
    x = np.random.default_rng(0).integers(0, t // 2, count)
    ct = ctx.encrypt(fbs.encode(x), keys)
    bootstrapper = fhew if last is None else last_ctx
    table = bootstrapper.lut(lambda m: 0, bits=fbs.bits)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # t = 32 reads past the switch's 2^-40: counted below instead
        total_s, _ = timed(lambda: fbs.lut(ct, lambda m: t - 1 - m, fkeys), repeat)
        switch_s, lwe = timed(lambda: fbs._switched(ct, fkeys), repeat)
        pbs_s, _ = timed(lambda: bootstrapper.apply(table, lwe), repeat)
        wrong, refused, budgets = 0, 0, []
        for _ in range(repeat):
            out = fbs.lut(ct, lambda m: t - 1 - m, fkeys)
            try:
                got = fbs.decode(ctx.decrypt_coefficients(out, sk, signed=False))
            except ValueError:  # "the noise has overflowed": a value landed past a quarter of Q / t
                refused += 1
                continue
            wrong += int((got != t - 1 - x).sum())
            budgets.append(ctx.noise_budget(out, sk))
        try:  # what a product of a result with itself leaves (a negacyclic square of the coefficients)
            product_budget = round(ctx.noise_budget(out * out, sk), 2)
        except ValueError:
            product_budget = None
        p_fail = fbs.failure_probability(fkeys, ct)
    return {
        "scheme": scheme, "degree": 2 ** degree, "t": t, "fhew": fhew.params.name, "count": count,
        "last": fhew.params.name if last is None else last_ctx.params.name,
        "threads": rf.num_threads(), "level": out.level, "keygen_s": round(keygen_s, 3), "key_bytes": key_bytes,
        "lut_s": round(total_s, 4), "lut_ms_per_value": round(1e3 * total_s / count, 2),
        "switch_s": round(switch_s, 4), "fhew_bootstraps_s": round(pbs_s, 4),
        "way_back_s": round(total_s - switch_s - pbs_s, 4),
        "wrong": wrong, "calls": repeat, "undecryptable_calls": refused,
        "budget_bits_min": round(min(budgets), 2) if budgets else None,
        "budget_bits_estimate": round(out.noise_budget_estimate, 2), "product_budget_bits": product_budget,
        "failure_probability": p_fail,
        "way_back_failure_probability": fbs.back.failure_probability(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--degree", type=int, default=13)
    ap.add_argument("--counts", default="64")
    ap.add_argument("--t", default="4,16,32")
    ap.add_argument("--fhew", default="STD128,STD128_LUT")
    ap.add_argument("--last", help="a torus set for the last bootstrap (STD128_T64_WIDE)")
    ap.add_argument("--schemes", default="bgv")
    ap.add_argument("--level", type=int, help="the level results land at (default: the top)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    rf.set_num_threads(args.threads)
    rows = []
    last = None
    if args.last:
        last_ctx = rf.tfhe.Context(args.last)
        last = (last_ctx, last_ctx.keygen())
    for name in args.fhew.split(","):
        fhew = rf.tfhe.Context(name)
        fsk = fhew.keygen()
        for scheme in args.schemes.split(","):
            for t in map(int, args.t.split(",")):
                for count in map(int, args.counts.split(",")):
                    rows.append(run(scheme, args.degree, t, count, fhew, fsk, args.repeat, args.level, last))
                    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print("| scheme | N | t | FHEW (last bootstrap) | values | level | threads | table s (ms/value) | switch / bootstraps / way back s | "
          "wrong | budget bits, least (estimate; after a product) | keys MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['scheme'].upper()} | 2^{args.degree} | {r['t']} | {r['fhew']}"
              f"{'' if r['last'] == r['fhew'] else ' (' + r['last'] + ')'} | {r['count']} | {r['level']} | {r['threads']} | "
              f"{r['lut_s']:.3f} ({r['lut_ms_per_value']:.1f}) | {r['switch_s']:.3f} / {r['fhew_bootstraps_s']:.3f} / "
              f"{r['way_back_s']:.3f} | {r['wrong']} of {r['count'] * (r['calls'] - r['undecryptable_calls'])}"
              f"{f', {refused} calls refused' if (refused := r['undecryptable_calls']) else ''} | "
              f"{'-' if r['budget_bits_min'] is None else format(r['budget_bits_min'], '.1f')} "
              f"({r['budget_bits_estimate']:.1f}; {'refused' if (p := r['product_budget_bits']) is None else p}) | "
              f"{r['key_bytes'] / 2 ** 20:.1f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "bgv_functional_bootstrap", "date": time.strftime("%Y-%m-%d"), "cpu": cpu_model(),
                       "nproc": os.cpu_count(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
