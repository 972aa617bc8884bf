"""Reference negacyclic NTTs for checking generated programs, and their twiddle tables.

Convention (the same as :func:`ringfire.ring.ntt`, OpenFHE and seed 002 Alg. 5):
natural-order coefficients in, bit-reversed evaluations out; slot ``s`` holds
``a(psi^(2*bitrev(s) + 1))`` with ``psi`` = :func:`ringfire.ring.primitive_root`.
The inverse takes bit-reversed evaluations back to coefficients (1/N included).

:func:`ringfire.ring.ntt` only accepts primes below 2^61, so for 62..128-bit
primes :func:`ntt` / :func:`intt` here are the oracle: the textbook merged
Cooley-Tukey / Gentleman-Sande loops on exact Python integers, vectorised per
stage with NumPy object arrays. The tests check them against ``ring.ntt``.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import ring


def bit_reverse_permutation(n: int) -> np.ndarray:
    """``perm[i] = bitrev_log2(n)(i)``."""
    return ring.reversed_bits(np.arange(n, dtype=np.int64), n.bit_length() - 1)


@functools.lru_cache(maxsize=16)
def twiddle_table(n: int, q: int, inverse: bool = False) -> tuple[int, ...]:
    """``tab[i] = psi^bitrev(i) mod q`` (``psi^-bitrev(i)`` for the inverse): OpenFHE's root table."""
    psi = ring.primitive_root(q, n)
    if inverse:
        psi = pow(psi, -1, q)
    powers = [1] * n
    for i in range(1, n):
        powers[i] = powers[i - 1] * psi % q
    perm = bit_reverse_permutation(n)
    return tuple(powers[int(p)] for p in perm)


def _as_objects(a, q: int) -> np.ndarray:
    arr = np.array([int(v) for v in a], dtype=object)
    if len(arr) < 2 or len(arr) & (len(arr) - 1):
        raise ValueError(f"[rpu.reference] length must be a power of two >= 2, got {len(arr)}")
    if any(not 0 <= v < q for v in arr):
        raise ValueError("[rpu.reference] coefficients must be reduced modulo q")
    return arr


def ntt(a, q: int) -> list[int]:
    """Forward negacyclic NTT (merged CT, bit-reversed output) on exact integers."""
    a = _as_objects(a, q)
    n = len(a)
    tab = np.array(twiddle_table(n, q), dtype=object)
    m, t = 1, n
    while m < n:
        t //= 2
        view = a.reshape(m, 2, t)
        w = tab[m:2 * m].reshape(m, 1)
        u, v = view[:, 0, :].copy(), (view[:, 1, :] * w) % q
        view[:, 0, :], view[:, 1, :] = (u + v) % q, (u - v) % q
        m *= 2
    return [int(x) for x in a]


def intt(a, q: int) -> list[int]:
    """Inverse of :func:`ntt` (merged GS, then the factor 1/N)."""
    a = _as_objects(a, q)
    n = len(a)
    tab = np.array(twiddle_table(n, q, inverse=True), dtype=object)
    m, t = n, 1
    while m > 1:
        h = m // 2
        view = a.reshape(h, 2, t)
        w = tab[h:2 * h].reshape(h, 1)
        u, v = view[:, 0, :].copy(), view[:, 1, :].copy()
        view[:, 0, :], view[:, 1, :] = (u + v) % q, ((u - v) * w) % q
        t *= 2
        m = h
    n_inv = pow(n, -1, q)
    return [int(x) * n_inv % q for x in a]


def library_ntt(a, q: int, inverse: bool = False) -> tuple[list[int], str]:
    """The expected transform and which oracle produced it.

    ``ringfire.ring.ntt``/``intt`` for primes below 2^61 (the library itself),
    otherwise this module's exact reference.
    """
    if q < (1 << 61) and 16 <= len(a) <= ring.MAX_DEGREE:
        arr = np.array([int(v) for v in a], dtype=np.uint64)
        out = ring.intt(arr, q) if inverse else ring.ntt(arr, q)
        return [int(v) for v in out], "ringfire.ring." + ("intt" if inverse else "ntt")
    return (intt(a, q) if inverse else ntt(a, q)), "ringfire.rpu.reference." + ("intt" if inverse else "ntt")
