"""BGV/BFV slots into coefficients: the linear map that lets FHEW read batched integers.

Under a batching t (a prime t = 1 mod 2N) a plaintext's N slots are its
polynomial's values at the roots of X^N + 1 mod t, two rows of N/2; the switch to
FHEW reads coefficients. :class:`SlotsToCoefficients` moves the first ``count``
slots of row 0 (x_0 ... x_{count-1}) to coefficients N / count apart, each times a
constant, every other coefficient 0: a linear map of the slots, evaluated with
rotations and plaintext products, in one of two ways.

1. **Mask and replicate.** A product with the 0/1 mask of those slots clears the
   rest, log2(N / 2 count) rotations repeat them along row 0 (period ``count``) and
   a row swap copies row 0 into row 1: slot (r, p) holds x_(p mod count). (The
   staged map repeats its result instead, at the last level, where rotations are
   cheapest: its stages stay within the first ``count`` slots.)
2. **Dense** (``method="dense"``): slot j lands at coefficient j N / count. The target
   polynomial sum_j c x_j X^(j N / count) has, by linearity, the slots
   sum_j c x_j w^j, w the slots of X^(N / count) (the encoder's own decoding) and w^j
   its powers slot by slot. After step 1, rotating left by k brings
   x_((p + k) mod count) to slot (r, p), so the map is sum_(k < count) d_k * rot(x, k)
   with d_k[r, p] = c w[r, p]^((p + k) mod count): ``count`` plaintext products in
   baby and giant steps (Halevi and Shoup; sqrt(count) rotations of each kind), all
   at one level.
3. **Staged** (``method="staged"``): slot j lands at coefficient rev(j) N / count (rev:
   the bits of j reversed, log2(count) of them; :attr:`positions` says where). The
   slots of sum_i c_i Y^i with Y = X^(N / count) are that polynomial evaluated at
   the points w[r, p], and an evaluation splits into the even and the odd
   coefficients' (Cooley and Tukey): S_2m(c) = S_m(c_even) + w_2m * S_m(c_odd),
   w_2m the slots of X^(N / 2m). With the even half of each block of 2m slots beside
   the odd half, one stage is three plaintext products and two rotations,
   D0 * v + D1 * rot(v, m) + D2 * rot(v, -m); log2(count) stages, each followed by
   a modulus switch that divides its error growth away. It needs log2(count) + 1
   levels; from about a thousand slots on it is far cheaper than ``count`` products
   (8.9x at 4096 slots, N = 2^16: BENCHMARKS.md).

The error grows by the mask's and the diagonals' norms (about t sqrt(N) each): the
map needs a ciphertext with that much budget (dense: above level 0; staged: at each
stage's level).
"""

from __future__ import annotations

import math

import numpy as np

from ..bgv.ciphertext import Ciphertext as BgvCiphertext
from ..ring import reversed_bits
from ..rlwe.keys import GaloisKeys, KeySet

METHODS = ("auto", "dense", "staged")
STAGED_FROM = 1024  # "auto" stages a map of this many slots and more where the levels allow


