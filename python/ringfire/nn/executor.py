"""Walks a :class:`Graph` with a runtime that supplies the arithmetic.

Values are arrays whose *leading* axes are the per-sample tensor axes:

* plaintext runtime: float arrays shaped (*sample_shape, batch);
* encrypted runtime (batch-axis packing): object arrays shaped sample_shape
  holding one Ciphertext per element (the batch lives in its slots), or None
  for an element known to be zero (padding).

Each operator is run by its entry in :mod:`.operators` (one table for every
runtime); structural operators (Reshape, Flatten, Transpose, Concat, Pad, ...)
only move elements, so they are written once for all.
"""

from __future__ import annotations

from .graph import Graph, Node
from .operators import OPERATORS


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
                    self._free(values, name)
            del out  # the last node's output lives on in `values` only, so freeing it there frees it
        return [values[name] for name in self.graph.output_names], [shapes[n] for n in self.graph.output_names]

    def _free(self, values, name):
        """Drops a value from ``values``; a local here dies with the call, so the tensor is freed
        now rather than when the loop next reassigns a variable (the planner counts it freed)."""
        value = values.pop(name)
        # Reshape-like operators return their input: it is still alive under another name.
        if not any(v is value for v in values.values()):
            self.rt.release(value)

    # ---- one node -------------------------------------------------------------
    def const(self, name):
        """The constant named ``name`` (weights, shapes, pads), or None when it is data."""
        return self.graph.constants.get(name)

    def _node(self, node: Node, values, shapes):
        spec = OPERATORS.get(node.op)
        if spec is None:
            raise ValueError(f"[nn] operator {node.op} at node '{node.name}' has no executor")
        x_name = node.inputs[0]
        return spec.run(self, node, values.get(x_name), shapes.get(x_name), values, shapes)
