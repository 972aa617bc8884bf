"""Products of two encrypted tensors under inter-axis packing (one ciphertext per sample):
attention's Q K^T and P V.

C = A B per sample, A of shape (..., m, k), B (..., k, n), C (..., m, n), each operand one
ciphertext in its own layout (:mod:`.layouts`: a Transpose or a Slice before the product only
moved which slot holds which element). C is a sum of k element-wise products of ciphertexts,

    C[..., i, j] = sum_t A[..., i, p_t(i, j)] * B[..., p_t(i, j), j],

where p_t(i, j) takes each inner index once as t runs over 0..k-1. Each factor is a linear map
of its operand onto C's layout: a BSGS transform of its nonzero diagonals, like a linear layer's.

* **Square** (m = k = n; Jiang, Kim, Lauter, Song, "Secure outsourced matrix computation and
  application to neural networks", CCS 2018): p_t(i, j) = (i + j + t) mod k. A moves once to
  A*[i, j] = A[i, (i + j) mod k] and B to B*[i, j] = B[(i + j) mod k, j], both on C's layout;
  factor t is then A* shifted t columns and B* shifted t rows. Where C's rows and columns sit at
  even strides (a C-order layout, or the first operand's layout after the heads were split off
  it) a shift is two diagonals, so the k factors cost about 4 k rotations and the two moves
  are the only wide transforms. Three levels: the moves, the shifts, the products.
* **Otherwise**: p_t(i, j) = (j + t) mod k, each factor straight from its operand (two levels,
  wider transforms).

The factors carry weight 1 on C's slots only, so whatever other slots of an operand hold
(elements a Slice left behind) never reaches the result.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .layouts import diagonals_of


@dataclass(frozen=True, eq=False)
class SlotMap:
    """A transform that reads slot ``sources[r]`` into slot ``targets[r]`` with weight 1
    (``name`` keys its encoded diagonals in the runner's cache)."""

    name: str
    targets: np.ndarray
    sources: np.ndarray

    def offsets(self, period: int) -> np.ndarray:
        return np.unique((self.sources - self.targets) % period)

    def diagonals(self, period: int) -> dict[int, np.ndarray]:
        """diag_d[r] = 1 where slot r reads slot (r + d) mod ``period``."""
        return diagonals_of(self.targets, self.sources, 1.0, period)


@dataclass(frozen=True, eq=False)
class ProductPlan:
    """``moves``: the once-per-product transforms of A and B (square shapes), else empty;
    ``factors``: per inner index t, the transforms whose outputs are multiplied."""

    moves: tuple[SlotMap, ...]
    factors: tuple[tuple[SlotMap, SlotMap], ...]

    @property
    def levels(self) -> int:
        return 3 if self.moves else 2

    def maps(self) -> list[SlotMap]:
        return list(self.moves) + [m for pair in self.factors for m in pair]


def product_plan(name: str, a_slots: np.ndarray, a_shape, b_slots: np.ndarray, b_shape,
                 c_slots: np.ndarray) -> ProductPlan:
    """The transforms that compute ``name`` = A B (per-sample shapes ``a_shape``, ``b_shape``)
    from operands laid out in ``a_slots``/``b_slots`` into ``c_slots`` (C-order elements)."""
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    lead = int(np.prod(a_shape[:-2], dtype=np.int64))
    m, k = a_shape[-2:]
    n = b_shape[-1]
    a = np.asarray(a_slots).reshape(lead, m, k)
    b = np.asarray(b_slots).reshape(lead, k, n)
    c = np.asarray(c_slots).reshape(lead, m, n)
    h, i, j = np.indices((lead, m, n))
    target = c.reshape(-1)

    def slot_map(label, sources):
        return SlotMap(f"{name}/{label}", target, np.ascontiguousarray(sources).reshape(-1))

    if m == k == n:
        moves = (slot_map("sigma", a[h, i, (i + j) % k]), slot_map("tau", b[h, (i + j) % k, j]))
        factors = tuple((slot_map(f"a{t}", c[h, i, (j + t) % n]), slot_map(f"b{t}", c[h, (i + t) % m, j]))
                        for t in range(k))
        return ProductPlan(moves, factors)
    factors = tuple((slot_map(f"a{t}", a[h, i, (j + t) % k]), slot_map(f"b{t}", b[h, (j + t) % k, j]))
                    for t in range(k))
    return ProductPlan((), factors)
