"""Non-linear layers: exact plaintext versions (reference and client side) and
polynomial approximations for non-interactive encrypted evaluation."""

from __future__ import annotations

import numpy as np


def maxpool(x, kernel, strides, pads):
    """x: (C, H, W, *rest) -> max over windows; padding never wins."""
    c, h, w = x.shape[:3]
    kh, kw = kernel
    sh, sw = strides
    top, left, bottom, right = pads
    padded = np.full((c, h + top + bottom, w + left + right) + x.shape[3:], -np.inf)
    padded[:, top:top + h, left:left + w] = x
    oh = (h + top + bottom - kh) // sh + 1
    ow = (w + left + right - kw) // sw + 1
    out = np.full((c, oh, ow) + x.shape[3:], -np.inf)
    for dy in range(kh):
        for dx in range(kw):
            out = np.maximum(out, padded[:, dy:dy + sh * oh:sh, dx:dx + sw * ow:sw])
    return out


def maxpool_params(node):
    k = tuple(node.attrs["kernel_shape"])
    return k, tuple(node.attrs.get("strides", (1,) * len(k))), tuple(node.attrs.get("pads", (0,) * 4))


def exact(node, x, shape, clip):
    """The layer in the clear on arrays (*sample_shape, ...)."""
    if node.op == "Relu":
        return np.maximum(x, 0.0), shape
    if node.op == "Clip":
        lo, hi = clip
        return np.clip(x, lo, hi), shape
    if node.op == "MaxPool":
        if node.attrs.get("ceil_mode", 0) or any(d != 1 for d in node.attrs.get("dilations", (1, 1))):
            raise ValueError(f"[nn] node '{node.name}': MaxPool with ceil_mode or dilation is not supported")
        k, s, p = maxpool_params(node)
        out = maxpool(x, k, s, p)
        return out, tuple(out.shape[:3])
    raise ValueError(f"[nn] no exact implementation of {node.op}")


FUNCTIONS = {
    "relu": lambda z: np.maximum(z, 0.0),
    "relu6": lambda z: np.clip(z, 0.0, 6.0),
    "silu": lambda z: z / (1.0 + np.exp(-z)),
    "square": lambda z: z * z,
}


class Polynomial:
    """p(z) = sum_k coeffs[k] z^k, evaluated on ciphertexts by the scheme's
    Paterson–Stockmeyer evaluator (``ev.evaluate_polynomial``, monomial basis).

    Depth: ceil(log2(degree + 1)) levels (1 for degree 1, 2 for degrees 2 and 3,
    3 up to degree 7), the figure the scheme layer announces and consumes.
    """

    def __init__(self, coeffs, function: str = "custom", interval=None):
        self.coeffs = [float(c) for c in coeffs]
        while len(self.coeffs) > 1 and self.coeffs[-1] == 0.0:
            self.coeffs.pop()
        self.function = function
        self.interval = interval
        self._scheme_polynomial = None

    @classmethod
    def fit(cls, function: str, bound: float, degree: int = 2, samples: int = 2001) -> "Polynomial":
        """Least-squares fit of relu/relu6/silu on [-bound, bound] (Chebyshev nodes)."""
        if function not in FUNCTIONS:
            raise ValueError(f"[nn] unknown activation '{function}'; choose from {sorted(FUNCTIONS)}")
        if function == "square":
            return cls([0.0, 0.0, 1.0], "square", None)
        bound = float(bound)
        if not bound > 0:
            raise ValueError("[nn] the activation's input range must be positive")
        t = np.cos(np.pi * (np.arange(samples) + 0.5) / samples) * bound
        coeffs = np.polynomial.polynomial.polyfit(t, FUNCTIONS[function](t), degree)
        return cls(coeffs, function, (-bound, bound))

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

    def __call__(self, z):
        return np.polynomial.polynomial.polyval(z, self.coeffs)

    def max_error(self) -> float | None:
        if self.interval is None:
            return 0.0
        t = np.linspace(*self.interval, 4001)
        return float(np.max(np.abs(self(t) - FUNCTIONS[self.function](t))))

    def evaluate_encrypted(self, ct):
        if self.degree == 0:
            raise ValueError("[nn] a constant polynomial activation is not supported")
        return ct.context.evaluator(ct.keys).evaluate_polynomial(ct, self._scheme())

    def describe(self) -> str:
        terms = " + ".join(f"{c:.6g}*z^{k}" for k, c in enumerate(self.coeffs) if c != 0)
        where = f" on [{self.interval[0]:.3g}, {self.interval[1]:.3g}]" if self.interval else ""
        return f"{self.function} ~ {terms}{where} (degree {self.degree}, depth {self.depth})"
