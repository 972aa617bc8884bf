#!/usr/bin/env python3
"""The torchvision classification zoo, as torch exports it: which models load for encrypted
inference at a small input, which plan, and why each one that does not.

    python benchmarks/nn_zoo.py [--models all|resnet18,...] [--resolution 32] [--timeout 240]
        [--max-params 150e6] [--json out.json]

Each model is built with random weights (``weights=None``: nothing is downloaded), put in eval
mode and run once by torch at ``--resolution`` (a model torch itself refuses at that size is
reported as such), then given to ``rf.nn.load(module, ctx, example_input=x)`` (torch's own
exporter, static shapes folded at load) and planned with batch packing and with inter packing
(one image per ciphertext) on N16_D30 (30 levels, client-aided activations). Every model runs in
its own process under ``--timeout``; models above ``--max-params`` are listed, not exported
(their float32 export alone takes several GiB). Nothing is encrypted here: this is the
load-and-plan table of the inference issue; the encrypted runs are benchmarks/nn_per_model.py's.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import time
import warnings


def first_line(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}".strip().splitlines()[0]
    return text[:220]


def one(name: str, resolution: int) -> dict:
    import torch
    import torchvision

    import ringfire as rf
    warnings.simplefilter("ignore")
    torch.manual_seed(0)
    row = {"model": name, "resolution": resolution}
    module = torchvision.models.get_model(name, weights=None).eval()
    row["params"] = sum(p.numel() for p in module.parameters())
    x = torch.randn(1, 3, resolution, resolution)
    try:
        with torch.no_grad():
            module(x)
    except Exception as e:  # noqa: BLE001 - torch's own refusal is the finding
        row["torch"] = first_line(e)
        return row
    ctx = rf.ckks.Context.preset("N16_D30")
    for packing in ("batch", "inter"):
        t0 = time.perf_counter()
        try:
            model = rf.nn.load(module, ctx, example_input=x, packing=packing)
            plan = model.plan()
        except Exception as e:  # noqa: BLE001 - the loader's refusal (operator, node) is the finding
            row[packing] = {"error": first_line(e), "seconds": time.perf_counter() - t0}
            continue
        row[packing] = {"levels_needed": plan.levels_needed, "fits": plan.fits,
                        "peak_gib": plan.peak_bytes / 2**30, "counts": {k: v for k, v in plan.counts.items()
                                                                       if isinstance(v, (int, float, str))},
                        "seconds": time.perf_counter() - t0}
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="all")
    ap.add_argument("--resolution", type=int, default=32)
    ap.add_argument("--timeout", type=float, default=240)
    ap.add_argument("--max-params", type=float, default=150e6)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.resolution)), flush=True)
        return
    import torchvision
    names = (torchvision.models.list_models(module=torchvision.models) if args.models == "all"
             else args.models.split(","))
    rows = []
    for name in names:
        params = None
        if args.models == "all":  # the size first, without building the model's weights twice
            import torch
            try:
                with torch.device("meta"):
                    params = sum(p.numel() for p in torchvision.models.get_model(name, weights=None).parameters())
            except Exception:  # noqa: BLE001 - a model that cannot be built without data: its process sizes it
                params = None
        if params is not None and params > args.max_params:
            rows.append({"model": name, "params": params, "skipped": f"over {args.max_params:.0f} parameters"})
        else:
            try:
                out = subprocess.run([sys.executable, __file__, "--one", name, "--resolution", str(args.resolution)],
                                     capture_output=True, text=True, timeout=args.timeout)
                rows.append(json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else
                            {"model": name, "params": params, "crashed": out.stderr.strip().splitlines()[-1][:220]})
            except subprocess.TimeoutExpired:
                rows.append({"model": name, "params": params, "timeout": args.timeout})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print("| model | params (M) | torch at this size | batch packing | inter packing |")
    print("|---|---|---|---|---|")

    def cell(r, packing):
        p = r.get(packing)
        if p is None:
            return ""
        if "error" in p:
            return f"refused: {p['error']}"
        return f"plans: {p['levels_needed']} levels, {p['peak_gib']:.1f} GiB, {p['seconds']:.1f} s"

    for r in rows:
        size = f"{r['params'] / 1e6:.1f}" if r.get("params") else ""
        if "skipped" in r or "timeout" in r or "crashed" in r:
            why = r.get("skipped") or (f"over the {r['timeout']:.0f} s bound" if "timeout" in r else r["crashed"])
            print(f"| {r['model']} | {size} | not tried: {why} | | |")
        elif "torch" in r:
            print(f"| {r['model']} | {size} | refuses: {r['torch']} | | |")
        else:
            print(f"| {r['model']} | {size} | runs | {cell(r, 'batch')} | {cell(r, 'inter')} |")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
