#!/usr/bin/env python3
"""OpenFHE's CKKS functional bootstrapping (EvalFBT, Alexandru-Kim-Polyakov) on small lookup tables.

    ~/.ringfire-peers/py310/bin/python benchmarks/peers/peer_openfhe_fbt.py [--bits 4] [--log-n 16]
        [--threads 1,2] [--repeat 3] [--mvb] [--sweep 4:16,8:16] [--json PATH]
    ... peer_openfhe_fbt.py --sign 12:4,32:8 [--log-n 16] [--repeat 1] [--json PATH]

What is measured, per (table, ring dimension, threads), each in its own subprocess (so the peak RSS is
that configuration's alone):
- a table of 2^bits entries, input and output modulo p = 2^bits, f(m) = m^2 mod p by default
  (``--func shift``: f(m) = (m - p/2) mod p, the table of OpenFHE's own benchmark);
- the values are integers encrypted as the coefficients of an RLWE ciphertext under the CKKS secret key
  (SchemeletRLWEMP.EncryptCoeff), converted to CKKS (ConvertRLWEToCKKS), run through ONE EvalFBT
  (modulus raise, CoeffsToSlots, complex exponential, Hermite series, SlotsToCoeffs), converted back
  (ConvertCKKSToRLWE) and decrypted (DecryptCoeff);
- by default N values at ring dimension N: OpenFHE's "full packing", i.e. N/2 complex CKKS slots, each
  holding two table inputs (real and imaginary part). Per-value and per-CKKS-slot times are both given;
- times: EvalFBTSetup, keygen (KeyGen + EvalBootstrapKeyGen + EvalMultKeyGen), and EvalFBT as the median
  of ``--repeat`` runs after one warm-up, wall clock; conversions and decryption once;
- errors: entries whose decrypted output differs from the table (after rounding to Z_p), the largest such
  difference, and the error before rounding (decrypted at 2^extra times the output precision), in units
  of the table output;
- ``--mvb``: multi-value bootstrapping, EvalMVBPrecompute once then EvalMVB for two tables of the same
  shape (f and (m + 1) mod p);
- ``--sign IN:DIGIT``: instead of one table, the sign of IN-bit integers by homomorphic digit decomposition
  (OpenFHE's MultiPrecisionSign example: EvalFBT of m mod 2^DIGIT per digit, subtraction and modulus switch of
  the RLWE ciphertext, and a step-function EvalFBT on the last digit); timed as one whole chain.

Parameters are those of OpenFHE's benchmark/src/ckks-functional-bootstrapping.cpp (openfhe-development main,
read at commit ed361af of 2026-04-28; the wheel is v1.6.1): SPARSE_ENCAPSULATED
secret, FIXEDMANUAL rescaling, HEStd_NotSet, scaling and first modulus = log2(Bigq), depth from GetFBTDepth
with 0 levels left after the FBT, order-1 trigonometric Hermite interpolation, RLWE input encrypted mod 2^60
and switched to Q:

    bits  Q     Bigq  scaleTHI  dnum  level budget  ring dim
    4     2^38  2^38  32        3     [4, 4]        2^16
    8     2^47  2^47  32        4     [3, 3]        2^16

Sign (the example's parameters, run here at ring dimension 2^16 with full packing instead of its 2048 / 64):
12-bit input with 4-bit digits: RLWE mod 2^60 -> Q = 2^48, Bigq = 2^40, scaleTHI 32 (step 8), dnum 3, [3, 3];
32-bit input with 8-bit digits: RLWE mod 2^80 -> Q = 2^71, Bigq = 2^47, scaleTHI 256 (step 32), dnum 3, [3, 3].
With HEStd_128_classic (ring dimension left free) OpenFHE 1.6.1 picks 2^16 for the 4- and 8-bit table
contexts; its table assumes a uniform ternary secret, not the sparse one used here.

Output: a table on stdout, or one JSON document (``--json PATH``, ``-`` for stdout) with a list of runs.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time

from _common import cpu_model

PRESETS = {  # OpenFHE benchmark/src/ckks-functional-bootstrapping.cpp, arblut_configs
    4: {"q_bits": 38, "bigq_bits": 38, "scale_thi": 32, "dnum": 3, "level_budget": [4, 4], "qbfv_init_bits": 60,
        "log_n": 16},
    8: {"q_bits": 47, "bigq_bits": 47, "scale_thi": 32, "dnum": 4, "level_budget": [3, 3], "qbfv_init_bits": 60,
        "log_n": 16},
}

SIGN_PRESETS = {  # OpenFHE src/pke/examples/functional-bootstrapping-ckks.cpp, MultiPrecisionSign
    # (input bits, digit bits): log2(input p) - log2(digit p) == log2(Q) - log2(Bigq)
    (12, 4): {"qbfv_init_bits": 60, "q_bits": 48, "bigq_bits": 40, "scale_thi": 32, "scale_step_thi": 8, "dnum": 3,
              "level_budget": [3, 3]},
    (32, 8): {"qbfv_init_bits": 80, "q_bits": 71, "bigq_bits": 47, "scale_thi": 256, "scale_step_thi": 32, "dnum": 3,
              "level_budget": [3, 3]},
}


def table_function(name: str, p: int):
    if name == "square":
        return lambda m: (m * m) % p
    if name == "shift":
        return lambda m: (m - p // 2) % p
    if name == "inc":
        return lambda m: (m + 1) % p
    raise ValueError(name)


def centered(v: int, p: int) -> int:
    v %= p
    return v - p if v > p // 2 else v


def fbt_keys(fhe, cc, coeffs, ckks_slots: int, p_in: int, p_out: int, bigq: int, level_budget, order: int):
    """KeyGen, EvalFBTSetup, then the bootstrap and multiplication keys: (keys, setup s, KeyGen s,
    evaluation keys s)."""
    t = time.perf_counter()
    keys = cc.KeyGen()
    keygen_s = time.perf_counter() - t
    t = time.perf_counter()
    cc.EvalFBTSetup(coeffs, ckks_slots, p_in, p_out, bigq, keys.publicKey, [0, 0], level_budget, 0, 0, order)
    setup_s = time.perf_counter() - t
    t = time.perf_counter()
    cc.EvalBootstrapKeyGen(keys.secretKey, ckks_slots)
    cc.EvalMultKeyGen(keys.secretKey)
    return keys, setup_s, keygen_s, time.perf_counter() - t


def fbt_context(fhe, pre: dict, secret, ckks_slots: int, ring_dim: int, depth: int):
    """The CKKS context of OpenFHE's functional-bootstrapping benchmark: FIXEDMANUAL, first and scaling moduli
    of log2(Bigq) bits, HEStd_NotSet, every feature enabled."""
    params = fhe.CCParamsCKKSRNS()
    params.SetSecretKeyDist(secret)
    params.SetSecurityLevel(fhe.SecurityLevel.HEStd_NotSet)
    params.SetScalingModSize(pre["bigq_bits"])
    params.SetFirstModSize(pre["bigq_bits"])
    params.SetScalingTechnique(fhe.ScalingTechnique.FIXEDMANUAL)
    params.SetNumLargeDigits(pre["dnum"])
    params.SetBatchSize(ckks_slots)
    params.SetRingDim(ring_dim)
    params.SetMultiplicativeDepth(depth)
    cc = fhe.GenCryptoContext(params)
    for feature in (fhe.PKESchemeFeature.PKE, fhe.PKESchemeFeature.KEYSWITCH, fhe.PKESchemeFeature.LEVELEDSHE,
                    fhe.PKESchemeFeature.ADVANCEDSHE, fhe.PKESchemeFeature.FHE):
        cc.Enable(feature)
    return cc


def run_one(args) -> dict:
    """One configuration, in this process (OMP_NUM_THREADS must be set before openfhe is imported)."""
    import numpy as np
    import openfhe as fhe

    def say(text):
        if not args.quiet:
            print(f"[openfhe fbt {args.bits}-bit N=2^{args.log_n} t={args.threads}] {text}", file=sys.stderr,
                  flush=True)

    pre = dict(PRESETS[args.bits])
    for key in ("q_bits", "bigq_bits", "scale_thi", "dnum"):
        if getattr(args, key) is not None:
            pre[key] = getattr(args, key)
    if args.level_budget:
        pre["level_budget"] = [int(v) for v in args.level_budget.split(",")]
    p_in = p_out = 1 << args.bits
    ring_dim = 1 << args.log_n
    values = args.values or ring_dim
    if values > ring_dim:
        raise SystemExit("--values must be at most the ring dimension")
    ckks_slots = values if values <= ring_dim // 2 else values // 2
    q, bigq, qbfv_init = 1 << pre["q_bits"], 1 << pre["bigq_bits"], 1 << pre["qbfv_init_bits"]
    scale_thi, order, lvlb = pre["scale_thi"], args.order, pre["level_budget"]
    secret = {"sparse_encapsulated": fhe.SecretKeyDist.SPARSE_ENCAPSULATED,
              "sparse_ternary": fhe.SecretKeyDist.SPARSE_TERNARY}[args.secret]

    f = table_function(args.func, p_out)
    coeffs = fhe.GetHermiteTrigCoefficients(f, p_in, order, float(scale_thi))
    depth = fhe.CryptoContext.GetFBTDepth(lvlb, coeffs, p_in, order, secret)

    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    cc = fbt_context(fhe, pre, secret, ckks_slots, ring_dim, depth)
    context_s = time.perf_counter() - t
    n = cc.GetRingDimension()
    say(f"N = {n}, depth {depth}, {values} values in {ckks_slots} CKKS slots, context {context_s:.2f} s")

    keys, setup_s, keygen_pk_s, keygen_eval_s = fbt_keys(fhe, cc, coeffs, ckks_slots, p_in, p_out, bigq, lvlb, order)
    keygen_s = keygen_pk_s + keygen_eval_s
    say(f"EvalFBTSetup {setup_s:.2f} s, keygen {keygen_s:.2f} s")
    moduli_bits = None
    try:
        ep_full = fhe.SchemeletRLWEMP.GetElementParams(keys.secretKey, 0)
        moduli_bits = math.log2(int(ep_full.GetModulus()))  # > 2^1024 at 8 bits: no float()
    except Exception:  # informational only
        pass

    rng = np.random.default_rng(args.seed)
    x = [int(v) for v in rng.integers(0, p_in, values)]
    x[:min(p_in, values)] = list(range(min(p_in, values)))  # every table entry at least once when it fits
    ep = fhe.SchemeletRLWEMP.GetElementParams(keys.secretKey, depth)
    t = time.perf_counter()
    rlwe = fhe.SchemeletRLWEMP.EncryptCoeff(x, qbfv_init, p_in, keys.secretKey, ep)
    fhe.SchemeletRLWEMP.ModSwitch(rlwe, q, qbfv_init)
    encrypt_s = time.perf_counter() - t
    t = time.perf_counter()
    ct = fhe.SchemeletRLWEMP.ConvertRLWEToCKKS(cc, rlwe, keys.publicKey, bigq, ckks_slots, depth)
    to_ckks_s = time.perf_counter() - t

    runs, out = [], None
    for i in range(args.repeat + 1):
        out = None
        t = time.perf_counter()
        out = cc.EvalFBT(ct, coeffs, args.bits, ep.GetModulus(), scale_thi, 0, order)
        elapsed = time.perf_counter() - t
        say(f"EvalFBT {'warm-up' if i == 0 else f'run {i}'}: {elapsed:.2f} s")
        if i or args.repeat == 0:
            runs.append(elapsed)
    fbt_s = statistics.median(runs)

    t = time.perf_counter()
    polys = fhe.SchemeletRLWEMP.ConvertCKKSToRLWE(out, q)
    to_rlwe_s = time.perf_counter() - t
    t = time.perf_counter()
    got = fhe.SchemeletRLWEMP.DecryptCoeff(polys, q, p_out, keys.secretKey, ep, ckks_slots, values)
    decrypt_s = time.perf_counter() - t

    def errors(decrypted, fn):
        exact = [fn(v) for v in x]
        diffs = [abs(centered(g - e, p_out)) for g, e in zip(decrypted, exact)]
        return exact, max(diffs), sum(1 for d in diffs if d)

    exact, max_err, wrong = errors(got, f)
    # Same ciphertext decrypted with 2^extra more output precision: error before rounding to Z_p.
    extra = max(0, min(16, pre["q_bits"] - args.bits - 12))
    fine = fhe.SchemeletRLWEMP.DecryptCoeff(polys, q, p_out << extra, keys.secretKey, ep, ckks_slots, values)
    raw = np.array([abs(centered(g - (e << extra), p_out << extra)) for g, e in zip(fine, exact)], float) / 2**extra
    say(f"EvalFBT median {fbt_s:.2f} s; wrong entries {wrong}/{values}, max error {max_err}, "
        f"before rounding max {raw.max():.3g} mean {raw.mean():.3g}")

    doc = {
        "library": "OpenFHE", "version": getattr(fhe, "__version__", "unknown"),
        "preset": "OpenFHE benchmark/src/ckks-functional-bootstrapping.cpp (arblut_configs)",
        "threads": args.threads, "cpu": cpu_model(),
        "table": {"function": args.func, "input_bits": args.bits, "output_bits": args.bits, "entries": p_in},
        "n": n, "values": values, "ckks_slots": ckks_slots, "full_packing": values == n,
        "params": {"depth": depth, "scaling_mod_bits": pre["bigq_bits"], "first_mod_bits": pre["bigq_bits"],
                   "log2_Q_ckks": moduli_bits, "q_towers": depth + 1, "dnum": pre["dnum"], "level_budget": lvlb,
                   "levels_after_fbt": 0, "secret": args.secret, "scaling": "FIXEDMANUAL",
                   "key_switching": "HYBRID", "security": "HEStd_NotSet", "order": order,
                   "scale_thi": scale_thi, "hermite_coeffs": len(coeffs),
                   "max_abs_hermite_coeff": float(max(abs(c) for c in coeffs)),
                   "rlwe_q_bits": pre["q_bits"], "rlwe_bigq_bits": pre["bigq_bits"],
                   "rlwe_encrypt_q_bits": pre["qbfv_init_bits"]},
        "context_s": context_s, "fbt_setup_s": setup_s, "keygen_s": keygen_s,
        "keygen_parts_s": {"KeyGen": keygen_pk_s, "EvalBootstrapKeyGen+EvalMultKeyGen": keygen_eval_s},
        "setup_plus_keygen_s": setup_s + keygen_s,
        "fbt_s": fbt_s, "fbt_runs_s": runs, "fbt_ms_per_value": 1e3 * fbt_s / values,
        "fbt_ms_per_ckks_slot": 1e3 * fbt_s / ckks_slots,
        "encrypt_rlwe_s": encrypt_s, "rlwe_to_ckks_s": to_ckks_s, "ckks_to_rlwe_s": to_rlwe_s,
        "decrypt_rlwe_s": decrypt_s,
        "max_abs_error": int(max_err), "wrong_entries": int(wrong),
        "max_abs_error_before_rounding": float(raw.max()), "mean_abs_error_before_rounding": float(raw.mean()),
        "first_outputs": [int(v) for v in got[:8]], "first_expected": [centered(e, p_out) for e in exact[:8]],
    }

    if args.mvb:
        g = table_function("inc", p_out)
        coeffs2 = fhe.GetHermiteTrigCoefficients(g, p_in, order, float(scale_thi))
        t = time.perf_counter()
        powers = cc.EvalMVBPrecompute(ct, coeffs, args.bits, ep.GetModulus(), order)
        pre_s = time.perf_counter() - t
        mvb = {"precompute_s": pre_s}
        for name, fn, cf in (("f", f, coeffs), ("inc", g, coeffs2)):
            t = time.perf_counter()
            o = cc.EvalMVB(powers, cf, args.bits, scale_thi, 0, order)
            mvb[f"evalmvb_{name}_s"] = time.perf_counter() - t
            dec = fhe.SchemeletRLWEMP.DecryptCoeff(fhe.SchemeletRLWEMP.ConvertCKKSToRLWE(o, q), q, p_out,
                                                   keys.secretKey, ep, ckks_slots, values)
            _, mvb[f"max_abs_error_{name}"], mvb[f"wrong_entries_{name}"] = errors(dec, fn)
        say(f"MVB: precompute {pre_s:.2f} s, EvalMVB {mvb['evalmvb_f_s']:.2f} / {mvb['evalmvb_inc_s']:.2f} s")
        doc["mvb"] = mvb

    doc["peak_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    doc["rss_before_context_gib"] = rss0 / 2**20
    return doc


def run_sign(args) -> dict:
    """Multi-precision sign of ``in_bits``-bit integers by digit decomposition with EvalFBT on ``digit_bits``
    digits (OpenFHE's MultiPrecisionSign example, written with the Python SchemeletRLWEMP / PolyVector API)."""
    import numpy as np
    import openfhe as fhe

    in_bits, digit_bits = (int(v) for v in args.sign.split(":"))
    pre = SIGN_PRESETS[(in_bits, digit_bits)]

    def say(text):
        if not args.quiet:
            print(f"[openfhe sign {in_bits}/{digit_bits}-bit N=2^{args.log_n} t={args.threads}] {text}",
                  file=sys.stderr, flush=True)

    p_in0, p_digit = 1 << in_bits, 1 << digit_bits
    ring_dim = 1 << args.log_n
    values = args.values or ring_dim
    ckks_slots = values if values <= ring_dim // 2 else values // 2
    q0, bigq, qbfv_init = 1 << pre["q_bits"], 1 << pre["bigq_bits"], 1 << pre["qbfv_init_bits"]
    order, lvlb = args.order, pre["level_budget"]
    secret = {"sparse_encapsulated": fhe.SecretKeyDist.SPARSE_ENCAPSULATED,
              "sparse_ternary": fhe.SecretKeyDist.SPARSE_TERNARY}[args.secret]
    coeff_mod = fhe.GetHermiteTrigCoefficients(lambda m: m % p_digit, p_digit, order, float(pre["scale_thi"]))
    coeff_step = fhe.GetHermiteTrigCoefficients(lambda m: int(m % p_in0 >= p_digit // 2), p_digit, order,
                                                float(pre["scale_step_thi"]))
    depth = fhe.CryptoContext.GetFBTDepth(lvlb, coeff_mod, p_digit, order, secret)

    cc = fbt_context(fhe, pre, secret, ckks_slots, ring_dim, depth)
    n = cc.GetRingDimension()
    say(f"N = {n}, depth {depth}, {values} values in {ckks_slots} CKKS slots")
    keys, setup_s, keygen_pk_s, keygen_eval_s = fbt_keys(fhe, cc, coeff_mod, ckks_slots, p_digit, p_in0, bigq,
                                                         lvlb, order)
    keygen_s = keygen_pk_s + keygen_eval_s
    say(f"EvalFBTSetup {setup_s:.2f} s, keygen {keygen_s:.2f} s")

    ep = fhe.SchemeletRLWEMP.GetElementParams(keys.secretKey, depth)
    rng = np.random.default_rng(args.seed)
    x = [int(v) for v in rng.integers(0, p_in0, values)]
    x[:4] = [0, p_in0 // 2 - 1, p_in0 // 2, p_in0 - 1]
    exact = [int(v >= p_in0 // 2) for v in x]
    rlwe0 = fhe.SchemeletRLWEMP.EncryptCoeff(x, qbfv_init, p_in0, keys.secretKey, ep)
    fhe.SchemeletRLWEMP.ModSwitch(rlwe0, q0, qbfv_init)
    d_mod = fhe.GetMultiplicativeDepthByCoeffVector(coeff_mod, True)
    d_step = fhe.GetMultiplicativeDepthByCoeffVector(coeff_step, True)

    def sign_chain():
        ct, q, p, q_bits, post_bits = rlwe0.Clone(), q0, p_in0, pre["q_bits"], 0
        coeffs, scale, step, drop, fbt_times = coeff_mod, pre["scale_thi"], False, 0, []
        go = q_bits > pre["bigq_bits"]
        while go:
            digit = ct.Clone()
            digit.SwitchModulus(bigq)  # the low digit, mod Bigq
            c = fhe.SchemeletRLWEMP.ConvertRLWEToCKKS(cc, digit, keys.publicKey, bigq, ckks_slots, depth)
            t0 = time.perf_counter()
            out = cc.EvalFBT(c, coeffs, digit_bits, ep.GetModulus(), scale * (1 << post_bits), drop, order)
            fbt_times.append(time.perf_counter() - t0)
            polys = fhe.SchemeletRLWEMP.ConvertCKKSToRLWE(out, q)
            if step:
                ct = polys
            else:  # remove the digit, then divide by p_digit (modulus switch Q -> Q / p_digit)
                ct = ct - polys
                fhe.SchemeletRLWEMP.ModSwitch(ct, q >> digit_bits, q)
                q >>= digit_bits
                p >>= digit_bits
                q_bits -= digit_bits
                post_bits += digit_bits
            go = q_bits > pre["bigq_bits"]
            if digit_bits > 1 and not go and not step:  # last digit: step function instead of mod
                coeffs, scale, step, go = coeff_step, pre["scale_step_thi"], True, True
                drop = max(0, d_mod - d_step) if len(coeff_mod) > 4 else 0
        return ct, q, p, fbt_times

    chains = []
    result = None
    for i in range(args.repeat + 1):
        t = time.perf_counter()
        result = sign_chain()
        elapsed = time.perf_counter() - t
        say(f"sign {'warm-up' if i == 0 else f'run {i}'}: {elapsed:.2f} s "
            f"({len(result[3])} EvalFBT: {', '.join(f'{v:.2f}' for v in result[3])} s)")
        if i or args.repeat == 0:
            chains.append((elapsed, result[3]))
    ct, q, p, _ = result
    got = fhe.SchemeletRLWEMP.DecryptCoeff(ct, q, p, keys.secretKey, ep, ckks_slots, values)
    wrong = sum(1 for g, e in zip(got, exact) if g != e)
    sign_s = statistics.median(c[0] for c in chains)
    say(f"sign median {sign_s:.2f} s; wrong {wrong}/{values}")
    return {
        "library": "OpenFHE", "version": getattr(fhe, "__version__", "unknown"),
        "preset": "OpenFHE src/pke/examples/functional-bootstrapping-ckks.cpp (MultiPrecisionSign), full packing",
        "mode": "sign", "threads": args.threads, "cpu": cpu_model(), "n": n, "values": values,
        "ckks_slots": ckks_slots, "input_bits": in_bits, "digit_bits": digit_bits,
        "params": {"depth": depth, "q_towers": depth + 1, "scaling_mod_bits": pre["bigq_bits"],
                   "dnum": pre["dnum"], "level_budget": lvlb, "secret": args.secret, "order": order,
                   "scale_thi": pre["scale_thi"], "scale_step_thi": pre["scale_step_thi"],
                   "rlwe_q_bits": pre["q_bits"], "rlwe_encrypt_q_bits": pre["qbfv_init_bits"]},
        "fbt_setup_s": setup_s, "keygen_s": keygen_s, "sign_s": sign_s,
        "sign_runs_s": [c[0] for c in chains], "evalfbt_per_run_s": [c[1] for c in chains],
        "evalfbt_count": len(chains[-1][1]), "sign_ms_per_value": 1e3 * sign_s / values,
        "wrong_entries": wrong, "first_outputs": [int(v) for v in got[:8]], "first_expected": exact[:8],
        "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }


def child_argv(args, bits: int, log_n: int, threads: int) -> list[str]:
    argv = [sys.executable, os.path.abspath(__file__), "--child", "--bits", str(bits), "--log-n", str(log_n),
            "--threads", str(threads), "--repeat", str(args.repeat), "--func", args.func, "--order", str(args.order),
            "--secret", args.secret, "--seed", str(args.seed)]
    for key in ("values", "q_bits", "bigq_bits", "scale_thi", "dnum", "level_budget"):
        if getattr(args, key) is not None:
            argv += [f"--{key.replace('_', '-')}", str(getattr(args, key))]
    if args.mvb:
        argv.append("--mvb")
    if args.sign:
        argv += ["--sign", args.sign]
    if args.quiet:
        argv.append("--quiet")
    return argv


def print_table(runs: list[dict]) -> None:
    head = ("table", "N", "values", "slots", "thr", "depth", "setup s", "keygen s", "FBT s", "ms/value",
            "ms/slot", "max err", "wrong", "err<rnd", "RSS GiB")
    rows = []
    for r in runs:
        if "error" in r:
            rows.append((f"{r.get('bits')}-bit", f"2^{r.get('log_n')}", "-", "-", str(r.get("threads")), "-", "-",
                         "-", "FAILED", "-", "-", "-", "-", "-", r["error"][:60]))
            continue
        if r.get("mode") == "sign":
            rows.append((f"sign {r['input_bits']}b/{r['digit_bits']}b digits", str(r["n"]), str(r["values"]),
                         str(r["ckks_slots"]), str(r["threads"]), str(r["params"]["depth"]),
                         f"{r['fbt_setup_s']:.2f}", f"{r['keygen_s']:.2f}",
                         f"{r['sign_s']:.2f} ({r['evalfbt_count']} FBT)", f"{r['sign_ms_per_value']:.4f}",
                         f"{1e3 * r['sign_s'] / r['ckks_slots']:.4f}", "-", str(r["wrong_entries"]), "-",
                         f"{r['peak_rss_gib']:.2f}"))
            continue
        rows.append((f"{r['table']['entries']} ({r['table']['function']})", str(r["n"]), str(r["values"]),
                     str(r["ckks_slots"]), str(r["threads"]), str(r["params"]["depth"]), f"{r['fbt_setup_s']:.2f}",
                     f"{r['keygen_s']:.2f}", f"{r['fbt_s']:.2f}", f"{r['fbt_ms_per_value']:.4f}",
                     f"{r['fbt_ms_per_ckks_slot']:.4f}", str(r["max_abs_error"]), str(r["wrong_entries"]),
                     f"{r['max_abs_error_before_rounding']:.3g}", f"{r['peak_rss_gib']:.2f}"))
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    print(" | ".join(h.ljust(w) for h, w in zip(head, widths)))
    print("-+-".join("-" * w for w in widths))
    for row in rows:
        print(" | ".join(c.ljust(w) for c, w in zip(row, widths)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bits", type=int, default=4, choices=sorted(PRESETS), help="table input/output bits")
    ap.add_argument("--func", default="square", choices=("square", "shift"),
                    help="square: m^2 mod p; shift: (m - p/2) mod p (OpenFHE's benchmark table)")
    ap.add_argument("--log-n", type=int, default=None, help="log2 ring dimension (default: the preset's, 16)")
    ap.add_argument("--values", type=int, default=None, help="RLWE values (default N: full packing)")
    ap.add_argument("--sweep", default=None, help="comma list of bits:log_n, e.g. 4:16,8:16 (overrides --bits)")
    ap.add_argument("--threads", default="1", help="comma list of OMP thread counts (default 1)")
    ap.add_argument("--repeat", type=int, default=3, help="timed EvalFBT runs after one warm-up")
    ap.add_argument("--mvb", action="store_true", help="also time EvalMVBPrecompute + EvalMVB (two tables)")
    ap.add_argument("--sign", default=None, metavar="IN:DIGIT",
                    help="instead of a table: multi-precision sign, comma list of input:digit bits (12:4, 32:8)")
    ap.add_argument("--order", type=int, default=1, help="trigonometric Hermite interpolation order")
    ap.add_argument("--secret", default="sparse_encapsulated", choices=("sparse_encapsulated", "sparse_ternary"))
    ap.add_argument("--q-bits", type=int, default=None)
    ap.add_argument("--bigq-bits", type=int, default=None)
    ap.add_argument("--scale-thi", type=int, default=None)
    ap.add_argument("--dnum", type=int, default=None)
    ap.add_argument("--level-budget", default=None, help="e.g. 3,3")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=1200, help="seconds per configuration (default 1200)")
    ap.add_argument("--json", default=None, metavar="PATH", help="write the JSON document here ('-': stdout)")
    ap.add_argument("--quiet", action="store_true", help="no progress on stderr")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.child:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
        args.threads = int(args.threads)
        if args.log_n is None:
            args.log_n = PRESETS[args.bits]["log_n"]
        print(json.dumps(run_sign(args) if args.sign else run_one(args)))
        return

    if args.sign:
        configs = [(item, args.log_n or 16) for item in args.sign.split(",")]
    else:
        configs = ([tuple(int(v) for v in item.split(":")) for item in args.sweep.split(",")] if args.sweep
                   else [(args.bits, args.log_n or PRESETS[args.bits]["log_n"])])
    threads = [int(v) for v in args.threads.split(",")]
    started = time.time()
    runs = []
    for bits, log_n in configs:
        for thr in threads:
            env = dict(os.environ, OMP_NUM_THREADS=str(thr))
            if args.sign:
                one = argparse.Namespace(**{**vars(args), "sign": bits})
                argv = child_argv(one, 4, log_n, thr)
            else:
                argv = child_argv(args, bits, log_n, thr)
            load_before = os.getloadavg()
            t = time.perf_counter()
            try:
                proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=None, text=True,
                                      timeout=args.timeout)
                if proc.returncode == 0:
                    doc = json.loads(proc.stdout.strip().splitlines()[-1])
                else:
                    doc = {"bits": bits, "log_n": log_n, "threads": thr,
                           "error": f"exit status {proc.returncode} (signal {-proc.returncode})"
                           if proc.returncode < 0 else f"exit status {proc.returncode}"}
            except subprocess.TimeoutExpired:
                doc = {"bits": bits, "log_n": log_n, "threads": thr, "error": f"timeout after {args.timeout:.0f} s"}
            doc["wall_s"] = time.perf_counter() - t
            # 1-minute load average before and after: > threads means something else shared the CPUs
            doc["loadavg_1min_before_after"] = [load_before[0], os.getloadavg()[0]]
            runs.append(doc)
    result = {"benchmark": "openfhe_ckks_functional_bootstrapping", "command": " ".join(sys.argv),
              "date": time.strftime("%Y-%m-%d %H:%M:%S"), "cpu": cpu_model(), "cpus": os.cpu_count(),
              "total_wall_s": time.time() - started, "runs": runs}
    if args.json == "-":
        print(json.dumps(result, indent=1))
    else:
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(result, fh, indent=1)
        print_table(runs)


if __name__ == "__main__":
    main()
