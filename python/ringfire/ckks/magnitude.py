"""Magnitude bounds: every CKKS ciphertext carries an upper bound on the absolute
value of its slots (``ct.bound``; ``None`` when unknown, e.g. after loading), set
from the data at encryption and carried through the operations (sums add bounds,
products multiply them, rotations keep them, a polynomial or a linear map bounds its
output from its coefficients). An operation whose result may exceed what its level
holds at its scale, ``ctx.max_value(level)``, warns once per operation and context,
naming the operation: that is where the values outgrew the parameters, which the
decryption of the end result only reports (docs/security.md).

The bounds are worst-case: random data uses far less of a level's room than its
largest value (its coefficients are averages of the slots), so a warning says
"may", and decryption settles it.
"""

from __future__ import annotations

import math

import numpy as np


def of_values(values) -> float:
    """The largest absolute value of encrypted or encoded data."""
    arr = np.asarray(values)
    return float(np.max(np.abs(arr))) if arr.size else 0.0


def add(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


def times(a: float | None, factor: float | None) -> float | None:
    return None if a is None or factor is None else a * factor


def polynomial(bound: float | None, poly) -> float | None:
    """A bound on ``abs(p(x))`` for ``abs(x) <= bound``. p is evaluated at y = (2x - (a + b)) /
    (b - a) for its interval (a, b): ``abs(y) <= Y``, so ``abs(y**k) <= Y**k`` and
    ``abs(T_k(y)) <= (Y + sqrt(Y**2 - 1))**k`` for Y >= 1 (at most 1 inside [-1, 1])."""
    if bound is None:
        return None
    a, b = poly.interval
    y = max(abs(2 * bound - (a + b)), abs(-2 * bound - (a + b))) / (b - a)
    growth = y if poly.basis == "monomial" else (1.0 if y <= 1 else y + math.sqrt(y * y - 1))
    coefficients = np.abs(np.asarray(poly.coefficients, dtype=float))
    try:
        return float(sum(c * growth**k for k, c in enumerate(coefficients)))
    except OverflowError:  # far beyond any level's room
        return math.inf


def check(ct, op: str) -> None:
    """Warns (once per operation and context) when ``ct``'s bound exceeds its level's room."""
    bound = getattr(ct, "_bound", None)
    if bound is None or bound == 0.0:
        return
    ctx = ct.context
    room = ctx.max_value(ct.level, ct.scale)
    if bound <= room:
        return
    warned = ctx.__dict__.setdefault("_magnitude_warned", set())
    if op in warned:
        return
    warned.add(op)
    from .._checks import warn_at_caller
    warn_at_caller(f"[{op}] the result may outgrow level {ct.level}: its values are bounded by {bound:.4g} (from "
                   f"the data encrypted and the operations since), more than the {room:.4g} the level holds at scale "
                   f"2^{math.log2(ct.scale):.1f} (ctx.max_value({ct.level})); beyond that the values wrap and "
                   "decrypt wrong. Scale the data down, use a larger first prime or a smaller scale, or bootstrap "
                   "with bound=... (warned once per operation)", RuntimeWarning)



def restore(ct, bound: float | None):
    """``ct`` (just loaded from bytes, so its bound is unknown) with the bound its sender
    knew: a ciphertext that travels to another process keeps its magnitude check."""
    ct._bound = bound
    return ct
