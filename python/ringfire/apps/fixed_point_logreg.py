"""Seed 003's logistic-regression training as it was designed: fixed-point integers, and every
non-linear step a functional bootstrap.

>>> from ringfire.apps import fixed_point_logreg as fxlr, logreg
>>> X, y = logreg.prepare(features, labels)                          # doctest: +SKIP
>>> Xq, Y = fxlr.quantize(X, y)                                      # 7 fractional bits
>>> trainer = fxlr.FixedPointTrainer(logreg.context("N16_BOOT"), Xq.shape[1], step_shift=7,
...                                  residual_shift=3, weight_bits=10)  # doctest: +SKIP
>>> sk, keys = trainer.keygen()                                      # doctest: +SKIP
>>> W = trainer.fit(Xq, Y, iterations=4)                             # doctest: +SKIP
>>> trainer.decrypt_weights(W, sk)  # == fxlr.train_plain(Xq, Y, 4, step_shift=7, residual_shift=3)  # doctest: +SKIP

Seed 003 (§V-A) trains with a BGV fixed-point packed encoding: 7 fractional bits, the
sigmoid by comparisons, and rescaling by functional bootstraps (33 sign/compare and 18
rescaling bootstraps per iteration over 16 ciphertexts of 64 slots). Here the integers
travel in CKKS slots and every functional bootstrap is a CKKS lookup (Alexandru, Kim and
Polyakov; :mod:`ringfire.ckks.lookup`): ``ev.floor_divide`` rescales, ``ev.sign_integer``
compares, with flat digit tables (their errors divided, not carried), so every value stays
exact. :mod:`ringfire.apps.bgv_fixed_point_logreg` runs the same design on BGV slots, within t's
16 bits and the bootstraps' read error.

**The arithmetic** (:func:`train_plain` is it in NumPy's integers, and the reference the
encrypted weights are checked against, bit for bit). With f fractional bits, features
X (at most 2^f in magnitude), labels Y in {0, 2^f} and weights W:

* ``z = round(X W / 2^f)`` -- the inner products, rescaled (one functional bootstrap per
  digit of f bits dropped);
* ``S = clip(2^(f+1) + z, 0, 2^(f+2))`` -- 4 sigmoid(z) with sigmoid(t) ~ clip(1/2 + t/4, 0, 1),
  by two comparisons: ``sign(z + 2^(f+1))`` and ``sign(z - 2^(f+1))``;
* ``R = round((4 Y - S) / 4)`` -- the residual y - sigmoid, rescaled to f fractional bits
  (seed 003's rescale of "res"; ``residual_shift`` = 2 of them dropped);
* ``W += round(X^T R / 2^(f + s))`` -- gradient ascent with learning rate ``n / 2^s`` (the
  weights' rescale).

**Packing** as :mod:`ringfire.apps.logreg`: a row of ``features`` slots per sample, as many
rows per ciphertext as fit, the weights repeated in every row. The inner product leaves
``z`` in each row's first slot (the other slots hold sums of the same size, which the
lookups read harmlessly); the comparisons' results are masked to those slots, and the
residual is copied over its row for the gradient's sum over the rows.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..ckks import lookup
from ._iterations import run_iterations
from .logreg import _row_mask, _rotsum

FRAC_BITS = 7      # seed 003: "7 bits of fractional precision"
MAX_BITS = 24      # the widest integers ev.floor_divide and ev.sign_integer read


def toy_context(**options):
    """N = 2^12 with N16_BOOT's nine user levels, for tests and examples: NOT SECURE (it warns).
    ``logreg.context("N16_BOOT")`` is the 128-bit one. ``options`` go to ``Context.preset``
    (``insecure_deterministic_seed=`` for tests)."""
    from .. import ckks
    return ckks.Context.preset("N12_BOOT_INSECURE", coeff_bits=[60] + [40] * 9 + [45] * 3 + [60] * 11 + [56] * 3,
                               dnum=10, **options)


def quantize(X, y, frac_bits: int = FRAC_BITS) -> tuple[np.ndarray, np.ndarray]:
    """Features in [-1, 1] (``logreg.prepare``'s) as integers ``round(X 2^f)``, and labels
    (+1 / -1, or 1 / 0) as ``2^f`` / 0."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y)
    if X.ndim != 2 or y.ndim != 1 or len(X) != len(y) or len(X) == 0:
        raise ValueError(f"[fixed_point_logreg] expected X of shape (n, d) and n labels, got {X.shape} and {y.shape}")
    if not (np.isin(y, (-1, 1)).all() or np.isin(y, (0, 1)).all()):
        raise ValueError(f"[fixed_point_logreg] labels must be +1 / -1 or 1 / 0 (logreg.prepare's), got "
                         f"{np.unique(y)[:5]}")
    if not np.all(np.isfinite(X)) or np.abs(X).max() > 1:
        raise ValueError("[fixed_point_logreg] features must be finite and lie in [-1, 1]: use logreg.prepare")
    _check_frac_bits(frac_bits)
    return np.rint(X * 2**frac_bits).astype(np.int64), np.where(y > 0, 2**frac_bits, 0).astype(np.int64)


def sigmoid4(z: np.ndarray, frac_bits: int = FRAC_BITS) -> np.ndarray:
    """4 sigmoid(z) with seed 003's comparison sigmoid, clip(1/2 + t/4, 0, 1), in f fractional bits."""
    return np.clip(2 ** (frac_bits + 1) + z, 0, 2 ** (frac_bits + 2))


def round_shift(v: np.ndarray, shift: int) -> np.ndarray:
    """round(v / 2^shift), halves up: floor((v + 2^(shift-1)) / 2^shift), on integers."""
    return (v + (1 << (shift - 1))) >> shift


def train_plain(Xq, Y, iterations: int, frac_bits: int = FRAC_BITS, step_shift: int = 9,
                residual_shift: int = 2, history: list | None = None) -> np.ndarray:
    """The fixed-point training in NumPy's integers (module doc): the weights after
    ``iterations`` steps, as integers with ``frac_bits`` fractional bits. ``history``
    receives each step's weights."""
    _check_count(iterations, "iterations", 0)
    Xq, Y = np.asarray(Xq, dtype=np.int64), np.asarray(Y, dtype=np.int64)
    W = np.zeros(Xq.shape[1], dtype=np.int64)
    for _ in range(iterations):
        z = round_shift(Xq @ W, frac_bits)
        residual = round_shift(4 * Y - sigmoid4(z, frac_bits), residual_shift)
        W = W + round_shift(Xq.T @ residual, frac_bits + 2 - residual_shift + step_shift)
        if history is not None:
            history.append(W.copy())
    return W


def bits_for(bound: float) -> int:
    """The width of signed integers that hold every value of magnitude <= ``bound``."""
    return max(2, math.ceil(math.log2(bound + 1)) + 1)


@dataclass
class Widths:
    """The widths (signed bits) the lookups read, from the data and the weights' range: the
    client computes them once, from what it encrypts."""
    inner: int      # X W + half, before its rescale (every slot, garbage ones included)
    compare: int    # z -/+ 2^(f+1)
    residual: int   # 4 Y - S + half, before its rescale
    gradient: int   # X^T R + half, before its rescale

    def check(self) -> None:
        for name, width in vars(self).items():
            if width > MAX_BITS:
                raise ValueError(f"[fixed_point_logreg] the {name} step reads {width}-bit integers; lookups read at "
                                 f"most {MAX_BITS}: lower weight_bits (the inner products), or raise residual_shift "
                                 f"(the gradient: it sums every sample's residual)")


@dataclass
class IterationCounts:
    """One iteration's functional bootstraps, as seed 003 counts them and as circuits run."""
    rescales: int = 0       # fixed-point rescales (seed 003: 18 per iteration)
    compares: int = 0       # sign / compare (seed 003: 33)
    lookups: int = 0        # CKKS functional-bootstrap circuits they took (a pair counts once)
    bootstraps: int = 0     # ordinary bootstraps (the weights' refresh)

    @property
    def functional_bootstraps(self) -> int:
        return self.rescales + self.compares


@dataclass
class FitReport:
    """What :meth:`FixedPointTrainer.fit` measured (seconds per iteration), and what it ran
    (the widths and counts, from the data and the digit sizes)."""
    seconds: list = field(default_factory=list)
    counts: IterationCounts | None = None
    encrypt_seconds: float = 0.0
    widths: Widths | None = None


@dataclass
class EncryptedData:
    """The training set as ciphertexts (the data owner's step) and the widths its lookups read."""
    features: list          # rows of X, ``rows`` samples per ciphertext
    labels: list            # 4 Y in each row's first slot
    samples: int
    widths: Widths


class FixedPointTrainer:
    """Seed 003's fixed-point training on a bootstrappable CKKS context (module doc).

    Args:
        ctx: ``logreg.context("N16_BOOT")`` (or :func:`toy_context` for tests).
        features: the padded feature count (a power of two, ``logreg.prepare``'s).
        frac_bits: fractional bits (seed 003: 7).
        step_shift: s, the learning rate being n / 2^s.
        residual_shift: the bits the residual's rescale drops (2: to f fractional bits; 3 where
            the gradient's sum would need 25 bits, as the whole breast-cancer set does).
        weight_bits: the weights stay in (-2^(weight_bits-1), 2^(weight_bits-1)) as integers:
            the lookups are sized for it, and the weights' bootstrap reads that range.
        digit_bits: the lookups' digit (tables of 2^digit_bits entries).
    """

    def __init__(self, ctx, features: int, *, frac_bits: int = FRAC_BITS, step_shift: int = 9,
                 residual_shift: int = 2, weight_bits: int = 12, digit_bits: int = 4):
        if features < 2 or features & (features - 1) or features > ctx.slots:
            raise ValueError(f"[fixed_point_logreg] features must be a power of two in [2, {ctx.slots}], got "
                             f"{features}")
        _check_frac_bits(frac_bits)
        # The residual keeps at least its sign (residual_shift <= f + 2) and the step drops a bit at least.
        _check_range(residual_shift, "residual_shift", 1, frac_bits + 2)
        _check_range(step_shift, "step_shift", max(0, residual_shift - frac_bits - 1), 40)
        _check_range(weight_bits, "weight_bits", 2, MAX_BITS)
        _check_range(digit_bits, "digit_bits", 1, 4)
        if not ctx.can_bootstrap:
            raise ValueError("[fixed_point_logreg] the lookups need a bootstrappable context (logreg.context())")
        self.ctx, self.f = ctx, features
        self.frac_bits, self.step_shift, self.residual_shift = frac_bits, step_shift, residual_shift
        self.weight_bits, self.digit_bits = weight_bits, digit_bits
        self.rows = ctx.slots // features
        self.row_steps = [1 << i for i in range(int(math.log2(features)))]
        self.sample_steps = [features << i for i in range(int(math.log2(self.rows)))]
        self.keys = None

    def rotations(self) -> list[int]:
        return self.row_steps + [-r for r in self.row_steps] + self.sample_steps

    def keygen(self):
        """Secret key and keys: the rotations an iteration uses and the bootstrap's."""
        sk, self.keys = self.ctx.keygen(rotations=self.rotations(), conjugate=True, bootstrap=True)
        return sk, self.keys

    def widths(self, Xq) -> Widths:
        """What the lookups read, from the features alone: the weights' range bounds the inner
        products in every slot, and the residual's range (``4 Y - S`` at most 2^(f+2) in magnitude) the gradient."""
        shift = self.residual_shift
        f, slots = self.frac_bits, self.ctx.slots
        magnitudes = np.abs(np.asarray(Xq, dtype=np.int64))
        w_max = 2 ** (self.weight_bits - 1) - 1
        inner = 0
        for start in range(0, len(magnitudes), self.rows):
            flat = np.zeros(slots, dtype=np.int64)
            part = magnitudes[start:start + self.rows].ravel()
            flat[:len(part)] = part
            # Slot k sums slots k .. k + features - 1 (cyclically): its row's sum, or a window across two rows.
            windows = np.convolve(np.concatenate([flat, flat[:self.f - 1]]), np.ones(self.f, dtype=np.int64), "valid")
            inner = max(inner, int(windows.max()))
        z_max = (inner * w_max + 2 ** (f - 1)) >> f
        residual = 2 ** (f + 2) + 2 ** (shift - 1)
        gradient = int(magnitudes.sum(axis=0).max()) * (residual >> shift)
        return Widths(inner=bits_for(inner * w_max + 2 ** (f - 1)), compare=bits_for(z_max + 2 ** (f + 1)),
                      residual=bits_for(residual), gradient=bits_for(gradient + 2 ** (self._update_shift - 1)))

    @property
    def _update_shift(self) -> int:
        return self.frac_bits + 2 - self.residual_shift + self.step_shift

    def counts(self, data: EncryptedData) -> IterationCounts:
        """One iteration's functional bootstraps and the lookups they take."""
        ciphertexts, w, d = len(data.features), data.widths, self.digit_bits
        return IterationCounts(
            rescales=2 * ciphertexts + 1, compares=2 * ciphertexts,
            lookups=ciphertexts * (lookup.floor_lookups(self.frac_bits, 4) + 2 * lookup.sign_lookups(w.compare, d)
                                   + lookup.floor_lookups(self.residual_shift, 4))
            + lookup.floor_lookups(self._update_shift, 4),
            bootstraps=1)

    def encrypt_data(self, Xq, Y, keys=None) -> EncryptedData:
        """The training set as ciphertexts: rows of X, and 4 Y in each row's first slot."""
        Xq, Y = np.asarray(Xq), np.asarray(Y)
        if Xq.ndim != 2 or Xq.shape[1] != self.f or len(Xq) != len(Y):
            raise ValueError(f"[fixed_point_logreg] expected X of shape (n, {self.f}) and n labels, got {Xq.shape} "
                             f"and {Y.shape}")
        if not (np.issubdtype(Xq.dtype, np.integer) and np.issubdtype(Y.dtype, np.integer)):
            raise TypeError("[fixed_point_logreg] X and Y must be integers (fixed_point_logreg.quantize)")
        if np.abs(Xq).max() > 2**self.frac_bits or not np.isin(Y, (0, 2**self.frac_bits)).all():
            raise ValueError(f"[fixed_point_logreg] features must lie in [-2^{self.frac_bits}, 2^{self.frac_bits}] and "
                             f"labels be 0 or 2^{self.frac_bits} (fixed_point_logreg.quantize)")
        keys = keys or self.keys
        if keys is None:
            raise ValueError("[fixed_point_logreg] call trainer.keygen() first, or pass keys=")
        widths = self.widths(Xq)
        widths.check()
        features, labels = [], []
        for start in range(0, len(Xq), self.rows):
            block = np.zeros((self.rows, self.f))
            part = Xq[start:start + self.rows]
            block[:len(part)] = part
            first = np.zeros((self.rows, self.f))
            first[:len(part), 0] = 4 * Y[start:start + self.rows]
            features.append(self.ctx.encrypt(block.ravel(), keys))
            labels.append(self.ctx.encrypt(first.ravel(), keys))
        return EncryptedData(features, labels, len(Xq), widths)

    def iteration(self, data: EncryptedData, W):
        """One step on ciphertexts: ``W`` (the weights in every row, at the top level) to the next ``W``."""
        ev = self.ctx.evaluator(self.keys)
        f, d, widths = self.frac_bits, self.digit_bits, data.widths
        gradient = None
        for x, labels in zip(data.features, data.labels):
            inner = _rotsum(x * W, self.row_steps)
            z = ev.floor_divide(ev.add_scalar(inner, 2.0 ** (f - 1)), f, bits=widths.inner, digit_bits=4)
            above_low = ev.sign_integer(ev.add_scalar(z, 2.0 ** (f + 1)), bits=widths.compare, digit_bits=d)
            above_high = ev.sign_integer(ev.add_scalar(z, -2.0 ** (f + 1)), bits=widths.compare, digit_bits=d)
            # S = 2^(f+1) (1 + above_high) + (above_low - above_high) (z + 2^(f+1)) / 2: clip(2^(f+1) + z, 0, 2^(f+2)),
            # the signs in {-1, 0, 1} (at a threshold both terms agree); kept in each row's first slot.
            slope = _masked(ev, above_low - above_high, self.f)
            flat = _masked(ev, ev.add_scalar(above_high, 1.0), self.f)
            linear = ev.divide_by_integer(_product(ev, slope, ev.add_scalar(z, 2.0 ** (f + 1))), 2)
            residual = ev.sub(_read_at(ev, labels - ev.multiply_integer(flat, 2 ** (f + 1)), linear), linear)
            residual = ev.floor_divide(ev.add_scalar(residual, 2.0 ** (self.residual_shift - 1)), self.residual_shift,
                                       bits=widths.residual, digit_bits=4)
            residual = _rotsum(residual, [-s for s in self.row_steps])
            share = _rotsum(_product(ev, x, residual), self.sample_steps)
            gradient = share if gradient is None else gradient + share
        shift = self._update_shift
        step = ev.floor_divide(ev.add_scalar(gradient, 2.0 ** (shift - 1)), shift, bits=widths.gradient, digit_bits=4)
        W = ev.add(_read_at(ev, W, step), step)
        # The lookups put noise of their estimated error into the imaginary parts (so that decryption can
        # mask the real ones); products carry it on. The real part, exactly (W + conj W) / 2, leaves the
        # bootstrap the weights alone.
        W = ev.divide_by_integer(ev.add(W, ev.conjugate(W)), 2)
        return _refreshed(ev, W, 2 ** (self.weight_bits - 1))

    def fit(self, Xq, Y, iterations: int, keys=None, progress: bool = False, report: FitReport | None = None):
        """Encrypts (Xq, Y), trains ``iterations`` steps on ciphertexts, returns the encrypted
        weights (decrypt with :meth:`decrypt_weights`). The data owner holds (Xq, Y), so it runs
        the same steps in NumPy first (:func:`train_plain`, milliseconds): a run whose weights
        would leave ``weight_bits`` at any step -- where the lookups and the bootstrap would read
        them wrong -- is refused with the step and the value before anything is encrypted."""
        _check_count(iterations, "iterations", 1)
        history = []
        train_plain(Xq, Y, iterations, self.frac_bits, self.step_shift, self.residual_shift, history)
        limit = 2 ** (self.weight_bits - 1)
        for step, weights in enumerate(history):
            if np.abs(weights).max() >= limit:
                raise ValueError(f"[fixed_point_logreg] the weights reach {int(np.abs(weights).max())} at step {step + 1}, "
                                 f"outside the range (-{limit}, {limit}) the lookups are sized for (weight_bits="
                                 f"{self.weight_bits}): raise weight_bits, raise step_shift, or train fewer steps")
        keys = keys or self.keys
        if keys is None:
            raise ValueError("[fixed_point_logreg] call trainer.keygen() first, or pass keys=")
        self.keys = keys
        report = report if report is not None else FitReport()
        start = time.perf_counter()
        data = self.encrypt_data(Xq, Y, keys)
        W = self.ctx.encrypt(np.zeros(self.ctx.slots), keys)
        report.encrypt_seconds, report.widths, report.counts = time.perf_counter() - start, data.widths, self.counts(data)
        return run_iterations(lambda weights: self.iteration(data, weights), W, iterations, label="fixed-point logreg",
                              progress=progress, seconds=report.seconds)

    def decrypt_weights(self, W, sk) -> np.ndarray:
        """The weights as integers (``frac_bits`` fractional bits). Raises where they left the
        range the lookups were sized for (the run's later steps are then wrong)."""
        values = self.ctx.decrypt(W, sk).real[:self.f]
        weights = np.rint(values).astype(np.int64)
        limit = 2 ** (self.weight_bits - 1)
        if np.abs(weights).max() >= limit:
            raise ValueError(f"[fixed_point_logreg] a weight reached {int(np.abs(weights).max())}, outside the range "
                             f"(-{limit}, {limit}) the lookups read (weight_bits={self.weight_bits}): raise weight_bits")
        return weights


def _refreshed(ev, W, bound: int):
    """The weights (integers below ``bound``) bootstrapped twice (Meta-BTS), at the top level
    less two. One bootstrap's error (2^-18 at 2^10 on the toy ring) reaches the inner products
    times the features' sum, 2^10 and more, and their rounding then the gradient times the
    samples: the lookups carry errors, they do not round them away. Meta-BTS takes it to 2^-27."""
    # The floors leave W read at 2^24 or so times the canonical scale; two levels land it there.
    W = ev.divide_by_integer(ev.adjust_to(W, max(0, W.level - 2)), bound)   # |W / bound| <= 1
    W = ev.multiply_integer(ev.bootstrap(W, iterations=2), bound)         # at 2^20 times the input's scale
    return ev.adjust_to(W, W.level - 2)


def _masked(ev, ct, features: int):
    """``ct`` kept in each row's first slot (one level)."""
    return ct * _row_mask(ev.context, features, ct)


def _product(ev, a, b):
    """a b, relinearized and rescaled, at the lower operand's level less one: the higher one
    comes down to it, the other keeps its scale (an integer times the canonical one after a
    floor division; the operator would spend a level making it canonical first)."""
    level = min(a.level, b.level)
    a, b = (ev.adjust_to(c, level) if c.level > level else c for c in (a, b))
    return ev.relinearize_rescale(ev.multiply(a, b))


def _read_at(ev, x, other):
    """``x`` (canonical, at ``other``'s level or above) on ``other``'s level and scale, for an
    exact sum (:func:`ringfire.ckks.lookup.read_at`); every operand here has an integer ratio."""
    aligned, exact = lookup.read_at(ev, x, other)
    if not exact:
        raise AssertionError(f"[fixed_point_logreg] scales {other.scale} / {x.scale} are not an integer ratio")
    return aligned


def _check_range(value, name: str, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"[fixed_point_logreg] {name} must be an integer in [{low}, {high}], got {value!r}")


def _check_count(value, name: str, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"[fixed_point_logreg] {name} must be an integer >= {low}, got {value!r}")


def _check_frac_bits(frac_bits) -> None:
    _check_range(frac_bits, "frac_bits", 1, 12)
