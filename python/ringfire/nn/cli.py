"""``ringfire infer net.onnx --input x.npy``: encrypted inference from the command line.

Picks CKKS parameters from the model's plan (levels between re-encryptions,
batch size), or a bootstrappable preset with ``--bootstrap``; generates keys,
encrypts the batch (``--packing``: the batch in the slots, one ciphertext per
sample, or the one the planner predicts to finish first), runs the model with an
in-process client for ReLU/MaxPool, decrypts, and reports outputs, agreement with
onnxruntime (the true model), time and memory (predicted and measured). A run
predicted above what the process can get (RAM, cgroup and address-space limits) spills
to the temporary directory, or to ``--spill-dir``, or is refused with the numbers when
the disk cannot take it (:mod:`ringfire.memory_guard`).
"""

from __future__ import annotations

import contextlib
import json
import resource
import sys
import time

import numpy as np


def choose_context(levels: int, batch: int, scale_bits: int = 40, device: str = "cpu"):
    """The smallest 128-bit-secure context with `levels` rescalings and >= batch slots, on `device`."""
    from .. import ckks
    from .model import secure_degree

    levels = max(levels, 1)
    log_n = secure_degree(levels, batch, scale_bits)
    if log_n is None:
        raise ValueError(f"[infer] no 128-bit context has {levels} levels and {batch} slots (N <= 2^17); use "
                         "client-aided activations, --bootstrap (polynomial mode at any depth) or a smaller batch")
    # The last entry sizes the special primes; their count is chosen for speed within the bound.
    return ckks.Context(poly_degree=2**log_n, coeff_bits=[60] + [scale_bits] * levels + [60], scale_bits=scale_bits,
                        device=device)


def _bootstrap_context(preset: str, batch: int, period: int | None = None, device: str = "cpu"):
    """The preset on `device`; with ``period`` (one sample per ciphertext only), bootstrapping
    just the slots a sample's period needs (sparse packing: faster, fewer keys)."""
    from .. import ckks

    ctx = ckks.Context.preset(preset, device=device)
    if not ctx.can_bootstrap:
        raise ValueError(f"[infer] preset {preset!r} reserves no levels for bootstrapping; try N16_BOOT")
    if batch > ctx.slots:
        raise ValueError(f"[infer] a batch of {batch} does not fit {preset}'s {ctx.slots} slots: split it")
    if period is not None and 2 * period <= ctx.slots:
        ctx = ckks.Context.preset(preset, bootstrap={"slots": period}, device=device)
    return ctx


