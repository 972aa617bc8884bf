#!/usr/bin/env python3
"""ResNet-20 at 32x32 without a client, one image per ciphertext and per node-task, projected
onto 1-64 Ray nodes by the cost model (``ringfire.distributed.costmodel``).

    python benchmarks/distributed_projection.py [--image-seconds 374.6] [--first-image-seconds 591.5]
        [--images 16,64,256] [--json out.json]

A run of this model on Ray is out of this 2-vCPU machine's reach (each node holds 50 GiB of
encoded diagonals, an image takes minutes), so its profile is assembled from what was measured
and what the plan says:

- an image's compute: ``--image-seconds`` (default 374.6 s: the next image of the 2026-11-25
  N16_BOOT run, two threads, diagonals spilled; BENCHMARKS.md, "ResNet-20 at 32x32 (CIFAR-10's
  shape) on N16_BOOT"), and each node's setup, its first image's excess (``--first-image-seconds``,
  591.5 s: the diagonals encoded once per node);
- the bytes: one ciphertext to each task and one back, at the levels the plan gives, and the
  plan's keys once per node;
- the driver's part: encrypting and decrypting an image at N16_BOOT, and the codec's seconds per
  byte, measured here;
- the link's task overhead: ``--task-overhead`` (default 2.8 ms, measured through Ray's object
  store on this machine, BENCHMARKS.md "Scale-out on Ray").

A node is one worker running the measured two-thread image (``cores=1`` in the model's terms).
The projection is arithmetic on those inputs, not a measurement.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
import warnings

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from nn_bootstrapped import context  # noqa: E402

import ringfire as rf  # noqa: E402
from ringfire.distributed import costmodel  # noqa: E402
from ringfire.nn import zoo  # noqa: E402

GIB = 2**30


def ciphertext_bytes(ctx, level: int) -> int:
    return 2 * (level + 1) * ctx.poly_degree * 8


def assemble(args) -> tuple[dict, costmodel.Profile]:
    onnx_bytes = zoo.resnet20(resolution=32, classes=10, seed=0)[0].SerializeToString()
    calibration = np.random.default_rng(0).uniform(0, 1, (64, 3, 32, 32))
    period = rf.nn.inter_period(onnx_bytes)
    ctx = context("N16_BOOT", period)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = rf.nn.load(onnx_bytes, ctx, activation="poly", calibration=calibration, packing="inter")
        plan = model.plan()
        sk, keys = ctx.keygen()  # encryption and the codec's rates need no evaluation keys
    image = np.random.default_rng(1).uniform(0, 1, (1, 3, 32, 32))
    start = time.perf_counter()
    enc = ctx.encrypt_batch(image, keys, packing="inter")
    ctx.decrypt_batch(enc, sk)
    serial = time.perf_counter() - start
    load, save = costmodel._codec_seconds_per_byte(ctx, keys)
    sent, back = ciphertext_bytes(ctx, ctx.max_level), ciphertext_bytes(ctx, 0)
    facts = {"plan_key_bytes": plan.key_bytes, "plan_diagonal_bytes": plan.counts["diagonal_bytes"],
             "bootstraps_per_image": plan.counts["bootstraps_per_sample"],
             "driver_seconds_per_image": serial, "ciphertext_bytes_to_task": sent,
             "ciphertext_bytes_back": back, "load_seconds_per_byte": load, "save_seconds_per_byte": save,
             "image_seconds": args.image_seconds,
             "setup_seconds": args.first_image_seconds - args.image_seconds}

    def profile(images: int) -> costmodel.Profile:
        stage = costmodel.Stage("samples", images, images * args.image_seconds, images, images * sent, 1.0,
                                images * back, facts["setup_seconds"])
        return costmodel.Profile([stage], images * serial, 0.0, load, save, plan.key_bytes)

    return facts, profile


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--image-seconds", type=float, default=374.6)
    ap.add_argument("--first-image-seconds", type=float, default=591.5)
    ap.add_argument("--task-overhead", type=float, default=0.0028)
    ap.add_argument("--images", default="16,64,256")
    ap.add_argument("--json")
    args = ap.parse_args()
    counts = [int(i) for i in args.images.split(",") if i.strip().isdigit() and int(i) > 0]
    if not counts or len(counts) != len(args.images.split(",")):
        ap.error(f"--images takes positive image counts separated by commas, got {args.images!r}")
    if not 0 < args.image_seconds <= args.first_image_seconds:
        ap.error("--image-seconds must be positive and at most --first-image-seconds")
    facts, profile = assemble(args)
    print(f"plan: keys {facts['plan_key_bytes'] / GIB:.2f} GiB a node, diagonals "
          f"{facts['plan_diagonal_bytes'] / GIB:.1f} GiB, {facts['bootstraps_per_image']} bootstraps an image; "
          f"the driver encrypts and decrypts an image in {facts['driver_seconds_per_image']:.3f} s", file=sys.stderr)
    rows = []
    print("| images | Gb/s | keys sent | " + " | ".join(f"{n} nodes" for n in (1, 2, 4, 8, 16, 64)) + " |")
    for images in counts:
        for gbps in (1, 10):
            for keys in (False, True):
                options = dict(bandwidth=gbps * 1.25e8, task_overhead=args.task_overhead, include_keys=keys)
                cells = []
                for nodes in (1, 2, 4, 8, 16, 64):
                    p = costmodel.predict(profile(images), nodes, 1, **options)
                    e = costmodel.efficiency(profile(images), nodes, 1, **options)
                    rows.append({"images": images, "gbps": gbps, "keys_sent": keys, "nodes": nodes,
                                 "seconds": p["total"], "efficiency": e, "parts": p})
                    cells.append(f"{p['total'] / 60:.0f} min ({e:.2f})")
                print(f"| {images} | {gbps} | {'yes' if keys else 'no'} | " + " | ".join(cells) + " |")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"date": time.strftime("%Y-%m-%d"), "facts": facts,
                                                        "rows": rows}, indent=1, default=float))


if __name__ == "__main__":
    main()
