"""Seed 003's fixed-point logistic-regression training on BGV slots
(ringfire.apps.bgv_fixed_point_logreg) measured and checked against NumPy's integers and float
training.

    python benchmarks/bgv_fixed_point_logreg.py --degree 15 --iterations 2 --json out.json
    python benchmarks/bgv_fixed_point_logreg.py --degree 11 --iterations 3      # NOT SECURE, seconds

Trains on scikit-learn's breast-cancer set (30 features + bias, padded to 32, 7 fractional
bits; all 569 samples: two ciphertexts of 512 rows at N = 2^15), prints the seconds per
iteration and its functional bootstraps, compares the decrypted weights with ``train_plain``
(exact roundings: the bootstraps' read errors move some by a unit) and the accuracy with
float training at the same learning rate. ``--trace`` saves a dry-run trace of one more
iteration (the real run's counts; under a trace the tables' block sums run as the backend's
linear combinations, which it counts, instead of BLAS) for ``ringfire project --seed003``.
"""

import argparse
import json
import os
import resource
import sys
import time
import warnings

import numpy as np

import ringfire as rf
from ringfire.apps import bgv_fixed_point_logreg as bgvlr
from ringfire.apps import fixed_point_logreg as fxlr
from ringfire.apps import logreg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
from _common import cpu_model  # noqa: E402


def float_training(X, y01, iterations: int, learning_rate: float, sigmoid: str) -> np.ndarray:
    w = np.zeros(X.shape[1])
    for _ in range(iterations):
        z = X @ w
        s = np.clip(0.5 + z / 4, 0, 1) if sigmoid == "clipped" else 1 / (1 + np.exp(-z))
        w = w + learning_rate / len(X) * X.T @ (y01 - s)
    return w


def trace_iteration(trainer, Xq, Y, W, path: str) -> None:
    data = trainer.encrypt_data(Xq, Y)
    start = time.perf_counter()
    with rf.trace(dry_run=True, workload="seed 003 fixed-point LR on BGV slots, one iteration",
                  N=trainer.ctx.poly_degree, samples=len(Xq)) as t:
        trainer.iteration(data, W)
    t.save(path)
    print(f"  dry-run trace of one iteration ({time.perf_counter() - start:.1f} s) saved to {path}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--degree", type=int, default=15, help="log2 N: 15 is 128-bit, smaller is NOT SECURE")
    parser.add_argument("--iterations", type=int, default=1, help="0: keys and the trace only (with --trace)")
    parser.add_argument("--samples", type=int, default=None, help="the first n samples only (default: all 569)")
    parser.add_argument("--sigmoid", default="logistic", choices=["logistic", "clipped"],
                        help="the sigmoid's table: logistic, or seed 003's clipped one")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--trace", help="save a trace of one more iteration here")
    args = parser.parse_args()

    from sklearn.datasets import load_breast_cancer
    d = load_breast_cancer()
    X, y = logreg.prepare(d.data[:args.samples], d.target[:args.samples])
    Xq, Y = fxlr.quantize(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # a small ring's insecurity warning: --help says so
        ctx = bgvlr.context(args.degree, insecure_no_security_check=args.degree < 15)
    trainer = bgvlr.BgvFixedPointTrainer(ctx, len(Xq), Xq.shape[1], sigmoid=args.sigmoid)
    start = time.perf_counter()
    sk, fsk = trainer.keygen()
    keygen_s = time.perf_counter() - start
    if args.iterations == 0:
        if not args.trace:
            parser.error("--iterations 0 traces one iteration: give --trace PATH")
        trace_iteration(trainer, Xq, Y, ctx.encrypt(np.zeros(ctx.poly_degree // 2, dtype=np.int64), trainer.keys),
                        args.trace)
        return 0
    report = bgvlr.FitReport()
    W = trainer.fit(Xq, Y, args.iterations, progress=True, report=report)
    got = trainer.decrypt_weights(W, sk)
    want = bgvlr.train_plain(Xq, Y, args.iterations, **trainer.arithmetic)
    k, s = trainer.arithmetic["gradient_shift"], trainer.arithmetic["step_shift"]
    rate = len(X) * 2.0 ** (bgvlr.FRAC_BITS - k - s)
    true = float_training(X, (y > 0).astype(float), args.iterations, rate, args.sigmoid)
    result = {
        "N": ctx.poly_degree, "t": ctx.plain_modulus, "levels": ctx.max_level, "samples": len(X),
        "features": int(Xq.shape[1]), "ciphertexts": -(-len(X) // trainer.rows), "iterations": args.iterations,
        "arithmetic": trainer.arithmetic, "learning_rate": rate, "machine": cpu_model(), "cores": os.cpu_count(),
        "threads": rf.num_threads(), "date": time.strftime("%Y-%m-%d"), "command": " ".join(sys.argv),
        "keygen_s": round(keygen_s, 2), "key_bytes": len(trainer.boot_keys.to_bytes()) + len(trainer.keys.galois.to_bytes()),
        "encrypt_s": round(report.encrypt_seconds, 2), "seconds_per_iteration": [round(v, 1) for v in report.seconds],
        "functional_bootstraps_per_iteration": report.bootstraps,
        "read_error_units": round(trainer.boot.read_error(trainer.boot_keys), 2),
        "weights": got.tolist(), "weights_plain": want.tolist(),
        "weights_equal_plain": int(np.sum(got == want)), "weights_max_difference": int(np.abs(got - want).max()),
        "accuracy": {"encrypted": logreg.accuracy(got / 2**bgvlr.FRAC_BITS, X, y),
                     "numpy_integers": logreg.accuracy(want / 2**bgvlr.FRAC_BITS, X, y),
                     "float": logreg.accuracy(true, X, y)},
    }
    print(f"BGV N=2^{args.degree}, t={ctx.plain_modulus}: {len(X)} samples, {Xq.shape[1]} features in "
          f"{result['ciphertexts']} ciphertexts, {trainer.arithmetic} (learning rate {rate:.2f}); {result['machine']}")
    print(f"  keygen {keygen_s:.1f} s ({result['key_bytes'] / 1e6:.0f} MB of keys), encrypt {report.encrypt_seconds:.1f} s")
    print("  per iteration: " + ", ".join(f"{v:.1f} s" for v in report.seconds) +
          f" ({report.bootstraps} functional bootstraps; seed 003: 51 over 16 ciphertexts of 64 slots)")
    print(f"  weights equal to NumPy's integer training: {result['weights_equal_plain']} of {len(got)}, largest "
          f"difference {result['weights_max_difference']} (read error {result['read_error_units']} units)")
    print("  accuracy: " + ", ".join(f"{key} {v:.4f}" for key, v in result["accuracy"].items()))
    if args.trace:
        trace_iteration(trainer, Xq, Y, W, args.trace)
    result["peak_rss_gib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
    print(f"  peak RSS {result['peak_rss_gib']} GiB")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
