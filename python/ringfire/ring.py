"""Polynomial rings Z_q[X]/(X^N + 1) in RNS form, over NumPy ``uint64`` arrays.

Array convention: one polynomial is an ``(N,)`` array with one modulus ``q``;
a stack is ``(..., L, N)`` with a list of ``L`` moduli (limb ``i`` is reduced
modulo ``q[i]``). A single modulus with an ``(..., N)`` array means ``L = 1``.
``N`` is a power of two in ``[16, 2^17]``; moduli are NTT-friendly primes
(``q = 1 mod 2N``, ``q < 2^61``), e.g. from :func:`find_primes`.

The forward NTT is the merged Cooley-Tukey transform (normal order in,
bit-reversed order out; seed 002 Alg. 5); the inverse is the merged
Gentleman-Sande transform with 1/N folded into its last stage (Alg. 6).
"""

from __future__ import annotations

import functools
from typing import Sequence

import numpy as np

from . import _core
from ._checks import as_int, as_u64_array

MIN_DEGREE = 16
MAX_DEGREE = 1 << 17

__all__ = ["find_primes", "primitive_root", "is_prime", "is_ntt_friendly", "ntt", "intt", "poly_mul",
           "automorphism", "base_convert", "reversed_bits", "RnsBase", "MIN_DEGREE", "MAX_DEGREE"]


def find_primes(bits: int, count: int, poly_degree: int) -> list[int]:
    """The ``count`` largest primes of exactly ``bits`` bits with ``p = 1 mod 2N``.

    Deterministic and in decreasing order. ``bits`` up to 61 gives word-size
    primes for :func:`ntt`; 62..128 gives primes for 128-bit lanes
    (:mod:`ringfire.arith128`, the RPU model).
    """
    op = "ring.find_primes"
    bits, count, n = as_int(op, "bits", bits), as_int(op, "count", count), as_int(op, "poly_degree", poly_degree)
    if count < 0:
        raise ValueError(f"[{op}] count must be >= 0, got {count}")
    if n < 1 or n & (n - 1):
        raise ValueError(f"[{op}] poly_degree must be a power of two, got {n}")
    if bits <= 61:
        return list(_core.find_ntt_primes(bits, count, n))
    if bits <= 128:
        return [lo | (hi << 64) for lo, hi in _core.find_ntt_primes128(bits, count, n)]
    raise ValueError(f"[{op}] bits must be in [2, 128], got {bits}")


def primitive_root(q: int, poly_degree: int) -> int:
    """The smallest primitive ``2N``-th root of unity modulo the prime ``q``."""
    op = "ring.primitive_root"
    q, n = as_int(op, "q", q), as_int(op, "poly_degree", poly_degree)
    if q < (1 << 61):
        return _core.minimal_primitive_root(q, n)
    if q >= 1 << 128:
        raise ValueError(f"[{op}] q must be below 2^128, got {q}")
    lo, hi = _core.primitive_root128(q & ((1 << 64) - 1), q >> 64, n)
    return lo | (hi << 64)


def is_prime(n: int) -> bool:
    """Primality test for ``0 <= n < 2^128`` (deterministic below 2^64)."""
    n = as_int("ring.is_prime", "n", n)
    if n < 0 or n >= 1 << 128:
        raise ValueError(f"[ring.is_prime] n must be in [0, 2^128), got {n}")
    if n < 1 << 64:
        return _core.is_prime(n)
    return _core.is_prime128(n & ((1 << 64) - 1), n >> 64)


def reversed_bits(j: np.ndarray, bits: int) -> np.ndarray:
    """Each integer of ``j`` with its ``bits`` low bits in reverse order: the bit-reversed
    order of transforms of length 2^bits (``reversed_bits(np.arange(n), log2(n))``)."""
    j = np.asarray(j)
    out = np.zeros_like(j)
    for b in range(bits):
        out |= ((j >> b) & 1) << (bits - 1 - b)
    return out


