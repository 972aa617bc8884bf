"""Polynomials and linear transforms: the circuits bootstrapping is made of,
for users too (``ev.evaluate_polynomial``, ``ev.linear_transform``).

Both run in the C++ core: Paterson–Stockmeyer in the Chebyshev (or monomial)
basis with depth ceil(log2(degree + 1)) and a result on the canonical scale
of its level; baby-step/giant-step matrix-vector products over the slots with
hoisted baby rotations. Their level cost is known before any ciphertext
exists (``Polynomial.depth``; a transform always costs one level).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .. import _core


class Polynomial:
    """p(x) = sum_k c_k T_k(y) (Chebyshev basis) or sum_k c_k y^k (monomial), where
    y maps ``interval`` = (a, b) onto [-1, 1].

    ``depth``: the levels ``ev.evaluate_polynomial`` consumes: ceil(log2(degree + 1)),
    plus one when the interval map 2 / (b - a) is not an integer."""

    def __init__(self, coefficients, basis: str = "chebyshev", interval=(-1.0, 1.0)):
        coeffs = np.asarray(coefficients, dtype=float).ravel()
        if coeffs.size == 0 or not np.all(np.isfinite(coeffs)):
            raise ValueError("[ckks.Polynomial] needs at least one finite coefficient")
        a, b = (float(v) for v in interval)
        self._native = _core.Polynomial(str(basis), coeffs.tolist(), a, b)

    @classmethod
    def _wrap(cls, native) -> "Polynomial":
        out = cls.__new__(cls)
        out._native = native
        return out

    def __reduce__(self):
        if self.basis == "monomial":
            return Polynomial, (self.coefficients, "monomial")
        return Polynomial, (self.coefficients, self.basis, self.interval)

    basis = property(lambda self: self._native.basis)
    coefficients = property(lambda self: np.asarray(self._native.coefficients))
    interval = property(lambda self: tuple(self._native.interval))
    degree = property(lambda self: self._native.degree)
    depth = property(lambda self: self._native.depth, doc="Levels consumed by ev.evaluate_polynomial.")

    def __call__(self, x):
        """p at x (NumPy, vectorized): the reference for encrypted results."""
        a, b = self.interval
        y = (2.0 * np.asarray(x, dtype=float) - (a + b)) / (b - a)
        if self.basis == "chebyshev":
            return np.polynomial.chebyshev.chebval(y, self.coefficients)
        return np.polynomial.polynomial.polyval(y, self.coefficients)

    def __repr__(self) -> str:
        a, b = self.interval
        return f"ckks.Polynomial({self.basis}, degree {self.degree}, on [{a:g}, {b:g}], depth {self.depth})"


def chebyshev_fit(f, interval, degree: int) -> Polynomial:
    """The Chebyshev interpolant of ``f`` (a NumPy-vectorized function) on
    ``interval`` at ``degree + 1`` Chebyshev points: near-minimax for smooth f."""
    if isinstance(degree, bool) or not isinstance(degree, numbers.Integral) or not 1 <= degree <= 1023:
        raise ValueError(f"[ckks.chebyshev_fit] degree must be an integer in [1, 1023], got {degree!r}")
    a, b = (float(v) for v in interval)
    if not (math.isfinite(a) and math.isfinite(b) and a < b):
        raise ValueError(f"[ckks.chebyshev_fit] interval must be (a, b) with a < b, got {interval!r}")
    coeffs = np.polynomial.chebyshev.chebinterpolate(lambda y: f((y * (b - a) + (a + b)) / 2.0), int(degree))
    return Polynomial(coeffs, "chebyshev", (a, b))


class LinearTransform:
    """y = M x over the slots, evaluated as a baby-step/giant-step sum of rotated
    diagonals (``ev.linear_transform(ct, lt)``; one level).

    Args:
        context: the :class:`ringfire.ckks.Context`.
        matrix_or_diagonals: an n x n matrix (n a power of two dividing the slot
            count; the input and output then repeat with period n), or a dict
            ``{k: vector}`` of its nonzero diagonals (diag_k[i] = M[i, (i + k) mod n]).
        level: where the input ciphertext sits (default: the context's top level).
        scale: the diagonals' encoding scale (default: the level's last prime, so
            the rescale returns the input's scale).
        baby_steps: the BSGS split (a power of two; default: chosen by cost), or
        bsgs_ratio: giant steps per baby step wanted (Lattigo's convention).
        chained: rotate each baby step from the one before it and sum the giant steps
            by Horner's rule: a few Galois keys (about three where the diagonals are
            evenly spaced, as a DFT pass's are) instead of one per baby and giant
            step, for more key switches' time (no hoisting). ``rotations()`` says which.
        picklable: keep the given diagonals, which pickling rebuilds the transform from;
            ``False`` keeps only the encoded ones (less memory, for a caller's cache of
            transforms it can rebuild itself), and pickling it raises.
    """

    def __init__(self, context, matrix_or_diagonals, *, level: int | None = None, scale: float | None = None,
                 baby_steps: int | None = None, bsgs_ratio: float | None = None, chained: bool = False,
                 picklable: bool = True):
        if isinstance(matrix_or_diagonals, dict):
            # Kept as given for pickling (a copy then: the caller may change its arrays), real
            # diagonals as real arrays: half the memory of complex ones, and passed on as they are.
            copy = np.array if picklable else np.asarray
            source = {int(k): copy(v).ravel() for k, v in matrix_or_diagonals.items()}
            real = all(not np.iscomplexobj(v) for v in source.values())
            diagonals = {k: np.ascontiguousarray(v, dtype=float if real else complex) for k, v in source.items()}
        else:
            matrix = np.asarray(matrix_or_diagonals, dtype=complex)
            if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
                raise ValueError(f"[ckks.LinearTransform] expected a square matrix, got shape {matrix.shape}")
            n = matrix.shape[0]
            if n < 1 or n & (n - 1) or n > context.slots:
                raise ValueError(f"[ckks.LinearTransform] the matrix side {n} must be a power of two dividing "
                                 f"the {context.slots} slots")
            source = diagonals = _core.LinearTransform.diagonals_of(np.ascontiguousarray(matrix.ravel()), n)
        if baby_steps is not None and bsgs_ratio is not None:
            raise ValueError("[ckks.LinearTransform] give baby_steps or bsgs_ratio, not both")
        if bsgs_ratio is not None:
            span = max(1, len(diagonals))
            baby_steps = 1 << max(0, round(math.log2(math.sqrt(span / float(bsgs_ratio)))))
        level = context.max_level if level is None else int(level)
        self._context = context
        self._native = _core.LinearTransform(context._core, diagonals, level, 0.0 if scale is None else float(scale),
                                             0 if baby_steps is None else int(baby_steps), bool(chained))
        del diagonals
        # max |y_i| <= max |x| * sum_k max |diag_k|: the output's magnitude bound.
        self._gain = float(sum(np.max(np.abs(v)) for v in source.values() if np.size(v)))
        self._copies = {"cpu": self._native}
        # What pickling rebuilds it from (the encoded diagonals are derived data).
        self._source = (source, level, scale, self._native.baby_steps, bool(chained)) if picklable else None

    def __reduce__(self):
        if self._source is None:
            raise TypeError("[ckks.LinearTransform] this transform was made with picklable=False: it keeps only its "
                            "encoded diagonals; build it again from its matrix instead of pickling it")
        diagonals, level, scale, baby_steps, chained = self._source
        return _rebuild_transform, (self._context, diagonals, level, scale, baby_steps, chained)

    level = property(lambda self: self._native.level)
    scale = property(lambda self: self._native.scale)
    dimension = property(lambda self: self._native.dimension, doc="n: the period of input and output.")
    baby_steps = property(lambda self: self._native.baby_steps)
    diagonal_count = property(lambda self: self._native.diagonal_count)
    chained = property(lambda self: self._native.chained, doc="Whether the rotations are chained (few keys).")

    def rotations(self) -> list[int]:
        """The rotation steps whose Galois keys the transform needs: pass them to
        ``ctx.keygen(rotations=...)``."""
        return sorted(int(s) for s in self._native.rotations())

    def _on(self, device: str):
        native = self._copies.get(device)
        if native is None:
            native = self._copies[device] = self._native.to(device)
        return native

    def __repr__(self) -> str:
        return (f"ckks.LinearTransform(n={self.dimension}, {self.diagonal_count} diagonals, level {self.level}, "
                f"{self.baby_steps} baby steps{', chained' if self.chained else ''}, {len(self.rotations())} rotation keys)")


def bsgs_steps(indices, baby_steps: int) -> tuple[set[int], set[int]]:
    """The nonzero rotation steps of a BSGS transform over diagonals ``indices`` with
    ``baby_steps`` baby steps: its baby steps (k mod g) and its giant steps (k - k mod g)."""
    babies = {int(k) % baby_steps for k in indices} - {0}
    giants = {int(k) - int(k) % baby_steps for k in indices} - {0}
    return babies, giants


def _rebuild_transform(context, diagonals, level, scale, baby_steps, chained=False) -> LinearTransform:
    return LinearTransform(context, diagonals, level=level, scale=scale, baby_steps=baby_steps, chained=chained)
