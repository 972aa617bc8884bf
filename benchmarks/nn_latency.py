#!/usr/bin/env python3
"""Latency of one image: inter-axis packing (one ciphertext per image, convolutions as BSGS
products with their nonzero diagonals) against batch-axis packing (one ciphertext per
activation element, the batch in the slots), same parameters, same run.

    python benchmarks/nn_latency.py [--models cnn,resnet20_8] [--images 4] [--skip-batch] [--json out.json]

Models, client-aided ReLU, against onnxruntime on the original model:
- ``cnn``: the digits CNN with average pooling (Conv 1->4 3x3, ReLU, AveragePool 2x2, Gemm),
  trained by the test suite's NumPy trainer; N = 2^13, q = 50 + 40 + 40;
- ``resnet20_8``: ResNet-20 (``ringfire.nn.zoo.resnet20``, random weights, projection
  shortcuts) on 8x8x3 inputs; N = 2^13, q = 60 + 3 x 30.

Inter packing: the first image (which encodes every layer's diagonals) and the mean of the
next ones. Batch packing: one run of ``--images`` images, whose latency is that of the batch.
Beside them, the planner's predictions (``ringfire.nn.costs``, from per-operation costs
measured first in the same run) and the packing ``model.choose_packing`` picks for 1 image
and for ``--images``.
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
import nn_models as M  # noqa: E402

import ringfire as rf  # noqa: E402
from ringfire.nn import costs as C, zoo  # noqa: E402


def models(names):
    if "cnn" in names:
        x_train, y_train, x_test, _ = M.digits_split()
        cnn = M.cnn_train(x_train, y_train, pool="avg")
        yield "digits CNN (avg pool)", M.cnn_onnx(cnn, pool="avg"), x_test, \
            rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=40, special_bits=[60])
    if "resnet20_8" in names:
        net, _ = zoo.resnet20(resolution=8, classes=10, seed=0)
        x = np.random.default_rng(0).uniform(0, 1, (64, 3, 8, 8))
        yield "ResNet-20 8x8 (random weights)", net.SerializeToString(), x, \
            rf.ckks.Context(poly_degree=2**13, coeff_bits=[60, 30, 30, 30], scale_bits=30, special_bits=[60])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="cnn,resnet20_8")
    ap.add_argument("--images", type=int, default=4)
    ap.add_argument("--skip-batch", action="store_true", help="time inter packing only")
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    for name, onnx_bytes, x_all, ctx in models(args.models.split(",")):
        x = x_all[:args.images]
        ref = M.ort_run(onnx_bytes, x)
        model = rf.nn.load(onnx_bytes, ctx, packing="any")
        sk, keys = ctx.keygen(rotations=model.rotations())
        client = rf.nn.LocalClient(ctx, sk, keys)
        costs = C.measure_costs(ctx, keys, sk)
        predicted = C.predict_inter_breakdown(model, costs)
        choices = {n: model.choose_packing(n, costs)["packing"] for n in (1, len(x))}
        seconds, outs = [], []
        for i in range(len(x)):
            t = time.perf_counter()
            out = model(ctx.encrypt_batch(x[i:i + 1], keys, packing="inter"), client=client)
            outs.append(ctx.decrypt_batch(out, sk)[0])
            seconds.append(time.perf_counter() - t)
        got = np.stack(outs)
        row = {"model": name, "N": ctx.poly_degree, "images": len(x), "period": model.last_run["period"],
               "galois_keys": len(model.rotations()),
               "inter_first_image_s": round(seconds[0], 2),
               "inter_per_image_s": round(float(np.mean(seconds[1:])), 2) if len(seconds) > 1 else None,
               "inter_max_error": float(np.max(np.abs(got - ref))),
               "inter_agreement": float(np.mean(got.argmax(1) == ref.argmax(1))),
               "predicted_inter_per_image_s": round(predicted["total"], 2),
               "predicted_inter_encoding_s": round(predicted["encoding"], 2),
               "predicted_batch_s": round(C.predict_batch_seconds(model, costs), 2),
               "planner_choice": {str(n): c for n, c in choices.items()}}
        if not args.skip_batch:
            t = time.perf_counter()
            out = model(ctx.encrypt_batch(x, keys), client=client)
            row["batch_latency_s"] = round(time.perf_counter() - t, 2)
            got = ctx.decrypt_batch(out, sk)
            row["batch_max_error"] = float(np.max(np.abs(got - ref)))
        rows.append(row)
        print(json.dumps(row))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