def is_ntt_friendly(q: int, poly_degree: int) -> bool:
    """True when ``q < 2^61`` is a prime with ``q = 1 mod 2N``."""
    q, n = as_int("ring.is_ntt_friendly", "q", q), as_int("ring.is_ntt_friendly", "poly_degree", poly_degree)
    return 0 <= q < (1 << 64) and _core.is_ntt_friendly(q, n)


@functools.lru_cache(maxsize=64)
def _native_base(n: int, moduli: tuple[int, ...]):
    return _core.RnsBase(n, list(moduli))


def _moduli_list(op: str, q) -> tuple[int, ...]:
    if isinstance(q, (list, tuple, np.ndarray)):
        moduli = tuple(as_int(op, "q[i]", v) for v in np.asarray(q, dtype=object).ravel())
        if not moduli:
            raise ValueError(f"[{op}] the modulus list is empty")
    else:
        moduli = (as_int(op, "q", q),)
    for v in moduli:
        if not 2 <= v < (1 << 61):
            raise ValueError(f"[{op}] moduli must be primes below 2^61, got {v}")
    return moduli


def _prepare(op: str, a, q) -> tuple[np.ndarray, tuple[int, ...], tuple[int, ...], int]:
    """Validates (a, q); returns a contiguous copy, its shape, the moduli and N."""
    arr = as_u64_array(op, "a", a)
    moduli = _moduli_list(op, q)
    if arr.ndim == 0:
        raise ValueError(f"[{op}] expected an (N,) or (..., L, N) array, got a scalar")
    n = arr.shape[-1]
    if n < MIN_DEGREE or n > MAX_DEGREE or n & (n - 1):
        raise ValueError(f"[{op}] N = a.shape[-1] must be a power of two in [{MIN_DEGREE}, 2^17], got {n}")
    limbs = len(moduli)
    if limbs > 1 or (isinstance(q, (list, tuple, np.ndarray)) and arr.ndim >= 2):
        if arr.ndim < 2 or arr.shape[-2] != limbs:
            raise ValueError(f"[{op}] with {limbs} moduli the array must be shaped (..., {limbs}, N), "
                             f"got {arr.shape}")
    return np.array(arr, dtype=np.uint64, order="C", copy=True), arr.shape, moduli, n


def ntt(a, q) -> np.ndarray:
    """Forward negacyclic NTT (coefficients -> evaluations, bit-reversed order)."""
    out, shape, moduli, n = _prepare("ring.ntt", a, q)
    _core.ntt_forward(out, _native_base(n, moduli))
    return out.reshape(shape)


def intt(a, q) -> np.ndarray:
    """Inverse negacyclic NTT (evaluations in bit-reversed order -> coefficients)."""
    out, shape, moduli, n = _prepare("ring.intt", a, q)
    _core.ntt_inverse(out, _native_base(n, moduli))
    return out.reshape(shape)


def poly_mul(a, b, q, method: str = "ntt") -> np.ndarray:
    """Negacyclic product ``a * b mod (X^N + 1, q)`` of coefficient arrays.

    ``method="ntt"``: forward NTTs, Hadamard product, inverse NTT.
    ``method="karatsuba"``: seed 002 Alg. 8 -- the last forward stage, the
    product and the first inverse stage fused with Karatsuba's trick.
    Both give identical results.
    """
    op = "ring.poly_mul"
    fa, shape, moduli, n = _prepare(op, a, q)
    fb, shape_b, _, _ = _prepare(op, b, q)
    if shape != shape_b:
        raise ValueError(f"[{op}] operands differ in shape: {shape} vs {shape_b}")
    out = np.empty_like(fa)
    _core.poly_multiply(fa, fb, out, _native_base(n, moduli), method)
    return out.reshape(shape)


