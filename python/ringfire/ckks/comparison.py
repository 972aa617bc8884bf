"""Comparisons on packed CKKS ciphertexts: sign, compare, max and min slot by slot,
by composite odd polynomials (Cheon, Kim, Kim, Lee, "Efficient homomorphic comparison
methods with optimal complexity", ASIACRYPT 2020).

sign(x) for ``|x| <= 1`` is approached by iterating two odd polynomials of degree 7 that map
[-1, 1] into itself and keep the sign: g_3, which pushes small values away from 0
quickly (slope 4.48 at 0), then f_3, which pulls values near ±1 onto ±1 (its fixed points,
with flat derivatives there). How many of each is chosen before anything is encrypted,
on a dense grid in the clear, for the two numbers a user states:

- ``precision_bits`` (alpha): inputs with ``|x| >= bound * 2^-alpha`` must come out right;
  closer to 0 the result lies somewhere in [-1, 1] (sign(0) is 0 by symmetry);
- ``error_bits`` (beta): those results lie within 2^-beta of ±1 (before CKKS's own
  error, which is far smaller at the library's presets).

Every polynomial costs 3 levels, and scaling by 1 / ``bound`` one more when ``bound`` is
not 1. Where a ciphertext runs out of levels it is bootstrapped when the
context can bootstrap; otherwise the call is refused before any work, with the depth
it needs (:func:`sign_plan` says it in advance).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .ciphertext import Ciphertext
from .circuits import Polynomial

# Monomial coefficients (x, x^3, x^5, x^7) of the two degree-7 polynomials.
F3 = np.array([0, 35, 0, -35, 0, 21, 0, -5]) / 16
G3 = np.array([0, 4589, 0, -16577, 0, 25614, 0, -12860]) / 1024
_MAX_STEPS = 40


@dataclass(frozen=True)
class SignPlan:
    """The composite polynomial for one (precision_bits, error_bits) pair: ``g_steps``
    applications of g_3, then ``f_steps`` of f_3. ``depth``: the levels it consumes
    on inputs in [-1, 1] (3 per polynomial)."""

    precision_bits: float
    error_bits: float
    g_steps: int
    f_steps: int

    @property
    def steps(self) -> int:
        return self.g_steps + self.f_steps

    @property
    def depth(self) -> int:
        return 3 * self.steps

    def coefficients(self) -> list[np.ndarray]:
        """The steps' monomial coefficients, in the order they are applied."""
        return [G3] * self.g_steps + [F3] * self.f_steps

    def polynomials(self) -> list[Polynomial]:
        """The steps as :class:`Polynomial` objects on [-1, 1] (Chebyshev basis)."""
        return [Polynomial(np.polynomial.chebyshev.poly2cheb(c)) for c in self.coefficients()]

    def __call__(self, x) -> np.ndarray:
        """The composite in the clear (NumPy): the reference for encrypted results."""
        y = np.asarray(x, dtype=float)
        for c in self.coefficients():
            y = np.polynomial.polynomial.polyval(y, c)
        return y


def _grid(alpha: float) -> np.ndarray:
    """Inputs in [2^-alpha, 1]: log-spaced where the composite is steep, linear elsewhere."""
    lo = 2.0 ** -alpha
    return np.unique(np.concatenate([np.geomspace(lo, 1.0, 4000), np.linspace(lo, 1.0, 4000)]))


@functools.lru_cache(maxsize=64)
def sign_plan(precision_bits: float = 8, error_bits: float = 12) -> SignPlan:
    """The shallowest g_3^a f_3^b that maps every ``|x|`` in [2^-precision_bits, 1] to within
    2^-error_bits of sign(x) (checked on a dense grid; the polynomials are odd, so
    negative inputs follow). Among plans of equal depth, the one with fewer g steps."""
    if not 1 <= precision_bits <= 30 or not 1 <= error_bits <= 40:
        raise ValueError(f"[ckks.sign] precision_bits must lie in [1, 30] and error_bits in [1, 40]; got "
                         f"{precision_bits!r}, {error_bits!r}")
    x, tol = _grid(precision_bits), 2.0 ** -error_bits
    for steps in range(1, _MAX_STEPS + 1):
        for g_steps in range(0, steps + 1):
            plan = SignPlan(float(precision_bits), float(error_bits), g_steps, steps - g_steps)
            if np.max(np.abs(1.0 - plan(x))) <= tol:
                return plan
    raise ValueError(f"[ckks.sign] no composite of up to {_MAX_STEPS} steps reaches 2^-{error_bits} from "
                     f"2^-{precision_bits}")


