"""Scale study of ringfire.nn against seed 001 (Lloret-Talavera et al., HE-Transformer
on Intel Optane PMem): MobileNetV2 (width, resolution) and ResNet-50 at batch 2048.

    python benchmarks/nn_scale.py                       # table + end-to-end run
    python benchmarks/nn_scale.py --json out.json       # also write everything as JSON
    python benchmarks/nn_scale.py --no-e2e              # planning + predictions only (~1 min)
    python benchmarks/nn_scale.py --e2e-resolution 32   # force the end-to-end variant

Context: seed 001 (and nGraph-HE2) use N = 4096, q = {30, 22, 22, 30} (the last
prime is SEAL's special prime), 128-bit security, batch 2048 = N/2 slots. We use the
same: ``Context(poly_degree=2**12, coeff_bits=[30, 22, 22], scale_bits=22,
special_bits=[30])`` -> 2 levels, which is what client-aided activations need
(``plan().levels_needed == 2`` for every model here).

Predictions: ciphertext counts and peak memory come from ``Model.plan()`` (memory
does not depend on the batch: a ciphertext holds N/2 = 2048 slots whether they are
used or not); runtime from ``ringfire.nn.costs`` (per-operation costs measured on
this machine, weighted by the planner's counts and exact limb profile).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import threading
import time

import numpy as np

import ringfire as rf
from ringfire.memory_guard import proc_memory, reset_peak_rss
from ringfire.nn import costs as C
from ringfire.nn import zoo

GB = 1e9  # seed 001 reports decimal GB / TB
# Seed 001, Table 1: memory (GB) and time (s) on DRAM-only (DO, 192 GB), MM96, MM32; batch 2048, 48 cores.
SEED_TABLE1 = {(0.35, 96): (71, 650, 675, 714), (0.35, 128): (125, 1158, 1183, 1262),
               (0.5, 96): (80, 842, 867, 923), (0.5, 128): (144, 1503, 1537, 1653),
               (0.75, 96): (153, 1393, 1452, 1545), (1.0, 96): (157, 1621, 1691, 1833)}
# Seed 001 text: (1.4, 224) needs 1.2 TB (Sec. 5.1, Fig. 4); ResNet-50 peaks below 900 GB
# (Fig. 8) and runs over 63 hours (Sec. 5.2). Fig. 4/5 values for other configs are only in figures.
SEED_TEXT = {(1.4, 224): {"memory_gb": 1200.0, "memory_note": "1.2 TB (text)"},
             "resnet50": {"memory_gb": 900.0, "memory_note": "< 900 GB (Fig. 8)", "seconds": 63 * 3600.0,
                          "seconds_note": "> 63 h"}}


def seed001_context():
    return rf.ckks.Context(poly_degree=2**12, coeff_bits=[30, 22, 22], scale_bits=22, special_bits=[30])


def study(name, builder, ctx, costs):
    t0 = time.perf_counter()
    onnx_model, info = builder()
    model = rf.nn.load(onnx_model, ctx, activation="client")
    plan = model.plan()
    profile = C.limb_profile(model)
    adds = sum(int(np.prod(s)) for kind, op, s in info["activations"] if kind == "add")
    parts = C.predict_breakdown(plan, costs, profile=profile, adds=adds)
    return {"model": name, "parameters": info["parameters"], "levels_needed": plan.levels_needed,
            "input_ciphertexts": plan.input_ciphertexts, "largest_tensor": plan.largest_tensor,
            "counts": plan.counts, "adds": adds, "expected_counts": zoo.expected_counts(info),
            "peak_bytes": plan.peak_bytes, "activation_bytes": plan.activation_bytes,
            "predicted_seconds": parts["total"], "predicted_parts": parts, "plan_seconds": time.perf_counter() - t0}


class PeakSampler:
    """Polls RSS (also split into anonymous memory and file pages, which spilled blocks
    are) and ringfire's host pool while a run is in progress."""

    def __init__(self, period=0.2):
        self.period, self.peak_rss, self.peak_pool, self._stop = period, 0, 0, threading.Event()
        self.peak_anon = self.peak_file = 0
        # At the RSS peak: the pool's freed blocks kept for reuse, and the RSS its blocks do
        # not explain (NumPy, torch, the interpreter).
        self.cached_at_peak = self.beyond_pool_at_peak = 0

    @staticmethod
    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    @staticmethod
    def status(*fields) -> int:
        """The sum of /proc/self/status memory fields (RssAnon, RssFile, ...), in bytes."""
        return sum(proc_memory(*fields).values())

    def _loop(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.period)

    def sample(self):
        rss, pool = self.rss(), rf._core.host_pool_stats()
        if rss > self.peak_rss:
            self.peak_rss = rss
            self.cached_at_peak = int(pool["bytes_cached"])
            self.beyond_pool_at_peak = rss - int(pool["bytes_in_use"]) - int(pool["bytes_cached"])
        self.peak_pool = max(self.peak_pool, int(pool["bytes_in_use"]))
        self.peak_anon = max(self.peak_anon, self.status("RssAnon"))
        self.peak_file = max(self.peak_file, self.status("RssFile", "RssShmem"))

    def __enter__(self):
        # The kernel's own peak (VmHWM), reset here where /proc allows it: a peak between two
        # samples escapes the sampling, not VmHWM.
        self.hwm_reset = reset_peak_rss()
        self._t = threading.Thread(target=self._loop, daemon=True)
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self.sample()
        self.peak_rss_hwm = self.status("VmHWM") if self.hwm_reset else None


