"""ONNX models as a small, validated graph of supported operators.

``Graph.from_onnx`` reads a model (path, bytes or ``onnx.ModelProto``), runs
ONNX shape inference, folds BatchNormalization into the preceding Conv/Gemm,
and rejects unsupported operators at load time, naming the operator and node.
Shapes are kept per sample: the first (batch) axis of every activation is
dropped, because batch-axis packing puts the batch into the CKKS slots.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

LINEAR_OPS = {"Conv", "Gemm", "MatMul", "Add", "Sub", "Mul", "BatchNormalization", "AveragePool",
              "GlobalAveragePool", "Flatten", "Reshape", "Concat", "Pad", "Identity", "Squeeze", "Unsqueeze",
              "Transpose"}
NONLINEAR_OPS = {"Relu", "Clip", "MaxPool"}
SUPPORTED = LINEAR_OPS | NONLINEAR_OPS | {"Constant"}


class UnsupportedOperator(ValueError):
    """Raised at load time for an operator ringfire.nn cannot run encrypted."""


@dataclass
class Node:
    op: str
    name: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict = field(default_factory=dict)


@dataclass
class Graph:
    nodes: list[Node]
    constants: dict[str, np.ndarray]
    input_name: str
    input_shape: tuple[int, ...]          # per sample (batch axis dropped)
    output_names: list[str]
    shapes: dict[str, tuple[int, ...]]    # per-sample shapes of activations (where known)

    # ---- loading -------------------------------------------------------------
    @classmethod
    def from_onnx(cls, model) -> "Graph":
        import onnx
        from onnx import numpy_helper, shape_inference

        if isinstance(model, str):
            model = onnx.load(model)
        elif isinstance(model, bytes):
            model = onnx.load_from_string(model)
        elif hasattr(model, "__fspath__"):
            model = onnx.load(str(model))
        try:
            model = shape_inference.infer_shapes(model)
        except Exception:  # noqa: BLE001 - inference is an aid, not a requirement
            pass
        g = model.graph
        constants = {t.name: numpy_helper.to_array(t).astype(np.float64) if numpy_helper.to_array(t).dtype.kind == "f"
                     else numpy_helper.to_array(t) for t in g.initializer}
        nodes = []
        for i, n in enumerate(g.node):
            name = n.name or f"{n.op_type}_{i}"
            if n.op_type not in SUPPORTED:
                raise UnsupportedOperator(
                    f"[nn.load] unsupported operator '{n.op_type}' at node '{name}' (supported: "
                    f"{', '.join(sorted(SUPPORTED - {'Constant'}))})")
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
            if n.op_type == "Constant":
                value = attrs.get("value")
                arr = numpy_helper.to_array(value) if value is not None else np.array(attrs.get("value_float", 0.0))
                constants[n.output[0]] = arr.astype(np.float64) if arr.dtype.kind == "f" else arr
                continue
            nodes.append(Node(n.op_type, name, list(n.input), list(n.output), attrs))
        inputs = [v for v in g.input if v.name not in constants]
        if len(inputs) != 1:
            raise ValueError(f"[nn.load] expected exactly one data input, got {[v.name for v in inputs]}")
        shapes = {}
        for v in list(g.input) + list(g.value_info) + list(g.output):
            dims = v.type.tensor_type.shape.dim
            if dims and all(d.HasField("dim_value") for d in dims[1:]):
                shapes[v.name] = tuple(int(d.dim_value) for d in dims[1:])
        input_shape = shapes.get(inputs[0].name)
        if input_shape is None:
            raise ValueError("[nn.load] the input's per-sample shape must be static")
        if len(g.output) != 1:
            raise ValueError(f"[nn.load] models with {len(g.output)} outputs are not supported; keep one output")
        graph = cls(nodes, constants, inputs[0].name, input_shape, [o.name for o in g.output], shapes)
        graph._fold_batch_norm()
        return graph

    # ---- rewrites --------------------------------------------------------------
    def consumers(self, tensor: str) -> list[Node]:
        return [n for n in self.nodes if tensor in n.inputs]

    def _fold_batch_norm(self) -> None:
        """BatchNormalization after a Conv/Gemm becomes part of its weights and bias."""
        producer = {o: n for n in self.nodes for o in n.outputs}
        kept = []
        for node in self.nodes:
            prev = producer.get(node.inputs[0]) if node.op == "BatchNormalization" else None
            if prev is not None and prev.op in ("Conv", "Gemm") and len(self.consumers(prev.outputs[0])) == 1:
                gamma, beta, mean, var = (self.constants[x] for x in node.inputs[1:5])
                eps = float(node.attrs.get("epsilon", 1e-5))
                factor = gamma / np.sqrt(var + eps)
                w = self.constants[prev.inputs[1]]
                if prev.op == "Gemm" and prev.attrs.get("transB", 0) == 0:
                    w_new = w * factor[None, :]
                else:
                    w_new = w * factor.reshape((-1,) + (1,) * (w.ndim - 1))
                b = self.constants[prev.inputs[2]] if len(prev.inputs) > 2 and prev.inputs[2] else np.zeros_like(mean)
                b = np.broadcast_to(b, (1, mean.size)).reshape(-1)
                if prev.op == "Gemm":  # the executor scales C by beta: fold it in here instead
                    b = b * float(prev.attrs.get("beta", 1.0))
                    prev.attrs["beta"] = 1.0
                b_new = (b - mean) * factor + beta
                w_name, b_name = f"{prev.name}.folded_weight", f"{prev.name}.folded_bias"
                self.constants[w_name], self.constants[b_name] = w_new, b_new
                prev.inputs = [prev.inputs[0], w_name, b_name]
                prev.outputs = list(node.outputs)  # the Conv now produces what BN produced
                continue
            kept.append(node)
        self.nodes = kept

    def ops(self) -> list[str]:
        return [n.op for n in self.nodes]
