"""Walks a :class:`Graph` with a runtime that supplies the arithmetic.

Values are arrays whose *leading* axes are the per-sample tensor axes:

* plaintext runtime: float arrays shaped (*sample_shape, batch);
* encrypted runtime (batch-axis packing): object arrays shaped sample_shape
  holding one Ciphertext per element (the batch lives in its slots), or None
  for an element known to be zero (padding).

Structural operators (Reshape, Flatten, Transpose, Concat, Pad, ...) only
move elements, so they are written once for both.
"""

from __future__ import annotations

import numpy as np

from . import linear_maps as lm
from .graph import Graph, Node
from .nonlinear import NONLINEAR_OPS


def per_sample_const(value: np.ndarray, rank: int) -> np.ndarray:
    """An ONNX constant broadcast against (batch, *sample) -> its per-sample part."""
    value = np.asarray(value, dtype=np.float64)
    while value.ndim > rank:
        if value.shape[0] != 1:
            raise ValueError(f"[nn] a constant of shape {value.shape} varies along the batch axis")
        value = value[0]
    return value


class Executor:
    def __init__(self, graph: Graph, runtime):
        self.graph = graph
        self.rt = runtime

    def run(self, x, on_node=None):
        """Runs the graph on ``x``; ``on_node(node)`` is called after each node."""
        values = {self.graph.input_name: x}
        shapes = {self.graph.input_name: tuple(self.graph.input_shape)}
        last_use = {}
        for i, node in enumerate(self.graph.nodes):
            for name in node.inputs:
                last_use[name] = i
        for i, node in enumerate(self.graph.nodes):
            out, shape = self._node(node, values, shapes)
            values[node.outputs[0]], shapes[node.outputs[0]] = out, shape
            self.rt.after_node(node, out, shape)
            if on_node is not None:
                on_node(node)
            for name in node.inputs:  # free activations nobody needs any more
                if last_use.get(name) == i and name in values and name not in self.graph.output_names \
                        and name != self.graph.input_name:
                    value = values.pop(name)
                    # Reshape-like operators return their input: it is still alive under another name.
                    if not any(v is value for v in values.values()):
                        self.rt.release(value)
        return [values[name] for name in self.graph.output_names], [shapes[n] for n in self.graph.output_names]

    # ---- one node -------------------------------------------------------------
    def _const(self, name):
        return self.graph.constants.get(name)

    def _node(self, node: Node, values, shapes):
        op, a = node.op, node.attrs
        x_name = node.inputs[0]
        x = values.get(x_name)
        shape = shapes.get(x_name)
        rt = self.rt
        if op == "Conv":
            w = self._const(node.inputs[1])
            b = self._const(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
            k = w.shape[2:]
            pads = tuple(a.get("pads", (0,) * 4))
            strides = tuple(a.get("strides", (1, 1)))
            dil = tuple(a.get("dilations", (1, 1)))
            group = int(a.get("group", 1))
            if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
                raise ValueError(f"[nn] node '{node.name}': auto_pad is not supported; export explicit pads")
            if len(k) != 2:
                raise ValueError(f"[nn] node '{node.name}': only 2-D convolutions are supported")
            return rt.linear(x, shape, lambda: lm.conv(shape, w, b, strides, pads, dil, group),
                             lm_shape_conv(shape, w.shape, strides, pads, dil), node)
        if op == "Gemm":
            w_in_out, bias = gemm_weights(node, self.graph.constants)
            flat = (int(np.prod(shape)),)
            return rt.linear(x, flat, lambda: lm.matrix(flat, w_in_out, bias), (w_in_out.shape[1],), node)
        if op == "MatMul":
            w = self._const(node.inputs[1])
            if w is None or w.ndim != 2:
                raise ValueError(f"[nn] node '{node.name}': MatMul needs a constant 2-D right operand")
            return rt.linear(x, shape, lambda: lm.matrix(shape, w), tuple(shape[:-1]) + (w.shape[1],), node)
        if op == "Div":
            divisor = self._const(node.inputs[1])
            if divisor is None:
                raise ValueError(f"[nn] node '{node.name}': division by an encrypted tensor is not supported "
                                 "(only by constants)")
            c = per_sample_const(1.0 / np.asarray(divisor, dtype=np.float64), len(shape))
            if np.broadcast_shapes(shape, c.shape) != tuple(shape):
                raise ValueError(f"[nn] node '{node.name}': a constant may not enlarge the tensor")
            return rt.linear(x, shape, lambda: lm.elementwise(shape, c, 0.0), shape, node)
        if op == "ReduceMean":
            axes = self._reduce_axes(node, len(shape))
            keep = bool(a.get("keepdims", 1))
            out_shape = tuple(1 if i in axes else s for i, s in enumerate(shape) if keep or i not in axes)
            return rt.linear(x, shape, lambda: lm.reduce_mean(shape, axes, keep), out_shape, node)
        if op in ("Add", "Sub", "Mul"):
            other_name = node.inputs[1]
            const = self._const(other_name)
            if const is None and x_name in self.graph.constants:  # constant on the left
                x, shape, const = values[other_name], shapes[other_name], self._const(x_name)
                if op == "Sub":
                    neg = rt.linear(x, shape, lambda: lm.elementwise(shape, -1.0, 0.0), shape, node)[0]
                    x, op = neg, "Add"
            if const is not None:
                c = per_sample_const(const, len(shape))
                out_shape = np.broadcast_shapes(shape, c.shape)
                if out_shape != tuple(shape):
                    raise ValueError(f"[nn] node '{node.name}': a constant may not enlarge the tensor")
                if op == "Mul":
                    return rt.linear(x, shape, lambda: lm.elementwise(shape, c, 0.0), shape, node)
                return rt.add_const(x, np.broadcast_to(-c if op == "Sub" else c, shape)), shape
            y = values[other_name]
            if shapes[other_name] != tuple(shape):
                raise ValueError(f"[nn] node '{node.name}': encrypted operands must have equal shapes, got "
                                 f"{shape} and {shapes[other_name]}")
            if op == "Mul":
                return rt.mul(x, y, node), shape
            return rt.add(x, y, subtract=(op == "Sub")), shape
        if op == "BatchNormalization":
            gamma, beta, mean, var = (self._const(n) for n in node.inputs[1:5])
            f = gamma / np.sqrt(var + float(a.get("epsilon", 1e-5)))
            bshape = (-1,) + (1,) * (len(shape) - 1)
            return rt.linear(x, shape, lambda: lm.elementwise(shape, f.reshape(bshape),
                                                              (beta - mean * f).reshape(bshape)), shape, node)
        if op == "AveragePool":
            k = tuple(a["kernel_shape"])
            _check_pool_attrs(node)
            strides = tuple(a.get("strides", (1,) * len(k)))  # ONNX default: 1
            pads = tuple(a.get("pads", (0,) * 4))
            inc = bool(a.get("count_include_pad", 0))
            out_shape = lm_shape_conv(shape, (shape[0], 1) + k, strides, pads, (1, 1))
            return rt.linear(x, shape, lambda: lm.average_pool(shape, k, strides, pads, inc), out_shape, node)
        if op == "GlobalAveragePool":
            return rt.linear(x, shape, lambda: lm.global_average_pool(shape),
                             (shape[0],) + (1,) * (len(shape) - 1), node)
        if op == "MaxPool":
            _check_pool_attrs(node, ceil_mode_ok=True)
        if op in NONLINEAR_OPS:
            return rt.nonlinear(node, x, shape)
        # ---- structural ----
        if op == "Identity":
            return x, shape
        if op == "Slice":
            index = self._slice_index(node, shape)
            out_shape = np.empty(shape, dtype=np.int8)[index].shape
            return rt.select(x, index, out_shape), out_shape
        if op == "Flatten":
            axis = int(a.get("axis", 1))
            if axis != 1:
                raise ValueError(f"[nn] node '{node.name}': Flatten only along axis 1 (after the batch)")
            new = (int(np.prod(shape)),)
            return rt.reshape(x, shape, new), new
        if op in ("Reshape", "Squeeze", "Unsqueeze"):
            new = self.graph.shapes.get(node.outputs[0])
            if new is None and op == "Reshape":
                target = [int(v) for v in self._const(node.inputs[1])][1:]
                target = [shape[i] if t == 0 else t for i, t in enumerate(target)]
                if -1 in target:
                    known = int(np.prod([t for t in target if t != -1]))
                    target[target.index(-1)] = int(np.prod(shape)) // known
                new = tuple(target)
            if new is None:
                raise ValueError(f"[nn] node '{node.name}': output shape unknown (run ONNX shape inference)")
            if int(np.prod(new)) != int(np.prod(shape)):
                raise ValueError(f"[nn] node '{node.name}': reshape {shape} -> {new} changes the batch axis")
            return rt.reshape(x, shape, tuple(new)), tuple(new)
        if op == "Transpose":
            perm = list(a.get("perm", []))
            if not perm or perm[0] != 0:
                raise ValueError(f"[nn] node '{node.name}': transposes must keep the batch axis first")
            p = [v - 1 for v in perm[1:]]
            return rt.transpose(x, p), tuple(shape[i] for i in p)
        if op == "Concat":
            axis = int(a["axis"])
            if axis < 0:
                axis += len(shape) + 1  # ONNX axes count the batch axis
            if axis == 0:
                raise ValueError(f"[nn] node '{node.name}': cannot concatenate along the batch axis")
            axis -= 1
            parts = [values[n] for n in node.inputs]
            out_shape = list(shape)
            out_shape[axis] = sum(shapes[n][axis] for n in node.inputs)
            return rt.concat(parts, axis), tuple(out_shape)
        if op == "Pad":
            mode = a.get("mode", b"constant")
            pads = self._const(node.inputs[1]) if len(node.inputs) > 1 else np.array(a.get("pads"))
            value = self._const(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else 0.0
            if mode not in (b"constant", "constant") or float(np.asarray(value)) != 0.0:
                raise ValueError(f"[nn] node '{node.name}': only zero constant padding is supported")
            pads = [int(v) for v in pads]
            r = len(pads) // 2
            if pads[0] or pads[r]:
                raise ValueError(f"[nn] node '{node.name}': cannot pad the batch axis")
            widths = [(pads[i], pads[i + r]) for i in range(1, r)]
            out_shape = tuple(s + lo + hi for s, (lo, hi) in zip(shape, widths))
            return rt.pad(x, widths), out_shape
        raise ValueError(f"[nn] operator {op} at node '{node.name}' has no executor")

    def _reduce_axes(self, node, rank: int) -> tuple[int, ...]:
        """ReduceMean's axes per sample (attribute before opset 18, then an input)."""
        axes = node.attrs.get("axes")
        if len(node.inputs) > 1 and node.inputs[1]:
            axes = self._const(node.inputs[1])
            if axes is None:
                raise ValueError(f"[nn] node '{node.name}': ReduceMean needs constant axes")
        if axes is None or len(np.atleast_1d(axes)) == 0:
            if node.attrs.get("noop_with_empty_axes", 0):
                return ()
            axes = range(1, rank + 1)  # every axis; the batch axis is refused below
        out = set()
        for axis in np.atleast_1d(axes):
            full = int(axis) + rank + 1 if int(axis) < 0 else int(axis)
            if full == 0:
                raise ValueError(f"[nn] node '{node.name}': ReduceMean over the batch axis mixes samples")
            out.add(full - 1)
        return tuple(sorted(out))

    def _slice_index(self, node, shape) -> tuple:
        """Slice's per-sample index (constant starts/ends/axes/steps; attributes before opset 10)."""
        a = node.attrs

        def operand(i, attr):
            if len(node.inputs) > i and node.inputs[i]:
                value = self._const(node.inputs[i])
                if value is None:
                    raise ValueError(f"[nn] node '{node.name}': Slice needs constant starts, ends, axes and steps")
                return [int(v) for v in np.atleast_1d(value)]
            return None if attr not in a else [int(v) for v in a[attr]]

        starts, ends = operand(1, "starts"), operand(2, "ends")
        axes = operand(3, "axes") or list(range(len(starts)))
        steps = operand(4, "steps") or [1] * len(starts)
        index = [slice(None)] * len(shape)
        for start, end, axis, step in zip(starts, ends, axes, steps):
            full = axis + len(shape) + 1 if axis < 0 else axis
            if full == 0:
                if start != 0 or step != 1 or end < 2**31 - 1:
                    raise ValueError(f"[nn] node '{node.name}': Slice may not cut the batch axis")
                continue
            big = 2**62  # ONNX uses INT64_MAX/MIN for "to the end": clamp before making a slice
            index[full - 1] = slice(max(min(start, big), -big), max(min(end, big), -big), step)
        return tuple(index)


def gemm_weights(node, constants) -> tuple[np.ndarray, np.ndarray | None]:
    """A Gemm's weight as (in, out) with alpha applied, and its bias times beta (or None)."""
    a = node.attrs
    w = constants.get(node.inputs[1])
    if w is None:
        raise ValueError(f"[nn] node '{node.name}': Gemm needs a constant weight (B)")
    if a.get("transA", 0):
        raise ValueError(f"[nn] node '{node.name}': transA is not supported")
    w = w.T if a.get("transB", 0) else w
    w = w * float(a.get("alpha", 1.0))
    c = constants.get(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    bias = None if c is None else float(a.get("beta", 1.0)) * np.broadcast_to(c, (1, w.shape[1])).reshape(-1)
    return w, bias


def _check_pool_attrs(node, ceil_mode_ok: bool = False) -> None:
    a = node.attrs
    if a.get("ceil_mode", 0) and not ceil_mode_ok:
        raise ValueError(f"[nn] node '{node.name}': {node.op} with ceil_mode=1 is not supported")
    if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET", b"VALID", "VALID"):
        raise ValueError(f"[nn] node '{node.name}': {node.op} auto_pad is not supported; export explicit pads")
    if any(d != 1 for d in a.get("dilations", (1, 1))):
        raise ValueError(f"[nn] node '{node.name}': {node.op} with dilation is not supported")


def lm_shape_conv(in_shape, w_shape, strides, pads, dil):
    c, h, w = in_shape
    m, _, kh, kw = w_shape
    oh = (h + pads[0] + pads[2] - dil[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (w + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) // strides[1] + 1
    return (m, oh, ow)
