"""FHEW gates in batches that share the key: one blind rotation at a time against several.

A GINX blind rotation reads 96 KiB of key per step at ``STD128`` (53 MB per bootstrap),
more than the caches keep, so one rotation at a time streams it from memory. With
``batch`` ciphertexts per thread stepping together, each block of a step's key serves all
of them while it sits in the nearest caches (``Bootstrapper::bootstrap_many``). This
times NAND gates through the native bootstrap with batches of 1 (the engine before), 4, 8
(the default) and 16, on one thread and on all threads, the batch sizes in turn within each
round (starting from another one each round) so that this host's drift falls on all of them
alike; every output is decrypted and checked against NumPy, and the batches' words are
compared (they must be the same bits).

    python benchmarks/tfhe_rotation_batch.py [--presets STD128,STD128_LP] [--rounds 6] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import platform
import statistics
import sys
import time

import numpy as np

import ringfire as rf
from ringfire import _core

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "peers"))
from _common import cpu_model  # noqa: E402

BATCHES = (1, 4, 8, 16)


def gate_inputs(ctx, sk, count: int):
    """NAND's bootstrap input (its linear combination of two encrypted bit vectors), its test
    vector and the expected bits."""
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 2, count), rng.integers(0, 2, count)
    x, y = ctx.encrypt(a, sk), ctx.encrypt(b, sk)
    data = np.ascontiguousarray(ctx._combination("nand", (x, y)), dtype=np.uint32)
    return data, ctx._sign_vector(), 1 - (a & b)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", default="STD128,STD128_LP,STD128_LUT")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--count", type=int, default=64, help="gates per call")
    ap.add_argument("--json", type=pathlib.Path, default=None)
    args = ap.parse_args()
    all_threads = _core.num_threads()
    thread_counts = sorted({1, all_threads})
    record = {"cpu": cpu_model(), "machine": platform.machine(), "isa": _core.tfhe_best_isa(),
              "threads": all_threads, "count": args.count, "rounds": args.rounds, "results": {}}
    for preset in args.presets.split(","):
        ctx = rf.tfhe.Context.preset(preset)
        sk = ctx.keygen()
        boot = ctx._bootstrapper
        data, tv, want = gate_inputs(ctx, sk, args.count)
        times = {(b, t): [] for b in BATCHES for t in thread_counts}
        reference = None
        for round_ in range(args.rounds):
            for threads in thread_counts:
                for batch in BATCHES[round_ % len(BATCHES):] + BATCHES[:round_ % len(BATCHES)]:
                    t0 = time.perf_counter()
                    out = boot.bootstrap(data, tv, threads, 1, batch)
                    times[(batch, threads)].append((time.perf_counter() - t0) / args.count * 1e3)
                    if reference is None:
                        reference = out
                        got = ctx.decrypt(rf.tfhe.Ciphertext(ctx, out, (args.count,), None), sk)
                        if not np.array_equal(got, want):
                            raise SystemExit(f"{preset}: wrong NAND outputs")
                    elif not np.array_equal(out, reference):
                        raise SystemExit(f"{preset}: batch {batch} gave other words than the first batch size timed")
        print(f"\n{preset}: ms per NAND (best / median of {args.rounds}), {args.count} gates per call")
        print("| threads | batch 1 | batch 4 | batch 8 | batch 16 | batch 1 / batch 8 (best, median) "
              "| gates/s at batch 8 (best, median) |")
        print("|---|---|---|---|---|---|---|")
        rows = {}
        for threads in thread_counts:
            cells, stats = [], {}
            for batch in BATCHES:
                values = times[(batch, threads)]
                stats[batch] = (min(values), statistics.median(values))
                cells.append(f"{stats[batch][0]:.2f} / {stats[batch][1]:.2f}")
            ratio = (stats[1][0] / stats[8][0], stats[1][1] / stats[8][1])
            print(f"| {threads} | " + " | ".join(cells) + f" | {ratio[0]:.2f}× / {ratio[1]:.2f}× | "
                  f"{1000 / stats[8][0]:.0f} / {1000 / stats[8][1]:.0f} |")
            rows[str(threads)] = {"ms_per_gate": {str(b): times[(b, threads)] for b in BATCHES},
                                  "best_ratio_1_over_8": ratio[0], "median_ratio_1_over_8": ratio[1]}
        record["results"][preset] = rows
    if args.json:
        args.json.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
