"""Seed 003's logistic-regression training on BGV slots: fixed-point integers mod t, and every
non-linear step a functional bootstrap of the slots.

>>> from ringfire.apps import bgv_fixed_point_logreg as bgvlr, fixed_point_logreg as fxlr, logreg
>>> X, y = logreg.prepare(features, labels)                          # doctest: +SKIP
>>> Xq, Y = fxlr.quantize(X, y)                                      # 7 fractional bits
>>> trainer = bgvlr.BgvFixedPointTrainer(bgvlr.context(), len(Xq), Xq.shape[1])  # doctest: +SKIP
>>> sk, fsk = trainer.keygen()                                       # doctest: +SKIP
>>> W = trainer.fit(Xq, Y, iterations=2)                             # doctest: +SKIP
>>> trainer.decrypt_weights(W, sk)    # ~ bgvlr.train_plain(Xq, Y, 2, **trainer.arithmetic)  # doctest: +SKIP

Seed 003 (§V-A) trains with a BGV fixed-point packed encoding (7 fractional bits) and counts
51 functional bootstraps per iteration: sigmoid by comparisons, a sign, and rescales.
Here the integers live in the slots of a BGV ciphertext under t = 65537 (N = 2^15: 16384
slots in the row the bootstrap reads), and each non-linear step is one functional bootstrap
of all of them (:class:`ringfire.switching.BgvSlotBootstrap` read over the whole of Z_t:
``rescale`` and ``lut_wide``), whatever the number of samples in the ciphertext.

**The arithmetic** (:func:`train_plain` is it in NumPy's integers). With f = 7 fractional
bits, features X (abs(X) <= 2^f), labels Y in {0, 2^f} and weights W (abs(W) < 2^8, so that each
product fits the 16 bits of t):

* ``z = sum_j round(X_j W_j / 2^f)`` -- each product rescaled (one bootstrap for all), then
  summed over a row's features (rotations);
* ``S = round(2^f sigmoid(z / 2^f))`` -- the sigmoid itself as a table (one bootstrap; seed 003
  approximates it by 32 comparisons: ``sigmoid="clipped"`` is that approximation's table);
* ``R = Y - S`` in each row's first slot (z is masked to those slots before the sigmoid, whose
  table less 2^(f-1) is odd: 0 elsewhere), copied over its row;
* ``W += round(sum_i round(X_i R_i / 2^k) / 2^s)`` -- the gradient's products rescaled by 2^k
  (one bootstrap) so that their sum over every sample fits t, then the step (one more):
  gradient ascent with learning rate n 2^(f - k - s) on the mean gradient.

Four functional bootstraps an iteration for a ciphertext of samples (three more for each
further one). **Precision**: a bootstrap reads each value with an error of a few units
(:meth:`BgvSlotBootstrap.read_error`, about 8 at N = 2^15), which moves a rounding by one
where the value lies that close to a half, and the sigmoid by up to about e / 4: the encrypted
weights follow :func:`train_plain`'s within a few units, not bit for bit (the tests bound the
difference; BENCHMARKS.md gives it for the whole data set).

**Packing**: ``features`` slots a sample (a power of two; the bias column included), as many
rows as fill the bootstrap's 16384 slots (512 at N = 2^15); the weights repeated in every row;
the labels in each row's first slot.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..switching.bgv_slot_bootstrap import rounded_shift
from ._iterations import run_iterations

FRAC_BITS = 7          # seed 003: "7 bits of fractional precision"
WEIGHT_LIMIT = 1 << 8  # |W| below it: a product of a feature (2^7) and a weight fits 2^15
MARGIN = 64            # the largest value read stays this far inside +-(t - 1)/2 (8 read errors)


def context(degree: int = 15, **options):
    """BGV with t = 65537 (it batches up to N = 2^15) and the chain the slot bootstrap needs: a
    60-bit q_0 and 19 levels of 36 bits (the table's 17 and two for the products between
    bootstraps); 128-bit at N = 2^15. Smaller ``degree`` is NOT SECURE (pass
    ``insecure_no_security_check=True``; tests use 11)."""
    from .. import bgv
    return bgv.Context(2 ** degree, plain_modulus=65537, coeff_bits=[60] + [36] * 19 + [60], **options)


def rounded(v, shift: int) -> np.ndarray:
    """round(v / 2^shift), halves away from 0: the rescale's own table function
    (:func:`ringfire.switching.bgv_slot_bootstrap.rounded_shift`) on integers."""
    return rounded_shift(shift)(np.asarray(v, dtype=np.int64))


def sigmoid_table(z, sigmoid: str = "logistic") -> np.ndarray:
    """2^f sigmoid(z / 2^f) on integers (f = 7): ``"logistic"``, 1 / (1 + e^-t) rounded, or
    ``"clipped"``, seed 003's clip(1/2 + t/4, 0, 1) (what its 32 comparisons compute), with
    z / 4 rounded as :func:`rounded` does."""
    z = np.asarray(z, dtype=np.int64)
    half = 2 ** (FRAC_BITS - 1)
    if sigmoid == "clipped":
        return half + np.clip(rounded(z, 2), -half, half)
    if sigmoid == "logistic":
        return np.rint(2.0 ** FRAC_BITS / (1.0 + np.exp(-z / 2.0 ** FRAC_BITS))).astype(np.int64)
    raise ValueError(f"[bgv_fixed_point_logreg] sigmoid must be 'logistic' or 'clipped', got {sigmoid!r}")


def _centred_logistic(z) -> np.ndarray:
    return sigmoid_table(z, "logistic") - 2 ** (FRAC_BITS - 1)


def _centred_clipped(z) -> np.ndarray:
    return sigmoid_table(z, "clipped") - 2 ** (FRAC_BITS - 1)


# The sigmoids less 2^(f-1): odd, so 0 at 0 (the masked slots) and their tables keep every point.
_CENTRED = {"logistic": _centred_logistic, "clipped": _centred_clipped}


def shifts_for(samples: int) -> dict:
    """The gradient's rescale k = floor(log2 n), at least 7 (the sum of n products of at most
    2^14, rescaled, stays below 2^15), and the step's s = 7: a learning rate n 2^(f - k - s) on
    the mean gradient, in [1, 2) from 128 samples on. Shifts of 7 and more keep a rescale
    within one of the exact value but for 10^-15 of the slots at N = 2^15 (smaller ones warn)."""
    return {"gradient_shift": max(FRAC_BITS, int(math.log2(max(samples, 1)))), "step_shift": FRAC_BITS}


def train_plain(Xq, Y, iterations: int, *, gradient_shift: int, step_shift: int, sigmoid: str = "logistic",
                history: list | None = None) -> np.ndarray:
    """The training in NumPy's integers (module doc), exact roundings: the weights after
    ``iterations`` steps (f = 7 fractional bits). Raises where a value the bootstraps read
    would come within :data:`MARGIN` of t's half, or a weight would reach 2^8, naming the step;
    ``history`` receives each step's weights."""
    Xq, Y = np.asarray(Xq, dtype=np.int64), np.asarray(Y, dtype=np.int64)
    sigmoid_table(0, sigmoid)                                   # a wrong name raises here
    W = np.zeros(Xq.shape[1], dtype=np.int64)
    for step in range(1, iterations + 1):
        products = _checked(Xq * W, "X W", step)
        z = _checked(rounded(products, FRAC_BITS).sum(axis=1), "z", step)
        residual = Y - sigmoid_table(z, sigmoid)
        gradient = _checked(Xq * residual[:, None], "X R", step)
        total = _checked(rounded(gradient, gradient_shift).sum(axis=0), "the gradient's sum", step)
        W = W + rounded(total, step_shift)
        if np.abs(W).max() >= WEIGHT_LIMIT:
            raise ValueError(f"[bgv_fixed_point_logreg] a weight reaches {int(np.abs(W).max())} at step {step}; the "
                             f"products read need |W| < {WEIGHT_LIMIT} (7 fractional bits: |w| < 2): raise step_shift "
                             f"or train fewer steps")
        if history is not None:
            history.append(W.copy())
    return W


