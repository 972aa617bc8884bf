"""Where independent ciphertext work runs.

A model's layers, its bootstraps and many applications are loops over ciphertexts that do
not depend on each other: the outputs of a linear layer, the elements of an activation, the
pairs a refresh bootstraps, the samples of an inter-packed batch. They are written as
``executor.map(fn, items, ev=ev, shared=..., const=...)``, which returns
``[fn(ev, shared, item, const) for item in items]``:

* ``fn`` is a module-level function (it travels by name to other processes);
* ``ev`` is the caller's evaluator (its context and keys);
* ``shared`` holds what many items read (a layer's input ciphertexts, indexed by the items),
  ``const`` what every item needs (a polynomial, a scale).

:data:`IN_PROCESS` runs the loop here, in order: the default, and the reference a
distributed executor (``ringfire.distributed.RayExecutor``) must equal bit for bit.
"""

from __future__ import annotations


# Caches a worker process keeps for the key set it holds (an inter-packed model's encoded
# diagonals, say): emptied when the process opens another key set, so the last job's context
# and keys do not stay alive beside the new ones.
_KEY_SET_CACHES: list[dict] = []


def key_set_cache() -> dict:
    """A dict that lives until this process opens another key set."""
    cache: dict = {}
    _KEY_SET_CACHES.append(cache)
    return cache


def forget_key_set() -> None:
    """Empty every :func:`key_set_cache` (a worker calls this before it opens new keys)."""
    for cache in _KEY_SET_CACHES:
        cache.clear()


class InProcess:
    """Every item here, one after the other."""

    name = "in-process"
    workers = 1

    def map(self, fn, items, *, ev, shared=None, const=None, label: str = "work") -> list:
        return [fn(ev, shared, item, const) for item in items]

    def __repr__(self) -> str:
        return "InProcess()"


IN_PROCESS = InProcess()