def register(subparsers) -> None:
    p = subparsers.add_parser("infer", help="run an ONNX model on encrypted inputs")
    p.add_argument("model", help="ONNX file")
    p.add_argument("--input", required=True, help=".npy array, batch first")
    p.add_argument("--activation", choices=["client", "poly"], default="client",
                   help="client-aided non-linear layers (default) or fitted polynomials")
    p.add_argument("--poly-degree", type=int, default=None,
                   help="polynomial degree (default 2; with --bootstrap, the planner's choice)")
    p.add_argument("--bootstrap", action="store_true",
                   help="with --activation poly: bootstrap where levels run out, so models of any depth run "
                        "without a client (context: --preset; N16_BOOT holds about 9 GiB of keys)")
    p.add_argument("--preset", default="N16_BOOT", help="with --bootstrap: the bootstrappable context preset")
    p.add_argument("--masking", action="store_true",
                   help="client mode: the key holder decrypts masked values where the layer allows it "
                        "(ReLU-like and MaxPool scaled, Softmax/LayerNorm shifted; see docs/nn.md)")
    p.add_argument("--mask-bits", type=float, default=4.0,
                   help="with --masking: scale masks span 2^-B..2^B (costs up to B bits of precision per layer)")
    p.add_argument("--packing", choices=["batch", "inter", "auto"], default="batch",
                   help="batch: the batch in the slots, one ciphertext per value (throughput; default); inter: one "
                        "ciphertext per sample (latency); auto: the one the planner predicts to finish first, from "
                        "costs measured on this machine")
    p.add_argument("--calibration", help=".npy inputs that set polynomial ranges (default: the input itself)")
    p.add_argument("--max-memory", type=float, default=None, help="refuse runs predicted above this many GiB")
    p.add_argument("--spill-dir", default=None,
                   help="back memory beyond --ram-limit with files in this directory, so runs larger than RAM "
                        "slow down instead of failing (ringfire.memory.spill)")
    p.add_argument("--ram-limit", type=float, default=None,
                   help="with --spill-dir: GiB of ciphertexts and keys kept in RAM (default: 2/3 of RAM)")
    p.add_argument("--dry-run", action="store_true",
                   help="plan, then run the encrypted code path on placeholders (no arithmetic) and stop: "
                        "checks that the run works and measures its memory")
    p.add_argument("--layout", choices=["nchw", "nhwc"], default="nchw",
                   help="layout of image inputs in the .npy (default nchw, the ONNX convention); nhwc is transposed")
    p.add_argument("--server", metavar="URL",
                   help="run on a ringfire serve server instead (MODEL: the model's name there, or an ONNX file "
                        "of that name to check the result against); keys and encryption stay here")
    p.add_argument("--token", help="the server's bearer token (default: $RINGFIRE_TOKEN)")
    p.add_argument("--keys", metavar="DIR",
                   help="with --server: keep this client's keys in DIR (a folder per parameters and rotations), "
                        "made the first time and reused after (the "
                        "server then links its stored copy instead of receiving them again); the secret key in a "
                        "file only this user reads, sealed with $RINGFIRE_KEY_PASSWORD where it is set")
    p.add_argument("--device", default="cpu",
                   help="where the server's work runs: 'cpu' (default) or 'cuda[:N]' (keys, encryption and the "
                        "client-aided layers stay on the host; results are bit-identical to the CPU's)")
    p.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="spread each layer's ciphertexts over a Ray cluster (ringfire[ray]): ADDRESS, e.g. "
                        "127.0.0.1:6379; without it $RAY_ADDRESS or the cluster `ray start` made here")
    p.add_argument("--json", action="store_true")
    p.add_argument("--output", help="write the decrypted outputs to this .npy file")
    p.set_defaults(func=main)


def fit_input(x: np.ndarray, shape: tuple, layout: str) -> np.ndarray:
    """The batch in the model's input shape: NHWC images transposed when asked, flat rows
    of the right size reshaped; anything else refused with both shapes (never guessed)."""
    if x.ndim < 2:
        raise ValueError(f"[infer] the input must be a batch (batch first), got shape {x.shape}")
    if layout == "nhwc":
        if x.ndim != 4:
            raise ValueError(f"[infer] --layout nhwc needs a 4-D batch (N, H, W, C), got shape {x.shape}")
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    if tuple(x.shape[1:]) == shape:
        return x
    if x.ndim == 2 and x.shape[1] == int(np.prod(shape)):
        return x.reshape((x.shape[0],) + shape)  # flat rows in the model's (C, H, W) order
    looks_nhwc = len(shape) == 3 and x.ndim == 4 and tuple(x.shape[1:]) == (shape[1], shape[2], shape[0])
    hint = " (it looks like NHWC: pass --layout nhwc)" if looks_nhwc else ""
    raise ValueError(f"[infer] the model takes inputs of shape {shape} (batch first: (N,) + {shape}), the .npy holds "
                     f"{tuple(x.shape)}{hint}")


def top1_agreement(a, b) -> float:
    return float(np.mean(np.argmax(a.reshape(len(a), -1), 1) == np.argmax(b.reshape(len(b), -1), 1)))


def reference_outputs(model_path, x, model):
    """The model's true outputs: onnxruntime on the ONNX file when installed (an
    independent implementation), else ringfire's own exact plaintext executor."""
    try:
        import onnxruntime as ort
    except ImportError:
        return model.plaintext(x), "ringfire's plaintext model (onnxruntime not installed)"
    session = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    return session.run(None, {name: x.astype(np.float32)})[0].astype(np.float64), "onnxruntime"


