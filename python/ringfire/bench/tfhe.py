"""``ringfire bench tfhe``: FHEW/TFHE gates, tables and integers per preset.

For each parameter set, rows (set, routine, value, unit, exact):

* keygen          secret key + bootstrapping and key-switching keys (s)
* bootstrap key   its bytes in memory (MB); ``key switch key`` likewise
* keys serialized the evaluation keys as a client sends them (seeded, MB)
* NAND            one gate, one thread: median latency over ``repeat`` gates (ms)
* NAND batch      64 gates on all threads (gates/s)
* LUT 2-bit       one 2-bit table lookup, one thread (ms); ``LUT 3-bit`` and ``LUT 4-bit`` likewise
* LUT 4-bit batch, one thread   32 lookups in one call, one thread: ms per lookup (the
                  torus sets stream each step's key once for four ciphertexts)
* LUT 4-bit batch  64 lookups in one call on all threads (lookups/s)
* 4 LUTs 2-bit, one rotation   four 2-bit tables of one input from one blind rotation (ms)
* sign 9-bit      the sign of a 9-bit integer in one ciphertext, one thread (ms; torus sets)
* 9-bit >> 4      floor(x / 16) of a 9-bit integer in one ciphertext, one thread (ms; torus sets)
* sign 21-bit, 21-bit >> 4   the same for 21-bit integers, on sets whose bootstraps are precise
                  enough for them (STD128_T64_WIDE)
* uint16 add      one 16-bit addition (16 levels of full adders), all threads (ms)
* uint16 <        one 16-bit comparison (the carry chain), all threads (ms)
* radix16 add, radix16 <, radix16 max   the same on radix-4 blocks (``encrypt_radix``; torus sets)
* radix16 * c, radix16 * y              a product by a public 16-bit constant and by another radix16
* p_fail ...      the noise model's failure probability (log2) of NAND, MAJ, 2-, 3- and 4-bit
                  tables (and the 9-bit sign and shift and the 18-bit sign, all on bootstrapped
                  inputs, on the torus sets)

``exact`` says whether every result decrypted to Python's answer. The same
gate, table and key-generation figures for OpenFHE's binfhe run beside these
in ``benchmarks/tfhe_vs_peers.py``.
"""

from __future__ import annotations

import gc
import sys
import time
import warnings

import numpy as np

from .. import _core
from ..tfhe import Context
from .foundations import median_ms

SETS = ("STD128", "STD128_LMKCDEY", "STD128_LP", "STD128_LUT", "STD128_T64", "STD128_T64_MB", "STD128_T64_LP",
        "STD128_T64_WIDE")


