"""Radix-4 integers on the 64-bit torus sets (:class:`~ringfire.tfhe.RadixUInt`): the
blocks, their carries, comparisons and selections by 4-bit tables."""

from __future__ import annotations

import numpy as np

from .ciphertext import Ciphertext
from .integer_parts import IntegerParts, shift_count
from .params import tail_probability_log2
from .radix_products import check_constant, times_constant, times_encrypted

BLOCK_BITS = 2  # message bits per block
SPACE_BITS = 4  # each block's ciphertext: message and carry bits
_LT, _EQ, _GT = 0, 1, 2


class RadixUInt(IntegerParts):
    """``bits``-bit unsigned integers of any ``shape`` as ``bits / 2`` blocks
    (``blocks[i]``: bits 2i and 2i + 1, a 4-bit :class:`~ringfire.tfhe.Ciphertext` of ``shape``
    whose value is below 4 between operations).

    On the 64-bit torus sets only (tfhe-rs's shortint/integer layout): each block is one
    ciphertext of a 4-bit message space holding 2 message bits and room for 2 carry bits,
    least significant block first.

    ::

        ctx = rf.tfhe.Context.preset("STD128_T64")
        x = ctx.encrypt_radix([1234, 7], sk, bits=16)
        y = ctx.encrypt_radix([42, 9], sk, bits=16)
        print(ctx.decrypt(x + y, sk), ctx.decrypt(x < y, sk), ctx.decrypt(x.max(y), sk))

    A 4-bit table is one bootstrap, so a block costs what a bit costs with
    :class:`~ringfire.tfhe.UInt`'s gates while carrying two bits. Costs (bootstraps per
    element, k bits, b = k / 2 blocks; each level is one batched call on all threads):

    - ``+`` / ``-``: blocks add without a bootstrap; the carries ripple, two bootstraps per
      block (the block mod 4 and its carry, in one call): 2b - 1 in b levels;
    - ``* c`` (a public int) and ``* y``: partial products in columns (block i times c's
      base-4 digit j, linear; or two tables per block pair on 4 x_i + y_j with i + j < b,
      b^2 in two calls), compressed by tables (two per group of terms summing to 15 or less,
      a few levels) and rippled once;
    - ``<``, ``<=``, ``>``, ``>=``, ``==``, ``!=``: one table per block on (4 x_i + y_i)
      gives lt / eq / gt, a tree of tables on (4 hi + lo) merges them from the top,
      one more gives the boolean: 2b in 2 + log2 b levels;
    - ``min`` / ``max``: the comparison's state, then two tables per block keep x's or
      y's block: 2b + 2b in 3 + log2 b levels;
    - ``&``, ``|``, ``^``: one table per block on (4 x_i + y_i): b in one level; ``~``
      free; shifts by whole blocks (even counts) free, by odd counts b in one level.

    The tables read packed inputs (4 x_i + y_i): their error is the inputs' times 17,
    so blocks must be fresh or bootstrapped. Every result here is, but min and max (each
    block the sum of two kept blocks: twice a bootstrap's error), whose blocks the next
    packed operation refreshes first (one table per block, one call). On STD128_T64 a
    4-bit table on such a packed input fails with probability below 2^-128
    (``ctx.failure_probability("radix")``: 2^-129.6; 2^-126.8 at STD128_T64_MB).
    """

    _ENCODING = 3
    PART_BITS = BLOCK_BITS
    PART_CIPHERTEXT_BITS = SPACE_BITS

    @property
    def blocks(self) -> list[Ciphertext]:
        return self.parts

    def __repr__(self) -> str:
        return f"tfhe.RadixUInt(uint{self.bits}, {len(self.parts)} blocks, shape={self.shape}, " \
               f"{self.context.params.name})"

    def _trivial(self, values) -> "RadixUInt":
        return self.context.trivial_radix(values, bits=self.bits)

    # ---- arithmetic (mod 2^bits) ---------------------------------------------------

    def __add__(self, other) -> "RadixUInt":
        y = self._operand(other)
        return RadixUInt(self.context, _propagate(self.context, [a + b for a, b in zip(self.blocks, y.blocks)]))

    __radd__ = __add__

    def __sub__(self, other) -> "RadixUInt":
        """x + (2^bits - 1 - y) + 1: each block of y replaced by 3 - y_i (free), the 1
        added to the lowest block."""
        y = self._operand(other)
        sums = [a + (3 - b) for a, b in zip(self.blocks, y.blocks)]
        sums[0] = sums[0] + 1
        return RadixUInt(self.context, _propagate(self.context, sums))

    def __rsub__(self, other) -> "RadixUInt":
        return self._operand(other) - self

    def __neg__(self) -> "RadixUInt":
        return self._operand(0) - self

    def __mul__(self, other) -> "RadixUInt":
        """By a public int (its base-4 digits times the blocks, linear) or by another
        RadixUInt (a table for each half of each block product), mod 2^bits; the partial
        products' columns are then compressed by tables and rippled once (radix_products.py)."""
        if isinstance(other, RadixUInt):
            y = self._operand(other)
            x = _fresh(self)
            return times_encrypted(x, x if y is self else _fresh(y))
        if isinstance(other, (Ciphertext, IntegerParts)):
            self._operand(other)  # the operand check names what it is
        return times_constant(_fresh(self), check_constant(other))

    __rmul__ = __mul__

    # ---- bitwise and shifts ----------------------------------------------------------

    def __invert__(self) -> "RadixUInt":
        """Every bit flipped: 3 - b per block, no bootstrap."""
        return RadixUInt(self.context, [3 - b for b in self.blocks])

    __rand__, __ror__, __rxor__ = IntegerParts.__and__, IntegerParts.__or__, IntegerParts.__xor__

    def _bitwise(self, name: str, other) -> "RadixUInt":
        """One table per block on 4 x_i + y_i, all blocks in one batched call."""
        x, y = _fresh(self), _fresh(self._operand(other))
        ctx = self.context
        packed = [4 * a + b for a, b in zip(x.blocks, y.blocks)]
        return RadixUInt(ctx, ctx.bootstrap_many(packed, _tables(ctx)[name]))

    def __lshift__(self, n) -> "RadixUInt":
        """Shifts by whole blocks are free; an odd count takes one table per block on
        4 b_i + b_(i-1) (the block's low bit up, the lower block's high bit in)."""
        whole, odd = divmod(shift_count(n, self.bits), BLOCK_BITS)
        zero = self._zero_block()
        source = _fresh(self) if odd else self
        blocks = [zero] * whole + source.blocks[:len(self.blocks) - whole]
        if odd:
            below = [zero] + blocks[:-1]
            blocks = self.context.bootstrap_many([4 * b + c for b, c in zip(blocks, below)], _tables(self.context)["up"])
        return RadixUInt(self.context, blocks)

    def __rshift__(self, n) -> "RadixUInt":
        """Likewise: one table per block on 4 b_(i+1) + b_i for an odd count."""
        whole, odd = divmod(shift_count(n, self.bits), BLOCK_BITS)
        zero = self._zero_block()
        source = _fresh(self) if odd else self
        blocks = source.blocks[whole:] + [zero] * whole
        if odd:
            above = blocks[1:] + [zero]
            blocks = self.context.bootstrap_many([4 * a + b for a, b in zip(above, blocks)],
                                                 _tables(self.context)["down"])
        return RadixUInt(self.context, blocks)

    def _zero_block(self) -> Ciphertext:
        return self.context.trivial(np.zeros(self.shape, dtype=np.int64), bits=SPACE_BITS)

    # ---- comparisons (encrypted booleans) ------------------------------------------

    def __lt__(self, other) -> Ciphertext:
        return _boolean(self.context, _state(self, self._operand(other)), lambda s: s == _LT)

    def __le__(self, other) -> Ciphertext:
        return _boolean(self.context, _state(self, self._operand(other)), lambda s: s != _GT)

    def __gt__(self, other) -> Ciphertext:
        return _boolean(self.context, _state(self, self._operand(other)), lambda s: s == _GT)

    def __ge__(self, other) -> Ciphertext:
        return _boolean(self.context, _state(self, self._operand(other)), lambda s: s != _LT)

    def __eq__(self, other) -> Ciphertext:  # type: ignore[override]
        return _boolean(self.context, _state(self, self._operand(other)), lambda s: s == _EQ)

    def __ne__(self, other) -> Ciphertext:  # type: ignore[override]
        return _boolean(self.context, _state(self, self._operand(other)), lambda s: s != _EQ)

    def min(self, other) -> "RadixUInt":
        x, y = _fresh(self), _fresh(self._operand(other))
        return _select(_state(x, y), x, y, keep_x_when=_LT)

    def max(self, other) -> "RadixUInt":
        x, y = _fresh(self), _fresh(self._operand(other))
        return _select(_state(x, y), x, y, keep_x_when=_GT)


