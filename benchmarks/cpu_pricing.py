"""How well the one cost model (ringfire.costing) predicts real runs on this CPU.

    python benchmarks/cpu_pricing.py [--json out.json]

Traces a few real workloads, prices each on kernel costs measured now on this machine, and prints
priced / recorded time. (The N=2^16 bootstrap is `ringfire project
benchmarks/traces/ckks_bootstrap_N16_BOOT.json --cpu`; it needs its keys, so it is not rerun here.)
"""

import argparse
import json
import time
import warnings

import numpy as np

import ringfire as rf
from ringfire import costing


def workloads():
    warnings.simplefilter("ignore", RuntimeWarning)
    ctx = rf.ckks.Context(2**14, [60] + [40] * 6, scale_bits=40, special_bits=[60])
    sk, keys = ctx.keygen(rotations=[1])
    x = ctx.encrypt(np.linspace(-1, 1, ctx.slots), keys)
    yield "N=2^14, 20 x (multiply, relinearize, rescale)", lambda: [x * x for _ in range(20)]
    yield "N=2^14, 20 rotations", lambda: [x.rotate(1) for _ in range(20)]
    boot = rf.ckks.Context.preset("N12_BOOT_INSECURE")
    bsk, bkeys = boot.keygen(bootstrap=True)
    b = boot.encrypt(np.linspace(-1, 1, boot.slots), bkeys)
    b.bootstrap()                                   # one-time precomputation outside the trace
    yield "N=2^12 toy, 3 bootstraps", lambda: [b.bootstrap() for _ in range(3)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    for name, run in workloads():
        run()                                       # warm-up
        with rf.trace() as t:
            start = time.perf_counter()
            run()
            wall = time.perf_counter() - start
        sizes = sorted({n for (_, n) in t.primitives() if n})
        priced = costing.price(t, costing.measure_cpu_costs(sizes)).seconds
        rows.append({"workload": name, "recorded_s": wall, "priced_s": priced, "ratio": priced / wall,
                     "threads": rf.num_threads()})
        print(f"{name:<48} recorded {wall:8.3f} s  priced {priced:8.3f} s  priced/recorded {priced / wall:5.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