def _checked(values, name: str, step: int) -> np.ndarray:
    limit = 32768 - MARGIN
    if np.abs(values).max() > limit:
        raise ValueError(f"[bgv_fixed_point_logreg] {name} reaches {int(np.abs(values).max())} at step {step}; a "
                         f"bootstrap reads at most {limit} in magnitude under t = 65537")
    return values


@dataclass
class FitReport:
    """What :meth:`BgvFixedPointTrainer.fit` measured: seconds per iteration, the encryption's,
    and the functional bootstraps an iteration ran."""
    seconds: list = field(default_factory=list)
    encrypt_seconds: float = 0.0
    bootstraps: int = 0


class BgvFixedPointTrainer:
    """Seed 003's fixed-point training on BGV slots (module doc).

    Args:
        ctx: :func:`context` (t = 65537, a 60-bit q_0, 19 levels of 36 bits).
        samples: the training set's size (sets the gradient's rescale: :func:`shifts_for`).
        features: slots a sample, a power of two (``logreg.prepare``'s padding, bias included).
        fhew: the FHEW context whose ring the bootstrap switches through (default ``STD128``).
        gradient_shift, step_shift: :func:`shifts_for`'s by default.
        sigmoid: ``"logistic"`` (default) or ``"clipped"``, seed 003's (:func:`sigmoid_table`);
            either is one table, one bootstrap.
    """

    def __init__(self, ctx, samples: int, features: int, *, fhew=None, gradient_shift: int | None = None,
                 step_shift: int | None = None, sigmoid: str = "logistic"):
        from .. import switching, tfhe
        half = ctx.poly_degree // 2
        if not isinstance(features, int) or features < 2 or features & (features - 1) or features > half:
            raise ValueError(f"[bgv_fixed_point_logreg] features must be a power of two in [2, {half}], got "
                             f"{features!r}")
        if not isinstance(samples, int) or samples < 1:
            raise ValueError(f"[bgv_fixed_point_logreg] samples must be a positive int, got {samples!r}")
        defaults = shifts_for(samples)
        shifts = {"gradient_shift": defaults["gradient_shift"] if gradient_shift is None else gradient_shift,
                  "step_shift": defaults["step_shift"] if step_shift is None else step_shift}
        for name, value in shifts.items():
            if not isinstance(value, int) or not 1 <= value <= 15:
                raise ValueError(f"[bgv_fixed_point_logreg] {name} must be an int in [1, 15], got {value!r}")
        sigmoid_table(0, sigmoid)
        # What train_plain takes to run the same steps: train_plain(Xq, Y, n, **trainer.arithmetic).
        self.arithmetic = {**shifts, "sigmoid": sigmoid}
        self.ctx, self.features, self.samples = ctx, features, samples
        self.fhew = fhew if fhew is not None else tfhe.Context("STD128")
        # The whole of row 0: the sum over the rows is then a cyclic one within it.
        self.boot = switching.BgvSlotBootstrap(ctx, self.fhew, count=half, bits=8, method="dense")
        self.rows = half // features
        self.row_steps = [1 << i for i in range(features.bit_length() - 1)]
        self.sample_steps = [features << i for i in range(self.rows.bit_length() - 1)]
        self._first = np.zeros(half, dtype=np.int64)        # each row's first slot
        self._first[::features] = 1
        self.keys = self.boot_keys = None

    @property
    def rotations(self) -> list[int]:
        return self.row_steps + [-s for s in self.row_steps] + self.sample_steps

    def keygen(self, fhew_secret_key=None):
        """The client's keys: BGV's (with the rotations an iteration takes) and the bootstrap's;
        returns the two secret keys (BGV's, FHEW's), keeps the public ones. ``fhew_secret_key``:
        the FHEW context's own, whose ring secret the bootstrap uses (default: new keys from
        ``fhew.keygen()``, which replace the context's)."""
        sk, self.keys = self.ctx.keygen(rotations=self.rotations)
        fsk = self.fhew.keygen() if fhew_secret_key is None else fhew_secret_key
        self.boot_keys = self.boot.keygen(sk, fsk)
        return sk, fsk

    def encrypt_data(self, Xq, Y) -> list:
        """(features, labels) ciphertext pairs: ``rows`` samples each; the labels less 2^(f-1) in
        each row's first slot (:meth:`iteration` subtracts the sigmoid less 2^(f-1))."""
        Xq, Y = np.asarray(Xq), np.asarray(Y)
        if Xq.ndim != 2 or Xq.shape[1] != self.features or len(Xq) != len(Y) or len(Xq) != self.samples:
            raise ValueError(f"[bgv_fixed_point_logreg] expected X of shape ({self.samples}, {self.features}) and as "
                             f"many labels, got {Xq.shape} and {Y.shape}")
        if not (np.issubdtype(Xq.dtype, np.integer) and np.issubdtype(Y.dtype, np.integer)):
            raise TypeError("[bgv_fixed_point_logreg] X and Y must be integers (fixed_point_logreg.quantize)")
        if np.abs(Xq).max() > 2 ** FRAC_BITS or not np.isin(Y, (0, 2 ** FRAC_BITS)).all():
            raise ValueError(f"[bgv_fixed_point_logreg] features must lie in [-2^{FRAC_BITS}, 2^{FRAC_BITS}] and labels "
                             f"be 0 or 2^{FRAC_BITS} (fixed_point_logreg.quantize)")
        self._check_keys()
        pairs = []
        for start in range(0, len(Xq), self.rows):
            block = np.zeros((self.rows, self.features), dtype=np.int64)
            part = Xq[start:start + self.rows]
            block[:len(part)] = part
            labels = np.zeros((self.rows, self.features), dtype=np.int64)
            labels[:len(part), 0] = Y[start:start + self.rows] - 2 ** (FRAC_BITS - 1)
            pairs.append((self.ctx.encrypt(block.ravel(), self.keys), self.ctx.encrypt(labels.ravel(), self.keys)))
        return pairs

    def bootstraps_per_iteration(self, ciphertexts: int) -> int:
        return 3 * ciphertexts + 1

    def iteration(self, data: list, W):
        """One step on ciphertexts: the weights ``W`` (in every row) to the next ones."""
        ev, boot, keys, f = self.ctx.evaluator(self.keys), self.boot, self.boot_keys, FRAC_BITS
        total = None
        for x, labels in data:
            z = _rotsum(ev, boot.rescale(x * W, f, keys), self.row_steps) * self._first   # each row's first slot
            # The sigmoid less 2^(f-1) (odd: 0 at the masked slots) against the labels less 2^(f-1):
            # the residual is 0 past each row's first slot with the mask on z, where the budget it
            # costs is the bootstrap's to spend, not the next product's.
            residual = labels - boot.lut_wide(z, _CENTRED[self.arithmetic["sigmoid"]], keys)
            residual = _rotsum(ev, residual, [-s for s in self.row_steps])       # over its row
            share = boot.rescale(x * residual, self.arithmetic["gradient_shift"], keys)
            share = _rotsum(ev, share, self.sample_steps)                         # over the rows: every row
            total = share if total is None else total + share
        return W + boot.rescale(total, self.arithmetic["step_shift"], keys)

    def fit(self, Xq, Y, iterations: int, *, progress: bool = False, report: FitReport | None = None):
        """Encrypts (Xq, Y), trains ``iterations`` steps on ciphertexts, returns the encrypted
        weights (:meth:`decrypt_weights`). The data owner runs :func:`train_plain` first
        (milliseconds): a run whose values would leave what the bootstraps read is refused,
        with the step and the value, before anything is encrypted."""
        if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
            raise ValueError(f"[bgv_fixed_point_logreg] iterations must be an int >= 1, got {iterations!r}")
        train_plain(Xq, Y, iterations, **self.arithmetic)
        report = report if report is not None else FitReport()
        start = time.perf_counter()
        data = self.encrypt_data(Xq, Y)
        W = self.ctx.encrypt(np.zeros(self.ctx.poly_degree // 2, dtype=np.int64), self.keys)
        report.encrypt_seconds = time.perf_counter() - start
        report.bootstraps = self.bootstraps_per_iteration(len(data))
        return run_iterations(lambda weights: self.iteration(data, weights), W, iterations, label="BGV fixed-point logreg",
                              progress=progress, seconds=report.seconds)

    def decrypt_weights(self, W, sk) -> np.ndarray:
        """The weights as integers (7 fractional bits), from row 0."""
        return self.ctx.decrypt(W, sk)[:self.features]

    def _check_keys(self) -> None:
        if self.keys is None or self.boot_keys is None:
            raise ValueError("[bgv_fixed_point_logreg] call trainer.keygen() first")


def _rotsum(ev, ct, steps):
    for s in steps:
        ct = ct + ev.rotate(ct, s)
    return ct