def end_to_end(ctx, width, resolution, batch, costs, seed=0):
    import onnxruntime as ort

    onnx_model, info = zoo.mobilenet_v2(width, resolution, seed=seed)
    model = rf.nn.load(onnx_model, ctx, activation="client")
    plan = model.plan()
    profile = C.limb_profile(model)
    adds = sum(int(np.prod(s)) for kind, op, s in info["activations"] if kind == "add")
    predicted = C.predict_breakdown(plan, costs, profile=profile, adds=adds)
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, (batch, 3, resolution, resolution))
    ref = ort.InferenceSession(onnx_model.SerializeToString()).run(None, {"x": x.astype(np.float32)})[0]
    sk, keys = ctx.keygen()
    keys.expand()  # keys expand on first use: not inside the measured run
    base_rss = PeakSampler.rss()
    base_pool = int(rf._core.host_pool_stats()["bytes_in_use"])
    with PeakSampler() as sampler:
        t = time.perf_counter()
        enc = ctx.encrypt_batch(x, keys)
        t_enc = time.perf_counter() - t
        out = model(enc, client=rf.nn.LocalClient(ctx, sk, keys))
        t_run = model.last_run["seconds"]
        del enc
    got = ctx.decrypt_batch(out, sk)
    err = np.abs(got - ref)
    return {"model": f"mobilenet_v2({width}, {resolution})", "batch": batch, "measured_seconds": t_run,
            "encrypt_input_seconds": t_enc, "predicted_seconds": predicted["total"], "predicted_parts": predicted,
            "measured_counts": {k: v for k, v in model.last_run.items() if k != "seconds"}, "plan_counts": plan.counts,
            "predicted_peak_bytes": plan.peak_bytes,
            "measured_peak_rss_bytes": sampler.peak_rss, "baseline_rss_bytes": base_rss,
            "measured_peak_pool_bytes": sampler.peak_pool, "baseline_pool_bytes": base_pool,
            "ru_maxrss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "max_abs_error_vs_onnxruntime": float(err.max()),
            "max_abs_logit": float(np.abs(ref).max()),
            "top1_agreement": float(np.mean(got.argmax(1) == ref.argmax(1)))}


