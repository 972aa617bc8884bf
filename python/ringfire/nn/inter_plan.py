"""What a run with inter-axis packing (one ciphertext per sample) costs, from the graph
alone: levels, bootstraps, rotations and memory, per sample.

The walk is :meth:`.inter.InterRunner.level_walk`, the levels :meth:`~.inter.InterRunner.run`
moves through. Each linear layer is one BSGS transform of its nonzero diagonals (in the
layouts of :mod:`.layouts`) with its own baby steps (``InterRunner.baby_steps``): its key
switches are its distinct nonzero baby offsets (hoisted) plus its distinct nonzero giant
offsets, and its encoded diagonals stay cached for the next sample, each a plaintext of the
level it is applied at (the real diagonals they were encoded from are dropped: the cache is
rebuilt, not pickled). The runner keeps every
tensor of a sample alive until the sample ends (a residual sum may read any of them).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ckks.circuits import bsgs_steps
from . import staging
from .graph import UnsupportedOperator
from .inter import InterRunner
from .layouts import shape_of
from .operators import linear_terms


@dataclass(frozen=True)
class NodeStep:
    """One node of a sample's run: the level it reads at, whether its input is bootstrapped
    first, its output's level, and (linear layers) its diagonals and rotations."""

    node: object
    level: int
    refreshed: bool
    out_level: int
    diagonals: int = 0
    baby_rotations: int = 0   # hoisted: they share one decomposition of the input
    giant_rotations: int = 0
    transforms: int = 0       # BSGS transforms: a linear layer's one, a product's several (inter_products)
    products: int = 0         # products of ciphertexts

    @property
    def rotations(self) -> int:
        return self.baby_rotations + self.giant_rotations


def steps(runner: InterRunner, masking: bool = False):
    """The :class:`NodeStep` of every node, in running order."""
    for node, level, refreshed, out_level in runner.level_walk(masking):
        transforms = runner.transforms(node)  # a linear layer's one, a product's many, a relayout's one
        counts = [(len(offsets), *map(len, bsgs_steps(offsets.tolist(), baby_steps)))
                  for offsets, baby_steps in transforms]
        diagonals, babies, giants = map(sum, zip(*counts)) if counts else (0, 0, 0)
        products = len(runner.product(node).factors) if node.op == "TensorMatMul" else 0
        yield NodeStep(node, level, refreshed, out_level, diagonals, babies, giants, transforms=len(transforms),
                       products=products)


def step_terms(runner: InterRunner, node) -> int:
    """The terms of the map a node's transforms are cut from (a linear layer's multiply-adds;
    an element move's one per element)."""
    try:
        in_shape, out_shape = shape_of(runner.graph, node.inputs[0]), shape_of(runner.graph, node.outputs[0])
    except UnsupportedOperator:
        return 0
    return linear_terms(node, runner.graph, in_shape, out_shape)


@dataclass
class InterCosts:
    """Per sample, except the cached diagonals, which all samples share."""

    transforms: int = 0
    diagonals: int = 0
    key_switches: int = 0      # rotations inside the transforms
    bootstraps: int = 0
    activation_bytes: int = 0  # every tensor of one sample
    diagonal_bytes: int = 0    # the encoded diagonals of every transform (in the pool)
    largest_diagonal_bytes: int = 0  # the most any one layer's transforms encode
    staging_bytes: int = 0     # the most held outside the pool at once (.staging)
    hoisted: int = 0           # the most baby rotations of any transform: they are held at once
    products: int = 0          # products of two ciphertexts (attention's Q K^T and P V)


def inter_costs(runner: InterRunner, masking: bool = False) -> InterCosts:
    ctx = runner.ctx
    n = ctx.poly_degree
    costs = InterCosts(activation_bytes=2 * (ctx.max_level + 1) * n * 8)  # the input
    for step in steps(runner, masking):
        costs.bootstraps += int(step.refreshed)
        costs.activation_bytes += 2 * (step.out_level + 1) * n * 8
        costs.products += step.products
        if step.diagonals:
            costs.transforms += step.transforms
            costs.diagonals += step.diagonals
            costs.key_switches += step.rotations
            costs.hoisted = max(costs.hoisted, step.baby_rotations)
            step_bytes = step.diagonals * (step.level + 1) * n * 8
            costs.diagonal_bytes += step_bytes
            costs.largest_diagonal_bytes = max(costs.largest_diagonal_bytes, step_bytes)
            costs.staging_bytes = max(costs.staging_bytes, staging.linear_layer(
                step_terms(runner, step.node), step.diagonals, runner.period))
    return costs