def automorphism(a, k: int, q, form: str = "coeff") -> np.ndarray:
    """``a(X) -> a(X^k)`` for odd ``k`` (taken mod 2N), in coefficient or evaluation form.

    In evaluation form the input is an :func:`ntt` output and the result is the
    NTT of the coefficient-form automorphism.
    """
    op = "ring.automorphism"
    fa, shape, moduli, n = _prepare(op, a, q)
    k = as_int(op, "k", k) % (2 * n)
    if k % 2 == 0:
        raise ValueError(f"[{op}] k must be odd (an element of (Z/2N)^*), got {k}")
    if form not in ("coeff", "eval"):
        raise ValueError(f"[{op}] form must be 'coeff' or 'eval', got {form!r}")
    out = np.empty_like(fa)
    _core.automorphism(fa, out, _native_base(n, moduli), k, form)
    return out.reshape(shape)


def base_convert(a, source: Sequence[int], target: Sequence[int], exact: bool = False) -> np.ndarray:
    """Converts coefficient-form residues ``(..., L_src, N)`` from base ``source`` to ``target``.

    ``exact=False`` is the fast (approximate) conversion: the result is
    ``x + u*Q mod p`` for some ``0 <= u < L_src``. ``exact=True`` returns the
    centered value of ``x`` in ``(-Q/2, Q/2]`` reduced modulo each target prime.
    """
    op = "ring.base_convert"
    src = _moduli_list(op, list(source))
    dst = _moduli_list(op, list(target))
    fa, shape, _, n = _prepare(op, a, list(src))
    conv = _converter(n, src, dst)
    out = np.empty(shape[:-2] + (len(dst), n), dtype=np.uint64)
    _core.base_convert(fa, out, conv, "exact" if exact else "fast")
    return out


@functools.lru_cache(maxsize=32)
def _converter(n: int, src: tuple[int, ...], dst: tuple[int, ...]):
    return _core.BaseConverter(_native_base(n, src), _native_base(n, dst))


class RnsBase:
    """An RNS base ``q_0, ..., q_{L-1}`` for degree ``N``: CRT between residues and integers mod Q.

    >>> base = RnsBase(16, find_primes(40, 3, 16))
    >>> base.compose(base.decompose([5, -1]))[1] == base.product - 1
    True
    """

    def __init__(self, poly_degree: int, moduli: Sequence[int]):
        op = "ring.RnsBase"
        self.poly_degree = as_int(op, "poly_degree", poly_degree)
        self.moduli = _moduli_list(op, list(moduli))
        self._native = _native_base(self.poly_degree, self.moduli)
        self.product = functools.reduce(lambda x, y: x * y, self.moduli, 1)

    def __len__(self) -> int:
        return len(self.moduli)

    def __repr__(self) -> str:
        return f"RnsBase(poly_degree={self.poly_degree}, moduli={list(self.moduli)})"

    def compose(self, residues) -> np.ndarray:
        """CRT: residues shaped ``(L, ...)`` -> Python ints in ``[0, Q)`` shaped ``(...)`` (object array)."""
        arr = as_u64_array("ring.crt_compose", "residues", residues)
        if arr.ndim == 0 or arr.shape[0] != len(self.moduli):
            raise ValueError(f"[ring.crt_compose] expected residues shaped ({len(self.moduli)}, ...), got {arr.shape}")
        rest = arr.shape[1:]
        flat = np.ascontiguousarray(arr.reshape(len(self.moduli), -1))
        words = self._native.compose(flat)
        out = np.empty(flat.shape[1], dtype=object)
        for i, row in enumerate(words):
            out[i] = int.from_bytes(row.tobytes(), "little")
        return out.reshape(rest)

    def decompose(self, values) -> np.ndarray:
        """Integers (any sign, taken mod Q) shaped ``(...)`` -> residues ``(L, ...)``."""
        vals = np.asarray(values, dtype=object)
        shape = vals.shape
        flat = [int(v) % self.product for v in vals.ravel()]
        words_per = len(self.moduli)
        buf = b"".join(v.to_bytes(8 * words_per, "little") for v in flat)
        words = np.frombuffer(buf, dtype=np.uint64).reshape(len(flat), words_per) if flat else \
            np.zeros((0, words_per), dtype=np.uint64)
        res = self._native.decompose(np.ascontiguousarray(words), words_per)
        return np.asarray(res).reshape((len(self.moduli),) + shape)
