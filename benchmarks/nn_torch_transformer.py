#!/usr/bin/env python3
"""torch's own export of ``nn.TransformerEncoderLayer`` (batch_first, the exporter ringfire picks),
encrypted with batch packing and client-aided Softmax/LayerNorm: load time (the static-shape
pass included), plan, encrypted time for the whole batch and per sequence, agreement with torch.

    python benchmarks/nn_torch_transformer.py [--d 16 --heads 2 --seq 8 --ff 32 --batch 256] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time
import warnings

import numpy as np

import ringfire as rf


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=16)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--seq", type=int, default=8)
    ap.add_argument("--ff", type=int, default=32)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--json")
    args = ap.parse_args()
    import torch

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(args.d, args.heads, args.ff, dropout=0.0, batch_first=True).eval()
    x = torch.randn(args.batch, args.seq, args.d)
    ctx = rf.ckks.Context(poly_degree=2**14, coeff_bits=[60, 40, 40, 40], scale_bits=40, special_bits=[60])
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = rf.nn.load(layer, ctx, example_input=x[:1])
    load_seconds = time.perf_counter() - start
    plan = model.plan()
    sk, keys = ctx.keygen()
    client = rf.nn.LocalClient(ctx, sk, keys)
    enc = ctx.encrypt_batch(x.numpy(), keys)
    start = time.perf_counter()
    out = model(enc, client=client)
    seconds = time.perf_counter() - start
    got = ctx.decrypt_batch(out, sk)
    with torch.no_grad():
        expected = layer(x).numpy()
    row = {"d": args.d, "heads": args.heads, "seq": args.seq, "ff": args.ff, "batch": args.batch,
           "load_seconds": load_seconds, "encrypted_seconds": seconds, "per_sequence_seconds": seconds / args.batch,
           "max_abs_error_vs_torch": float(np.max(np.abs(got - expected))), "levels": plan.levels_needed,
           "client_round_trips": plan.counts["client_round_trips"], "predicted_activation_bytes": plan.activation_bytes,
           "torch": torch.__version__}
    print(f"TransformerEncoderLayer d={args.d} heads={args.heads} seq={args.seq} ff={args.ff}, {args.batch} "
          f"sequences: load {load_seconds:.2f} s, encrypted {seconds:.2f} s ({1e3 * seconds / args.batch:.1f} ms per "
          f"sequence), max error vs torch {row['max_abs_error_vs_torch']:.2e}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(row, indent=2))


if __name__ == "__main__":
    main()
