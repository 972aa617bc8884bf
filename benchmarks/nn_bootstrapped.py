#!/usr/bin/env python3
"""Non-interactive encrypted inference deeper than one chain: bootstrapped polynomial
activations, against onnxruntime on the original ReLU model.

    python benchmarks/nn_bootstrapped.py [--preset N16_BOOT|toy] [--hidden 32,32] [--json out.json]

The model: an MLP 64-hidden...-10 with ReLU, trained by scikit-learn on the digits
(tests/nn_models.py ``deep_mlp_onnx``), run on the 360 held-out 8x8 images in one batch
(batch-axis packing: the same run serves up to N/2 images, 32768 on N16_BOOT). Each ReLU is
the minimax polynomial of the degree the planner picks (the fewest bootstrapped ciphertexts among
depths max_level - 1 to - 3: degrees 127, 63, 31 on N16_BOOT's 9 levels; ``--poly-degree`` pins
it); the planner bootstraps each tensor whose next operator needs more levels than it has.
Printed: the plan (bootstraps, levels), key generation and inference seconds, seconds per
bootstrap, top-1 agreement and max logit error against onnxruntime, accuracy of both, and
the error against the same polynomial model in the clear (what bootstrapping adds).

Memory: N16_BOOT needs about 9 GiB (keys and DFT plaintexts 5.9 GiB, a bootstrap's temporaries
1.1 GiB, the activations 1 GiB); where the process cannot get the plan's peak, the run spills to
the temporary directory or stops before it starts (``ringfire.memory_guard``). The toy ring needs under 2 GiB.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import platform
import resource
import sys
import time
import warnings

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the shared trainer
sys.path.insert(0, str(HERE))
import nn_models as M  # noqa: E402
from nn_scale import PeakSampler  # noqa: E402

import ringfire as rf  # noqa: E402


def context(preset: str, bootstrap_slots: int | None = None):
    """N16_BOOT or the toy ring with 9 user levels; ``bootstrap_slots``: sparse bootstrapping
    where it is at most N/4."""
    name, overrides = preset, {}
    if preset != "N16_BOOT":
        name = "N12_BOOT_INSECURE"
        overrides = dict(coeff_bits=[60] + [40] * 9 + [45] * 3 + [60] * 11 + [56] * 3, dnum=9)
    if bootstrap_slots is not None and 4 * bootstrap_slots <= rf.ckks.PRESETS[name]["poly_degree"]:  # else: N/2
        overrides["bootstrap"] = {"slots": bootstrap_slots}
    with warnings.catch_warnings():  # the toy ring is insecure by design and says so
        warnings.simplefilter("ignore")
        return rf.ckks.Context.preset(name, **overrides)


def onnxruntime_outputs(onnx_bytes, x):
    import onnxruntime as ort
    session = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x.astype(np.float32)})[0].astype(np.float64)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", choices=["N16_BOOT", "toy"], default="N16_BOOT")
    ap.add_argument("--hidden", default="32,32", help="hidden layer widths, comma-separated")
    ap.add_argument("--poly-degree", type=int, help="pin the activations' degree (default: the planner's choice)")
    ap.add_argument("--json", help="write the row here")
    args = ap.parse_args()
    hidden = tuple(int(h) for h in args.hidden.split(","))
    x_train, y_train, x_test, y_test = M.digits_split()
    onnx_bytes, _ = M.deep_mlp_onnx(x_train, y_train, hidden=hidden)
    ctx = context(args.preset)
    model = rf.nn.load(onnx_bytes, ctx, activation="poly", calibration=x_train, poly_degree=args.poly_degree)
    plan = model.plan()
    print(model.describe())
    print(plan.describe())
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk, keys = ctx.keygen(bootstrap=True)
        # The relinearization key expands at its first use: counted with keygen, not inside the
        # measured run. The bootstrapping keys stay as keygen makes them (expanded per use), as
        # the plan counts them.
        keys.relin.expand()
    t1 = time.perf_counter()
    after_keygen_rss, after_keygen_pool = PeakSampler.rss(), int(rf._core.host_pool_stats()["bytes_in_use"])
    with PeakSampler() as peak:
        enc = ctx.encrypt_batch(x_test, keys)
        out = model(enc, progress=None)
    t2 = time.perf_counter()
    got = ctx.decrypt_batch(out, sk)
    ref = onnxruntime_outputs(onnx_bytes, x_test)
    approx = model.plaintext(x_test, approximate=True)
    run = model.last_run
    row = {
        "preset": args.preset, "poly_degree_N": ctx.poly_degree, "levels": ctx.max_level, "hidden": list(hidden),
        "batch": len(x_test), "slots": ctx.slots,
        "relu_degrees": sorted({p.degree for p in model.polys.values()}),
        "relu_max_errors": [round(p.max_error(), 5) for p in model.polys.values()],
        "bootstraps": run["bootstraps"], "planned_bootstraps": plan.counts["bootstraps"],
        "keygen_s": round(t1 - t0, 1), "inference_s": round(t2 - t1, 1),
        "bootstrap_s": round(run["bootstrap_seconds"], 1),
        "seconds_per_bootstrap": round(run["bootstrap_seconds"] / max(1, run["bootstraps"]), 2),
        "images_per_s_at_full_batch": round(ctx.slots / (t2 - t1), 1),
        "agreement_vs_onnxruntime": float(np.mean(got.argmax(1) == ref.argmax(1))),
        "max_logit_error_vs_onnxruntime": float(np.max(np.abs(got - ref))),
        "max_error_vs_polynomial_model": float(np.max(np.abs(got - approx))),
        "accuracy_encrypted": float(np.mean(got.argmax(1) == y_test)),
        "accuracy_onnxruntime": float(np.mean(ref.argmax(1) == y_test)),
        "predicted_peak_gib": round(plan.peak_bytes / 2**30, 2),
        "rss_after_keygen_gib": round(after_keygen_rss / 2**30, 2),
        "pool_after_keygen_gib": round(after_keygen_pool / 2**30, 2),
        "rss_peak_inference_gib": round(peak.peak_rss / 2**30, 2),
        "pool_peak_inference_gib": round(peak.peak_pool / 2**30, 2),
        "rss_peak_process_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
        "machine": f"{platform.machine()}, {rf.num_threads()} threads",
        "date": time.strftime("%Y-%m-%d"),
    }
    emit(row, args.json)


def emit(row: dict, json_path: str | None) -> None:
    """Prints the row one measure per line, and writes it as JSON when asked."""
    for k, v in row.items():
        print(f"{k:34s} {v}")
    if json_path:
        pathlib.Path(json_path).write_text(json.dumps(row, indent=2) + "\n")


if __name__ == "__main__":
    main()
