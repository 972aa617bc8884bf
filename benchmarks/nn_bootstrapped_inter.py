#!/usr/bin/env python3
"""ResNet-20 without a client, one image per ciphertext: inter-axis packing (convolutions as
BSGS products with their nonzero diagonals) with bootstraps placed by the runner.

    python benchmarks/nn_bootstrapped_inter.py [--preset toy|N16_BOOT] [--resolution 8|16|32]
        [--trained tests/data/resnet20_digits32.onnx] [--images 2]
        [--spill-dir DIR --ram-limit-gib 15] [--bootstrap-slots period|full] [--device cuda] [--json out.json]

``ringfire.nn.zoo.resnet20`` (random weights, projection shortcuts) at 8x8 by default,
calibrated on 64 random inputs, polynomial ReLU; against onnxruntime on the original ReLU model
and against the same polynomial network in the clear. The toy ring (N = 2^12, NOT SECURE,
1024 slots: 8x8 only) is the default. On N16_BOOT the Galois keys (made for the user's levels:
30 MiB each) and the bootstrapping keys fit this machine, but the diagonals every image reuses
do not (50 GiB encoded at 32x32 in the multiplexed layout): ``--spill-dir`` keeps them in files
there (the runner makes them cold, ``ringfire.memory.cold``) with whatever else exceeds
``--ram-limit-gib``.

The context bootstraps only the slots of the model's period (``rf.nn.inter_period``; sparse
packing, where the period is at most N/4: one EvalMod instead of two, fewer keys) unless
``--bootstrap-slots full``.

Memory: the toy ring needs under 2 GiB. On N16_BOOT the plan predicts 50.4 GiB at 8x8 (keys
9.1, workspace 41.0); where the process cannot get that, the run spills to the temporary
directory by itself (a warning says where and how much: the excess over two thirds of what is
available) or stops before it starts with the numbers (``ringfire.memory_guard``), and
``--spill-dir`` chooses the directory.

``--trained`` runs the trained 32x32 network of ``train_resnet20.py`` instead (no CIFAR-10 here:
digits upsampled to 3x32x32), calibrated on 128 training images: onnxruntime's accuracy with
ReLU and the polynomial network's in the clear on all 360 held-out images, then the first
``--images`` of them encrypted.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import platform
import resource
import sys
import time
import warnings

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from nn_bootstrapped import context, emit, onnxruntime_outputs  # noqa: E402

import ringfire as rf  # noqa: E402
from ringfire.nn import zoo  # noqa: E402


def inputs(args):
    """(ONNX bytes, calibration inputs, test inputs, their labels or None)."""
    r = args.resolution
    rng = np.random.default_rng(0)
    if args.trained:  # trained weights: digits at 32x32 (benchmarks/train_resnet20.py)
        sys.path.insert(0, str(HERE.parent / "tests"))
        import nn_models as M
        xtr, _, xte, yte = M.digits_split()
        return (pathlib.Path(args.trained).read_bytes(), M.cifar_shaped(xtr[:128]).astype(np.float64),
                M.cifar_shaped(xte).astype(np.float64), yte)
    net, _ = zoo.resnet20(resolution=r, classes=10, seed=0)
    return net.SerializeToString(), rng.uniform(0, 1, (64, 3, r, r)), rng.uniform(0, 1, (args.images, 3, r, r)), None


def machine() -> str:
    """The CPU (vendor, family, model) and how many the process may use: timings compare
    only on the same machine."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return (f"{fields.get('model name', platform.processor() or 'unknown CPU')} (cpu family "
            f"{fields.get('cpu family', '?')}, model {fields.get('model', '?')}), {len(os.sched_getaffinity(0))} CPUs")


def disk_written_bytes() -> int | None:
    """Bytes this process caused to be written to disk so far (Linux), or None."""
    try:
        with open("/proc/self/io") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("write_bytes:"))
    except (OSError, StopIteration):
        return None


