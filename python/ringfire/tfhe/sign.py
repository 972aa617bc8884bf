"""The sign of a wide integer held in one torus ciphertext, in a few bootstraps.

A ``bits``-bit integer m sits in the top bits of a 64-bit phase (padding bit 63,
message bits 63 - bits .. 62). Its sign -- the top message bit, m >= 2^(bits-1),
what OpenFHE's ``EvalSign`` gives -- cannot be read by one bootstrap once bits
exceeds about 5: the modulus switch to 2N keeps 1 + log2 N bits, and a value next
to the boundary would be decided by the switch's error. So the low bits are
cleared first, four at a time (Liu-Micciancio-Polyakov's idea of shrinking the
message before the sign, on the 64-bit torus):

1. the ciphertext is multiplied by 2^s so that the next four bits sit at 59..62
   with the bit above them at 63 (the bits above that overflow 2^64 and vanish),
   plus 2^58, half of the four bits' unit;
2. one bootstrap reads the bit at 63 (a sign bootstrap), which is then taken out,
   so the four bits' window starts at a known 0 -- a table on them need not be
   negacyclic;
3. a second bootstrap maps the four bits c to c 2^low, their value at the
   original scale, which the ciphertext subtracts;

until at most five message bits remain; then one sign bootstrap on twice the
ciphertext reads the top bit. A 9-bit sign costs three bootstraps. Every
decision keeps 2^58 (q/64 at the bootstrap's grid) between the phase and its
boundaries; the error grows only by the multiplications, so the input must be a
fresh or bootstrapped ciphertext (its predicted variance is checked, and the
failure probability of the whole is summed from the noise model's terms).
"""

from __future__ import annotations

import numpy as np

from .ciphertext import Ciphertext
from .params import tail_probability_log2

_TOP = 63  # the padding bit
_WINDOW = 4  # bits cleared per round


def sign_rounds(bits: int) -> int:
    """Rounds of clearing (two bootstraps each) before the final sign bootstrap."""
    remaining, rounds = bits, 0
    while remaining > _WINDOW + 1:
        remaining -= _WINDOW
        rounds += 1
    return rounds


def sign_failure_log2(params, bits: int, variance: float) -> float:
    """log2 of the probability that :func:`sign` errs on one element whose input error has
    ``variance`` (at q): each bootstrap's input error (the ciphertext's, multiplied, plus
    the switches') against the 2^58 margin, summed over the bootstraps."""
    q = params.lwe_modulus
    switch, boot = params.switch_variance(), params.bootstrap_variance()
    scale = q / 2.0 ** 64  # a phase at 2^64 to units of q
    margin = 2.0 ** 58 * scale
    low, terms = _TOP - bits, []
    for _ in range(sign_rounds(bits)):
        grow = 4.0 ** ((_TOP - _WINDOW) - low)
        terms.append(tail_probability_log2(variance * grow + switch, margin))  # the bit at 63
        terms.append(tail_probability_log2(variance * grow + 4 * boot + switch, margin))  # the window
        variance += boot
        low += _WINDOW
    terms.append(tail_probability_log2(4 * variance + switch, 2.0 ** low * scale))
    return float(np.logaddexp2.reduce(terms))


def sign(ctx, x: Ciphertext) -> Ciphertext:
    """Encrypted booleans: True where x >= 2^(bits-1) (see the module docstring)."""
    data = x.data.astype(np.uint64)
    low = _TOP - x.bits  # the lowest message bit's position
    minus_eighth = np.full(ctx.params.ring_dimension, np.uint64((1 << 64) - (1 << 61)))  # True past 2^63
    for _ in range(sign_rounds(x.bits)):
        scaled = data * np.uint64(1 << ((_TOP - _WINDOW) - low))
        scaled[:, -1] += np.uint64(1 << 58)
        top = ctx._bootstrap(scaled, minus_eighth).astype(np.uint64)  # -2^61, or 2^61 where bit 63 is set
        window = scaled - np.uint64(2) * top
        window[:, -1] -= np.uint64(1 << 62)  # scaled minus 2 (top + 2^61): the bit at 63 taken out
        data = data - ctx._bootstrap(window, _window_table(ctx, low)).astype(np.uint64)
        low += _WINDOW
    final = data * np.uint64(2)
    final[:, -1] += np.uint64(1 << low)  # half of the lowest remaining unit, 2^(low + 1)
    return Ciphertext(ctx, ctx._bootstrap(final, minus_eighth), x.shape, None)


def _window_table(ctx, low: int) -> np.ndarray:
    """Coefficient j of N answers the four bits c = floor(16 j / N): c 2^low."""
    N = ctx.params.ring_dimension
    c = (np.arange(N) << _WINDOW) // N
    return c.astype(np.uint64) << np.uint64(low)
