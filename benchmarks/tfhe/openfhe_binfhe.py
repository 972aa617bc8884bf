#!/usr/bin/env python3
"""OpenFHE binfhe (FHEW/TFHE-style) peer numbers: NAND gate, 3-bit LUT, large-precision sign.

Standalone: runs under a Python 3.10 venv holding the ``openfhe`` wheel (1.6.1.0.22.4 ships
only a cp310 extension, so a 3.11 interpreter cannot import it). benchmarks/peers/setup_peers.sh
builds one at ~/.ringfire-peers/py310 (or by hand: ``python3.10 -m venv VENV && VENV/bin/pip
install openfhe==1.6.1.0.22.4``), then:

    ~/.ringfire-peers/py310/bin/python benchmarks/tfhe/openfhe_binfhe.py --json out.json

benchmarks/tfhe_vs_peers.py runs it beside ringfire in one run.

Single-threaded on purpose: OMP_NUM_THREADS is forced to 1 below, BEFORE openfhe is
imported (OpenMP reads it once at load time; setting it later has no effect).

What it measures (all with OpenFHE's own parameter sets, as in its C++ examples):
  * NAND at STD128, GINX (CGGI) and LMKCDEY: BTKeyGen time, ms per EvalBinGate (median
    after warm-ups), every gate checked against Python's ``not (a and b)``.
  * 3-bit LUT: src/binfhe/examples/eval-function.cpp, i.e.
    GenerateBinFHEContext(STD128, arbFunc=True, logQ=12, N=0, GINX, False), p =
    GetMaxPlaintextSpace() (= 8), f(x) = x^3 mod p via GenerateLUTviaFunction, EvalFunc.
  * Large-precision floor: EvalFloor(ct, 4) (src/binfhe/examples/eval-flooring.cpp) on the
    sign's context below, decrypted at p / 16; expected x >> 4.
  * ``--only wide`` (not by default: minutes): the sign and the floor on the same context
    with log Q = 29, p = 2^21 (21-bit inputs).
  * Large-precision sign: src/binfhe/examples/eval-sign.cpp, i.e.
    GenerateBinFHEContext(STD128, False, logQ=17, 0, GINX, False), Q = 2^17,
    p = GetMaxPlaintextSpace() * Q/4096 (= 512), EvalSign, decrypt mod 2; expected
    sign = (m >= p/2).
  * Bootstrapping-key size: SerializeToFile(GetBTKey(), BINARY) into a temp file
    (refresh + key-switching keys), then deleted. The LUT/sign keys are ~5 GB each on
    disk and take ~15 s each to write; ``--no-key-sizes`` skips them (JSON: null).

Timings: only the homomorphic call is timed (inputs are encrypted beforehand).
"""
# Must come before `import openfhe`: OpenMP reads OMP_NUM_THREADS once, at load time.
import os

