"""What every scheme's ciphertexts and plaintexts share: placement on a
device, level and size, keys, serialization and rotations. The schemes'
classes add their operators."""

from __future__ import annotations

import numbers

import numpy as np

from .. import _core
from .. import io as rf_io
from .residency import Placed


def check_steps(op: str, steps) -> int:
    """A rotation step count as an int; floats and booleans are refused rather than truncated."""
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral):
        raise TypeError(f"[{op}] rotation steps are an integer, got {steps!r}")
    return int(steps)


class PlaintextBase(Placed):
    """An encoded vector (evaluation form) at a level."""

    def __init__(self, native, context, device=None):
        self._context = context
        self._place(native, device)

    def to(self, device: str):
        """This plaintext on ``device``; the copy is made at the first operation that needs it."""
        return self._moved(device)

    # Metadata is the same on every copy: read it without moving data.
    level = property(lambda self: self._res.any().level)
    context = property(lambda self: self._context)

    def to_bytes(self, *, mac_key: bytes | None = None) -> bytes:
        """Serialized form (``ctx.load`` reads it back); authenticated with ``mac_key``."""
        return rf_io.wrap(_core.save_plaintext(self._host()), mac_key)


class CiphertextBase(Placed):
    """An encrypted vector.

    ``level`` counts the primes left to divide by; ``size`` is 2 (3 right
    after an explicit multiply). ``device`` says where operations on it run:
    ``ct.to("cuda")`` moves it lazily (the upload happens at the first GPU
    operation), results stay on the GPU, and ``decrypt`` / ``.to("cpu")``
    bring them back.
    """

    __array_priority__ = 1000  # make numpy defer to our reflected operators

    def __init__(self, native, context, keys=None, device=None):
        self._context = context
        self._keys = keys
        self._place(native, device)

    # Metadata is the same on every copy: read it without moving data.
    level = property(lambda self: self._res.any().level)
    size = property(lambda self: self._res.any().size)
    context = property(lambda self: self._context)
    noise_bits = property(lambda self: self._res.any().noise_bits,
                          doc="log2 of the estimated norm of the noise (rlwe noise conventions).")
    keys = property(lambda self: self._keys,
                    doc="The evaluation keys this ciphertext computes with (None: its context's default keys).")

    def _where(self) -> str:
        return "" if self._device == "cpu" else f", device={self._device!r}"

    # ---- plumbing ---------------------------------------------------------
    def _wrap(self, native):
        return type(self)(native, self._context, self._keys)

    def _eval_keys(self):
        keys = self._keys if self._keys is not None else self._context._default_keys
        if keys is None:
            raise ValueError("this operation needs evaluation keys: encrypt with ctx.encrypt(values, keys) or call "
                             "ctx.set_keys(keys)")
        return keys

    def copy(self):
        return self._wrap(self._native.clone())

    def to_bytes(self, *, mac_key: bytes | None = None) -> bytes:
        """Serialized form (``ctx.load`` reads it back); a GPU ciphertext is downloaded
        first. With ``mac_key``, authenticated (:func:`ringfire.io.authenticate`)."""
        return rf_io.wrap(_core.save_ciphertext(self._host()), mac_key)

    def to(self, device: str):
        """This ciphertext on ``device`` ('cpu', 'cuda', 'cuda:N'). Lazy: an upload
        happens at the first GPU operation that needs the data; ``.to("cpu")``
        of a GPU result is a download when its data is next read."""
        return self._moved(device)

    def _check_other(self, other) -> None:
        if other._context is not self._context and other._context.fingerprint != self._context.fingerprint:
            raise ValueError(f"[{self._context.scheme}] operands come from different contexts")

    # ---- operators: each scheme implements _add_any(other, sign), _mul_ct(other),
    # _mul_plain(plaintext) and _mul_constant(number or vector) -------------------------
    def _add_any(self, other, sign: int):
        raise NotImplementedError

    def _mul_ct(self, other):
        raise NotImplementedError

    def _mul_plain(self, plaintext):
        raise NotImplementedError

    def _mul_constant(self, value):
        raise NotImplementedError

    @staticmethod
    def _operand_ok(x) -> bool:
        return isinstance(x, (CiphertextBase, PlaintextBase)) or operand_ok(x)

    def __add__(self, other):
        return self._add_any(other, +1) if self._operand_ok(other) else NotImplemented

    __radd__ = __add__

    def __sub__(self, other):
        return self._add_any(other, -1) if self._operand_ok(other) else NotImplemented

    def __rsub__(self, other):
        return (-self)._add_any(other, +1) if self._operand_ok(other) else NotImplemented

    def __neg__(self):
        return self._wrap(self._context._core_evaluator.negate(self._native))

    def __mul__(self, other):
        if isinstance(other, CiphertextBase):
            return self._mul_ct(other)
        if isinstance(other, PlaintextBase):
            return self._mul_plain(other)
        return self._mul_constant(other) if self._operand_ok(other) else NotImplemented

    __rmul__ = __mul__

    def rotate(self, steps: int):
        """Slots move left by ``steps`` (negative: right), like ``np.roll(x, -steps)``
        (BGV/BFV: within each row of the 2 x N/2 slot matrix)."""
        op = f"{self._context.scheme}.rotate"
        galois = self._eval_keys().require_galois(op)
        return self._wrap(self._context._core_evaluator.rotate(self._native, check_steps(op, steps),
                                                               galois._on(self._device)))


def operand_ok(x) -> bool:
    """Values the operators take besides ciphertexts and plaintexts."""
    return isinstance(x, (numbers.Number, np.ndarray, list, tuple, np.number))
