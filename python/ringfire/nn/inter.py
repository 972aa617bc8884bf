"""Inter-axis packing (latency mode): one input per ciphertext, its features
spread over the slots and tiled with period P (a power of two >= every layer
width), so a rotation by i moves feature j+i to slot j for every tile.

Dense layers use the diagonal method with baby-step/giant-step rotations
(Halevi-Shoup): y = sum_k rot_{k g}( sum_j diag'_{k g + j} * rot_j(x) ), where
diag'_i is diagonal i of the padded P x P weight matrix pre-rotated by -k g.
That costs about 2 sqrt(P) rotations per layer instead of P. Supported graphs:
Gemm/MatMul layers with element-wise constants, Flatten/Reshape/Identity and
activations (polynomial, or client-aided on the decrypted vector).
"""

from __future__ import annotations

import math
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
            raise UnsupportedOperator(f"[nn.load] packing='inter' supports dense models only; operator '{n.op}' at "
                                      f"node '{n.name}' needs packing='batch'")
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
    """Evaluates a dense graph on tiled ciphertexts (one per sample)."""

    def __init__(self, graph: Graph, ctx, polys: dict, period: int, cache: dict | None = None):
        self.graph, self.ctx, self.polys, self.period = graph, ctx, polys, period
        self.g = giant_step(period)
        self.cache = {} if cache is None else cache  # encoded diagonals, reused across samples

    def _matvec(self, ct, w_out_in, bias, name=""):
        """W x (+ bias) with the scheme's BSGS linear transform (hoisted baby steps,
        g of them, so the Galois keys are rotation_steps(P)), landing on the next
        level's canonical scale."""
        from ..ckks import LinearTransform

        ctx, p = self.ctx, self.period
        level = ct.level
        if level == 0:
            raise ValueError(f"[nn] out of levels at node '{name}' (dense layer); see Model.plan()")
        scale = ctx.landing_scale(level, ct.scale)
        key = (name, level, round(scale))
        lt = self.cache.get(key)
        if lt is None:
            padded = np.zeros((p, p))
            padded[:w_out_in.shape[0], :w_out_in.shape[1]] = w_out_in
            lt = self.cache[key] = LinearTransform(ctx, padded, level=level, scale=scale, baby_steps=self.g)
        out = ctx.evaluator(ct.keys).linear_transform(ct, lt)
        if np.any(bias):
            out = out + tile(bias, p, ctx.slots)
        return out

    def run(self, ct, client=None, masker=None):
        values = {self.graph.input_name: ct}
        for node in self.graph.nodes:
            values[node.outputs[0]] = OPERATORS[node.op].inter.run(self, node, values[node.inputs[0]], client, masker)
        return values[self.graph.output_names[0]]

    def levels_needed(self, masking: bool = False) -> int:
        """The most levels any stretch between (re-)encryptions consumes."""
        need = used = 0
        for node in self.graph.nodes:
            peak, used = OPERATORS[node.op].inter.levels(self, node, used, masking)
            need = max(need, peak)
        return need


# ---- the operators under inter-axis packing (attached to the operator registry) --------

@dataclass(frozen=True)
class InterOp:
    """``run(runner, node, x, client, masker)`` -> the output ciphertext;
    ``levels(runner, node, used, masking)`` -> (the most levels used while it runs, levels used after);
    ``widths(node, graph)`` -> the vector widths it needs the period to cover."""
    run: Callable
    levels: Callable
    widths: Callable = lambda node, graph: ()


def _dense(runner, node, x, client, masker):
    w, b = dense_weights(node, runner.graph)
    return runner._matvec(x, w, b, node.name)


def _identity(runner, node, x, client, masker):
    return x


def _with_constant(runner, node, x, client, masker):
    c = runner.graph.constants.get(node.inputs[1])
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


for _name in ("Gemm", "MatMul"):
    attach(_name, inter=InterOp(_dense, _one_level, _dense_widths))
for _name in ("Flatten", "Reshape", "Identity"):
    attach(_name, inter=InterOp(_identity, _no_level))
for _name in ("Add", "Sub", "Mul"):
    attach(_name, inter=InterOp(_with_constant, _mul_levels))
# Element-wise activations work on the tiled slot vector as they are (PRelu's
# per-channel slope would not line up with the tiling).
for _name in sorted(set(ELEMENTWISE) - {"PRelu"}):
    attach(_name, inter=InterOp(_activation, _activation_levels))
