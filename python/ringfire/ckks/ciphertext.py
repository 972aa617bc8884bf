"""Ciphertexts and plaintexts with Python operators.

The operators implement one policy so that expressions just work:

* every level has a canonical scale (``ctx.scale_at(level)``); products are
  relinearized and rescaled at once, which lands them on the next level's
  canonical scale;
* operands at different levels (or off-canonical scales) are brought to a
  common level first (``Evaluator.adjust_to``: drop limbs, correct the scale
  with one constant product, rescale);
* Python ints multiply without using a level; floats, complex numbers and
  NumPy vectors are encoded at the scale that keeps the chain canonical.
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import _core
from ..rlwe.ciphertext import CiphertextBase, PlaintextBase
from ..rlwe.shapes import as_values, plain_operand
from . import magnitude
from .circuits import Polynomial


class Plaintext(PlaintextBase):
    """An encoded vector (evaluation form) at a level and scale."""

    _bound = None  # the largest |value| encoded (ringfire.ckks.magnitude); None: unknown

    # Metadata is the same on every copy: read it without moving data.
    scale = property(lambda self: self._res.any().scale)
    is_scalar = property(lambda self: self._res.any().is_scalar, doc="All slots hold one real value (fast path).")

    def decode(self) -> np.ndarray:
        return self._context.decode(self)

    def __repr__(self) -> str:
        return (f"Plaintext({self._length_text()}, level={self.level}, scale=2^{np.log2(self.scale):.2f}"
                f"{', scalar' if self.is_scalar else ''})")


class Ciphertext(CiphertextBase):
    """An encrypted vector of up to ``ctx.slots`` numbers.

    ``shape`` is that of the values encrypted: ``(n,)``, or ``()`` for a
    scalar in every slot; operands broadcast as in NumPy and ``decrypt``
    returns that shape. ``level`` counts the rescalings left; ``scale`` is the factor the slots
    are multiplied by; ``size`` is 2 (3 right after an explicit multiply).
    ``device`` says where operations on it run: ``ct.to("cuda")`` moves it
    lazily (the upload happens at the first GPU operation), results stay on
    the GPU, and ``decrypt`` / ``.to("cpu")`` bring them back.
    """

    # Metadata is the same on every copy: read it without moving data.
    scale = property(lambda self: self._res.any().scale)
    is_complex = property(lambda self: self._res.any().is_complex,
                          doc="Whether the slots may hold complex values (else decrypt returns reals).")
    _bound = None  # see `bound`

    @property
    def bound(self) -> float | None:
        """An upper bound on the slots' absolute values (:mod:`ringfire.ckks.magnitude`): from the data
        encrypted, carried through the operations; None when unknown (a loaded ciphertext)."""
        return self._bound

    def _wrap(self, native):
        out = super()._wrap(native)
        out._bound = self._bound  # rotations, rescaling, negation keep the values' size
        return out

    def _bounded(self, bound, op: str) -> "Ciphertext":
        """This result with its new bound, checked against its level's room."""
        self._bound = bound
        magnitude.check(self, op)
        return self

    def __repr__(self) -> str:
        return (f"Ciphertext({self._length_text()}, level={self.level}, scale=2^{np.log2(self.scale):.2f}, "
                f"size={self.size}{self._where()})")

    # ---- operators ------------------------------------------------------------
    def _aligned(self, other: "Ciphertext"):
        """Both operands at one level with that level's canonical scale."""
        self._check_other(other)
        ev = self._context._core_evaluator
        ctx = self._context
        a, b = self._native, other._native
        if a.level == b.level and _close(a.scale, b.scale):
            return a, b
        target = min(a.level, b.level)
        for x in (a, b):
            if x.level == target and not _close(x.scale, ctx.scale_at(target)):
                target -= 1  # the operand already at the target needs a level to fix its scale
                break
        if target < 0:
            raise ValueError("[ckks] cannot align operands: scales differ at level 0 and no level is left to fix them")
        return ev.adjust_to(a, target), ev.adjust_to(b, target)

    def _mul_ct(self, other: "Ciphertext") -> "Ciphertext":
        a, b = self._aligned(other)
        if a.level == 0:
            raise ValueError("[ckks.multiply] out of levels: both operands are at level 0")
        ev = self._context._core_evaluator
        relin = self._eval_keys().require_relin("ckks.multiply")._on(self._device)
        prod = ev.square(a) if a is b else ev.multiply(a, b)
        return self._wrap(ev.relinearize_rescale(prod, relin))._bounded(
            magnitude.times(self._bound, other._bound), "ckks.multiply")

    def _mul_constant(self, value) -> "Ciphertext":
        ctx, ev, a = self._context, self._context._core_evaluator, self._native
        bound = magnitude.times(self._bound, magnitude.of_values(value))
        if isinstance(value, (numbers.Integral, np.integer)):
            return self._wrap(ev.multiply_integer(a, int(value)))._bounded(bound, "ckks.multiply_integer")
        if a.level == 0:
            raise ValueError("[ckks.multiply] out of levels: the ciphertext is at level 0")
        # Encode at the scale that lands the product on the next canonical scale.
        scale = ctx.landing_scale(a.level, a.scale)
        if np.ndim(value) == 0:
            v = complex(value)
            return self._wrap(ev.rescale(ev.multiply_scalar(a, v, scale)))._bounded(bound, "ckks.multiply_scalar")
        pt = ctx._encode_native(np.asarray(value), a.level, scale)
        return self._wrap(ev.rescale(ev.multiply_plain(a, pt)))._bounded(bound, "ckks.multiply_plain")

    def _mul_plain(self, pt: Plaintext) -> "Ciphertext":
        ev, a, p = self._context._core_evaluator, self._native, pt._native
        if p.level > a.level:
            p = ev.mod_switch_plain(p, a.level)
        elif p.level < a.level:
            a = ev.mod_switch(a, p.level)
        out = ev.multiply_plain(a, p)
        return self._wrap(ev.rescale(out) if out.level > 0 else out)._bounded(
            magnitude.times(self._bound, pt._bound), "ckks.multiply_plain")

    def _add_any(self, other, sign: int) -> "Ciphertext":
        ctx, ev = self._context, self._context._core_evaluator
        if isinstance(other, Ciphertext):
            a, b = self._aligned(other)
            return self._wrap(ev.add(a, b) if sign > 0 else ev.sub(a, b))._bounded(
                magnitude.add(self._bound, other._bound), "ckks.add")
        a = self._native
        if isinstance(other, Plaintext):
            p = other._native
            if p.level != a.level:
                raise ValueError(f"[ckks.add] level mismatch: ciphertext {a.level} vs plaintext {p.level}; encode "
                                 "at the ciphertext's level")
            return self._wrap(ev.add_plain(a, p) if sign > 0 else ev.sub_plain(a, p))._bounded(
                magnitude.add(self._bound, other._bound), "ckks.add_plain")
        bound = magnitude.add(self._bound, magnitude.of_values(other))
        if np.ndim(other) == 0:
            return self._wrap(ev.add_scalar(a, complex(other) * sign))._bounded(bound, "ckks.add_scalar")
        pt = ctx._encode_native(np.asarray(other) * sign, a.level, a.scale)
        return self._wrap(ev.add_plain(a, pt))._bounded(bound, "ckks.add_plain")

    def _square(self) -> "Ciphertext":
        return self._mul_ct(self)

    def _reciprocal(self, value):
        value, _ = plain_operand("ckks.divide", value)
        if np.any(np.asarray(value) == 0):
            raise ZeroDivisionError("[ckks.divide] division by zero")
        return 1.0 / value

    def conjugate(self) -> "Ciphertext":
        galois = self._eval_keys().require_galois("ckks.conjugate")
        out = self._wrap(self._context._core_evaluator.conjugate(self._native, galois._on(self._device)))
        return out._set_shape(self.shape, self._zero_tail)

    # ---- circuits -----------------------------------------------------------------
    def polyval(self, coefficients) -> "Ciphertext":
        """c_0 + c_1 x + c_2 x^2 + ... slot-wise (coefficients lowest degree first, as
        ``numpy.polynomial.polynomial.polyval``): Paterson-Stockmeyer, depth
        ceil(log2(degree + 1)). For a function on an interval, fit a Chebyshev
        polynomial (``rf.ckks.chebyshev_fit``) and use ``ev.evaluate_polynomial``."""
        coefficients = np.atleast_1d(as_values(coefficients)).astype(complex if np.iscomplexobj(
            as_values(coefficients)) else float)
        if coefficients.ndim != 1 or coefficients.size == 0:
            raise ValueError(f"[ckks.polyval] coefficients are a 1-D sequence, got shape {coefficients.shape}")
        if np.iscomplexobj(coefficients):
            raise TypeError("[ckks.polyval] the polynomial's coefficients must be real")
        if coefficients.size == 1:
            return self * 0 + float(coefficients[0])
        polynomial = Polynomial(coefficients, "monomial", (-1.0, 1.0))
        out = self._context.evaluator(self._eval_keys()).evaluate_polynomial(self, polynomial)
        return out._set_shape(self.shape, self._zero_tail and coefficients[0] == 0)

    def __matmul__(self, matrix) -> "Ciphertext":
        """The vector-matrix product ``x @ W`` for a plain (n, m) matrix ``W`` and this
        ciphertext of shape (n,): shape (m,), one level. Uses the Galois keys of
        ``rf.ckks.matmul_rotations(ctx, W.shape)`` when they exist (baby-step/giant-step,
        hoisted); otherwise it composes each rotation from the keys there are (slower)."""
        if isinstance(matrix, (CiphertextBase, PlaintextBase)):
            raise TypeError("[ckks.matmul] the matrix must be plain (a NumPy array or tensor): an encrypted matrix "
                            "product is not provided")
        from .matmul import vector_matrix_product
        return vector_matrix_product(self, as_values(matrix))

    matmul = __matmul__
    mm = __matmul__

    def __rmatmul__(self, matrix) -> "Ciphertext":
        """The matrix-vector product ``W @ x`` for a plain (m, n) matrix: ``x @ W.T``
        (its fast keys: ``rf.ckks.matmul_rotations(ctx, W.T.shape)``)."""
        values = as_values(matrix)
        if values.ndim != 2:
            raise ValueError(f"[ckks.matmul] the matrix must be 2-D (m, n), got shape {values.shape}")
        return self @ values.T

    def bootstrap(self, **options) -> "Ciphertext":
        """This ciphertext refreshed to ``ctx.max_level`` (see :meth:`Evaluator.bootstrap`
        for the options: ``iterations=2`` for Meta-BTS, ``scale``, ``timings``)."""
        return self._context.evaluator(self._eval_keys()).bootstrap(self, **options)


def _close(a: float, b: float) -> bool:
    """The same scale, to the evaluator's tolerance."""
    return abs(a - b) <= _core.SCALE_TOLERANCE * max(a, b)