def bench_tfhe(sets=SETS, repeat: int = 20, quiet: bool = False) -> list[dict]:
    rows: list[dict] = []
    rng = np.random.default_rng(7)
    threads = _core.num_threads()
    for name in sets:
        ctx = Context.preset(name)

        def row(routine, value, unit, exact=None):
            rows.append({"set": name, "routine": routine, "value": value, "unit": unit, "exact": exact,
                         "isa": ctx.isa})
            if not quiet:
                print(f"[bench tfhe] {name} {routine}: {value:.4g} {unit}", file=sys.stderr)

        t0 = time.perf_counter()
        sk = ctx.keygen()
        row("keygen", time.perf_counter() - t0, "s")
        sizes = ctx.evaluation_key_bytes
        row("bootstrap key", sizes["bootstrap"] / 1e6, "MB")
        row("key switch key", sizes["key_switch"] / 1e6, "MB")
        row("keys serialized", len(ctx.save_evaluation_keys()) / 1e6, "MB")

        bits = rng.integers(0, 2, (2, 64)).astype(bool)
        a, b = ctx.encrypt(bits[0], sk), ctx.encrypt(bits[1], sk)
        want = ~(bits[0] & bits[1])
        ctx.threads = 1
        one_a, one_b = a[:1], b[:1]
        ms = median_ms(lambda: ctx.nand(one_a, one_b), repeat)
        row("NAND", ms, "ms", bool((ctx.decrypt(ctx.nand(one_a, one_b), sk) == want[:1]).all()))
        ctx.threads = 0
        t0 = time.perf_counter()
        out = ctx.nand(a, b)
        row("NAND batch", 64 / (time.perf_counter() - t0), "gates/s", bool((ctx.decrypt(out, sk) == want).all()))

        ctx.threads = 1
        table = ctx.lut(lambda m: (3 * m + 1) % 4, bits=2)
        x = ctx.encrypt([2], sk, bits=2)
        ms = median_ms(lambda: table(x), repeat)
        row("LUT 2-bit", ms, "ms", bool(ctx.decrypt(table(x), sk)[0] == 3))
        cube = ctx.lut(lambda m: m ** 3 % 8, bits=3)
        x3 = ctx.encrypt([5], sk, bits=3)
        with warnings.catch_warnings():  # a set too noisy for 3 bits warns; its p_fail row says so
            warnings.simplefilter("ignore")
            ms = median_ms(lambda: cube(x3), repeat)
            exact = bool(ctx.decrypt(cube(x3), sk)[0] == 5)
        row("LUT 3-bit", ms, "ms", exact)
        inc = ctx.lut(lambda m: (m + 7) % 16, bits=4)
        x4 = ctx.encrypt([11], sk, bits=4)
        with warnings.catch_warnings():  # likewise for 4 bits
            warnings.simplefilter("ignore")
            ms = median_ms(lambda: inc(x4), repeat)
            exact = bool(ctx.decrypt(inc(x4), sk)[0] == 2)
        row("LUT 4-bit", ms, "ms", exact)
        many = ctx.encrypt(rng.integers(0, 16, 64), sk, bits=4)
        want4 = (ctx.decrypt(many, sk) + 7) % 16
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            first = many[:32]
            ms = median_ms(lambda: inc(first), max(1, repeat // 10)) / 32
            exact = bool((ctx.decrypt(inc(first), sk) == want4[:32]).all())
            row("LUT 4-bit batch, one thread", ms, "ms", exact)
            ctx.threads = 0
            t0 = time.perf_counter()
            out4 = inc(many)
            row("LUT 4-bit batch", 64 / (time.perf_counter() - t0), "lookups/s",
                bool((ctx.decrypt(out4, sk) == want4).all()))
            ctx.threads = 1
        fns = [lambda m, k=k: (m + k) % 4 for k in range(4)]
        with warnings.catch_warnings():  # likewise for four tables of 2 bits
            warnings.simplefilter("ignore")
            four = ctx.lut_many(fns, bits=2)
            ms = median_ms(lambda: four(x), repeat)
            exact = [int(ctx.decrypt(o, sk)[0]) for o in four(x)] == [(2 + k) % 4 for k in range(4)]
        row("4 LUTs 2-bit, one rotation", ms, "ms", exact)
        if ctx.params.word_bits == 64:  # the large-precision sign needs the torus engine
            x9 = ctx.encrypt([255, 256], sk, bits=9)
            one9 = x9[:1]
            ms = median_ms(lambda: ctx.sign(one9), max(1, repeat // 3))
            row("sign 9-bit", ms, "ms", ctx.decrypt(ctx.sign(x9), sk).tolist() == [False, True])
            ms = median_ms(lambda: one9 >> 4, max(1, repeat // 3))
            row("9-bit >> 4", ms, "ms", ctx.decrypt(x9 >> 4, sk).tolist() == [15, 16])
            if ctx.failure_probability("sign", bits=18, log2=True) < -64:  # a set for wide integers
                x21 = ctx.encrypt([(1 << 20) - 1, 1 << 20], sk, bits=21)  # OpenFHE's p = 2^21 at log Q = 29
                one21 = x21[:1]
                ms = median_ms(lambda: ctx.sign(one21), max(1, repeat // 10))
                row("sign 21-bit", ms, "ms", ctx.decrypt(ctx.sign(x21), sk).tolist() == [False, True])
                ms = median_ms(lambda: one21 >> 4, max(1, repeat // 10))
                row("21-bit >> 4", ms, "ms", ctx.decrypt(x21 >> 4, sk).tolist() == [65535, 65536])
        ctx.threads = 0

        u, v = rng.integers(0, 1 << 16, 2)
        xu, yu = ctx.encrypt_uint([u], sk, bits=16), ctx.encrypt_uint([v], sk, bits=16)
        ms = median_ms(lambda: xu + yu, max(1, repeat // 10))
        row("uint16 add", ms, "ms", bool(ctx.decrypt(xu + yu, sk)[0] == (u + v) % 65536))
        ms = median_ms(lambda: xu < yu, max(1, repeat // 10))
        row("uint16 <", ms, "ms", bool(ctx.decrypt(xu < yu, sk)[0] == (u < v)))
        if ctx.params.word_bits == 64:  # radix blocks need the torus sets' 4-bit tables
            xr, yr = ctx.encrypt_radix([u], sk, bits=16), ctx.encrypt_radix([v], sk, bits=16)
            ms = median_ms(lambda: xr + yr, max(1, repeat // 10))
            row("radix16 add", ms, "ms", bool(ctx.decrypt(xr + yr, sk)[0] == (u + v) % 65536))
            ms = median_ms(lambda: xr < yr, max(1, repeat // 10))
            row("radix16 <", ms, "ms", bool(ctx.decrypt(xr < yr, sk)[0] == (u < v)))
            ms = median_ms(lambda: xr.max(yr), max(1, repeat // 10))
            row("radix16 max", ms, "ms", bool(ctx.decrypt(xr.max(yr), sk)[0] == max(u, v)))
            c = int(rng.integers(1 << 15, 1 << 16))
            ms = median_ms(lambda: xr * c, max(1, repeat // 10))
            row("radix16 * c", ms, "ms", bool(ctx.decrypt(xr * c, sk)[0] == u * c % 65536))
            ms = median_ms(lambda: xr * yr, max(1, repeat // 10))
            row("radix16 * y", ms, "ms", bool(ctx.decrypt(xr * yr, sk)[0] == u * v % 65536))

        checks = [("p_fail NAND", "nand", {}), ("p_fail MAJ", "maj", {}), ("p_fail LUT 2-bit", "lut", {"bits": 2}),
                  ("p_fail LUT 3-bit", "lut", {"bits": 3}), ("p_fail LUT 4-bit", "lut", {"bits": 4}),
                  ("p_fail 4 LUTs 2-bit", "lut_many", {"bits": 2, "tables": 4})]
        if ctx.params.word_bits == 64:
            checks.append(("p_fail sign 9-bit", "sign", {"bits": 9}))
            checks.append(("p_fail 9-bit >> 4", "shift_right", {"bits": 9, "shift": 4}))
            checks.append(("p_fail sign 18-bit", "sign", {"bits": 18}))
        for label, operation, kw in checks:
            row(label, ctx.failure_probability(operation, log2=True, **kw), "log2")
        row("threads", threads, "")
        del ctx, sk
        gc.collect()
    return rows
