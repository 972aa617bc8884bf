"""Runtimes for :class:`~ringfire.nn.executor.Executor`: plaintext (reference),
encrypted with batch-axis packing, and planning (levels, counts, memory)."""

from __future__ import annotations

import numpy as np

from ..parallel import IN_PROCESS
from . import work
from . import staging
from .client import for_decryption
from .masking import mask_kind
from .nonlinear import exact as exact_layer
from .operators import linear_terms

# The outputs of a dense layer summed side by side (one pass over their inputs): eight per
# call, which the CPU's AVX-512 kernel takes four at a time, and few enough that a layer's
# groups still spread over a cluster's workers.
DENSE_GROUP = 8


# ---- element movers shared by the array-based runtimes ----------------------------
class _ArrayMoves:
    sample_rank_offset = 0  # trailing axes beyond the sample axes (1 for plaintext: the batch)

    def reshape(self, x, shape, new):
        return x.reshape(tuple(new) + x.shape[len(shape):])

    def transpose(self, x, perm):
        return x.transpose(list(perm) + list(range(len(perm), x.ndim)))

    def concat(self, parts, axis):
        return np.concatenate(parts, axis=axis)

    def select(self, x, index, out_shape):
        """The elements at a per-sample index (Slice); trailing axes come along."""
        return x[index]

    def repeat(self, x, index, out_shape):
        """``x`` repeated to ``out_shape`` by reference for one operator (broadcasting): the
        same ciphertexts, no new ones."""
        return x[index]

    def pad(self, x, widths):
        full = list(widths) + [(0, 0)] * (x.ndim - len(widths))
        if x.dtype == object:
            out = np.empty(tuple(s + lo + hi for s, (lo, hi) in zip(x.shape, full)), dtype=object)
            out[tuple(slice(lo, lo + s) for s, (lo, _) in zip(x.shape, full))] = x
            return out
        return np.pad(x, full)

    def after_node(self, node, out, shape):
        pass

    def _for_decryption(self, x):
        """What the key holder gets of tensor ``x``: each ciphertext at its lowest level."""
        out = np.empty(x.shape, dtype=object)
        for idx, c in np.ndenumerate(x):
            out[idx] = for_decryption(self.ev, c) if is_ct(c) else c
        return out

    def release(self, value):
        pass


class PlainRuntime(_ArrayMoves):
    """float arrays (*sample_shape, batch): the model in the clear, for references and calibration."""

    def __init__(self, activation="exact", record_ranges=None, record_tensors=None):
        self.activation = activation
        self.ranges = record_ranges  # dict node name -> max |input| seen, when calibrating
        self.tensors = record_tensors  # dict tensor name -> max |x| per element, when calibrating

    def after_node(self, node, out, shape):
        if self.tensors is not None and np.issubdtype(np.asarray(out).dtype, np.floating):
            self.tensors[node.outputs[0]] = np.max(np.abs(out), axis=-1)

    def linear(self, x, in_shape, make_map, out_shape, node):
        m = make_map()
        batch = x.shape[-1]
        flat = x.reshape(-1, batch)
        out = np.zeros((int(np.prod(m.out_shape)), batch))
        np.add.at(out, m.rows, flat[m.cols] * m.weights[:, None])
        out += m.bias[:, None]
        return out.reshape(tuple(m.out_shape) + (batch,)), tuple(m.out_shape)

    def add_const(self, x, c):
        return x + c[..., None]

    def add(self, x, y, subtract=False):
        return x - y if subtract else x + y

    def mul(self, x, y, node):
        return x * y

    def nonlinear(self, node, x, shape):
        if self.ranges is not None:
            self.ranges[node.name] = max(self.ranges.get(node.name, 0.0), float(np.max(np.abs(x))))
        if isinstance(self.activation, dict) and node.name in self.activation:
            poly = self.activation[node.name]
            return poly(x), shape
        return exact_layer(node, x, shape)


def is_ct(v) -> bool:
    """Elements of encrypted tensors are Ciphertexts, None (known zero, e.g. padding) or
    floats (known constants: padding that went through a bias or an activation)."""
    return v is not None and not isinstance(v, float)


