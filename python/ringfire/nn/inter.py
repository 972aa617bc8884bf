"""Inter-axis packing (latency mode): one input per ciphertext, its features
spread over the slots and tiled with period P (a power of two >= every layer
width), so a rotation by i moves feature j+i to slot j for every tile.

Dense layers use the diagonal method with baby-step/giant-step rotations
(Halevi-Shoup): y = sum_k rot_{k g}( sum_j diag'_{k g + j} * rot_j(x) ), where
diag'_i is diagonal i of the padded P x P weight matrix pre-rotated by -k g.
That costs about 2 sqrt(P) rotations per layer instead of P. Convolutions,
pooling, BatchNorm, ReduceMean and Div by a constant are the same product with
the sparse matrix of their linear map (:mod:`.linear_maps`, C-order over the
sample's (C, H, W) elements), of which only the nonzero diagonals are encoded
(a 3x3 convolution from C to C' channels has at most (C + C' - 1) * 9 of
them). Supported graphs: those layers, element-wise constants, residual sums
of two tensors, Flatten/Reshape/Identity and element-wise activations
(polynomial, or client-aided on the decrypted vector); MaxPool and the
operators that move elements (Transpose, Concat, Pad, Slice) need batch
packing.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..ckks.batch import tile
from .graph import Graph, UnsupportedOperator
from .masking import mask_kind
from .nonlinear import ELEMENTWISE
from .operators import OPERATORS, attach, gemm_weights


def period_for(graph: Graph) -> int:
    widths = [int(np.prod(graph.input_shape))]
    for n in graph.nodes:
        inter = OPERATORS[n.op].inter
        if inter is None:
            raise UnsupportedOperator(f"[nn.load] packing='inter' runs linear layers, residual sums and element-wise "
                                      f"activations; operator '{n.op}' at node '{n.name}' needs packing='batch'")
        widths += list(inter.widths(n, graph))
    return 1 << max(1, math.ceil(math.log2(max(widths))))


def giant_step(period: int) -> int:
    return 1 << math.ceil(math.log2(period) / 2)


def rotation_steps(period: int) -> list[int]:
    g = giant_step(period)
    return sorted(set(list(range(1, g)) + list(range(g, period, g))))


def dense_weights(node, graph: Graph) -> tuple[np.ndarray, np.ndarray]:
    """(W as out x in, bias) of a Gemm/MatMul node."""
    if node.op == "Gemm":
        w, bias = gemm_weights(node, graph.constants)
        return w.T, np.zeros(w.shape[1]) if bias is None else bias
    w = graph.constants[node.inputs[1]]
    return w.T, np.zeros(w.shape[1])


class InterRunner:
    """Evaluates a graph on tiled ciphertexts (one per sample)."""

    def __init__(self, graph: Graph, ctx, polys: dict, period: int, cache: dict | None = None, bounds=None):
        self.graph, self.ctx, self.polys, self.period = graph, ctx, polys, period
        self.g = giant_step(period)
        self.cache = {} if cache is None else cache  # encoded diagonals, reused across samples
        # Bootstrapping (``bounds``: tensor name -> largest |x| bound): a tensor is refreshed
        # where its next operator needs more levels than it has, as batch packing does.
        self.bounds = bounds
        self.bootstraps, self.bootstrap_seconds = 0, 0.0

    def _matvec(self, ct, w_out_in, bias, name=""):
        """W x (+ bias), W dense (Gemm, MatMul), as one linear transform of the padded P x P matrix."""
        def padded():
            m = np.zeros((self.period, self.period))
            m[:w_out_in.shape[0], :w_out_in.shape[1]] = w_out_in
            return m
        return self._transform(ct, padded, bias, name)

    def _apply_map(self, ct, m, name=""):
        """A sparse :class:`~.linear_maps.LinearMap` (convolutions, pooling, ...) as one linear
        transform of its nonzero diagonals only: diag_k[r] = M[r, (r + k) mod P]."""
        def diagonals():
            offsets = (m.cols - m.rows) % self.period
            out = {}
            for k in np.unique(offsets):
                vec, pick = np.zeros(self.period), offsets == k
                np.add.at(vec, m.rows[pick], m.weights[pick])
                out[int(k)] = vec
            return out
        return self._transform(ct, diagonals, m.bias, name)

    def _transform(self, ct, operand, bias, name):
        """``operand()`` (a matrix or its diagonals) times ``ct`` plus ``bias``, with the scheme's
        BSGS linear transform (hoisted baby steps, g of them, so the Galois keys are
        rotation_steps(P)), landing on the next level's canonical scale. The encoded transform
        is cached per node, level and scale, and so reused across samples."""
        from ..ckks import LinearTransform

        ctx = self.ctx
        if ct.level == 0:
            raise ValueError(f"[nn] out of levels at node '{name}' (linear layer); see Model.plan()")
        scale = ctx.landing_scale(ct.level, ct.scale)
        key = (name, ct.level, round(scale))
        lt = self.cache.get(key)
        if lt is None:
            lt = self.cache[key] = LinearTransform(ctx, operand(), level=ct.level, scale=scale, baby_steps=self.g)
        out = ctx.evaluator(ct.keys).linear_transform(ct, lt)
        if np.any(bias):
            out = out + tile(np.asarray(bias, dtype=np.float64), self.period, ctx.slots)
        return out

    def run(self, ct, client=None, masker=None):
        self.values = values = {self.graph.input_name: ct}  # the second operand of a residual sum
        for node in self.graph.nodes:
            source = node.inputs[0]
            if self.bounds is not None and values[source].level < self._levels_of(node):
                start = time.perf_counter()
                values[source] = values[source].bootstrap(bound=int(self.bounds[source]))
                self.bootstraps += 1
                self.bootstrap_seconds += time.perf_counter() - start
            values[node.outputs[0]] = OPERATORS[node.op].inter.run(self, node, values[source], client, masker)
        return values[self.graph.output_names[0]]

    def _levels_of(self, node, masking: bool = False) -> int:
        """The levels ``node`` needs its input to have."""
        return OPERATORS[node.op].inter.levels(self, node, 0, masking)[0]

    def levels_needed(self, masking: bool = False) -> int:
        """The most levels any stretch between (re-)encryptions consumes; with bootstrapping,
        the most one operator needs."""
        if self.bounds is not None:
            return max((self._levels_of(node, masking) for node in self.graph.nodes), default=0)
        need = used = 0
        for node in self.graph.nodes:
            peak, used = OPERATORS[node.op].inter.levels(self, node, used, masking)
            need = max(need, peak)
        return need

    def level_walk(self, masking: bool = False):
        """How :meth:`run` moves down the chain, from levels alone: per node, (node, the
        level it reads at, whether its input is bootstrapped first, its output's level)."""
        top = self.ctx.max_level
        level = {self.graph.input_name: top}
        for node in self.graph.nodes:
            source = node.inputs[0]
            refreshed = self.bounds is not None and level[source] < self._levels_of(node, masking)
            if refreshed:
                level[source] = top
            lowest = min(level[name] for name in node.inputs if name in level)
            _, used = OPERATORS[node.op].inter.levels(self, node, top - lowest, masking)
            level[node.outputs[0]] = top - used
            yield node, lowest, refreshed, top - used

    def bootstraps_needed(self) -> int:
        """The bootstraps :meth:`run` makes per sample, from levels alone."""
        return sum(refreshed for _, _, refreshed, _ in self.level_walk())


# ---- the operators under inter-axis packing (attached to the operator registry) --------

@dataclass(frozen=True)
class InterOp:
    """``run(runner, node, x, client, masker)`` -> the output ciphertext;
    ``levels(runner, node, used, masking)`` -> (the most levels used while it runs, levels used after);
    ``widths(node, graph)`` -> the vector widths it needs the period to cover;
    ``offsets(node, graph, period)`` -> a linear layer's nonzero diagonal indices (None: not one)."""
    run: Callable
    levels: Callable
    widths: Callable = lambda node, graph: ()
    offsets: Callable = lambda node, graph, period: None


def _dense(runner, node, x, client, masker):
    w, b = dense_weights(node, runner.graph)
    return runner._matvec(x, w, b, node.name)


def _identity(runner, node, x, client, masker):
    return x


def _with_constant(runner, node, x, client, masker):
    c = runner.graph.constants.get(node.inputs[1])
    if c is None and node.op in ("Add", "Sub"):  # a residual sum: both tensors share the layout
        other = runner.values[node.inputs[1]]
        return x + other if node.op == "Add" else x - other
    if c is None:
        raise UnsupportedOperator(f"[nn] packing='inter': '{node.op}' of two tensors at '{node.name}'")
    if node.op == "Mul":
        if np.asarray(c).size != 1:
            raise UnsupportedOperator(f"[nn] packing='inter': element-wise Mul at '{node.name}'")
        return x * float(np.asarray(c).reshape(-1)[0])
    vec = tile(np.asarray(c, dtype=np.float64).reshape(-1), runner.period, runner.ctx.slots)
    return x + vec if node.op == "Add" else x - vec


def _activation(runner, node, x, client, masker):
    if node.name in runner.polys:
        return runner.polys[node.name].evaluate_encrypted(x)
    if client is None:
        raise ValueError(f"[nn] node '{node.name}' is client-aided: pass client=LocalClient(...)")
    if masker is None:
        return client.apply_vector(node, x)
    masked, masks = masker.mask(node, np.array([x], dtype=object), (1,))
    return masker.unmask(node, np.array([client.apply_vector(node, masked[0])], dtype=object), masks)[0]


def _one_level(runner, node, used, masking):
    return used + 1, used + 1


def _no_level(runner, node, used, masking):
    return used, used


def _mul_levels(runner, node, used, masking):
    return (used + 1, used + 1) if node.op == "Mul" else (used, used)


def _activation_levels(runner, node, used, masking):
    if node.name in runner.polys:
        return used + runner.polys[node.name].depth, used + runner.polys[node.name].depth
    if masking and mask_kind(node) == "scale":  # a level to mask, and one to unmask the answer
        return used + 1, 1
    return used, 0  # the key holder returns fresh ciphertexts


def _dense_widths(node, graph):
    return graph.constants[node.inputs[1]].shape


def _dense_offsets(node, graph, period):
    """W (out x in) padded to P x P: diagonal k holds W[r, r + k] for some r, so k runs over
    -(out - 1)..(in - 1) modulo P."""
    w, _ = dense_weights(node, graph)
    return np.unique(np.arange(-(w.shape[0] - 1), w.shape[1]) % period)


class _CapturedMap:
    """Runs a linear operator's registry entry to obtain its map instead of applying it."""

    def __init__(self, graph):
        self.graph, self.rt, self.map = graph, self, None

    def const(self, name):
        return self.graph.constants.get(name)

    def linear(self, x, in_shape, make_map, out_shape, node):
        self.map = make_map()
        return None, out_shape


def linear_map(node, graph):
    """The :class:`~.linear_maps.LinearMap` of a linear node, from its input's per-sample shape."""
    source = node.inputs[0]
    shape = tuple(graph.input_shape if source == graph.input_name else graph.shapes.get(source) or ())
    if not shape:
        raise UnsupportedOperator(f"[nn] packing='inter': the input shape of '{node.name}' is unknown")
    captured = _CapturedMap(graph)
    OPERATORS[node.op].run(captured, node, None, shape, {}, {node.inputs[0]: shape})
    return captured.map


def _mapped(runner, node, x, client, masker):
    key = ("map", node.name)
    if key not in runner.cache:
        runner.cache[key] = linear_map(node, runner.graph)
    return runner._apply_map(x, runner.cache[key], node.name)


def _mapped_offsets(node, graph, period):
    m = linear_map(node, graph)
    return np.unique((m.cols - m.rows) % period)


def _mapped_widths(node, graph):
    sizes = [graph.shapes.get(node.inputs[0]), graph.shapes.get(node.outputs[0])]
    return tuple(int(np.prod(s)) for s in sizes if s)


for _name in ("Gemm", "MatMul"):
    attach(_name, inter=InterOp(_dense, _one_level, _dense_widths, _dense_offsets))
for _name in ("Conv", "AveragePool", "GlobalAveragePool", "BatchNormalization", "ReduceMean", "Div"):
    attach(_name, inter=InterOp(_mapped, _one_level, _mapped_widths, _mapped_offsets))
for _name in ("Flatten", "Reshape", "Identity"):
    attach(_name, inter=InterOp(_identity, _no_level))
for _name in ("Add", "Sub", "Mul"):
    attach(_name, inter=InterOp(_with_constant, _mul_levels))
# Element-wise activations work on the tiled slot vector as they are (PRelu's
# per-channel slope would not line up with the tiling).
for _name in sorted(set(ELEMENTWISE) - {"PRelu"}):
    attach(_name, inter=InterOp(_activation, _activation_levels))
