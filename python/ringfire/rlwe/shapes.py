"""Logical shapes of encrypted vectors: what NumPy would make of the values.

A ciphertext holds ``slots`` numbers, but the user encrypted ``n`` of them:
its shape is ``(n,)``, and decryption returns ``n`` values. An encrypted
scalar (every slot holds one value) has shape ``()`` and broadcasts. The
length travels in the native metadata (``Metadata::length``; serialized), so
a loaded ciphertext keeps it.

Operands combine by NumPy's broadcasting rules, with one restriction: an
*encrypted* vector of length 1 holds its value in slot 0 only, so it cannot
stretch over a longer vector (a plain length-1 vector can: it is a scalar).
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import _core

BROADCAST = _core.BROADCAST_LENGTH


def shape_of(native, slots: int) -> tuple[int, ...]:
    """The logical shape recorded in a native ciphertext or plaintext."""
    n = native.length
    if n == BROADCAST:
        return ()
    return (slots,) if n == 0 else (int(n),)


def length_code(shape: tuple[int, ...]) -> int:
    """The metadata's length for a logical shape."""
    return BROADCAST if shape == () else int(shape[0])


def as_values(x):
    """NumPy's view of an operand: PyTorch tensors (on any device, with or
    without gradients) are detached and copied to the host first."""
    if hasattr(x, "detach") and hasattr(x, "cpu") and hasattr(x, "numpy"):
        x = x.detach().cpu().numpy()
    return np.asarray(x)


def is_plain_operand(x) -> bool:
    """Values the operators take besides ciphertexts and plaintexts: numbers,
    sequences, NumPy arrays and anything NumPy can read (PyTorch tensors)."""
    return isinstance(x, (numbers.Number, np.ndarray, list, tuple, np.generic)) or hasattr(x, "__array__")


def plain_operand(op: str, x):
    """``(value, shape)``: a scalar as a Python/NumPy number with shape (), a
    vector as a 1-D array with its shape; a length-1 vector becomes a scalar
    with shape (1,) (it broadcasts, as in NumPy)."""
    if isinstance(x, numbers.Number) and not isinstance(x, bool):
        return x, ()
    arr = as_values(x)
    if arr.dtype.kind not in "biufcO":  # object: Python ints of any size (BGV/BFV)
        raise TypeError(f"[{op}] operands must be numbers, got dtype {arr.dtype}")
    if arr.ndim == 0:
        return arr[()], ()
    if arr.ndim > 1:
        raise ValueError(f"[{op}] an encrypted vector combines with scalars and 1-D vectors, got shape {arr.shape}"
                         " (a matrix product is ct @ matrix)")
    if arr.size == 1:
        return arr[0], (1,)
    return arr, arr.shape


def broadcast(op: str, a: tuple, b: tuple, b_encrypted: bool) -> tuple[int, ...]:
    """The result shape of an encrypted ``a`` combined with ``b`` (encrypted or not)."""
    if a == b:
        return a
    try:
        out = tuple(np.broadcast_shapes(a, b))
    except ValueError:
        raise ValueError(f"[{op}] operands could not be broadcast together with shapes {a} and {b}") from None
    for shape, encrypted in ((a, True), (b, b_encrypted)):
        if encrypted and shape == (1,) and out != (1,):
            raise ValueError(f"[{op}] an encrypted vector of shape (1,) cannot broadcast to {out}: its value sits in "
                             "slot 0 only; encrypt a scalar (shape (), every slot) instead")
    return out


def check_fits(op: str, shape: tuple, slots: int) -> None:
    if shape and shape[0] > slots:
        raise ValueError(f"[{op}] got {shape[0]} values but there are only {slots} slots")
