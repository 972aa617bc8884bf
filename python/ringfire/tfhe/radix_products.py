"""Products of radix integers (:class:`~ringfire.tfhe.RadixUInt`), by a public constant or
by another encrypted integer, mod 2^bits: partial products laid out in columns (one per
block), the columns compressed by tables until two clean blocks and a carry fit each, then
one rippling addition.

A *term* is a 4-bit ciphertext and a bound on its value. Every block sum a table reads
stays at or below 15, the most a 4-bit table takes, and its error variance at or below 17
bootstraps' (a packed 4 x + y of two blocks, the budget ``failure_probability("radix")``
is computed for): a term d * x_i (d <= 3) has variance d^2 and bound 3d, any other term
a bootstrap's variance and a bound of at least 1, so a group of terms whose bounds sum to
15 or less has a variance of 15 bootstraps' or less.
"""

from __future__ import annotations

import numpy as np

from .ciphertext import Ciphertext

TABLE_LIMIT = 15   # the largest value a 4-bit table reads
RIPPLE_LIMIT = 6   # a column the final ripple takes (with the carry from below, at most 7)


def times_constant(x, c: int):
    """x * c for a public int c: block i times digit j of c in base 4 (a linear step, no
    bootstrap) is a term of column i + j."""
    from .radix import BLOCK_BITS, RadixUInt
    c = int(c) % (1 << x.bits)
    blocks = len(x.blocks)
    digits = [(c >> (BLOCK_BITS * j)) & 3 for j in range(blocks)]
    columns: list[list] = [[] for _ in range(blocks)]
    for j, d in enumerate(digits):
        for i in range(blocks - j):
            if d:
                columns[i + j].append((x.blocks[i] * d if d > 1 else x.blocks[i], 3 * d))
    return RadixUInt(x.context, _sum_columns(x, columns))


def times_encrypted(x, y):
    """x * y: per pair of blocks (i, j) with i + j below the width, one table on 4 x_i + y_j
    gives the product's low block (column i + j) and one its high part, at most 2
    (column i + j + 1): two batched calls, then the columns' sum."""
    from .radix import RadixUInt, _tables
    ctx, blocks = x.context, len(x.blocks)
    tables = _tables(ctx)
    pairs = [(i, j) for i in range(blocks) for j in range(blocks - i)]
    # A block times itself (x * x, x * (x << 2k)): 4 a + a would carry 25 times a block's
    # error, past the budget; the square's tables read the block alone.
    same = [_same(x.blocks[i], y.blocks[j]) for i, j in pairs]
    inputs = [x.blocks[i] if s else 4 * x.blocks[i] + y.blocks[j] for (i, j), s in zip(pairs, same)]
    lows = _through(ctx, inputs, same, tables["product_low"], tables["square_low"])
    high_pairs = [k for k, (i, j) in enumerate(pairs) if i + j + 1 < blocks]
    highs = _through(ctx, [inputs[k] for k in high_pairs], [same[k] for k in high_pairs], tables["product_high"],
                     tables["square_high"])
    columns: list[list] = [[] for _ in range(blocks)]
    for (i, j), low in zip(pairs, lows):
        columns[i + j].append((low, 3))
    for k, high in zip(high_pairs, highs):
        i, j = pairs[k]
        columns[i + j + 1].append((high, 2))
    return RadixUInt(ctx, _sum_columns(x, columns))


def _same(a: Ciphertext, b: Ciphertext) -> bool:
    """The same encryption (equal words: a bootstrap of one input twice gives the same)."""
    return a is b or np.array_equal(a.data, b.data)


def _through(ctx, items: list, squares: list, product, square) -> list:
    """items through `product`, those flagged in `squares` through `square` instead: one
    batched call per table, results in order."""
    out = [None] * len(items)
    for flag, table in ((False, product), (True, square)):
        picked = [k for k, s in enumerate(squares) if s == flag]
        if picked:
            for k, r in zip(picked, ctx.bootstrap_many([items[k] for k in picked], table)):
                out[k] = r
    return out


def _sum_columns(x, columns: list[list]) -> list[Ciphertext]:
    """Clean blocks (below 4) of the number whose block i is the sum of column i's terms
    (mod 2^bits: what passes the top column is dropped).

    While a column's bounds sum past what the final addition takes, its terms are packed
    into groups of bound 15 or less, and each group becomes its value mod 4 (a term of this
    column) and its value over 4 (a term of the next): all groups of all columns in two
    batched calls a round. Then every column sums to 6 or less, and one ripple of carries
    (the addition's) finishes."""
    from .radix import _propagate, _tables
    ctx = x.context
    tables = _tables(ctx)
    while any(sum(b for _, b in column) > RIPPLE_LIMIT for column in columns):
        groups = []  # (column, ciphertext of the group's sum, its bound)
        kept: list[list] = [[] for _ in columns]
        for k, column in enumerate(columns):
            if sum(b for _, b in column) <= RIPPLE_LIMIT:
                kept[k] = column
                continue
            for group in _pack(column):
                if len(group) == 1 and group[0][1] <= 3:
                    kept[k].append(group[0])  # a clean block already: nothing to split
                    continue
                groups.append((k, _total(group, None), sum(b for _, b in group)))
        lows = ctx.bootstrap_many([g for _, g, _ in groups], tables["low"])
        carried = [(k, g, bound) for k, g, bound in groups if k + 1 < len(columns) and bound >= 4]
        carries = ctx.bootstrap_many([g for _, g, _ in carried], tables["high"]) if carried else []
        for (k, _, bound), low in zip(groups, lows):
            kept[k].append((low, min(3, bound)))
        for (k, _, bound), carry in zip(carried, carries):
            kept[k + 1].append((carry, bound >> 2))
        columns = kept
    zero = x._zero_block()
    return _propagate(ctx, [_total(column, zero) for column in columns])


def _pack(column: list) -> list[list]:
    """The column's terms in groups whose bounds sum to at most 15, largest first (first fit)."""
    groups: list[list] = []
    for term in sorted(column, key=lambda t: -t[1]):
        for group in groups:
            if sum(b for _, b in group) + term[1] <= TABLE_LIMIT:
                group.append(term)
                break
        else:
            groups.append([term])
    return groups


def _total(terms: list, zero: Ciphertext | None) -> Ciphertext:
    """The sum of the terms' ciphertexts (no bootstrap); `zero` for a column without terms."""
    if not terms:
        return zero
    total = terms[0][0]
    for term, _ in terms[1:]:
        total = total + term
    return total


def check_constant(c) -> int:
    """A public multiplier: an int (NumPy's too), not a bool or an array."""
    if isinstance(c, (bool, np.bool_)) or not isinstance(c, (int, np.integer)):
        raise TypeError(f"radix integers multiply by a RadixUInt or a public int, not {type(c).__name__}")
    return int(c)
