"""Encrypted logistic-regression training (HELR: Han, Song, Cheon, Park, AAAI 2019), with bootstrapping.

>>> from ringfire.apps import logreg
>>> X, y = logreg.prepare(features, labels)                          # doctest: +SKIP
>>> trainer = logreg.EncryptedTrainer(rf.ckks.Context.preset("N16_BOOT"), X.shape[1])  # doctest: +SKIP
>>> w = trainer.fit(X, y, iterations=32)                             # doctest: +SKIP

The data owner encrypts the training set; the server runs Nesterov-accelerated
gradient descent on ciphertexts only, with a polynomial sigmoid; the weights
come back encrypted. As in HELR:

* **Packing.** ``z_i = y_i * [x_i, 1]`` with labels ``y_i`` in {-1, +1}, padded
  to ``f`` features (a power of two), is one row of ``f`` slots; a ciphertext
  holds ``slots / f`` rows, and the training set as many ciphertexts as it
  needs (zero rows add nothing to the gradient). The weights are one
  ciphertext with ``w`` repeated in every row.
* **One iteration** (6 levels): ``z_i . v`` by a product and log2(f)
  rotations; a mask keeps the sum in the row's first slot and log2(f)
  rotations copy it over the row; the sigmoid polynomial (degree 3: 2
  levels); the product with ``z_i`` and log2(rows) rotations summing over the
  samples; then Nesterov's step ``w+ = v + grad``, ``v+ = w+ + eta (w+ - w)``
  (one scalar product). The learning rate, ``1/n`` and the weight scale are
  folded into the polynomial's coefficients, so they cost no level.
* **Bootstrapping.** ``w`` and ``v`` are real, so both are refreshed by one
  bootstrap (``ev.bootstrap_pair``) whenever the next iteration would not fit
  in the levels left. Bootstrapping needs ``|x| <= 1``, so the ciphertexts
  hold ``w / weight_scale``.

Plaintext training with the same algorithm and the same polynomial
(:func:`train_plain`) is the reference the encrypted weights are checked
against, and ``sigmoid="exact"`` gives plaintext training with the true
sigmoid.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from .._progress import progress_bar
from ..memory_guard import guard
from ..parallel import IN_PROCESS

LEVELS_PER_ITERATION = 6


def context(size: str = "N16_BOOT", device: str = "cpu"):
    """A bootstrappable CKKS context for training: ``"N16_BOOT"`` (128-bit, 9 levels per bootstrap:
    one iteration each), or ``"toy"`` -- N = 2^12 with 6 user levels, NOT SECURE, for tests and
    examples (it warns). ``device="cuda"``: training runs on the GPU (encryption on the host)."""
    from .. import ckks

    if size == "N16_BOOT":
        return ckks.Context.preset("N16_BOOT", device=device)
    if size == "toy":
        return ckks.Context.preset("N12_BOOT_INSECURE", coeff_bits=[60] + [40] * 6 + [45] * 3 + [60] * 11 + [56] * 3,
                                   dnum=8, device=device)
    raise ValueError(f"[logreg] size must be 'N16_BOOT' or 'toy', got {size!r}")


def prepare(features, labels, features_padded: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Centres each feature, scales it into [-1, 1] by its largest magnitude, appends the bias column and pads.

    Returns ``(X, y)`` with X of shape (n, f), f a power of two (or
    ``features_padded``), and labels in {-1, +1} from any two-valued ``labels``.
    """
    x = np.asarray(features, dtype=np.float64)
    labels = np.asarray(labels)
    if x.ndim != 2 or len(x) != len(labels) or len(x) == 0:
        raise ValueError(f"[logreg.prepare] expected features of shape (n, d) and n labels, got {x.shape} and "
                         f"{labels.shape}")
    classes = np.unique(labels)
    if len(classes) != 2:
        raise ValueError(f"[logreg.prepare] logistic regression needs two classes, got {len(classes)}: {classes[:5]}")
    if not np.all(np.isfinite(x)):
        raise ValueError("[logreg.prepare] the features contain inf or NaN")
    x = x - x.mean(axis=0)
    scale = np.abs(x).max(axis=0)
    scale[scale == 0] = 1.0
    x = np.hstack([x / scale, np.ones((len(x), 1))])
    f = features_padded or 1 << math.ceil(math.log2(x.shape[1]))
    if f < x.shape[1] or f & (f - 1):
        raise ValueError(f"[logreg.prepare] features_padded must be a power of two >= {x.shape[1]}, got {f}")
    x = np.hstack([x, np.zeros((len(x), f - x.shape[1]))])
    y = np.where(labels == classes[1], 1.0, -1.0)
    return x, y


