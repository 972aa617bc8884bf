"""4-bit lookups (torus sets) and NANDs (gate sets) under two builds of ringfire, or two of
its instruction sets, interleaved.

For a change to the engines' kernels (the negacyclic FFT, the blind rotation, the key
switch): each round starts one process per side, the sides in turn, so that this host's
drift (a third within minutes) falls on both alike. A process times, on one thread and after
a warm-up, a batch of 64 4-bit table lookups for each torus set (best of three calls) and 48
NANDs one at a time for each gate set (STD128 and its kind: the best), and checks every
output; with ``--single``, also 48 lookups one at a time on each torus set (a lookup's
latency, which a batch hides).
A build is a directory holding a ``ringfire`` package, put first on ``PYTHONPATH``:

    git worktree add /tmp/before <commit> && pip install --no-deps --target /tmp/build-before /tmp/before
    pip install --no-deps --target /tmp/build-after .
    python benchmarks/tfhe_builds_ab.py --a /tmp/build-before --b /tmp/build-after [--rounds 8]
        [--sets STD128_T64,STD128_T64_MB] [--single] [--json out.json]

Or one build (the installed ringfire where --a/--b are left out) under two instruction sets,
RINGFIRE_TFHE_ISA for each side (both sides compute the same bits):

    python benchmarks/tfhe_builds_ab.py --isa-a avx2 --isa-b avx512 [--rounds 8] [--single]

The table gives each set's best and median per-lookup time under each side and the median
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


def time_sets(sets: list[str], single: bool = False) -> dict:
    """The worker: times the ringfire this process imports. A torus set (STD128_T64 and its
    kind) times a 4-bit table on a batch; a gate set (STD128 and its kind) times NANDs one
    at a time, the gate's latency."""
    import numpy as np

    import ringfire as rf

    out = {"ringfire": str(pathlib.Path(rf.__file__).parent), "sets": {}}
    rng = np.random.default_rng(1)
    values, a, b = rng.integers(0, 16, BATCH), rng.integers(0, 2, BATCH), rng.integers(0, 2, BATCH)
    for name in sets:
        ctx = rf.tfhe.Context.preset(name)
        ctx.threads = 1
        sk = ctx.keygen()
        if isinstance(ctx.params, rf.tfhe.torus_params.TorusParameterSet):
            x, want = ctx.encrypt(values, sk, bits=4), (5 * values + 3) % 16
            table = ctx.lut(lambda m: (5 * m + 3) % 16, bits=4)
            run, per = (lambda: table(x)), BATCH
        else:  # one gate at a time: the first element's NAND
            x, y, want = ctx.encrypt(a[:1], sk), ctx.encrypt(b[:1], sk), 1 - (a[:1] & b[:1])
            run, per = (lambda: ctx.nand(x, y)), 1
        run()  # warm-up: the first call pages the keys in
        calls = []
        for _ in range(CALLS if per > 1 else 16 * CALLS):
            t0 = time.perf_counter()
            result = run()
            calls.append((time.perf_counter() - t0) / per * 1e3)
            if not np.array_equal(ctx.decrypt(result, sk), want):
                raise SystemExit(f"{name}: a result came out wrong under {out['ringfire']}")
        out["sets"][name] = {"best_ms": min(calls), "median_ms": statistics.median(calls), "calls_ms": calls}
        if single and per > 1:  # one lookup at a time: the first element's
            one, calls = x[:1], []
            for _ in range(16 * CALLS):
                t0 = time.perf_counter()
                result = table(one)
                calls.append((time.perf_counter() - t0) * 1e3)
                if not np.array_equal(ctx.decrypt(result, sk), want[:1]):
                    raise SystemExit(f"{name}: a single lookup came out wrong under {out['ringfire']}")
            out["sets"][f"{name} single"] = {"best_ms": min(calls), "median_ms": statistics.median(calls),
                                             "calls_ms": calls}
    out["isa"] = os.environ.get("RINGFIRE_TFHE_ISA", "")
    return out


