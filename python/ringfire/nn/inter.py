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
from .executor import gemm_weights
from .graph import Graph, UnsupportedOperator

INTER_OPS = {"Gemm", "MatMul", "Add", "Sub", "Mul", "Flatten", "Reshape", "Identity", "Relu", "Clip"}


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
        ctx, p, g = self.ctx, self.period, self.g
        slots = ctx.slots
        padded = np.zeros((p, p))
        padded[:w_out_in.shape[0], :w_out_in.shape[1]] = w_out_in
        ev = ctx.evaluator(ct.keys)
        # Baby steps share one ModUp of the input (hoisted rotations).
        baby = dict(zip(range(g), [ct] + ev.rotate_many(ct, list(range(1, g))))) if g > 1 else {0: ct}
        level = ct.level
        delta = ctx.scale_at(level - 1) * ctx.params.q_primes[level] / ct.scale
        out = None
        idx = np.arange(p)
        for k in range(0, p, g):
            inner = None
            for j in range(g):
                i = k + j
                if i >= p:
                    break
                diag = padded[idx, (idx + i) % p]          # diag_i[t] = W[t, t+i]
                if not np.any(diag):
                    continue
                key = (name, i, level, round(delta))
                pt = self.cache.get(key)
                if pt is None:
                    pre = np.roll(diag, k)                  # rotated by -k so the giant step realigns it
                    pt = self.cache[key] = ctx.encode(np.tile(pre, slots // p), level=level, scale=delta)
                term = ev.multiply_plain(baby[j], pt)
                inner = term if inner is None else ev.add(inner, term)
            if inner is None:
                continue
            if k:
                inner = ev.rotate(inner, k)
            out = inner if out is None else ev.add(out, inner)
        out = ev.rescale(out)
        if np.any(bias):
            out = out + tile(bias, p, slots)
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
            elif node.op in ("Relu", "Clip"):
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
            elif node.op in ("Relu", "Clip"):
                used = used + self.polys[node.name].depth if node.name in self.polys else 0
            need = max(need, used)
        return need
