"""Wide integers (one torus ciphertext, up to 32 bits) to radix-4 blocks and back: what
OpenFHE's ``EvalDecomp`` does for its large-precision ciphertexts, here into
:class:`~ringfire.tfhe.RadixUInt`, whose blocks multiply, compare and take tables.

- :func:`to_radix` runs the sign's clearing rounds (:mod:`ringfire.tfhe.sign`), four bits a
  round. Each round's window, once the bit above it is out, goes through two more tables
  besides the one that subtracts it: c & 3 and c >> 2, the window's two blocks as 4-bit-space
  block ciphertexts. The last four (or two) bits, alone at the top, are an ordinary small
  integer whose blocks two tables give. 16 bits: 14 bootstraps in four rounds.
- :func:`from_radix`: one table per block, v -> v 4^i at the wide integer's scale (a block's
  carry included), then a sum: one bootstrap per block. The sum carries every block's
  bootstrap error, so the width it can hold is bounded (:func:`from_radix_failure_log2`: 8
  bits at STD128_T64, 18 at STD128_T64_WIDE).

A block read from a window is read as the window is subtracted, from the same input and
with the same switches, so a misread is the subtraction's, but not harmless here: the block
is wrong. So the window's terms count both ways (:func:`to_radix_failure_log2`), where the
floor's count one.
"""

from __future__ import annotations

import numpy as np

from .ciphertext import Ciphertext
from .params import tail_probability_log2
from .radix import BLOCK_BITS, SPACE_BITS, RadixUInt
from .sign import _TOP, _WINDOW, _clear, _clearing_terms


def _windows(bits: int) -> list[int]:
    """The clearing rounds' widths: fours, leaving the top 4 bits (2 when bits is 2 mod 4)."""
    top = _WINDOW if bits % _WINDOW == 0 else bits % _WINDOW
    return [_WINDOW] * ((bits - top) // _WINDOW)


def to_radix(ctx, x: Ciphertext) -> RadixUInt:
    """x (an even number of bits) as radix-4 blocks (see the module docstring)."""
    blocks: list[np.ndarray] = []

    def read_blocks(window: np.ndarray, _low: int, width: int) -> None:
        for b in range(width // BLOCK_BITS):
            blocks.append(ctx._bootstrap(window, _block_table(ctx, width, b)))

    windows = _windows(x.bits)
    data, low = _clear(ctx, x.data.astype(np.uint64), _TOP - x.bits, windows, read_blocks)
    top_bits = _TOP - low  # the bits left: an ordinary small integer
    rest = Ciphertext(ctx, data, x.shape, top_bits, x.variance + len(windows) * ctx.params.bootstrap_variance())
    for b in range(top_bits // BLOCK_BITS):
        values = (np.arange(1 << top_bits) >> (BLOCK_BITS * b)) & ((1 << BLOCK_BITS) - 1)
        blocks.append(ctx.lut(values, bits=top_bits, out_bits=SPACE_BITS)(rest).data)
    return RadixUInt(ctx, [Ciphertext(ctx, d, x.shape, SPACE_BITS) for d in blocks])


def _block_table(ctx, width: int, b: int) -> np.ndarray:
    """Coefficient j of N answers block b of the window's ``width`` bits c = floor(2^width j / N),
    at a block ciphertext's scale (a 4-bit space)."""
    N = ctx.params.ring_dimension
    c = (np.arange(N) << width) // N
    return ctx._encode_outputs((c >> (BLOCK_BITS * b)) & ((1 << BLOCK_BITS) - 1), SPACE_BITS)


def from_radix(ctx, r: RadixUInt, block_table) -> Ciphertext:
    """r as one ``r.bits``-bit integer ciphertext: each block through v -> v 4^i mod 2^bits
    (``block_table(values, out_bits)``: a table of a block's 16 values, wider than
    ``ctx.lut`` makes them)."""
    bits, space = r.bits, 1 << SPACE_BITS
    total = None
    for i, block in enumerate(r.blocks):
        values = (np.arange(space) << (BLOCK_BITS * i)) % (1 << bits)
        term = ctx.apply(block_table(values, bits), block)
        total = term if total is None else total + term
    return total


def to_radix_failure_log2(params, bits: int, variance: float) -> float:
    """log2 of the probability that :func:`to_radix` gives a wrong block for one element whose
    input error has ``variance`` (at q), the worst case over inputs: each round's top bit
    (one way, at an all-ones window, as the floor's), its window (both ways: a block read one
    off is wrong), and the small integer left at the top read by its tables."""
    terms, left, low = _clearing_terms(params, _TOP - bits, _windows(bits), variance, window_both_ways=True)
    top_bits = _TOP - low
    terms.append(tail_probability_log2(left + params.switch_variance(), params.lwe_modulus / (4 << top_bits)))
    return min(0.0, float(np.logaddexp2.reduce(terms)))


def from_radix_failure_log2(params, bits: int) -> float:
    """log2 of the probability that :func:`from_radix`'s result of ``bits`` bits reads wrong:
    the sum of bits / 2 bootstraps' errors against half of its unit, q / 2^(bits + 2)
    (the blocks' own tables are the radix operations' concern)."""
    variance = bits // BLOCK_BITS * params.bootstrap_variance()
    return min(0.0, tail_probability_log2(variance, params.lwe_modulus / (4 << bits)))

