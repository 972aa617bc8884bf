#!/usr/bin/env python3
"""ResNet-20 without a client, one image per ciphertext: inter-axis packing (convolutions as
BSGS products with their nonzero diagonals) with bootstraps placed by the runner.

    python benchmarks/nn_bootstrapped_inter.py [--preset toy|N16_BOOT] [--images 2]
        [--spill-dir DIR --ram-limit-gib 15] [--json out.json]

``ringfire.nn.zoo.resnet20`` at 8x8 (random weights, projection shortcuts), calibrated on 64
random inputs, polynomial ReLU; against onnxruntime on the original ReLU model and against the
same polynomial network in the clear. The toy ring (N = 2^12, NOT SECURE) is the default. On
N16_BOOT the 62 Galois keys (made for the user's levels: 1.8 GiB) and the bootstrapping keys
fit this machine, but the diagonals every image reuses do not (50 GiB encoded at N = 2^16):
``--spill-dir`` keeps what exceeds ``--ram-limit-gib`` in files there (``ringfire.memory``).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
import warnings

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from nn_bootstrapped import context, emit, onnxruntime_outputs  # noqa: E402

import ringfire as rf  # noqa: E402
from ringfire.nn import zoo  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", choices=["toy", "N16_BOOT"], default="toy")
    ap.add_argument("--images", type=int, default=2)
    ap.add_argument("--spill-dir", help="spill host memory beyond --ram-limit-gib to files here")
    ap.add_argument("--ram-limit-gib", type=float, default=None)
    ap.add_argument("--json")
    args = ap.parse_args()
    net, _ = zoo.resnet20(resolution=8, classes=10, seed=0)
    onnx_bytes = net.SerializeToString()
    rng = np.random.default_rng(0)
    calibration, x = rng.uniform(0, 1, (64, 3, 8, 8)), rng.uniform(0, 1, (args.images, 3, 8, 8))
    ctx = context(args.preset)
    model = rf.nn.load(onnx_bytes, ctx, activation="poly", calibration=calibration, packing="inter")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        sk, keys = ctx.keygen(rotations=model.rotations(), bootstrap=True)
    keygen = time.perf_counter() - t0
    plan = model.plan()
    print(plan.describe(), file=sys.stderr, flush=True)
    if args.spill_dir:  # after keygen: the keys stay in RAM, the cached diagonals go to files
        rf.memory.spill(args.spill_dir, ram_limit_gib=args.ram_limit_gib)
    seconds, outs = [], []
    for i in range(len(x)):
        t = time.perf_counter()
        outs.append(ctx.decrypt_batch(model(ctx.encrypt_batch(x[i:i + 1], keys, packing="inter")), sk)[0])
        seconds.append(time.perf_counter() - t)
    got = np.stack(outs)
    ref = onnxruntime_outputs(onnx_bytes, x)
    approx = model.plaintext(x, approximate=True)
    run = model.last_run
    row = {"preset": args.preset, "N": ctx.poly_degree, "levels": ctx.max_level, "period": run["period"],
           "galois_keys": len(model.rotations()), "keygen_s": round(keygen, 1),
           "relu_degrees": sorted({p.degree for p in model.polys.values()}),
           "bootstraps_per_image": run["bootstraps_planned_per_sample"],
           "first_image_s": round(seconds[0], 1),
           "per_image_s": round(float(np.mean(seconds[1:])), 1) if len(seconds) > 1 else None,
           "last_image_bootstrap_s": round(run["bootstrap_seconds"], 1),
           "max_error_vs_onnxruntime": float(np.max(np.abs(got - ref))),
           "max_error_vs_polynomial_model": float(np.max(np.abs(got - approx))),
           "top1_agreement": float(np.mean(got.argmax(1) == ref.argmax(1))),
           "max_logit": float(np.max(np.abs(ref))),
           "planned": {"rotations_per_image": plan.counts["rotations_per_sample"],
                       "bootstraps_per_image": plan.counts["bootstraps_per_sample"],
                       "key_gib": round(plan.key_bytes / 2**30, 2),
                       "diagonal_gib": round(plan.counts["diagonal_bytes"] / 2**30, 2),
                       "peak_gib": round(plan.peak_bytes / 2**30, 2)},
           "galois_key_gib": round(keys.galois.nbytes / 2**30, 2),
           "spilled_gib": round(rf.memory.stats()["bytes_spilled"] / 2**30, 2),
           "date": time.strftime("%Y-%m-%d")}
    emit(row, args.json)


if __name__ == "__main__":
    main()
