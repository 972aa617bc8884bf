"""CKKS benchmarks behind ``ringfire bench ckks``: keygen/encrypt/decrypt, the
five routines of seed 000 (XeHE) and its encrypted matMul.

Routines (all on fresh size-2 ciphertexts at the top level):

* ``MulLin``            multiply + relinearize
* ``MulLinRS``          multiply + relinearize + rescale (``relinearize_rescale``: one ModDown, as ``a * b``)
* ``SqrLinRS``          square + relinearize + rescale (the same)
* ``MulLinRSModSwAdd``  MulLinRS, then mod-switch a fresh ciphertext to its level and add
* ``Rotate``            rotate by one slot (Galois key for step 1)
* ``matmul_MxNxK``      C += A * B with encrypted M x K and K x N matrices of
                        ciphertexts (each element a full vector): encode+encrypt the
                        inputs, K products (multiply + relinearize) summed per output,
                        one rescale, decrypt+decode every output — seed 000 Fig. 20.

Each timing is the median of ``repeat`` runs after a warm-up. On a GPU
(``device="cuda"``) each run ends with a device synchronisation, so the time is
what a caller waiting for the result sees; ``profile=True`` adds the share of
NTT kernels in each routine (seed 000 Fig. 9) and a per-kernel table.
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

from .foundations import median_ms

SETS = {
    "N14": dict(poly_degree=2**14, coeff_bits=[60] + [40] * 6, special_bits=[60], scale_bits=40),
    "seed000": dict(poly_degree=2**15, coeff_bits=[60] + [40] * 7, special_bits=[60], scale_bits=40),
    "N16": dict(poly_degree=2**16, coeff_bits=[60] + [40] * 20, special_bits=[60], scale_bits=40),
    "matmul": dict(poly_degree=2**13, coeff_bits=[60, 40], special_bits=[60], scale_bits=40),
}
ROUTINES = ("keygen", "encrypt", "decrypt", "MulLin", "MulLinRS", "SqrLinRS", "MulLinRSModSwAdd", "Rotate")
MATMULS = {"matmul_10x9x8": (10, 9, 8), "matmul_100x100x1": (100, 100, 1)}


def _bits(got, want) -> float:
    err = float(np.max(np.abs(np.asarray(got) - np.asarray(want))))
    return math.inf if err == 0 else -math.log2(err)


def matmul(ctx, keys, sk, dims, seed=0):
    """C = A * B on encrypted matrices (m x k times k x n), returns (C decrypted, reference)."""
    m, n, k = dims
    rng = np.random.default_rng(seed)
    a_vals = rng.uniform(-1, 1, (m, k, 8))
    b_vals = rng.uniform(-1, 1, (k, n, 8))
    ev = ctx.evaluator(keys)
    a = [[ctx.encrypt(a_vals[i, t], keys) for t in range(k)] for i in range(m)]
    b = [[ctx.encrypt(b_vals[t, j], keys) for j in range(n)] for t in range(k)]
    out = np.empty((m, n, 8))
    for i in range(m):
        for j in range(n):
            acc = ev.relinearize(ev.multiply(a[i][0], b[0][j]))
            for t in range(1, k):
                ev.add_inplace(acc, ev.relinearize(ev.multiply(a[i][t], b[t][j])))
            out[i, j] = ctx.decrypt(ev.rescale(acc), sk)[:8]
    return out, np.einsum("ikv,kjv->ijv", a_vals, b_vals)


def bench_ckks(set_names=("N14", "seed000"), repeat=5, with_matmul=False, quiet=False, device="cpu",
               profile=False):
    """Rows: one per (set, routine) with milliseconds and, where it applies, bits of
    precision; with ``profile`` (GPU only) also the NTT share and the kernel breakdown."""
    from .. import ckks, cuda

    if profile and not str(device).startswith("cuda"):
        raise ValueError("[bench] --profile times GPU kernels: use it with --device cuda")
    rows = []
    for name in set_names:
        spec = SETS[name]
        ctx = ckks.Context(**spec, device=device)
        reps = repeat if spec["poly_degree"] < 2**16 else max(2, repeat // 2)
        _say(f"  {name}: {ctx.describe()}", quiet)
        sk, keys = ctx.keygen(rotations=[1])
        ev = ctx.evaluator(keys)
        rng = np.random.default_rng(1)
        x, y, z = (rng.uniform(-1, 1, ctx.slots) for _ in range(3))
        a, b, c = (ctx.encrypt(v, keys) for v in (x, y, z))

        def mul_lin_rs():
            return ev.relinearize_rescale(ev.multiply(a, b))

        def mod_sw_add():
            r = mul_lin_rs()
            return ev.add(r, ev.adjust_to(c, r.level))

        cases = {}
        if name != "matmul":
            cases = {
                "keygen": (lambda: ctx.keygen(), None),
                "encrypt": (lambda: ctx.encrypt(x, keys), None),
                "decrypt": (lambda: ctx.decrypt(a, sk), x),
                "MulLin": (lambda: ev.relinearize(ev.multiply(a, b)), None),
                "MulLinRS": (mul_lin_rs, x * y),
                "SqrLinRS": (lambda: ev.relinearize_rescale(ev.square(a)), x * x),
                "MulLinRSModSwAdd": (mod_sw_add, x * y + z),
                "Rotate": (lambda: ev.rotate(a, 1), np.roll(x, -1)),
            }
        for routine, (fn, want) in cases.items():
            ms = median_ms(fn, reps, ctx.synchronize)
            row = {"set": name, "n": ctx.poly_degree, "limbs": ctx.max_level + 1, "routine": routine, "ms": ms,
                   "device": ctx.device}
            if want is not None:
                got = fn() if routine == "decrypt" else ctx.decrypt(fn(), sk)
                row["bits"] = _bits(got, want)
            if profile and routine not in ("keygen", "encrypt", "decrypt"):
                with cuda.profile(ctx.device) as prof:
                    for _ in range(reps):
                        fn()
                row["ntt_share"] = prof.ntt_share()
                row["kernels"] = prof.by_kernel()
                _say(prof.table(), quiet)
            rows.append(row)
            _say(f"    {routine:<18} {ms:10.2f} ms" + (f"  {row['bits']:.1f} bits" if "bits" in row else "")
                 + (f"  NTT {100 * row['ntt_share']:.0f}%" if "ntt_share" in row else ""), quiet)
        if with_matmul and name == "matmul":
            for routine, dims in MATMULS.items():
                t = time.perf_counter()
                got, want = matmul(ctx, keys, sk, dims)
                ms = 1000 * (time.perf_counter() - t)
                rows.append({"set": name, "n": ctx.poly_degree, "limbs": ctx.max_level + 1, "routine": routine,
                             "ms": ms, "bits": _bits(got, want)})
                _say(f"    {routine:<18} {ms:10.0f} ms  {rows[-1]['bits']:.1f} bits", quiet)
    return rows


def _say(msg: str, quiet: bool) -> None:
    if not quiet:
        print(msg, file=sys.stderr, flush=True)
