#!/usr/bin/env python3
"""Bits of precision (-log2 of the largest slot error against NumPy) of every
CKKS operation at N = 2^13 ... 2^16, scale 2^40. The operations' own error:
results are decrypted exactly (``insecure_exact``); what the protective
noise of the default decryption adds is in benchmarks/decryption_noise.py.

    python benchmarks/ckks_precision.py [--log-n 13,14,15,16] [--json]

Inputs are uniform in [-1, 1] (real) unless the row says complex; each
context has a 60-bit base prime, 40-bit rescaling primes and 60-bit special
primes.
"""

from __future__ import annotations

import argparse
import json
import math
import warnings

import numpy as np

import ringfire as rf

DEPTH = {13: 3, 14: 6, 15: 12, 16: 20}


def bits(got, want) -> float:
    err = float(np.max(np.abs(np.asarray(got) - np.asarray(want))))
    return math.inf if err == 0 else -math.log2(err)


def measure(log_n: int) -> dict:
    depth = DEPTH[log_n]
    special = [60] if log_n < 15 else [60, 60]
    bound = rf._core.max_log_qp(2**log_n, 128)
    ctx = rf.ckks.Context(poly_degree=2**log_n, coeff_bits=[60] + [40] * depth, scale_bits=40,
                          special_bits=special,
                          insecure_no_security_check=60 + 40 * depth + 60 * len(special) > bound)
    sk, keys = ctx.keygen(rotations=[1, -1, 7], conjugate=True)
    ev = ctx.evaluator(keys)
    rng = np.random.default_rng(log_n)
    x, y = rng.uniform(-1, 1, ctx.slots), rng.uniform(-1, 1, ctx.slots)
    z = x + 1j * rng.uniform(-1, 1, ctx.slots)
    a, b, sym, cz = ctx.encrypt(x, keys), ctx.encrypt(y, keys), ctx.encrypt(x, sk), ctx.encrypt(z, keys)
    dec = lambda c: ctx.decrypt(c, sk, insecure_exact=True)
    q_top = ctx.params.q_primes[ctx.max_level]
    rows = {
        "encode/decode": bits(ctx.encode(x).decode().real, x),
        "encrypt (public key)": bits(dec(a), x),
        "encrypt (secret key)": bits(dec(sym), x),
        "encrypt complex": bits(dec(cz), z),
        "add": bits(dec(ev.add(a, b)), x + y),
        "add_plain": bits(dec(ev.add_plain(a, ctx.encode(y))), x + y),
        "add_scalar": bits(dec(ev.add_scalar(a, 0.3)), x + 0.3),
        "multiply_integer (x7)": bits(dec(ev.multiply_integer(a, 7)), 7 * x),
        "multiply_plain + rescale": bits(dec(ev.rescale(ev.multiply_plain(a, ctx.encode(y, scale=q_top)))), x * y),
        "multiply_scalar + rescale": bits(dec(ev.rescale(ev.multiply_scalar(a, 0.3))), 0.3 * x),
        "multiply + relin + rescale": bits(dec(ev.rescale(ev.relinearize(ev.multiply(a, b)))), x * y),
        "square + relin + rescale": bits(dec(ev.rescale(ev.relinearize(ev.square(a)))), x * x),
        "complex multiply": bits(dec(cz * cz), z * z),
        "rotate(1)": bits(dec(ev.rotate(a, 1)), np.roll(x, -1)),
        "rotate(-1)": bits(dec(ev.rotate(a, -1)), np.roll(x, 1)),
        "rotate(8) composed": bits(dec(ev.rotate(a, 8)), np.roll(x, -8)),
        "conjugate": bits(dec(cz.conjugate()), np.conj(z)),
    }
    ct, ref = a, x.copy()
    for k in range(1, 4):
        ct, ref = ct * b, ref * y
        rows[f"{k} chained multiplications"] = bits(dec(ct), ref)
    # Depth-exhausting chain: multiply by a fresh ciphertext (values in
    # [0.9, 1.1]) at every level down to level 0. (Repeated squaring would
    # measure the function's own error amplification, 2x per level.)
    w = rng.uniform(0.9, 1.1, ctx.slots)
    ct, ref = ctx.encrypt(w, keys), w.copy()
    while ct.level > 0:
        v = rng.uniform(0.9, 1.1, ctx.slots)
        ct, ref = ct * ctx.encrypt(v, keys), ref * v
    rows["product of depth+1 fresh ciphertexts, down to level 0"] = bits(dec(ct), ref)
    return {"log_n": log_n, "depth": depth, "params": ctx.describe(), "bits": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log-n", default="13,14,15,16")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the opt-outs above warn on every call
        results = [measure(int(v)) for v in args.log_n.split(",")]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    ops = list(results[0]["bits"])
    header = "| operation | " + " | ".join(f"N=2^{r['log_n']}" for r in results) + " |"
    print(header)
    print("| --- |" + " --- |" * len(results))
    for op in ops:
        print(f"| {op} | " + " | ".join(f"{r['bits'].get(op, float('nan')):.1f}" for r in results) + " |")
    for r in results:
        print(f"\nN=2^{r['log_n']} (depth {r['depth']}): {r['params']}")


if __name__ == "__main__":
    main()
