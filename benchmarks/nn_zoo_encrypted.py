#!/usr/bin/env python3
"""torchvision classifiers run encrypted end to end, against torch: batch packing with
client-aided activations on the smallest 128-bit context the plan needs.

    python benchmarks/nn_zoo_encrypted.py [--models resnet18,mobilenet_v3_small] [--images 256]
                                          [--resolution 32] [--json out.json] [--packing inter]
                                          [--spill-dir DIR --ram-limit-gib G] [--pool-cache-gib G]

Each model (a torchvision name, or ``vit_tiny``: torchvision's VisionTransformer at 32x32 with
8x8 patches, 2 layers, width 32): torchvision's architecture with random weights (seed 0; no
download) and its BatchNorm statistics calibrated on N(0, 1) inputs (``torch_model``), in eval mode, ``--images``
inputs drawn from N(0, 1) at ``resolution`` x ``resolution``. The model
is exported by torch and loaded by ``rf.nn.load(module, ctx, example_input=...)``, planned,
and run once on all the images (one slot each: up to ``ctx.slots`` cost the same). Reported:
the plan's levels, predicted peak memory and client round trips; the measured time, peak
RSS and ringfire pool, bytes to and from the key holder; top-1 agreement and the largest
logit error against torch on the same inputs. With ``--spill-dir``, ciphertexts beyond
``--ram-limit-gib`` of the pool live in memory-mapped files there (``rf.memory.spill``):
EfficientNet-B0's plan asks for 21 GiB at 32x32. With ``--packing inter`` each image is a
ciphertext of its own (use a few images): the first run encodes the model's diagonals, and the
row's ``second_image_s`` times the first image again with them cached; ``--diagonal-cache-gib``
bounds what stays cached (0: every image encodes them again, for models whose diagonals outgrow
memory: ResNet-18 and EfficientNet-B0 at 32x32). ``--pool-cache-gib`` bounds the freed blocks the
memory pool keeps for reuse (``rf.memory.set_cache_limit``); the row reports the pool's cached bytes
and the RSS beyond the pool at the RSS peak.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import pathlib
import platform
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
from ringfire.nn.cli import choose_context  # noqa: E402

GIB = 2**30


# torchvision's ViTs (vit_b_16 and up: 86 M parameters and more) are beyond two cores encrypted;
# its VisionTransformer class at a small size is the same graph (class token, learned positions,
# pre-norm encoder blocks with torch's MultiheadAttention, GELU), at 32x32 with 8x8 patches.
SMALL_MODELS = {
    "vit_tiny": dict(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64),
}


def torch_model(name: str, calibrate: bool = True):
    """torchvision's ``name`` (or one of SMALL_MODELS) with random weights (seed 0). A ViT's
    classification head, which torchvision initialises to zero (every logit equal), gets random
    weights. With ``calibrate``, its BatchNorm
    statistics are those of N(0, 1) inputs (eight batches of 64 in training mode, a cumulative
    average): random initialisation leaves some networks' signal vanishing -- MobileNetV3-Small's
    logits are within 1e-10 of each other at 32x32 -- which makes top-1 agreement meaningless."""
    import torch
    import torchvision

    torch.manual_seed(0)
    if name in SMALL_MODELS:
        module = torchvision.models.VisionTransformer(**SMALL_MODELS[name])
    else:
        module = torchvision.models.get_model(name, weights=None)
    if isinstance(module, torchvision.models.VisionTransformer):
        torch.nn.init.normal_(module.heads.head.weight, std=0.5)
        torch.nn.init.normal_(module.heads.head.bias, std=0.1)
    if calibrate:
        norms = [m for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
        for m in norms:
            m.reset_running_stats()
            m.momentum = None  # a cumulative average over the calibration batches
        module.train()
        generator = torch.Generator().manual_seed(1)
        with torch.no_grad():
            for _ in range(8):
                module(torch.randn(64, 3, 32, 32, generator=generator))
    return module.eval()


def run(name: str, images: int, resolution: int, calibrate: bool = True, spill_dir: str | None = None,
        ram_limit_gib: float | None = None, packing: str = "batch", diagonal_cache_gib: float | None = None,
        pool_cache_gib: float | None = None) -> dict:
    import torch

    module = torch_model(name, calibrate)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((images, 3, resolution, resolution)).astype(np.float32)
    with torch.no_grad():
        want = module(torch.from_numpy(x)).double().numpy()
    start = time.perf_counter()
    probe = choose_context(2, images)  # the exporter and the plan, to learn the levels needed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        probe_plan = rf.nn.load(module, probe, example_input=torch.from_numpy(x[:1]), packing=packing).plan()
        # Batch packing: a slot per image. Inter packing: a ciphertext per image, whose slots hold
        # the sample's layout (its period).
        slots = images if packing == "batch" else int(probe_plan.counts.get("period", images))
        ctx = choose_context(probe_plan.levels_needed, slots)
        model = rf.nn.load(module, ctx, example_input=torch.from_numpy(x[:1]), packing=packing)
    if diagonal_cache_gib is not None:
        model.diagonal_cache_bytes = int(diagonal_cache_gib * GIB)
    if pool_cache_gib is not None:
        rf.memory.set_cache_limit(int(pool_cache_gib * GIB))
    load_s = time.perf_counter() - start
    plan = model.plan()
    row = {"model": name, "packing": packing, "diagonal_cache_bytes": model.diagonal_cache_bytes,
           "pool_cache_limit": rf.memory.cache_limit(),
           "resolution": resolution, "images": images, "N": ctx.poly_degree,
           "batchnorm_calibrated": calibrate,
           "context": ctx.describe(),
           "levels_needed": plan.levels_needed, "load_s": load_s,
           "predicted_peak_gib": plan.peak_bytes / GIB,
           # What the run itself should add (the keys are made before it): the figure to hold the
           # measured rises against.
           "predicted_beyond_keys_gib": (plan.peak_bytes - plan.key_bytes) / GIB,
           "predicted_parts_gib": {part: getattr(plan, part + "_bytes") / GIB for part in
                                   ("activation", "key", "workspace", "staging", "pool_cache")},
           "plan_counts": dict(plan.counts)}
    print(f"{name}: N=2^{int(np.log2(ctx.poly_degree))}, {plan.levels_needed} levels, predicted peak "
          f"{row['predicted_peak_gib']:.1f} GiB, {plan.counts.get('linear_terms', 0):,} linear terms, "
          f"{plan.counts.get('client_round_trips', 0):,} client round trips", file=sys.stderr, flush=True)
    sk, keys = ctx.keygen(rotations=model.rotations())
    keys.expand()  # keys expand on first use: not inside the measured run
    client = rf.nn.LocalClient(ctx, sk, keys)
    base_rss, base_pool = PeakSampler.rss(), int(rf._core.host_pool_stats()["bytes_in_use"])
    spilling = rf.memory.spill(spill_dir, ram_limit_gib=ram_limit_gib) if spill_dir else contextlib.nullcontext()
    with spilling, PeakSampler() as peak:
        level = rf.nn.client.encryption_level(ctx, model.input_level, x)
        enc = ctx.encrypt_batch(x, keys, packing=packing, level=level)
        start = time.perf_counter()
        out = model(enc, client=client)
        seconds = time.perf_counter() - start
        rounds = (client.round_trips, client.ciphertexts_received, client.bytes_received, client.bytes_sent)
        del enc
        memory = rf.memory.stats()
    got = ctx.decrypt_batch(out, sk)
    # The first image again, now that the diagonals are encoded (with none kept, it would only
    # repeat the first run).
    if packing == "inter" and model.diagonal_cache_bytes != 0:
        again = ctx.encrypt_batch(x[:1], keys, packing=packing, level=level)
        start = time.perf_counter()
        model(again, client=client)
        row["second_image_s"] = time.perf_counter() - start
    if spill_dir:
        row.update(ram_limit_gib=memory["ram_limit"] / GIB,
                   spilled_gib_at_end=memory["bytes_spilled"] / GIB)
    row.update({
        "encrypted_s": seconds, "s_per_image": seconds / images,
        "measured_rss_peak_gib": (peak.peak_rss - base_rss) / GIB,
        # The kernel's peak since the run began (VmHWM, reset at its start): no sample missed.
        "measured_rss_hwm_gib": None if peak.peak_rss_hwm is None else (peak.peak_rss_hwm - base_rss) / GIB,
        "measured_pool_peak_gib": (peak.peak_pool - base_pool) / GIB,
        "pool_cached_at_rss_peak_gib": peak.cached_at_peak / GIB,
        "rss_beyond_pool_at_rss_peak_gib": peak.beyond_pool_at_peak / GIB,
        # Batch packing counts a round trip per ciphertext, inter packing per round (one
        # ciphertext each); the bytes are the ciphertexts' words each way (LocalClient).
        "client_round_trips": model.last_run.get("client_round_trips", rounds[0]),
        "ciphertexts_to_key_holder": rounds[1],
        "bytes_to_key_holder": rounds[2],
        "bytes_from_key_holder": rounds[3],
        "top1_agreement": float(np.mean(got.argmax(1) == want.argmax(1))),
        "max_abs_error": float(np.max(np.abs(got - want))),
        "max_abs_logit": float(np.max(np.abs(want))),
    })
    print(f"{name}: {seconds:.1f} s for {images} images, top-1 agreement {row['top1_agreement']:.4f}, "
          f"max error {row['max_abs_error']:.2e} (logits up to {row['max_abs_logit']:.2f})", file=sys.stderr,
          flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="mobilenet_v3_small,resnet18")
    ap.add_argument("--images", type=int, default=256)
    ap.add_argument("--resolution", type=int, default=32)
    ap.add_argument("--no-calibrate", action="store_true",
                    help="keep torchvision's initial BatchNorm statistics (see torch_model)")
    ap.add_argument("--json", help="write the rows here (after each model)")
    ap.add_argument("--spill-dir", help="ciphertexts beyond --ram-limit-gib go to files here (rf.memory.spill)")
    ap.add_argument("--ram-limit-gib", type=float, help="the pool's RAM limit while spilling (default: 2/3 of RAM)")
    ap.add_argument("--packing", choices=("batch", "inter"), default="batch",
                    help="batch: a slot per image (throughput); inter: a ciphertext per image (latency)")
    ap.add_argument("--diagonal-cache-gib", type=float,
                    help="inter packing: the most GiB of encoded diagonals kept between images (default: all)")
    ap.add_argument("--pool-cache-gib", type=float,
                    help="the most GiB of freed blocks the memory pool keeps for reuse (default: no bound)")
    ap.add_argument("--row", help=argparse.SUPPRESS)  # internal: run one model, write its row to this file
    args = ap.parse_args()
    if args.row:
        try:
            row = run(args.models, args.images, args.resolution, not args.no_calibrate, args.spill_dir,
                      args.ram_limit_gib, args.packing, args.diagonal_cache_gib, args.pool_cache_gib)
        except Exception as e:  # noqa: BLE001 - a model that cannot run is a row that says why
            row = {"model": args.models, "error": f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"}
            print(f"{args.models}: {row['error']}", file=sys.stderr, flush=True)
        pathlib.Path(args.row).write_text(json.dumps(row))
        return
    out = {"machine": platform.processor() or platform.machine(), "threads": rf._core.num_threads(), "rows": []}
    for name in args.models.split(","):
        # Each model in a process of its own: the memory pool of one does not crowd the next.
        with tempfile.NamedTemporaryFile(suffix=".json") as row_file:
            command = [sys.executable, __file__, "--models", name, "--images", str(args.images), "--resolution",
                       str(args.resolution), "--packing", args.packing, "--row", row_file.name] + (
                ["--no-calibrate"] if args.no_calibrate else []) + (
                ["--diagonal-cache-gib", str(args.diagonal_cache_gib)] if args.diagonal_cache_gib is not None else []) + (
                ["--pool-cache-gib", str(args.pool_cache_gib)] if args.pool_cache_gib is not None else [])
            if args.spill_dir:
                command += ["--spill-dir", args.spill_dir] + (
                    ["--ram-limit-gib", str(args.ram_limit_gib)] if args.ram_limit_gib else [])
            done = subprocess.run(command, check=False)
            text = pathlib.Path(row_file.name).read_text()
        out["rows"].append(json.loads(text) if text else {"model": name, "error": f"exit status {done.returncode}"})
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
