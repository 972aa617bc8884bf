"""The operator registry: every ONNX operator the executor runs, in one table.

Each entry names the operator, its kind and the function that runs it on any
runtime (plaintext reference, encrypted batch packing, the planner's counting
runtime):

* ``linear``: a linear map of one tensor with constant weights (Conv, Gemm,
  BatchNormalization, pooling by averages, ...); the runtime applies it with
  ``rt.linear`` (one level when it multiplies by non-integers);
* ``binary``: Add, Sub and Mul of a tensor with a constant or another tensor;
* ``nonlinear``: the layers of :mod:`.nonlinear` (the key holder computes them
  in client-aided mode, polynomials otherwise);
* ``structural``: operators that only move elements (Reshape, Transpose,
  Concat, Pad, Slice, ...); free under every packing.

``graph.py`` accepts exactly these operators at load (and names the node and a
hint for the others), and the executor dispatches through the table. A handler
receives the executor (its runtime ``ex.rt`` and constants ``ex.const``), the
node, its first input's value and per-sample shape, and every value and shape
computed so far; it returns the output value and shape.

Beside ``run``, an entry may carry ``terms`` (the multiply-adds of a linear map,
which the planner counts; without it, one per output or input value) and
``inter`` (how inter-axis packing runs the operator, filled in by
:mod:`.inter`; operators without it need batch packing).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from . import linear_maps as lm
from .nonlinear import ELEMENTWISE, PER_SAMPLE

KINDS = ("linear", "binary", "nonlinear", "structural")


@dataclass(frozen=True)
class Operator:
    name: str
    kind: str
    run: Callable
    terms: Callable | None = None  # (node, graph, in_shape, out_shape) -> multiply-adds of a linear map
    inter: object | None = None    # inter.InterOp: the operator under inter-axis packing


OPERATORS: dict[str, Operator] = {}


def _register(*names: str, kind: str, terms: Callable | None = None):
    assert kind in KINDS, kind

    def add(run):
        for name in names:
            OPERATORS[name] = Operator(name, kind, run, terms)
        return run
    return add


def attach(name: str, **fields) -> None:
    """Adds a packing's behaviour (``inter=...``) to a registered operator."""
    OPERATORS[name] = replace(OPERATORS[name], **fields)


def linear_terms(node, graph, in_shape, out_shape) -> int:
    """The multiply-adds a linear node costs the encrypted run, as the planner counts them."""
    op = OPERATORS.get(node.op)
    if op is not None and op.terms is not None:
        return int(op.terms(node, graph, tuple(in_shape), tuple(out_shape)))
    return max(int(np.prod(out_shape)), int(np.prod(in_shape)))  # element-wise: one term per value


def per_sample_const(value: np.ndarray, rank: int) -> np.ndarray:
    """An ONNX constant broadcast against (batch, *sample) -> its per-sample part."""
    value = np.asarray(value, dtype=np.float64)
    while value.ndim > rank:
        if value.shape[0] != 1:
            raise ValueError(f"[nn] a constant of shape {value.shape} varies along the batch axis")
        value = value[0]
    return value


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


