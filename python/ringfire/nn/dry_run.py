"""Dry runs: a model's real encrypted code path on placeholder ciphertexts (``model.plan(dry_run=True)``).

The planner (:class:`.runtimes.PlanRuntime`) follows its own rules for levels and memory. A dry
run instead runs the encrypted runtime itself inside ``rf.trace(dry_run=True)``: every
ciphertext is allocated and carries its true level and scale, every check the evaluator makes
is made, but no backend kernel runs, so the values are placeholders. The key holder is replaced
by one that answers with fresh encryptions of zeros of the right shape, since a placeholder must
never be decrypted. A plan that passes a dry run therefore runs. Its memory was measured on
ringfire's pool after every node, where the planner counts it. The run takes the bookkeeping's
time, not the arithmetic's, but it needs the memory of a real run: for models beyond RAM,
use ``plan()`` alone.
"""

from __future__ import annotations

import gc
import time

import numpy as np

from .. import _core
from ..tracing import trace
from .client import Client, fresh_level
from .executor import Executor
from .masking import Masker
from .refresh import Refresher
from .nonlinear import exact as exact_layer
from .runtimes import EncryptedRuntime


class PlaceholderClient(Client):
    """A key holder for dry runs: returns fresh encryptions of zeros in the layer's output shape."""

    def __init__(self, ctx, keys):
        self.ctx, self.keys = ctx, keys

    def apply(self, node, x, shape, clip):
        out_plain, out_shape = exact_layer(node, np.zeros(tuple(x.shape) + (1,)), shape)
        out = np.empty(out_plain.shape[:-1], dtype=object)
        level = fresh_level(node, self.ctx)
        for idx in np.ndindex(out.shape):
            out[idx] = self.ctx.encrypt(np.zeros(1), self.keys, level=level)
        return out, tuple(out_shape)


def _pool_bytes() -> int:
    return int(_core.host_pool_stats()["bytes_in_use"])


class _Measured(EncryptedRuntime):
    """The encrypted runtime, noting the pool's bytes in use after every node."""

    def __init__(self, *args, base: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.base = base
        self.peak = _pool_bytes() - base  # the encrypted input

    def after_node(self, node, out, shape):
        self.peak = max(self.peak, _pool_bytes() - self.base)


def dry_run(model) -> dict:
    """Runs ``model`` (batch packing) on placeholders. Returns ``{"activation_bytes": the pool's
    peak over the run's ciphertexts, "seconds": ...}``; raises what the real run would raise,
    naming the node."""
    ctx = model.ctx
    start = time.perf_counter()
    with trace(dry_run=True):
        _, keys = ctx.keygen(bootstrap=model.bootstrap)
        keys.expand()  # the keys' first use would expand them inside the measured run
        # A context's first bootstrap keeps state of its own in the pool (4 MiB on the toy ring),
        # once: it is not the run's activations, and counting it made the measure depend on
        # whether the context had bootstrapped before (46 MiB alone, 42 after another run).
        if model.bootstrap:
            ev = ctx.evaluator(keys)
            placeholder = ev.mod_switch(ctx.encrypt(np.zeros(1), keys), ctx.bootstrap_min_level)
            ev.bootstrap_pair(placeholder, placeholder)
            del placeholder
        gc.collect()  # garbage freed during the run would hide the run's own allocations
        base = _pool_bytes()
        enc = ctx.encrypt_batch(np.zeros((1,) + tuple(model.graph.input_shape)), keys, level=model.input_level)
        masker = Masker(ctx, keys, model.mask_bits) if model.masking else None
        refresher = Refresher(ctx, keys, model._bounds) if model.bootstrap else None
        runtime = _Measured(ctx, keys, PlaceholderClient(ctx, keys), model.polys, masker, refresher, base=base)
        Executor(model.graph, runtime).run(enc.cts)
    return {"activation_bytes": runtime.peak, "seconds": time.perf_counter() - start}
