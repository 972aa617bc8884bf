"""Scalar modular arithmetic for 128-bit moduli, on Python ints.

Moduli are odd with ``3 <= q < 2^128``; operands are reduced
(``0 <= a, b < q``). Products are exact: the native code forms the full
256-bit product and reduces it with Montgomery arithmetic (R = 2^128), so
results equal Python's ``(a * b) % q`` for every modulus up to ``2^128 - 1``.

Primes: :func:`is_prime128` is exact below 2^64 and for ``n`` below about
2^81.5 (Miller-Rabin with the prime bases 2..41); above that it adds a strong
Lucas test (Baillie-PSW), a probable-prime test with no known counterexample.

Every error is a ``ValueError`` (bad value) or ``TypeError`` (not an integer)
whose message starts with the operation, e.g. ``[arith128.mul_mod128]``.
"""

from __future__ import annotations

from . import _core
from ._checks import as_int

U128_LIMIT = 1 << 128
_MASK64 = (1 << 64) - 1

__all__ = ["mul_mod128", "add_mod128", "sub_mod128", "neg_mod128", "pow_mod128", "inv_mod128", "is_prime128",
           "find_ntt_primes128", "primitive_root128"]


def _split(v: int) -> tuple[int, int]:
    return v & _MASK64, v >> 64


def _join(halves) -> int:
    lo, hi = halves
    return int(lo) | (int(hi) << 64)


def _modulus(op: str, q) -> int:
    q = as_int(op, "q", q)
    if not (3 <= q < U128_LIMIT and q % 2 == 1):
        raise ValueError(f"[{op}] modulus must be odd with 3 <= q < 2^128, got {q}")
    return q


def _residue(op: str, name: str, value, q: int) -> int:
    value = as_int(op, name, value)
    if not 0 <= value < q:
        raise ValueError(f"[{op}] {name}={value} must satisfy 0 <= {name} < q={q}")
    return value


def _call(name: str, a: int, b: int, q: int) -> int:
    return _join(_core.mod128_op(name, *_split(a), *_split(b), *_split(q)))


def _binary(name: str, a, b, q) -> int:
    op = f"arith128.{name}_mod128"
    q = _modulus(op, q)
    return _call(name, _residue(op, "a", a, q), _residue(op, "b", b, q), q)


def add_mod128(a: int, b: int, q: int) -> int:
    """``(a + b) % q`` for ``0 <= a, b < q``."""
    return _binary("add", a, b, q)


def sub_mod128(a: int, b: int, q: int) -> int:
    """``(a - b) % q`` for ``0 <= a, b < q``."""
    return _binary("sub", a, b, q)


def mul_mod128(a: int, b: int, q: int) -> int:
    """``(a * b) % q`` for ``0 <= a, b < q``, exact via a 256-bit product."""
    return _binary("mul", a, b, q)


def neg_mod128(a: int, q: int) -> int:
    """``(-a) % q`` for ``0 <= a < q``."""
    op = "arith128.neg_mod128"
    q = _modulus(op, q)
    return _call("neg", _residue(op, "a", a, q), 0, q)


def inv_mod128(a: int, q: int) -> int:
    """``pow(a, -1, q)`` for ``0 <= a < q``; ``ValueError`` when ``gcd(a, q) != 1``."""
    op = "arith128.inv_mod128"
    q = _modulus(op, q)
    return _call("inv", _residue(op, "a", a, q), 0, q)


def pow_mod128(a: int, e: int, q: int) -> int:
    """``pow(a, e, q)`` for ``0 <= a < q`` and ``|e| < 2^128``.

    A negative ``e`` raises the inverse of ``a`` to ``-e``, like Python's
    ``pow``; it is a ``ValueError`` when ``a`` is not invertible.
    """
    op = "arith128.pow_mod128"
    q = _modulus(op, q)
    a = _residue(op, "a", a, q)
    e = as_int(op, "e", e)
    if not -U128_LIMIT < e < U128_LIMIT:
        raise ValueError(f"[{op}] exponent must satisfy |e| < 2^128, got {e}")
    if e < 0:
        a, e = _call("inv", a, 0, q), -e
    return _call("pow", a, e, q)


def is_prime128(n: int) -> bool:
    """Primality of ``0 <= n < 2^128`` (see the module doc for the method)."""
    op = "arith128.is_prime128"
    n = as_int(op, "n", n)
    if not 0 <= n < U128_LIMIT:
        raise ValueError(f"[{op}] n must satisfy 0 <= n < 2^128, got {n}")
    return bool(_core.is_prime128(*_split(n)))


def find_ntt_primes128(bits: int, count: int, poly_degree: int) -> list[int]:
    """The ``count`` largest primes of exactly ``bits`` bits (2..128) with
    ``p = 1 mod 2 * poly_degree``, in decreasing order (deterministic)."""
    op = "arith128.find_ntt_primes128"
    bits = as_int(op, "bits", bits)
    count = as_int(op, "count", count)
    poly_degree = as_int(op, "poly_degree", poly_degree)
    if count < 0 or poly_degree < 1:
        raise ValueError(f"[{op}] count must be >= 0 and poly_degree >= 1, got {count} and {poly_degree}")
    if not 2 <= bits <= 128:
        raise ValueError(f"[{op}] bits must be in [2, 128], got {bits}")
    return [_join(p) for p in _core.find_ntt_primes128(bits, count, poly_degree)]


def primitive_root128(q: int, poly_degree: int) -> int:
    """The smallest primitive ``2 * poly_degree``-th root of unity modulo the
    prime ``q = 1 mod 2 * poly_degree``."""
    op = "arith128.primitive_root128"
    q = _modulus(op, q)
    poly_degree = as_int(op, "poly_degree", poly_degree)
    if poly_degree < 1:
        raise ValueError(f"[{op}] poly_degree must be >= 1, got {poly_degree}")
    return _join(_core.primitive_root128(*_split(q), poly_degree))
