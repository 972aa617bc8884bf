"""Shared harness for the peer-comparison scripts (pure Python + NumPy).

Imported by every ``peer_*.py`` script, under Python 3.10 (OpenFHE) or 3.11 (the
others), so it must stay dependency-free apart from NumPy.

Call :func:`pin_threads` *before* importing the HE library so that OpenMP-based
libraries (OpenFHE, SEAL's callers, DESILO) see the requested thread count.
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import statistics
import sys
import time

ROUTINES = [
    "keygen",
    "encrypt",
    "decrypt",
    "MulLin",
    "MulLinRS",
    "MulLinRS_two_steps",  # ringfire only: relinearize then rescale, two ModDowns (MulLinRS fuses them)
    "SqrLinRS",
    "MulLinRSModSwAdd",
    "Rotate",
]
MATMULS = {"matmul_10x9x8": (10, 9, 8), "matmul_100x100x1": (100, 100, 1)}
ALL_KEYS = ROUTINES + list(MATMULS)


def pin_threads(argv=None):
    """Read ``--threads`` from argv early and export the usual thread-count variables."""
    argv = sys.argv[1:] if argv is None else argv
    t = 1
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            t = int(argv[i + 1])
        elif a.startswith("--threads="):
            t = int(a.split("=", 1)[1])
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(t)
    return t


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (the platform's processor string elsewhere)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or "unknown"


def int_list(s):
    return [int(x) for x in str(s).replace(" ", "").split(",") if x]


def parse_args(description, argv=None):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--n", type=int, default=1 << 14, help="ring degree N (power of two)")
    p.add_argument("--coeff-bits", type=int_list, default=[60] + [40] * 6,
                   help="Q primes, comma separated: first = base prime, the rest = rescaling primes")
    p.add_argument("--special-bits", type=int_list, default=[60],
                   help="key-switching (special) primes P, comma separated")
    p.add_argument("--scale-bits", type=int, default=40)
    p.add_argument("--dnum", type=int, default=None,
                   help="hybrid key-switching digits (default: library-specific, see notes)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeat", type=int, default=5, help="timed repetitions per routine (median)")
    p.add_argument("--keygen-repeat", type=int, default=None,
                   help="timed repetitions for keygen (default: min(repeat, 3) when N >= 2^16)")
    p.add_argument("--matmul-repeat", type=int, default=1)
    p.add_argument("--skip-matmul", action="store_true")
    p.add_argument("--only-matmul", action="store_true",
                   help="measure only the matmul applications (plus keygen)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--json", action="store_true", help="print only the JSON document")
    a = p.parse_args(argv)
    if a.keygen_repeat is None:
        a.keygen_repeat = a.repeat if a.n < (1 << 16) else min(a.repeat, 3)
    return a


def median_ms(fn, repeat, warmup=1, setup=None):
    """Median wall time of ``fn(*setup())`` in ms over ``repeat`` runs after ``warmup``."""
    times = []
    for i in range(warmup + repeat):
        args = setup() if setup is not None else ()
        gc.disable()
        t0 = time.perf_counter()
        fn(*args)
        dt = time.perf_counter() - t0
        gc.enable()
        if i >= warmup:
            times.append(dt * 1e3)
    return statistics.median(times)


def precision_bits(got, want):
    import numpy as np

    got = np.asarray(got)[: len(want)]
    err = float(np.max(np.abs(np.real(got) - np.asarray(want))))
    if err == 0.0:
        return 64.0
    return round(-math.log2(err), 2)


def time_routines(rep, args, ops, a, b, c, x, y, z):
    """Times the seed-000 routines and records the precision of the checked ones.

    ops: encrypt(vec), decrypt(ct), mul_lin(u, v), mul_lin_rs(u, v), sqr_lin_rs(u),
    mul_lin_rs_modsw_add(u, v, w), rotate(u); a, b, c encrypt x, y, z (c at the
    scale a MulLinRS result carries). Returns the decrypted rotation, whose
    direction some libraries need to check themselves.
    """
    import numpy as np

    R = args.repeat
    rep.run("encrypt", lambda: median_ms(lambda: ops["encrypt"](x), R))
    rep.run("decrypt", lambda: median_ms(lambda: ops["decrypt"](a), R))
    rep.run("MulLin", lambda: median_ms(lambda: ops["mul_lin"](a, b), R))
    rep.run("MulLinRS", lambda: median_ms(lambda: ops["mul_lin_rs"](a, b), R))
    rep.run("SqrLinRS", lambda: median_ms(lambda: ops["sqr_lin_rs"](a), R))
    rep.run("MulLinRSModSwAdd", lambda: median_ms(lambda: ops["mul_lin_rs_modsw_add"](a, b, c), R))
    rep.run("Rotate", lambda: median_ms(lambda: ops["rotate"](a), R))
    decrypt = ops["decrypt"]
    rep.precision["encrypt_decrypt"] = precision_bits(decrypt(a), x)
    rep.precision["MulLinRS"] = precision_bits(decrypt(ops["mul_lin_rs"](a, b)), x * y)
    rep.precision["MulLinRSModSwAdd"] = precision_bits(decrypt(ops["mul_lin_rs_modsw_add"](a, b, c)), x * y + z)
    rotated = decrypt(ops["rotate"](a))
    rep.precision["Rotate"] = precision_bits(rotated, np.roll(x, -1))
    return rotated


class Report:
    def __init__(self, library, version, args):
        self.library = library
        self.version = version
        self.args = args
        self.params = {
            "n": args.n,
            "coeff_bits": list(args.coeff_bits),
            "special_bits": list(args.special_bits),
            "scale_bits": args.scale_bits,
            "dnum": args.dnum,
        }
        self.results = {k: None for k in ALL_KEYS}
        self.precision = {}
        self.notes = []
        self.t0 = time.perf_counter()

    def note(self, msg):
        if msg not in self.notes:
            self.notes.append(msg)

    def set(self, key, value):
        self.results[key] = None if value is None else round(float(value), 4)
        if not self.args.json:
            v = "n/a" if value is None else "%.3f ms" % value
            print("  %-20s %s" % (key, v), file=sys.stderr, flush=True)

    def run(self, key, fn):
        """Run ``fn()`` returning ms; record None and a note on any exception."""
        try:
            self.set(key, fn())
        except Exception as e:  # noqa: BLE001 - a peer failing one routine must not kill the run
            self.set(key, None)
            self.note("%s failed: %s: %s" % (key, type(e).__name__, str(e)[:200]))

    def doc(self):
        return {
            "library": self.library,
            "version": self.version,
            "params": self.params,
            "threads": self.args.threads,
            "repeat": self.args.repeat,
            "results_ms": self.results,
            "precision_bits": self.precision,
            "notes": self.notes,
            "wall_s": round(time.perf_counter() - self.t0, 1),
        }

    def dump(self):
        doc = self.doc()
        print(json.dumps(doc, indent=None if self.args.json else 1))
        return doc


def random_inputs(n_slots, seed, count=3):
    import numpy as np

    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.0, 1.0, n_slots) for _ in range(count)]


def matmul_driver(report, key, dims, encrypt, mul_lin, add, rescale, decrypt, slots, seed):
    """Time the XeHE matMul application C = A*B (A m×k, B k×n) on encrypted matrices.

    encrypt(vec)->ct (encode+encrypt), mul_lin(a,b)->ct (multiply+relinearize),
    add(a,b)->ct, rescale(ct)->ct, decrypt(ct)->vector (decrypt+decode).
    Each matrix element is a ciphertext of `slots` values; element products are
    slot-wise.  The whole process (encode+encrypt A and B, the m*n*k MulLin, the
    m*n*(k-1) adds, one rescale per C element, decrypt+decode of C) is timed.
    C elements are decrypted as soon as they are complete (streaming), so memory
    stays at the inputs plus one accumulator.  The plaintext inputs come from a
    few random vectors, reused, so generating them is not timed.
    """
    import numpy as np

    m, n, k = dims
    base = random_inputs(slots, seed, count=4)
    a_vals = [[base[(i + t) % 4] for t in range(k)] for i in range(m)]
    b_vals = [[base[(t * 3 + j + 1) % 4] for j in range(n)] for t in range(k)]
    want00 = sum(a_vals[0][t] * b_vals[t][0] for t in range(k))
    check = {}

    def once():
        A = [[encrypt(a_vals[i][t]) for t in range(k)] for i in range(m)]
        B = [[encrypt(b_vals[t][j]) for j in range(n)] for t in range(k)]
        for i in range(m):
            for j in range(n):
                acc = mul_lin(A[i][0], B[0][j])
                for t in range(1, k):
                    acc = add(acc, mul_lin(A[i][t], B[t][j]))
                acc = rescale(acc)
                out = decrypt(acc)
                if i == 0 and j == 0:
                    check["c00"] = out

    ms = median_ms(once, report.args.matmul_repeat, warmup=0)
    report.precision[key] = precision_bits(check["c00"], want00)
    return ms


def nearest_note(report, what):
    report.note(what)


def emit_error_and_exit(library, version, args, msg):
    r = Report(library, version, args)
    r.note(msg)
    r.dump()
    sys.exit(0)