def sigmoid_polynomial(degree: int = 3, bound: float = 8.0) -> np.ndarray:
    """Least-squares monomial coefficients (lowest first) of sigmoid(t) on [-bound, bound].

    HELR fits degree 3 on [-8, 8]. Fitted here on 2001 evenly spaced points.
    """
    if degree < 1 or bound <= 0:
        raise ValueError(f"[logreg] degree must be >= 1 and bound > 0, got {degree} and {bound}")
    t = np.linspace(-bound, bound, 2001)
    return np.polynomial.polynomial.polyfit(t, 1.0 / (1.0 + np.exp(-t)), degree)


def nesterov_eta(k: int) -> float:
    """HELR's momentum weight for iteration k (0-based): (1 - a_k) / a_{k+1}, a_0 = 1, a_{k+1} = (1 + sqrt(1 + 4 a_k^2)) / 2."""
    a = 1.0
    for _ in range(k + 1):
        a_next = (1 + math.sqrt(1 + 4 * a * a)) / 2
        eta = (1 - a) / a_next
        a = a_next
    return eta


def train_plain(X, y, iterations: int, learning_rate: float = 1.0, sigmoid: str = "poly",
                degree: int = 3, bound: float = 8.0) -> np.ndarray:
    """The same Nesterov gradient descent in float64: the reference for the encrypted run.

    ``sigmoid``: ``poly`` (the same polynomial as the encrypted run) or ``exact``.
    """
    X, y = np.asarray(X, float), np.asarray(y, float)
    z = X * y[:, None]
    coeffs = sigmoid_polynomial(degree, bound)

    def sig_neg(t):  # sigmoid(-t)
        return np.polynomial.polynomial.polyval(-t, coeffs) if sigmoid == "poly" else 1 / (1 + np.exp(t))

    if sigmoid not in ("poly", "exact"):
        raise ValueError(f"[logreg] sigmoid must be 'poly' or 'exact', got {sigmoid!r}")
    w = v = np.zeros(X.shape[1])
    for k in range(iterations):
        grad = (sig_neg(z @ v)[:, None] * z).mean(axis=0)
        w_next = v + learning_rate * grad
        v = w_next + nesterov_eta(k) * (w_next - w)
        w = w_next
    return w


def accuracy(w, X, y) -> float:
    """Fraction of samples whose sign(x . w) is their label."""
    return float(np.mean(np.sign(np.asarray(X) @ np.asarray(w)) == np.asarray(y)))


@dataclass
class IterationStats:
    seconds: float
    bootstraps: int
    level_after: int


@dataclass
class FitReport:
    """What :meth:`EncryptedTrainer.fit` measured."""
    iterations: list = field(default_factory=list)     # IterationStats per iteration
    encrypt_seconds: float = 0.0
    keygen_seconds: float = 0.0

    @property
    def seconds_per_iteration(self) -> float:
        return float(np.median([s.seconds for s in self.iterations])) if self.iterations else 0.0

    @property
    def bootstraps(self) -> int:
        return sum(s.bootstraps for s in self.iterations)


def _rotsum(ct, steps):
    for s in steps:
        ct = ct + ct.rotate(s)
    return ct


def _row_mask(ctx, features: int, ct):
    """The mask keeping each row's first slot, encoded once per context for the level and
    scale it multiplies at: every data ciphertext of every iteration meets it at the same
    ones, and an encoding (an FFT and the limbs' NTTs on the host) per product would hold a
    GPU up while the host works. Kept on the context (a worker's context is its own)."""
    scale = ctx.landing_scale(ct.level, ct.scale)
    masks = ctx.__dict__.setdefault("_logreg_row_masks", {})
    key = (features, ct.device, ct.level, scale)
    if key not in masks:
        mask = np.zeros(ctx.slots)
        mask[::features] = 1.0
        # On a GPU the copy is uploaded at its first product and kept with it.
        masks[key] = ctx.encode(mask, level=ct.level, scale=scale).to(ct.device)
    return masks[key]


