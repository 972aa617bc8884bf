#!/usr/bin/env python3
"""Encrypted inference larger than RAM: ``ringfire.memory.spill`` against an all-RAM run.

    python benchmarks/nn_spill.py [--resolution 48] [--ram-limit-gib 3] [--both] [--json out.json]

MobileNetV2(0.35, resolution) from ``ringfire.nn.zoo`` (random weights, seed 0) at batch 2048
with seed 001's parameters (N = 2^12, q = 30 + 22 + 22, P = 30), client-aided ReLU, against
onnxruntime. With ``--ram-limit-gib L`` the pool's blocks beyond L GiB come from files in
``--spill-dir`` (default: the temporary directory). ``--both`` runs the same model in RAM first
and then spilled, each in its own process, with the same deterministic seed, and checks that the
decrypted outputs are bit-identical (spilling moves bytes, never changes them).

Resolution 48 (8.6 GB) fits this machine both ways: it measures the slowdown. Resolution 96
(34.4 GB predicted) fits only spilled. Each row: inference seconds, pool and RSS peaks (anonymous
memory, and file pages resident), bytes in spill files at the end, and the error against
onnxruntime.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from nn_scale import PeakSampler  # noqa: E402

import ringfire as rf  # noqa: E402
from ringfire.nn import zoo  # noqa: E402

GB = 2**30
SEED = bytes(range(32))


def run_once(resolution: int, batch: int, ram_limit_gib: float | None, spill_dir: str, outputs: str | None) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deterministic seed makes the two runs comparable, and says so
        ctx = rf.ckks.Context(poly_degree=2**12, coeff_bits=[30, 22, 22], scale_bits=22, special_bits=[30],
                              insecure_deterministic_seed=SEED)
    net = zoo.mobilenet_v2(0.35, resolution)[0]
    onnx_bytes = net.SerializeToString()
    x = np.random.default_rng(0).uniform(0, 1, (batch, 3, resolution, resolution))
    model = rf.nn.load(onnx_bytes, ctx)
    plan = model.plan()
    sk, keys = ctx.keygen()
    spill = rf.memory.spill(spill_dir, ram_limit_gib=ram_limit_gib) if ram_limit_gib is not None else None
    with PeakSampler(period=0.5) as peaks:
        enc = ctx.encrypt_batch(x, keys)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = model(enc, client=rf.nn.LocalClient(ctx, sk, keys))
        del enc
    got = ctx.decrypt_batch(out, sk)
    stats = rf.memory.stats()
    if spill is not None:
        spill.stop()
    if outputs:
        np.save(outputs, got)
    import onnxruntime as ort
    session = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    ref = session.run(None, {session.get_inputs()[0].name: x.astype(np.float32)})[0].astype(np.float64)
    return {"model": f"MobileNetV2(0.35, {resolution})", "batch": batch, "ram_limit_gib": ram_limit_gib,
            "inference_s": round(model.last_run["seconds"], 1), "predicted_peak_gib": round(plan.peak_bytes / GB, 2),
            "pool_peak_gib": round(peaks.peak_pool / GB, 2),
            "rss_anon_peak_gib": round(peaks.peak_anon / GB, 2),
            "rss_file_peak_gib": round(peaks.peak_file / GB, 2),
            "spilled_gib_at_end": round(stats["bytes_spilled"] / GB, 2),
            "spill_files_mapped_gib": round(stats["bytes_mapped"] / GB, 2),
            "max_abs_error_vs_onnxruntime": float(np.max(np.abs(got - ref))),
            "top1_agreement": float(np.mean(got.argmax(1) == ref.argmax(1))),
            "total_ram_gib": round(rf.memory.total_ram_bytes() / GB, 1), "date": time.strftime("%Y-%m-%d")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--resolution", type=int, default=48)
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--ram-limit-gib", type=float, default=None, help="spill beyond this (default: no spilling)")
    ap.add_argument("--spill-dir", default=tempfile.gettempdir())
    ap.add_argument("--both", action="store_true", help="in RAM, then spilled at --ram-limit-gib (default 3)")
    ap.add_argument("--outputs", help=argparse.SUPPRESS)  # where a child run leaves its outputs
    ap.add_argument("--json")
    args = ap.parse_args()
    if not args.both:
        row = run_once(args.resolution, args.batch, args.ram_limit_gib, args.spill_dir, args.outputs)
        print(json.dumps(row), flush=True)
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps([row], indent=1))
        return
    rows, outputs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for limit in (None, args.ram_limit_gib if args.ram_limit_gib is not None else 3.0):
            out = os.path.join(tmp, f"out_{limit}.npy")
            cmd = [sys.executable, __file__, "--resolution", str(args.resolution), "--batch", str(args.batch),
                   "--spill-dir", args.spill_dir, "--outputs", out]
            if limit is not None:
                cmd += ["--ram-limit-gib", str(limit)]
            result = subprocess.run(cmd, check=True, capture_output=True, text=True)
            rows.append(json.loads(result.stdout.strip().splitlines()[-1]))
            outputs.append(np.load(out))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    identical = bool(np.array_equal(outputs[0], outputs[1]))
    slowdown = rows[1]["inference_s"] / rows[0]["inference_s"] - 1
    print("| model | batch | RAM limit | inference s | predicted peak GiB | pool peak GiB | anon RSS peak GiB "
          "| file pages peak GiB | in spill files GiB | max error vs onnxruntime |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        limit = "none" if r["ram_limit_gib"] is None else f"{r['ram_limit_gib']:g} GiB"
        print(f"| {r['model']} | {r['batch']} | {limit} | {r['inference_s']} | {r['predicted_peak_gib']} | "
              f"{r['pool_peak_gib']} | {r['rss_anon_peak_gib']} | {r['rss_file_peak_gib']} | "
              f"{r['spilled_gib_at_end']} | {r['max_abs_error_vs_onnxruntime']:.1e} |")
    print(f"slowdown spilled vs in RAM: {slowdown * 100:+.1f} %; outputs bit-identical: {identical}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"rows": rows, "slowdown": slowdown,
                                                       "outputs_identical": identical}, indent=1))


if __name__ == "__main__":
    main()
