"""Encrypted booleans and small integers (LWE ciphertexts: 32-bit words modulo q = 2N, or
64-bit words modulo 2^64 for the torus sets)."""

from __future__ import annotations

import numpy as np


class Ciphertext:
    """``count`` LWE ciphertexts (``data``: uint32, shape ``(count, n + 1)``, or
    uint64, shape ``(count, N + 1)`` for the 64-bit torus sets; the vector ``a``
    then ``b``) holding an array of ``shape``: booleans when
    ``bits`` is None, else integers in [0, 2^bits) with a padding bit.

    Boolean operators bootstrap (``&``, ``|``, ``^``; ``~`` is free).
    Integers add and subtract without a bootstrap (mod 2^(bits+1): keep the
    result below 2^bits before a lookup table) and multiply by small ints;
    ``>>`` drops low bits with bootstraps (torus sets).

    ``variance`` is the error's variance at q as the operations predict it
    (a fresh encryption: sigma^2; a bootstrap's output, and anything loaded
    from bytes: the noise model's; sums and multiples: accordingly); a table
    applied to an input whose error may cross a slot's edge warns.
    """

    __array_priority__ = 1000  # numpy defers to these operators

    def __init__(self, context, data: np.ndarray, shape: tuple, bits: int | None, variance: float | None = None):
        self.context, self.data, self.shape, self.bits = context, data, tuple(shape), bits
        self.variance = context.params.bootstrap_variance() if variance is None else float(variance)
        # The evaluation keys it was made under (None: unknown); decrypt() refuses a secret key of others.
        self.key_id = context.key_id

    def __bool__(self):
        raise TypeError("an encrypted boolean has no truth value here: decrypt it, or use ctx.mux to select")

    def __len__(self) -> int:
        return self.shape[0] if self.shape else 1

    @property
    def size(self) -> int:
        return self.data.shape[0]

    def __repr__(self) -> str:
        kind = "bool" if self.bits is None else f"uint{self.bits}"
        return f"tfhe.Ciphertext({kind}, shape={self.shape}, {self.context.params.name})"

    def __reduce__(self):
        raise TypeError("tfhe ciphertexts are not picklable: send ct.to_bytes() and read it with ctx.load(...)")

    def to_bytes(self, *, mac_key: bytes | None = None, compress: int | None = None) -> bytes:
        """The ciphertexts in a checksummed envelope (``Context.load`` reads
        them), authenticated with ``mac_key``, zstd-compressed at level ``compress``."""
        encoding, bits = (0, 0) if self.bits is None else (1, self.bits)
        return self.context._save(self.data, self.shape, encoding, bits, mac_key, compress, self.key_id)

    def reshape(self, *shape) -> "Ciphertext":
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape
        if int(np.prod(shape)) != self.size:
            raise ValueError(f"cannot reshape {self.shape} to {shape}")
        return Ciphertext(self.context, self.data, tuple(shape), self.bits, self.variance)

    def __getitem__(self, index) -> "Ciphertext":
        picked = np.arange(self.size).reshape(self.shape)[index]
        return Ciphertext(self.context, self.data[np.ravel(picked)], np.shape(picked), self.bits, self.variance)

    # ---- booleans ------------------------------------------------------------------

    def __and__(self, other): return self.context.and_(self, self._lift(other))
    def __rand__(self, other): return self.context.and_(self._lift(other), self)
    def __or__(self, other): return self.context.or_(self, self._lift(other))
    def __ror__(self, other): return self.context.or_(self._lift(other), self)
    def __xor__(self, other): return self.context.xor(self, self._lift(other))
    def __rxor__(self, other): return self.context.xor(self._lift(other), self)
    def __invert__(self): return self.context.not_(self)

    # ---- integers ------------------------------------------------------------------

    def __add__(self, other): return self._linear(other, 1)
    def __radd__(self, other): return self._linear(other, 1)
    def __sub__(self, other): return self._linear(other, -1)
    def __rsub__(self, other): return (-self)._linear(other, 1)

    def __neg__(self):
        self._need_int("-")
        return Ciphertext(self.context, self.context._words(np.uint64(0) - self.data.astype(np.uint64)), self.shape,
                          self.bits, self.variance)

    def __mul__(self, k):
        self._need_int("*")
        if not isinstance(k, (int, np.integer)):
            raise TypeError("integer ciphertexts multiply by Python ints only (products of two ciphertexts need a table)")
        words = self.context._words(self.data.astype(np.uint64) * np.uint64(int(k) % (1 << 64)))
        return Ciphertext(self.context, words, self.shape, self.bits, self.variance * int(k) ** 2)

    __rmul__ = __mul__

    def __rshift__(self, shift):
        """floor(x / 2^shift), a narrower integer (torus sets; ``Context.shift_right``)."""
        self._need_int(">>")
        return self.context.shift_right(self, shift)

    def _linear(self, other, sign: int) -> "Ciphertext":
        self._need_int("+" if sign > 0 else "-")
        variance = self.variance
        data = self.data.astype(np.uint64)  # wrapping arithmetic, reduced by the context
        if isinstance(other, Ciphertext):
            if other.context is not self.context:
                raise ValueError(f"operands belong to different tfhe contexts ({self.context.params.name} and "
                                 f"{other.context.params.name}; each context holds its own keys)")
            if other.bits != self.bits or other.shape != self.shape:
                raise ValueError(f"operands differ: {self!r} and {other!r} (the same width and shape are needed)")
            data = data + other.data.astype(np.uint64) if sign > 0 else data - other.data.astype(np.uint64)
            variance += other.variance
        else:
            value = np.asarray(other)
            if value.dtype == bool or not np.issubdtype(value.dtype, np.integer):
                raise TypeError(f"integer ciphertexts add integers; got {value.dtype}")
            const = np.broadcast_to(value.astype(np.int64), self.shape).reshape(-1)
            step = np.uint64(self.context._word_modulus // (2 << self.bits))
            data[:, -1] += (sign * const).astype(np.uint64) * step
        return Ciphertext(self.context, self.context._words(data), self.shape, self.bits, variance)

    def _need_int(self, op: str) -> None:
        if self.bits is None:
            raise TypeError(f"'{op}' is for integer ciphertexts; booleans use &, |, ^, ~")

    def _lift(self, other) -> "Ciphertext":
        if isinstance(other, Ciphertext):
            return other
        return self.context.trivial(np.broadcast_to(np.asarray(other), self.shape), bits=self.bits)
