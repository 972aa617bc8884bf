"""One CKKS bootstrap at full size on the GPU against the CPU, in one process:
the same keys and input on both, the outputs compared byte for byte, each
phase timed (the GPU synchronises at every phase's end), precision in bits
against NumPy, and the device memory the keys and DFT plaintexts take.

The first GPU bootstrap uploads the bootstrap keys and the DFT diagonals (they
then stay resident); it is reported apart from the timed runs.

    python benchmarks/gpu/bootstrap_gpu.py [--preset N16_BOOT] [--orders cts,stc] [--repeat 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings

import numpy as np

import ringfire as rf

PHASES = ("mod_raise", "coeffs_to_slots", "eval_mod", "slots_to_coeffs")


def say(msg: str) -> None:
    print(f"[bootstrap_gpu] {msg}", file=sys.stderr, flush=True)


def bits(got, want) -> tuple[float, float]:
    err = np.abs(np.asarray(got) - np.asarray(want))
    return float(-np.log2(err.mean())), float(-np.log2(err.max()))


def timed_bootstrap(ev, ct, sync) -> tuple[object, float, dict]:
    times: dict = {}
    start = time.perf_counter()
    out = ev.bootstrap(ct, timings=times)
    sync()
    return out, time.perf_counter() - start, times


def one_order(preset: str, stc_first: bool, repeat: int, cpu_runs: int) -> dict:
    ctx = rf.ckks.Context.preset(preset, bootstrap={"stc_first": stc_first})
    row: dict = {"preset": preset, "order": "stc_first" if stc_first else "cts_first", "threads": rf.num_threads()}
    start = time.perf_counter()
    plan = ctx.bootstrap_plan()
    row["precomputation_s"] = time.perf_counter() - start
    start = time.perf_counter()
    sk, keys = ctx.keygen(bootstrap=True)
    row["keygen_s"] = time.perf_counter() - start
    row.update(key_gib=plan.key_bytes / 2**30, dft_gib=plan.plaintext_bytes / 2**30, key_switches=plan.key_switches)
    say(f"{row['order']}: precomputation {row['precomputation_s']:.1f} s, keygen {row['keygen_s']:.1f} s")
    x = np.random.default_rng(0).uniform(-1, 1, ctx.slots)
    ct = ctx.evaluator().mod_switch(ctx.encrypt(x, keys), ctx.bootstrap_min_level)
    ev = ctx.evaluator(keys)

    # The first bootstrap also does one-time work (a per-use key finds where each
    # row of its a_j starts in its seed's stream): timed apart, as the GPU's first is.
    _, row["cpu_first_s"], _ = timed_bootstrap(ev, ct, lambda: None)
    cpu_times = []
    for _ in range(cpu_runs):
        cpu_out, seconds, phases = timed_bootstrap(ev, ct, lambda: None)
        cpu_times.append(seconds)
    row["cpu_s"] = statistics.median(cpu_times)
    row["cpu_phases_s"] = phases
    say(f"{row['order']}: CPU bootstrap {row['cpu_s']:.2f} s, first {row['cpu_first_s']:.2f} s "
        f"({rf.num_threads()} threads)")

    gpu_ct = ct.to("cuda")
    before = rf.cuda.pool_stats()["bytes_in_use"]
    gpu_out, row["gpu_first_s"], _ = timed_bootstrap(ev, gpu_ct, rf.cuda.synchronize)
    row["gpu_resident_gib"] = (rf.cuda.pool_stats()["bytes_in_use"] - before) / 2**30
    runs, per_phase = [], {p: [] for p in PHASES}
    for _ in range(repeat):
        gpu_out, seconds, phases = timed_bootstrap(ev, gpu_ct, rf.cuda.synchronize)
        runs.append(seconds)
        for p in PHASES:
            per_phase[p].append(phases[p])
    row["gpu_s"] = statistics.median(runs)
    row["gpu_runs_s"] = runs
    row["gpu_phases_s"] = {p: statistics.median(v) for p, v in per_phase.items()}
    row["speedup"] = row["cpu_s"] / row["gpu_s"]
    row["bit_identical"] = gpu_out.to_bytes() == cpu_out.to_bytes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row["bits_mean"], row["bits_min"] = bits(ctx.decrypt(gpu_out, sk, insecure_exact=True), x)
    say(f"{row['order']}: GPU first {row['gpu_first_s']:.3f} s (uploads), then {row['gpu_s'] * 1e3:.1f} ms "
        f"({', '.join(f'{p} {v * 1e3:.1f}' for p, v in row['gpu_phases_s'].items())} ms); "
        f"bit-identical: {row['bit_identical']}; {row['bits_mean']:.1f} / {row['bits_min']:.1f} bits")
    return row


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="N16_BOOT")
    ap.add_argument("--orders", default="cts,stc", help="cts (CoeffsToSlots first), stc (SlotsToCoeffs first)")
    ap.add_argument("--repeat", type=int, default=3, help="timed GPU bootstraps after the first")
    ap.add_argument("--cpu-runs", type=int, default=1)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    if not rf.cuda_available():
        sys.exit("no GPU: this benchmark needs the CUDA backend and a visible GPU")
    rows = []
    for order in args.orders.split(","):
        rows.append(one_order(args.preset, order == "stc", args.repeat, args.cpu_runs))
        if args.json:  # written after each order: a later timeout keeps what ran
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)
    print(f"{'order':10} {'CPU s':>7} {'GPU ms':>8} {'first':>7} {'speedup':>8} {'CtS':>7} {'EvalMod':>8} "
          f"{'StC':>7} {'bits':>11} same")
    for r in rows:
        p = r["gpu_phases_s"]
        print(f"{r['order']:10} {r['cpu_s']:7.2f} {r['gpu_s'] * 1e3:8.1f} {r['gpu_first_s']:7.2f} "
              f"{r['speedup']:7.1f}x {p['coeffs_to_slots'] * 1e3:7.1f} {p['eval_mod'] * 1e3:8.1f} "
              f"{p['slots_to_coeffs'] * 1e3:7.1f} {r['bits_mean']:5.1f}/{r['bits_min']:4.1f} {r['bit_identical']}")


if __name__ == "__main__":
    main()
