#!/usr/bin/env python3
"""What protecting the secret key costs at decryption: bits of precision
(-log2 of the largest slot error against NumPy) and milliseconds per decrypt,
for every decryption mode of ``ctx.decrypt``.

    python benchmarks/decryption_noise.py [--json] [--repeat R]

Modes: ``exact`` (``insecure_exact=True``: the raw m + e, which with its
ciphertext reveals the key), ``default`` (fresh noise of the ciphertext's own
size), and ``flooding s`` (``noise_flooding=s``: statistically hiding noise,
s bits). Inputs are uniform in [-1, 1]. For each parameter set, two
ciphertexts: a fresh public-key encryption at the top level, and a product of
two of them after relinearization and rescaling. "refused" means decrypt
raised because the noise would leave no precision at that scale.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings

import numpy as np

import ringfire as rf
from ringfire.bench import machine_info

SETS = {
    "N13_D2 (scale 2^40)": dict(rf.ckks.PRESETS["N13_D2"]),
    "N14_D6 (scale 2^40)": dict(rf.ckks.PRESETS["N14_D6"]),
    "N16_D30 (scale 2^40)": dict(rf.ckks.PRESETS["N16_D30"]),
    "N14, scale 2^55": dict(poly_degree=2**14, coeff_bits=[60, 55, 55], scale_bits=55, special_bits=[60]),
    "N16, scale 2^55": dict(poly_degree=2**16, coeff_bits=[60] + [55] * 8, scale_bits=55, special_bits=[60, 60]),
}
MODES = {"exact": dict(insecure_exact=True), "default": {}, "flooding 20": dict(noise_flooding=20),
         "flooding 30": dict(noise_flooding=30), "flooding 40": dict(noise_flooding=40)}


def bits(got, want) -> float:
    err = float(np.max(np.abs(np.asarray(got) - np.asarray(want))))
    return math.inf if err == 0 else -math.log2(err)


def measure(name: str, params: dict, repeat: int) -> list[dict]:
    ctx = rf.ckks.Context(**params)
    sk, keys = ctx.keygen()
    rng = np.random.default_rng(3)
    x, y = rng.uniform(-1, 1, ctx.slots), rng.uniform(-1, 1, ctx.slots)
    a, b = ctx.encrypt(x, keys), ctx.encrypt(y, keys)
    rows = []
    for label, ct, want in (("fresh", a, x), ("product", a * b, x * y)):
        row = {"set": name, "ciphertext": label, "level": ct.level, "noise_bits": round(ct.noise_bits, 1)}
        for mode, options in MODES.items():
            try:
                times = []
                for _ in range(repeat):
                    start = time.perf_counter()
                    got = ctx.decrypt(ct, sk, **options)
                    times.append(time.perf_counter() - start)
                row[mode] = round(bits(got, want), 1)
                row[mode + " ms"] = round(1e3 * float(np.median(times)), 2)
            except ValueError:
                row[mode] = None
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # insecure_exact warns on every call
        rows = [r for name, params in SETS.items() for r in measure(name, params, args.repeat)]
    if args.json:
        print(json.dumps({"machine": machine_info(), "rows": rows}, indent=2))
        return
    print("| set | ciphertext | level | " + " | ".join(MODES) + " | ms (exact / default / flooding 40) |")
    print("| --- | --- | --- |" + " --- |" * len(MODES) + " --- |")
    for r in rows:
        cells = ["refused" if r[m] is None else f"{r[m]:.1f}" for m in MODES]
        ms = " / ".join("-" if r.get(m + " ms") is None else f"{r[m + ' ms']:.1f}"
                        for m in ("exact", "default", "flooding 40"))
        print(f"| {r['set']} | {r['ciphertext']} | {r['level']} | " + " | ".join(cells) + f" | {ms} |")


if __name__ == "__main__":
    main()
