"""``ringfire demo --tour``: the foundations under the schemes, on the CPU -- NTT-friendly
primes, negacyclic products, the batched NTT, the modular reductions of seed 002, CRT and
exact base conversion -- then CKKS arithmetic.

Each step checks its result against plain Python integers, so the tour is also a smoke
test of a fresh install.
"""

from __future__ import annotations

import json
import time

import numpy as np

from .. import _core, arith, ring


def _schoolbook(a, b, q):
    n = len(a)
    c = [0] * n
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            k = i + j
            if k < n:
                c[k] += x * y
            else:
                c[k - n] -= x * y
    return [v % q for v in c]


def run_tour(json_output: bool = False) -> int:
    report: dict = {}
    say = (lambda *a: None) if json_output else print
    rng = np.random.default_rng(2026)

    say("ringfire demo --tour -- RNS polynomial arithmetic and CKKS on the CPU\n")
    n = 1 << 14
    primes = ring.find_primes(60, 4, n)
    report["primes"] = primes
    say(f"1. NTT-friendly primes (60-bit, q = 1 mod 2N, N = {n}):")
    for q in primes:
        say(f"     {q}  psi = {ring.primitive_root(q, n)}")

    say("\n2. Negacyclic product in Z_q[X]/(X^N+1), checked against a schoolbook product (N = 64)")
    q64 = ring.find_primes(61, 1, 64)[0]
    a = rng.integers(0, q64, 64, dtype=np.uint64)
    b = rng.integers(0, q64, 64, dtype=np.uint64)
    ref = _schoolbook([int(x) for x in a], [int(x) for x in b], q64)
    ok_ntt = [int(x) for x in ring.poly_mul(a, b, q64)] == ref
    ok_kar = [int(x) for x in ring.poly_mul(a, b, q64, method="karatsuba")] == ref
    say(f"     NTT path: {'exact' if ok_ntt else 'MISMATCH'};  Karatsuba-fused path: {'exact' if ok_kar else 'MISMATCH'}")
    report["poly_mul_exact"] = ok_ntt and ok_kar

    say(f"\n3. Batched NTT round trip on {len(primes)} limbs x N = {n}")
    x = np.stack([rng.integers(0, q, n, dtype=np.uint64) for q in primes])
    start = time.perf_counter()
    y = ring.ntt(x, primes)
    t_fwd = time.perf_counter() - start
    back = ring.intt(y, primes)
    ok_rt = bool(np.array_equal(back, x))
    say(f"     forward: {t_fwd * 1e3:.2f} ms for {len(primes)} limbs (incl. Python overhead); "
        f"round trip {'exact' if ok_rt else 'MISMATCH'}")
    report["ntt_round_trip_exact"] = ok_rt

    say("\n3b. Modular products with the reductions of seed 002 (hard case of §II-B)")
    a0, b0, q0 = 994674970, 994705408, 994705409
    results = {m: int(arith.mul_mod(np.array([a0], np.uint64), np.array([b0], np.uint64), q0, method=m)[0])
               for m in arith.METHODS}
    ok_mod = all(v == (a0 * b0) % q0 for v in results.values())
    say(f"     {a0} * {b0} mod {q0} = {(a0 * b0) % q0}; all of {', '.join(results)}: "
        f"{'agree' if ok_mod else 'DISAGREE'}")
    report["modmul_agree"] = ok_mod

    say("\n4. CRT: residues <-> big integers, and exact base conversion")
    base = ring.RnsBase(n, primes[:3])
    values = [12345678901234567890123456789, -42, base.product - 1]
    residues = base.decompose(values)
    composed = [int(v) for v in base.compose(residues)]
    ok_crt = composed == [v % base.product for v in values]
    say(f"     Q has {base.product.bit_length()} bits; compose(decompose(v)) == v mod Q: {ok_crt}")
    target = ring.find_primes(50, 2, n)
    poly = np.zeros((3, n), dtype=np.uint64)
    poly[:, :3] = residues
    conv = ring.base_convert(poly, primes[:3], target, exact=True)
    centered = [v % base.product if v % base.product <= base.product // 2 else v % base.product - base.product
                for v in values]
    ok_conv = all(int(conv[j, i]) == centered[i] % p for j, p in enumerate(target) for i in range(3))
    say(f"     exact conversion to {len(target)} new primes gives the centered values: {ok_conv}")
    report["crt_exact"] = ok_crt and ok_conv

    say("\n5. CKKS: encrypted arithmetic on 8192 real numbers (N = 2^14, 128-bit secure)")
    from .. import ckks
    start = time.perf_counter()
    ctx = ckks.Context(poly_degree=2**14, coeff_bits=[60, 40, 40, 40, 60], scale_bits=40)
    sk, keys = ctx.keygen(rotations=[1])
    t_keys = time.perf_counter() - start
    xs = rng.uniform(-1, 1, ctx.slots)
    start = time.perf_counter()
    enc = ctx.encrypt(xs, keys)
    out = (enc * enc + 0.5).rotate(1) * 3
    t_eval = time.perf_counter() - start
    got = ctx.decrypt(out, sk)
    want = 3 * np.roll(xs * xs + 0.5, -1)
    bits = -float(np.log2(np.max(np.abs(got - want))))
    say(f"     {ctx.describe()}")
    say(f"     keygen {t_keys * 1e3:.0f} ms; encrypt + (x*x + 0.5).rotate(1) * 3: {t_eval * 1e3:.0f} ms")
    say(f"     decrypted {got[:3].round(6)} ... vs plain {want[:3].round(6)} ...: {bits:.1f} bits of precision")
    report["ckks_precision_bits"] = bits
    report["ckks_ok"] = bits > 15

    say(f"\n6. Build: CUDA backend compiled: {_core.cuda_compiled()}, GPUs visible: {_core.cuda_device_count()}, "
        f"CPU threads: {_core.num_threads()}")
    ok = all(v for k, v in report.items() if k not in ("primes", "ckks_precision_bits"))
    report["ok"] = ok
    if json_output:
        print(json.dumps(report, indent=2))
    else:
        say("\nAll checks passed." if ok else "\nSOME CHECKS FAILED.")
        say("Next: `ringfire bench ckks` times the CKKS routines; `ringfire bench bootstrap` a 128-bit CKKS "
            "bootstrap (docs/bootstrapping.md); `ringfire bench ntt` the NTT; `ringfire rpu ntt` simulates the RPU "
            "accelerator.")
    return 0 if ok else 1
