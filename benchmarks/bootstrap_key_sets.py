#!/usr/bin/env python3
"""Bootstrapping keys with hoisted against chained rotations (``bootstrap={"chained_rotations":
True}``, docs/bootstrapping.md): what the client makes and sends, and what each bootstrap costs.

    python benchmarks/bootstrap_key_sets.py [--preset N16_BOOT] [--rounds 2] [--json out.json]
    python benchmarks/bootstrap_key_sets.py --models [--json out.json]

Each round runs one process per setting, the settings in turn (this host drifts by a tenth
within minutes), and each process reports: the Galois keys and the plan's bytes on the wire,
the bytes ``keys.bootstrap.save_to`` writes, the client's ``keygen(bootstrap=True)`` time, four
bootstraps of one secret-key ciphertext in a row (the first expands the relinearization key and
builds the DFT plaintexts), the precision of each against NumPy (bits: -log2 of the largest
error) and the process's peak RSS. Then, from the plans alone, the sparse bootstraps of
ResNet-20 at 8x8 and 32x32 with inter packing (the period the model's packing needs).
``--models``: instead, the whole key set a client of those two models sends, made and streamed
to a counting sink for each setting: the relinearization key, the master keys the server derives
the models' Galois keys from, and the bootstrapping keys (the bytes only: those keygens also build
each bootstrap's DFT plaintexts, so their times are not the client's).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np

SETTINGS = ("hoisted", "chained")


class _CountingSink:
    """A binary file's write that only counts (the keys are streamed, never held whole)."""

    def __init__(self):
        self.bytes = 0

    def write(self, data) -> int:
        size = memoryview(data).nbytes
        self.bytes += size
        return size