def conv_output_shape(in_shape, w_shape, strides, pads, dil):
    c, h, w = in_shape
    m, _, kh, kw = w_shape
    oh = (h + pads[0] + pads[2] - dil[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (w + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) // strides[1] + 1
    return (m, oh, ow)


def _check_pool_attrs(node, ceil_mode_ok: bool = False) -> None:
    a = node.attrs
    if a.get("ceil_mode", 0) and not ceil_mode_ok:
        raise ValueError(f"[nn] node '{node.name}': {node.op} with ceil_mode=1 is not supported")
    if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET", b"VALID", "VALID"):
        raise ValueError(f"[nn] node '{node.name}': {node.op} auto_pad is not supported; export explicit pads")
    if any(d != 1 for d in a.get("dilations", (1, 1))):
        raise ValueError(f"[nn] node '{node.name}': {node.op} with dilation is not supported")


def _same_size_const(node, shape, const) -> np.ndarray:
    c = per_sample_const(const, len(shape))
    if np.broadcast_shapes(shape, c.shape) != tuple(shape):
        raise ValueError(f"[nn] node '{node.name}': a constant may not enlarge the tensor")
    return c


# ---- linear maps ------------------------------------------------------------------

def conv_terms(node, graph, in_shape, out_shape) -> int:
    """Multiply-adds of a Conv with the taps over zero padding left out (the encrypted run skips them)."""
    m, c_per_group, kh, kw = graph.constants[node.inputs[1]].shape
    _, h, w = in_shape
    pads = tuple(node.attrs.get("pads", (0,) * 4))
    sh, sw = tuple(node.attrs.get("strides", (1, 1)))
    dh, dw = tuple(node.attrs.get("dilations", (1, 1)))

    def valid_taps(size, k, s, d, lo, hi):
        out = (size + lo + hi - d * (k - 1) - 1) // s + 1
        return sum(sum(0 <= o * s - lo + t * d < size for t in range(k)) for o in range(out))

    return m * c_per_group * valid_taps(h, kh, sh, dh, pads[0], pads[2]) * valid_taps(w, kw, sw, dw, pads[1], pads[3])


def _dense_terms(node, graph, in_shape, out_shape) -> int:
    inputs = in_shape[-1] if node.op == "MatMul" else int(np.prod(in_shape))
    return int(np.prod(out_shape)) * int(inputs)


def _pool_terms(node, graph, in_shape, out_shape) -> int:
    return int(np.prod(out_shape)) * int(np.prod(node.attrs["kernel_shape"]))


@_register("Conv", kind="linear", terms=conv_terms)
def _conv(ex, node, x, shape, values, shapes):
    a = node.attrs
    w = ex.const(node.inputs[1])
    b = ex.const(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    k = w.shape[2:]
    pads = tuple(a.get("pads", (0,) * 4))
    strides = tuple(a.get("strides", (1, 1)))
    dil = tuple(a.get("dilations", (1, 1)))
    group = int(a.get("group", 1))
    if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise ValueError(f"[nn] node '{node.name}': auto_pad is not supported; export explicit pads")
    if len(k) != 2:
        raise ValueError(f"[nn] node '{node.name}': only 2-D convolutions are supported")
    return ex.rt.linear(x, shape, lambda: lm.conv(shape, w, b, strides, pads, dil, group),
                        conv_output_shape(shape, w.shape, strides, pads, dil), node)


@_register("Gemm", kind="linear", terms=_dense_terms)
def _gemm(ex, node, x, shape, values, shapes):
    w_in_out, bias = gemm_weights(node, ex.graph.constants)
    flat = (int(np.prod(shape)),)
    return ex.rt.linear(x, flat, lambda: lm.matrix(flat, w_in_out, bias), (w_in_out.shape[1],), node)


@_register("MatMul", kind="linear", terms=_dense_terms)
def _matmul(ex, node, x, shape, values, shapes):
    w = ex.const(node.inputs[1])
    if w is None or w.ndim != 2:
        raise ValueError(f"[nn] node '{node.name}': MatMul needs a constant 2-D right operand")
    return ex.rt.linear(x, shape, lambda: lm.matrix(shape, w), tuple(shape[:-1]) + (w.shape[1],), node)


@_register("Div", kind="linear")
def _div(ex, node, x, shape, values, shapes):
    divisor = ex.const(node.inputs[1])
    if divisor is None:
        raise ValueError(f"[nn] node '{node.name}': division by an encrypted tensor is not supported "
                         "(only by constants)")
    c = _same_size_const(node, shape, 1.0 / np.asarray(divisor, dtype=np.float64))
    return ex.rt.linear(x, shape, lambda: lm.elementwise(shape, c, 0.0), shape, node)


@_register("ReduceMean", kind="linear")
def _reduce_mean(ex, node, x, shape, values, shapes):
    axes = _reduce_axes(ex, node, len(shape))
    keep = bool(node.attrs.get("keepdims", 1))
    out_shape = tuple(1 if i in axes else s for i, s in enumerate(shape) if keep or i not in axes)
    return ex.rt.linear(x, shape, lambda: lm.reduce_mean(shape, axes, keep), out_shape, node)


@_register("BatchNormalization", kind="linear")
def _batch_norm(ex, node, x, shape, values, shapes):
    gamma, beta, mean, var = (ex.const(n) for n in node.inputs[1:5])
    f = gamma / np.sqrt(var + float(node.attrs.get("epsilon", 1e-5)))
    bshape = (-1,) + (1,) * (len(shape) - 1)
    return ex.rt.linear(x, shape, lambda: lm.elementwise(shape, f.reshape(bshape), (beta - mean * f).reshape(bshape)),
                        shape, node)


@_register("AveragePool", kind="linear", terms=_pool_terms)
def _average_pool(ex, node, x, shape, values, shapes):
    a = node.attrs
    k = tuple(a["kernel_shape"])
    _check_pool_attrs(node)
    strides = tuple(a.get("strides", (1,) * len(k)))  # ONNX default: 1
    pads = tuple(a.get("pads", (0,) * 4))
    inc = bool(a.get("count_include_pad", 0))
    out_shape = conv_output_shape(shape, (shape[0], 1) + k, strides, pads, (1, 1))
    return ex.rt.linear(x, shape, lambda: lm.average_pool(shape, k, strides, pads, inc), out_shape, node)


@_register("GlobalAveragePool", kind="linear")
def _global_average_pool(ex, node, x, shape, values, shapes):
    return ex.rt.linear(x, shape, lambda: lm.global_average_pool(shape), (shape[0],) + (1,) * (len(shape) - 1),
                        node)


# ---- tensor with a constant or a tensor ------------------------------------------

@_register("Add", "Sub", "Mul", kind="binary")
def _binary(ex, node, x, shape, values, shapes):
    op, rt = node.op, ex.rt
    x_name, other_name = node.inputs[0], node.inputs[1]
    const = ex.const(other_name)
    if const is None and x_name in ex.graph.constants:  # constant on the left
        x, shape, const = values[other_name], shapes[other_name], ex.const(x_name)
        if op == "Sub":  # c - x = (-x) + c
            x = rt.linear(x, shape, lambda: lm.elementwise(shape, -1.0, 0.0), shape, node)[0]
            op = "Add"
    if const is not None:
        c = _same_size_const(node, shape, const)
        if op == "Mul":
            return rt.linear(x, shape, lambda: lm.elementwise(shape, c, 0.0), shape, node)
        return rt.add_const(x, np.broadcast_to(-c if op == "Sub" else c, shape)), shape
    y, y_shape = values[other_name], tuple(shapes[other_name])
    if y_shape != tuple(shape):
        x, y, shape = _broadcast_pair(ex, node, x, tuple(shape), y, y_shape)
    if op == "Mul":
        return rt.mul(x, y, node), shape
    return rt.add(x, y, subtract=(op == "Sub")), shape


def _broadcast_pair(ex, node, x, x_shape, y, y_shape):
    """Two encrypted operands of different per-sample shapes, broadcast as ONNX does (a
    squeeze-and-excitation block's x * s with s of shape (C, 1, 1)): each is repeated to
    the common shape by reference, which costs no level."""
    try:
        if len(x_shape) != len(y_shape):
            raise ValueError
        target = tuple(np.broadcast_shapes(x_shape, y_shape))
    except ValueError:
        raise ValueError(f"[nn] node '{node.name}': encrypted operands of per-sample shapes {x_shape} and "
                         f"{y_shape} do not broadcast (equal ranks, sizes equal or 1)") from None

    def repeat(t, shape):
        if shape == target:
            return t
        grid = np.indices(target)
        return ex.rt.repeat(t, tuple(g if s == n else np.zeros_like(g) for g, s, n in zip(grid, shape, target)), target)

    return repeat(x, x_shape), repeat(y, y_shape), target


@_register("TensorMatMul", kind="binary")
def _tensor_matmul(ex, node, x, shape, values, shapes):
    """ONNX MatMul of two tensors, (..., m, k) by (..., k, n) per sample (the graph renames
    such a MatMul): for each of the k inner indices, the products of the matching columns
    and rows as one product of tensors, then their sum, which costs no level. One level in
    all, m k n products of ciphertexts."""
    other, other_shape, shape = values[node.inputs[1]], tuple(shapes[node.inputs[1]]), tuple(shape)
    if len(shape) < 2 or len(other_shape) != len(shape) or shape[:-2] != other_shape[:-2] \
            or shape[-1] != other_shape[-2]:
        raise ValueError(f"[nn] node '{node.name}': MatMul of two tensors needs per-sample shapes (..., m, k) and "
                         f"(..., k, n), got {shape} and {other_shape}")
    out_shape = shape[:-1] + other_shape[-1:]
    grid = tuple(np.indices(out_shape))  # the output's coordinates, one array per axis
    total = None
    for inner in range(shape[-1]):
        at = np.full(out_shape, inner)
        # The operands' ciphertexts repeated by reference (no new ones), for this product only.
        column = ex.rt.repeat(x, grid[:-1] + (at,), out_shape)          # x[..., i, inner] at (..., i, j)
        row = ex.rt.repeat(other, grid[:-2] + (at, grid[-1]), out_shape)  # other[..., inner, j] at (..., i, j)
        product = ex.rt.mul(column, row, node)
        if total is None:
            total = product
            continue
        summed = ex.rt.add(total, product)
        ex.rt.release(total)  # only the running sum lives on: one product and one sum at a time
        ex.rt.release(product)
        total = summed
    return total, out_shape


# ---- non-linear layers (nonlinear.py's table) ---------------------------------------

def _nonlinear(ex, node, x, shape, values, shapes):
    if node.op == "MaxPool":
        _check_pool_attrs(node, ceil_mode_ok=True)
    return ex.rt.nonlinear(node, x, shape)


for _name in sorted(set(ELEMENTWISE) | PER_SAMPLE):
    _register(_name, kind="nonlinear")(_nonlinear)


# ---- structural -----------------------------------------------------------------------

@_register("Identity", "Dropout", kind="structural")
def _identity(ex, node, x, shape, values, shapes):
    return x, shape  # Dropout: load() refuses the training mode, so it is the identity here


@_register("Slice", kind="structural")
def _slice(ex, node, x, shape, values, shapes):
    index = _slice_index(ex, node, shape)
    out_shape = np.empty(shape, dtype=np.int8)[index].shape
    return ex.rt.select(x, index, out_shape), out_shape


@_register("Gather", kind="structural")
def _gather(ex, node, x, shape, values, shapes):
    """Elements picked by constant indices along one per-sample axis (torch's ``x[..., i]``,
    ``unbind``, the q/k/v of a packed projection): a selection, like Slice."""
    indices = ex.const(node.inputs[1])
    if indices is None:
        raise ValueError(f"[nn] node '{node.name}': Gather needs constant indices (indexing by encrypted values is "
                         "not linear in them)")
    axis = int(node.attrs.get("axis", 0))
    full = axis + len(shape) + 1 if axis < 0 else axis
    if full == 0:
        raise ValueError(f"[nn] node '{node.name}': Gather along the batch axis mixes samples")
    size = shape[full - 1]
    picked = np.where(np.asarray(indices) < 0, np.asarray(indices) + size, np.asarray(indices)).astype(np.int64)
    index = [slice(None)] * len(shape)
    index[full - 1] = picked if picked.ndim else int(picked)
    out_shape = np.empty(shape, dtype=np.int8)[tuple(index)].shape
    return ex.rt.select(x, tuple(index), out_shape), out_shape


@_register("Flatten", kind="structural")
def _flatten(ex, node, x, shape, values, shapes):
    if int(node.attrs.get("axis", 1)) != 1:
        raise ValueError(f"[nn] node '{node.name}': Flatten only along axis 1 (after the batch)")
    new = (int(np.prod(shape)),)
    return ex.rt.reshape(x, shape, new), new


@_register("Reshape", "Squeeze", "Unsqueeze", kind="structural")
def _reshape(ex, node, x, shape, values, shapes):
    new = ex.graph.shapes.get(node.outputs[0])
    if new is None and node.op == "Reshape":
        target = [int(v) for v in ex.const(node.inputs[1])][1:]
        target = [shape[i] if t == 0 else t for i, t in enumerate(target)]
        if -1 in target:
            known = int(np.prod([t for t in target if t != -1]))
            target[target.index(-1)] = int(np.prod(shape)) // known
        new = tuple(target)
    if new is None:
        raise ValueError(f"[nn] node '{node.name}': output shape unknown (run ONNX shape inference)")
    if int(np.prod(new)) != int(np.prod(shape)):
        raise ValueError(f"[nn] node '{node.name}': reshape {shape} -> {new} changes the batch axis")
    return ex.rt.reshape(x, shape, tuple(new)), tuple(new)


@_register("Transpose", kind="structural")
def _transpose(ex, node, x, shape, values, shapes):
    perm = list(node.attrs.get("perm", []))
    if not perm or perm[0] != 0:
        raise ValueError(f"[nn] node '{node.name}': transposes must keep the batch axis first")
    p = [v - 1 for v in perm[1:]]
    return ex.rt.transpose(x, p), tuple(shape[i] for i in p)


@_register("Concat", kind="structural")
def _concat(ex, node, x, shape, values, shapes):
    axis = int(node.attrs["axis"])
    if axis < 0:
        axis += len(shape) + 1  # ONNX axes count the batch axis
    if axis == 0:
        raise ValueError(f"[nn] node '{node.name}': cannot concatenate along the batch axis")
    axis -= 1
    out_shape = list(shape)
    out_shape[axis] = sum(shapes[n][axis] for n in node.inputs)
    return ex.rt.concat([values[n] for n in node.inputs], axis), tuple(out_shape)


@_register("Pad", kind="structural")
def _pad(ex, node, x, shape, values, shapes):
    a = node.attrs
    mode = a.get("mode", b"constant")
    pads = ex.const(node.inputs[1]) if len(node.inputs) > 1 else np.array(a.get("pads"))
    value = ex.const(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else 0.0
    if mode not in (b"constant", "constant") or float(np.asarray(value)) != 0.0:
        raise ValueError(f"[nn] node '{node.name}': only zero constant padding is supported")
    pads = [int(v) for v in pads]
    r = len(pads) // 2
    if pads[0] or pads[r]:
        raise ValueError(f"[nn] node '{node.name}': cannot pad the batch axis")
    widths = [(pads[i], pads[i + r]) for i in range(1, r)]
    out_shape = tuple(s + lo + hi for s, (lo, hi) in zip(shape, widths))
    return ex.rt.pad(x, widths), out_shape


# ---- attribute helpers -------------------------------------------------------------

def _reduce_axes(ex, node, rank: int) -> tuple[int, ...]:
    """ReduceMean's axes per sample (attribute before opset 18, then an input)."""
    axes = node.attrs.get("axes")
    if len(node.inputs) > 1 and node.inputs[1]:
        axes = ex.const(node.inputs[1])
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


def _slice_index(ex, node, shape) -> tuple:
    """Slice's per-sample index (constant starts/ends/axes/steps; attributes before opset 10)."""
    a = node.attrs

    def operand(i, attr):
        if len(node.inputs) > i and node.inputs[i]:
            value = ex.const(node.inputs[i])
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


def of_kind(*kinds: str) -> frozenset[str]:
    """The registered operator names of the given kinds."""
    return frozenset(name for name, op in OPERATORS.items() if op.kind in kinds)
