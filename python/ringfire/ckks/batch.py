"""Packing a batch of inputs into ciphertexts (what ``ctx.encrypt_batch`` does,
and what ``ringfire.nn`` computes on).

``packing="batch"`` (nGraph-HE / seed 001): one ciphertext per element of a
sample, the batch (up to N/2 inputs) in its slots. ``packing="inter"``: one
ciphertext per sample, its features tiled over the slots with a power-of-two
period (rotations reduce within a period): ``encrypt_batch`` puts them in C-order,
and a model's output says where each of its elements sits (``element_slots``)."""

from __future__ import annotations

import numpy as np


class EncryptedTensor:
    """An encrypted batch.

    ``packing="batch"``: ``cts`` is an object array of the per-sample shape, one
    ciphertext per element, the batch in the slots. ``packing="inter"``: ``cts``
    holds one ciphertext per sample, its features tiled over the slots with
    ``period``; ``sample_shape`` is the per-sample shape, and ``element_slots`` (None:
    the first slots, in C-order) says which slot holds each element.
    """

    def __init__(self, cts: np.ndarray, batch: int, ctx, packing: str = "batch", period: int = 0,
                 sample_shape=None, element_slots=None):
        self.cts, self.batch, self.ctx = cts, int(batch), ctx
        self.packing, self.period = packing, int(period)
        self.element_slots = None if element_slots is None else np.array(element_slots, dtype=np.int64)
        self.sample_shape = tuple(cts.shape) if sample_shape is None else tuple(sample_shape)

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.batch,) + self.sample_shape

    @property
    def ciphertexts(self) -> int:
        return int(sum(c is not None and not isinstance(c, float) for c in self.cts.flat))

    def nbytes(self) -> int:
        n = self.ctx.poly_degree
        return int(sum(c.size * (c.level + 1) * n * 8 for c in self.cts.flat
                       if c is not None and not isinstance(c, float)))

    def __repr__(self) -> str:
        return f"EncryptedTensor(shape={self.shape}, ciphertexts={self.ciphertexts})"


def encrypt_batch(ctx, x, keys, packing: str = "batch", level: int | None = None) -> EncryptedTensor:
    x = np.asarray(x, dtype=np.float64)
    if packing == "inter":
        flat = x.reshape(x.shape[0], -1)
        period = 1 << max(1, int(np.ceil(np.log2(flat.shape[1]))))
        if period > ctx.slots:
            raise ValueError(f"[ckks.encrypt_batch] {flat.shape[1]} features do not fit {ctx.slots} slots")
        cts = np.empty(flat.shape[0], dtype=object)
        for i, row in enumerate(flat):
            cts[i] = ctx.encrypt(tile(row, period, ctx.slots), keys, level)
        return EncryptedTensor(cts, x.shape[0], ctx, "inter", period, x.shape[1:])
    if packing != "batch":
        raise ValueError(f"[ckks.encrypt_batch] packing must be 'batch' or 'inter', got {packing!r}")
    if x.ndim < 1 or x.shape[0] > ctx.slots:
        raise ValueError(f"[ckks.encrypt_batch] the batch axis (first) must hold 1..{ctx.slots} inputs, "
                         f"got shape {x.shape}")
    per_sample = x.reshape(x.shape[0], -1)
    cts = np.empty(per_sample.shape[1], dtype=object)
    for i in range(per_sample.shape[1]):
        cts[i] = ctx.encrypt(per_sample[:, i], keys, level)
    return EncryptedTensor(cts.reshape(x.shape[1:]), x.shape[0], ctx)


def tile(vec: np.ndarray, period: int, slots: int) -> np.ndarray:
    """``vec`` zero-padded to ``period`` and repeated over the slots."""
    padded = np.zeros(period)
    padded[:vec.size] = vec
    return np.tile(padded, slots // period)


def decrypt_batch(ctx, tensor: EncryptedTensor, secret_key, **decrypt_options) -> np.ndarray:
    """``decrypt_options`` go to every ``ctx.decrypt`` (e.g. ``noise_flooding=True``)."""
    if tensor.packing == "inter":
        where = tensor.element_slots
        if where is None:
            where = np.arange(int(np.prod(tensor.sample_shape)))
        rows = [ctx.decrypt(ct, secret_key, **decrypt_options)[where] for ct in tensor.cts]
        return np.stack(rows).reshape((tensor.batch,) + tensor.sample_shape)
    out = np.zeros(tuple(tensor.cts.shape) + (tensor.batch,))
    for idx, ct in np.ndenumerate(tensor.cts):
        if isinstance(ct, float):
            out[idx] = ct  # known constant (e.g. a bias over padding)
        elif ct is not None:
            out[idx] = ctx.decrypt(ct, secret_key, **decrypt_options)[:tensor.batch]
    return np.moveaxis(out, -1, 0)
