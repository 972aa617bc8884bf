"""Seed 003's fixed-point logistic-regression training (ringfire.apps.fixed_point_logreg) measured,
checked bit for bit against NumPy's integers, traced and projected.

    python benchmarks/fixed_point_logreg.py --preset N16_BOOT --iterations 1 --json out.json \
        --trace benchmarks/traces/seed003_fixed_point_lr_N16_BOOT.json
    python benchmarks/fixed_point_logreg.py --preset toy --iterations 3          # N = 2^12, NOT SECURE

Trains on scikit-learn's breast-cancer set (30 features + bias, padded to 32, 7 fractional
bits; all 569 samples: one ciphertext at N = 2^16), prints the seconds per iteration and
their functional bootstraps, compares the decrypted weights with ``train_plain`` (exact) and
the accuracy with float training (the same clipped sigmoid, and the true one). ``--trace``
saves a dry-run trace of one iteration (the counts of the real run) for ``ringfire project``.
N16_BOOT needs about 10 GB of memory (9.9-10.5 GB peak RSS measured).
"""

import argparse
import json
import platform
import time
import warnings

import numpy as np

import ringfire as rf
from ringfire.apps import fixed_point_logreg as fxlr
from ringfire.apps import logreg

STEP_SHIFT, RESIDUAL_SHIFT, WEIGHT_BITS = 7, 3, 10


def float_training(X, y01, iterations: int, learning_rate: float, sigmoid) -> np.ndarray:
    w = np.zeros(X.shape[1])
    for _ in range(iterations):
        w = w + learning_rate / len(X) * X.T @ (y01 - sigmoid(X @ w))
    return w


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="N16_BOOT", choices=["N16_BOOT", "toy"])
    parser.add_argument("--iterations", type=int, default=1)
    parser.add_argument("--samples", type=int, default=None, help="the first n samples only (default: all 569)")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--trace", help="save a dry-run trace of one iteration here")
    args = parser.parse_args()

    from sklearn.datasets import load_breast_cancer
    d = load_breast_cancer()
    X, y = logreg.prepare(d.data[:args.samples], d.target[:args.samples])
    Xq, Y = fxlr.quantize(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the toy ring's insecurity warning: it says so in --help
        ctx = rf.ckks.Context.preset("N16_BOOT") if args.preset == "N16_BOOT" else fxlr.toy_context()
    trainer = fxlr.FixedPointTrainer(ctx, Xq.shape[1], step_shift=STEP_SHIFT, residual_shift=RESIDUAL_SHIFT,
                                     weight_bits=WEIGHT_BITS)
    start = time.perf_counter()
    sk, keys = trainer.keygen()
    keygen_s = time.perf_counter() - start
    report = fxlr.FitReport()
    W = trainer.fit(Xq, Y, args.iterations, keys, progress=True, report=report)
    got = trainer.decrypt_weights(W, sk)
    want = fxlr.train_plain(Xq, Y, args.iterations, step_shift=STEP_SHIFT, residual_shift=RESIDUAL_SHIFT)
    rate = len(X) / 2**STEP_SHIFT
    y01 = (y > 0).astype(float)
    clipped = float_training(X, y01, args.iterations, rate, lambda z: np.clip(0.5 + z / 4, 0, 1))
    true = float_training(X, y01, args.iterations, rate, lambda z: 1 / (1 + np.exp(-z)))
    counts = report.counts
    result = {
        "preset": args.preset, "samples": len(X), "features": int(Xq.shape[1]), "iterations": args.iterations,
        "threads": rf.num_threads(), "machine": platform.processor() or platform.machine(),
        "keygen_s": keygen_s, "encrypt_s": report.encrypt_seconds, "seconds_per_iteration": report.seconds,
        "widths": vars(report.widths), "counts": {**vars(counts), "functional_bootstraps": counts.functional_bootstraps},
        "weights_match_plain": bool(np.array_equal(got, want)), "weights": got.tolist(),
        "accuracy": {"encrypted": logreg.accuracy(got / 2**fxlr.FRAC_BITS, X, y),
                     "float_clipped_sigmoid": logreg.accuracy(clipped, X, y),
                     "float_true_sigmoid": logreg.accuracy(true, X, y)},
    }
    print(f"{args.preset}: {len(X)} samples, {Xq.shape[1]} features, {rf.num_threads()} threads")
    print(f"  keygen {keygen_s:.1f} s, encrypt {report.encrypt_seconds:.1f} s")
    print("  per iteration: " + ", ".join(f"{s:.1f} s" for s in report.seconds))
    print(f"  functional bootstraps per iteration: {counts.functional_bootstraps} ({counts.compares} compares, "
          f"{counts.rescales} rescales; seed 003: 51 over 16 ciphertexts), {counts.lookups} lookups, "
          f"{counts.bootstraps} Meta-BTS")
    print(f"  widths read: {vars(report.widths)}")
    print(f"  weights equal to NumPy's fixed-point training: {result['weights_match_plain']}")
    print("  accuracy: " + ", ".join(f"{k} {v:.4f}" for k, v in result["accuracy"].items()))
    if args.trace:
        data = trainer.encrypt_data(Xq, Y, keys)
        W0 = ctx.encrypt(np.zeros(ctx.slots), keys)
        with rf.trace(dry_run=True, workload="seed 003 fixed-point LR, one iteration", preset=args.preset) as t:
            trainer.iteration(data, W0)
        t.save(args.trace)
        print(f"  trace of one iteration saved to {args.trace}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0 if result["weights_match_plain"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
