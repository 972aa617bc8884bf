"""Inter-axis packing (latency mode): one input per ciphertext, its elements spread
over the slots and tiled with period P (a power of two), so a rotation by i moves slot
j+i to slot j in every tile.

Every linear layer (Gemm, MatMul, Conv, pooling, BatchNorm, ReduceMean, Div by a
constant) is one product with the sparse matrix of its map (:mod:`.linear_maps`),
evaluated with the diagonal method and baby-step/giant-step rotations (Halevi-Shoup):
y = sum_k rot_{k g}( sum_j diag'_{k g + j} * rot_j(x) ), where diag'_i is diagonal i
pre-rotated by -k g, about 2 sqrt(P) rotations instead of P, and only the nonzero
diagonals are encoded. Which diagonals are nonzero depends on where each tensor's
elements sit: :mod:`.layouts` keeps strided convolutions translation-invariant by
multiplexing channels into the gaps they leave. Supported graphs: those layers,
element-wise constants, residual sums of two tensors (the second moved onto the first's
layout where they differ), element-wise activations (polynomial, or client-aided on the
decrypted vector), client-aided layers that read the sample as a tensor (MaxPool, Softmax,
LayerNormalization: the key holder reads them from their input's layout and writes them in
their output's), products of two encrypted tensors (attention: :mod:`.inter_products`),
zero Pads (a transform), and the structural operators that only rename elements
(Transpose, Slice, Gather, Reshape, ...: their layouts move, the ciphertext does not).
Concat of two tensors needs batch packing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import _core, memory
from ..ckks.circuits import bsgs_steps
from .graph import Graph, UnsupportedOperator
from .inter_products import ProductPlan, SlotMap, product_plan
from .layouts import describe, diagonals_of, is_transform, layout_period, layout_plan, linear_map, shape_of
from .client import for_decryption
from .diagonal_cache import DiagonalCache
from .masking import mask_kind
from .nonlinear import ELEMENTWISE, PER_SAMPLE
from .operators import OPERATORS, attach, per_sample_const


def period_for(graph: Graph) -> int:
    """The period inter-axis packing tiles ``graph``'s tensors with (raises
    :class:`UnsupportedOperator` for a graph it cannot run)."""
    return layout_period(graph)


def sparse_bootstrap_slots(ctx) -> int | None:
    """The n slots ``ctx``'s bootstrap keeps when fewer than all (sparse packing), else None."""
    slots = (ctx.bootstrap_options or {}).get("slots")
    return None if slots in (None, ctx.slots) else slots


def check_sparse_bootstrap(ctx, period: int) -> None:
    """Raises unless ``ctx``'s bootstrap keeps every slot of a vector tiled with ``period``.
    A sparse bootstrap of n slots keeps n-periodic vectors only (any other comes back as
    its average over the copies); a tiled sample is n-periodic when its period divides n."""
    sparse = sparse_bootstrap_slots(ctx)
    if sparse is not None and sparse % period:
        raise ValueError(f"[nn] this context bootstraps {sparse} slots (sparse packing), fewer than this model's "
                         f"period {period}: a bootstrap would average the tiles. Bootstrap at least {period} slots: "
                         f"Context.preset(..., bootstrap={{'slots': {period}}}) (rf.nn.inter_period(model) says "
                         "which), or full-slot bootstrapping")


