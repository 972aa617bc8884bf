#!/usr/bin/env python3
"""torch's own export of ``nn.TransformerEncoderLayer`` (batch_first, the exporter ringfire picks),
or with ``--model bert`` an encoder of the BERT family (Hugging Face's ``BertModel`` from its input
embeddings, ``--layers`` layers), encrypted with client-aided Softmax/LayerNorm/GELU: load time (the
static-shape pass included), plan, encrypted time for the whole batch and per sequence, agreement
with torch.

With ``--packing inter`` one sequence per ciphertext (the latency mode): the context is the
smallest power-of-two ring whose slots hold the model's period, with ``--levels`` levels of 40
bits; the run reports keygen, the first sequence (which also encodes every transform's
diagonals, kept for the next ones), ``--repeats`` sequences after it, the peak RSS and the plan's
prediction of it.

    python benchmarks/nn_torch_transformer.py [--model layer|bert] [--d 16 --heads 2 --seq 8 --ff 32 --layers 1]
                                              [--batch 256] [--packing batch|inter] [--json out.json]
    python benchmarks/nn_torch_transformer.py --packing inter --d 128 --heads 4 --seq 32 --ff 512
"""

from __future__ import annotations

import argparse
import json
import pathlib
import resource
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
import nn_models as M  # noqa: E402  (the test suite's model builders)

import ringfire as rf  # noqa: E402


def bert_encoder(args):
    """BertModel at the given size, called on input embeddings (the key holder embeds the tokens):
    the test suite's builder (tests/nn_models.py)."""
    import torch
    import transformers

    return M.bert_encoder(torch, transformers, width=args.d, heads=args.heads, ff=args.ff, layers=args.layers,
                          positions=max(16, args.seq))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=["layer", "bert"], default="layer")
    ap.add_argument("--layers", type=int, default=1, help="encoder layers (bert)")
    ap.add_argument("--d", type=int, default=16)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--seq", type=int, default=8)
    ap.add_argument("--ff", type=int, default=32)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--packing", choices=["batch", "inter"], default="batch")
    ap.add_argument("--levels", type=int, default=6, help="levels of the context (inter packing)")
    ap.add_argument("--repeats", type=int, default=3, help="sequences timed after the first (inter packing)")
    ap.add_argument("--json")
    args = ap.parse_args()
    import torch

    if args.packing == "inter":
        return one_per_ciphertext(args)

    torch.manual_seed(0)
    layer = (bert_encoder(args) if args.model == "bert" else
             torch.nn.TransformerEncoderLayer(args.d, args.heads, args.ff, dropout=0.0, batch_first=True).eval())
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
    row = {"model": args.model, "layers": args.layers if args.model == "bert" else 1, "d": args.d, "heads": args.heads, "seq": args.seq, "ff": args.ff, "batch": args.batch,
           "load_seconds": load_seconds, "encrypted_seconds": seconds, "per_sequence_seconds": seconds / args.batch,
           "max_abs_error_vs_torch": float(np.max(np.abs(got - expected))), "levels": plan.levels_needed,
           "client_round_trips": plan.counts["client_round_trips"], "predicted_activation_bytes": plan.activation_bytes,
           **key_holder_traffic(client), "torch": torch.__version__}
    if args.model == "bert":
        import transformers
        row["transformers"] = transformers.__version__
    print(f"{'BertModel encoder' if args.model == 'bert' else 'TransformerEncoderLayer'} d={args.d} heads={args.heads} seq={args.seq} ff={args.ff}, {args.batch} "
          f"sequences: load {load_seconds:.2f} s, encrypted {seconds:.2f} s ({1e3 * seconds / args.batch:.1f} ms per "
          f"sequence), max error vs torch {row['max_abs_error_vs_torch']:.2e}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(row, indent=2))


def key_holder_traffic(client) -> dict:
    """The in-process key holder's rounds so far: how many, and the ciphertexts' bytes each way."""
    return {"key_holder_rounds": client.round_trips, "ciphertexts_to_key_holder": client.ciphertexts_received,
            "bytes_to_key_holder": client.bytes_received, "bytes_from_key_holder": client.bytes_sent}


def one_per_ciphertext(args) -> None:
    """The latency mode: one sequence per ciphertext, timed sequence by sequence."""
    import torch

    torch.manual_seed(0)
    layer = (bert_encoder(args) if args.model == "bert" else
             torch.nn.TransformerEncoderLayer(args.d, args.heads, args.ff, dropout=0.0, batch_first=True).eval())
    x = torch.randn(1 + args.repeats, args.seq, args.d)
    period = rf.nn.inter_period(layer, example_input=x[:1])
    log_n = max(12, (2 * period - 1).bit_length())  # slots = N / 2 >= period
    ctx = rf.ckks.Context(poly_degree=2**log_n, coeff_bits=[60] + [40] * args.levels, scale_bits=40,
                          special_bits=[60])
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = rf.nn.load(layer, ctx, example_input=x[:1], packing="inter")
    load_seconds = time.perf_counter() - start
    plan = model.plan()
    print(plan.describe())
    start = time.perf_counter()
    sk, keys = ctx.keygen(rotations=model.rotations())
    keygen_seconds = time.perf_counter() - start
    client = rf.nn.LocalClient(ctx, sk, keys)
    seconds, errors = [], []
    with torch.no_grad():
        expected = layer(x).numpy()
    for i in range(x.shape[0]):
        enc = ctx.encrypt_batch(x[i:i + 1].numpy(), keys, packing="inter")
        start = time.perf_counter()
        out = model(enc, client=client)
        seconds.append(time.perf_counter() - start)
        errors.append(float(np.max(np.abs(ctx.decrypt_batch(out, sk)[0] - expected[i]))))
        print(f"sequence {i}: {seconds[-1]:.2f} s, max error vs torch {errors[-1]:.2e}")
        if i == 0:
            traffic = key_holder_traffic(client)  # one sequence's rounds
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    later = seconds[1:] or seconds
    row = {"model": args.model, "packing": "inter", "layers": args.layers if args.model == "bert" else 1, "d": args.d,
           "heads": args.heads, "seq": args.seq, "ff": args.ff, "poly_degree": ctx.poly_degree, "period": period,
           "levels_available": ctx.max_level, "levels_needed": plan.levels_needed, "load_seconds": load_seconds,
           "keygen_seconds": keygen_seconds, "galois_keys": plan.counts["galois_keys"],
           "first_sequence_seconds": seconds[0], "sequence_seconds": later,
           "median_sequence_seconds": float(np.median(later)), "max_abs_error_vs_torch": max(errors),
           "counts": {k: v for k, v in plan.counts.items() if isinstance(v, (int, float, str))},
           "predicted_peak_bytes": plan.peak_bytes, "first_sequence_key_holder": traffic,
           "max_rss_bytes": rss, "torch": torch.__version__}
    print(f"{'BertModel encoder' if args.model == 'bert' else 'TransformerEncoderLayer'} d={args.d} heads={args.heads} "
          f"seq={args.seq} ff={args.ff}, one sequence per ciphertext at N = 2^{log_n}: load {load_seconds:.1f} s, "
          f"keygen {keygen_seconds:.1f} s ({plan.counts['galois_keys']} Galois keys), first sequence "
          f"{seconds[0]:.1f} s (encodes the diagonals), then median {row['median_sequence_seconds']:.2f} s; "
          f"max error vs torch {row['max_abs_error_vs_torch']:.1e}; max RSS {rss / 2**30:.2f} GiB")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(row, indent=2))


if __name__ == "__main__":
    main()
