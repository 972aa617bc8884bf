"""Shared harness for the BGV/BFV peer scripts (pure Python + NumPy).

Every ``peer_*_int.py`` script (and ringfire's own ``peer_ringfire_int.py``)
takes the same arguments and prints the same JSON document:
``{"library", "version", "scheme", "config", "params", "threads",
"results_ms", "checks", "notes"}``.

Routines, all on N slots of uniform residues mod t, encrypted with the
public key at the top level; times are medians over ``--repeat`` runs after
one warm-up, wall clock, GC off, out-of-place:

* keygen      secret + public + relinearization key
* encrypt     batch encode + public-key encrypt
* decrypt     decrypt + batch decode
* MulRelin    ciphertext product + relinearization (BFV: scale-invariant)
* Rotate      rotate both rows left by one (a Galois key for step 1)

``checks`` records whether the product and the rotation decrypt to NumPy's
exact answer mod t.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from _common import median_ms, pin_threads  # noqa: F401  (re-exported for the peer scripts)

ROUTINES = ["keygen", "encrypt", "decrypt", "MulRelin", "Rotate"]


def int_list(s):
    return [int(x) for x in str(s).replace(" ", "").split(",") if x]


def parse_args(description, argv=None):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--scheme", choices=("bfv", "bgv"), default="bfv")
    p.add_argument("--config", choices=("default", "best"), default="default",
                   help="the library's default key switching / multiplication, or its fastest documented choice")
    p.add_argument("--n", type=int, default=1 << 14)
    p.add_argument("--t", type=int, default=786433, help="plaintext modulus (a batching prime)")
    p.add_argument("--coeff-bits", type=int_list, default=[60] + [40] * 5, help="Q primes (bits), comma separated")
    p.add_argument("--special-bits", type=int_list, default=[60], help="special primes (bits) where the library takes them")
    p.add_argument("--depth", type=int, default=5, help="multiplicative depth, for libraries that size Q themselves")
    p.add_argument("--dnum", type=int, default=3, help="key-switching digits of the best config")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--json", action="store_true")
    return p.parse_args(argv)


class Report:
    def __init__(self, library, version, args):
        self.args = args
        self.doc = {
            "library": library, "version": version, "scheme": args.scheme, "config": args.config,
            "params": {"n": args.n, "t": args.t, "coeff_bits": list(args.coeff_bits), "depth": args.depth},
            "threads": args.threads, "repeat": args.repeat,
            "results_ms": {k: None for k in ROUTINES}, "checks": {}, "notes": [],
        }
        self.t0 = time.perf_counter()

    def note(self, msg):
        if msg not in self.doc["notes"]:
            self.doc["notes"].append(msg)

    def run(self, key, fn):
        try:
            value = fn()
            self.doc["results_ms"][key] = round(float(value), 4)
        except Exception as e:  # noqa: BLE001 - one failing routine must not kill the run
            self.note("%s failed: %s: %s" % (key, type(e).__name__, str(e)[:200]))
            value = None
        if not self.args.json:
            print("  %-10s %s" % (key, "n/a" if value is None else "%.3f ms" % value), file=sys.stderr, flush=True)

    def time_all(self, keygen, encrypt, decrypt, mul_relin, rotate, x, y, a, b):
        """Times the routines and checks the product and the rotation exactly."""
        import numpy as np

        args, R = self.args, self.args.repeat
        self.run("keygen", lambda: median_ms(keygen, min(R, 3) if args.n >= 1 << 16 else R))
        self.run("encrypt", lambda: median_ms(lambda: encrypt(x), R))
        self.run("decrypt", lambda: median_ms(lambda: decrypt(a), R))
        self.run("MulRelin", lambda: median_ms(lambda: mul_relin(a, b), R))
        self.run("Rotate", lambda: median_ms(lambda: rotate(a), R))
        t = args.t
        want = (x.astype(object) * y.astype(object)) % t
        self.doc["checks"]["MulRelin"] = bool(np.array_equal(np.asarray(decrypt(mul_relin(a, b)))[:args.n] % t,
                                                             want.astype(np.int64)))
        rows = x.reshape(2, -1)
        self.doc["checks"]["Rotate"] = bool(np.array_equal(np.asarray(decrypt(rotate(a)))[:args.n] % t,
                                                           np.roll(rows, -1, axis=1).ravel()))

    def dump(self):
        self.doc["wall_s"] = round(time.perf_counter() - self.t0, 1)
        print(json.dumps(self.doc, indent=None if self.args.json else 1))
        return self.doc


def random_residues(args, count=2):
    import numpy as np

    rng = np.random.default_rng(args.seed)
    return [rng.integers(0, args.t, args.n, dtype=np.int64) for _ in range(count)]


def import_library(library, dist, module, args, hint=""):
    """(module, version) of an installed peer, or the error document and exit."""
    import importlib

    try:
        mod = importlib.import_module(module)
    except Exception as e:  # noqa: BLE001
        emit_error_and_exit(library, None, args, "%s not importable%s: %s" % (dist, hint, e))
    try:
        from importlib.metadata import version
        return mod, version(dist)
    except Exception:  # noqa: BLE001
        return mod, "unknown"


def emit_error_and_exit(library, version, args, msg):
    r = Report(library, version, args)
    r.note(msg)
    r.dump()
    sys.exit(0)


if __name__ == "__main__":
    sys.exit("import this module from the peer scripts")
