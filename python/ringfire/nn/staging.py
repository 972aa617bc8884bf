"""Memory a run holds outside the pool for a while: the plan's ``staging_bytes``.

The pool holds every ciphertext, plaintext and key; beside it, NumPy and C++ containers
hold what a layer is built from, until it is built. The planner counts the largest such
moment of a run (measured with ``tracemalloc`` and the RSS; BENCHMARKS.md):

- Building a linear layer's map (:mod:`.linear_maps`) peaks at about 128 bytes per term
  (a convolution's index grids; 4.3 M terms of a 3x3 convolution, 32 to 64 channels at
  16x16: 128.5). The map kept is 24 bytes per term.
- One ciphertext per sample: the diagonals are cut from the map (sorting its terms) into
  NumPy, then copied into C++ for encoding while the NumPy ones live. With the map, three
  times the NumPy diagonals cover it: an inter-packed MobileNetV3-Small image, whose
  largest layer builds 0.12 GiB of them, raised the RSS beyond the pool by 0.35 GiB.
- An in-process key holder (``LocalClient``) holds a client-aided tensor about three times
  in float64 for every slot (decrypted, placed, answered). A key holder elsewhere holds it
  there instead, but the planner cannot tell, so it counts it.
"""

from __future__ import annotations

MAP_BUILD_BYTES_PER_TERM = 128
DIAGONAL_COPIES = 3
KEY_HOLDER_COPIES = 3
VALUE_BYTES = 8  # a float64 per slot


def linear_layer(terms: int, diagonals: int = 0, period: int = 0) -> int:
    """Bytes beside the pool while a linear layer of ``terms`` multiply-adds is built, and,
    with one ciphertext per sample, its ``diagonals`` of ``period`` values are cut and encoded."""
    return max(MAP_BUILD_BYTES_PER_TERM * terms, DIAGONAL_COPIES * diagonals * period * VALUE_BYTES)


def key_holder(elements: int, slots: int) -> int:
    """Bytes an in-process key holder holds while it answers a round of ``elements``
    ciphertexts of ``slots`` values each."""
    return KEY_HOLDER_COPIES * elements * slots * VALUE_BYTES
