"""BGV/BFV slots into coefficients: the linear map that lets FHEW read batched integers.

Under a batching t (a prime t = 1 mod 2N) a plaintext's N slots are its
polynomial's values at the roots of X^N + 1 mod t, two rows of N/2; the switch to
FHEW reads coefficients. :class:`SlotsToCoefficients` moves the first ``count``
slots of row 0 (x_0 ... x_{count-1}) to the coefficients j N / count, each times a
constant, every other coefficient 0: a linear map of the slots, evaluated with
rotations and plaintext products.

1. **Mask and replicate.** A product with the 0/1 mask of those slots clears the
   rest, log2(N / 2 count) rotations repeat them along row 0 (period ``count``)
   and a row swap copies row 0 into row 1: slot (r, p) holds x_(p mod count).
2. **Diagonals.** The target polynomial sum_j c x_j X^(j N / count) has, by
   linearity, the slots sum_j c x_j v_j with v_j the slots of X^(j N / count)
   (the encoder's own decoding of that monomial). After step 1, rotating left by k
   brings x_((p + k) mod count) to slot (r, p), so the map is
   sum_(k < count) d_k * rot(x, k) with d_k[r, p] = c v_((p + k) mod count)[r, p].
3. **Baby steps and giant steps** (Halevi and Shoup): k = g a + b, the g - 1 baby
   rotations hoisted together, count / g - 1 giant ones, ``count`` plaintext
   products.

The error grows by the mask's and the diagonals' norms (about t sqrt(N) each): the
map needs a ciphertext with that much budget left above level 0.
"""

from __future__ import annotations

import math

import numpy as np

from ..bgv.ciphertext import Ciphertext as BgvCiphertext
from ..rlwe.keys import GaloisKeys, KeySet


