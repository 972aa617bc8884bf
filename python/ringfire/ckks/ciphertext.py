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
from .. import io as rf_io
from .residency import Placed


class Plaintext(Placed):
    """An encoded vector (evaluation form) at a level and scale."""

    def __init__(self, native, context, device=None):
        self._context = context
        self._place(native, device)

    def to(self, device: str) -> "Plaintext":
        """This plaintext on ``device``; the copy is made at the first operation that needs it."""
        return self._moved(device)

    # Metadata is the same on every copy: read it without moving data.
    level = property(lambda self: self._res.any().level)
    scale = property(lambda self: self._res.any().scale)
    is_scalar = property(lambda self: self._res.any().is_scalar, doc="All slots hold one real value (fast path).")
    context = property(lambda self: self._context)

    def decode(self) -> np.ndarray:
        return self._context.decode(self)

    def to_bytes(self, *, mac_key: bytes | None = None) -> bytes:
        """Serialized form (``ctx.load`` reads it back); authenticated with ``mac_key``."""
        return rf_io.wrap(_core.save_plaintext(self._host()), mac_key)

    def __repr__(self) -> str:
        return f"Plaintext(level={self.level}, scale=2^{np.log2(self.scale):.2f}{', scalar' if self.is_scalar else ''})"


class Ciphertext(Placed):
    """An encrypted vector of ``ctx.slots`` numbers.

    ``level`` counts the rescalings left; ``scale`` is the factor the slots
    are multiplied by; ``size`` is 2 (3 right after an explicit multiply).
    ``device`` says where operations on it run: ``ct.to("cuda")`` moves it
    lazily (the upload happens at the first GPU operation), results stay on
    the GPU, and ``decrypt`` / ``.to("cpu")`` bring them back.
    """

    __array_priority__ = 1000  # make numpy defer to our reflected operators

    def __init__(self, native, context, keys=None, device=None):
        self._context = context
        self._keys = keys
        self._place(native, device)

    # Metadata is the same on every copy: read it without moving data.
    level = property(lambda self: self._res.any().level)
    scale = property(lambda self: self._res.any().scale)
    size = property(lambda self: self._res.any().size)
    context = property(lambda self: self._context)
    is_complex = property(lambda self: self._res.any().is_complex,
                          doc="Whether the slots may hold complex values (else decrypt returns reals).")
    noise_bits = property(lambda self: self._res.any().noise_bits,
                          doc="log2 of the estimated norm of the noise (decryption adds noise of this size).")
    keys = property(lambda self: self._keys,
                    doc="The evaluation keys this ciphertext computes with (None: its context's default keys).")

    def __repr__(self) -> str:
        where = "" if self._device == "cpu" else f", device={self._device!r}"
        return f"Ciphertext(level={self.level}, scale=2^{np.log2(self.scale):.2f}, size={self.size}{where})"

    # ---- plumbing ---------------------------------------------------------
    def _wrap(self, native) -> "Ciphertext":
        return Ciphertext(native, self._context, self._keys)

    def _eval_keys(self):
        keys = self._keys if self._keys is not None else self._context._default_keys
        if keys is None:
            raise ValueError("this operation needs evaluation keys: encrypt with ctx.encrypt(values, keys) or call "
                             "ctx.set_keys(keys)")
        return keys

    def copy(self) -> "Ciphertext":
        return self._wrap(self._native.clone())

    def to_bytes(self, *, mac_key: bytes | None = None) -> bytes:
        """Serialized form (``ctx.load`` reads it back); a GPU ciphertext is downloaded
        first. With ``mac_key``, authenticated (:func:`ringfire.io.authenticate`)."""
        return rf_io.wrap(_core.save_ciphertext(self._host()), mac_key)

    def to(self, device: str) -> "Ciphertext":
        """This ciphertext on ``device`` ('cpu', 'cuda', 'cuda:N'). Lazy: an upload
        happens at the first GPU operation that needs the data; ``.to("cpu")``
        of a GPU result is a download when its data is next read."""
        return self._moved(device)

    # ---- operators ------------------------------------------------------------
    def _check_other(self, other: "Ciphertext") -> None:
        if other._context is not self._context and other._context.fingerprint != self._context.fingerprint:
            raise ValueError("[ckks] operands come from different contexts")

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
        return self._wrap(ev.rescale(ev.relinearize(prod, relin)))

    def _mul_constant(self, value) -> "Ciphertext":
        ctx, ev, a = self._context, self._context._core_evaluator, self._native
        if isinstance(value, (numbers.Integral, np.integer)):
            return self._wrap(ev.multiply_integer(a, int(value)))
        if a.level == 0:
            raise ValueError("[ckks.multiply] out of levels: the ciphertext is at level 0")
        # Encode at the scale that lands the product on the next canonical scale.
        scale = ctx.landing_scale(a.level, a.scale)
        if np.ndim(value) == 0:
            v = complex(value)
            return self._wrap(ev.rescale(ev.multiply_scalar(a, v, scale)))
        pt = ctx._encode_native(np.asarray(value), a.level, scale)
        return self._wrap(ev.rescale(ev.multiply_plain(a, pt)))

    def _mul_plain(self, pt: Plaintext) -> "Ciphertext":
        ev, a, p = self._context._core_evaluator, self._native, pt._native
        if p.level > a.level:
            p = ev.mod_switch_plain(p, a.level)
        elif p.level < a.level:
            a = ev.mod_switch(a, p.level)
        out = ev.multiply_plain(a, p)
        return self._wrap(ev.rescale(out) if out.level > 0 else out)

    def _add_any(self, other, sign: int) -> "Ciphertext":
        ctx, ev = self._context, self._context._core_evaluator
        if isinstance(other, Ciphertext):
            a, b = self._aligned(other)
            return self._wrap(ev.add(a, b) if sign > 0 else ev.sub(a, b))
        a = self._native
        if isinstance(other, Plaintext):
            p = other._native
            if p.level != a.level:
                raise ValueError(f"[ckks.add] level mismatch: ciphertext {a.level} vs plaintext {p.level}; encode "
                                 "at the ciphertext's level")
            return self._wrap(ev.add_plain(a, p) if sign > 0 else ev.sub_plain(a, p))
        if np.ndim(other) == 0:
            return self._wrap(ev.add_scalar(a, complex(other) * sign))
        pt = ctx._encode_native(np.asarray(other) * sign, a.level, a.scale)
        return self._wrap(ev.add_plain(a, pt))

    def __add__(self, other):
        return self._add_any(other, +1) if _operand_ok(other) else NotImplemented

    __radd__ = __add__

    def __sub__(self, other):
        return self._add_any(other, -1) if _operand_ok(other) else NotImplemented

    def __rsub__(self, other):
        return (-self)._add_any(other, +1) if _operand_ok(other) else NotImplemented

    def __neg__(self):
        return self._wrap(self._context._core_evaluator.negate(self._native))

    def __mul__(self, other):
        if isinstance(other, Ciphertext):
            return self._mul_ct(other)
        if isinstance(other, Plaintext):
            return self._mul_plain(other)
        return self._mul_constant(other) if _operand_ok(other) else NotImplemented

    __rmul__ = __mul__

    def square(self) -> "Ciphertext":
        return self._mul_ct(self)

    def rotate(self, steps: int) -> "Ciphertext":
        """Slots move left by ``steps`` (negative: right), like ``np.roll(x, -steps)``."""
        galois = self._eval_keys().require_galois("ckks.rotate")
        return self._wrap(self._context._core_evaluator.rotate(self._native, int(steps), galois._on(self._device)))

    def conjugate(self) -> "Ciphertext":
        galois = self._eval_keys().require_galois("ckks.conjugate")
        return self._wrap(self._context._core_evaluator.conjugate(self._native, galois._on(self._device)))

    def bootstrap(self, **options) -> "Ciphertext":
        """This ciphertext refreshed to ``ctx.max_level`` (see :meth:`Evaluator.bootstrap`
        for the options: ``iterations=2`` for Meta-BTS, ``scale``, ``timings``)."""
        return self._context.evaluator(self._eval_keys()).bootstrap(self, **options)


def _close(a: float, b: float) -> bool:
    """The same scale, to the evaluator's tolerance."""
    return abs(a - b) <= _core.SCALE_TOLERANCE * max(a, b)


def _operand_ok(x) -> bool:
    return isinstance(x, (Ciphertext, Plaintext, numbers.Number, np.ndarray, list, tuple, np.number))
