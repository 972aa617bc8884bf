"""Encrypted work across a Ray cluster (``pip install 'ringfire[ray]'``).

``model(enc, executor=rf.distributed.RayExecutor(address))`` runs each layer's independent
ciphertexts as Ray tasks -- a linear layer's outputs, an activation's elements, a refresh's
bootstraps, or with inter packing whole samples -- and gives results bit-identical to the
in-process run. Keys go to each node once (:mod:`.worker`); lost tasks run again
(:mod:`.executor`); :func:`map` spreads any per-ciphertext function; :mod:`.costmodel`
predicts a run on K nodes from a profile of this one. docs/distributed.md has the guide.
"""

from __future__ import annotations

from ..parallel import IN_PROCESS
from ..rlwe.ciphertext import CiphertextBase
from . import costmodel
from .bundle import KeyBundle
from .executor import RayExecutor, TaskFailed, report


def _apply(ev, cts, index, fn):
    return fn(cts[index])


def map(fn, cts, *, executor=None, keys=None, label: str = "map") -> list:  # noqa: A001 (the verb users expect)
    """``[fn(ct) for ct in cts]`` on ``executor`` (default: in this process): ``fn`` takes a
    ciphertext (computing with ``keys``, default the first ciphertext's) and returns
    ciphertexts; it must be picklable (a module-level function, or a lambda, which Ray's
    cloudpickle carries)."""
    cts = list(cts)
    first = next((c for c in cts if isinstance(c, CiphertextBase)), None)
    if first is None:
        raise ValueError("[distributed] map needs at least one ciphertext")
    ev = first.context.evaluator(keys if keys is not None else first.keys)
    return (executor or IN_PROCESS).map(_apply, range(len(cts)), ev=ev, shared=cts, const=fn, label=label)


__all__ = ["KeyBundle", "costmodel", "RayExecutor", "TaskFailed", "map", "report"]