def trace_layers() -> None:
    """Wraps each operator's inter-packing run so every layer prints its time: where a long first
    image (which encodes the diagonals) spends it."""
    import dataclasses

    from ringfire.nn import inter

    for name, op in list(inter.OPERATORS.items()):
        if getattr(op, "inter", None) is None:
            continue

        def traced(runner, node, *rest, _run=op.inter.run, _name=name):
            t = time.perf_counter()
            out = _run(runner, node, *rest)
            print(f"    {_name} {node.outputs[0]}: {time.perf_counter() - t:.2f} s", file=sys.stderr, flush=True)
            return out

        inter.OPERATORS[name] = dataclasses.replace(op, inter=dataclasses.replace(op.inter, run=traced))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", choices=["toy", "N16_BOOT"], default="toy")
    ap.add_argument("--resolution", type=int, help="input height and width (default 8; CIFAR-10: 32)")
    ap.add_argument("--trained", metavar="ONNX", help="the trained 32x32 ResNet-20 of train_resnet20.py, run on "
                                                     "the 360 held-out digits (all in the clear, --images encrypted)")
    ap.add_argument("--images", type=int, default=2)
    ap.add_argument("--spill-dir", help="spill host memory beyond --ram-limit-gib to files here")
    ap.add_argument("--ram-limit-gib", type=float, default=None)
    ap.add_argument("--cold-keys", action="store_true",
                    help="with --spill-dir: make the keys (and the bootstrap's DFT diagonals) cold too, so the RAM "
                         "under the limit serves the temporaries and the kernel caches the keys it reads most")
    ap.add_argument("--bootstrap-slots", choices=["period", "full"], default="period",
                    help="bootstrap the slots of the model's period (sparse packing, the default) or all N/2")
    ap.add_argument("--device", default=None,
                    help="where the server's work runs ('cuda', 'cuda:N'; default: the CPU)")
    ap.add_argument("--trace-layers", action="store_true", help="print each layer's time as it runs (stderr)")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.trace_layers:
        trace_layers()
    if args.trained and args.resolution not in (None, 32):
        ap.error("--trained runs the 32x32 model")
    args.resolution = args.resolution or (32 if args.trained else 8)
    onnx_bytes, calibration, tests, labels = inputs(args)
    x = tests[:args.images]
    period = rf.nn.inter_period(onnx_bytes)
    ctx = context(args.preset, period if args.bootstrap_slots == "period" else None)
    model = rf.nn.load(onnx_bytes, ctx, activation="poly", calibration=calibration, packing="inter")
    clear = {}
    if labels is not None:  # the polynomial network in the clear on every held-out image
        relu = onnxruntime_outputs(onnx_bytes, tests)
        poly = np.concatenate([model.plaintext(tests[i:i + 64], approximate=True) for i in range(0, len(tests), 64)])
        clear = {"clear_images": len(tests), "accuracy_relu_onnxruntime": float(np.mean(relu.argmax(1) == labels)),
                 "accuracy_polynomial_clear": float(np.mean(poly.argmax(1) == labels)),
                 "agreement_polynomial_clear_vs_onnxruntime": float(np.mean(poly.argmax(1) == relu.argmax(1)))}
        print(clear, file=sys.stderr, flush=True)
    if args.spill_dir and args.cold_keys:  # before keygen: the keys go to the files too
        rf.memory.spill(args.spill_dir, ram_limit_gib=args.ram_limit_gib)
    with warnings.catch_warnings(), (rf.memory.cold() if args.cold_keys else contextlib.nullcontext()):
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        sk, keys = ctx.keygen(rotations=model.rotations(), bootstrap=True)
    keygen = time.perf_counter() - t0
    print(f"keygen {keygen:.1f} s", file=sys.stderr, flush=True)
    plan = model.plan()
    print(plan.describe(), file=sys.stderr, flush=True)
    if args.spill_dir and not args.cold_keys:  # after keygen: the keys stay in RAM, the cached diagonals go to files
        rf.memory.spill(args.spill_dir, ram_limit_gib=args.ram_limit_gib)
    seconds, outs, written = [], [], []
    for i in range(len(x)):
        t, before = time.perf_counter(), disk_written_bytes()

        def progress(done, total, label, t=t):  # one line per layer: where a long first image spends its time
            print(f"  image {i + 1}, {time.perf_counter() - t:7.1f} s: {done}/{total} {label}", file=sys.stderr, flush=True)

        enc = ctx.encrypt_batch(x[i:i + 1], keys, packing="inter")
        outs.append(ctx.decrypt_batch(model(enc, device=args.device, progress=progress), sk)[0])
        seconds.append(time.perf_counter() - t)
        written.append(None if before is None else round((disk_written_bytes() - before) / 1e9, 1))
        print(f"image {i + 1}: {seconds[-1]:.1f} s, {written[-1]} GB written", file=sys.stderr, flush=True)
    got = np.stack(outs)
    ref = onnxruntime_outputs(onnx_bytes, x)
    approx = model.plaintext(x, approximate=True)
    run = model.last_run
    usage = resource.getrusage(resource.RUSAGE_SELF)
    row = {"preset": args.preset, "resolution": x.shape[-1], "weights": "trained" if args.trained else "random",
           "N": ctx.poly_degree, "levels": ctx.max_level, "period": run["period"], "layout": run["layout"],
           "bootstrap_slots": ctx.bootstrap_plan().slots, "bootstrap_keys_gib": round(ctx.bootstrap_plan().key_bytes / 2**30, 2),
           "galois_keys": len(model.rotations()), "keygen_s": round(keygen, 1),
           "relu_degrees": sorted({p.degree for p in model.polys.values()}),
           "bootstraps_per_image": run["bootstraps_planned_per_sample"],
           "first_image_s": round(seconds[0], 1),
           "per_image_s": round(float(np.mean(seconds[1:])), 1) if len(seconds) > 1 else None,
           "last_image_bootstrap_s": round(run["bootstrap_seconds"], 1),
           "max_error_vs_onnxruntime": float(np.max(np.abs(got - ref))),
           "max_error_vs_polynomial_model": float(np.max(np.abs(got - approx))),
           "top1_agreement": float(np.mean(got.argmax(1) == ref.argmax(1))),
           "top1_agreement_vs_polynomial_model": float(np.mean(got.argmax(1) == approx.argmax(1))),
           "max_logit": float(np.max(np.abs(ref))), **clear,
           "planned": {"diagonals": plan.counts["diagonals"],
                       "rotations_per_image": plan.counts["rotations_per_sample"],
                       "bootstraps_per_image": plan.counts["bootstraps_per_sample"],
                       "key_gib": round(plan.key_bytes / 2**30, 2),
                       "diagonal_gib": round(plan.counts["diagonal_bytes"] / 2**30, 2),
                       "peak_gib": round(plan.peak_bytes / 2**30, 2)},
           "galois_key_gib": round(keys.galois.nbytes / 2**30, 2),
           "spilled_gib": round(rf.memory.stats()["bytes_spilled"] / 2**30, 2), "cold_keys": args.cold_keys,
           "max_rss_gib": round(usage.ru_maxrss / 2**20, 2),  # anonymous + file pages
           "disk_read_gb": round(usage.ru_inblock * 512 / 1e9, 1),  # getrusage: 512-byte blocks
           "disk_written_gb": round(usage.ru_oublock * 512 / 1e9, 1),
           "disk_written_gb_per_image": written,  # the first image encodes the diagonals
           "device": args.device or "cpu", "machine": machine(), "date": time.strftime("%Y-%m-%d")}
    emit(row, args.json)


if __name__ == "__main__":
    main()
