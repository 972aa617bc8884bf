#!/usr/bin/env python3
"""OpenFHE CKKS -> FHEW scheme switching and comparison (EvalCompareSchemeSwitching), peer numbers.

    ~/.ringfire-peers/py310/bin/python benchmarks/peers/openfhe_scheme_switching.py \
        [--slots 16] [--log-n 16] [--threads 1,2] [--repeat 3] [--json PATH]

Runs under a Python 3.10 venv holding the ``openfhe`` wheel (1.6.1.0.22.4 ships only a cp310
extension; see setup_peers.sh or /work/shared/PEERS.md). Each (part, thread count) runs in its own
subprocess with OMP_NUM_THREADS set before ``import openfhe`` (OpenMP reads it once, at load time),
so its peak RSS is its own.

Parameters follow ComparisonViaSchemeSwitching in openfhe-python examples/pke/scheme-switching.py
(FIXEDAUTO, depth 17, scale 2^50, first modulus 60 bits, uniform ternary secret, HYBRID with
dnum = 3, sparse packing: batch size = numValues = --slots), but at 128-bit security on both
sides instead of the example's HEStd_NotSet / TOY: CKKS HEStd_128_classic at ring dimension 2^16,
FHEW STD128 with a 25-bit large-precision LWE modulus (SetCtxtModSizeFHEWLargePrec(25), the
example's value). pLWE = 2^25 / (2 beta) is the plaintext modulus the sign works on.

Two parts, each in a fresh process and context:

  switch   CKKS -> FHEW only: KeyGen, EvalCKKStoFHEWSetup, EvalCKKStoFHEWKeyGen,
           EvalCKKStoFHEWPrecompute(1/pLWE) timed one by one; then EvalCKKStoFHEW of one
           --slots-slot ciphertext (median of --repeat after one warm-up). Checked: every LWE
           ciphertext decrypts (mod pLWE) to round(x) mod pLWE.
  compare  both directions: KeyGen, EvalSchemeSwitchingSetup, EvalSchemeSwitchingKeyGen (CKKS->FHEW
           keys, FHEW->CKKS keys and the FHEW bootstrapping keys), EvalCompareSwitchPrecompute(pLWE,
           scaleSign). Then, step by step (what EvalCompareSchemeSwitching does inside):
           EvalSub + EvalCKKStoFHEW of the difference, EvalSign(ct, schemeSwitch=True) on each
           LWE ciphertext with the binfhe context (timed per slot: the FHEW-only cost),
           EvalFHEWtoCKKS(signs, n, n, 4, -1, 1); and finally the one call
           EvalCompareSchemeSwitching(c1, c2, n, n) (--compare-repeat runs, no warm-up).
           Checked against NumPy: slot i should hold 1 where x1[i] < x2[i], else 0 (the LWE
           signs too: EvalSign(ct, True) leaves +1 / -1 in Z_4, i.e. decrypts mod 4 to 1 / 3).

Inputs: x1, x2 uniform in [-range, range], rounded to 2 decimals (slot 0 holds equal values), so
every nonzero difference is >= 0.01 and, times scaleSign = 512, >= 5 FHEW units: far from the
rounding boundary. |diff| * scaleSign stays below pLWE/2.

Timings are wall clock (time.perf_counter) of the Python call; the machine may be shared.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import cpu_model  # noqa: E402

LOG_Q_LWE = 25  # SetCtxtModSizeFHEWLargePrec, as in OpenFHE's example
DEPTH, SCALE_BITS, FIRST_BITS, DNUM = 17, 50, 60, 3


def openfhe_version():
    try:
        from importlib.metadata import version
        return version("openfhe")
    except Exception:  # pragma: no cover
        return None


def peak_rss_gib():
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def make_ckks(fhe, args):
    sl = fhe.HEStd_128_classic if args.log_n >= 16 else fhe.HEStd_NotSet
    p = fhe.CCParamsCKKSRNS()
    p.SetMultiplicativeDepth(DEPTH)
    p.SetScalingModSize(SCALE_BITS)
    p.SetFirstModSize(FIRST_BITS)
    p.SetScalingTechnique(fhe.FIXEDAUTO)
    p.SetSecurityLevel(sl)
    p.SetRingDim(1 << args.log_n)
    p.SetBatchSize(args.slots)
    p.SetSecretKeyDist(fhe.UNIFORM_TERNARY)
    p.SetKeySwitchTechnique(fhe.HYBRID)
    p.SetNumLargeDigits(DNUM)
    cc = fhe.GenCryptoContext(p)
    for feat in (fhe.PKE, fhe.KEYSWITCH, fhe.LEVELEDSHE, fhe.ADVANCEDSHE, fhe.SCHEMESWITCH):
        cc.Enable(feat)
    sp = fhe.SchSwchParams()
    sp.SetSecurityLevelCKKS(sl)
    sp.SetSecurityLevelFHEW(fhe.STD128)
    sp.SetCtxtModSizeFHEWLargePrec(LOG_Q_LWE)
    sp.SetNumSlotsCKKS(args.slots)
    sp.SetNumValues(args.slots)
    try:
        logq = int(cc.GetModulus()).bit_length()
    except Exception:  # noqa: BLE001
        logq = None
    info = {"ckks_ring_dim": cc.GetRingDimension(), "ckks_security": "HEStd_128_classic" if args.log_n >= 16
            else "HEStd_NotSet", "ckks_depth": DEPTH, "scale_bits": SCALE_BITS, "first_mod_bits": FIRST_BITS,
            "dnum": DNUM, "Q_ckks_bits": logq, "scaling": "FIXEDAUTO", "secret": "UNIFORM_TERNARY",
            "slots": args.slots, "fhew_paramset": "STD128", "logQ_ccLWE": LOG_Q_LWE}
    return cc, sp, info


def lwe_info(lwe):
    beta = int(lwe.GetBeta())
    return {"fhew_n": lwe.Getn(), "fhew_N": lwe.GetN(), "fhew_q": int(lwe.Getq()),
            "fhew_Q_bits": int(lwe.GetQ()).bit_length(), "fhew_beta": beta,
            "fhew_max_plaintext_space": int(lwe.GetMaxPlaintextSpace()),
            "pLWE": (1 << LOG_Q_LWE) // (2 * beta)}


def inputs(args):
    import numpy as np

    rng = np.random.default_rng(args.seed)
    x1 = np.round(rng.uniform(-args.range, args.range, args.slots), 2)
    x2 = np.round(rng.uniform(-args.range, args.range, args.slots), 2)
    x2[0] = x1[0]
    return x1, x2


def encrypt(cc, keys, x, slots):
    return cc.Encrypt(keys.publicKey, cc.MakeCKKSPackedPlaintext([float(v) for v in x], 1, 0, None, slots))


def set_up(fhe, args, stem, precompute_name, precompute):
    """The CKKS context, its keys and the switching setup (stem + "Setup", stem + "KeyGen", then
    the precomputation), each step timed under OpenFHE's own name: (cc, keys, lwe secret key, the
    FHEW context, parameters, timings with their total)."""
    cc, sp, info = make_ckks(fhe, args)
    t = {}
    keys, t["KeyGen"] = timed(cc.KeyGen)
    sk, t[stem + "Setup"] = timed(lambda: getattr(cc, stem + "Setup")(sp))
    _, t[stem + "KeyGen"] = timed(lambda: getattr(cc, stem + "KeyGen")(keys, sk))
    lwe = cc.GetBinCCForSchemeSwitch()
    info.update(lwe_info(lwe))
    _, t[precompute_name] = timed(lambda: precompute(cc, info["pLWE"]))
    t["setup_total"] = sum(t.values())
    return cc, keys, sk, lwe, info, t


def worker_switch(args):
    import openfhe as fhe
    import numpy as np

    cc, keys, sk, lwe, info, t = set_up(fhe, args, "EvalCKKStoFHEW", "EvalCKKStoFHEWPrecompute",
                                        lambda cc, pL: cc.EvalCKKStoFHEWPrecompute(1.0 / pL))
    pL = info["pLWE"]
    x = np.round(inputs(args)[0] * 100)  # integers in [-100 range, 100 range]: exact in Z_pLWE
    ct = encrypt(cc, keys, x, args.slots)
    times, outs = [], None
    for i in range(1 + args.repeat):
        outs, dt = timed(lambda: cc.EvalCKKStoFHEW(ct, args.slots))
        if i:
            times.append(dt)
    got = np.array([lwe.Decrypt(sk, c, pL) for c in outs])
    want = x.astype(np.int64) % pL
    sw = statistics.median(times)
    return {"part": "switch", "params": info, "setup_s": t,
            "switch_s": {"median": sw, "min": min(times), "max": max(times), "runs": len(times),
                         "per_slot": sw / args.slots},
            "switch_wrong_slots": int(np.sum(got != want)), "switch_checked": args.slots,
            "peak_rss_gib": peak_rss_gib()}


def worker_compare(args):
    import openfhe as fhe
    import numpy as np

    cc, keys, sk, lwe, info, t = set_up(fhe, args, "EvalSchemeSwitching", "EvalCompareSwitchPrecompute",
                                        lambda cc, pL: cc.EvalCompareSwitchPrecompute(pL, args.scale_sign))
    pL = info["pLWE"]
    info["scale_sign"] = args.scale_sign
    print(f"  [compare t={args.threads}] setup {t['setup_total']:.1f} s, rss {peak_rss_gib()} GiB",
          file=sys.stderr, flush=True)

    x1, x2 = inputs(args)
    want = (x1 < x2).astype(np.int64)
    assert np.max(np.abs(x1 - x2)) * args.scale_sign < pL / 2
    c1, c2 = encrypt(cc, keys, x1, args.slots), encrypt(cc, keys, x2, args.slots)

    # Step by step, as EvalCompareSchemeSwitching does it.
    steps = {}
    cdiff, steps["EvalSub"] = timed(lambda: cc.EvalSub(c1, c2))
    lwes, steps["EvalCKKStoFHEW"] = timed(lambda: cc.EvalCKKStoFHEW(cdiff, args.slots))
    got_lwe = np.array([lwe.Decrypt(sk, c, pL) for c in lwes])
    # Off by one allowed: (x1 - x2) * 512 has a fractional part near 0.5 in some slots.
    lwe_err = (got_lwe - np.round((x1 - x2) * args.scale_sign).astype(np.int64)) % pL
    lwe_err = np.minimum(lwe_err, pL - lwe_err)
    sign_times, signs = [], []
    for c in lwes:
        s, dt = timed(lambda c=c: lwe.EvalSign(c, True))
        signs.append(s)
        sign_times.append(dt)
    # EvalSign(ct, schemeSwitch=True) leaves the sign as +-1 in Z_4 (what EvalFHEWtoCKKS(.., 4, -1, 1)
    # expects): 1 (= +1) where the difference is negative, 3 (= -1) where it is >= 0.
    got_sign = np.array([lwe.Decrypt(sk, s, 4) for s in signs])
    back, steps["EvalFHEWtoCKKS"] = timed(lambda: cc.EvalFHEWtoCKKS(signs, args.slots, args.slots, 4, -1.0, 1.0))
    pt = cc.Decrypt(keys.secretKey, back)
    pt.SetLength(args.slots)
    got_back = np.array(pt.GetRealPackedValue())
    steps["EvalSign_total"] = sum(sign_times)
    steps["EvalSign_per_slot_median"] = statistics.median(sign_times)
    steps["EvalSign_per_slot_min"] = min(sign_times)
    steps["EvalSign_per_slot_max"] = max(sign_times)
    steps["fhew_only_total"] = steps["EvalCKKStoFHEW"] + steps["EvalSign_total"]
    steps["fhew_only_per_slot"] = steps["fhew_only_total"] / args.slots
    print(f"  [compare t={args.threads}] steps: switch {steps['EvalCKKStoFHEW']:.2f} s, sign "
          f"{steps['EvalSign_total']:.1f} s, back {steps['EvalFHEWtoCKKS']:.1f} s", file=sys.stderr, flush=True)

    times, res = [], None
    for _ in range(args.compare_repeat):
        res, dt = timed(lambda: cc.EvalCompareSchemeSwitching(c1, c2, args.slots, args.slots))
        times.append(dt)
    pt = cc.Decrypt(keys.secretKey, res)
    pt.SetLength(args.slots)
    got = np.array(pt.GetRealPackedValue())
    cmp_s = statistics.median(times)
    return {"part": "compare", "params": info, "setup_s": t, "steps_s": steps,
            "steps_wrong": {"switch_lwe_off_by_more_than_1": int(np.sum(lwe_err > 1)),
                            "switch_lwe_max_abs_err_units": int(np.max(lwe_err)),
                            "EvalSign_vs_numpy": int(np.sum(got_sign != (2 * want - 1) % 4)),
                            "EvalFHEWtoCKKS_vs_numpy": int(np.sum(np.round(got_back) != want)),
                            "EvalFHEWtoCKKS_max_abs_err": float(np.max(np.abs(got_back - want)))},
            "compare_s": {"median": cmp_s, "min": min(times), "max": max(times), "runs": len(times),
                          "per_slot": cmp_s / args.slots},
            "compare_wrong_slots": int(np.sum(np.round(got) != want)), "compare_checked": args.slots,
            "compare_max_abs_err": float(np.max(np.abs(got - want))),
            "x1": x1.tolist(), "x2": x2.tolist(), "compare_out": [round(v, 4) for v in got.tolist()],
            "peak_rss_gib": peak_rss_gib()}


def run_child(part, threads, args):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", part, "--threads", str(threads),
           "--slots", str(args.slots), "--log-n", str(args.log_n), "--repeat", str(args.repeat),
           "--compare-repeat", str(args.compare_repeat), "--scale-sign", str(args.scale_sign),
           "--range", str(args.range), "--seed", str(args.seed)]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return {"part": part, "threads": threads, "error": f"exit {proc.returncode}", "wall_s": wall}
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    doc.update(threads=threads, wall_s=wall)
    return doc


def print_table(runs):
    print(f"{'part':<8} {'thr':>3} {'setup s':>8} {'switch s':>9} {'sw/slot ms':>10} {'sign/slot s':>11} "
          f"{'compare s':>9} {'cmp/slot s':>10} {'wrong':>6} {'RSS GiB':>8}")
    for r in runs:
        if "error" in r:
            print(f"{r['part']:<8} {r['threads']:>3}  {r['error']}")
            continue
        if r["part"] == "switch":
            print(f"{'switch':<8} {r['threads']:>3} {r['setup_s']['setup_total']:>8.1f} "
                  f"{r['switch_s']['median']:>9.3f} {r['switch_s']['per_slot'] * 1e3:>10.1f} {'':>11} {'':>9} "
                  f"{'':>10} {r['switch_wrong_slots']:>6} {r['peak_rss_gib']:>8}")
        else:
            st = r["steps_s"]
            print(f"{'compare':<8} {r['threads']:>3} {r['setup_s']['setup_total']:>8.1f} "
                  f"{st['EvalCKKStoFHEW']:>9.3f} {st['EvalCKKStoFHEW'] / len(r['x1']) * 1e3:>10.1f} "
                  f"{st['EvalSign_per_slot_median']:>11.2f} {r['compare_s']['median']:>9.1f} "
                  f"{r['compare_s']['per_slot']:>10.2f} {r['compare_wrong_slots']:>6} {r['peak_rss_gib']:>8}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slots", type=int, default=16, help="CKKS slots = values switched (sparse packing)")
    ap.add_argument("--log-n", type=int, default=16, help="CKKS ring dimension 2^k (< 16: HEStd_NotSet)")
    ap.add_argument("--threads", default="1", help="comma-separated OMP thread counts, e.g. 1,2")
    ap.add_argument("--parts", default="switch,compare")
    ap.add_argument("--repeat", type=int, default=3, help="timed EvalCKKStoFHEW runs (after one warm-up)")
    ap.add_argument("--compare-repeat", type=int, default=1, help="timed EvalCompareSchemeSwitching runs")
    ap.add_argument("--scale-sign", type=float, default=512.0)
    ap.add_argument("--range", type=float, default=8.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", metavar="PATH", help="write the results as JSON here")
    ap.add_argument("--worker", choices=["switch", "compare"], help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker:
        args.threads = int(args.threads)
        doc = (worker_switch if args.worker == "switch" else worker_compare)(args)
        print(json.dumps(doc))
        return 0

    t_start = time.perf_counter()
    runs = []
    for th in [int(v) for v in args.threads.split(",")]:
        for part in args.parts.split(","):
            runs.append(run_child(part, th, args))
            print(f"  done {part} threads={th} ({runs[-1]['wall_s']:.0f} s)", file=sys.stderr, flush=True)
    total_s = time.perf_counter() - t_start

    print(f"OpenFHE {openfhe_version()}, Python {platform.python_version()}, {cpu_model()}, "
          f"N=2^{args.log_n}, {args.slots} slots, FHEW STD128, logQ_LWE={LOG_Q_LWE}")
    print_table(runs)
    print(f"sw = EvalCKKStoFHEW of one {args.slots}-slot ciphertext; sign = EvalSign per LWE ciphertext; "
          f"compare = EvalCompareSchemeSwitching; wrong = slots differing from NumPy. Total {total_s:.0f} s.")
    if args.json:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
        doc = {"benchmark": "OpenFHE CKKS->FHEW scheme switching and comparison, "
                            "benchmarks/peers/openfhe_scheme_switching.py",
               "machine": {"cpu": cpu_model(), "vcpus": os.cpu_count(), "ram_gib": round(mem, 1),
                           "note": "shared machine: other benchmarks/tests may run concurrently"},
               "library": "openfhe (PyPI wheel)", "openfhe_version": openfhe_version(),
               "python": platform.python_version(), "threads": [int(v) for v in args.threads.split(",")],
               "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "seed": args.seed, "total_s": total_s,
               "command": " ".join([os.path.basename(sys.executable)] + sys.argv), "runs": runs}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
        print(f"wrote {args.json}")
    bad = sum(r.get("switch_wrong_slots", 0) + r.get("compare_wrong_slots", 0) + ("error" in r) for r in runs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
