"""Minimax polynomial approximations for ``ev.evaluate_polynomial``.

``chebyshev_fit`` interpolates, which is near-minimax for smooth functions
but gives away a factor of about two on functions with a kink (ReLU, |x|),
where the error concentrates at the kink. ``minimax_fit`` minimizes the
largest error on the interval by Lawson's algorithm: weighted least squares
whose weights grow where the error is largest, which converges to the
minimax (Chebyshev-alternation) solution without Remez's exchange steps.

Measured with this module (the largest |p(x) - relu(x)| on [-1, 1]; docs/nn.md):
degree 8 gives 0.0173 against interpolation's 0.0335, degree 64 0.0022
against 0.0046, and the error halves with every doubling of the degree.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .circuits import Polynomial


def minimax_fit(f, interval, degree: int, *, points: int | None = None, iterations: int = 100) -> Polynomial:
    """The polynomial of ``degree`` (Chebyshev basis on ``interval``) with the smallest
    largest error against ``f`` (NumPy-vectorized) over ``points`` Chebyshev points of
    the interval (default: 16 per coefficient plus the midpoint, at least 1025; the
    error found there is within 1 % of that on a fine grid for ReLU at degree 127). Its depth is that of any
    :class:`Polynomial` of that degree on that interval (plus one level unless the
    interval is (-1, 1))."""
    if isinstance(degree, bool) or not isinstance(degree, numbers.Integral) or not 1 <= degree <= 1023:
        raise ValueError(f"[ckks.minimax_fit] degree must be an integer in [1, 1023], got {degree!r}")
    a, b = (float(v) for v in interval)
    if not (math.isfinite(a) and math.isfinite(b) and a < b):
        raise ValueError(f"[ckks.minimax_fit] interval must be (a, b) with a < b, got {interval!r}")
    # An odd count keeps the interval's midpoint, where ReLU's and |x|'s kink sits.
    points = max(1025, 16 * (int(degree) + 1) + 1) if points is None else int(points)
    if points < 2 * (degree + 2):
        raise ValueError(f"[ckks.minimax_fit] points must be at least 2 * (degree + 2) = {2 * (degree + 2)}")
    y = np.cos(np.pi * (np.arange(points) + 0.5) / points)  # Chebyshev points: dense at the ends
    target = np.asarray(f((y * (b - a) + (a + b)) / 2.0), dtype=float)
    if target.shape != y.shape or not np.all(np.isfinite(target)):
        raise ValueError("[ckks.minimax_fit] f must map an array to finite values of the same shape")
    basis = np.polynomial.chebyshev.chebvander(y, int(degree))
    weights = np.full(points, 1.0 / points)
    best_error, best = math.inf, None
    for _ in range(int(iterations)):
        root = np.sqrt(weights)
        coeffs = np.linalg.lstsq(basis * root[:, None], target * root, rcond=None)[0]
        error = np.abs(basis @ coeffs - target)
        if error.max() < best_error:
            best_error, best = float(error.max()), coeffs
        # Lawson's update: weight where the error is large; stop once it is level.
        weights = weights * error
        total = weights.sum()
        if not total > 0 or error.max() - error[weights > 0].min() < 1e-12 * max(1.0, error.max()):
            break
        weights /= total
    return Polynomial(best, "chebyshev", (a, b))