def one_process(preset: str, setting: str) -> dict:
    import ringfire as rf
    warnings.simplefilter("ignore")
    ctx = rf.ckks.Context.preset(preset, bootstrap={"chained_rotations": setting == "chained"})
    plan = ctx.bootstrap_plan()
    start = time.perf_counter()
    sk, keys = ctx.keygen(bootstrap=True)
    keygen_s = time.perf_counter() - start
    sink = _CountingSink()
    keys.bootstrap.save_to(sink)
    ev = ctx.evaluator(keys)
    x = np.random.default_rng(2).uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, sk)
    seconds, bits = [], []
    for _ in range(4):
        start = time.perf_counter()
        out = ev.bootstrap(ct)
        seconds.append(time.perf_counter() - start)
        bits.append(float(-np.log2(np.max(np.abs(ctx.decrypt(out, sk).real - x)))))
    return {"setting": setting, "preset": preset, "galois_keys": plan.rotation_keys,
            "plan_wire_bytes": plan.wire_bytes, "saved_bytes": sink.bytes, "key_switches": plan.key_switches,
            "keygen_s": keygen_s, "bootstrap_s": seconds, "bits": bits,
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def model_contexts():
    """(model, slots, setting, context) for ResNet-20 at 8x8 and 32x32 with inter packing: N16_BOOT
    with a sparse bootstrap over the model's period, hoisted and chained."""
    import ringfire as rf
    from ringfire.nn import zoo
    warnings.simplefilter("ignore")
    for resolution in (8, 32):
        onnx = zoo.resnet20(resolution=resolution, classes=10, seed=0)[0].SerializeToString()
        period = rf.nn.inter_period(onnx)
        for setting in SETTINGS:
            ctx = rf.ckks.Context.preset("N16_BOOT", bootstrap={"slots": period,
                                                                "chained_rotations": setting == "chained"})
            yield f"ResNet-20 {resolution}x{resolution}, inter packing", period, setting, ctx
            del ctx  # its bootstrapper's plaintexts go before the next context's are built


def model_plans() -> list[dict]:
    rows = []
    for model, period, setting, ctx in model_contexts():
        plan = ctx.bootstrap_plan()
        rows.append({"model": model, "slots": period, "setting": setting, "galois_keys": plan.rotation_keys,
                     "plan_wire_bytes": plan.wire_bytes, "key_switches": plan.key_switches})
    return rows


def model_key_sets() -> list[dict]:
    rows = []
    for model, period, setting, ctx in model_contexts():
        _, keys = ctx.keygen(bootstrap=True, master_rotations=True)
        sent = {}
        for kind in ("relin", "master", "bootstrap"):
            sink = _CountingSink()
            getattr(keys, kind).save_to(sink)
            sent[kind] = sink.bytes
        rows.append({"model": model, "slots": period, "setting": setting, "sent_bytes": sent,
                     "total_bytes": sum(sent.values())})
        print(f"{model} ({period} slots), {setting}: " + ", ".join(f"{kind} {size / 1e9:.3f}"
                                                                 for kind, size in sent.items())
              + f", in all {rows[-1]['total_bytes'] / 1e9:.3f} GB", flush=True)
        del keys, ctx
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="N16_BOOT")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--models", action="store_true", help="the key sets of ResNet-20 8x8 and 32x32 instead")
    ap.add_argument("--one", choices=SETTINGS, help=argparse.SUPPRESS)  # a child process's setting
    args = ap.parse_args()
    if args.models:
        rows = model_key_sets()
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"benchmark": "bootstrap_key_sets --models", "rows": rows}, f, indent=1)
        return
    if args.one:
        print(json.dumps(one_process(args.preset, args.one)))
        return
    runs = []
    for r in range(args.rounds):
        for setting in SETTINGS:
            done = subprocess.run([sys.executable, __file__, "--preset", args.preset, "--one", setting],
                                  capture_output=True, text=True, check=True)
            runs.append({"round": r + 1, **json.loads(done.stdout.strip().splitlines()[-1])})
            row = runs[-1]
            print(f"round {r + 1} {setting:8} keys {row['galois_keys']:3}  sent {row['saved_bytes'] / 1e9:.3f} GB  "
                  f"keygen {row['keygen_s']:.2f} s  bootstraps " + " ".join(f"{s:.2f}" for s in row["bootstrap_s"])
                  + f" s  bits {min(row['bits']):.1f}  peak RSS {row['peak_rss_bytes'] / 2**30:.2f} GiB", flush=True)
    print(f"\n{args.preset}, {args.rounds} rounds: medians over the rounds; 'later' = the 3rd and 4th bootstrap")
    print("| setting | Galois keys | sent (GB) | keygen (s) | first bootstrap (s) | later bootstraps (s) | "
          "least bits | peak RSS (GiB) |")
    print("|---|---|---|---|---|---|---|---|")
    for setting in SETTINGS:
        mine = [row for row in runs if row["setting"] == setting]
        later = [s for row in mine for s in row["bootstrap_s"][2:]]
        print(f"| {setting} | {mine[0]['galois_keys']} | {mine[0]['saved_bytes'] / 1e9:.3f} | "
              f"{statistics.median(row['keygen_s'] for row in mine):.2f} | "
              f"{statistics.median(row['bootstrap_s'][0] for row in mine):.2f} | "
              f"{min(later):.2f}-{max(later):.2f} (median {statistics.median(later):.2f}) | "
              f"{min(min(row['bits']) for row in mine):.1f} | "
              f"{max(row['peak_rss_bytes'] for row in mine) / 2**30:.2f} |")
    plans = model_plans()
    print("\nSparse bootstraps of ResNet-20 (plans: Galois keys, bytes on the wire, key switches)")
    for row in plans:
        print(f"  {row['model']} ({row['slots']} slots), {row['setting']}: {row['galois_keys']} keys, "
              f"{row['plan_wire_bytes'] / 1e9:.3f} GB, {row['key_switches']} key switches")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "bootstrap_key_sets", "preset": args.preset, "runs": runs, "model_plans": plans},
                      f, indent=1)


if __name__ == "__main__":
    main()