def sign(ev, x, *, bound: float = 1.0, precision_bits: float = 8, error_bits: float = 12):
    """sign(x) slot by slot for ``|x| <= bound``: within 2^-error_bits of ±1 where
    ``|x| >= bound * 2^-precision_bits``, in [-1, 1] closer to 0 (module docstring)."""
    _check_ciphertexts("ckks.sign", x)
    plan = sign_plan(precision_bits, error_bits)
    bound = _check_bound(bound)
    polys = plan.polynomials()
    _check_depth(ev, x, polys, int(bound != 1.0), "ckks.sign")
    if bound != 1.0:  # onto [-1, 1] first: one level (a bootstrap first at level 0 refreshes |x| <= bound)
        x = _scaled(ev, x, 1.0 / bound, refresh_bound=max(1, math.ceil(bound)))
    for poly in polys:
        if x.level < poly.depth:
            x = ev.bootstrap(x)
        x = ev.evaluate_polynomial(x, poly)
    return x


def compare(ev, a, b, *, bound: float = 1.0, precision_bits: float = 8, error_bits: float = 12):
    """[a > b] slot by slot for ``|a|, |b| <= bound``: 1 where a - b >= 2 bound 2^-precision_bits,
    0 where b - a is, within 2^-error_bits; between 0 and 1 closer (0.5 at a == b)."""
    _check_ciphertexts("ckks.compare", a, b)
    s = sign(ev, ev.sub(*_same_level(ev, a, b, _check_bound(bound))), bound=2 * bound, precision_bits=precision_bits,
             error_bits=error_bits)
    return ev.add_scalar(_scaled(ev, s, 0.5), 0.5)


def maximum(ev, a, b, *, bound: float = 1.0, precision_bits: float = 8, error_bits: float = 12):
    """max(a, b) slot by slot for ``|a|, |b| <= bound``, as (a + b)/2 + (a - b)/2 sign(a - b): off by
    at most ``|a - b| 2^-error_bits`` where ``|a - b| >= 2 bound 2^-precision_bits``, by at most
    ``|a - b| / 2`` closer (so never by more than bound 2^-precision_bits there)."""
    return _extremum(ev, a, b, bound, precision_bits, error_bits, +1)


def minimum(ev, a, b, *, bound: float = 1.0, precision_bits: float = 8, error_bits: float = 12):
    """min(a, b) slot by slot, as :func:`maximum` with the sign reversed."""
    return _extremum(ev, a, b, bound, precision_bits, error_bits, -1)


def slot_rotations(count: int) -> list[int]:
    """The rotation steps :func:`max_of_slots` and :func:`argmax_of_slots` use for ``count``
    slots: give them to ``ctx.keygen(rotations=...)``."""
    _check_count(count, None)
    steps = [1 << k for k in range(count.bit_length() - 1)]
    return steps + [-s for s in steps]


def max_of_slots(ev, x, count: int, *, bound: float = 1.0, precision_bits: float = 8, error_bits: float = 12):
    """The largest of slots 0 .. count-1 (count a power of two), in slot 0: a tournament of
    log2(count) :func:`maximum` steps against the ciphertext rotated by count/2, count/4, .., 1.
    Slot j ends with the largest of slots j .. j+count-1 (cyclically), so only slot 0 is the
    answer unless the other slots repeat the vector. Error: as :func:`maximum`, at most
    log2(count) times."""
    _check_ciphertexts("ckks.max_of_slots", x)
    _check_count(count, ev._context.slots)
    step = count // 2
    while step >= 1:
        x = maximum(ev, x, ev.rotate(x, step), bound=bound, precision_bits=precision_bits, error_bits=error_bits)
        step //= 2
    return x


def argmax_of_slots(ev, x, count: int, *, bound: float = 1.0, precision_bits: float = 8, error_bits: float = 12,
                    return_max: bool = False):
    """A one-hot vector over slots 0 .. count-1 marking the largest (1 there, 0 elsewhere,
    within 2^-error_bits), other slots 0. With r = 2 bound 2^-precision_bits (the comparison's
    resolution), slots within (3 + log2(count)/2) r of the largest may read 1 or in between
    too: ties are not broken. The tournament's result never exceeds the largest slot (each
    :func:`maximum` lies between its two inputs), so the largest always reads 1.

    ``return_max=True`` returns ``(one_hot, largest)``, ``largest`` being what
    :func:`max_of_slots` gives: the tournament runs once for both."""
    largest = max_of_slots(ev, x, count, bound=bound, precision_bits=precision_bits, error_bits=error_bits)
    m = _masked(ev, largest, 1, refresh_bound=max(1, math.ceil(bound)))  # slot 0 alone
    step = 1
    while step < count:  # slot 0 copied onto slots 0 .. count-1
        m = ev.add(m, ev.rotate(m, -step))
        step *= 2
    window = np.zeros(ev._context.slots)
    window[:count] = 2 * 2 * bound * 2.0 ** -precision_bits  # x + 2 resolutions: the largest lands above m
    shifted = ev.add_plain(x, ev._context.encode(window, level=x.level, scale=x.scale))
    hot = compare(ev, shifted, m, bound=bound + 4 * bound * 2.0 ** -precision_bits, precision_bits=precision_bits,
                  error_bits=error_bits)
    hot = _masked(ev, hot, count)
    return (hot, largest) if return_max else hot


