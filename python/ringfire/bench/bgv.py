"""``ringfire bench bgv`` and ``ringfire bench bfv``: the integer schemes' routines.

For each parameter set (ring degree N and a multiplicative depth: 5 at 2^14,
12 at 2^15, 25 at 2^16; t = 786433, a 20-bit batching prime for every N up to
2^17) and each configuration, rows (set, config, routine, ms, exact) with:

* keygen    secret + public + relinearization key
* encrypt   batch encode + public-key encryption of N residues
* decrypt   decryption + batch decode (noise budget included)
* MulRelin  ciphertext product + relinearization at the top level (BFV: the
            scale-invariant product; BGV: the tensor, without the modulus
            switch that follows it)
* Rotate    both rows left by one

Times are medians over ``repeat`` runs after a warm-up. ``exact`` says whether
the product and the rotation decrypted to NumPy's answer mod t. The same sets
and routines run in SEAL and OpenFHE in ``benchmarks/bgv_vs_peers.py``.

Configurations: ``default`` is what ``Context(poly_degree=N,
plain_modulus=t, depth=d)`` gives: the smallest chain for that depth (BFV:
60-bit primes; BGV: the primes its modulus switching needs) and the special
primes and digits chosen for speed; ``one-special`` keeps that chain with
one special prime (``special_bits=[60]``: one digit per ciphertext prime,
SEAL's convention), for reference.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time

import numpy as np

from ..bgv.chains import chain_for_depth

PLAIN_MODULUS = 786433  # 3 * 2^18 + 1: batches every N up to 2^17
SETS = {"N14": (2**14, 5), "N15": (2**15, 12), "N16": (2**16, 25)}  # (N, depth)
CONFIGS = ("default", "one-special")


def make_context(scheme_module, n: int, depth: int, config: str, device: str = "cpu"):
    if config == "default":
        return scheme_module.Context(poly_degree=n, plain_modulus=PLAIN_MODULUS, depth=depth, device=device)
    if config == "one-special":
        chain = chain_for_depth(scheme_module.Context.scheme, n, depth, PLAIN_MODULUS)
        return scheme_module.Context(poly_degree=n, plain_modulus=PLAIN_MODULUS, coeff_bits=chain, special_bits=[60],
                                     device=device)
    raise ValueError(f"[bench] unknown configuration {config!r}: choose from {CONFIGS}")


def _median_ms(fn, repeat: int) -> float:
    times = []
    for i in range(repeat + 1):
        gc.disable()
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        gc.enable()
        if i:
            times.append(elapsed * 1e3)
    return statistics.median(times)


def time_routines(ctx, repeat: int, seed: int = 1234) -> tuple[dict, dict]:
    """({routine: median ms}, {check: exact?}) for one context (see the module docstring)."""
    t = ctx.plain_modulus
    rng = np.random.default_rng(seed)
    x, y = (rng.integers(0, t, ctx.slots, dtype=np.int64) for _ in range(2))
    sk, keys = ctx.keygen(rotations=[1])
    ev = ctx.evaluator(keys)
    scale_invariant = ctx.scheme == "bfv"
    a, b = ctx.encrypt(x, keys), ctx.encrypt(y, keys)

    def mul_relin():
        prod = ev.multiply_scale_invariant(a, b) if scale_invariant else ev.multiply(a, b)
        out = ev.relinearize(prod)
        ctx.synchronize()
        return out

    def rotate():
        out = ev.rotate(a, 1)
        ctx.synchronize()
        return out

    keygen_repeat = min(repeat, 3) if ctx.poly_degree >= 2**16 else repeat
    ms = {
        "keygen": _median_ms(ctx.keygen, keygen_repeat),
        "encrypt": _median_ms(lambda: ctx.encrypt(x, keys), repeat),
        "decrypt": _median_ms(lambda: ctx.decrypt(a, sk, signed=False), repeat),
        "MulRelin": _median_ms(mul_relin, repeat),
        "Rotate": _median_ms(rotate, repeat),
    }
    ctx.set_keys(keys)
    want = (x.astype(object) * y.astype(object)) % t
    checks = {
        "MulRelin": bool(np.array_equal(ctx.decrypt(mul_relin(), sk, signed=False), want.astype(np.int64))),
        "Rotate": bool(np.array_equal(ctx.decrypt(rotate(), sk, signed=False),
                                      np.roll(x.reshape(2, -1), -1, axis=1).ravel())),
    }
    return ms, checks


def bench_integer(scheme: str, sets, configs=CONFIGS, repeat: int = 5, device: str = "cpu",
                  quiet: bool = False) -> list[dict]:
    from .. import bfv, bgv

    module = {"bgv": bgv, "bfv": bfv}[scheme]
    rows = []
    for name in sets:
        n, depth = SETS[name]
        for config in configs:
            ctx = make_context(module, n, depth, config, device)
            ms, checks = time_routines(ctx, repeat)
            params = ctx.params
            for routine, value in ms.items():
                rows.append({"scheme": scheme, "set": name, "n": n, "depth": depth, "config": config,
                             "limbs": len(params.q_primes), "special": len(params.p_primes), "dnum": params.dnum,
                             "log_qp": round(params.log_qp, 1), "routine": routine, "ms": value,
                             "exact": {True: "yes", False: "NO"}.get(checks.get(routine), "")})
            if not quiet:
                print(f"[bench {scheme}] {name} {config}: " + ", ".join(f"{k} {v:.2f} ms" for k, v in ms.items())
                      + f"; exact {all(checks.values())}", file=sys.stderr, flush=True)
    return rows