def run_side(build: pathlib.Path | None, isa: str | None, sets: list[str], single: bool) -> dict:
    """One worker process: the ringfire at ``build`` (or the installed one) under ``isa`` (or its default)."""
    env = dict(os.environ)
    if build is not None:
        env["PYTHONPATH"] = str(build)
    env.pop("RINGFIRE_TFHE_ISA", None)
    if isa is not None:
        env["RINGFIRE_TFHE_ISA"] = isa
    command = [sys.executable, __file__, "--one", "--sets", ",".join(sets)] + (["--single"] if single else [])
    proc = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"the side (build {build or 'installed'}, isa {isa or 'default'}) failed:\n"
                         f"{proc.stderr[-2000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if build is not None and pathlib.Path(result["ringfire"]).resolve() != (build / "ringfire").resolve():
        raise SystemExit(f"PYTHONPATH={build} imported ringfire from {result['ringfire']}: is the build there?")
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", type=pathlib.Path, help="the first build (the baseline; default: the installed ringfire)")
    ap.add_argument("--b", type=pathlib.Path, help="the second build (default: the installed ringfire)")
    ap.add_argument("--isa-a", choices=("scalar", "avx2", "avx512"), help="RINGFIRE_TFHE_ISA for the first side")
    ap.add_argument("--isa-b", choices=("scalar", "avx2", "avx512"), help="RINGFIRE_TFHE_ISA for the second side")
    ap.add_argument("--single", action="store_true", help="also time torus lookups one at a time")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--sets", default="STD128_T64,STD128_T64_MB")
    ap.add_argument("--json", type=pathlib.Path, default=None)
    ap.add_argument("--one", action="store_true", help="time the ringfire on sys.path (the worker)")
    args = ap.parse_args()
    sets = [s for s in args.sets.split(",") if s]
    if args.one:
        print(json.dumps(time_sets(sets, args.single)))
        return 0
    if (args.a, args.isa_a) == (args.b, args.isa_b):
        ap.error("the two sides are the same: name two builds (--a, --b), two instruction sets (--isa-a, --isa-b), "
                 "or both (or --one times the ringfire on sys.path)")
    rounds = []
    for r in range(args.rounds):
        a, b = run_side(args.a, args.isa_a, sets, args.single), run_side(args.b, args.isa_b, sets, args.single)
        rounds.append({"a": a["sets"], "b": b["sets"]})
        line = "  ".join(f"{s}: {a['sets'][s]['best_ms']:.2f} -> {b['sets'][s]['best_ms']:.2f} ms" for s in a["sets"])
        print(f"round {r + 1}/{args.rounds}  {line}", flush=True)
    print(f"\nOne thread, ms per 4-bit lookup in a batch of {BATCH} (best of {CALLS} calls per round), per lookup one "
          f"at a time ('single') or per NAND one at a time (best of {16 * CALLS} per round)")
    print("| set | a: best / median of the rounds | b: best / median of the rounds | b / a (median of the rounds' ratios) |")
    print("|---|---|---|---|")
    summary = {}
    for s in rounds[0]["a"]:
        a_ms = [r["a"][s]["best_ms"] for r in rounds]
        b_ms = [r["b"][s]["best_ms"] for r in rounds]
        ratio = statistics.median(bb / aa for aa, bb in zip(a_ms, b_ms))
        summary[s] = {"a_best_ms": min(a_ms), "a_median_ms": statistics.median(a_ms), "b_best_ms": min(b_ms),
                      "b_median_ms": statistics.median(b_ms), "ratio_b_over_a": ratio}
        print(f"| {s} | {min(a_ms):.2f} / {statistics.median(a_ms):.2f} | {min(b_ms):.2f} / "
              f"{statistics.median(b_ms):.2f} | {ratio:.3f} |")
    if args.json is not None:
        args.json.write_text(json.dumps({"benchmark": "tfhe_builds_ab", "a": str(args.a or "installed"),
                                         "b": str(args.b or "installed"), "isa_a": args.isa_a, "isa_b": args.isa_b,
                                         "single": args.single,
                                         "batch": BATCH, "calls": CALLS, "summary": summary, "rounds": rounds},
                                        indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
