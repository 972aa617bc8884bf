"""Batch-axis packing (nGraph-HE / seed 001): one ciphertext per tensor element,
the batch (up to N/2 inputs) in its slots."""

from __future__ import annotations

import numpy as np


class EncryptedTensor:
    """An encrypted batch: ``cts`` is an object array of the per-sample shape."""

    def __init__(self, cts: np.ndarray, batch: int, ctx):
        self.cts, self.batch, self.ctx = cts, int(batch), ctx

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.batch,) + tuple(self.cts.shape)

    @property
    def ciphertexts(self) -> int:
        return int(sum(c is not None for c in self.cts.flat))

    def nbytes(self) -> int:
        n = self.ctx.poly_degree
        return int(sum(c.size * (c.level + 1) * n * 8 for c in self.cts.flat if c is not None))

    def __repr__(self) -> str:
        return f"EncryptedTensor(shape={self.shape}, ciphertexts={self.ciphertexts})"


def encrypt_batch(ctx, x, keys) -> EncryptedTensor:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim < 1 or x.shape[0] > ctx.slots:
        raise ValueError(f"[nn.encrypt_batch] the batch axis (first) must hold 1..{ctx.slots} inputs, "
                         f"got shape {x.shape}")
    per_sample = x.reshape(x.shape[0], -1)
    cts = np.empty(per_sample.shape[1], dtype=object)
    for i in range(per_sample.shape[1]):
        cts[i] = ctx.encrypt(per_sample[:, i], keys)
    return EncryptedTensor(cts.reshape(x.shape[1:]), x.shape[0], ctx)


def decrypt_batch(ctx, tensor: EncryptedTensor, secret_key) -> np.ndarray:
    out = np.zeros(tuple(tensor.cts.shape) + (tensor.batch,))
    for idx, ct in np.ndenumerate(tensor.cts):
        if ct is not None:
            out[idx] = ctx.decrypt(ct, secret_key)[:tensor.batch]
    return np.moveaxis(out, -1, 0)
