"""The rows of benchmarks/ckks_precision.py, written once for every peer library.

Each ``precision_<peer>.py`` wraps its library in a small adapter (methods below)
and calls :func:`run`; the rows, inputs and error measure live here, so every
library computes the same thing. Imported under Python 3.10 (OpenFHE) and 3.11
(SEAL, DESILO): NumPy only.

Adapter interface (values are NumPy arrays of N/2 slots, ciphertexts opaque):
  slots, levels                       slot count, levels of a fresh ciphertext
  encode_decode(v)                    encode then decode, no encryption
  encrypt(v, secret=False)            public-key (or secret-key) encryption, top level
  decrypt(ct) -> complex array        plain decryption, no added noise
  level(ct)                           levels left (0 = last prime)
  add, add_plain(ct, v), add_scalar(ct, c), multiply_integer(ct, k)
  multiply_plain(ct, v), multiply_scalar(ct, c)   each followed by a rescale
  multiply(u, v), square(u)           relinearize + rescale; multiply brings the
                                      higher operand down to the other's level
  rotate(ct, k)                       left by k (out[i] = in[i + k])
  conjugate(ct)
A method raises NotAvailable("why") when the library cannot do it.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np

_T0 = time.perf_counter()  # wall time from import: keygen included

# Same as ckks_precision.DEPTH (the driver passes --depth from there anyway).
DEPTH = {13: 3, 14: 6, 15: 12, 16: 20}


class NotAvailable(Exception):
    """The library has no way to do this operation; the message says why."""


def bits(got, want) -> float:
    """-log2 of the largest slot error, as in ckks_precision.bits."""
    err = float(np.max(np.abs(np.asarray(got) - np.asarray(want))))
    return math.inf if err == 0 else -math.log2(err)


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--log-n", type=int, required=True, choices=sorted(DEPTH))
    p.add_argument("--depth", type=int, default=None, help="levels (default: ckks_precision.DEPTH[log_n])")
    return p


def measure(lib, log_n: int) -> tuple[dict, dict, int]:
    """(bits per row, reason per unavailable row, fresh ciphertexts in the last row)."""
    # Same seed and draw order as ckks_precision.measure: the very inputs ringfire gets.
    rng = np.random.default_rng(log_n)
    n = lib.slots
    x, y = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    z = x + 1j * rng.uniform(-1, 1, n)
    a, b, cz = lib.encrypt(x), lib.encrypt(y), lib.encrypt(z)
    real = lambda ct: lib.decrypt(ct).real  # real rows: the real part, as ringfire decrypts real data
    cplx = lambda ct: lib.decrypt(ct)
    rows, why = {}, {}

    def row(name, fn):
        try:
            rows[name] = fn()
        except NotAvailable as e:
            rows[name], why[name] = None, str(e)
        except Exception as e:  # noqa: BLE001 - one failing operation must not lose the others
            rows[name], why[name] = None, f"failed: {type(e).__name__}: {str(e).strip()[:200]}"

    row("encode/decode", lambda: bits(lib.encode_decode(x).real, x))
    row("encrypt (public key)", lambda: bits(real(a), x))
    row("encrypt (secret key)", lambda: bits(real(lib.encrypt(x, secret=True)), x))
    row("encrypt complex", lambda: bits(cplx(cz), z))
    row("add", lambda: bits(real(lib.add(a, b)), x + y))
    row("add_plain", lambda: bits(real(lib.add_plain(a, y)), x + y))
    row("add_scalar", lambda: bits(real(lib.add_scalar(a, 0.3)), x + 0.3))
    row("multiply_integer (x7)", lambda: bits(real(lib.multiply_integer(a, 7)), 7 * x))
    row("multiply_plain + rescale", lambda: bits(real(lib.multiply_plain(a, y)), x * y))
    row("multiply_scalar + rescale", lambda: bits(real(lib.multiply_scalar(a, 0.3)), 0.3 * x))
    row("multiply + relin + rescale", lambda: bits(real(lib.multiply(a, b)), x * y))
    row("square + relin + rescale", lambda: bits(real(lib.square(a)), x * x))
    row("complex multiply", lambda: bits(cplx(lib.multiply(cz, cz)), z * z))
    row("rotate(1)", lambda: bits(real(lib.rotate(a, 1)), np.roll(x, -1)))
    row("rotate(-1)", lambda: bits(real(lib.rotate(a, -1)), np.roll(x, 1)))
    # Keys exist for 1, -1 and 7 only (as in ringfire's run): 8 = 1 then 7, two key switches.
    row("rotate(8) composed", lambda: bits(real(lib.rotate(lib.rotate(a, 1), 7)), np.roll(x, -8)))
    row("conjugate", lambda: bits(cplx(lib.conjugate(cz)), np.conj(z)))

    ct, ref = a, x.copy()
    for k in range(1, 4):
        name = f"{k} chained multiplications"
        if k > lib.levels:
            rows[name], why[name] = None, f"needs {k} levels, the context has {lib.levels}"
            continue
        ct, ref = lib.multiply(ct, b), ref * y
        row(name, lambda: bits(real(ct), ref))

    # Product of fresh ciphertexts (values in [0.9, 1.1]) down to level 0, as in ringfire.
    w = rng.uniform(0.9, 1.1, n)
    ct, ref, count = lib.encrypt(w), w.copy(), 1
    while lib.level(ct) > 0:
        v = rng.uniform(0.9, 1.1, n)
        ct, ref, count = lib.multiply(ct, lib.encrypt(v)), ref * v, count + 1
    row("product of depth+1 fresh ciphertexts, down to level 0", lambda: bits(real(ct), ref))
    return rows, why, count


def run(library: str, version: str, log_n: int, depth: int, lib, params: dict, notes: list) -> None:
    """Measure every row with ``lib`` and print the JSON document on stdout."""
    rows, why, count = measure(lib, log_n)
    if count != depth + 1:
        notes.append(f"last row: product of {count} fresh ciphertexts, not {depth + 1}")
    doc = {"library": library, "version": version, "log_n": log_n, "params": params,
           "bits": rows, "unavailable": why, "notes": notes,
           "wall_s": round(time.perf_counter() - _T0, 1)}
    json.dump(doc, sys.stdout)
    print()


def package_version(name: str) -> str:
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:  # noqa: BLE001
        return "unknown"