class InterRunner:
    """Evaluates a graph on tiled ciphertexts (one per sample)."""

    def __init__(self, graph: Graph, ctx, polys: dict, period: int = 0, cache: dict | None = None, bounds=None):
        self.graph, self.ctx, self.polys = graph, ctx, polys
        self.placement = layout_plan(graph)  # each tensor's layout and the period
        self.period = max(int(period), self.placement.period)
        self._baby_steps = {}  # node name -> its transform's baby steps
        self._layouts = {}  # node name -> where the key holder reads and writes it (layouts_of)
        self._products = {}  # products of two encrypted tensors: their transforms (inter_products)
        # Encoded diagonals (and tiled biases), reused across samples within the cache's bound.
        self.cache = DiagonalCache() if cache is None else cache
        # Bootstrapping (``bounds``: tensor name -> largest |x| bound): a tensor is refreshed
        # where its next operator needs more levels than it has, as batch packing does.
        self.bounds = bounds
        self.bootstraps, self.bootstrap_seconds = 0, 0.0

    def offsets(self, node) -> np.ndarray:
        """Linear layer ``node``'s nonzero diagonal indices in this runner's layouts."""
        return self.placement.offsets(node, self.graph, self.period)

    def baby_steps(self, node) -> int:
        """The baby steps g of linear layer ``node``'s transform: the power of two that makes its
        rotations cheapest (the scheme's rule, a hoisted baby rotation counting half), chosen
        per transform from its own diagonals."""
        return self._best_baby_steps(node.name, lambda: self.offsets(node))

    def _best_baby_steps(self, name: str, offsets) -> int:
        if name not in self._baby_steps:
            self._baby_steps[name] = _core.LinearTransform.best_baby_steps(offsets().tolist(), self.period)
        return self._baby_steps[name]

    def rotations(self) -> list[int]:
        """The rotation steps of every transform: its nonzero baby offsets (k mod g) and giant
        offsets (k - k mod g), as the scheme's BSGS transform with its g baby steps uses them."""
        steps = set()
        for node in self.graph.nodes:
            for offsets, baby_steps in self.transforms(node):
                steps.update(*bsgs_steps(offsets.tolist(), baby_steps))
        return sorted(steps)

    def transforms(self, node) -> list[tuple[np.ndarray, int]]:
        """(nonzero diagonal offsets, baby steps) of every BSGS transform ``node`` runs: a linear
        layer's one, a product's or a relayout's (:meth:`slot_maps`), or none."""
        if is_transform(node):
            return [(self.offsets(node), self.baby_steps(node))]
        return [(smap.offsets(self.period), self.map_baby_steps(smap)) for smap in self.slot_maps(node)]

    def slot_maps(self, node) -> list[SlotMap]:
        """The transforms ``node`` runs beside linear maps: a product's, or a sum's relayout."""
        if node.op == "TensorMatMul":
            return self.product(node).maps()
        relayout = self.relayout(node)
        return [] if relayout is None else [relayout]

    def relayout(self, node) -> SlotMap | None:
        """For a sum or product of two tensors laid out differently (a residual around
        attention, whose output a Transpose moved), or whose second operand broadcasts (a
        squeeze-and-excitation gate of shape (C, 1, 1) times its (C, H, W) feature map), the
        transform that moves the second onto the first's layout, repeating it where it broadcasts."""
        if node.op not in ("Add", "Sub", "Mul") or len(node.inputs) < 2 or node.inputs[1] in self.graph.constants:
            return None
        key = ("relayout", node.name, self.period)
        if key not in self._products:
            first, second = (self.placement.layouts[name].slots for name in node.inputs[:2])
            shape = shape_of(self.graph, node.inputs[0])
            try:
                sources = np.broadcast_to(second.reshape(shape_of(self.graph, node.inputs[1])), shape).reshape(-1)
            except ValueError:
                raise UnsupportedOperator(f"[nn] packing='inter': '{node.op}' at '{node.name}' combines tensors of "
                                          f"shapes {shape} and {shape_of(self.graph, node.inputs[1])}, which do not "
                                          "broadcast to the first") from None
            self._products[key] = None if np.array_equal(first, sources) else SlotMap(f"{node.name}/relayout", first,
                                                                                      np.ascontiguousarray(sources))
        return self._products[key]

    def product(self, node) -> ProductPlan:
        """The transforms of a product of two encrypted tensors (:mod:`.inter_products`)."""
        key = ("product", node.name, self.period)
        if key not in self._products:
            graph, layouts = self.graph, self.placement.layouts
            a, b = node.inputs[0], node.inputs[1]
            self._products[key] = product_plan(node.name, layouts[a].slots, shape_of(graph, a), layouts[b].slots,
                                               shape_of(graph, b), layouts[node.outputs[0]].slots)
        return self._products[key]

    def map_baby_steps(self, smap: SlotMap) -> int:
        """A product's transform's baby steps, by the rule :meth:`baby_steps` uses."""
        return self._best_baby_steps(smap.name, lambda: smap.offsets(self.period))

    def apply_slot_map(self, ct, smap: SlotMap):
        """``smap`` (a transform with weights 1) applied to ``ct``, landing on the next level."""
        return self._transform(ct, lambda: smap.diagonals(self.period), None, smap.name, self.map_baby_steps(smap))

    def output_slots(self) -> np.ndarray:
        """Where the output's elements (C-order) sit in the decrypted slots."""
        return self.placement.layouts[self.graph.output_names[0]].slots

    def _apply_map(self, ct, node):
        """Linear layer ``node`` as one transform of the nonzero diagonals of its map in the
        layouts of its input and output: diag_k[r] = M[r, (r + k) mod P] in slot terms.
        The map is built only where its bias or this level's transform is not cached yet,
        and then once for both."""
        built = []

        def the_map():
            if not built:
                built.append(linear_map(node, self.graph))
            return built[0]

        def diagonals():
            return diagonals_of(*self.placement.placed(node, the_map()), self.period)

        key = ("bias", node.name, self.period)
        if key not in self.cache:  # the bias in the output's layout (None: no bias)
            bias = the_map().bias
            self.cache[key] = self._tiled(node.outputs[0], bias) if np.any(bias) else None
        return self._transform(ct, diagonals, self.cache[key], node.name, self.baby_steps(node))

    def _tiled(self, tensor: str, values) -> np.ndarray:
        """``values`` (C-order over ``tensor``'s elements) in its layout, repeated over the slots."""
        one_period = self.placement.layouts[tensor].scatter(values, self.period)
        return np.tile(one_period, self.ctx.slots // self.period)

    def _transform(self, ct, operand, bias, name, baby_steps):
        """``operand()`` (the diagonals) times ``ct`` plus ``bias`` (tiled, or None), with the scheme's
        BSGS linear transform (``baby_steps`` hoisted baby steps, so the Galois keys are those of
        :meth:`rotations`), landing on the next level's canonical scale. The encoded transform
        is cached per node, level and scale, and so reused across samples."""
        from ..ckks import LinearTransform

        ctx = self.ctx
        if ct.level == 0:
            raise ValueError(f"[nn] out of levels at node '{name}' (linear layer); see Model.plan()")
        scale = ctx.landing_scale(ct.level, ct.scale)
        key = (name, ct.level, round(scale), self.period)
        lt = self.cache.get(key)
        if lt is None:
            diagonals = operand()
            with memory.cold():  # kept for every sample, read once per sample: the first to spill
                lt = LinearTransform(ctx, diagonals, level=ct.level, scale=scale, baby_steps=baby_steps,
                                     picklable=False)
            self.cache.put(key, lt, len(diagonals) * (ct.level + 1) * ctx.poly_degree * 8)
        out = ctx.evaluator(ct.keys).linear_transform(ct, lt)
        return out if bias is None else out + bias

    def layouts_of(self, node) -> dict:
        """Where the key holder reads ``node``'s input and writes its output (layouts.describe),
        worked out once per runner and sent with every sample's round."""
        if node.name not in self._layouts:
            graph, layouts = self.graph, self.placement.layouts
            self._layouts[node.name] = {"in": describe(layouts[node.inputs[0]], shape_of(graph, node.inputs[0])),
                                        "out": describe(layouts[node.outputs[0]], shape_of(graph, node.outputs[0])),
                                        "period": int(self.period)}
        return self._layouts[node.name]

    def check_fits(self) -> None:
        """Raises where the context's slots cannot hold a period, or where its bootstrap
        keeps fewer slots than a period."""
        if self.period > self.ctx.slots:
            raise ValueError(f"[nn] packing='inter' tiles this model's tensors with period {self.period} "
                             f"({self.placement.kind} layout), more than the context's {self.ctx.slots} slots: use "
                             f"poly_degree >= {2 * self.period}, or packing='batch'")
        if self.bounds is not None:
            check_sparse_bootstrap(self.ctx, self.period)

    def run(self, ct, client=None, masker=None):
        self.values = values = {self.graph.input_name: ct}  # the second operand of a residual sum
        for node in self.graph.nodes:
            source = node.inputs[0]
            for name in self._refreshed(node, {name: values[name].level for name in node.inputs if name in values}):
                start = time.perf_counter()
                values[name] = values[name].bootstrap(bound=int(self.bounds[name]))
                self.bootstraps += 1
                self.bootstrap_seconds += time.perf_counter() - start
            values[node.outputs[0]] = OPERATORS[node.op].inter.run(self, node, values[source], client, masker)
        return values[self.graph.output_names[0]]

    def _refreshed(self, node, levels: dict, masking: bool = False) -> list[str]:
        """The tensor inputs of ``node`` (name -> level) bootstrapped before it runs: with
        bootstrapping, those below the levels it needs (both operands of a product)."""
        if self.bounds is None:
            return []
        need = self._levels_of(node, masking)
        inputs = node.inputs[:2] if node.op == "TensorMatMul" else node.inputs[:1]
        return [name for name in inputs if name in levels and levels[name] < need]

    def _levels_of(self, node, masking: bool = False) -> int:
        """The levels ``node`` needs its input to have."""
        return OPERATORS[node.op].inter.levels(self, node, 0, masking)[0]

    def levels_needed(self, masking: bool = False) -> int:
        """The most levels any stretch between (re-)encryptions consumes; with bootstrapping,
        the most one operator needs."""
        if self.bounds is not None:
            return max((self._levels_of(node, masking) for node in self.graph.nodes), default=0)
        need, used = 0, {self.graph.input_name: 0}  # tensor -> levels spent since its last encryption
        for node in self.graph.nodes:
            spent = max(used[name] for name in node.inputs if name in used)  # operands on separate branches
            peak, used[node.outputs[0]] = OPERATORS[node.op].inter.levels(self, node, spent, masking)
            need = max(need, peak)
        return need

    def level_walk(self, masking: bool = False):
        """How :meth:`run` moves down the chain, from levels alone: per node, (node, the
        level it reads at, how many of its inputs are bootstrapped first, its output's level)."""
        top = self.ctx.max_level
        level = {self.graph.input_name: top}
        for node in self.graph.nodes:
            names = self._refreshed(node, {name: level[name] for name in node.inputs if name in level}, masking)
            refreshed = len(names)
            for name in names:
                level[name] = top
            lowest = min(level[name] for name in node.inputs if name in level)
            _, used = OPERATORS[node.op].inter.levels(self, node, top - lowest, masking)
            level[node.outputs[0]] = top - used
            yield node, lowest, refreshed, top - used

    def bootstraps_needed(self) -> int:
        """The bootstraps :meth:`run` makes per sample, from levels alone."""
        return sum(int(refreshed) for _, _, refreshed, _ in self.level_walk())


# ---- the operators under inter-axis packing (attached to the operator registry) --------

@dataclass(frozen=True)
class InterOp:
    """``run(runner, node, x, client, masker)`` -> the output ciphertext;
    ``levels(runner, node, used, masking)`` -> (the most levels used while it runs, levels used after)."""
    run: Callable
    levels: Callable


def _identity(runner, node, x, client, masker):
    return x


def _with_constant(runner, node, x, client, masker):
    c = runner.graph.constants.get(node.inputs[1])
    if c is None:  # two tensors: the second moved (and broadcast) onto the first's layout if need be
        other = runner.values[node.inputs[1]]
        relayout = runner.relayout(node)
        if relayout is not None:
            other = runner.apply_slot_map(other, relayout)
        return {"Add": lambda: x + other, "Sub": lambda: x - other, "Mul": lambda: x * other}[node.op]()
    if node.op == "Mul":
        if np.asarray(c).size != 1:
            raise UnsupportedOperator(f"[nn] packing='inter': element-wise Mul at '{node.name}'")
        return x * float(np.asarray(c).reshape(-1)[0])
    shape = shape_of(runner.graph, node.inputs[0])
    try:  # as batch packing reads it: a leading batch axis of 1 dropped, then broadcast per sample
        values = np.broadcast_to(per_sample_const(c, len(shape)), shape)
    except ValueError:
        raise UnsupportedOperator(f"[nn] packing='inter': the constant of shape {np.shape(c)} at '{node.name}' "
                                  f"does not broadcast to the sample's shape {shape}") from None
    vec = runner._tiled(node.inputs[0], values)
    return x + vec if node.op == "Add" else x - vec


def _activation(runner, node, x, client, masker):
    if node.name in runner.polys:
        return runner.polys[node.name].evaluate_encrypted(x)
    if client is None:
        raise ValueError(f"[nn] node '{node.name}' is client-aided: pass client=LocalClient(...)")
    if masker is None:
        return client.apply_vector(node, _for_decryption(runner, x))
    masked, masks = masker.mask(node, np.array([x], dtype=object), (1,))
    answer = client.apply_vector(node, _for_decryption(runner, masked[0]))
    return masker.unmask(node, np.array([answer], dtype=object), masks)[0]


def _for_decryption(runner, x):
    """What the key holder gets of ciphertext ``x``: ``x`` at its lowest level."""
    return for_decryption(runner.ctx.evaluator(x.keys), x)


def _relayout(runner, node, x, client, masker):
    """A layer that reads the sample as a tensor (MaxPool, Softmax, LayerNormalization): the key
    holder decrypts the vector, reads the tensor from its input's layout, applies the layer and
    encrypts the result in its output's layout (``node.attrs["_layouts"]``, sent with the round)."""
    if node.name in runner.polys:
        raise UnsupportedOperator(f"[nn] packing='inter': '{node.op}' at '{node.name}' has no polynomial form; "
                                  "use activation='client'")
    if client is None:
        raise ValueError(f"[nn] node '{node.name}' is client-aided: pass client=LocalClient(...)")
    if masker is not None:
        _refuse_masking(node)
    node.attrs["_layouts"] = runner.layouts_of(node)
    return client.apply_vector(node, _for_decryption(runner, x))


def _refuse_masking(node):
    raise UnsupportedOperator(f"[nn] packing='inter': '{node.op}' at '{node.name}' moves elements, which a mask "
                              "of the slot vector does not survive; use masking=False or packing='batch'")


def _relayout_levels(runner, node, used, masking):
    if masking:  # refused when the model is planned, not halfway through a run
        _refuse_masking(node)
    return _activation_levels(runner, node, used, masking)


def _one_level(runner, node, used, masking):
    return used + 1, used + 1


def _no_level(runner, node, used, masking):
    return used, used


def _mul_levels(runner, node, used, masking):
    used += (node.op == "Mul") + (runner.relayout(node) is not None)
    return used, used


def _activation_levels(runner, node, used, masking):
    if node.name in runner.polys:
        return used + runner.polys[node.name].depth, used + runner.polys[node.name].depth
    if masking and mask_kind(node) == "scale":  # a level to mask, and one to unmask the answer
        return used + 1, 1
    return used, 0  # the key holder returns fresh ciphertexts


def _mapped(runner, node, x, client, masker):
    return runner._apply_map(x, node)


for _name in ("Gemm", "MatMul", "Conv", "AveragePool", "GlobalAveragePool", "BatchNormalization", "ReduceMean",
              "Div"):
    attach(_name, inter=InterOp(_mapped, _one_level))
def _tensor_product(runner, node, x, client, masker):
    """A product of two encrypted tensors (:mod:`.inter_products`): both operands brought to
    one level, the square case's two moves, then per inner index the two factors' transforms
    and one product of ciphertexts, summed."""
    plan = runner.product(node)
    y = runner.values[node.inputs[1]]
    level = min(x.level, y.level)
    if level < plan.levels:
        raise ValueError(f"[nn] out of levels at node '{node.name}' (a product of two tensors needs {plan.levels}, "
                         f"its operands have {level}); see Model.plan()")
    ev = runner.ctx.evaluator(x.keys)
    x, y = (ev.mod_switch(v, level) if v.level > level else v for v in (x, y))
    if plan.moves:
        x, y = runner.apply_slot_map(x, plan.moves[0]), runner.apply_slot_map(y, plan.moves[1])
    total = None
    for first, second in plan.factors:
        term = runner.apply_slot_map(x, first) * runner.apply_slot_map(y, second)
        total = term if total is None else total + term
    return total


def _product_levels(runner, node, used, masking):
    levels = runner.product(node).levels
    return used + levels, used + levels


# The structural operators move no element under this packing: their output's layout says
# where its elements already are (layouts.moved), so they cost nothing.
for _name in ("Flatten", "Reshape", "Identity", "Dropout", "Squeeze", "Unsqueeze", "Transpose", "Slice", "Gather"):
    attach(_name, inter=InterOp(_identity, _no_level))
attach("TensorMatMul", inter=InterOp(_tensor_product, _product_levels))
attach("Pad", inter=InterOp(_mapped, _one_level))  # zeros around the tensor: a transform (layouts.is_transform)
for _name in ("Add", "Sub", "Mul"):
    attach(_name, inter=InterOp(_with_constant, _mul_levels))
# Element-wise activations work on the tiled slot vector as they are (PRelu's
# per-channel slope would not line up with the tiling).
for _name in sorted(set(ELEMENTWISE) - {"PRelu"}):
    attach(_name, inter=InterOp(_activation, _activation_levels))
for _name in sorted(PER_SAMPLE):
    attach(_name, inter=InterOp(_relayout, _relayout_levels))
