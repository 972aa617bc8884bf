"""``x @ W``: an encrypted vector of length n times a plain n x m matrix.

The product is a linear transform over all the slots whose nonzero diagonals
are k = -(m-1) .. n-1 (diag_k[j] = W[j + k, j] for j < m, 0 <= j + k < n):
output slot j reads input slots j + k only inside [0, n), so whatever the
slots past the vector's length hold never reaches the result, and the slots
past m come out zero. With the Galois keys of :func:`matmul_rotations` it is
one baby-step/giant-step transform (hoisted baby rotations); without them
each diagonal's rotation is composed from the keys there are (correct, slower).
"""

from __future__ import annotations

import numpy as np

from .. import _core
from .circuits import LinearTransform, bsgs_steps


def _indices(n: int, m: int, slots: int) -> list[int]:
    return sorted({k % slots for k in range(-(m - 1), n)})


def _check_shape(op: str, shape, slots: int) -> tuple[int, int]:
    if len(shape) != 2:
        raise ValueError(f"[{op}] the matrix must be 2-D (n, m), got shape {tuple(shape)}")
    n, m = (int(v) for v in shape)
    if not (1 <= n <= slots and 1 <= m <= slots):
        raise ValueError(f"[{op}] the matrix shape {tuple(shape)} must fit the {slots} slots on both sides")
    return n, m


def matmul_rotations(ctx, shape) -> list[int]:
    """The rotation steps whose Galois keys make ``ct @ W`` one fast transform, for
    a matrix of ``shape`` (n, m): pass them to ``ctx.keygen(rotations=...)``."""
    n, m = _check_shape("ckks.matmul_rotations", shape, ctx.slots)
    indices = _indices(n, m, ctx.slots)
    babies, giants = bsgs_steps(indices, _core.LinearTransform.best_baby_steps(indices, ctx.slots))
    return sorted(babies | giants)


def _diagonals(matrix: np.ndarray, slots: int) -> dict[int, np.ndarray]:
    n, m = matrix.shape
    out = {}
    for k in range(-(m - 1), n):
        j = np.arange(max(0, -k), min(m, n - k))  # output slots j with 0 <= j + k < n
        diagonal = np.zeros(slots, dtype=complex)
        diagonal[j] = matrix[j + k, j]
        if np.any(diagonal):
            out[k % slots] = diagonal
    return out


def vector_matrix_product(ct, matrix: np.ndarray):
    ctx = ct.context
    op = "ckks.matmul"
    if ct.shape == ():
        raise ValueError(f"[{op}] an encrypted scalar (shape ()) has no vector to multiply: encrypt a vector")
    if matrix.dtype.kind not in "biufc":
        raise TypeError(f"[{op}] the matrix must hold numbers, got dtype {matrix.dtype}")
    if matrix.ndim == 1:
        raise ValueError(f"[{op}] the matrix is 1-D (shape {matrix.shape}): for a dot product use ct.dot(v)")
    n, m = _check_shape(op, matrix.shape, ctx.slots)
    if ct.shape != (n,):
        raise ValueError(f"[{op}] shapes {ct.shape} and {matrix.shape} not aligned: {ct.shape[0]} (dim 0) != {n} "
                         "(dim 0 of the matrix)")
    if ct.level == 0:
        raise ValueError(f"[{op}] out of levels: the ciphertext is at level 0")
    diagonals = _diagonals(np.asarray(matrix, dtype=complex), ctx.slots)
    if not diagonals:  # the zero matrix
        return (ct * 0)._set_shape((m,), True)
    keys = ct._eval_keys()
    galois = keys.require_galois(op)
    scale = ctx.landing_scale(ct.level, ct.scale)  # the result lands on the next level's canonical scale
    have = set(galois.rotations())
    if set(matmul_rotations(ctx, matrix.shape)) <= have:
        lt = LinearTransform(ctx, diagonals, level=ct.level, scale=scale)
        out = ctx.evaluator(keys).linear_transform(ct, lt)
    else:
        out = _composed(ct, diagonals, scale)
    return out._set_shape((m,), True)


def _composed(ct, diagonals: dict[int, np.ndarray], scale: float):
    """sum_k diag_k * rot_k(x), each rotation composed from the keys there are."""
    ctx, ev = ct.context, ct.context._core_evaluator
    acc = None
    for k, diagonal in diagonals.items():
        rotated = ct._native if k == 0 else ct.rotate(k)._native
        term = ev.multiply_plain(rotated, ctx._encode_native(diagonal, ct.level, scale))
        acc = term if acc is None else ev.add(acc, term)
    return ct._wrap(ev.rescale(acc))