def fmt_gb(b):
    return f"{b / GB:,.1f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", help="write all results to this file")
    ap.add_argument("--configs", choices=("all", "table1"), default="all",
                    help="MobileNetV2 configurations: all 32 of seed 001's grid, or Table 1 + (1.4, 224)")
    ap.add_argument("--no-resnet", action="store_true")
    ap.add_argument("--no-e2e", action="store_true", help="skip the end-to-end encrypted run")
    ap.add_argument("--e2e-width", type=float, default=0.35)
    ap.add_argument("--e2e-resolution", type=int, default=None,
                    help="default: 96 if its predicted peak fits --memory-limit-gb, else the largest of 64/48/32 that does")
    ap.add_argument("--e2e-batch", type=int, default=2048)
    ap.add_argument("--memory-limit-gb", type=float, default=0.7 * os.sysconf("SC_PAGE_SIZE") *
                    os.sysconf("SC_PHYS_PAGES") / GB)
    ap.add_argument("--time-limit-s", type=float, default=600.0, help="largest predicted e2e time to attempt")
    args = ap.parse_args(argv)

    ctx = seed001_context()
    sk, keys = ctx.keygen()
    print(f"context: {ctx.describe()}  (seed 001: N=4096, q={{30,22,22,30}}, batch 2048)")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, ringfire threads {rf._core.num_threads()}; "
          f"load average {os.getloadavg()[0]:.1f}")
    costs = C.measure_costs(ctx, keys, sk)
    print("measured costs (ms per op at the top level, 3 limbs): "
          + ", ".join(f"{k}={costs['raw'][k] * 1e3:.3f}" for k in ("rescale", "mult", "encrypt", "decrypt"))
          + f", lc term={costs['lc_term_per_limb'] * 3e3:.4f}, lc call={costs['lc_call_per_limb'] * 3e3:.4f}")

    configs = zoo.seed001_configs() if args.configs == "all" else list(SEED_TABLE1) + [(1.4, 224)]
    rows = []
    for w, r in configs:
        rows.append(study(f"MobileNetV2({w}, {r})", lambda w=w, r=r: zoo.mobilenet_v2(w, r), ctx, costs))
        rows[-1]["key"] = [w, r]
    if not args.no_resnet:
        rows.append(study("ResNet-50 (224)", zoo.resnet50, ctx, costs))
        rows[-1]["key"] = "resnet50"

    header = (f"{'model':<22}{'params':>7}{'lvl':>4}{'in cts':>9}{'largest':>11}{'round trips':>12}"
              f"{'terms':>9}{'ours GB':>9}{'seed GB':>9}{'ratio':>6}{'ours s':>9}{'seed s (DO)':>12}")
    print("\nbatch 2048 (= N/2 slots); GB = 1e9 bytes; our seconds = predicted on this machine "
          f"({os.cpu_count()} cores), seed 001 seconds on 48 cores")
    print(header)
    print("-" * len(header))
    for row in rows:
        key = tuple(row["key"]) if isinstance(row["key"], list) else row["key"]
        seed_mem, seed_s = None, None
        if key in SEED_TABLE1:
            seed_mem, seed_s = SEED_TABLE1[key][0], SEED_TABLE1[key][1]
        elif key in SEED_TEXT:
            seed_mem, seed_s = SEED_TEXT[key].get("memory_gb"), SEED_TEXT[key].get("seconds")
        row["seed001"] = {"memory_gb": seed_mem, "seconds_DO": seed_s,
                          "table1": SEED_TABLE1.get(key), "note": SEED_TEXT.get(key, {})}
        c = row["counts"]
        ratio = f"{seed_mem * GB / row['peak_bytes']:.2f}" if seed_mem else "-"
        print(f"{row['model']:<22}{row['parameters'] / 1e6:>6.1f}M{row['levels_needed']:>4}"
              f"{row['input_ciphertexts']:>9,}{row['largest_tensor']:>11,}{c['client_round_trips']:>12,}"
              f"{c['linear_terms'] / 1e6:>8.0f}M{fmt_gb(row['peak_bytes']):>9}"
              f"{(f'{seed_mem:,.0f}' if seed_mem else '-'):>9}{ratio:>6}"
              f"{row['predicted_seconds']:>9,.0f}{(f'{seed_s:,.0f}' if seed_s else '-'):>12}")
    result = {"context": ctx.describe(), "costs": costs, "rows": rows, "cpu_count": os.cpu_count(),
              "load_average": os.getloadavg()}

    if not args.no_e2e:
        cands = [args.e2e_resolution] if args.e2e_resolution else [96, 64, 48, 32]
        chosen = None
        for r in cands:
            m, _ = zoo.mobilenet_v2(args.e2e_width, r)
            mod = rf.nn.load(m, ctx)
            p = mod.plan()
            t_pred = C.predict_seconds(p, costs, profile=C.limb_profile(mod))
            fits = p.peak_bytes * 1.3 < args.memory_limit_gb * GB and t_pred < args.time_limit_s
            print(f"e2e candidate ({args.e2e_width}, {r}): predicted {fmt_gb(p.peak_bytes)} GB, {t_pred:,.0f} s -> "
                  + ("run" if fits or args.e2e_resolution else "too large for this machine"))
            if fits or args.e2e_resolution:
                chosen = r
                break
        if chosen is not None:
            costs_now = C.measure_costs(ctx, keys, sk)  # re-measured right before the run (shared machine)
            e2e = end_to_end(ctx, args.e2e_width, chosen, args.e2e_batch, costs_now)
            e2e["costs_at_run"] = costs_now
            result["end_to_end"] = e2e
            print(f"\nend to end {e2e['model']}, batch {e2e['batch']}:")
            print(f"  time   measured {e2e['measured_seconds']:,.1f} s vs predicted {e2e['predicted_seconds']:,.1f} s "
                  f"(ratio {e2e['measured_seconds'] / e2e['predicted_seconds']:.2f}); input encryption "
                  f"{e2e['encrypt_input_seconds']:.1f} s")
            print("  predicted parts: " + ", ".join(f"{k} {v:,.1f}" for k, v in e2e["predicted_parts"].items()))
            print(f"  memory predicted peak {fmt_gb(e2e['predicted_peak_bytes'])} GB; measured peak RSS "
                  f"{fmt_gb(e2e['measured_peak_rss_bytes'])} GB (baseline {fmt_gb(e2e['baseline_rss_bytes'])}), "
                  f"ringfire pool in use {fmt_gb(e2e['measured_peak_pool_bytes'])} GB")
            print(f"  counts measured {e2e['measured_counts']}\n         planned  {e2e['plan_counts']}")
            print(f"  vs onnxruntime: max |error| {e2e['max_abs_error_vs_onnxruntime']:.3g} (max |logit| "
                  f"{e2e['max_abs_logit']:.3g}), top-1 agreement {e2e['top1_agreement']:.4f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1, default=float)
        print(f"wrote {args.json}")
    return result


if __name__ == "__main__":
    sys.exit(0 if main() is not None else 1)
