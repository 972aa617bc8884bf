"""Encrypted unsigned integers of k bits, as radix-2 blocks with carries:
each bit a gate ciphertext, arithmetic by full adders (one MAJ and one XOR3
bootstrap per bit, both in one batch), all exact modulo 2^k.

::

    x = ctx.encrypt_uint([1234, 7], sk, bits=16)
    y = ctx.encrypt_uint([42, 9], sk, bits=16)
    print(ctx.decrypt(x + y, sk), ctx.decrypt(x < y, sk), ctx.decrypt(x.max(y) * 3, sk))

Costs (bootstraps per element, k bits; each level is one batched call):
``+``/``-`` 2k in k levels; ``<``/``>=`` k (carries only) in k levels;
``==`` 2k - 1 in 1 + log2 k levels; ``min``/``max`` k + 3k in k + 2
levels; ``* c`` (public c) popcount(c) - 1 additions; bitwise ops k in one
level; shifts by a constant are free.
"""

from __future__ import annotations

import numpy as np

from .ciphertext import Ciphertext
from .integer_parts import IntegerParts, shift_count


class UInt(IntegerParts):
    """``bits``-bit unsigned integers of any ``shape``; ``planes[i]`` is bit i
    (least significant first), a boolean :class:`Ciphertext` of ``shape``."""

    _ENCODING = 2

    @property
    def planes(self) -> list[Ciphertext]:
        return self.parts

    def __repr__(self) -> str:
        return f"tfhe.UInt(uint{self.bits}, shape={self.shape}, {self.context.params.name})"

    def _trivial(self, values) -> "UInt":
        return self.context.trivial_uint(values, bits=self.bits)

    # ---- arithmetic ----------------------------------------------------------------

    def __add__(self, other) -> "UInt":
        return _add(self, self._operand(other), carry_in=False)

    __radd__ = __add__

    def __sub__(self, other) -> "UInt":
        y = self._operand(other)
        return _add(self, y.invert(), carry_in=True)

    def __rsub__(self, other) -> "UInt":
        return self._operand(other) - self

    def __neg__(self) -> "UInt":
        return self._operand(0) - self

    def __mul__(self, k) -> "UInt":
        if not isinstance(k, (int, np.integer)):
            raise TypeError("encrypted integers multiply by Python ints (a public constant) only")
        k = int(k) % (1 << self.bits)
        terms = [self << i for i in range(self.bits) if k >> i & 1]
        if not terms:
            return self._operand(0)
        total = terms[0]
        for t in terms[1:]:
            total = total + t
        return total

    __rmul__ = __mul__

    def __lshift__(self, n: int) -> "UInt":
        zero = self._constant_plane(False)
        n = shift_count(n, self.bits)
        return UInt(self.context, [zero] * n + self.planes[: self.bits - n])

    def __rshift__(self, n: int) -> "UInt":
        zero = self._constant_plane(False)
        n = shift_count(n, self.bits)
        return UInt(self.context, self.planes[n:] + [zero] * n)

    # ---- comparisons (encrypted booleans) --------------------------------------------

    def __lt__(self, other) -> Ciphertext:
        return ~_carry_out(self, self._operand(other).invert())  # no carry from x + ~y + 1: x < y

    def __ge__(self, other) -> Ciphertext:
        return _carry_out(self, self._operand(other).invert())

    def __gt__(self, other) -> Ciphertext:
        return self._operand(other) < self

    def __le__(self, other) -> Ciphertext:
        return self._operand(other) >= self

    def __eq__(self, other) -> Ciphertext:  # type: ignore[override]
        y = self._operand(other)
        ctx = self.context
        planes = ctx._gates([("xnor", (a, b)) for a, b in zip(self.planes, y.planes)])
        while len(planes) > 1:  # an AND tree, one batch per level
            pairs = [(planes[i], planes[i + 1]) for i in range(0, len(planes) - 1, 2)]
            planes = ctx._gates([("and", p) for p in pairs]) + planes[len(pairs) * 2:]
        return planes[0]

    def __ne__(self, other) -> Ciphertext:  # type: ignore[override]
        return ~(self == other)

    def min(self, other) -> "UInt":
        y = self._operand(other)
        return _select(self < y, self, y)

    def max(self, other) -> "UInt":
        y = self._operand(other)
        return _select(self < y, y, self)

    # ---- bitwise ---------------------------------------------------------------------

    def invert(self) -> "UInt":
        return UInt(self.context, [~p for p in self.planes])

    __invert__ = invert

    def _bitwise(self, gate: str, other) -> "UInt":
        y = self._operand(other)
        ctx = self.context
        return UInt(ctx, ctx._gates([(gate, (a, b)) for a, b in zip(self.planes, y.planes)]))

    # ---- helpers ---------------------------------------------------------------------

    def _constant_plane(self, value: bool) -> Ciphertext:
        return self.context.trivial(np.full(self.shape, value, dtype=bool))


def _add(x: UInt, y: UInt, carry_in: bool) -> UInt:
    """Ripple-carry addition mod 2^k: per bit one batch of the sum (XOR3) and
    the carry (MAJ); the last carry is not computed."""
    ctx = x.context
    carry = x._constant_plane(carry_in)
    out = []
    for i, (a, b) in enumerate(zip(x.planes, y.planes)):
        last = i == x.bits - 1
        done = ctx._gates([("xor3", (a, b, carry))] + ([] if last else [("maj", (a, b, carry))]))
        out.append(done[0])
        if not last:
            carry = done[1]
    return UInt(ctx, out)


def _carry_out(x: UInt, y: UInt) -> Ciphertext:
    """The carry out of x + y + 1 (MAJ chain only): x >= ~y + 1 ... i.e. with
    y = ~z, whether x >= z."""
    ctx = x.context
    carry = x._constant_plane(True)
    for a, b in zip(x.planes, y.planes):
        carry = ctx._gates([("maj", (a, b, carry))])[0]
    return carry


def _select(cond: Ciphertext, a: UInt, b: UInt) -> UInt:
    """a where cond else b, bit by bit: (cond AND a_i) OR (NOT cond AND b_i),
    all ANDs in one batch, all ORs in the next."""
    ctx = a.context
    k = a.bits
    halves = ctx._gates([("and", (cond, p)) for p in a.planes] + [("and", (~cond, p)) for p in b.planes])
    return UInt(ctx, ctx._gates([("or", (halves[i], halves[k + i])) for i in range(k)]))
