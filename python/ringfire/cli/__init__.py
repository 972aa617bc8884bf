"""The ``ringfire`` command line: ``demo``, ``bench``, ``info``, ``infer``, ``rpu``, ``trace``, ``project``,
``serve``. This package holds the top-level parser and the commands of its own (``demo`` in
:mod:`.demo` and :mod:`.tour`, ``trace`` and ``project`` in :mod:`.trace`); the packages
``nn``, ``rpu`` and ``serve`` register theirs.

Every command prints a readable table; ``--json`` prints machine-readable output.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from .. import _core
from ..bench import foundations as bench


def _pow2_list(text: str) -> list[int]:
    """'12-17' or '12,14,16' as exponents -> powers of two."""
    exps: list[int] = []
    for part in text.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            exps.extend(range(int(lo), int(hi) + 1))
        else:
            exps.append(int(part))
    for e in exps:
        if not 2 <= e <= 17:
            raise argparse.ArgumentTypeError(f"log2(N) must be in [2, 17], got {e}")
    return [1 << e for e in exps]


def _int_list(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v.strip()]


def _emit(args, name: str, rows, columns) -> None:
    if args.json:
        json.dump({"benchmark": name, "machine": bench.machine_info(), "results": rows}, sys.stdout, indent=2)
        print()
    else:
        print(bench.format_table(rows, columns))


def cmd_bench(args) -> int:
    if args.threads:
        _core.set_num_threads(args.threads)
    quiet = args.json or args.quiet
    if args.what == "bootstrap":
        from ..bench.bootstrap import bench_bootstrap
        rows = bench_bootstrap(args.preset, repeat=args.repeat or 2, device=args.device,
                               meta=args.meta, quiet=quiet, stc_first=args.stc_first,
                               chained_rotations=args.chained_rotations)
        _emit(args, "bootstrap", rows, [("measure", "measure", "s"), ("value", "value", ".4g"), ("unit", "unit", "s")])
        return 0
    if args.what == "fbs":
        from ..bench.fbs import bench_fbs
        rows = bench_fbs(args.preset, tables=args.tables, repeat=args.repeat or 1, device=args.device, quiet=quiet,
                         sign_bits=args.sign_bits, slots=args.slots, floor=args.floor)
        _emit(args, "fbs", rows, [("table", "table", ""), ("measure", "measure", "s"), ("value", "value", ".4g"),
                                  ("unit", "unit", "s")])
        return 0
    if args.what in ("bgv", "bfv"):
        from ..bench.bgv import SETS as INT_SETS
        from ..bench.bgv import bench_integer
        sets = args.sets.split(",") if args.sets != "N14,seed000" else ["N14", "N15", "N16"]
        unknown = [s for s in sets if s not in INT_SETS]
        if unknown:
            raise ValueError(f"unknown set(s) {unknown}; choose from {sorted(INT_SETS)}")
        configs = ("default", "one-special") if args.config == "both" else (args.config,)
        rows = bench_integer(args.what, sets, configs, repeat=args.repeat or 5, device=args.device, quiet=quiet)
        _emit(args, args.what, rows, [("set", "set", "s"), ("n", "N", "d"), ("depth", "depth", "d"),
                                      ("config", "config", "s"), ("limbs", "limbs", "d"), ("special", "P", "d"),
                                      ("dnum", "dnum", "d"), ("routine", "routine", "s"), ("ms", "ms", ".2f"),
                                      ("exact", "exact", "s")])
        return 0
    if args.what == "tfhe":
        from ..bench.tfhe import SETS as TFHE_SETS
        from ..bench.tfhe import bench_tfhe
        sets = TFHE_SETS if args.sets == "N14,seed000" else args.sets.split(",")
        rows = bench_tfhe(sets, repeat=args.repeat or 20, quiet=quiet)
        _emit(args, "tfhe", rows, [("set", "set", "s"), ("routine", "routine", "s"), ("value", "value", ".4g"),
                                   ("unit", "unit", "s"), ("exact", "exact", "")])
        return 0
    if args.what == "ckks":
        from ..bench.ckks import SETS, bench_ckks
        sets = args.sets.split(",")
        unknown = [s for s in sets if s not in SETS]
        if unknown:
            raise ValueError(f"unknown set(s) {unknown}; choose from {sorted(SETS)}")
        rows = bench_ckks(sets, repeat=args.repeat or 5, with_matmul="matmul" in sets, quiet=quiet, device=args.device,
                          profile=args.profile)
        columns = [("set", "set", "s"), ("n", "N", "d"), ("limbs", "limbs", "d"), ("routine", "routine", "s"),
                   ("ms", "ms", ".2f"), ("bits", "bits", ".1f")]
        if args.profile:
            columns.append(("ntt_share", "NTT share", ".2f"))
        _emit(args, "ckks", rows, columns)
        return 0
    if args.device != "cpu":
        if args.what != "ntt":
            raise ValueError(f"[bench] --device {args.device} is supported for ckks and ntt")
        rows = bench.bench_ntt_gpu(args.n, args.limbs, args.device, bits=args.bits, quiet=quiet)
        _emit(args, "ntt", rows, [("n", "N", "d"), ("limbs", "limbs", "d"), ("direction", "dir", "s"),
                                  ("kernel", "kernel", "s"), ("us_per_call", "us/call", ".2f"),
                                  ("us_per_limb", "us/limb", ".3f"), ("gb_per_s", "GB/s", ".0f")])
        return 0
    if args.what == "ntt":
        limbs = [1, 2, 4, 8, 16, 32, 64] if args.full else args.limbs
        directions = {"both": ("forward", "inverse"), "forward": ("forward",), "inverse": ("inverse",)}[args.direction]
        rows = bench.bench_ntt(args.n, limbs, directions, bits=args.bits, budget=args.budget, quiet=quiet)
        _emit(args, "ntt", rows, [
            ("n", "N", "d"), ("limbs", "limbs", "d"), ("direction", "dir", "s"),
            ("us_per_call", "us/call", ".1f"), ("us_per_limb", "us/limb", ".1f"),
            ("ns_per_butterfly", "ns/butterfly", ".3f"), ("limbs_per_second", "limbs/s", ".0f")])
    elif args.what == "modmul":
        rows = bench.bench_modmul(args.bits_list, quiet=quiet)
        _emit(args, "modmul", rows, [("bits", "bits", "d"), ("method", "method", "s"),
                                     ("ns_per_op", "ns/op", ".3f"), ("note", "note", "s")])
    else:
        rows = bench.bench_polymul(args.n, args.limbs, bits=args.bits, budget=args.budget, quiet=quiet)
        _emit(args, "polymul", rows, [("n", "N", "d"), ("limbs", "limbs", "d"), ("ntt_us", "ntt us", ".1f"),
                                      ("karatsuba_us", "karatsuba us", ".1f"),
                                      ("karatsuba_speedup", "speedup", ".3f")])
    return 0


def cmd_demo(args) -> int:
    if args.tour:
        from .tour import run_tour
        return run_tour(json_output=args.json)
    from .demo import run_demo
    return run_demo(json_output=args.json)


def cmd_info(args) -> int:
    info = bench.machine_info()
    info["cuda_devices"] = _core.cuda_device_count()
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        for k, v in info.items():
            print(f"{k:>14}: {v}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    p = argparse.ArgumentParser(prog="ringfire", description="ringfire homomorphic-encryption toolkit")
    p.add_argument("--version", action="version", version=f"ringfire {__version__}")
    p.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    sub = p.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="what ringfire is for: encrypted inference, a bootstrap, exact BGV, "
                                       "TFHE gates, CKKS (CPU, seconds)")
    demo.add_argument("--json", action="store_true", help="machine-readable output")
    demo.add_argument("--tour", action="store_true", help="the foundations instead: primes, NTT, CRT, reductions")
    demo.set_defaults(func=cmd_demo)

    info = sub.add_parser("info", help="build and machine information")
    info.add_argument("--json", action="store_true")
    info.set_defaults(func=cmd_info)

    b = sub.add_parser("bench", help="benchmarks (ckks, bootstrap, fbs, bgv, bfv, tfhe, ntt, modmul, polymul)")
    b.add_argument("what", choices=["ckks", "bootstrap", "fbs", "bgv", "bfv", "tfhe", "ntt", "modmul", "polymul"])
    b.add_argument("--sets", default="N14,seed000",
                   help="ckks: parameter sets N14, seed000, N16, matmul (default N14,seed000); "
                        "bgv/bfv: N14, N15, N16 (default all three); tfhe: any presets, comma-separated (default "
                        "every 128-bit set: STD128, STD128_LMKCDEY, STD128_LP, STD128_LUT and the torus sets)")
    b.add_argument("--config", choices=["default", "one-special", "both"], default="both",
                   help="bgv/bfv: the chain and key switching Context(depth=...) chooses (default), the same chain "
                        "with one special prime (one-special, SEAL's convention), or both")
    b.add_argument("--repeat", type=int, default=None,
                   help="ckks: timed runs per routine (median; default 5); bootstrap: timed bootstraps (default 2); "
                        "fbs: timed lookups per table (default 1); "
                        "tfhe: timed gates (default 20)")
    b.add_argument("--preset", default="N16_BOOT",
                   help="bootstrap, fbs: a bootstrappable preset (N16_BOOT, 128-bit; N12_BOOT_INSECURE, a toy)")
    b.add_argument("--tables", type=_int_list, default=[16, 256],
                   help="fbs: lookup-table sizes p (integers mod p in the slots; default 16,256)")
    b.add_argument("--sign-bits", type=_int_list, default=[], dest="sign_bits",
                   help="fbs: also the sign of integers this wide, by 4-bit digits (e.g. 12)")
    b.add_argument("--floor", type=_int_list, default=[],
                   help="fbs: also floor(x / 2^shift) of integers by digits, given as BITS,SHIFT (e.g. 16,7)")
    b.add_argument("--slots", type=int, default=None,
                   help="fbs: sparse packing, this many slots (a power of two below N/2; vectors repeat with it)")
    b.add_argument("--meta", action="store_true", help="bootstrap: also Meta-BTS (two iterations) and its precision")
    b.add_argument("--stc-first", action="store_true",
                   help="bootstrap: SlotsToCoeffs first, on the user's lowest levels (bootstrap={'stc_first': True})")
    b.add_argument("--chained-rotations", action="store_true",
                   help="bootstrap: the DFTs' rotations chained, about a third of the keys "
                        "(bootstrap={'chained_rotations': True})")
    b.add_argument("--n", type=_pow2_list, default=_pow2_list("12-17"),
                   help="log2 of the ring degrees, e.g. '12-17' or '14,16' (default 12-17)")
    b.add_argument("--limbs", type=_int_list, default=[1, 8, 32], help="limb counts, e.g. '1,8,32'")
    b.add_argument("--full", action="store_true", help="ntt: limbs 1,2,4,...,64")
    b.add_argument("--direction", choices=["both", "forward", "inverse"], default="both")
    b.add_argument("--bits", type=int, default=61, help="prime size for ntt/polymul (default 61)")
    b.add_argument("--bits-list", type=_int_list, default=[30, 50, 60, 61], dest="bits_list",
                   help="modmul: prime sizes (default 30,50,60,61)")
    b.add_argument("--threads", type=int, default=0, help="CPU threads (default: all)")
    b.add_argument("--budget", type=float, default=0.3, help="seconds of timing per cell")
    b.add_argument("--device", default="cpu", help="ckks, bgv, bfv, ntt: 'cpu' (default) or 'cuda[:N]'")
    b.add_argument("--profile", action="store_true",
                   help="ckks on a GPU: per-kernel times and the share of NTT in each routine")
    b.add_argument("--json", action="store_true", help="print JSON instead of a table")
    b.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    b.set_defaults(func=cmd_bench)

    from ..nn import cli as nn_cli
    nn_cli.register(sub)

    from ..rpu import cli as rpu_cli
    rpu_cli.register(sub)

    from . import trace as trace_cli
    trace_cli.register(sub)

    from ..serve import cli as serve_cli
    serve_cli.register(sub)
    return p


def _error_text(e: BaseException) -> str:
    """One line for a user's mistake: the message, or the exception's type when it has none."""
    text = " ".join(str(e).split())
    if isinstance(e, FileNotFoundError) and e.filename:
        return f"no such file: {e.filename}"
    return text or type(e).__name__


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "server", None):  # `ringfire infer MODEL --server URL`: the service's client
        from ..serve.cli import remote_infer
        args.func = remote_infer
    elif getattr(args, "keys", None):
        raise SystemExit("ringfire: error: --keys keeps a service client's keys: it goes with --server")
    elif args.command == "infer" and args.ray is not None:  # `ringfire infer MODEL --ray [ADDRESS]`
        from ..distributed import RayExecutor
        args.executor = RayExecutor(args.ray or None, progress=None if not getattr(args, "json", False) else False)
    try:
        return args.func(args)
    except BrokenPipeError:
        # The reader went away (`ringfire info | head -2`): not an error. Point stdout at
        # /dev/null so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("ringfire: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - every failure is one line unless --debug
        if args.debug:
            raise
        kind = "" if isinstance(e, (ValueError, NotImplementedError, TypeError, OSError)) else f"{type(e).__name__}: "
        print(f"ringfire: error: {kind}{_error_text(e)} (--debug shows the traceback)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
