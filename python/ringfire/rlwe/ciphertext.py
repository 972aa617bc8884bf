"""What every scheme's ciphertexts and plaintexts share: placement on a
device, level and size, logical shape (:mod:`ringfire.rlwe.shapes`), keys,
serialization, pickling, rotations and the NumPy-like operators. The schemes'
classes implement the arithmetic behind them."""

from __future__ import annotations

import numbers

import numpy as np

from .. import _core
from .. import io as rf_io
from .residency import Placed
from .shapes import as_values, broadcast, check_fits, is_plain_operand, length_code, plain_operand, shape_of


def check_steps(op: str, steps) -> int:
    """A rotation step count as an int; floats and booleans are refused rather than truncated."""
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral):
        raise TypeError(f"[{op}] rotation steps are an integer, got {steps!r}")
    return int(steps)


def _restore(context, data: bytes, device: str, zero_tail: bool = False):
    """Unpickling: the object from its bytes under ``context``, on ``device``."""
    out = context.load(data)
    out._zero_tail = zero_tail
    return out if out.device == device else out.to(device)


class _Shaped(Placed):
    """The logical shape: ``(n,)`` for n values, ``()`` for a scalar in every slot."""

    _zero_tail = False  # slots past the length hold zeros (then sums need no mask)

    @property
    def shape(self) -> tuple[int, ...]:
        return shape_of(self._res.any(), self._context.slots)

    ndim = property(lambda self: len(self.shape))

    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise TypeError("len() of an encrypted scalar (shape ()): it fills every slot")
        return shape[0]

    def __bool__(self) -> bool:  # an object, not a container: never falsy when empty-looking
        return True

    def _set_shape(self, shape: tuple, zero_tail: bool = False):
        self._res.any().length = length_code(shape)
        self._zero_tail = bool(zero_tail) and bool(shape) and shape[0] < self._context.slots
        return self

    def _length_text(self) -> str:
        shape = self.shape
        return "shape=()" if not shape else f"length={shape[0]}"

    def __reduce__(self):
        # Through the checksummed format; the context pickles its parameters only.
        return _restore, (self._context, self._host_bytes(), self._device, self._zero_tail)


class PlaintextBase(_Shaped):
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

    def _host_bytes(self) -> bytes:
        return _core.save_plaintext(self._host())

    def to_bytes(self, *, mac_key: bytes | None = None, compress=False) -> bytes:
        """Serialized form (``ctx.load`` reads it back); authenticated with ``mac_key``;
        ``compress=True`` (or a level 1-22) applies Zstandard (:func:`ringfire.io.compress`)."""
        return rf_io.wrap(self._host_bytes(), mac_key, rf_io.compress_level(compress))