class SlotsToCoefficients:
    """The first ``count`` slots of row 0 of a BGV/BFV ciphertext, times ``factor``, into
    the coefficients j N / count (module docstring).

    Args:
        bgv: a :class:`ringfire.bgv.Context` or :class:`ringfire.bfv.Context` that batches.
        count: the slots moved, a power of two from 1 to N / 2.
    """

    def __init__(self, bgv, count: int):
        if not bgv.can_batch:
            raise ValueError(f"[switching] t={bgv.plain_modulus} cannot batch N={bgv.poly_degree} slots (batching "
                             f"needs a prime t = 1 mod {2 * bgv.poly_degree}): its integers are coefficients already "
                             f"(BgvToFhew reads them)")
        half = bgv.poly_degree // 2
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or not 1 <= count <= half \
                or count & (count - 1):
            raise ValueError(f"[switching] count must be a power of two from 1 to N / 2 = {half} (slots of row 0), "
                             f"got {count!r}")
        self.bgv, self.count = bgv, int(count)
        self.stride = bgv.poly_degree // self.count
        self.baby = 1 << math.ceil(math.log2(self.count) / 2)  # g: sqrt(count), rounded up to a power of two
        self._columns = self._monomial_slots()
        self._plaintexts: dict[tuple[int, int], list] = {}  # (level, factor) -> the giant steps' diagonals

    def __repr__(self) -> str:
        return (f"SlotsToCoefficients({self.bgv.scheme.upper()} N={self.bgv.poly_degree}, t={self.bgv.plain_modulus}, "
                f"count={self.count})")

    @property
    def positions(self) -> np.ndarray:
        """The coefficients the slots land at: j * N / count."""
        return np.arange(self.count) * self.stride

    @property
    def rotations(self) -> list[int]:
        """The row rotations the map takes (Galois keys for each, and the row swap): the
        replication's (right by count, 2 count, ..., N / 4), the baby steps (1 .. g - 1)
        and the giant steps (g, 2 g, ...)."""
        half = self.bgv.poly_degree // 2
        replicate = [-(self.count << i) for i in range(int(math.log2(half // self.count)))]
        baby = list(range(1, min(self.baby, self.count)))
        giant = list(range(self.baby, self.count, self.baby))
        return replicate + baby + giant

    def galois_keys(self, secret_key, level: int | None = None) -> GaloisKeys:
        """The Galois keys of :attr:`rotations` and the row swap (the client makes them)."""
        return self.bgv.galois_keys(secret_key, self.rotations, swap_rows=True, level=level)

    def __call__(self, ct: BgvCiphertext, galois: GaloisKeys, factor: int = 1) -> BgvCiphertext:
        """``factor`` times slot j of row 0 at coefficient j N / count, for j < count; every
        other coefficient 0. The result stays at ``ct``'s level."""
        ev = self.bgv.evaluator(KeySet(galois=galois))
        level = ct.level
        mask = np.zeros(self.bgv.poly_degree, dtype=np.uint64)
        mask[:self.count] = 1
        x = ev.multiply_plain(ct, self.bgv.encode(mask, level=level))
        for step in self.rotations[:int(math.log2(self.bgv.poly_degree // 2 // self.count))]:
            x = ev.add(x, ev.rotate(x, step))
        x = ev.add(x, ev.swap_rows(x))
        babies = [x] + (ev.rotate_many(x, list(range(1, self.baby))) if self.baby > 1 and self.count > 1 else [])
        out = None
        for a, diagonals in enumerate(self._diagonals(level, int(factor) % self.bgv.plain_modulus)):
            inner = None
            for b, diagonal in enumerate(diagonals):
                term = ev.multiply_plain(babies[b], diagonal)
                inner = term if inner is None else ev.add(inner, term)
            if a:
                inner = ev.rotate(inner, a * self.baby)
            out = inner if out is None else ev.add(out, inner)
        return out

    def _monomial_slots(self) -> np.ndarray:
        """(2, N / 2): the slots of X^(N / count), by the encoder's decoding. Those of
        X^(j N / count) are its powers, slot by slot (a slot-wise product is the polynomials')."""
        N = self.bgv.poly_degree
        coefficients = np.zeros(N, dtype=np.uint64)
        coefficients[self.stride % N] = 1  # count = 1: X^N = -1 is not a coefficient; X^0 is what lands
        if self.count == 1:
            return np.ones((2, N // 2), dtype=np.uint64)
        return np.asarray(self.bgv._core.batch_decode(coefficients), dtype=np.uint64).reshape(2, N // 2)

    def _diagonals(self, level: int, factor: int):
        """For each giant step a, the plaintexts rot(d_(g a + b), -g a) for b < g at ``level``,
        one giant step at a time: kept for the next call while they take at most CACHE_BYTES,
        else encoded again at each call (never all held at once)."""
        key = (level, factor)
        if key in self._plaintexts:
            yield from self._plaintexts[key]
            return
        keep = self.count * self.bgv.poly_degree * 8 * (level + 1) <= CACHE_BYTES
        kept = []
        for row in self._diagonal_values(factor):
            plaintexts = [self.bgv.encode(values, level=level) for values in row]
            if keep:
                kept.append(plaintexts)
            yield plaintexts
        if keep:
            self._plaintexts[key] = kept

    def _diagonal_values(self, factor: int):
        """Yields, giant step by giant step, the slot values of rot(d_k, -g a), k = g a + b
        (module docstring: d_k[r, p] = factor w[r, p]^((p + k) mod count), w the slots of
        X^(N / count)), one diagonal from the last by a slot-wise product."""
        t, half = self.bgv.plain_modulus, self.bgv.poly_degree // 2
        w = self._columns
        exponents = np.arange(half) % self.count
        d = _power(w, exponents, t)                                      # d_0
        d = _multiply(d, np.full_like(d, factor % t), t)
        for a in range(max(1, self.count // self.baby)):
            row = []
            for b in range(min(self.baby, self.count)):
                k = a * self.baby + b
                if k:
                    d = _multiply(d, w, t)
                    wrapped = (np.arange(half) + k) % self.count == 0  # the exponent went back to 0
                    d[:, wrapped] = factor % t
                row.append(np.roll(d, a * self.baby, axis=1).reshape(-1))  # rot(d, -g a): right by g a
            yield row


CACHE_BYTES = 64 << 20  # the encoded diagonals kept between calls, at most


def _multiply(a: np.ndarray, b: np.ndarray, t: int) -> np.ndarray:
    """a b mod t slot by slot (uint64 below 2^32, Python's integers above)."""
    if t < 1 << 32:
        return a * b % np.uint64(t)
    return (a.astype(object) * b.astype(object) % t).astype(np.uint64)


def _power(w: np.ndarray, exponents: np.ndarray, t: int) -> np.ndarray:
    """w^e mod t slot by slot, e per column (square and multiply over e's bits)."""
    out = np.ones_like(w)
    base = w.copy()
    for bit in range(int(exponents.max()).bit_length()):
        take = ((exponents >> bit) & 1).astype(bool)
        out[:, take] = _multiply(out[:, take], base[:, take], t)
        base = _multiply(base, base, t)
    return out
