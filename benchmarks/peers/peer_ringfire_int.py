#!/usr/bin/env python3
"""ringfire's BFV and BGV for the integer-scheme comparison (public API only).

    python benchmarks/peers/peer_ringfire_int.py --scheme bfv --n 16384 --coeff-bits 60,40,40,40,40,40 --json

The routines and configurations are those of ``ringfire bench bgv|bfv``
(ringfire/bench/bgv.py): ``default`` = the chain and key switching
``Context(depth=--depth)`` chooses; ``best`` = the same (ringfire's default is its
fastest shape). Threads: ``--threads`` sets ringfire's pool.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import int_common as C  # noqa: E402

C.pin_threads()


def run_ours(args):
    import ringfire as rf
    from ringfire.bench import bgv as bench_bgv

    rf.set_num_threads(args.threads)
    rep = C.Report("ringfire", rf.__version__, args)
    module = rf.bfv if args.scheme == "bfv" else rf.bgv
    if args.t != bench_bgv.PLAIN_MODULUS:
        rep.note("t=%d asked; ringfire's bench uses t=%d" % (args.t, bench_bgv.PLAIN_MODULUS))
    ctx = bench_bgv.make_context(module, args.n, args.depth, "default")
    params = ctx.params
    rep.doc["params"].update(special_bits=[p.bit_length() for p in params.p_primes], dnum=params.dnum,
                             log2_QP=round(params.log_qp, 1))
    ms, checks = bench_bgv.time_routines(ctx, args.repeat, args.seed)
    for routine, value in ms.items():
        rep.run(routine, lambda value=value: value)
    rep.doc["checks"] = checks
    return rep


def main():
    run_ours(C.parse_args(__doc__)).dump()


if __name__ == "__main__":
    main()