def _with_a_level(ev, x, refresh_bound: int = 1):
    """x, bootstrapped first when it is at level 0 (its slots within ``refresh_bound``): what
    every one-level step below needs."""
    return ev.bootstrap(x, bound=refresh_bound) if x.level < 1 else x


def _masked(ev, x, count: int, refresh_bound: int = 1):
    """x with every slot from ``count`` on set to 0: one level (a plaintext mask at the
    level's landing scale); bootstrapped first at level 0."""
    x = _with_a_level(ev, x, refresh_bound)
    keep = np.zeros(ev._context.slots)
    keep[:count] = 1.0
    mask = ev._context.encode(keep, level=x.level, scale=ev._context.landing_scale(x.level, x.scale))
    return ev.rescale(ev.multiply_plain(x, mask))


def _check_count(count, slots: int | None) -> None:
    if not isinstance(count, int) or isinstance(count, bool) or count < 2 or count & (count - 1):
        raise ValueError(f"[ckks.max_of_slots] count must be a power of two >= 2, got {count!r}")
    if slots is not None and count > slots:
        raise ValueError(f"[ckks.max_of_slots] count {count} exceeds the context's {slots} slots")


def _extremum(ev, a, b, bound, precision_bits, error_bits, direction: int):
    _check_ciphertexts("ckks.max", a, b)
    bound = _check_bound(bound)
    a, b = _same_level(ev, a, b, bound)
    diff = ev.sub(a, b)
    s = sign(ev, diff, bound=2 * bound, precision_bits=precision_bits, error_bits=error_bits)
    wide = max(1, math.ceil(2 * bound))  # |a - b| and |a + b| stay within 2 bound
    half_diff = _scaled(ev, diff, 0.5 * direction, refresh_bound=wide)
    # The product below needs a level on both sides.
    half_diff, s = _with_a_level(ev, half_diff, max(1, math.ceil(bound))), _with_a_level(ev, s)
    half_diff, s = _same_level(ev, half_diff, s, bound)
    spread = ev.relinearize_rescale(ev.multiply(half_diff, s))
    mean = _scaled(ev, ev.add(a, b), 0.5, refresh_bound=wide)
    mean, spread = _same_level(ev, mean, spread, bound)
    return ev.add(mean, spread)


def _scaled(ev, x, value: float, refresh_bound: int = 1):
    """x times a real constant, one level (the constant encoded at the level's last prime);
    bootstrapped first at level 0 (its slots within ``refresh_bound``)."""
    x = _with_a_level(ev, x, refresh_bound)
    landing = ev._context.landing_scale(x.level, x.scale)  # lands on level - 1's canonical scale
    return ev.rescale(ev.multiply_scalar(x, value, landing))


def _check_ciphertexts(op: str, *values) -> None:
    for v in values:
        if not isinstance(v, Ciphertext):
            raise TypeError(f"[{op}] expected a ckks.Ciphertext, got {type(v).__name__} (encrypt it first)")


def _same_level(ev, a, b, bound: float = 1.0):
    """a and b at one level and scale: as they are when they agree, else both at the
    canonical scale of the highest level they can reach. Correcting a scale spends a level,
    so an operand already at the lower level off its canonical scale takes both one lower,
    and at level 0 it is bootstrapped first (its slots within ``bound``). The public entry
    points have checked that the operands are ciphertexts."""
    if a.level == b.level and a.scale == b.scale:
        return a, b
    ctx = ev._context
    level = min(a.level, b.level)
    if any(v.level == level and v.scale != ctx.scale_at(level) for v in (a, b)):
        level -= 1
    if level < 0:
        refresh = max(1, math.ceil(bound))
        a, b = (_with_a_level(ev, v, refresh) for v in (a, b))
        return _same_level(ev, a, b, bound)
    return ev.adjust_to(a, level), ev.adjust_to(b, level)


def _check_bound(bound) -> float:
    if not isinstance(bound, (int, float)) or isinstance(bound, bool) or not 0 < bound < 2.0 ** 40:
        raise ValueError(f"[ckks.sign] bound must be a positive number (the inputs' largest magnitude); got {bound!r}")
    return float(bound)


def _check_depth(ev, x, polys: list[Polynomial], extra: int, op: str) -> None:
    needed, step = sum(p.depth for p in polys) + extra, max(p.depth for p in polys)
    if ev._context.can_bootstrap and ev._context.max_level < step:
        raise ValueError(f"[{op}] each step needs {step} levels; this context bootstraps to "
                         f"level {ev._context.max_level} only")
    if x.level >= needed or ev._context.can_bootstrap:
        return
    raise ValueError(f"[{op}] this comparison needs {needed} levels ({len(polys)} polynomials of degree 7); the "
                     f"ciphertext has {x.level} and the context cannot bootstrap: use fewer precision_bits or "
                     f"error_bits, a deeper context, or a bootstrapping one")
