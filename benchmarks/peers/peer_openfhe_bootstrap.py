#!/usr/bin/env python3
"""OpenFHE's CKKS bootstrapping at N = 2^16, timed like ``ringfire bench bootstrap``.

    ~/.ringfire-peers/py310/bin/python benchmarks/peers/peer_openfhe_bootstrap.py [--threads 2] [--repeat 3]
        [--log-n 16] [--json]

The settings are OpenFHE's simple bootstrapping example: uniform ternary secret, 59-bit scaling primes
and a 60-bit first prime, FLEXIBLEAUTO, level budget [4, 4], 10 user levels; the ring dimension is
forced to 2^16 with security HEStd_NotSet.
- OpenFHE would pick 2^17 for 128-bit security at this depth.
- At 2^16 and HEStd_128_classic, 59-bit scaling primes leave no user level inside the bound.
- 45- and 50-bit scaling primes (4 and 2 user levels) are accepted, but EvalBootstrap then fails in
  OpenFHE 1.6.1 ("Degree must be less than or equal to the correction factor").

Data: N/2 uniform reals in [-1, 1], public-key encryption at the top level, full slots. Prints one JSON
document: keygen seconds, bootstrap seconds (median of ``--repeat`` after a warm-up), precision in bits
against NumPy (mean and minimum over the slots), levels left, peak memory.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--levels", type=int, default=10, help="user levels left after bootstrapping")
    ap.add_argument("--log-n", type=int, default=16, help="log2 of the ring size (default 16)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="JSON only (no progress on stderr)")
    args = ap.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)

    import numpy as np
    import openfhe as fhe

    def say(text):
        if not args.json:
            print(f"[openfhe bootstrap] {text}", file=sys.stderr, flush=True)

    params = fhe.CCParamsCKKSRNS()
    secret_dist = fhe.SecretKeyDist.UNIFORM_TERNARY
    params.SetSecretKeyDist(secret_dist)
    params.SetSecurityLevel(fhe.SecurityLevel.HEStd_NotSet)
    levels = args.levels
    params.SetRingDim(1 << args.log_n)
    scale_bits = 59
    params.SetScalingModSize(scale_bits)
    params.SetFirstModSize(60)
    params.SetScalingTechnique(fhe.ScalingTechnique.FLEXIBLEAUTO)
    level_budget = [4, 4]
    depth = levels + fhe.CryptoContext.GetBootstrapDepth(level_budget, secret_dist)
    params.SetMultiplicativeDepth(depth)
    cc = fhe.GenCryptoContext(params)
    for feature in (fhe.PKESchemeFeature.PKE, fhe.PKESchemeFeature.KEYSWITCH, fhe.PKESchemeFeature.LEVELEDSHE,
                    fhe.PKESchemeFeature.ADVANCEDSHE, fhe.PKESchemeFeature.FHE):
        cc.Enable(feature)
    n = cc.GetRingDimension()
    slots = n // 2
    say(f"N = {n}, depth {depth}, {levels} user levels")

    t = time.perf_counter()
    cc.EvalBootstrapSetup(level_budget)
    setup_s = time.perf_counter() - t
    t = time.perf_counter()
    keys = cc.KeyGen()
    cc.EvalMultKeyGen(keys.secretKey)
    cc.EvalBootstrapKeyGen(keys.secretKey, slots)
    keygen_s = time.perf_counter() - t
    say(f"setup {setup_s:.1f} s, keygen {keygen_s:.1f} s")

    x = np.random.default_rng(0).uniform(-1, 1, slots)
    pt = cc.MakeCKKSPackedPlaintext(x.tolist(), 1, depth - 1)
    ct = cc.Encrypt(keys.publicKey, pt)
    runs, out = [], None
    for i in range(args.repeat + 1):
        t = time.perf_counter()
        out = cc.EvalBootstrap(ct)
        elapsed = time.perf_counter() - t
        say(f"{'warm-up' if i == 0 else f'run {i}'}: {elapsed:.2f} s")
        if i:
            runs.append(elapsed)
    result = cc.Decrypt(out, keys.secretKey)
    result.SetLength(slots)
    got = np.array(result.GetRealPackedValue())
    err = np.abs(got - x)
    doc = {
        "library": "OpenFHE", "version": getattr(fhe, "__version__", "unknown"), "preset": "example",
        "threads": args.threads, "n": n, "depth": depth, "user_levels": levels, "scale_bits": scale_bits,
        "level_budget": level_budget,
        "setup_s": setup_s, "keygen_s": keygen_s, "bootstrap_s": statistics.median(runs), "runs_s": runs,
        "precision_mean_bits": float(-np.log2(err.mean())), "precision_min_bits": float(-np.log2(err.max())),
        "levels_left": levels, "peak_memory_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }
    print(json.dumps(doc))


if __name__ == "__main__":
    main()
