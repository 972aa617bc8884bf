#!/usr/bin/env python3
"""Encrypted inference throughput and latency on scikit-learn's digits (8x8).

Trains the MLP (64-32-10) and the CNN (Conv 1->4 3x3, ReLU, pool, Gemm) of the
test-suite (tests/nn_models.py), exports them to ONNX, and measures:

* batch-axis packing: the 360 held-out images in one batch (images/s, s/batch);
* inter-axis packing (MLP only): one image per ciphertext (s/image);

with client-aided ReLU (plain, and masked: ``masking=True``) and with a degree-2
polynomial. Accuracy and top-1 agreement with the plaintext model are printed alongside.
``--device cpu,cuda`` runs every configuration on each device in the same process (the
GPU rows end with a device synchronisation, so their time includes all queued work).

    python benchmarks/nn_digits.py [--threads 1] [--device cpu,cuda] [--models cnn] [--modes client] [--json]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))  # the shared trainer
import nn_models as M  # noqa: E402

import ringfire as rf  # noqa: E402


def run(model, ctx, x, packing, keys, sk, approximate):
    client = rf.nn.LocalClient(ctx, sk, keys)
    t0 = time.perf_counter()
    enc = ctx.encrypt_batch(x, keys, packing=packing)
    t1 = time.perf_counter()
    out = model(enc, client=client)
    ctx.synchronize()
    t2 = time.perf_counter()
    y = ctx.decrypt_batch(out, sk)
    t3 = time.perf_counter()
    ref = model.plaintext(x, approximate=approximate)
    return y, ref, {"encrypt_s": t1 - t0, "inference_s": t2 - t1, "decrypt_s": t3 - t2}


def _measure(name, mode, onnx_bytes, x, x_train, y_test, shallow, deep, args) -> list[dict]:
    """Rows for one model and activation mode: batch packing, and inter packing for the MLP."""
    activation = "poly" if mode == "poly" else "client"
    ctx = shallow if activation == "client" else deep
    calib = x_train if name == "mlp" else x_train.reshape(-1, 1, 8, 8)
    model = rf.nn.load(onnx_bytes, ctx, activation=activation, calibration=calib, masking=(mode == "client-masked"))
    sk, keys = ctx.keygen(rotations=model.rotations() if name == "mlp" else [])
    keys.expand()  # seeded keys expand on first use: not part of an inference's time
    rows = []
    for packing in ["batch"] + (["inter"] if name == "mlp" else []):
        xs = x if packing == "batch" else x[:args.inter_samples]
        y, ref, t = run(model, ctx, xs, packing, keys, sk, approximate=(mode == "poly"))
        row = {"model": name, "activation": mode, "packing": packing, "device": ctx.device, "images": len(xs),
               "N": ctx.poly_degree, "levels": ctx.max_level,
               "accuracy": float(np.mean(np.argmax(y, 1) == y_test[:len(xs)])),
               "agreement": float(np.mean(np.argmax(y, 1) == np.argmax(ref, 1))),
               "max_logit_error": float(np.max(np.abs(y - ref))), **t,
               "images_per_s": len(xs) / t["inference_s"],
               "s_per_image_latency": t["inference_s"] / len(xs) if packing == "inter" else t["inference_s"]}
        rows.append(row)
        print(f"{name:4} {mode:6} {packing:5} {ctx.device:6} {len(xs):4} images  acc {row['accuracy']:.4f}  agree "
              f"{row['agreement']:.4f}  err {row['max_logit_error']:.1e}  inference {t['inference_s']:.2f} s"
              f"  ({row['images_per_s']:.1f} img/s)", file=sys.stderr)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--inter-samples", type=int, default=8, help="images timed with inter-axis packing")
    ap.add_argument("--device", default="cpu", help="comma list of devices, e.g. 'cpu,cuda'")
    ap.add_argument("--models", default="mlp,cnn", help="comma list: mlp, cnn")
    ap.add_argument("--modes", default="client,client-masked,poly", help="comma list: client, client-masked, poly")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.threads:
        rf.set_num_threads(args.threads)
    x_train, y_train, x_test, y_test = M.digits_split()
    mlp = M.mlp_train(x_train, y_train)
    cnn = M.cnn_train(x_train.reshape(-1, 1, 8, 8), y_train, pool="max")
    nets = {"mlp": (M.mlp_onnx(mlp), x_test), "cnn": (M.cnn_onnx(cnn, pool="max"), x_test.reshape(-1, 1, 8, 8))}
    rows = []
    for device in args.device.split(","):
        shallow = rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=40, special_bits=[60],
                                  device=device)
        deep = rf.ckks.Context(poly_degree=2**14, coeff_bits=[60, 40, 40, 40, 40, 40], scale_bits=40,
                               special_bits=[60], device=device)
        for name, (onnx_bytes, x) in nets.items():
            if name not in args.models.split(","):
                continue
            for mode in args.modes.split(","):
                if name == "cnn" and mode == "poly":
                    continue  # MaxPool has no polynomial form
                rows += _measure(name, mode, onnx_bytes, x, x_train, y_test, shallow, deep, args)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print("| model | activation | packing | device | images | N | accuracy | agreement | max logit err | inference s | "
          "images/s | latency s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['model']} | {r['activation']} | {r['packing']} | {r['device']} | {r['images']} | "
              f"2^{int(np.log2(r['N']))} | "
              f"{r['accuracy']:.4f} | {r['agreement']:.4f} | {r['max_logit_error']:.1e} | {r['inference_s']:.2f} | "
              f"{r['images_per_s']:.1f} | {r['s_per_image_latency']:.2f} |")


if __name__ == "__main__":
    main()
