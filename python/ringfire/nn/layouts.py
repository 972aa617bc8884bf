"""Where a sample's elements sit in the slots under inter-axis packing.

Every tensor of a sample has a layout: element i (C-order) sits in slot ``slots[i]`` of
each period P. A linear layer is one BSGS transform whatever the layouts of its input
and output (diagonal k gathers the terms that read slot (r + k) mod P into slot r), but
how many nonzero diagonals it has, and so its encoded bytes and its rotations, depends
on them:

* **compact**: C-order, (c, y, x) -> (c H + y) W + x. A stride-1 convolution has at most
  (C + C' - 1) * 9 diagonals, but a strided one is nearly dense: the offset from an
  output to its inputs grows with the output's position. ResNet-20's first downsampling
  convolution at 32x32 has all 16384 diagonals of its period.
* **multiplexed** (Lee et al., "Low-complexity deep convolutional neural networks on
  fully homomorphic encryption using multiplexed parallel convolutions", ICML 2022): a
  layer with stride s keeps its output on its input's grid, every s-th row and column,
  and fills the gaps with channels. With gap k, channel c sits in block c // k^2 of the
  grid, at ((c mod k^2) // k, c mod k) inside each k x k cell. An output element's slot
  then differs from its inputs' by amounts that do not depend on its position, so a
  strided convolution keeps a few hundred diagonals (ResNet-20 at 32x32: 14316 in all
  instead of 70618), at the price of somewhat more in the layers after it.

:func:`layout_plan` assigns both and keeps the one with fewer diagonals (multiplexed
only where its period is no wider). A residual sum needs its two operands in one
layout; a graph whose multiplexed layouts disagree there runs compact, where the runner
moves the second operand onto the first's layout (one transform).

Two more rules serve attention (one sequence per ciphertext):

* **aligned** (:func:`aligned`): a MatMul's output row stays on its input row's slots
  (blocks as wide as the input's span hold the columns beyond the input's width), where
  C-order would give each row a different offset to its input, so a (32, 128) by (128, 384)
  projection has 765 diagonals instead of about 16 000;
* **moved** (:func:`moved`): Transpose, Slice, Gather, Reshape, Squeeze and Unsqueeze move
  no element; their output's layout is their input's slots moved as they move elements.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .graph import Graph, UnsupportedOperator
from .linear_maps import LinearMap
from .nonlinear import PER_SAMPLE
from .operators import OPERATORS

# Linear layers whose map is diagonal (one weight per element): the output keeps the input's layout.
_PER_ELEMENT = ("BatchNormalization", "Div")
# Linear layers that keep an image's geometry: the output may stay on the input's grid.
_SPATIAL = ("Conv", "AveragePool", "GlobalAveragePool", "ReduceMean")


@dataclass(frozen=True, eq=False)
class Layout:
    """``slots[i]``: the slot of element i (C-order). ``grid``: (gap, rows, columns) when the
    tensor is a (C, H, W) image laid out on such a grid (see the module's docstring)."""

    slots: np.ndarray
    grid: tuple[int, int, int] | None = None

    @property
    def span(self) -> int:
        return int(self.slots.max()) + 1 if self.slots.size else 1

    def scatter(self, values: np.ndarray, period: int) -> np.ndarray:
        """A length-``period`` vector holding ``values`` (C-order) in this layout, zeros elsewhere."""
        out = np.zeros(period)
        out[self.slots] = np.asarray(values, dtype=np.float64).reshape(-1)
        return out


def spatial(shape, gap: int, rows: int, cols: int) -> Layout:
    """A (C, H, W) tensor on a rows x cols grid with gap ``gap`` (gap 1 with H x W is compact)."""
    c, h, w = shape
    cc, yy, xx = np.meshgrid(np.arange(c), np.arange(h), np.arange(w), indexing="ij")
    cell = cc % (gap * gap)
    slots = (cc // (gap * gap)) * rows * cols + (gap * yy + cell // gap) * cols + gap * xx + cell % gap
    return Layout(_read_only(slots.reshape(-1).astype(np.int64)), (gap, rows, cols))


def compact(shape) -> Layout:
    shape = tuple(int(s) for s in shape)
    if len(shape) == 3:
        return spatial(shape, 1, shape[1], shape[2])
    return Layout(_read_only(np.arange(int(np.prod(shape)), dtype=np.int64)))


def describe(layout: Layout, shape) -> dict:
    """What the key holder needs to rebuild ``layout`` of a tensor of ``shape`` (a layer it
    applies on the decrypted vector reads and writes elements there): the shape and the grid;
    where those do not determine it, an offset and one stride per axis (a Transpose, a Slice or
    the heads split off a projection move a C-order layout to such a one), else the runs of
    consecutive slots in element order. All of it small enough for a header."""
    shape = [int(s) for s in shape]
    desc = {"shape": shape, "grid": [int(g) for g in layout.grid] if layout.grid and len(shape) == 3 else None}
    if np.array_equal(rebuilt(desc).slots, layout.slots):
        return desc
    slots = layout.slots.reshape(shape)
    origin = (0,) * len(shape)
    strides = [int(slots[tuple(1 if b == a else 0 for b in range(len(shape)))]) - int(slots[origin]) if n > 1 else 0
               for a, n in enumerate(shape)]
    affine = {"shape": shape, "grid": None, "offset": int(slots[origin]) if slots.size else 0, "strides": strides}
    if np.array_equal(_strided(shape, affine["offset"], strides), layout.slots):
        return affine
    breaks = np.flatnonzero(np.diff(layout.slots) != 1) + 1
    starts = np.concatenate([[0], breaks])
    lengths = np.diff(np.concatenate([starts, [layout.slots.size]]))
    return {"shape": shape, "grid": None, "runs": [[int(layout.slots[a]), int(n)] for a, n in zip(starts, lengths)]}


def _strided(shape, offset: int, strides) -> np.ndarray:
    index = np.indices(tuple(shape)).reshape(len(shape), -1)
    return (int(offset) + np.asarray(strides, dtype=np.int64) @ index).astype(np.int64)


def rebuilt(desc: dict) -> Layout:
    """The layout :func:`describe` described. The fields come from the server: an offset
    and strides, or runs, must give as many distinct non-negative slots as the shape has
    elements (checked before the runs are expanded)."""
    try:
        return _rebuilt(desc)
    except (TypeError, KeyError, OverflowError, ValueError) as error:  # a malformed description, from the server
        if str(error).startswith("[nn]"):
            raise
        raise ValueError(f"[nn] a malformed layout description: {type(error).__name__}: {error}") from None


def _rebuilt(desc: dict) -> Layout:
    shape = tuple(int(s) for s in desc["shape"])
    size = int(np.prod(shape, dtype=object))
    if desc.get("strides") is not None:
        if len(desc["strides"]) != len(shape):
            raise ValueError(f"[nn] a layout of shape {shape} needs {len(shape)} strides, got {len(desc['strides'])}")
        numbers = [int(desc.get("offset", 0))] + [int(v) for v in desc["strides"]]
        if any(abs(v) >= 2**40 for v in numbers):
            raise ValueError(f"[nn] a layout's offset and strides must be below 2^40 in size, got {numbers}")
        slots = _strided(shape, numbers[0], numbers[1:])
    elif desc.get("runs") is not None:
        runs = np.asarray([[int(a), int(n)] for a, n in desc["runs"] if abs(int(a)) < 2**40 and 0 < int(n) <= size],
                          dtype=np.int64).reshape(-1, 2)
        if runs[:, 1].min(initial=1) < 1 or int(runs[:, 1].sum()) != size:
            raise ValueError(f"[nn] the runs of a layout of shape {shape} must cover its {size} elements")
        slots = np.concatenate([np.arange(a, a + n) for a, n in runs.tolist()]) if size else np.zeros(0, np.int64)
    else:
        return spatial(shape, *desc["grid"]) if desc.get("grid") else compact(shape)
    if slots.size != size or (size and slots.min() < 0) or np.unique(slots).size != size:
        raise ValueError(f"[nn] a layout of shape {shape} must place its {size} elements in distinct "
                         "non-negative slots")
    return Layout(_read_only(slots.astype(np.int64)))


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False  # shared by every runner and output of the graph
    return a


class _Disagree(UnsupportedOperator):
    """A residual sum's operands landed in different layouts."""


@dataclass
class LayoutPlan:
    """The layout of every tensor of a graph, the period that holds them, and (filled as
    they are asked for) each linear layer's nonzero diagonal offsets."""

    kind: str                      # "compact" or "multiplexed"
    layouts: dict[str, Layout]
    period: int
    _offsets: dict = field(default_factory=dict, repr=False)

    def offsets(self, node, graph: Graph, period: int | None = None, m=None) -> np.ndarray:
        """The distinct nonzero diagonal indices of linear layer ``node`` (mod ``period``),
        from its map ``m`` (built when None), kept for the next call."""
        period = self.period if period is None else period
        key = (node.name, period)
        if key not in self._offsets:
            rows, cols, _ = self.placed(node, linear_map(node, graph) if m is None else m)
            self._offsets[key] = np.unique((cols - rows) % period)
        return self._offsets[key]

    def placed(self, node, m):
        """(output slot, input slot, weight) of every term of ``node``'s map ``m``."""
        return (self.layouts[node.outputs[0]].slots[m.rows], self.layouts[node.inputs[0]].slots[m.cols], m.weights)


def diagonals_of(rows: np.ndarray, cols: np.ndarray, weights, period: int) -> dict[int, np.ndarray]:
    """The nonzero diagonals of the map whose terms read slot ``cols[i]`` into slot ``rows[i]``
    with ``weights[i]`` (a scalar: every term): diag_k[r] = M[r, (r + k) mod period], terms on
    one entry summed."""
    offsets = (cols - rows) % period
    weights = np.broadcast_to(np.asarray(weights, dtype=np.float64), rows.shape)
    order = np.argsort(offsets, kind="stable")
    keys, starts = np.unique(offsets[order], return_index=True)
    out = {}
    for k, r, w in zip(keys.tolist(), np.split(rows[order], starts[1:]), np.split(weights[order], starts[1:])):
        out[k] = np.zeros(period)
        np.add.at(out[k], r, w)
    return out


def shape_of(graph: Graph, name: str) -> tuple[int, ...]:
    shape = _known_shape(graph, name)
    if not shape:
        raise UnsupportedOperator(f"[nn] packing='inter': the shape of tensor '{name}' is unknown")
    return tuple(int(s) for s in shape)


def _known_shape(graph: Graph, name: str):
    """A tensor's per-sample shape, or None where the graph does not say."""
    shape = graph.input_shape if name == graph.input_name else graph.shapes.get(name)
    return None if shape is None else tuple(shape)


class _SlotMover:
    """Runs a structural operator's registry entry on an array of slot indices: its output
    is where each of the output's elements already sits (the elements do not move)."""

    def __init__(self, graph):
        from .runtimes import _ArrayMoves

        self.graph, self.rt = graph, _ArrayMoves()

    def const(self, name):
        return self.graph.constants.get(name)


def is_transform(node) -> bool:
    """Whether inter-axis packing runs ``node`` as one BSGS transform of its map: the linear
    layers, and a zero Pad (its padding must be zeros, which the slots around a tensor need
    not be, so the padded tensor is laid out afresh)."""
    return OPERATORS[node.op].kind == "linear" or node.op == "Pad"


def commuted(graph: Graph) -> None:
    """Puts the tensor first in Add and Mul nodes written constant-first (torch's TorchScript
    exporter adds a bias as ``bias + x``), and the full-size tensor first where the other one
    broadcasts (``gate * x``): the same result, and the form this packing reads."""
    for node in graph.nodes:
        if node.op not in ("Add", "Mul") or len(node.inputs) != 2:
            continue
        first, second = node.inputs
        swap = first in graph.constants and second not in graph.constants
        if first not in graph.constants and second not in graph.constants:
            out, a, b = (_known_shape(graph, name) for name in (node.outputs[0], first, second))
            swap = out is not None and a != out and b == out
        if swap:
            node.inputs[0], node.inputs[1] = second, first


def moved(node, graph: Graph, source: Layout) -> Layout:
    """The layout of a structural node's output (Transpose, Slice, Gather, Reshape, ...): its
    elements stay in their slots, so the layout is the input's slots moved as the operator
    moves the elements. No ciphertext operation, no level."""
    shape = shape_of(graph, node.inputs[0])
    slots, _ = OPERATORS[node.op].run(_SlotMover(graph), node, source.slots.reshape(shape), shape, {}, {})
    return Layout(_read_only(np.ascontiguousarray(slots).reshape(-1).astype(np.int64)))


def _output_layout(node, graph: Graph, source: Layout, multiplexed: bool) -> Layout:
    op = OPERATORS[node.op]
    if op.kind == "linear" and node.op in _PER_ELEMENT:
        return source
    if node.op == "Pad":
        return compact(shape_of(graph, node.outputs[0]))
    if op.kind == "structural" and node.op not in ("Flatten", "Reshape", "Identity", "Dropout"):
        return moved(node, graph, source)
    if node.op == "TensorMatMul":  # laid out like its first operand where the shapes agree (inter_products)
        same = tuple(shape_of(graph, node.outputs[0])) == tuple(shape_of(graph, node.inputs[0]))
        return Layout(source.slots) if same else compact(shape_of(graph, node.outputs[0]))
    if op.kind != "linear":  # element-wise: activations, constants, residual sums, reshapes
        known = graph.shapes.get(node.outputs[0])
        keeps_shape = known is not None and tuple(known) == _known_shape(graph, node.inputs[0])
        return Layout(source.slots, source.grid if keeps_shape else None)
    out_shape = shape_of(graph, node.outputs[0])
    if node.op == "MatMul":
        return _row_layout(node, graph, source, out_shape)
    if not (multiplexed and source.grid and node.op in _SPATIAL and len(out_shape) == 3):
        return compact(out_shape)
    gap, rows, cols = source.grid
    strides = tuple(node.attrs.get("strides", (1, 1))) if node.op in ("Conv", "AveragePool") else (1, 1)
    if len(strides) != 2 or strides[0] != strides[1]:
        return compact(out_shape)
    gap *= int(strides[0])
    if gap * out_shape[1] > rows or gap * out_shape[2] > cols:  # the grid cannot hold it: start afresh
        return compact(out_shape)
    return spatial(out_shape, gap, rows, cols)


def aligned(source: Layout, in_shape, out_shape) -> Layout | None:
    """A matrix product's output (..., n) kept on its input's rows (..., k): element (r, c) sits
    where input element (r, c mod k) does, in block c // k of blocks as wide as the input's span.
    A row then reads only its own slots: about (2 min(k, n) - 1) * ceil(n / k) diagonals, where
    C-order needs one set per row when n != k (a (32, 128) by (128, 384) projection: 765
    against about 16 000). None where the shapes do not lead alike."""
    in_shape, out_shape = tuple(in_shape), tuple(out_shape)
    if len(in_shape) < 2 or in_shape[:-1] != out_shape[:-1]:
        return None
    k, n = in_shape[-1], out_shape[-1]
    width = 1 << max(0, math.ceil(math.log2(source.span)))
    c = np.arange(n)
    slots = source.slots.reshape(-1, k)[:, c % k] + (c // k) * width
    return Layout(_read_only(slots.reshape(-1).astype(np.int64)))


def _row_layout(node, graph: Graph, source: Layout, out_shape) -> Layout:
    """A MatMul's output layout: C-order, or :func:`aligned` where that has fewer diagonals
    and is no wider (the period must hold it wherever C-order fits)."""
    plain = compact(out_shape)
    kept = aligned(source, shape_of(graph, node.inputs[0]), out_shape)
    if kept is None or _width(kept.span) > _width(max(plain.span, source.span)):
        return plain
    m = linear_map(node, graph)

    def diagonals(layout):
        return np.unique((source.slots[m.cols] - layout.slots[m.rows]) % _width(layout.span)).size

    return kept if diagonals(kept) < diagonals(plain) else plain


def _width(span: int) -> int:
    return 1 << max(1, math.ceil(math.log2(span)))


def _assign(graph: Graph, multiplexed: bool) -> dict[str, Layout]:
    layouts = {graph.input_name: compact(graph.input_shape)}
    for node in graph.nodes:
        if OPERATORS[node.op].inter is None:
            raise UnsupportedOperator(f"[nn.load] packing='inter': operator '{node.op}' at node '{node.name}' needs "
                                      f"packing='batch' (this packing runs linear layers, residual sums, products "
                                      f"of two tensors, element-wise activations, the client-aided MaxPool, Softmax "
                                      f"and LayerNormalization, zero Pads and operators that only move elements)")
        source = layouts.get(node.inputs[0])
        if source is None:
            raise UnsupportedOperator(f"[nn.load] packing='inter' needs a tensor as the first operand of "
                                      f"'{node.op}' at node '{node.name}' (it has the constant "
                                      f"'{node.inputs[0]}'): swap the operands, or use packing='batch'")
        if multiplexed and node.op in ("Add", "Sub") and len(node.inputs) > 1 \
                and node.inputs[1] not in graph.constants:
            # C-order plans move the second operand of such a sum onto the first's layout
            # (one transform, InterRunner.relayout); a multiplexed plan gives way to them.
            other = layouts[node.inputs[1]]
            if not np.array_equal(source.slots, other.slots):
                raise _Disagree(f"[nn.load] packing='inter': the two operands of '{node.op}' at node '{node.name}' "
                                f"are laid out differently ({source.slots.size} and {other.slots.size} "
                                f"elements); use packing='batch'")
        out = graph.shapes.get(node.outputs[0])
        if node.op in PER_SAMPLE:  # the key holder applies it and writes the result where it is told
            describe(source, shape_of(graph, node.inputs[0]))  # it must be able to find the input: raises if not
            same_shape = out is not None and tuple(out) == _known_shape(graph, node.inputs[0])
            layouts[node.outputs[0]] = source if same_shape else compact(shape_of(graph, node.outputs[0]))
            continue
        if OPERATORS[node.op].kind not in ("linear", "structural") and node.op != "TensorMatMul" \
                and out is not None and int(np.prod(out)) != source.slots.size:
            # An element-wise operator whose output is larger than its first operand broadcasts
            # it (a squeeze-excitation gate times its feature map): no layout serves both.
            raise UnsupportedOperator(f"[nn.load] packing='inter': '{node.op}' at node '{node.name}' broadcasts "
                                      f"its operand of {source.slots.size} elements to shape {tuple(out)}; use "
                                      "packing='batch'")
        layouts[node.outputs[0]] = _output_layout(node, graph, source, multiplexed)
    return layouts


def _plan(kind: str, layouts: dict[str, Layout]) -> LayoutPlan:
    span = max(layout.span for layout in layouts.values())
    return LayoutPlan(kind, layouts, 1 << max(1, math.ceil(math.log2(span))))


def _diagonal_counts(plans: list[LayoutPlan], graph: Graph) -> list[int]:
    """Each plan's total of nonzero diagonals, building each layer's map once for all of them."""
    counts = [0] * len(plans)
    for node in graph.nodes:
        if not is_transform(node):
            continue
        m = linear_map(node, graph)
        for i, plan in enumerate(plans):
            counts[i] += len(plan.offsets(node, graph, m=m))
    return counts


def _candidates(graph: Graph) -> tuple[LayoutPlan, LayoutPlan | None]:
    """The compact plan, and the multiplexed one where it differs and is no wider."""
    compact_plan = _plan("compact", _assign(graph, multiplexed=False))
    try:
        multiplexed = _plan("multiplexed", _assign(graph, multiplexed=True))
    except _Disagree:
        return compact_plan, None
    same = all(np.array_equal(compact_plan.layouts[k].slots, v.slots) for k, v in multiplexed.layouts.items())
    if same or multiplexed.period > compact_plan.period:  # never wider: it must fit where C-order fits
        return compact_plan, None
    return compact_plan, multiplexed


def _signature(graph: Graph) -> tuple:
    return tuple((n.op, n.name, tuple(n.inputs), tuple(n.outputs)) for n in graph.nodes)


def _cached_plan(graph: Graph) -> LayoutPlan | None:
    """The plan made for this graph, unless its nodes changed since (then it plans again)."""
    cached = getattr(graph, "_layout_plan", None)
    return cached[1] if cached is not None and cached[0] == _signature(graph) else None


def layout_plan(graph: Graph) -> LayoutPlan:
    """The layouts inter-axis packing runs ``graph`` in (computed once per graph)."""
    commuted(graph)
    cached = _cached_plan(graph)
    if cached is not None:
        return cached
    chosen, multiplexed = _candidates(graph)
    if multiplexed is not None:
        compact_count, multiplexed_count = _diagonal_counts([chosen, multiplexed], graph)
        chosen = multiplexed if multiplexed_count < compact_count else chosen
    graph._layout_plan = (_signature(graph), chosen)
    return chosen


def layout_period(graph: Graph) -> int:
    """:func:`layout_plan`'s period, without counting diagonals where both layouts share it."""
    commuted(graph)
    cached = _cached_plan(graph)
    if cached is not None:
        return cached.period
    compact_plan, multiplexed = _candidates(graph)
    if multiplexed is None or multiplexed.period == compact_plan.period:
        return compact_plan.period
    return layout_plan(graph).period


# ---- a linear layer's map, from the operator registry ------------------------------------

class _CapturedMap:
    """Runs a linear operator's registry entry to obtain its map instead of applying it."""

    def __init__(self, graph):
        self.graph, self.rt, self.map = graph, self, None

    def const(self, name):
        return self.graph.constants.get(name)

    def linear(self, x, in_shape, make_map, out_shape, node):
        self.map = make_map()
        return None, out_shape


def linear_map(node, graph: Graph):
    """The :class:`~.linear_maps.LinearMap` of a linear node (or a zero Pad), from its input's
    per-sample shape."""
    shape = shape_of(graph, node.inputs[0])
    if node.op == "Pad":  # element i + 1 where it lands, 0 in the padding
        numbered, _ = OPERATORS["Pad"].run(_SlotMover(graph), node, np.arange(1, int(np.prod(shape)) + 1).reshape(shape),
                                           shape, {}, {})
        numbered = numbered.reshape(-1)
        rows = np.flatnonzero(numbered)
        return LinearMap(tuple(numbered.shape), rows, numbered[rows] - 1, np.ones(rows.size), np.zeros(numbered.size))
    captured = _CapturedMap(graph)
    OPERATORS[node.op].run(captured, node, None, shape, {}, {node.inputs[0]: shape})
    return captured.map
