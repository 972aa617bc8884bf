#!/usr/bin/env python3
"""Encrypted inference per model, against onnxruntime: the BENCHMARKS.md table.

    python benchmarks/nn_per_model.py [--models mlp,cnn,resnet20_8] [--batch-resnet 256] [--json out.json]

Models (batch-axis packing, client-aided activations, plain and with ``masking=True``):
- ``mlp``, ``cnn``: the digits MLP (64-32-10) and LeNet-style CNN (Conv 1->4 3x3, ReLU,
  MaxPool 2x2, Gemm) trained by the test suite's NumPy trainer (tests/nn_models.py), on the
  360 held-out 8x8 images; N = 2^13, q = 50 + 40 + 40, P = 60;
- ``resnet20_8``: ResNet-20 (``ringfire.nn.zoo.resnet20``: BatchNorm, projection shortcuts,
  random weights, seed 0) on 8x8x3 inputs uniform in [0, 1]; seed 001's parameters
  (N = 2^12, q = 30 + 22 + 22, P = 30), and N = 2^13 with three 30-bit levels, plain and
  masked (masking needs the third level);
- ``resnet20_32``: the same network at 32x32, planned and predicted (``ringfire.nn.costs``)
  unless ``--run-resnet20-32`` (about 20 minutes on two cores);
- ``mobilenet_48`` (only when named): MobileNetV2(0.35, 48) at batch 2048 with seed 001's parameters
  (about 10 minutes, 9 GB).

Each row: max |logit error| and top-1 agreement against onnxruntime on the original model,
inference seconds, images per second, and memory: the plan's predicted peak against the
measured peak of ringfire's pool (above its level before the run) and of the process RSS.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the shared trainer
sys.path.insert(0, str(HERE))
import nn_models as M  # noqa: E402
from nn_scale import PeakSampler  # noqa: E402

import ringfire as rf  # noqa: E402
from ringfire.nn import costs as C, zoo  # noqa: E402
from ringfire.nn.cli import choose_context  # noqa: E402

GB = 2**30


def digits_context():
    return rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=40, special_bits=[60])


def seed001_context():
    return rf.ckks.Context(poly_degree=2**12, coeff_bits=[30, 22, 22], scale_bits=22, special_bits=[30])


def onnxruntime_outputs(onnx_bytes, x):
    import onnxruntime as ort
    session = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x.astype(np.float32)})[0].astype(np.float64)


def measure(name, onnx_bytes, ctx, x, masking):
    model = rf.nn.load(onnx_bytes, ctx, masking=masking)
    plan = model.plan()
    if not plan.fits:
        return {"model": name, "masking": masking, "error": f"needs {plan.levels_needed} levels"}
    ref = onnxruntime_outputs(onnx_bytes, x)
    sk, keys = ctx.keygen()
    keys.expand()  # keys expand on first use: not inside the measured run
    base_rss, base_pool = PeakSampler.rss(), int(rf._core.host_pool_stats()["bytes_in_use"])
    with PeakSampler() as peak:
        enc = ctx.encrypt_batch(x, keys)
        out = model(enc, client=rf.nn.LocalClient(ctx, sk, keys))
        del enc
    got = ctx.decrypt_batch(out, sk)
    seconds = model.last_run["seconds"]
    return {"model": name, "masking": masking, "batch": len(x), "N": ctx.poly_degree,
            "levels_needed": plan.levels_needed,
            "max_abs_error": float(np.max(np.abs(got - ref))), "max_abs_logit": float(np.max(np.abs(ref))),
            "top1_agreement": float(np.mean(got.argmax(1) == ref.argmax(1))),
            "inference_s": seconds, "images_per_s": len(x) / seconds,
            "predicted_peak_bytes": plan.peak_bytes, "measured_pool_peak_bytes": peak.peak_pool - base_pool,
            "measured_rss_peak_bytes": peak.peak_rss - base_rss,
            "masked_values": model.last_run["masked_values"], "client_round_trips": model.last_run[
                "client_round_trips"]}


def predicted(name, onnx_bytes, ctx, batch, costs):
    model = rf.nn.load(onnx_bytes, ctx)
    plan = model.plan()
    parts = C.predict_breakdown(plan, costs, profile=C.limb_profile(model))
    return {"model": name, "masking": False, "batch": batch, "N": ctx.poly_degree, "levels_needed": plan.levels_needed,
            "predicted_s": parts["total"], "predicted_peak_bytes": plan.peak_bytes}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="mlp,cnn,resnet20_8,resnet20_32")
    ap.add_argument("--batch-resnet", type=int, default=256)
    ap.add_argument("--run-resnet20-32", action="store_true")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args()
    wanted = args.models.split(",")
    rows = []

    def record(row):
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)

    if "mlp" in wanted or "cnn" in wanted:
        x_train, y_train, x_test, _ = M.digits_split()
        ctx = digits_context()
        if "mlp" in wanted:
            onnx_bytes = M.mlp_onnx(M.mlp_train(x_train, y_train))
            for masking in (False, True):
                record(measure("digits MLP 64-32-10", onnx_bytes, ctx, x_test, masking))
        if "cnn" in wanted:
            onnx_bytes = M.cnn_onnx(M.cnn_train(x_train.reshape(-1, 1, 8, 8), y_train, pool="max"), pool="max")
            for masking in (False, True):
                record(measure("digits CNN (LeNet-style)", onnx_bytes, ctx, x_test.reshape(-1, 1, 8, 8), masking))
    ctx = seed001_context()
    x = np.random.default_rng(0).uniform(0, 1, (args.batch_resnet, 3, 8, 8))
    if "resnet20_8" in wanted:
        onnx_bytes = zoo.resnet20(8)[0].SerializeToString()
        record(measure("ResNet-20 8x8", onnx_bytes, ctx, x, False))
        # Masked, each unmask-conv-mask stretch takes 3 levels: N = 2^13, q = 60 + 3 x 30, P = 60,
        # with the unmasked run beside it on the same parameters.
        deeper = choose_context(3, len(x), scale_bits=30)
        for masking in (False, True):
            record(measure("ResNet-20 8x8", onnx_bytes, deeper, x, masking))
    if "mobilenet_48" in wanted:  # seed 001's network at the largest resolution this machine holds at batch 2048
        onnx_bytes = zoo.mobilenet_v2(0.35, 48)[0].SerializeToString()
        big = np.random.default_rng(0).uniform(0, 1, (2048, 3, 48, 48))
        record(measure("MobileNetV2(0.35, 48)", onnx_bytes, ctx, big, False))
    if "resnet20_32" in wanted:
        onnx_bytes = zoo.resnet20(32)[0].SerializeToString()
        if args.run_resnet20_32:
            big = np.random.default_rng(0).uniform(0, 1, (args.batch_resnet, 3, 32, 32))
            record(measure("ResNet-20 32x32", onnx_bytes, ctx, big, False))
        else:
            record(predicted("ResNet-20 32x32", onnx_bytes, ctx, args.batch_resnet, C.measure_costs(ctx)))
    print("| model | masking | batch | N | max logit error | top-1 agreement | inference s | images/s "
          "| predicted peak GB | pool peak GB | RSS peak GB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['model']} | {r['masking']} | | | {r['error']} | | | | | | |")
        elif "predicted_s" in r:
            print(f"| {r['model']} | no | {r['batch']} | 2^{int(np.log2(r['N']))} | (planned only) | | "
                  f"{r['predicted_s']:.0f} predicted | | {r['predicted_peak_bytes'] / GB:.2f} | | |")
        else:
            print(f"| {r['model']} | {'yes' if r['masking'] else 'no'} | {r['batch']} | 2^{int(np.log2(r['N']))} | "
                  f"{r['max_abs_error']:.1e} | {r['top1_agreement'] * 100:.1f} % | {r['inference_s']:.1f} | "
                  f"{r['images_per_s']:.1f} | {r['predicted_peak_bytes'] / GB:.3f} | "
                  f"{r['measured_pool_peak_bytes'] / GB:.3f} | {r['measured_rss_peak_bytes'] / GB:.3f} |")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