class CiphertextBase(_Shaped):
    """An encrypted vector.

    ``shape`` is that of the values encrypted (``(n,)``, or ``()`` for a
    scalar in every slot); operands combine by NumPy's broadcasting rules and
    decryption returns that shape. ``level`` counts the primes left to divide
    by; ``size`` is 2 (3 right after an explicit multiply). ``device`` says
    where operations on it run: ``ct.to("cuda")`` moves it lazily (the upload
    happens at the first GPU operation), results stay on the GPU, and
    ``decrypt`` / ``.to("cpu")`` bring them back.
    """

    # NumPy arrays and scalars on the left defer to our reflected operators
    # (``np_array * ct``, ``W @ ct``) instead of looping over their elements.
    __array_priority__ = 1000
    __array_ufunc__ = None

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
        """A result with this ciphertext's shape (operators set theirs afterwards)."""
        native.length = self._res.any().length
        return type(self)(native, self._context, self._keys)

    def _eval_keys(self):
        keys = self._keys if self._keys is not None else self._context._default_keys
        if keys is None:
            raise ValueError("this operation needs evaluation keys: encrypt with ctx.encrypt(values, keys) or call "
                             "ctx.set_keys(keys)")
        return keys

    def copy(self):
        return self._wrap(self._native.clone())._set_shape(self.shape, self._zero_tail)

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def _host_bytes(self) -> bytes:
        return _core.save_ciphertext(self._host())

    def to_bytes(self, *, mac_key: bytes | None = None, compress=False) -> bytes:
        """Serialized form (``ctx.load`` reads it back, shape included); a GPU ciphertext
        is downloaded first. With ``mac_key``, authenticated (:func:`ringfire.io.authenticate`);
        ``compress=True`` (or a level 1-22) applies Zstandard first (:func:`ringfire.io.compress`):
        it pays for structured ciphertexts only, each residue already taking just its prime's bits."""
        return rf_io.wrap(self._host_bytes(), mac_key, rf_io.compress_level(compress))

    def to(self, device: str):
        """This ciphertext on ``device`` ('cpu', 'cuda', 'cuda:N'). Lazy: an upload
        happens at the first GPU operation that needs the data; ``.to("cpu")``
        of a GPU result is a download when its data is next read."""
        return self._moved(device)

    def _check_other(self, other) -> None:
        if other._context is not self._context and other._context.fingerprint != self._context.fingerprint:
            raise ValueError(f"[{self._context.scheme}] operands come from different contexts")

    # ---- operators: each scheme implements _add_any(other, sign), _mul_ct(other),
    # _mul_plain(plaintext), _mul_constant(number or vector), _square() ------------------
    def _add_any(self, other, sign: int):
        raise NotImplementedError

    def _mul_ct(self, other):
        raise NotImplementedError

    def _mul_plain(self, plaintext):
        raise NotImplementedError

    def _mul_constant(self, value):
        raise NotImplementedError

    def _square(self):
        raise NotImplementedError

    @staticmethod
    def _operand_ok(x) -> bool:
        return isinstance(x, (CiphertextBase, PlaintextBase)) or is_plain_operand(x)

    def _operand(self, other, op: str):
        """``(operand, result shape, operand's tail is zero)``: ciphertexts and plaintexts
        as they are, other values as a scalar or a 1-D NumPy vector (checked to fit)."""
        scheme = self._context.scheme
        if isinstance(other, (CiphertextBase, PlaintextBase)):
            self._check_other(other)
            return other, broadcast(f"{scheme}.{op}", self.shape, other.shape, True), other._zero_tail
        value, shape = plain_operand(f"{scheme}.{op}", other)
        check_fits(f"{scheme}.{op}", shape, self._context.slots)
        # A vector is encoded zero-padded: its tail is zero.
        return value, broadcast(f"{scheme}.{op}", self.shape, shape, False), len(shape) == 1 and shape != (1,)

    def _sum_with(self, other, sign: int, op: str):
        value, shape, tail = self._operand(other, op)
        return self._add_any(value, sign)._set_shape(shape, self._zero_tail and tail)

    def __add__(self, other):
        return self._sum_with(other, +1, "add") if self._operand_ok(other) else NotImplemented

    __radd__ = __add__

    def __sub__(self, other):
        return self._sum_with(other, -1, "sub") if self._operand_ok(other) else NotImplemented

    def __rsub__(self, other):
        if not self._operand_ok(other):
            return NotImplemented
        value, shape, tail = self._operand(other, "sub")
        return (-self)._add_any(value, +1)._set_shape(shape, self._zero_tail and tail)

    def __neg__(self):
        out = self._wrap(self._context._core_evaluator.negate(self._native))
        return out._set_shape(self.shape, self._zero_tail)

    def __mul__(self, other):
        if not self._operand_ok(other):
            return NotImplemented
        value, shape, tail = self._operand(other, "multiply")
        if isinstance(value, CiphertextBase):
            out = self._square() if value is self else self._mul_ct(value)
        elif isinstance(value, PlaintextBase):
            out = self._mul_plain(value)
        else:
            out = self._mul_constant(value)
        return out._set_shape(shape, self._zero_tail or tail)

    __rmul__ = __mul__

    def square(self):
        return self._square()._set_shape(self.shape, self._zero_tail)

    def __pow__(self, exponent):
        """Repeated squaring: ``ct ** k`` for an integer k >= 1 (depth ceil(log2 k))."""
        if isinstance(exponent, bool) or not isinstance(exponent, numbers.Integral) or exponent < 1:
            raise ValueError(f"[{self._context.scheme}.power] the exponent must be an integer >= 1, got {exponent!r}")
        result, base, k = None, self, int(exponent)
        while True:
            if k & 1:
                result = base if result is None else result * base
            k >>= 1
            if not k:
                return result
            base = base.square()

    def __truediv__(self, other):
        if isinstance(other, (CiphertextBase, PlaintextBase)):
            raise TypeError(f"[{self._context.scheme}.divide] division by an encrypted or encoded value is not an "
                            "operation of the scheme: multiply by the reciprocal, or approximate 1/x with a "
                            "polynomial (ckks: ct.polyval)")
        if not self._operand_ok(other):
            return NotImplemented
        return self * self._reciprocal(other)

    def _reciprocal(self, value):
        raise TypeError(f"[{self._context.scheme}.divide] this scheme computes on integers mod t: multiply by the "
                        "inverse mod t (pow(k, -1, ctx.plain_modulus)) when that is what you mean")

    def rotate(self, steps: int):
        """All ``ctx.slots`` slots move left by ``steps`` (negative: right), like
        ``np.roll(slots, -steps)`` (BGV/BFV: within each row of the 2 x N/2 slot
        matrix). The shape stays: a vector of length n shorter than the slots
        sees the padding come in at its end (for a cyclic rotation within n,
        encrypt the vector repeated: ``np.tile``)."""
        op = f"{self._context.scheme}.rotate"
        galois = self._eval_keys().require_galois(op)
        return self._wrap(self._context._core_evaluator.rotate(self._native, check_steps(op, steps),
                                                               galois._on(self._device)))

    # ---- reductions ---------------------------------------------------------------
    def sum(self, broadcast: bool = True):
        """The sum of the vector's values: shape () (every slot holds it; ``broadcast=True``,
        log2(slots) rotations) or shape (1,) (slot 0 only, log2(length) rotations).
        Needs the Galois keys of the power-of-two rotations (``rotations="power_of_two"``
        at keygen); slots past the length are masked first unless known to be zero
        (CKKS: one level)."""
        shape = self.shape
        if not shape:
            return self.copy()
        n = shape[0]
        ct = self if self._zero_tail or n == self._context.slots else self._masked(n)
        out = ct._rotate_and_add(n, broadcast)
        return out._set_shape(() if broadcast else (1,))

    def dot(self, other):
        """sum(self * other): ``other`` a ciphertext, plaintext or vector of the same
        length (shape () result; see :meth:`sum` for keys and levels)."""
        return (self * other).sum()

    def _masked(self, n: int):
        """This ciphertext with the slots past ``n`` set to zero (a 0/1 plaintext product)."""
        return self._mul_constant(np.ones(n, dtype=np.int64))._set_shape(self.shape, True)

    def _rotate_and_add(self, n: int, broadcast: bool):
        """Slot 0 (or every slot) holding the sum of slots [0, n), the tail being zero."""
        span = self._context.slots if broadcast else 1 << max(0, (n - 1).bit_length())
        out, step = self, 1
        while step < span:
            out = out + out.rotate(step)
            step <<= 1
        return out


def operand_ok(x) -> bool:
    """Values the operators take besides ciphertexts and plaintexts."""
    return is_plain_operand(x)
