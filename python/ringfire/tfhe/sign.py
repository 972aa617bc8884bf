"""The sign and the floor of a wide integer held in one torus ciphertext, in a few bootstraps.

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

Which errors are harmful, and so what the failure probability counts: a window
of w bits read one off in its middle leaves 2^low behind, 2^-w of the next
window's unit, which the later rounds and the decryption round away. Harm comes
only at the window's edges and in one direction each: an all-ones window (c =
2^w - 1) whose top bit is misread upwards, or which is read past its top (the
negacyclic half then returns 0: the carry is lost), and an all-zeros window read
below 0 (it then returns -(2^w - 1) 2^low). The model sums those one-sided
tails, the worst case over inputs (an element whose windows are all ones):
counted on NOISY_T64 it matches within 20 %; elements at neither edge never
fail, so uniform inputs fail about 3 / 2^(w+1) as often (tests/test_tfhe_torus.py).

The floor (Micciancio-Polyakov's HomFloor, OpenFHE's ``EvalFloor``) is the same
clearing stopped after k bits: windows of four, the last one narrower (w bits at
63 - w .. 62, 2^(62 - w) from the boundaries). Once the k low bits are zero, the
same ciphertext holds floor(m / 2^k) as a (bits - k)-bit integer: its lowest
message bit now sits where such an integer's does, so nothing is shifted. It
carries a bootstrap's error, so that width is bounded as a bootstrapped input's
is (the failure probability includes reading it).
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


def floor_windows(shift: int) -> list[int]:
    """The widths of the rounds that clear ``shift`` low bits: fours, the rest last."""
    return [_WINDOW] * (shift // _WINDOW) + ([shift % _WINDOW] if shift % _WINDOW else [])


def _one_sided_log2(variance: float, margin: float) -> float:
    """log2 of the probability that a Gaussian error passes ``margin`` in one given direction."""
    return tail_probability_log2(variance, margin) - 1


def _clearing_terms(params, low: int, windows: list[int], variance: float,
                    window_both_ways: bool = False) -> tuple[list[float], float, int]:
    """log2 failure terms of the clearing rounds (two bootstraps each) from bit ``low`` up,
    the error variance (at q) they leave, and the lowest remaining bit. Each bootstrap's
    input error (the ciphertext's, multiplied, plus the switches') against its window's
    margin 2^(62 - w), one-sided (the module docstring: an all-ones window); the window's
    both ways with ``window_both_ways`` (where a window read one off is itself an answer)."""
    q = params.lwe_modulus
    switch, boot = params.switch_variance(), params.bootstrap_variance()
    scale = q / 2.0 ** 64  # a phase at 2^64 to units of q
    terms = []
    for w in windows:
        grow = 4.0 ** ((_TOP - w) - low)
        margin = 2.0 ** (_TOP - 1 - w) * scale
        terms.append(_one_sided_log2(variance * grow + switch, margin))  # the bit at 63, misread upwards
        window = variance * grow + 4 * boot + switch
        terms.append(tail_probability_log2(window, margin) if window_both_ways  # any misread
                     else _one_sided_log2(window, margin))                     # read past its top
        variance += boot
        low += w
    return terms, variance, low


def sign_failure_log2(params, bits: int, variance: float) -> float:
    """log2 of the probability that :func:`sign` errs on one element whose input error has
    ``variance`` (at q), the worst case over inputs: the clearing rounds' terms and the
    final sign bootstrap's (an element next to 2^(bits-1) or 0 errs one way), summed."""
    terms, variance, low = _clearing_terms(params, _TOP - bits, [_WINDOW] * sign_rounds(bits), variance)
    scale = params.lwe_modulus / 2.0 ** 64
    terms.append(_one_sided_log2(4 * variance + params.switch_variance(), 2.0 ** low * scale))
    return min(0.0, float(np.logaddexp2.reduce(terms)))  # a sum of tails: at most certain


def floor_failure_log2(params, bits: int, shift: int, variance: float) -> float:
    """log2 of the probability that :func:`shift_right` errs on one element, the worst case
    over inputs: its rounds' terms, and the result read at its own width (its error, the
    input's plus a bootstrap's per round, against half of its unit 2^(63 - bits + shift):
    the bound on the widths a floor can return)."""
    terms, left, low = _clearing_terms(params, _TOP - bits, floor_windows(shift), variance)
    scale = params.lwe_modulus / 2.0 ** 64
    terms.append(tail_probability_log2(left, 2.0 ** (low - 1) * scale))  # either way: every value has two edges
    return min(0.0, float(np.logaddexp2.reduce(terms)))


def floor_variance(params, shift: int, variance: float) -> float:
    """The error variance (at q) :func:`shift_right` leaves: each round subtracts a bootstrap's output."""
    return variance + len(floor_windows(shift)) * params.bootstrap_variance()


def _clear(ctx, data: np.ndarray, low: int, windows: list[int], read_window=None) -> tuple[np.ndarray, int]:
    """Clears the message bits from ``low`` up, a window of w bits per round (two bootstraps).
    ``read_window(window, low, w)``, if given, sees each round's window (the w bits at
    63-w..62, the bit above taken out) before it is subtracted: what other tables can read."""
    minus_eighth = _minus_eighth(ctx)
    for w in windows:
        scaled = data * np.uint64(1 << ((_TOP - w) - low))     # the w bits at 63-w..62, the next one at 63
        scaled[:, -1] += np.uint64(1 << (_TOP - 1 - w))        # half the window's unit
        top = ctx._bootstrap(scaled, minus_eighth).astype(np.uint64)  # -2^61, or 2^61 where bit 63 is set
        window = scaled - np.uint64(2) * top
        window[:, -1] -= np.uint64(1 << 62)  # scaled minus 2 (top + 2^61): the bit at 63 taken out
        if read_window is not None:
            read_window(window, low, w)
        data = data - ctx._bootstrap(window, _window_table(ctx, low, w)).astype(np.uint64)
        low += w
    return data, low


def _minus_eighth(ctx) -> np.ndarray:
    """The gates' sign test vector negated: 2^61 (True) where the phase is past 2^63, else -2^61."""
    return np.uint64(0) - ctx._sign_vector()


def sign(ctx, x: Ciphertext) -> Ciphertext:
    """Encrypted booleans: True where x >= 2^(bits-1) (see the module docstring)."""
    low = _TOP - x.bits  # the lowest message bit's position
    data, low = _clear(ctx, x.data.astype(np.uint64), low, [_WINDOW] * sign_rounds(x.bits))
    final = data * np.uint64(2)
    final[:, -1] += np.uint64(1 << low)  # half of the lowest remaining unit, 2^(low + 1)
    return Ciphertext(ctx, ctx._bootstrap(final, _minus_eighth(ctx)), x.shape, None)


def shift_right(ctx, x: Ciphertext, shift: int) -> Ciphertext:
    """floor(x / 2^shift) as a (bits - shift)-bit integer (see the module docstring)."""
    data, _ = _clear(ctx, x.data.astype(np.uint64), _TOP - x.bits, floor_windows(shift))
    return Ciphertext(ctx, data, x.shape, x.bits - shift, floor_variance(ctx.params, shift, x.variance))


def _window_table(ctx, low: int, width: int) -> np.ndarray:
    """Coefficient j of N answers the ``width`` bits c = floor(2^width j / N): c 2^low."""
    N = ctx.params.ring_dimension
    c = (np.arange(N) << width) // N
    return c.astype(np.uint64) << np.uint64(low)