def gradient_share(ev, shared, index: int, spec):
    """One data ciphertext's share of an iteration's gradient (an executor's item: the data
    ciphertexts are independent, :mod:`ringfire.parallel`). ``shared``: (the data
    ciphertexts, [v]); ``spec``: (features, row steps, sample steps, the polynomial's
    coefficients)."""
    data, v = shared[0], shared[1][0]
    features, row_steps, sample_steps, coefficients = spec
    ct = data[index]
    t = _rotsum(ct * v, row_steps)
    masked = t * _row_mask(ev.context, features, t)
    t = _rotsum(masked, [-s for s in row_steps])
    # One nonzero per row: these rotations copy it across the row, they add nothing
    # to it (the carried magnitude bound would count each copy, ringfire.ckks.magnitude).
    t._bound = masked._bound
    p = ev.evaluate_polynomial(t, coefficients, basis="monomial")
    return _rotsum(p * ct, sample_steps)


def refresh_pair(ev, shared, index: int, _):
    """``w`` and ``v`` refreshed by one bootstrap (an executor's item)."""
    return ev.bootstrap_pair(shared[0], shared[1])


def _tensor(cts) -> np.ndarray:
    """Ciphertexts as the flat object array an executor's ``shared`` holds."""
    out = np.empty(len(cts), dtype=object)
    out[:] = list(cts)
    return out