class SlotsToCoefficients:
    """The first ``count`` slots of row 0 of a BGV/BFV ciphertext, times ``factor``, into
    the coefficients :attr:`positions` (module docstring).

    Args:
        bgv: a :class:`ringfire.bgv.Context` or :class:`ringfire.bfv.Context` that batches.
        count: the slots moved, a power of two from 1 to N / 2.
        method: ``"dense"`` (``count`` plaintext products at one level), ``"staged"``
            (log2(count) stages of three, one level each), or ``"auto"``: staged from
            STAGED_FROM slots on where the context has the levels, else dense.
    """

    def __init__(self, bgv, count: int, method: str = "auto"):
        if not bgv.can_batch:
            raise ValueError(f"[switching] t={bgv.plain_modulus} cannot batch N={bgv.poly_degree} slots (batching "
                             f"needs a prime t = 1 mod {2 * bgv.poly_degree}): its integers are coefficients already "
                             f"(BgvToFhew reads them)")
        half = bgv.poly_degree // 2
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or not 1 <= count <= half \
                or count & (count - 1):
            raise ValueError(f"[switching] count must be a power of two from 1 to N / 2 = {half} (slots of row 0), "
                             f"got {count!r}")
        if method not in METHODS:
            raise ValueError(f"[switching] method must be one of {METHODS}, got {method!r}")
        self.bgv, self.count = bgv, int(count)
        self.stride = bgv.poly_degree // self.count
        self.stages = int(math.log2(self.count))
        if method == "auto":
            method = "staged" if self.count >= STAGED_FROM and bgv.max_level >= self.stages + 1 else "dense"
        elif method == "staged" and bgv.max_level < self.stages + 1:
            raise ValueError(f"[switching] a staged map of {self.count} slots takes {self.stages + 1} levels; this "
                             f"context has {bgv.max_level}: method='dense'")
        self.method = method
        self.baby = 1 << math.ceil(self.stages / 2)  # g: sqrt(count), rounded up to a power of two
        self._columns = self._monomial_slots()
        self._plaintexts: dict[tuple, list] = {}  # the encoded diagonals, by stage (staged), level and factor
        self._kept_bytes = 0

    def __repr__(self) -> str:
        return (f"SlotsToCoefficients({self.bgv.scheme.upper()} N={self.bgv.poly_degree}, t={self.bgv.plain_modulus}, "
                f"count={self.count}, {self.method})")

    @property
    def positions(self) -> np.ndarray:
        """The coefficient slot j lands at: j N / count (dense), rev(j) N / count (staged)."""
        j = np.arange(self.count)
        return (j if self.method == "dense" else reversed_bits(j, self.stages)) * self.stride

    @property
    def levels(self) -> int:
        """The levels the map takes below its input's: the staged map's stages (0: dense)."""
        return self.stages if self.method == "staged" else 0

    @property
    def rotations(self) -> list[int]:
        """The row rotations the map takes (Galois keys for each, and the row swap): the
        replication's (right by count, 2 count, ..., N / 4), then, dense, the baby steps
        (1 .. g - 1) and the giant steps (g, 2 g, ...); staged, +-1, +-2, ..., +-count / 2."""
        half = self.bgv.poly_degree // 2
        replicate = [-(self.count << i) for i in range(int(math.log2(half // self.count)))]
        if self.method == "staged":
            return replicate + [step for i in range(self.stages) for step in (1 << i, -(1 << i))]
        baby = list(range(1, min(self.baby, self.count)))
        giant = list(range(self.baby, self.count, self.baby))
        return replicate + baby + giant

    def galois_keys(self, secret_key, level: int | None = None) -> GaloisKeys:
        """The Galois keys of :attr:`rotations` and the row swap (the client makes them)."""
        return self.bgv.galois_keys(secret_key, self.rotations, swap_rows=True, level=level)

    def __call__(self, ct: BgvCiphertext, galois: GaloisKeys, factor: int = 1) -> BgvCiphertext:
        """``factor`` times slot j of row 0 at coefficient :attr:`positions` [j], for j < count;
        every other coefficient 0. Dense, the result stays at ``ct``'s level; staged, it is
        :attr:`levels` below (``ct`` needs at least that many and one more)."""
        if ct.level < self.levels + 1 and self.method == "staged":
            raise ValueError(f"[switching] a staged map of {self.count} slots takes {self.levels} levels and ends "
                             f"above level 0; the ciphertext is at level {ct.level}")
        ev = self.bgv.evaluator(KeySet(galois=galois))
        factor = int(factor) % self.bgv.plain_modulus
        mask = np.zeros(self.bgv.poly_degree, dtype=np.uint64)
        mask[:self.count] = 1
        x = ev.multiply_plain(ct, self.bgv.encode(mask, level=ct.level))
        if self.method == "staged":  # the stages stay within the first count slots: repeat their result, cheaper
            return self._replicated(ev, self._staged(ev, ev.add(x, ev.swap_rows(x)), factor))
        x = self._replicated(ev, x)
        return self._dense(ev, ev.add(x, ev.swap_rows(x)), factor)

    def _replicated(self, ev, x):
        """The first ``count`` slots of each row repeated along it (period ``count``)."""
        for step in self.rotations[:int(math.log2(self.bgv.poly_degree // 2 // self.count))]:
            x = ev.add(x, ev.rotate(x, step))
        return x

    def _dense(self, ev, x, factor: int):
        babies = [x] + (ev.rotate_many(x, list(range(1, self.baby))) if self.baby > 1 and self.count > 1 else [])
        out = None
        for a, diagonals in enumerate(self._diagonals(x.level, factor)):
            inner = None
            for b, diagonal in enumerate(diagonals):
                term = ev.multiply_plain(babies[b], diagonal)
                inner = term if inner is None else ev.add(inner, term)
            if a:
                inner = ev.rotate(inner, a * self.baby)
            out = inner if out is None else ev.add(out, inner)
        return out

    def _staged(self, ev, v, factor: int):
        """Stage by stage, block size 2m = 2, 4, ..., count: the evaluation of each block's
        polynomial from its even half's and odd half's (module docstring, 3)."""
        for stage in range(self.stages):
            m = 1 << stage
            d0, d1, d2 = self._stage_diagonals(stage, v.level, factor if stage == self.stages - 1 else 1)
            ahead, behind = ev.rotate_many(v, [m, -m])
            v = ev.add(ev.add(ev.multiply_plain(v, d0), ev.multiply_plain(ahead, d1)), ev.multiply_plain(behind, d2))
            v = ev.mod_reduce(v)
        if self.stages == 0:  # one slot: its value times the factor
            v = ev.multiply_integer(v, factor)
        return v

    def _stage_diagonals(self, stage: int, level: int, factor: int) -> list:
        """D0 = M1 + M2 w, D1 = M1 w, D2 = M2 for blocks of 2m = 2^(stage + 1) slots: M1 the
        blocks' first halves, M2 their second, w the slots of X^(N / 2m); times ``factor``."""
        key = (-1 - stage, level, factor)
        if key in self._plaintexts:
            return self._plaintexts[key]
        t, N = self.bgv.plain_modulus, self.bgv.poly_degree
        m = 1 << stage
        first = (np.arange(N // 2) % (2 * m) < m)[None, :].repeat(2, axis=0)
        w = self._slots_of_monomial(N // (2 * m))
        one = np.ones_like(w)
        d0 = np.where(first, one, w)
        d1 = np.where(first, w, 0).astype(np.uint64)
        d2 = np.where(first, 0, one).astype(np.uint64)
        plaintexts = [self.bgv.encode(_multiply(d, np.full_like(d, factor), t).reshape(-1), level=level)
                      for d in (d0, d1, d2)]
        self._keep(key, plaintexts, 3 * N * 8 * (level + 1))
        return plaintexts

    def _keep(self, key: tuple, plaintexts: list, nbytes: int) -> None:
        """Keeps encoded diagonals for the next call while all kept take at most CACHE_BYTES."""
        if self._kept_bytes + nbytes <= CACHE_BYTES:
            self._plaintexts[key] = plaintexts
            self._kept_bytes += nbytes

    def _monomial_slots(self) -> np.ndarray:
        """(2, N / 2): the slots of X^(N / count). Those of X^(j N / count) are its powers,
        slot by slot (a slot-wise product is the polynomials')."""
        return self._slots_of_monomial(self.stride % self.bgv.poly_degree)

    def _slots_of_monomial(self, exponent: int) -> np.ndarray:
        """(2, N / 2): the slots of X^exponent, by the encoder's decoding (X^0: all ones)."""
        N = self.bgv.poly_degree
        coefficients = np.zeros(N, dtype=np.uint64)
        coefficients[exponent] = 1
        return np.asarray(self.bgv._core.batch_decode(coefficients), dtype=np.uint64).reshape(2, N // 2)

    def _diagonals(self, level: int, factor: int):
        """For each giant step a, the plaintexts rot(d_(g a + b), -g a) for b < g at ``level``,
        one giant step at a time: kept for the next call while all kept take at most
        CACHE_BYTES, else encoded again at each call (never all held at once)."""
        key = (level, factor)
        if key in self._plaintexts:
            yield from self._plaintexts[key]
            return
        nbytes = self.count * self.bgv.poly_degree * 8 * (level + 1)
        keep = self._kept_bytes + nbytes <= CACHE_BYTES
        kept = []
        for row in self._diagonal_values(factor):
            plaintexts = [self.bgv.encode(values, level=level) for values in row]
            if keep:
                kept.append(plaintexts)
            yield plaintexts
        if keep:
            self._keep(key, kept, nbytes)

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