def failure_probability_log2(context) -> float:
    """log2 of the probability that one table of these operations errs on one element:
    the worst input is a packed 4 hi + lo of bootstrapped blocks (17 times a bootstrap's
    error variance, plus the switches')."""
    p = context.params
    variance = 17 * p.bootstrap_variance() + p.switch_variance()
    return tail_probability_log2(variance, p.lwe_modulus / (4 << SPACE_BITS))


def split_blocks(values: np.ndarray, bits: int) -> list[np.ndarray]:
    """Integers (uint64) into bits / 2 arrays of 2-bit blocks, least significant first."""
    return [((values >> np.uint64(BLOCK_BITS * i)) & np.uint64(3)).astype(np.int64)
            for i in range(bits // BLOCK_BITS)]


def _tables(ctx) -> dict:
    """The few 4-bit tables every operation uses, made once per context."""
    if not hasattr(ctx, "_radix_tables"):
        def state(m):
            x, y = m >> 2, m & 3
            return _LT if x < y else _EQ if x == y else _GT

        def merge(m):
            high, low = m >> 2, m & 3  # a state above, one below
            return high if high != _EQ else low

        bits = SPACE_BITS
        ctx._radix_tables = {
            "low": ctx.lut(lambda m: m & 3, bits=bits),
            "high": ctx.lut(lambda m: m >> 2, bits=bits),
            "product_low": ctx.lut(lambda m: (m >> 2) * (m & 3) & 3, bits=bits),
            "product_high": ctx.lut(lambda m: (m >> 2) * (m & 3) >> 2, bits=bits),
            "square_low": ctx.lut(lambda m: m * m & 3 if m < 4 else 0, bits=bits),
            "square_high": ctx.lut(lambda m: m * m >> 2 if m < 4 else 0, bits=bits),
            "split": ctx.lut(lambda m: m & 3 if m < 8 else (m - 8) >> 2, bits=bits),
            "state": ctx.lut(state, bits=bits),
            "merge": ctx.lut(lambda m: merge(m) if (m >> 2) <= _GT and (m & 3) <= _GT else 0, bits=bits),
            "is_lt": ctx.lut(lambda m: int(m == _LT), bits=bits),
            "is_gt": ctx.lut(lambda m: int(m == _GT), bits=bits),
            "keep_if_set": ctx.lut(lambda m: (m & 3) if m >> 2 == 1 else 0, bits=bits),
            "keep_if_clear": ctx.lut(lambda m: (m & 3) if m >> 2 == 0 else 0, bits=bits),
            "and": ctx.lut(lambda m: (m >> 2) & (m & 3), bits=bits),
            "or": ctx.lut(lambda m: (m >> 2) | (m & 3), bits=bits),
            "xor": ctx.lut(lambda m: (m >> 2) ^ (m & 3), bits=bits),
            # m = 4 b + c: shifted left, b's low bit up and c's high bit in; right, the reverse.
            "up": ctx.lut(lambda m: ((m >> 2) << 1 & 3) | ((m & 3) >> 1), bits=bits),
            "down": ctx.lut(lambda m: ((m & 3) >> 1) | (((m >> 2) & 1) << 1), bits=bits),
        }
    return ctx._radix_tables


def _fresh(x: RadixUInt) -> RadixUInt:
    """x with every block whose error exceeds a bootstrap's (a min or max: the sum of two kept
    blocks) refreshed through the identity table, all in one call: the packed tables' budget
    counts inputs as fresh or bootstrapped."""
    ctx = x.context
    limit = 1.01 * ctx.params.bootstrap_variance()
    noisy = [i for i, b in enumerate(x.blocks) if b.variance > limit]
    if not noisy:
        return x
    blocks = list(x.blocks)
    for i, b in zip(noisy, ctx.bootstrap_many([blocks[i] for i in noisy], _tables(ctx)["low"])):
        blocks[i] = b
    return RadixUInt(ctx, blocks)


def _propagate(ctx, sums: list[Ciphertext]) -> list[Ciphertext]:
    """Blocks holding up to 7 (two blocks and a carry) back to clean blocks, from the
    lowest: each block's value mod 4 and its carry come from one batched call of two
    elements, v and v + 8, through one table that answers v mod 4 below 8 and the carry
    of v - 8 above (so both run at once on two cores even for one element); the last
    block's carry is dropped (mod 2^bits)."""
    tables = _tables(ctx)
    out, carry = [], None
    for i, block in enumerate(sums):
        v = block if carry is None else block + carry
        if i == len(sums) - 1:
            out.append(tables["low"](v))
        else:
            low, carry = ctx.bootstrap_many([v, v + 8], tables["split"])
            out.append(low)
    return out


def _state(x: RadixUInt, y: RadixUInt) -> Ciphertext:
    """lt / eq / gt (0 / 1 / 2) of x against y per element, as a 4-bit ciphertext."""
    ctx = x.context
    tables = _tables(ctx)
    x, y = _fresh(x), _fresh(y)
    states = ctx.bootstrap_many([4 * a + b for a, b in zip(x.blocks, y.blocks)], tables["state"])
    while len(states) > 1:  # merge neighbours, the higher block deciding unless equal
        pairs = [4 * states[i + 1] + states[i] for i in range(0, len(states) - 1, 2)]
        merged = ctx.bootstrap_many(pairs, tables["merge"])
        states = merged + (states[-1:] if len(states) % 2 else [])
    return states[0]


def _boolean(ctx, state: Ciphertext, predicate) -> Ciphertext:
    """A gate boolean (True: q/8, False: -q/8) from a state, by one bootstrap whose test
    vector holds the two values directly."""
    N, p = ctx.params.ring_dimension, 1 << SPACE_BITS
    slot = (np.arange(N) * p) // N
    truth = np.array([bool(predicate(m)) for m in range(p)])
    tv = np.where(truth[slot], np.uint64(1 << 61), np.uint64((1 << 64) - (1 << 61))).astype(np.uint64)
    out = ctx._bootstrap(ctx._half_slot_up(state.data, p), tv)
    return Ciphertext(ctx, out, state.shape, None)


def _select(state: Ciphertext, x: RadixUInt, y: RadixUInt, keep_x_when: int) -> RadixUInt:
    """x's blocks where the state is keep_x_when, else y's: a flag (0/1) from the state,
    then per block one table keeps x_i under the flag and one keeps y_i under its
    absence; their sum is the chosen block (the other is 0)."""
    ctx = x.context
    tables = _tables(ctx)
    flag = tables["is_lt" if keep_x_when == _LT else "is_gt"](state)
    x, y = _fresh(x), _fresh(y)
    packed_x = [4 * flag + a for a in x.blocks]
    packed_y = [4 * flag + b for b in y.blocks]
    kept_x = ctx.bootstrap_many(packed_x, tables["keep_if_set"])
    kept_y = ctx.bootstrap_many(packed_y, tables["keep_if_clear"])
    return RadixUInt(ctx, [a + b for a, b in zip(kept_x, kept_y)])