class EncryptedTrainer:
    """HELR on one CKKS context (see the module doc).

    Args:
        ctx: a bootstrappable CKKS context (``preset("N16_BOOT")``) with at least
            6 user levels, or a plain one when every iteration fits in its levels.
        features: f, the padded feature count (a power of two dividing the slots).
        learning_rate: the gradient step (default 1, as HELR with normalised data).
        weight_scale: the ciphertexts hold ``w / weight_scale`` (bootstrapping needs
            ``|x| <= 1``); weights beyond it are clipped by the bootstrap's range.
        degree, bound: the sigmoid polynomial and its interval for ``x . w``.
    """

    def __init__(self, ctx, features: int, learning_rate: float = 1.0, weight_scale: float = 8.0,
                 degree: int = 3, bound: float = 8.0):
        if features < 2 or features & (features - 1) or features > ctx.slots:
            raise ValueError(f"[logreg] features must be a power of two in [2, {ctx.slots}], got {features}")
        self.ctx, self.f = ctx, features
        self.rows = ctx.slots // features
        self.learning_rate, self.weight_scale = float(learning_rate), float(weight_scale)
        self.coeffs = sigmoid_polynomial(degree, bound)
        self.bound = float(bound)
        # Levels an iteration uses, and those a bootstrap must still find (SlotsToCoeffs first).
        self.needed = LEVELS_PER_ITERATION + max(0, math.ceil(math.log2(degree + 1)) - 2) + ctx.bootstrap_min_level
        # Rotation steps: within a row (the inner product), and down the rows (the sum over samples).
        self.row_steps = [1 << i for i in range(int(math.log2(self.f)))]
        self.sample_steps = [self.f << i for i in range(int(math.log2(self.rows)))]
        top = ctx.params.user_max_level
        if top < self.needed:
            raise ValueError(f"[logreg] one iteration needs {self.needed} levels; this context has {top} "
                             f"(use Context.preset('N16_BOOT'), or more coeff_bits)")
        self.keys = None

    def rotations(self) -> list[int]:
        """The rotation steps an iteration uses (pass to keygen, or let :meth:`keygen` do it)."""
        return self.row_steps + [-r for r in self.row_steps] + self.sample_steps

    def keygen(self):
        """Secret key and keys with the rotations and, when the context can, the bootstrap keys."""
        sk, self.keys = self.ctx.keygen(rotations=self.rotations(), bootstrap=self.ctx.can_bootstrap)
        return sk, self.keys

    def encrypt_data(self, X, y, keys=None) -> list:
        """The training set as ciphertexts of rows z_i = y_i x_i (the data owner's step)."""
        X, y = np.asarray(X, float), np.asarray(y, float)
        if X.ndim != 2 or X.shape[1] != self.f or len(X) != len(y):
            raise ValueError(f"[logreg] expected X of shape (n, {self.f}) and n labels, got {X.shape}, {y.shape}")
        if np.abs(X).max() > 1:
            raise ValueError("[logreg] features must lie in [-1, 1]: use logreg.prepare")
        keys = keys or self.keys
        z = X * y[:, None]
        cts = []
        for start in range(0, len(z), self.rows):
            block = np.zeros((self.rows, self.f))
            part = z[start:start + self.rows]
            block[:len(part)] = part
            cts.append(self.ctx.encrypt(block.ravel(), keys))
        return cts

    def iteration(self, data: list, w, v, k: int, n: int, executor=None):
        """One Nesterov step on ciphertexts; returns (w+, v+). The data ciphertexts' shares of
        the gradient run through ``executor`` (:mod:`ringfire.parallel`; default: here, in
        order), bit-identical wherever they run: their sum is exact."""
        ev = self.ctx.evaluator(self.keys)
        # sigmoid(-t) for t = B * t' with t' = z . v' in [-bound/B, bound/B]; times lr / (n B) for the step on w'.
        B = self.weight_scale
        step = self.learning_rate / (n * B)
        poly = np.polynomial.Polynomial(self.coeffs)(np.polynomial.Polynomial([0, -B])) * step
        spec = (self.f, tuple(self.row_steps), tuple(self.sample_steps), tuple(float(c) for c in poly.coef))
        shares = (executor or IN_PROCESS).map(gradient_share, range(len(data)), ev=ev,
                                              shared=(_tensor(data), _tensor([v])), const=spec,
                                              label="logreg gradient")
        grad = shares[0]
        for g in shares[1:]:
            grad = grad + g
        w_next = v + grad
        v_next = w_next + (w_next - w) * nesterov_eta(k)
        return w_next, v_next

    def fit(self, X, y, iterations: int, keys=None, progress: bool = False, report: FitReport | None = None,
            memory_check: bool = True, executor=None):
        """Encrypts (X, y), trains ``iterations`` steps on ciphertexts, returns the encrypted weights ``w / weight_scale``.

        Decrypt with :meth:`decrypt_weights`. ``report`` (a :class:`FitReport`)
        receives per-iteration times and bootstraps. The memory the run allocates goes
        through the memory guard first (:mod:`ringfire.memory_guard`; ``memory_check=False``
        skips it and warns). ``executor`` (:mod:`ringfire.parallel`, e.g.
        ``rf.distributed.RayExecutor()``) runs each iteration's gradient shares (one per data
        ciphertext) and the bootstraps elsewhere, with the same bits.
        """
        keys = keys or self.keys
        if keys is None:
            raise ValueError("[logreg] call trainer.keygen() first, or pass keys=")
        self.keys = keys
        with guard(self._bytes_to_allocate(len(X)), "logistic-regression training", memory_check=memory_check,
                   fixes="fewer samples per call"):
            return self._fit(X, y, iterations, keys, progress, report, executor or IN_PROCESS)

    def _bytes_to_allocate(self, samples: int) -> int:
        """The encrypted data, w and v, and a bootstrap's temporaries (its plan's), or sixteen
        ciphertexts of the whole chain without bootstrapping."""
        ctx = self.ctx
        ciphertext = 2 * len(ctx.params.q_primes) * ctx.poly_degree * 8
        data = -(-samples // self.rows) + 2
        temporaries = ctx.bootstrap_plan().temporary_bytes if ctx.can_bootstrap else 16 * ciphertext
        return data * ciphertext + temporaries

    def _fit(self, X, y, iterations: int, keys, progress: bool, report: FitReport | None, executor):
        report = report if report is not None else FitReport()
        start = time.perf_counter()
        data = self.encrypt_data(X, y, keys)
        zero = np.zeros(self.ctx.slots)
        w = self.ctx.encrypt(zero, keys)
        v = self.ctx.encrypt(zero, keys)
        report.encrypt_seconds = time.perf_counter() - start
        ev = self.ctx.evaluator(keys)
        with progress_bar(iterations, "logreg", progress=progress, unit="iteration") as bar:
            for k in range(iterations):
                start = time.perf_counter()
                boots = 0
                if min(w.level, v.level) < self.needed:
                    if not self.ctx.can_bootstrap:
                        raise ValueError(f"[logreg] iteration {k} needs {self.needed} levels, {min(w.level, v.level)} "
                                         f"are left and the context cannot bootstrap")
                    w, v = executor.map(refresh_pair, [0], ev=ev, shared=_tensor([w, v]), label="logreg bootstrap")[0]
                    boots = 1
                w, v = self.iteration(data, w, v, k, len(X), executor)
                self.ctx.synchronize()  # a GPU queues the work: the iteration ends when it has run
                report.iterations.append(IterationStats(time.perf_counter() - start, boots, min(w.level, v.level)))
                bar.update(1)
        return w

    def decrypt_weights(self, w, sk) -> np.ndarray:
        """The trained weights (first row, times ``weight_scale``)."""
        return self.ctx.decrypt(w, sk).real[:self.f] * self.weight_scale