os.environ["OMP_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import openfhe as fhe  # noqa: E402

# The peers' shared helpers (standard library only), beside this script's directory.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "peers"))
from _common import cpu_model  # noqa: E402


def openfhe_version():
    try:
        from importlib.metadata import version
        return version("openfhe")
    except Exception:  # pragma: no cover
        return None


def ctx_params(cc):
    return {"n": cc.Getn(), "N": cc.GetN(), "q": int(cc.Getq()), "Q": int(cc.GetQ()),
            "Q_bits": int(cc.GetQ()).bit_length(), "beta": int(cc.GetBeta()),
            "max_plaintext_space": int(cc.GetMaxPlaintextSpace())}


def make_context(args):
    cc = fhe.BinFHEContext()
    cc.GenerateBinFHEContext(*args)
    sk = cc.KeyGen()
    t0 = time.perf_counter()
    cc.BTKeyGen(sk)
    return cc, sk, time.perf_counter() - t0


def bt_key_bytes(cc, key_dir):
    """Size of the binary-serialized bootstrapping key set (refresh + switching keys)."""
    fd, path = tempfile.mkstemp(prefix="openfhe_btkey_", suffix=".bin", dir=key_dir)
    os.close(fd)
    try:
        t0 = time.perf_counter()
        ok = fhe.SerializeToFile(path, cc.GetBTKey(), fhe.BINARY)
        dt = time.perf_counter() - t0
        if not ok:
            return None, None
        return os.path.getsize(path), dt
    finally:
        os.unlink(path)


def ct_bytes(ct, key_dir):
    fd, path = tempfile.mkstemp(prefix="openfhe_ct_", suffix=".bin", dir=key_dir)
    os.close(fd)
    try:
        return os.path.getsize(path) if fhe.SerializeToFile(path, ct, fhe.BINARY) else None
    finally:
        os.unlink(path)


def timed_loop(cases, run, check, warmup):
    """cases: list of (inputs, expected). Returns (times_ms for non-warm-up runs, n_ok, n_total)."""
    times, n_ok = [], 0
    for i, (inputs, expected) in enumerate(cases):
        t0 = time.perf_counter()
        out = run(inputs)
        dt = (time.perf_counter() - t0) * 1e3
        n_ok += check(out, expected)  # every result is checked, warm-ups included
        if i >= warmup:
            times.append(dt)
    return times, n_ok, len(cases)


def summarize(times):
    return {"median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times),
            "mean_ms": statistics.fmean(times), "timed": len(times)}


def bench_nand(method_name, reps, warmup, rng, key_sizes, key_dir):
    method = getattr(fhe, method_name)
    cc, sk, kg = make_context((fhe.STD128, method))
    bits = [(rng.getrandbits(1), rng.getrandbits(1)) for _ in range(reps + warmup)]
    cases = [((cc.Encrypt(sk, a), cc.Encrypt(sk, b)), int(not (a and b))) for a, b in bits]
    times, ok, total = timed_loop(
        cases, lambda c: cc.EvalBinGate(fhe.NAND, c[0], c[1]),
        lambda out, exp: int(cc.Decrypt(sk, out) == exp), warmup)
    res = {"op": "NAND", "method": method_name, "paramset": "STD128",
           "context": f"GenerateBinFHEContext(STD128, {method_name})",
           "params": ctx_params(cc), "btkeygen_s": kg, "correct": ok, "checked": total, **summarize(times),
           "ct_bytes": ct_bytes(cases[0][0][0], key_dir)}
    res["bt_key_bytes"], res["bt_key_serialize_s"] = bt_key_bytes(cc, key_dir) if key_sizes else (None, None)
    del cc, sk, cases
    gc.collect()
    return res


def bench_lut(reps, warmup, key_sizes, key_dir):
    cc, sk, kg = make_context((fhe.STD128, True, 12, 0, fhe.GINX, False))
    p = int(cc.GetMaxPlaintextSpace())

    def f(m, p1):  # verbatim from eval-function.cpp (the m >= p branch only matters for LUT padding)
        return (m * m * m) % p1 if m < p1 else ((m - p1 // 2) ** 3) % p1

    lut = cc.GenerateLUTviaFunction(f, p)
    xs = [i % p for i in range(reps + warmup)]  # every input value, cyclically
    cases = [(cc.Encrypt(sk, x, fhe.LARGE_DIM, p), (x ** 3) % p) for x in xs]
    times, ok, total = timed_loop(cases, lambda ct: cc.EvalFunc(ct, lut),
                                  lambda out, exp: int(cc.Decrypt(sk, out, p) == exp), warmup)
    res = {"op": f"LUT x^3 mod {p} (EvalFunc)", "method": "GINX", "paramset": "STD128",
           "context": "GenerateBinFHEContext(STD128, True, 12, 0, GINX, False)",
           "plaintext_modulus": p, "params": ctx_params(cc), "btkeygen_s": kg, "correct": ok, "checked": total,
           **summarize(times), "ct_bytes": ct_bytes(cases[0][0], key_dir)}
    res["bt_key_bytes"], res["bt_key_serialize_s"] = bt_key_bytes(cc, key_dir) if key_sizes else (None, None)
    del cc, sk, cases
    gc.collect()
    return res


def bench_sign(reps, warmup, rng, key_sizes, key_dir, log_q=17):
    cc, sk, kg = make_context((fhe.STD128, False, log_q, 0, fhe.GINX, False))
    Q = 1 << log_q
    factor = Q // 4096  # Q / q, as in eval-sign.cpp
    p = int(cc.GetMaxPlaintextSpace()) * factor
    # The example's inputs (p/2-3 .. p/2+4: right at the sign boundary), the wrap-around
    # edges, then uniform random values.
    # Most telling first, so --quick keeps them: both sides of p/2 and of 0.
    xs = [p // 2 - 1, p // 2, 0, p - 1] + [p // 2 + d for d in (-3, -2, 1, 2, 3, 4)]
    xs = (xs + [rng.randrange(p) for _ in range(reps + warmup)])[:reps + warmup]
    rng.shuffle(xs)
    cases = [(cc.Encrypt(sk, x, fhe.LARGE_DIM, p, Q), int(x >= p // 2)) for x in xs]
    times, ok, total = timed_loop(cases, lambda ct: cc.EvalSign(ct),
                                  lambda out, exp: int(cc.Decrypt(sk, out, 2) == exp), warmup)
    res = {"op": f"sign, p={p} (EvalSign)", "method": "GINX", "paramset": "STD128",
           "context": f"GenerateBinFHEContext(STD128, False, {log_q}, 0, GINX, False)",
           "plaintext_modulus": p, "input_modulus_Q": Q, "inputs": xs, "params": ctx_params(cc),
           "btkeygen_s": kg, "correct": ok, "checked": total, **summarize(times),
           "ct_bytes": ct_bytes(cases[0][0], key_dir)}
    res["bt_key_bytes"], res["bt_key_serialize_s"] = bt_key_bytes(cc, key_dir) if key_sizes else (None, None)
    del cc, sk, cases
    gc.collect()
    return res


def bench_floor(reps, warmup, rng, roundbits, log_q=17):
    """EvalFloor (src/binfhe/examples/eval-flooring.cpp) on eval-sign.cpp's large-precision
    context (log Q = 17: p = 512, 9-bit inputs; 29: 21-bit), decrypted at p / 2^roundbits;
    expected x >> roundbits. No key sizes: the keys are the sign's (its row has them)."""
    cc, sk, kg = make_context((fhe.STD128, False, log_q, 0, fhe.GINX, False))
    Q = 1 << log_q
    p = int(cc.GetMaxPlaintextSpace()) * (Q // 4096)
    unit = 1 << roundbits
    # Both sides of a multiple of 2^roundbits, the range's ends, then uniform random values.
    xs = [unit - 1, unit, 0, p - 1, p // 2 - 1, p // 2] + [rng.randrange(p) for _ in range(reps + warmup)]
    xs = xs[:reps + warmup]
    rng.shuffle(xs)
    cases = [(cc.Encrypt(sk, x, fhe.LARGE_DIM, p, Q), x >> roundbits) for x in xs]
    times, ok, total = timed_loop(cases, lambda ct: cc.EvalFloor(ct, roundbits),
                                  lambda out, exp: int(cc.Decrypt(sk, out, p >> roundbits) == exp), warmup)
    res = {"op": f"floor, p={p}, {roundbits} bits (EvalFloor)", "method": "GINX", "paramset": "STD128",
           "context": f"GenerateBinFHEContext(STD128, False, {log_q}, 0, GINX, False)",
           "plaintext_modulus": p, "roundbits": roundbits, "input_modulus_Q": Q, "inputs": xs,
           "params": ctx_params(cc), "btkeygen_s": kg, "correct": ok, "checked": total, **summarize(times),
           "ct_bytes": ct_bytes(cases[0][0], None), "bt_key_bytes": None}
    del cc, sk, cases
    gc.collect()
    return res


def fmt_mb(b):
    return "n/a" if b is None else f"{b / 1e6:.0f}"


def print_table(results):
    hdr = f"{'op':<26} {'method':<8} {'n':>5} {'N':>5} {'Qbits':>5} {'keygen s':>9} {'ms/op':>9} " \
          f"{'min ms':>8} {'correct':>8} {'BT key MB':>10}"
    print(hdr)
    print("-" * len(hdr))
    for r in results:
        pr = r["params"]
        print(f"{r['op']:<26} {r['method']:<8} {pr['n']:>5} {pr['N']:>5} {pr['Q_bits']:>5} "
              f"{r['btkeygen_s']:>9.2f} {r['median_ms']:>9.2f} {r['min_ms']:>8.2f} "
              f"{r['correct']:>3}/{r['checked']:<4} {fmt_mb(r['bt_key_bytes']):>10}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (smoke test)")
    ap.add_argument("--json", metavar="PATH", help="write the results as JSON here")
    ap.add_argument("--no-key-sizes", action="store_true",
                    help="skip serializing bootstrapping keys (~0.9 GB NAND, ~5 GB LUT/sign)")
    ap.add_argument("--key-dir", default=None, help="where the temporary key files go (default: $TMPDIR)")
    ap.add_argument("--only", choices=["nand", "lut", "sign", "floor", "wide"], action="append",
                    help="run only these parts (repeatable)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    gate_reps, gate_warm = (5, 1) if args.quick else (20, 2)
    lut_reps, lut_warm = (4, 1) if args.quick else (16, 2)
    sign_reps, sign_warm = (3, 1) if args.quick else (12, 1)
    parts = args.only or ["nand", "lut", "sign", "floor"]
    key_sizes = not args.no_key_sizes
    rng = random.Random(args.seed)

    t_start = time.perf_counter()
    results = []
    if "nand" in parts:
        for m in ("GINX", "LMKCDEY"):
            results.append(bench_nand(m, gate_reps, gate_warm, rng, key_sizes, args.key_dir))
            print(f"  done NAND {m}", file=sys.stderr, flush=True)
    if "lut" in parts:
        results.append(bench_lut(lut_reps, lut_warm, key_sizes, args.key_dir))
        print("  done LUT", file=sys.stderr, flush=True)
    if "sign" in parts:
        results.append(bench_sign(sign_reps, sign_warm, rng, key_sizes, args.key_dir))
        print("  done sign", file=sys.stderr, flush=True)
    if "floor" in parts:
        results.append(bench_floor(sign_reps, sign_warm, rng, 4))
        print("  done floor", file=sys.stderr, flush=True)
    if "wide" in parts:  # not by default: each takes minutes
        wide_reps = max(2, sign_reps // 3)
        results.append(bench_sign(wide_reps, sign_warm, rng, False, args.key_dir, log_q=29))
        results.append(bench_floor(wide_reps, sign_warm, rng, 4, log_q=29))
        print("  done wide", file=sys.stderr, flush=True)
    total_s = time.perf_counter() - t_start

    print(f"OpenFHE {openfhe_version()} binfhe, Python {platform.python_version()}, "
          f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}, {cpu_model()}")
    print_table(results)
    print(f"ms/op = median of timed ops after warm-ups; correct counts every op incl. warm-ups. "
          f"Total {total_s:.0f} s.")

    if args.json:
        doc = {"library": "openfhe (PyPI wheel)", "openfhe_version": openfhe_version(),
               "python": platform.python_version(), "omp_num_threads": os.environ["OMP_NUM_THREADS"],
               "cpu": cpu_model(), "nproc": os.cpu_count(), "quick": args.quick, "seed": args.seed,
               "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "total_s": total_s,
               "key_size_note": None if key_sizes else "skipped (--no-key-sizes)",
               "results": results}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
        print(f"wrote {args.json}")
    bad = sum(r["checked"] - r["correct"] for r in results)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
