"""Lookup tables on packed CKKS ciphertexts by functional bootstrapping.

The slots of a ciphertext hold small integers ``m`` (read modulo ``p``); one
functional bootstrap (Alexandru, Kim, Polyakov, CRYPTO 2025) returns a
ciphertext whose slots hold ``f(m)`` for any function ``f`` given as a table
of ``p`` real values, refreshed at the top of the chain like a bootstrap. The
circuit is the C++ core's (``cpp/src/ckks/functional_bootstrap.cpp``): the
bootstrap's ModRaise leaves ``m q_0 / p + q_0 I`` in each coefficient, the
circuit turns it into the root of unity ``omega^m`` and evaluates the
polynomial that interpolates the table on the ``p``-th roots of unity.

What a user states and gets (docs/lookup.md):

- the input's slots are integers, real, within an error well below 1/2: the
  error is not rounded away; an error ``e`` moves the output by at most
  ``error_gain(table) * |e|`` (the slope bound of the table's interpolating
  trigonometric polynomial, which a jump in the table, such as the wrap from
  ``p-1`` to ``0`` of ``f(m) = m``, makes large);
- ``p`` from 2 to 4096; the table's polynomial has degree ``p/2`` and takes
  ``ceil(log2(p/2 + 1))`` levels from what EvalMod's arcsine and
  SlotsToCoeffs would use, then from the user's levels
  (:func:`output_level` says where the result lands);
- an input at level ``stc_levels`` or above; with sparse packing (``n`` slots) a vector
  that repeats with period ``n``, as a sparse bootstrap reads it.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence

import numpy as np

MAX_MODULUS = 4096


def check_modulus(modulus, op: str = "ckks.lut") -> int:
    if isinstance(modulus, bool) or not isinstance(modulus, numbers.Integral) or not 2 <= modulus <= MAX_MODULUS:
        raise ValueError(f"[{op}] modulus must be an integer in [2, {MAX_MODULUS}] (the table's size), "
                         f"got {modulus!r}")
    return int(modulus)


def table_of(function: Callable[[int], float] | Sequence[float] | np.ndarray, modulus: int, *,
             signed: bool = False, op: str = "ckks.lut") -> list[float]:
    """The ``modulus`` values the circuit interpolates: ``function(m)`` for
    ``m = 0 .. p-1`` (``signed``: for ``m`` in ``[-p/2, p/2)``, stored at ``m mod p``), or
    the sequence itself (length ``p``, index ``m mod p``)."""
    p = check_modulus(modulus, op)
    if callable(function):
        inputs = range(-(p // 2), p - p // 2) if signed else range(p)
        values = [0.0] * p
        for m in inputs:
            v = function(m)
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise TypeError(f"[{op}] the function must return real numbers; f({m}) = {v!r}")
            values[m % p] = float(v)
    else:
        if signed:
            raise ValueError(f"[{op}] signed= applies to a function; a table is indexed by m mod {p}")
        if function is None or isinstance(function, (str, bytes)):
            raise TypeError(f"[{op}] expected a function or a sequence of {p} real values, got {function!r}")
        array = np.asarray(function)
        if np.iscomplexobj(array) or array.dtype == object or array.ndim != 1:
            raise TypeError(f"[{op}] a table is a flat sequence of {p} real values; got "
                            f"{'complex values' if np.iscomplexobj(array) else f'shape {array.shape}, {array.dtype}'}")
        values = array.astype(np.float64).tolist()
        if len(values) != p:
            raise ValueError(f"[{op}] the table has {len(values)} entries, modulus says {p}")
    bad = [i for i, v in enumerate(values) if not math.isfinite(v)]
    if bad:
        raise ValueError(f"[{op}] the table's values must be finite; entry {bad[0]} is {values[bad[0]]!r}")
    return values


def output_level(ctx, modulus: int, flat: bool = False) -> int:
    """Where ``ev.lut`` lands for a table of ``modulus`` entries (``ctx.max_level`` unless
    the table's polynomial needs more levels than the circuit has spare; a flat table,
    one more)."""
    p = check_modulus(modulus)
    return int(ctx._native_bootstrapper("ckks.lut").functional_output_level(p, flat=bool(flat)))


def error_gain(table: Sequence[float] | np.ndarray) -> float:
    """How far an input error ``e`` can move the result: ``|f(m + e) - f(m)| <=
    error_gain * |e|`` for the trigonometric polynomial that interpolates the table on
    the ``p``-th roots of unity, ``sum_k 2 pi k |c_k| / p`` over its frequencies
    ``|k| <= p/2`` (``c`` the table's DFT divided by ``p``). Smooth periodic tables gain
    about their slope; jumps (a sign, the wrap of ``f(m) = m``) gain more."""
    values = np.asarray(table, dtype=np.float64)
    p = values.size
    c = np.fft.fft(values) / p
    k = np.minimum(np.arange(p), p - np.arange(p))  # frequency of each DFT term: c_k and c_(p-k) pair up
    return float(2 * np.pi / p * np.sum(k * np.abs(c)))


def sign_lookups(bits: int, digit_bits: int = 4) -> int:
    """The functional bootstraps :func:`integer_sign` runs on ``bits``-bit integers (each on a
    pair): one per digit it drops, then the last table."""
    return 1 + max(0, -(-(bits - digit_bits) // digit_bits))


def floor_lookups(shift: int, digit_bits: int = 4) -> int:
    """The functional bootstraps :func:`integer_floor_divide` runs for ``shift``: one per digit."""
    return -(-shift // digit_bits)


def integer_sign(ev, x, bits: int, digit_bits: int = 4, op: str = "ckks.sign_integer", flat: bool | None = None):
    """sign(x) in {-1, 0, 1} for slots holding integers in ``[-2^(bits-1), 2^(bits-1))``
    (``bits`` up to 24), by digit decomposition (as Alexandru, Kim and Polyakov's
    multi-precision sign). sign(x) = [x >= 0] + [x - 1 >= 0] - 1, and both tests travel
    together as ``x + i (x - 1)`` (:meth:`~ringfire.ckks.Evaluator.lut_pair`): while they are
    wider than ``digit_bits + 1`` bits, a table of ``2^digit_bits`` entries reads their low
    digit (``m mod 2^d``, in ``[0, 2^d)``), which is subtracted and divided out (exactly:
    the division is the scale's, no level); what remains is ``floor(x / 2^(d j))``, whose
    sign a last table reads. ``ceil((bits - digit_bits) / digit_bits) + 1`` functional
    bootstraps in all (3 for 12-bit integers in 4-bit digits), each on a pair. ``flat``
    (:func:`uses_flat_tables`): the tables are flat at the integers, so the input's error is
    not carried into the digits and the sign."""
    _check_digits(bits, digit_bits, op)
    p = 1 << digit_bits
    digits_flat = uses_flat_tables(x.context, p, flat, op) if bits > digit_bits else False
    if bits > digit_bits:
        _check_digit_lands_high(x.context, p, digit_bits, op, digits_flat)
    values = [x, ev.add_scalar(x, -1.0)]
    bits += 1  # x - 1 reaches -2^(bits-1) - 1
    while bits > digit_bits + 1:
        values = _drop_low_digit(ev, values, p, digits_flat)
        bits -= digit_bits
    last_flat = uses_flat_tables(x.context, 1 << bits, flat, op, feeds_lookup=False)
    at_least_0, at_least_1 = ev.lut_pair(*values, lambda m: float(m >= 0), modulus=1 << bits, signed=True,
                                         flat=last_flat)
    return ev.add_scalar(ev.add(at_least_0, at_least_1), -1.0)


def integer_floor_divide(ev, x, shift: int, bits: int, digit_bits: int = 4, op: str = "ckks.floor_divide",
                         flat: bool | None = None):
    """floor(x / 2^shift) for slots holding integers in ``[-2^(bits-1), 2^(bits-1))`` (``bits``
    up to 24): the rescaling of fixed-point integers, exact (the result holds integers, with
    CKKS's error). The low ``shift`` bits go a digit at a time, as in :func:`integer_sign`: a
    table of ``2^digit_bits`` entries (a smaller one for the last, ``shift mod digit_bits``
    bits) reads ``x mod 2^d``, which is subtracted and divided out through the scale (no level).
    ``ceil(shift / digit_bits)`` functional bootstraps; the result stays on ``x``'s level, its
    scale ``2^shift`` times x's (``ev.adjust_to`` lands a canonical one). With flat tables
    (:func:`uses_flat_tables`) x's error e leaves the result as e / 2^shift; with plain ones
    each digit's table carries it on times its slope, and the result keeps about e."""
    _check_digits(bits, digit_bits, op)
    if isinstance(shift, bool) or not isinstance(shift, numbers.Integral) or not 1 <= shift < bits:
        raise ValueError(f"[{op}] shift must be an integer in [1, bits - 1] = [1, {bits - 1}], got {shift!r}")
    flat = uses_flat_tables(x.context, 1 << min(shift, digit_bits), flat, op, feeds_lookup=shift > digit_bits)
    if shift > digit_bits:
        _check_digit_lands_high(x.context, 1 << digit_bits, digit_bits, op, flat)
    values = [x]
    while shift > 0:
        step = min(shift, digit_bits)
        values = _drop_low_digit(ev, values, 1 << step, flat)
        shift -= step
    return values[0]


def uses_flat_tables(ctx, p: int, flat: bool | None, op: str = "ckks.lut", feeds_lookup: bool = True) -> bool:
    """Whether a digit table of ``p`` entries in :func:`integer_sign` or
    :func:`integer_floor_divide` is flat (``ev.lut(..., flat=True)``). ``flat=None`` takes a
    flat one where it lands at or above a lookup's input level (``functional_input_level_min``)
    -- on N16_BOOT, every digit size up to 16 -- and a plain one otherwise (the toy preset's
    three levels, where a flat table would cost the result a level). ``True`` insists: it raises
    where the chain lacks the levels, or where the next lookup reads the digit's result
    (``feeds_lookup``) and it lands too low; ``False`` declines."""
    if flat is not None and not isinstance(flat, bool):
        raise TypeError(f"[{op}] flat must be True, False or None, got {flat!r}")
    if flat is False:
        return False
    try:
        level = output_level(ctx, p, flat=True)
    except ValueError:
        if flat:
            raise
        return False
    floor = ctx._native_bootstrapper(op).functional_input_level_min
    fits = level >= floor or (flat is True and not feeds_lookup)
    if flat and not fits:
        raise ValueError(f"[{op}] a flat table of {p} entries lands at level {level}, below the level {floor} the "
                         f"next lookup needs: use smaller digits or flat=False")
    return fits


def _check_digits(bits, digit_bits, op: str) -> None:
    for name, value, low, high in (("bits", bits, 2, 24), ("digit_bits", digit_bits, 1, 11)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not low <= value <= high:
            raise ValueError(f"[{op}] {name} must be an integer in [{low}, {high}], got {value!r}")


def _check_digit_lands_high(ctx, p: int, digit_bits: int, op: str, flat: bool = False) -> None:
    """A digit's table must land where the next digit's lookup can start."""
    floor = ctx._native_bootstrapper(op).functional_input_level_min
    if output_level(ctx, p, flat) < floor:
        raise ValueError(f"[{op}] a table of {p} entries lands at level {output_level(ctx, p, flat)}, below the level "
                         f"{floor} the next digit's lookup needs: use smaller digits (digit_bits < {digit_bits})")


def _drop_low_digit(ev, values: list, p: int, flat: bool = False) -> list:
    """floor(v / p) of each of one or two ciphertexts holding integers: their low digit
    ``v mod p`` read by one lookup (both as a pair), subtracted, and divided out exactly
    through the scale."""
    digit = (lambda m: float(m % p))
    lows = (ev.lut_pair(*values, digit, modulus=p, flat=flat) if len(values) == 2 else
            [ev.lut(values[0], digit, modulus=p, flat=flat)])
    return [ev.divide_by_integer(_minus(ev, v, low), p) for v, low in zip(values, lows)]


def _minus(ev, x, digit):
    """x - digit. After a division x is read at a scale 2^k times the digit's: the digit's
    words times 2^k, read at that scale, hold the same value, so the difference stays exact
    and costs x no level: the digit, which lands high, is moved onto x's level and its
    canonical scale with levels of its own (the lower x, when x is higher, the same way).
    Otherwise the operands are aligned (one level)."""
    if x.level > digit.level:
        x = ev.adjust_to(x, digit.level)
    digit, exact = read_at(ev, digit, x)
    return ev.sub(x, digit) if exact else x - digit


def read_at(ev, x, other):
    """``x`` (at ``other``'s level or above) moved onto ``other``'s level and read at its scale,
    for an exact sum that costs no level, and whether that worked. A floor division leaves its
    result read at an integer k times the canonical scale: x times k read there holds x, where
    the operators would align the two by another rescale. Where the ratio of the scales is not
    an integer of at least 1, x is only moved (False)."""
    if x.level > other.level:
        x = ev.adjust_to(x, other.level)
    ratio = other.scale / x.scale
    if ratio < 1 or ratio != round(ratio):
        return x, False
    k = int(ratio)
    return (ev.divide_by_integer(ev.multiply_integer(x, k), k) if k > 1 else x), True