def _packings(graph, wanted: str) -> list:
    """The packings to consider: the one asked for, or (auto) both when one ciphertext per
    sample can run the model."""
    from .graph import UnsupportedOperator
    from .inter import period_for

    if wanted != "auto":
        return [wanted]
    try:
        period_for(graph)
    except UnsupportedOperator:
        return ["batch"]
    return ["batch", "inter"]


def _check_memory(peak_bytes: int, args) -> None:
    """Refuses a run predicted above --max-memory, and --ram-limit without --spill-dir. Whether
    the run fits this machine is the memory guard's question (ringfire.memory_guard)."""
    gib = 2**30
    if args.max_memory is not None and peak_bytes > args.max_memory * gib:
        raise ValueError(f"[infer] predicted peak memory {peak_bytes / gib:.2f} GiB exceeds --max-memory "
                         f"{args.max_memory} GiB")
    if args.ram_limit is not None and not args.spill_dir:
        raise ValueError("[infer] --ram-limit sets what stays in RAM when spilling: it needs --spill-dir")


def main(args) -> int:
    from .. import memory, nn
    from ..memory_guard import guard
    from .graph import Graph
    from .inter import period_for

    x = np.load(args.input).astype(np.float64)
    say = (lambda *a: print(*a, file=sys.stderr)) if not args.json else (lambda *a: None)
    graph = Graph.from_onnx(args.model)
    x = fit_input(x, tuple(graph.input_shape), args.layout)
    if args.masking and args.activation != "client":
        raise ValueError("[infer] --masking masks what the key holder decrypts: it needs --activation client")
    options = dict(activation=args.activation, poly_degree=args.poly_degree, masking=args.masking,
                   mask_bits=args.mask_bits)
    if args.bootstrap and args.activation != "poly":
        raise ValueError("[infer] --bootstrap refreshes polynomial activations: it needs --activation poly")
    if args.activation == "poly":
        options["calibration"] = np.load(args.calibration) if args.calibration else x
    candidates = _packings(graph, args.packing)
    if args.bootstrap:
        ctx = _bootstrap_context(args.preset, x.shape[0] if "batch" in candidates else 1,
                                 period_for(graph) if candidates == ["inter"] else None, args.device)
        options["bootstrap"] = True
    else:  # plan with a deep provisional context, then pick the real one
        probe = choose_context(12, 1)
        levels = max(nn.Model(graph, probe, packing=p, **options).plan().levels_needed for p in candidates)
        slots = max([x.shape[0] if "batch" in candidates else 1]
                    + ([period_for(graph)] if "inter" in candidates else []))
        ctx = choose_context(levels, slots, device=args.device)
    model = nn.Model(Graph.from_onnx(args.model), ctx, packing="any" if len(candidates) > 1 else candidates[0],
                     **options)
    say(f"context: {ctx.describe()}")
    plans = {p: model._plan(p) for p in candidates}
    for p, plan in plans.items():
        say((f"{p} packing: " if len(plans) > 1 else "") + plan.describe())
    _check_memory(max(plan.peak_bytes for plan in plans.values()), args)
    spill = memory.spill(args.spill_dir, ram_limit_gib=args.ram_limit) if args.spill_dir else None
    try:
        # Keys, encryption and the run: past what this process can get, spill or refuse
        # before the first of them (the dry run allocates next to nothing).
        with guard(0 if args.dry_run else max(plan.peak_bytes for plan in plans.values()), "ringfire infer",
                   fixes="--spill-dir DIR and --ram-limit GIB, a smaller batch in --input, or another --packing"):
            return _run(args, model, ctx, plans, candidates, x, say, memory, spill)
    finally:
        if spill is not None:
            spill.stop()


