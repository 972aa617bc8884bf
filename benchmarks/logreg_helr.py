"""Encrypted logistic-regression training (ringfire.apps.logreg, HELR) measured, traced and projected.

    python benchmarks/logreg_helr.py --preset N16_BOOT --iterations 32 --json logreg.json \
        --trace-dir benchmarks/traces
    python benchmarks/logreg_helr.py --preset N16_BOOT --shape helr --iterations 2 --trace-dir benchmarks/traces

``--shape data`` (default) trains on scikit-learn's breast-cancer set (30 features + bias, padded
to 32; 80/20 split) and compares the decrypted weights' test accuracy with plaintext training
(same algorithm and polynomial; and the true sigmoid) and with scikit-learn's solver.
``--shape helr`` times HELR's benchmark shape -- 256 features (MNIST's 196 padded), batch 1024,
8 ciphertexts at N=2^16 -- on random data (the time does not depend on the values).

With ``--trace-dir``, one iteration and one bootstrap of the (w, v) pair are traced (dry runs,
checked equal to the real calls' counts by the tests) and saved for ``ringfire project``.
N16_BOOT needs about 15 GB of memory; key generation and training go through the memory guard
(``ringfire.memory_guard``: spilled to the temporary directory, or refused with the numbers,
where the process cannot get that).
"""

import argparse
import json
import platform
import time
import warnings

import numpy as np

import ringfire as rf
from ringfire.apps import logreg


def dataset(shape: str, rows: int):
    if shape == "helr":
        rng = np.random.default_rng(0)
        X = np.hstack([rng.uniform(-1, 1, (1024, 196)) / 14, np.zeros((1024, 60))])
        y = rng.choice([-1.0, 1.0], 1024)
        return X, y, None, None
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    d = load_breast_cancer()
    X, y = logreg.prepare(d.data, d.target)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0)
    return Xtr, ytr, Xte, yte


