"""What crosses between the driver and the workers: ciphertexts as their checksummed bytes
with what the bytes do not carry (the magnitude bound, the zero tail), and a layer's inputs
as a sequence the worker decodes one element at a time, only those its items read."""

from __future__ import annotations

import numpy as np

from ..ckks import magnitude
from ..rlwe.ciphertext import CiphertextBase

_CT = "ringfire.ct"


def encode(value):
    """Ciphertexts (alone, in tuples, lists or object arrays) as plain data; anything else as is."""
    if isinstance(value, CiphertextBase):
        return (_CT, value.to_bytes(), getattr(value, "bound", None), bool(value._zero_tail))
    if isinstance(value, tuple):
        return tuple(encode(v) for v in value)
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, np.ndarray) and value.dtype == object:
        return [encode(v) for v in value.reshape(-1)]
    return value


def decode(value, ctx, keys):
    """The inverse of :func:`encode` under ``ctx``; ciphertexts compute with ``keys``."""
    if isinstance(value, tuple) and len(value) == 4 and isinstance(value[0], str) and value[0] == _CT:
        ct = ctx.load(value[1])
        ct._keys = keys
        ct._zero_tail = value[3]
        return magnitude.restore(ct, value[2]) if hasattr(ct, "bound") else ct
    if isinstance(value, tuple):
        return tuple(decode(v, ctx, keys) for v in value)
    if isinstance(value, list):
        return [decode(v, ctx, keys) for v in value]
    return value


def encode_shared(shared):
    """A tensor (or a tuple of tensors) the items of a call index: flat lists of encoded elements."""
    if isinstance(shared, tuple):
        return ("tuple", [encode_shared(s) for s in shared])
    return ("flat", [encode(v) for v in np.asarray(shared, dtype=object).reshape(-1)])


class LazyElements:
    """A flat tensor whose elements are decoded when first read (a convolution's output reads
    a few of its inputs)."""

    def __init__(self, encoded: list, ctx, keys):
        self._encoded, self._ctx, self._keys = encoded, ctx, keys
        self._decoded = {}

    def __len__(self) -> int:
        return len(self._encoded)

    def __getitem__(self, index):
        index = int(index)
        if index not in self._decoded:
            self._decoded[index] = decode(self._encoded[index], self._ctx, self._keys)
        return self._decoded[index]


def decode_shared(encoded, ctx, keys):
    if encoded is None:
        return None
    kind, parts = encoded
    if kind == "tuple":
        return tuple(decode_shared(p, ctx, keys) for p in parts)
    return LazyElements(parts, ctx, keys)
