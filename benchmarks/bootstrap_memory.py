#!/usr/bin/env python3
"""A bootstrap's memory, planned against measured (``ctx.bootstrap_plan()``, docs/bootstrapping.md).

    python benchmarks/bootstrap_memory.py [--preset N16_BOOT] [--json out.json]

The plan runs the bootstrap's circuit on placeholders that hold blocks of a model of the host
pool (its capacities, its reuse of cached blocks, its cache limit), with the evaluator's own
temporaries around each operation. Each setting runs in a process of its own, which makes the
context and the keys, resets the kernel's high-water mark, then bootstraps twice, each time
after returning the pool's cached blocks (``rf.memory.flush()``) and resetting its peaks, and
reports:

* the pool's peak (in use and cached) during each bootstrap, beyond what it held before, against
  the plan's ``temporary_bytes``; the most in use at once against ``temporary_in_use_bytes``
  (the table shows the second bootstrap: the first also expands the relinearization key, which
  the plan counts apart, in ``relin_key_bytes``);
* the process's peak resident set during the bootstraps, beyond its size after ``import
  ringfire`` (the interpreter and the library), against ``peak_bytes`` (the keys as held, the
  relinearization key, the DFT plaintexts and the temporaries).

Settings: hoisted and chained rotations (``bootstrap={"chained_rotations": True}``), each with
the pool's cache unbounded and with ``rf.memory.set_cache_limit(0)`` (nothing cached).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import warnings

import numpy as np

SETTINGS = [("hoisted", None), ("hoisted", 0), ("chained", None), ("chained", 0)]


def one_process(preset: str, rotations: str, cache_limit: int | None) -> dict:
    import ringfire as rf
    from ringfire import _core
    from ringfire.memory_guard import proc_memory, reset_peak_rss
    warnings.simplefilter("ignore")
    base_rss = proc_memory("VmRSS")["VmRSS"]
    if cache_limit is not None:
        rf.memory.set_cache_limit(cache_limit)
    ctx = rf.ckks.Context.preset(preset, bootstrap={"chained_rotations": rotations == "chained"})
    plan = ctx.bootstrap_plan()
    sk, keys = ctx.keygen(bootstrap=True)
    x = np.random.default_rng(3).uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, sk)
    ev = ctx.evaluator(keys)
    reset_peak_rss()
    runs = []
    for _ in range(2):
        rf.memory.flush()  # each bootstrap starts with nothing cached, as the plan does
        before = _core.host_pool_stats()
        _core.host_pool_reset_peaks()
        out = ev.bootstrap(ct)
        after = _core.host_pool_stats()
        runs.append({"pool_peak_bytes": after["peak_bytes_held"] - before["bytes_in_use"] - before["bytes_cached"],
                     "pool_peak_in_use_bytes": after["peak_bytes_in_use"] - before["bytes_in_use"],
                     "bits": float(-np.log2(np.max(np.abs(ctx.decrypt(out, sk).real - x))))})
        del out
    return {"preset": preset, "rotations": rotations, "cache_limit": cache_limit,
            "plan": {"temporary_bytes": plan.temporary_bytes, "temporary_in_use_bytes": plan.temporary_in_use_bytes,
                     "peak_bytes": plan.peak_bytes, "key_bytes_held": plan.held_bytes,
                     "relin_key_bytes": plan.relin_key_bytes, "plaintext_bytes": plan.plaintext_bytes},
            "runs": runs, "process_peak_bytes": proc_memory("VmHWM")["VmHWM"] - base_rss,
            "base_rss_bytes": base_rss}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="N16_BOOT")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--one", nargs=2, metavar=("ROTATIONS", "CACHE_LIMIT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        limit = None if args.one[1] == "none" else int(args.one[1])
        print(json.dumps(one_process(args.preset, args.one[0], limit)))
        return 0
    rows = []
    gib = 2.0 ** 30
    print(f"{args.preset}, one process per setting, two bootstraps each (GiB; plan / measured)", flush=True)
    print("| rotations | pool cache | temporaries | of them in use at once | process peak over the "
          "interpreter | least bits |")
    print("|---|---|---|---|---|---|")
    for rotations, limit in SETTINGS:
        out = subprocess.run([sys.executable, __file__, "--preset", args.preset, "--one", rotations,
                              "none" if limit is None else str(limit)], check=True, capture_output=True, text=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        plan, runs = row["plan"], row["runs"]
        pool, in_use = runs[-1]["pool_peak_bytes"], runs[-1]["pool_peak_in_use_bytes"]
        print(f"| {rotations} | {'unbounded' if limit is None else limit} | "
              f"{plan['temporary_bytes'] / gib:.3f} / {pool / gib:.3f} ({pool / plan['temporary_bytes']:.3f}) | "
              f"{plan['temporary_in_use_bytes'] / gib:.3f} / {in_use / gib:.3f} | "
              f"{plan['peak_bytes'] / gib:.2f} / {row['process_peak_bytes'] / gib:.2f} "
              f"({row['process_peak_bytes'] / plan['peak_bytes']:.3f}) | "
              f"{min(r['bits'] for r in runs):.1f} |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
