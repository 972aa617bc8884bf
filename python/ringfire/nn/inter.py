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

import numpy as np

from ..ckks.batch import tile
from .operators import gemm_weights
from .graph import Graph, UnsupportedOperator
from .nonlinear import ELEMENTWISE

# Element-wise activations work on the tiled slot vector as they are (PRelu's
# per-channel slope would not line up with the tiling).
ACTIVATIONS = set(ELEMENTWISE) - {"PRelu"}
INTER_OPS = {"Gemm", "MatMul", "Add", "Sub", "Mul", "Flatten", "Reshape", "Identity"} | ACTIVATIONS


def period_for(graph: Graph) -> int:
    widths = [int(np.prod(graph.input_shape))]
    for n in graph.nodes:
        if n.op not in INTER_OPS:
            raise UnsupportedOperator(f"[nn.load] packing='inter' supports dense models only; operator '{n.op}' at "
                                      f"node '{n.name}' needs packing='batch'")
        if n.op in ("Gemm", "MatMul"):
            w = graph.constants[n.inputs[1]]
            widths += list(w.shape)
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

    def run(self, ct, client=None):
        values = {self.graph.input_name: ct}
        for node in self.graph.nodes:
            x = values[node.inputs[0]]
            if node.op in ("Gemm", "MatMul"):
                w, b = dense_weights(node, self.graph)
                y = self._matvec(x, w, b, node.name)
            elif node.op in ("Flatten", "Reshape", "Identity"):
                y = x
            elif node.op in ("Add", "Sub", "Mul"):
                c = self.graph.constants.get(node.inputs[1])
                if c is None:
                    raise UnsupportedOperator(f"[nn] packing='inter': '{node.op}' of two tensors at '{node.name}'")
                vec = tile(np.asarray(c, dtype=np.float64).reshape(-1), self.period, self.ctx.slots)
                if node.op == "Mul" and np.asarray(c).size != 1:
                    raise UnsupportedOperator(f"[nn] packing='inter': element-wise Mul at '{node.name}'")
                y = x * float(np.asarray(c).reshape(-1)[0]) if node.op == "Mul" else (x + vec if node.op == "Add"
                                                                                      else x - vec)
            elif node.op in ACTIVATIONS:
                if node.name in self.polys:
                    y = self.polys[node.name].evaluate_encrypted(x)
                else:
                    if client is None:
                        raise ValueError(f"[nn] node '{node.name}' is client-aided: pass client=LocalClient(...)")
                    y = client.apply_vector(node, x)
            else:
                raise UnsupportedOperator(f"[nn] packing='inter': operator '{node.op}' at '{node.name}'")
            values[node.outputs[0]] = y
        return values[self.graph.output_names[0]]

    def levels_needed(self) -> int:
        need = used = 0
        for node in self.graph.nodes:
            if node.op in ("Gemm", "MatMul"):
                used += 1
            elif node.op == "Mul":
                used += 1
            elif node.op in ACTIVATIONS:
                used = used + self.polys[node.name].depth if node.name in self.polys else 0
            need = max(need, used)
        return need
