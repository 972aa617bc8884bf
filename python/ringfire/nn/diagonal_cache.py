"""The encoded diagonals an inter-packed model keeps between samples, bounded in bytes.

One ciphertext per sample runs every linear layer as a BSGS transform of encoded diagonals;
encoding them costs about as much as the rest of a sample, so by default they are all kept
for the next sample. A model's diagonals can outgrow the machine (ResNet-18 at 32x32 encodes
25 GiB of them, EfficientNet-B0 116 GiB), and then a bound decides: the least recently used
transforms leave once the cached bytes pass it, and a sample encodes again what is gone.
A bound of 0 keeps nothing: each transform is encoded where it is used and freed after.
"""

from __future__ import annotations

import threading
from collections import OrderedDict


class DiagonalCache:
    """Keys -> cached values (encoded transforms, tiled biases), least recently used first.
    Only values stored with :meth:`put` count against ``limit`` (bytes; None: no bound).
    Thread-safe: a thread executor's samples may share one runner."""

    def __init__(self, limit: int | None = None):
        self._lock = threading.RLock()
        self._items: OrderedDict = OrderedDict()
        self._sizes: dict = {}
        self.bytes = 0
        self.limit = check_limit(limit)
        self.evictions = 0

    def __contains__(self, key) -> bool:
        return key in self._items

    def __iter__(self):
        with self._lock:
            return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def values(self) -> list:
        with self._lock:
            return list(self._items.values())

    def __getitem__(self, key):
        with self._lock:
            self._items.move_to_end(key)
            return self._items[key]

    def get(self, key, default=None):
        with self._lock:
            return self[key] if key in self._items else default

    def __setitem__(self, key, value) -> None:
        """A small value that does not count (a tiled bias)."""
        with self._lock:
            self._items[key] = value

    def put(self, key, value, nbytes: int) -> None:
        """Keeps ``value`` (``nbytes`` of encoded diagonals), then drops the least recently used
        counted values while the cache holds more than its limit (the new one too: its caller
        holds it for the use at hand)."""
        with self._lock:
            self._drop(key)
            self._items[key] = value
            self._sizes[key] = int(nbytes)
            self.bytes += int(nbytes)
            self.shrink()

    def set_limit(self, limit: int | None) -> None:
        with self._lock:
            self.limit = check_limit(limit)
            self.shrink()

    def shrink(self) -> None:
        with self._lock:
            if self.limit is None:
                return
            for key in [k for k in self._items if k in self._sizes]:
                if self.bytes <= self.limit:
                    break
                self._drop(key)
                self.evictions += 1

    def _drop(self, key) -> None:
        self._items.pop(key, None)
        self.bytes -= self._sizes.pop(key, 0)


def check_limit(limit):
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"[nn] diagonal_cache_bytes must be None (keep every transform) or an int >= 0, "
                         f"got {limit!r}")
    return limit
