"""Modular arithmetic over NumPy ``uint64`` arrays.

Every function takes reduced inputs (``0 <= a, b < q``) and a modulus
``2 <= q < 2^61``, broadcasts its array arguments like NumPy, and returns a new
``uint64`` array. Reductions (seed 002 §II-B):

* ``"barrett"`` -- classic Barrett, Alg. 2 (up to two corrections);
* ``"dhem"`` -- Dhem-Quisquater, Alg. 3 (one correction; needs ``len(q) <= 60`` and ``q != 2**59``);
* ``"alg4"`` -- seed 002's proposed variant, Alg. 4 (one correction, ``len(q) <= 62``);
  the library's default;
* ``"shoup"`` -- Shoup's precomputed-quotient product (``b`` is the fixed factor);
* ``"native"`` -- the 128-bit ``%`` operator, as a baseline.
"""

from __future__ import annotations

import numpy as np

from . import _core
from ._checks import as_int, as_u64_array, check_below

METHODS = ("barrett", "dhem", "alg4", "shoup", "native")
MAX_MODULUS_BITS = 61

__all__ = ["METHODS", "mul_mod", "mad_mod", "add_mod", "sub_mod", "neg_mod", "pow_mod", "inv_mod",
           "modulus_constants"]


def _modulus(op: str, q) -> int:
    q = as_int(op, "q", q)
    if not 2 <= q < (1 << MAX_MODULUS_BITS):
        raise ValueError(f"[{op}] modulus must satisfy 2 <= q < 2^61, got {q}")
    return q


def _operands(op: str, q: int, **arrays):
    arrs = {name: as_u64_array(op, name, value) for name, value in arrays.items()}
    for name, arr in arrs.items():
        check_below(op, name, arr, q)
    shape = np.broadcast_shapes(*(a.shape for a in arrs.values()))
    flat = [np.ascontiguousarray(np.broadcast_to(a, shape)).ravel() for a in arrs.values()]
    return shape, flat


def mul_mod(a, b, q, method: str = "alg4") -> np.ndarray:
    """``a * b mod q`` element-wise with the chosen reduction (see module doc)."""
    op = "arith.mul_mod"
    if method not in METHODS:
        raise ValueError(f"[{op}] unknown method {method!r}; expected one of {', '.join(METHODS)}")
    q = _modulus(op, q)
    shape, (fa, fb) = _operands(op, q, a=a, b=b)
    out = np.empty(fa.size, dtype=np.uint64)
    _core.mul_mod(fa, fb, out, q, method)
    return out.reshape(shape)


def _elementwise(name: str, q, **arrays) -> np.ndarray:
    op = f"arith.{name}"
    q = _modulus(op, q)
    shape, flat = _operands(op, q, **arrays)
    while len(flat) < 3:
        flat.append(flat[0])
    out = np.empty(flat[0].size, dtype=np.uint64)
    _core.elementwise(name, flat[0], flat[1], flat[2], out, q)
    return out.reshape(shape)


def mad_mod(a, b, c, q) -> np.ndarray:
    """Fused ``(a * b + c) mod q`` with one reduction (seed 000's mad_mod)."""
    return _elementwise("mad_mod", q, a=a, b=b, c=c)


def add_mod(a, b, q) -> np.ndarray:
    """``(a + b) mod q`` element-wise."""
    return _elementwise("add_mod", q, a=a, b=b)


def sub_mod(a, b, q) -> np.ndarray:
    """``(a - b) mod q`` element-wise."""
    return _elementwise("sub_mod", q, a=a, b=b)


def neg_mod(a, q) -> np.ndarray:
    """``-a mod q`` element-wise."""
    return _elementwise("neg_mod", q, a=a)


def pow_mod(a: int, e: int, q: int) -> int:
    """``a^e mod q`` for integers (``e >= 0``)."""
    op = "arith.pow_mod"
    q = _modulus(op, q)
    a, e = as_int(op, "a", a), as_int(op, "e", e)
    if e < 0 or e >= 1 << 64:
        raise ValueError(f"[{op}] exponent must be in [0, 2^64), got {e}")
    return _core.pow_mod(a % q, e, q)


def inv_mod(a: int, q: int) -> int:
    """Inverse of ``a`` modulo ``q``; ``ValueError`` when it does not exist."""
    op = "arith.inv_mod"
    q = _modulus(op, q)
    return _core.inv_mod(as_int(op, "a", a) % q, q)


def modulus_constants(q: int) -> dict:
    """The precomputed constants of ``q``: bit length and each reduction's mu."""
    return dict(_core.modulus_constants(_modulus("arith.modulus_constants", q)))
