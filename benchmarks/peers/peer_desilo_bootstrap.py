#!/usr/bin/env python3
"""DESILO FHE's CKKS bootstrapping (PyPI ``desilofhe``, CPU build), timed like ``ringfire bench bootstrap``.

    ~/.ringfire-peers/py311/bin/python benchmarks/peers/peer_desilo_bootstrap.py [--threads 2] [--repeat 3]
        [--json]

The settings are DESILO's own: ``Engine(bootstrap=True)`` picks the ring (N = 2^16), the primes and
the level budget itself; none of them can be set. The keys are the ones its documentation
passes to ``engine.bootstrap``: a relinearization key, a conjugation key and the bootstrap key.

Data: N/2 uniform reals in [-1, 1], public-key encryption at the top level, full slots. Prints one JSON
document: keygen seconds, bootstrap seconds (median of ``--repeat`` after a warm-up), precision in bits
against NumPy (mean and minimum over the slots), the level the result lands on (the levels left to the
user), peak memory.
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="JSON only (no progress on stderr)")
    args = ap.parse_args()

    import numpy as np
    import desilofhe
    from importlib.metadata import version

    def say(text):
        if not args.json:
            print(f"[desilo bootstrap] {text}", file=sys.stderr, flush=True)

    engine = desilofhe.Engine(mode="cpu", bootstrap=True, thread_count=args.threads)
    n, slots = 2 * engine.slot_count, engine.slot_count
    say(f"N = {n}, max level {engine.max_level}")

    t = time.perf_counter()
    secret_key = engine.create_secret_key()
    public_key = engine.create_public_key(secret_key)
    relin_key = engine.create_relinearization_key(secret_key)
    conj_key = engine.create_conjugation_key(secret_key)
    boot_key = engine.create_bootstrap_key(secret_key)
    keygen_s = time.perf_counter() - t
    say(f"keygen {keygen_s:.1f} s")

    x = np.random.default_rng(0).uniform(-1, 1, slots)
    ct = engine.encrypt(x, public_key)
    runs, out = [], None
    for i in range(args.repeat + 1):
        t = time.perf_counter()
        out = engine.bootstrap(ct, relin_key, conj_key, boot_key)
        elapsed = time.perf_counter() - t
        say(f"{'warm-up' if i == 0 else f'run {i}'}: {elapsed:.2f} s")
        if i:
            runs.append(elapsed)
    got = np.asarray(engine.decrypt(out, secret_key)).real
    err = np.abs(got - x)
    doc = {
        "library": "DESILO", "version": version("desilofhe"), "preset": "its default bootstrap engine",
        "threads": args.threads, "n": n, "max_level": engine.max_level, "input_level": ct.level,
        "keygen_s": keygen_s, "bootstrap_s": statistics.median(runs), "runs_s": runs,
        "precision_mean_bits": float(-np.log2(err.mean())), "precision_min_bits": float(-np.log2(err.max())),
        "levels_left": out.level, "peak_memory_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }
    print(json.dumps(doc))


if __name__ == "__main__":
    main()