def _run(args, model, ctx, plans, candidates, x, say, memory, spill) -> int:
    """Dry run, or keys, encryption, the model, decryption and the report."""
    from .. import nn

    if args.dry_run:
        plan = model.plan(dry_run=True)
        if args.json:
            print(json.dumps({"context": ctx.describe(), "levels_needed": plan.levels_needed,
                              "predicted_peak_bytes": plan.peak_bytes, "planned_activation_bytes": plan.activation_bytes,
                              "dry_run_activation_bytes": plan.dry_run_bytes}, indent=2))
        else:
            print(plan.notes[-1])
        return 0
    t0 = time.perf_counter()
    # Spilling: the keys, made once and read all run long, go to the files (the kernel caches
    # the ones read most), so the RAM under the limit serves the temporaries, which would
    # otherwise be written back to disk over and over.
    with memory.cold() if spill is not None else contextlib.nullcontext():
        sk, keys = ctx.keygen(rotations=model.rotations() if "inter" in candidates else (), bootstrap=args.bootstrap)
    choice = None
    if len(candidates) > 1:
        from .costs import measure_costs
        choice = model.choose_packing(x.shape[0], measure_costs(ctx, keys, sk))
        say(f"packing: {choice['packing']} ({choice['reason']})")
    packing = choice["packing"] if choice else candidates[0]
    model.packing, plan = packing, plans[packing]
    enc = ctx.encrypt_batch(x, keys, packing=packing, level=nn.client.encryption_level(ctx, model.input_level, x))
    t1 = time.perf_counter()
    executor = getattr(args, "executor", None)  # --ray: made by the command line (ringfire.distributed)
    out = model(enc, client=nn.LocalClient(ctx, sk, keys), progress=None if not args.json else False,
                executor=executor)
    t2 = time.perf_counter()
    spilled = memory.stats()["bytes_spilled"]
    y = ctx.decrypt_batch(out, sk)
    t3 = time.perf_counter()
    ref, reference = reference_outputs(args.model, x, model)
    agree = top1_agreement(y, ref)
    report = {
        "context": ctx.describe(), "device": ctx.device, "batch": int(x.shape[0]), "output_shape": list(y.shape),
        "packing": packing,
        "bootstrap_slots": ctx.bootstrap_plan().slots if args.bootstrap else None,
        "packing_choice": choice,
        "levels_needed": plan.levels_needed, "predicted_peak_bytes": plan.peak_bytes,
        "measured_max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "spilled_bytes": spilled,
        "seconds": {"keygen_encrypt": t1 - t0, "inference": t2 - t1, "decrypt": t3 - t2},
        "images_per_second": x.shape[0] / (t2 - t1), "reference": reference, "top1_agreement": agree,
        "max_abs_error": float(np.max(np.abs(y - ref))), "counts": model.last_run,
    }
    if executor is not None:
        report["distributed"] = executor.summary()
    if args.activation == "poly":  # how much of the difference the polynomials themselves explain
        approx = model.plaintext(x, approximate=True)
        report["top1_agreement_with_polynomial_model"] = top1_agreement(y, approx)
        report["max_abs_error_vs_polynomial_model"] = float(np.max(np.abs(y - approx)))
    if args.output:
        np.save(args.output, y)
    if args.json:
        report["outputs"] = y.tolist()
        print(json.dumps(report, indent=2))
    else:
        print(f"outputs: shape {y.shape}; first row {np.round(y.reshape(len(y), -1)[0][:10], 4)}")
        print(f"top-1 agreement with {reference}: {agree * 100:.2f}%  (max |error| {report['max_abs_error']:.2e})")
        if args.activation == "poly":
            print(f"  with the polynomial model: {report['top1_agreement_with_polynomial_model'] * 100:.2f}% (max "
                  f"|error| {report['max_abs_error_vs_polynomial_model']:.2e})")
        print(f"time: keygen+encrypt {t1 - t0:.2f} s, inference {t2 - t1:.2f} s "
              f"({report['images_per_second']:.1f} images/s), decrypt {t3 - t2:.2f} s")
        if executor is not None:
            d = report["distributed"]
            print(f"ray: {d['tasks']} tasks on {d['nodes']} nodes ({d['retried']} run again), "
                  f"{d['bytes_out'] / 2**20:.1f} MiB out, {d['bytes_back'] / 2**20:.1f} MiB back")
        print(f"memory: predicted peak {plan.peak_bytes / 2**30:.3f} GiB, measured max RSS "
              f"{report['measured_max_rss_bytes'] / 2**30:.3f} GiB"
              + (f", {spilled / 2**30:.3f} GiB in spill files at the end" if spill is not None else ""))
    return 0