def _const_value(v) -> float:
    return 0.0 if v is None else float(v)


class EncryptedRuntime(_ArrayMoves):
    """Object arrays of Ciphertexts (batch in the slots): batch-axis packing. The loops over a
    layer's independent ciphertexts go through ``executor`` (:mod:`ringfire.parallel`)."""

    def __init__(self, ctx, keys, client=None, polys=None, masker=None, refresher=None, executor=IN_PROCESS,
                 chains=None):
        self.ctx, self.keys, self.client, self.polys = ctx, keys, client, polys or {}
        # Client-aided layers that run as one round (nonlinear.chains_of): {first layer: Chain};
        # the later layers' results wait in _chained until the executor reaches them.
        self.chains, self._chained = chains or {}, {}
        self.masker = masker  # a masking.Masker: what the key holder sees is masked where the layer allows
        self.refresher = refresher  # a refresh.Refresher: bootstraps where levels run out
        self.executor = executor
        self.ev = ctx.evaluator(keys)
        self.counts = {"linear_terms": 0, "rescales": 0, "ct_mults": 0, "client_round_trips": 0}

    def _map_into(self, out, where, fn, items, shared, const, node) -> None:
        """``out[where[k]] = fn(ev, shared, items[k], const)`` for every k, through the executor."""
        results = self.executor.map(fn, items, ev=self.ev, shared=shared, const=const, label=f"{node.op} {node.name}")
        for i, ct in zip(where, results):
            out[i] = ct

    def _ready(self, x, name, levels):
        """``x`` with at least ``levels`` levels: bootstrapped if it has fewer and the model may."""
        if self.refresher is None:
            return x
        level = min((c.level for c in x.flat if is_ct(c)), default=levels)
        return x if level >= levels else self.refresher.refresh(x, name, is_ct)

    def release(self, value):
        if self.refresher is not None:
            self.refresher.forget(value)

    def _level_scale(self, x):
        first = next((c for c in x.flat if is_ct(c)), None)
        return (None, None) if first is None else (first.level, first.scale)

    def _uniform(self, x):
        """All ciphertexts of a tensor at one level and scale (after concat/add of branches)."""
        levels = {c.level for c in x.flat if is_ct(c)}
        if len(levels) <= 1:
            return x
        low = min(levels)
        out = np.empty(x.shape, dtype=object)
        for idx, c in np.ndenumerate(x):
            out[idx] = c if not is_ct(c) or c.level == low else self.ev.adjust_to(c, low)
        return out

    def linear(self, x, in_shape, make_map, out_shape, node):
        m = make_map()
        x = self._ready(self._uniform(x), node.inputs[0], 1)
        level, scale = self._level_scale(x)
        flat = x.reshape(-1)
        order = np.argsort(m.rows, kind="stable")
        rows, cols, weights = m.rows[order], m.cols[order], m.weights[order]
        bounds = np.searchsorted(rows, np.arange(int(np.prod(m.out_shape)) + 1))
        out = np.empty(int(np.prod(m.out_shape)), dtype=object)
        delta = None
        if level is not None:
            if level == 0:
                raise ValueError(f"[nn] out of levels at node '{node.name}' ({node.op}); see Model.plan()")
            delta = self.ctx.landing_scale(level, scale)
        outputs, items = [], []
        for o in range(out.size):
            lo, hi = bounds[o], bounds[o + 1]
            ct_cols, ws, constant = [], [], float(m.bias[o])
            for c, w in zip(cols[lo:hi], weights[lo:hi]):
                v = flat[c]
                if is_ct(v):
                    ct_cols.append(int(c))
                    ws.append(float(w))
                elif v is not None:
                    constant += float(w) * v
            if not ct_cols:
                out[o] = constant if constant != 0.0 else None
                continue
            outputs.append(o)
            items.append((ct_cols, ws, constant))
            self.counts["linear_terms"] += len(ct_cols)
            self.counts["rescales"] += 1
        # Outputs that read the same inputs go together, DENSE_GROUP at most (a dense layer's
        # outputs; a convolution's channels at one position): each input is then read once per
        # group instead of once per output. Never fewer groups than the executor spreads a map
        # over (a cluster's workers keep their share).
        spread = getattr(self.executor, "workers", 1) * getattr(self.executor, "chunks_per_worker", 1)
        size = max(1, min(DENSE_GROUP, len(items) // spread))
        groups, where, open_group = [], [], {}
        for o, (ct_cols, ws, constant) in zip(outputs, items):
            key = tuple(ct_cols)
            k = open_group.get(key)
            if k is None or len(where[k]) >= size:
                k = open_group[key] = len(groups)
                groups.append((ct_cols, []))
                where.append([])
            groups[k][1].append((ws, constant))
            where[k].append(o)
        results = self.executor.map(work.linear_outputs, groups, ev=self.ev, shared=flat, const=delta,
                                    label=f"{node.op} {node.name}")
        for places, cts in zip(where, results):
            for o, ct in zip(places, cts):
                out[o] = ct
        return out.reshape(m.out_shape), tuple(m.out_shape)

    def add_const(self, x, c):
        out = np.empty(x.shape, dtype=object)
        for idx, v in np.ndenumerate(x):
            k = float(c[idx])
            if is_ct(v):
                out[idx] = v + k if k != 0 else v
            else:
                total = _const_value(v) + k
                out[idx] = total if total != 0.0 else None
        return out

    def add(self, x, y, subtract=False):
        out = np.empty(x.shape, dtype=object)
        for idx, a in np.ndenumerate(x):
            b = y[idx]
            if is_ct(a) and is_ct(b):
                out[idx] = a - b if subtract else a + b
            elif is_ct(a):
                k = _const_value(b)
                out[idx] = a if k == 0 else (a - k if subtract else a + k)
            elif is_ct(b):
                k = _const_value(a)
                nb = -b if subtract else b
                out[idx] = nb if k == 0 else nb + k
            else:
                total = _const_value(a) - _const_value(b) if subtract else _const_value(a) + _const_value(b)
                out[idx] = total if total != 0.0 else None
        return out

    def mul(self, x, y, node):
        x, y = self._ready(x, node.inputs[0], 1), self._ready(y, node.inputs[1], 1)
        out = np.empty(x.shape, dtype=object).reshape(-1)
        xs, ys = x.reshape(-1), y.reshape(-1)
        products = []
        for i, (a, b) in enumerate(zip(xs, ys)):
            if a is None or b is None:
                out[i] = None
            elif is_ct(a) or is_ct(b):
                products.append(i)
            else:
                out[i] = float(a) * float(b) or None
        self.counts["ct_mults"] += len(products)
        self._map_into(out, products, work.product, products, (xs, ys), None, node)
        return out.reshape(x.shape)

    def nonlinear(self, node, x, shape):
        if node.name in self._chained:  # computed by the key holder with the layer before it
            return self._chained.pop(node.name)
        if node.name in self.polys:
            poly = self.polys[node.name]
            x = self._ready(x, node.inputs[0], poly.depth)
            flat = x.reshape(-1)
            out = np.empty(flat.size, dtype=object)
            elements = []
            for i, c in enumerate(flat):
                if is_ct(c):
                    elements.append(i)
                else:
                    out[i] = float(poly(_const_value(c))) or None
            self._map_into(out, elements, work.polynomial, elements, flat, poly, node)
            return out.reshape(x.shape), shape
        if not any(is_ct(c) for c in x.flat):  # everything known: the server computes it
            plain = np.vectorize(_const_value, otypes=[float])(x)[..., None]
            vals, out_shape = exact_layer(node, plain, shape)
            out = np.empty(vals.shape[:-1], dtype=object)
            for idx in np.ndindex(out.shape):
                out[idx] = float(vals[idx][0]) or None
            return out, out_shape
        if self.client is None:
            raise ValueError(f"[nn] node '{node.name}' ({node.op}) is client-aided: pass client=rf.nn.LocalClient(...)")
        self.counts["client_round_trips"] += int(sum(is_ct(c) for c in x.flat))
        chain = self.chains.get(node.name)
        if chain is not None and self.masker is None:
            out, out_shape = self.client.apply(chain, self._for_decryption(x), shape, node.attrs.get("bounds"))
            self._chained[chain.nodes[-1].name] = (out, out_shape)
            # What stands for the layers in between: nothing encrypted (the executor frees it).
            placeholder = chained_placeholder(node, shape)
            return placeholder, placeholder.shape
        if self.masker is None:
            return self.client.apply(node, self._for_decryption(x), shape, node.attrs.get("bounds"))
        masked, masks = self.masker.mask(node, x, shape)
        out, out_shape = self.client.apply(node, self._for_decryption(masked), shape, node.attrs.get("bounds"))
        del masked  # freed before unmasking: the planner counts these copies one after the other
        return self.masker.unmask(node, out, masks), out_shape


# The key under which PlanRuntime.fresh_depth counts the levels spent on the model's input
# before its first key holder (an object, so no node's name can be the same).
INPUT = object()


def chained_placeholder(node, shape):
    """The output of a layer inside a chain of client-aided layers: never encrypted, only
    passed to the next layer of the chain, which takes the key holder's answer instead."""
    return np.full(tuple(getattr(node, "_out_shape", None) or shape), None, dtype=object)


class PlanRuntime:
    """Tracks, without encrypting: levels, ciphertext counts, linear terms, and live memory."""

    def __init__(self, top_level: int, bytes_per_limb: int, polys=None, client_aided=True, masking=False,
                 graph=None, bootstrapping=False, fresh_levels=None, chains=None, slots: int = 0):
        self.top = top_level
        self.slots = slots  # values per ciphertext, for the key holder's arrays (staging)
        self.staging = 0    # the most bytes held outside the pool at once (.staging)
        # The later layers of chains of client-aided layers (one round with the first).
        self.chained = {n.name for c in (chains or {}).values() for n in c.nodes[1:]}
        # Client-aided layer -> the level its key holder encrypts the result at (default: the top).
        self.fresh_levels = fresh_levels or {}
        # Client-aided layer -> the most levels spent on anything computed from its result
        # before the next key holder: the level its result needs (fresh_levels for the run).
        self.fresh_depth = {}
        self.bootstrapping = bootstrapping  # refresh a tensor where an operator needs more levels (refresh.py)
        self._refreshed = {}
        self.graph = graph  # the constants the operators' term counts read
        self.masking = masking  # scale masks cost a level before the key holder and one after
        self.bytes_per_limb = bytes_per_limb  # 2 polynomials x N x 8 bytes
        self.polys = polys or {}
        self.client_aided = client_aided
        self.levels_needed = 0
        self.segment_start = top_level
        self.counts = {"linear_terms": 0, "rescales": 0, "ct_mults": 0, "client_round_trips": 0,
                       "poly_activations": 0}
        if bootstrapping:
            self.counts.update(bootstraps=0, bootstrapped_ciphertexts=0)
        self.live = 0
        self.peak = 0
        self.allocated = 0  # every tensor's bytes, summed: the most the pool's cache can come to
        self.largest_tensor = 0

    class V:
        def __init__(self, level, size, depths=None):
            self.level, self.size = level, size
            self.depths = depths or {}  # client-aided layer -> levels spent since its result

    def _after(self, sources, amount: int) -> dict:
        """The depths of a value computed from ``sources`` at the cost of ``amount`` levels."""
        depths = {}
        for v in sources:
            for name, d in v.depths.items():
                depths[name] = max(depths.get(name, 0), d + amount)
        for name, d in depths.items():
            self.fresh_depth[name] = max(self.fresh_depth.get(name, 0), d)
        return depths

    def _alloc(self, v):
        nbytes = v.size * (v.level + 1) * self.bytes_per_limb
        self.live += nbytes
        self.allocated += nbytes
        self.peak = max(self.peak, self.live)
        self.largest_tensor = max(self.largest_tensor, v.size)
        return v

    def release(self, v):
        self.live -= v.size * (v.level + 1) * self.bytes_per_limb
        hit = self._refreshed.pop(id(v), None)
        if hit is not None:
            self.release(hit[1])

    def _ready(self, x, levels):
        """Refresher.refresh on levels: the tensor at the top, bootstrapped once while it lives."""
        if not self.bootstrapping or x.level >= levels:
            return x
        hit = self._refreshed.get(id(x))
        if hit is None:
            hit = self._refreshed[id(x)] = (x, self._alloc(self.V(self.top, x.size)))
            self.counts["bootstraps"] += (x.size + 1) // 2
            self.counts["bootstrapped_ciphertexts"] += x.size
        return hit[1]

    def input(self, shape):
        return self._alloc(self.V(self.fresh_levels.get(INPUT, self.top), int(np.prod(shape)), {INPUT: 0}))

    def _consume(self, level, amount):
        new = level - amount
        self.levels_needed = max(self.levels_needed, self.top - new)
        return new

    def linear(self, x, in_shape, make_map, out_shape, node):
        x = self._ready(x, 1)
        size = int(np.prod(out_shape))
        terms = linear_terms(node, self.graph, in_shape, out_shape)
        self.counts["linear_terms"] += terms
        self.staging = max(self.staging, staging.linear_layer(terms))
        self.counts["rescales"] += size
        return self._alloc(self.V(self._consume(x.level, 1), size, self._after([x], 1))), tuple(out_shape)

    def add_const(self, x, c):
        return x

    def add(self, x, y, subtract=False):
        return self._alloc(self.V(min(x.level, y.level), x.size, self._after([x, y], 0)))

    def mul(self, x, y, node):
        x, y = self._ready(x, 1), self._ready(y, 1)
        self.counts["ct_mults"] += x.size
        return self._alloc(self.V(self._consume(min(x.level, y.level), 1), x.size, self._after([x, y], 1)))

    def nonlinear(self, node, x, shape):
        if node.name in self.polys:
            x = self._ready(x, self.polys[node.name].depth)
            self.counts["poly_activations"] += x.size
            self.counts["ct_mults"] += x.size * self.polys[node.name].multiplications
            depth = self.polys[node.name].depth
            return self._alloc(self.V(self._consume(x.level, depth), x.size, self._after([x], depth))), shape
        if node.name not in self.chained:
            self.counts["client_round_trips"] += x.size
            self.staging = max(self.staging, staging.key_holder(x.size, self.slots))
        out_size = int(np.prod(node._out_shape)) if getattr(node, "_out_shape", None) else x.size
        out_shape = tuple(node._out_shape) if getattr(node, "_out_shape", None) else shape
        kind = mask_kind(node) if self.masking else None
        level = self.fresh_levels.get(node.name, self.top)
        self.fresh_depth.setdefault(node.name, 0)
        if kind is None:
            return self._alloc(self.V(level, out_size, {node.name: 0})), out_shape
        # Masked: the masked copy lives beside the input until the key holder answers; the
        # answer beside the unmasked result (a scale mask costs a level on each side).
        masked = self._alloc(self.V(self._consume(x.level, 1) if kind == "scale" else x.level, x.size,
                                    self._after([x], 1 if kind == "scale" else 0)))
        fresh = self._alloc(self.V(level, out_size, {node.name: 0}))
        self.release(masked)
        if kind == "shift":
            return fresh, out_shape
        out = self._alloc(self.V(self._consume(level, 1), out_size, self._after([fresh], 1)))
        self.release(fresh)
        return out, out_shape

    def reshape(self, x, shape, new):
        return x

    def transpose(self, x, perm):
        return x

    def concat(self, parts, axis):
        return self._alloc(self.V(min(p.level for p in parts), sum(p.size for p in parts), self._after(parts, 0)))

    def pad(self, x, widths):
        return x

    def select(self, x, index, out_shape):
        # Counted as new memory: an over-estimate while the source is alive too.
        return self._alloc(self.V(x.level, int(np.prod(out_shape)), x.depths))

    def repeat(self, x, index, out_shape):
        # References to x's ciphertexts, alive while x is (an operand of the node that repeats
        # it) and gone after it: no memory of their own, so nothing to release either.
        return self.V(x.level, int(np.prod(out_shape)), x.depths)

    def after_node(self, node, out, shape):
        pass
