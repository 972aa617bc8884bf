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
layout; a graph whose multiplexed layouts disagree there runs compact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .graph import Graph, UnsupportedOperator
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
    applies on the decrypted vector reads and writes elements there): the shape and the grid.
    Raises :class:`UnsupportedOperator` for a layout those do not determine."""
    shape = [int(s) for s in shape]
    desc = {"shape": shape, "grid": [int(g) for g in layout.grid] if layout.grid and len(shape) == 3 else None}
    if not np.array_equal(rebuilt(desc).slots, layout.slots):
        raise UnsupportedOperator(f"[nn] packing='inter': a tensor of shape {tuple(shape)} is laid out in a way the "
                                  "key holder cannot rebuild from its shape and grid; use packing='batch'")
    return desc


def rebuilt(desc: dict) -> Layout:
    """The layout :func:`describe` described."""
    shape = tuple(int(s) for s in desc["shape"])
    return spatial(shape, *desc["grid"]) if desc.get("grid") else compact(shape)


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


def shape_of(graph: Graph, name: str) -> tuple[int, ...]:
    shape = _known_shape(graph, name)
    if not shape:
        raise UnsupportedOperator(f"[nn] packing='inter': the shape of tensor '{name}' is unknown")
    return tuple(int(s) for s in shape)


def _known_shape(graph: Graph, name: str):
    """A tensor's per-sample shape, or None where the graph does not say."""
    shape = graph.input_shape if name == graph.input_name else graph.shapes.get(name)
    return None if shape is None else tuple(shape)


def _output_layout(node, graph: Graph, source: Layout, multiplexed: bool) -> Layout:
    op = OPERATORS[node.op]
    if op.kind == "linear" and node.op in _PER_ELEMENT:
        return source
    if op.kind != "linear":  # element-wise: activations, constants, residual sums, reshapes
        known = graph.shapes.get(node.outputs[0])
        keeps_shape = known is not None and tuple(known) == _known_shape(graph, node.inputs[0])
        return Layout(source.slots, source.grid if keeps_shape else None)
    out_shape = shape_of(graph, node.outputs[0])
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


def _assign(graph: Graph, multiplexed: bool) -> dict[str, Layout]:
    layouts = {graph.input_name: compact(graph.input_shape)}
    for node in graph.nodes:
        if OPERATORS[node.op].inter is None:
            raise UnsupportedOperator(f"[nn.load] packing='inter' runs linear layers, residual sums, "
                                      f"element-wise activations and the client-aided MaxPool, Softmax and "
                                      f"LayerNormalization; operator '{node.op}' at node '{node.name}' needs "
                                      f"packing='batch'")
        source = layouts.get(node.inputs[0])
        if source is None:
            raise UnsupportedOperator(f"[nn.load] packing='inter' needs a tensor as the first operand of "
                                      f"'{node.op}' at node '{node.name}' (it has the constant "
                                      f"'{node.inputs[0]}'): swap the operands, or use packing='batch'")
        if node.op in ("Add", "Sub") and len(node.inputs) > 1 and node.inputs[1] not in graph.constants:
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
        if OPERATORS[node.op].kind != "linear" and out is not None and int(np.prod(out)) != source.slots.size:
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
        if OPERATORS[node.op].kind != "linear":
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
    """The :class:`~.linear_maps.LinearMap` of a linear node, from its input's per-sample shape."""
    shape = shape_of(graph, node.inputs[0])
    captured = _CapturedMap(graph)
    OPERATORS[node.op].run(captured, node, None, shape, {}, {node.inputs[0]: shape})
    return captured.map
