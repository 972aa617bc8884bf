"""Bootstrapping inside a model: where, with which bound, and how deep the activations.

Placement is lazy: a tensor is bootstrapped when an operator needs more
levels than its ciphertexts have left (a polynomial activation its depth, a
linear layer or a product one), and only then. The planner
(:class:`~ringfire.nn.runtimes.PlanRuntime`) applies the same rule to levels
alone, so ``plan()`` counts the bootstraps a run will make, and
:func:`choose_degrees` uses those counts to size the activations' polynomials
so that the bootstraps fall where the fewest ciphertexts are.

A refreshed tensor is kept beside the original until the executor frees the
original, so a tensor read by two operators (a residual branch) is
bootstrapped once. Ciphertexts are refreshed two at a time
(``ev.bootstrap_pair``: real values ride as the real and imaginary parts of
one bootstrap), and each pair with the bound calibration saw for its elements
(``ev.bootstrap(bound=...)``), sorted so that similar bounds share a
bootstrap.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..parallel import IN_PROCESS
from . import work


def element_bounds(max_abs: np.ndarray, margin: float) -> np.ndarray:
    """Integer bootstrap bounds per element from calibration's largest ``|x|`` (widened by
    ``margin``): what ``ev.bootstrap(bound=...)`` refreshes at full precision."""
    return np.maximum(1, np.ceil(np.asarray(max_abs, dtype=float) * margin)).astype(np.int64)


class Refresher:
    """Bootstraps tensors of an :class:`~ringfire.nn.runtimes.EncryptedRuntime`."""

    def __init__(self, ctx, keys, bounds: dict, executor=IN_PROCESS):
        keys.require_bootstrap("nn")
        self.ev = ctx.evaluator(keys)
        self.executor = executor      # where the bootstraps run (ringfire.parallel)
        self.bounds = bounds          # tensor name -> integer bound per element (the sample's shape)
        self._refreshed = {}          # id(tensor) -> (tensor, its refreshed copy)
        self.bootstraps = 0           # bootstrap circuits run (a pair counts once)
        self.ciphertexts = 0          # ciphertexts refreshed
        self.seconds = 0.0            # spent bootstrapping

    def refresh(self, x: np.ndarray, name: str, is_ct) -> np.ndarray:
        """``x`` (tensor ``name``) with every ciphertext at the top level."""
        hit = self._refreshed.get(id(x))
        if hit is not None and hit[0] is x:
            return hit[1]
        if name not in self.bounds:
            raise ValueError(f"[nn] no bootstrap bound for tensor '{name}': calibration did not reach it")
        start = time.perf_counter()
        bounds = np.broadcast_to(self.bounds[name], x.shape)
        flat, flat_bounds = x.reshape(-1), bounds.reshape(-1)
        where = sorted((i for i, c in enumerate(flat) if is_ct(c)), key=lambda i: flat_bounds[i])
        # |a + ib| <= sqrt(2) max(|a|, |b|): a pair's bound covers both parts at once.
        circuits = [(where[k], where[k + 1], math.ceil(int(max(flat_bounds[where[k]], flat_bounds[where[k + 1]]))
                                                       * math.sqrt(2)))
                    for k in range(0, len(where) - 1, 2)]
        if len(where) % 2:
            circuits.append((where[-1], None, int(flat_bounds[where[-1]])))
        refreshed = self.executor.map(work.bootstrap, circuits, ev=self.ev, shared=flat, label=f"bootstrap {name}")
        out = flat.copy()
        for (i, j, _), cts in zip(circuits, refreshed):
            out[i] = cts[0]
            if j is not None:
                out[j] = cts[1]
        out = out.reshape(x.shape)
        self.bootstraps += len(circuits)
        self.ciphertexts += len(where)
        self.seconds += time.perf_counter() - start
        self._refreshed[id(x)] = (x, out)
        return out

    def forget(self, x) -> None:
        """The executor freed ``x``: its refreshed copy goes with it."""
        hit = self._refreshed.get(id(x))
        if hit is not None and hit[0] is x:
            del self._refreshed[id(x)]


@dataclass
class DepthOnly:
    """What the planner reads of an activation polynomial, before any is fitted."""

    depth: int
    degree: int

    @property
    def multiplications(self) -> int:
        return max(0, self.degree - 1)


def degree_for_depth(depth: int) -> int:
    """The largest degree of that depth on a calibrated interval (one level maps it to [-1, 1])."""
    return 2 ** (depth - 1) - 1


def choose_degrees(bounds: dict, top: int, bootstrapped_ciphertexts) -> dict:
    """Each activation's polynomial degree (``bounds``: activation name -> its input range;
    ``bootstrapped_ciphertexts(polys)``: the planner's count for these activations).

    Depths from ``top - 1`` down to ``top - 3`` (degrees 127, 63 and 31 on N16_BOOT's 9
    levels; none below degree 31, whose ReLU errs by 0.0047 R, unless it is the deepest) are
    tried: first the one depth for all that bootstraps the fewest ciphertexts (the deepest on
    a tie), then each activation, widest range first (its error is the largest), as deep as
    it goes without bootstrapping more. A shallower polynomial can move a bootstrap behind a
    pooling layer (the digits CNN: none instead of 256 ciphertexts) or save a whole round
    (the digits MLP 64-32-32-10: 32 ciphertexts instead of 64)."""
    if degree_for_depth(top - 1) < 7:
        raise ValueError(f"[nn] bootstrapping leaves {top} levels: too few for a useful polynomial activation "
                         f"(degree {degree_for_depth(top - 1)}) and a linear layer; give the chain at least 5 levels "
                         "or pass poly_degree=")
    depths = [d for d in range(top - 1, top - 4, -1) if d == top - 1 or degree_for_depth(d) >= 31]
    names = list(bounds)

    def count(depth_of):
        return bootstrapped_ciphertexts({n: DepthOnly(d, degree_for_depth(d)) for n, d in depth_of.items()})

    fewest, deepest = min((count(dict.fromkeys(names, d)), -d) for d in depths)
    chosen = dict.fromkeys(names, -deepest)
    for name in sorted(names, key=lambda n: -bounds[n]):
        for d in depths:
            if d <= chosen[name]:
                break
            if count({**chosen, name: d}) <= fewest:
                chosen[name] = d
                break
    return {name: degree_for_depth(d) for name, d in chosen.items()}
