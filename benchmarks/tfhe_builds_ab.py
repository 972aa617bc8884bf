"""4-bit lookups on the 64-bit torus sets under two builds of ringfire, interleaved.

For a change to the torus engine's kernels (the negacyclic FFT, the blind rotation): each
round starts one process per build, the builds in turn, so that this host's drift (a third
within minutes) falls on both alike. A process times a batch of 64 4-bit table lookups
on one thread for each set (best of three calls after a warm-up) and checks every output.
A build is a directory holding a ``ringfire`` package, put first on ``PYTHONPATH``:

    git worktree add /tmp/before <commit> && pip install --no-deps --target /tmp/build-before /tmp/before
    pip install --no-deps --target /tmp/build-after .
    python benchmarks/tfhe_builds_ab.py --a /tmp/build-before --b /tmp/build-after [--rounds 8]
        [--sets STD128_T64,STD128_T64_MB] [--json out.json]

The table gives each set's best and median per-lookup time under each build and the median
of the rounds' ratios b / a (each round's two processes ran back to back).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

BATCH = 64
CALLS = 3


def time_sets(sets: list[str]) -> dict:
    """The worker: times the ringfire this process imports."""
    import numpy as np

    import ringfire as rf

    out = {"ringfire": str(pathlib.Path(rf.__file__).parent), "sets": {}}
    values = np.random.default_rng(1).integers(0, 16, BATCH)
    want = (5 * values + 3) % 16
    for name in sets:
        ctx = rf.tfhe.Context.preset(name)
        ctx.threads = 1
        sk = ctx.keygen()
        x = ctx.encrypt(values, sk, bits=4)
        table = ctx.lut(lambda m: (5 * m + 3) % 16, bits=4)
        table(x)  # warm-up: the first call pages the keys in
        calls = []
        for _ in range(CALLS):
            t0 = time.perf_counter()
            y = table(x)
            calls.append((time.perf_counter() - t0) / BATCH * 1e3)
            if not np.array_equal(ctx.decrypt(y, sk), want):
                raise SystemExit(f"{name}: a lookup came out wrong under {out['ringfire']}")
        out["sets"][name] = {"best_ms": min(calls), "calls_ms": calls}
    return out


def run_build(build: pathlib.Path, sets: list[str]) -> dict:
    env = dict(os.environ, PYTHONPATH=str(build))
    proc = subprocess.run([sys.executable, __file__, "--one", "--sets", ",".join(sets)], env=env,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"the build at {build} failed:\n{proc.stderr[-2000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if pathlib.Path(result["ringfire"]).resolve() != (build / "ringfire").resolve():
        raise SystemExit(f"PYTHONPATH={build} imported ringfire from {result['ringfire']}: is the build there?")
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", type=pathlib.Path, help="the first build (the baseline)")
    ap.add_argument("--b", type=pathlib.Path, help="the second build")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--sets", default="STD128_T64,STD128_T64_MB")
    ap.add_argument("--json", type=pathlib.Path, default=None)
    ap.add_argument("--one", action="store_true", help="time the ringfire on sys.path (the worker)")
    args = ap.parse_args()
    sets = [s for s in args.sets.split(",") if s]
    if args.one:
        print(json.dumps(time_sets(sets)))
        return 0
    if args.a is None or args.b is None:
        ap.error("--a and --b name the two builds (or --one times the ringfire on sys.path)")
    rounds = []
    for r in range(args.rounds):
        a, b = run_build(args.a, sets), run_build(args.b, sets)
        rounds.append({"a": a["sets"], "b": b["sets"]})
        line = "  ".join(f"{s}: {a['sets'][s]['best_ms']:.2f} -> {b['sets'][s]['best_ms']:.2f} ms" for s in sets)
        print(f"round {r + 1}/{args.rounds}  {line}", flush=True)
    print(f"\n4-bit lookups, batch of {BATCH}, one thread, ms per lookup (best of {CALLS} calls per round)")
    print("| set | a: best / median | b: best / median | b / a (median of the rounds' ratios) |")
    print("|---|---|---|---|")
    summary = {}
    for s in sets:
        a_ms = [r["a"][s]["best_ms"] for r in rounds]
        b_ms = [r["b"][s]["best_ms"] for r in rounds]
        ratio = statistics.median(bb / aa for aa, bb in zip(a_ms, b_ms))
        summary[s] = {"a_best_ms": min(a_ms), "a_median_ms": statistics.median(a_ms), "b_best_ms": min(b_ms),
                      "b_median_ms": statistics.median(b_ms), "ratio_b_over_a": ratio}
        print(f"| {s} | {min(a_ms):.2f} / {statistics.median(a_ms):.2f} | {min(b_ms):.2f} / "
              f"{statistics.median(b_ms):.2f} | {ratio:.3f} |")
    if args.json is not None:
        args.json.write_text(json.dumps({"benchmark": "tfhe_builds_ab", "a": str(args.a), "b": str(args.b),
                                         "batch": BATCH, "calls": CALLS, "summary": summary, "rounds": rounds},
                                        indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