def profile_warm_iteration(ctx, trainer, keys, X, y, data=None, cached_mask: bool = True) -> dict:
    """One iteration with its bootstrap, three times on warm keys and plaintexts: the
    wall time of the second, then the third under the kernel profiler. Kernel time far
    below the wall time means the host (encodings, Python, launches) sets the pace;
    allocator misses in a warm iteration mean device allocations (cudaMalloc) inside it.
    ``cached_mask=False`` encodes the row mask at every product, as before it was cached."""
    data = data or trainer.encrypt_data(X, y, keys)
    if not cached_mask:
        row_mask = logreg._row_mask

        def encoded_each_time(context, features, ct):
            context.__dict__.pop("_logreg_row_masks", None)
            return row_mask(context, features, ct)
        logreg._row_mask = encoded_each_time  # the gradient shares find it by name
    ev = ctx.evaluator(keys)
    low = ev.mod_switch(ctx.encrypt(np.zeros(ctx.slots), keys), ctx.bootstrap_min_level)

    def one():
        w, v = ev.bootstrap_pair(low, low)
        trainer.iteration(data, w, v, 1, len(X))
        ctx.synchronize()

    one()
    before = rf.cuda.pool_stats(ctx.device)
    start = time.perf_counter()
    one()
    wall = time.perf_counter() - start
    misses = rf.cuda.pool_stats(ctx.device)["misses"] - before["misses"]
    with rf.cuda.profile(ctx.device) as prof:
        one()
    if not cached_mask:
        logreg._row_mask = row_mask  # the cached one again
    return {"wall_s": wall, "kernel_s": prof.total, "launches": len(prof.records), "pool_misses": misses,
            "by_operation": prof.by_operation()[:8], "by_kernel": prof.by_kernel()[:8]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="N16_BOOT", choices=["N16_BOOT", "toy"],
                    help="N16_BOOT (128-bit) or toy (N=2^12, insecure, seconds)")
    ap.add_argument("--shape", choices=["data", "helr"], default="data")
    ap.add_argument("--iterations", type=int, default=32)
    ap.add_argument("--device", default="cpu", help="'cpu' (default) or 'cuda[:N]': where training runs")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--trace-dir", help="save traces of one iteration and one bootstrap here")
    ap.add_argument("--profile", action="store_true",
                    help="on a GPU: after training, where one warm iteration with its bootstrap spends its time "
                         "(kernel time against wall time, launches, allocator misses, the costliest operations)")
    args = ap.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)   # the toy preset's insecurity warning, once per object

    ctx = logreg.context(args.preset, args.device)
    Xtr, ytr, Xte, yte = dataset(args.shape, ctx.slots)
    trainer = logreg.EncryptedTrainer(ctx, Xtr.shape[1])
    start = time.perf_counter()
    sk, keys = trainer.keygen()
    keygen_s = time.perf_counter() - start
    report = logreg.FitReport()
    w_ct = trainer.fit(Xtr, ytr, args.iterations, report=report, progress=True)
    w = trainer.decrypt_weights(w_ct, sk)
    out = {"preset": args.preset, "device": ctx.device, "shape": args.shape, "iterations": args.iterations,
           "samples": len(Xtr), "features": Xtr.shape[1], "ciphertexts": -(-len(Xtr) // trainer.rows),
           "keygen_s": keygen_s, "encrypt_s": report.encrypt_seconds,
           "iteration_s": [s.seconds for s in report.iterations],
           "median_iteration_s": report.seconds_per_iteration,
           # The first bootstrap also pays the one-time precomputation of the DFT plaintexts.
           "median_warm_iteration_with_bootstrap_s": float(np.median([s.seconds for s in report.iterations
                                                                      if s.bootstraps][1:] or [0])),
           "bootstraps": report.bootstraps, "machine": platform.processor() or platform.machine(),
           "threads": rf.num_threads()}
    w_plain = logreg.train_plain(Xtr, ytr, args.iterations)
    out["max_weight_error_vs_plain"] = float(np.abs(w - w_plain).max())
    if Xte is not None:
        from sklearn.linear_model import LogisticRegression
        w_exact = logreg.train_plain(Xtr, ytr, args.iterations, sigmoid="exact")
        out["test_accuracy"] = {"encrypted": logreg.accuracy(w, Xte, yte),
                                "plain_poly": logreg.accuracy(w_plain, Xte, yte),
                                "plain_exact_sigmoid": logreg.accuracy(w_exact, Xte, yte),
                                "sklearn": float(LogisticRegression(max_iter=1000).fit(Xtr, ytr).score(Xte, yte))}
    if args.profile and ctx.device != "cpu":
        data = trainer.encrypt_data(Xtr, ytr, keys)
        out["profile"] = profile_warm_iteration(ctx, trainer, keys, Xtr, ytr, data)
        out["profile_mask_encoded_each_time"] = profile_warm_iteration(ctx, trainer, keys, Xtr, ytr, data,
                                                                       cached_mask=False)
    if args.trace_dir:
        data = trainer.encrypt_data(Xtr, ytr)
        wv = ctx.encrypt(np.zeros(ctx.slots), keys)
        name = f"{args.trace_dir}/logreg_{args.shape}_{args.preset}"
        with rf.trace(dry_run=True, workload=f"one HELR iteration, {args.shape}, {args.preset}") as t_iter:
            a, b = trainer.iteration(data, wv, wv, 0, len(Xtr))
        t_iter.save(name + "_iteration.json")
        if ctx.can_bootstrap:
            ev = ctx.evaluator(keys)
            with rf.trace(dry_run=True, workload=f"bootstrap of (w, v), {args.preset}") as t_boot:
                ev.bootstrap_pair(a, b)
            t_boot.save(name + "_bootstrap_pair.json")
        out["traces"] = name + "_*.json"
    print(json.dumps(out, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
