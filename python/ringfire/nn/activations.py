"""Non-linear layers: exact plaintext versions (reference and client side) and
polynomial approximations for non-interactive encrypted evaluation."""

from __future__ import annotations

import functools

import numpy as np


def _pool_extent(size: int, k: int, s: int, lo: int, hi: int, ceil_mode: bool) -> int:
    """Output length of a pooling window sweep (ONNX; with ceil_mode, PyTorch's rule
    that the last window must start inside the input or its leading padding)."""
    span = size + lo + hi - k
    if not ceil_mode:
        return span // s + 1
    out = -(-span // s) + 1
    return out - 1 if (out - 1) * s >= size + lo else out


def maxpool(x, kernel, strides, pads, ceil_mode: bool = False):
    """x: (C, H, W, *rest) -> max over windows; padding never wins."""
    c, h, w = x.shape[:3]
    kh, kw = kernel
    sh, sw = strides
    top, left, bottom, right = pads
    oh = _pool_extent(h, kh, sh, top, bottom, ceil_mode)
    ow = _pool_extent(w, kw, sw, left, right, ceil_mode)
    rows = max(h + top + bottom, (oh - 1) * sh + kh)
    cols = max(w + left + right, (ow - 1) * sw + kw)
    padded = np.full((c, rows, cols) + x.shape[3:], -np.inf)
    padded[:, top:top + h, left:left + w] = x
    out = np.full((c, oh, ow) + x.shape[3:], -np.inf)
    for dy in range(kh):
        for dx in range(kw):
            out = np.maximum(out, padded[:, dy:dy + sh * (oh - 1) + 1:sh, dx:dx + sw * (ow - 1) + 1:sw])
    return out


FUNCTIONS = {
    "relu": lambda z: np.maximum(z, 0.0),
    "relu6": lambda z: np.clip(z, 0.0, 6.0),
    "silu": lambda z: z * 0.5 * (1.0 + np.tanh(0.5 * z)),
    "square": lambda z: z * z,
}


@functools.lru_cache(maxsize=None)
def _unit_relu(degree: int) -> np.ndarray:
    """Chebyshev coefficients of ReLU's minimax polynomial on [-1, 1]."""
    from ..ckks import minimax_fit
    coeffs = minimax_fit(FUNCTIONS["relu"], (-1.0, 1.0), degree).coefficients
    coeffs.flags.writeable = False
    return coeffs


def _reference(function, name):
    """(callable, label) for an activation given by name or as a vectorised callable."""
    if callable(function):
        return function, name or "custom"
    if function not in FUNCTIONS:
        raise ValueError(f"[nn] unknown activation '{function}'; choose from {sorted(FUNCTIONS)}")
    return FUNCTIONS[function], function


class Polynomial:
    """p(z) = sum_k coeffs[k] z^k (``fit``), or a Chebyshev series on its interval
    (``minimax``), evaluated on ciphertexts by the scheme's Paterson–Stockmeyer
    evaluator (``ev.evaluate_polynomial``).

    Depth: ceil(log2(degree + 1)) levels (1 for degree 1, 2 for degrees 2 and 3,
    3 up to degree 7), plus one for a Chebyshev series whose interval is not
    [-1, 1]: the figure the scheme layer announces and consumes.
    """

    def __init__(self, coeffs, function: str = "custom", interval=None, reference=None, scheme=None):
        self.reference = reference if reference is not None else FUNCTIONS.get(function)
        self.coeffs = [float(c) for c in coeffs]
        while len(self.coeffs) > 1 and self.coeffs[-1] == 0.0:
            self.coeffs.pop()
        self.function = function
        self.interval = interval
        self._scheme_polynomial = scheme  # a ckks.Polynomial (Chebyshev) when built by minimax()

    @classmethod
    def fit(cls, function, bound: float, degree: int = 2, samples: int = 2001, name: str | None = None
            ) -> "Polynomial":
        """Least-squares fit on [-bound, bound] (Chebyshev nodes) of ``function``: a name
        (relu, relu6, silu, square) or any vectorised callable (then ``name`` labels it)."""
        reference, function = _reference(function, name)
        if function == "square":
            return cls([0.0, 0.0, 1.0], "square", None)
        bound = float(bound)
        if not bound > 0:
            raise ValueError("[nn] the activation's input range must be positive")
        t = np.cos(np.pi * (np.arange(samples) + 0.5) / samples) * bound
        coeffs = np.polynomial.polynomial.polyfit(t, reference(t), degree)
        return cls(coeffs, function, (-bound, bound), reference)

    @classmethod
    def minimax(cls, function, bound: float, degree: int, name: str | None = None) -> "Polynomial":
        """The minimax polynomial of ``degree`` on [-bound, bound] (``rf.ckks.minimax_fit``,
        Chebyshev basis): the smallest largest error, for the high degrees that
        bootstrapping affords (ReLU at degree 127: 0.0011 * bound)."""
        from ..ckks import Polynomial as SchemePolynomial, minimax_fit
        reference, function = _reference(function, name)
        bound = float(bound)
        if not bound > 0:
            raise ValueError("[nn] the activation's input range must be positive")
        if function == "relu":  # relu(x) = R relu(x / R): one fit per degree serves every range
            scheme = SchemePolynomial(_unit_relu(int(degree)) * bound, "chebyshev", (-bound, bound))
        else:
            scheme = minimax_fit(reference, (-bound, bound), degree)
        return cls(scheme.coefficients, function, (-bound, bound), reference, scheme)

    @property
    def degree(self) -> int:
        return len(self.coeffs) - 1

    def _scheme(self):
        if self._scheme_polynomial is None:
            from ..ckks import Polynomial as SchemePolynomial
            self._scheme_polynomial = SchemePolynomial(self.coeffs, "monomial")
        return self._scheme_polynomial

    @property
    def depth(self) -> int:
        return 0 if self.degree == 0 else self._scheme().depth

    @property
    def multiplications(self) -> int:
        return max(0, self.degree - 1)

    @property
    def _is_minimax(self) -> bool:
        """Built by :meth:`minimax`: a Chebyshev series on its interval, not monomial coefficients."""
        return self._scheme_polynomial is not None and self._scheme_polynomial.basis == "chebyshev"

    def __call__(self, z):
        if self._is_minimax:
            return self._scheme_polynomial(z)
        return np.polynomial.polynomial.polyval(z, self.coeffs)

    def max_error(self) -> float | None:
        if self.interval is None:
            return 0.0
        t = np.linspace(*self.interval, 4001)
        return float(np.max(np.abs(self(t) - self.reference(t))))

    def evaluate_encrypted(self, ct):
        if self.degree == 0:
            raise ValueError("[nn] a constant polynomial activation is not supported")
        if self.interval and ct.bound is not None:
            # Calibration put this activation's inputs inside its interval; the worst-case
            # bound carried through the linear layers before it is far looser than that.
            ct = ct._wrap(ct._native)
            ct._bound = min(ct._bound, max(abs(v) for v in self.interval))
        return ct.context.evaluator(ct.keys).evaluate_polynomial(ct, self._scheme())

    def describe(self) -> str:
        where = f" on [{self.interval[0]:.3g}, {self.interval[1]:.3g}]" if self.interval else ""
        if self._is_minimax:
            return (f"{self.function} ~ minimax polynomial{where} (degree {self.degree}, depth {self.depth}, "
                    f"largest error {self.max_error():.3g})")
        terms = " + ".join(f"{c:.6g}*z^{k}" for k, c in enumerate(self.coeffs) if c != 0)
        return f"{self.function} ~ {terms}{where} (degree {self.degree}, depth {self.depth})"
