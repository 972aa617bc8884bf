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

from .nonlinear import NONLINEAR_OPS
from .operators import OPERATORS
from .static_shapes import make_static, needs_static

# What load() accepts: the executor's operators (operators.py) and Constant,
# which is folded while parsing.
SUPPORTED = set(OPERATORS) | {"Constant"}

# What to do about operators people meet in exported models that cannot run here.
HINTS = {
    "Shape": "the model computes with its own shape: export with a fixed input shape (torch: dynamo=False, or "
             "replace x.view(x.size(0), -1) by torch.flatten(x, 1))",
    "LSTM": "recurrent layers are not supported",
    "GRU": "recurrent layers are not supported",
    "Sqrt": "a square root of encrypted values needs the client: use LayerNormalization (opset 17+) instead of "
            "its decomposition",
    "Pow": "powers of encrypted values: use Mul (x * x), or LayerNormalization (opset 17+) instead of its "
           "decomposition",
}


# What -inf in an additive attention mask becomes (Graph._finite_attention_masks).
MASK_FILL = 1.0e4


def _fold_constant_node(model, n, constants) -> bool:
    """Evaluates a node whose inputs are all constants (exporters compute pads, shapes
    and weights that way: ConstantOfShape, Concat, Cast, ...) with ONNX's reference
    implementation, storing its outputs as constants. False if any input is data."""
    inputs = [name for name in n.input if name]
    if not inputs or any(name not in constants for name in inputs):
        return False
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    tensors = [numpy_helper.from_array(np.asarray(constants[name]), name) for name in inputs]
    graph = helper.make_graph([n], "fold", [], [helper.make_tensor_value_info(o, 0, None) for o in n.output if o],
                              tensors)
    single = helper.make_model(graph, opset_imports=list(model.opset_import))
    # The evaluator sees the stored dtypes; float constants were widened to float64.
    outputs = ReferenceEvaluator(single).run(None, {})
    for name, value in zip([o for o in n.output if o], outputs):
        value = np.asarray(value)
        constants[name] = value.astype(np.float64) if value.dtype.kind == "f" else value
    return True


def clip_bounds(node, constants) -> tuple[float, float]:
    """Clip's (min, max): attributes (opset < 11) or constant inputs; missing bounds are infinite."""
    lo = node.attrs.get("min")
    hi = node.attrs.get("max")
    if len(node.inputs) > 1 and node.inputs[1]:
        lo = float(constants[node.inputs[1]])
    if len(node.inputs) > 2 and node.inputs[2]:
        hi = float(constants[node.inputs[2]])
    return (-np.inf if lo is None else float(lo), np.inf if hi is None else float(hi))


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
        if needs_static(model):  # x.size(0), attention's moved batch axis: one static form per sample
            model = make_static(model)
        try:
            model = shape_inference.infer_shapes(model)
        except Exception:  # noqa: BLE001 - inference is an aid, not a requirement
            pass
        g = model.graph
        constants = {t.name: numpy_helper.to_array(t).astype(np.float64) if numpy_helper.to_array(t).dtype.kind == "f"
                     else numpy_helper.to_array(t) for t in g.initializer}
        nodes = []
        opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
        for i, n in enumerate(g.node):
            name = n.name or f"{n.op_type}_{i}"
            if n.op_type != "Constant" and _fold_constant_node(model, n, constants):
                continue
            if n.op_type not in SUPPORTED:
                hint = HINTS.get(n.op_type)
                raise UnsupportedOperator(
                    f"[nn.load] unsupported operator '{n.op_type}' at node '{name}'" + (f": {hint}" if hint else "")
                    + f" (supported: {', '.join(sorted(SUPPORTED - {'Constant'}))})")
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
        graph._remove_inference_dropout()
        graph._mark_tensor_products()
        graph._fold_batch_norm()
        graph._fuse_swish()
        graph._finite_attention_masks()
        graph._attach_layer_constants(opset)
        graph._conv1d_as_conv2d()
        return graph

    def broadcasts(self, node: Node) -> bool:
        """Whether a node combines two tensors of different (known) per-sample shapes."""
        if len(node.inputs) < 2 or any(name in self.constants for name in node.inputs[:2]):
            return False
        a, b = (self.input_shape if name == self.input_name else self.shapes.get(name) for name in node.inputs[:2])
        return a is not None and b is not None and tuple(a) != tuple(b)

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

    def _fuse_swish(self) -> None:
        """``x * Sigmoid(x)`` (torch's SiLU, as every exporter writes it) becomes one Swish.

        As two nodes the product is of two ciphertexts and costs a level on top of the
        Sigmoid, and it does not refresh ``x``: networks built of SiLU blocks (EfficientNet)
        then need about five levels a block. As one element-wise layer the key holder
        applies it whole (client-aided) and returns fresh ciphertexts, and a polynomial
        approximates the whole function at the depth of one."""
        producer = {o: n for n in self.nodes for o in n.outputs}
        fused, kept = set(), []
        for node in self.nodes:
            if node.op == "Mul" and len(node.inputs) == 2:
                for x, s in (node.inputs, node.inputs[::-1]):
                    sigmoid = producer.get(s)
                    if (sigmoid is not None and sigmoid.op == "Sigmoid" and sigmoid.inputs[0] == x
                            and len(self.consumers(s)) == 1 and s not in self.output_names):
                        fused.add(id(sigmoid))
                        node = Node("Swish", node.name, [x], list(node.outputs), {"alpha": 1.0})
                        break
            kept.append(node)
        self.nodes = [n for n in kept if id(n) not in fused]

    def _finite_attention_masks(self) -> None:
        """An additive attention mask (torch's causal mask: -inf above the diagonal, added to the
        scores before the Softmax) cannot be encoded: CKKS values are finite. Where the sum feeds
        only Softmax, -inf becomes -MASK_FILL, after which the Softmax gives those entries
        exactly the weight -inf gives them, 0.0 (exp(-10^4) underflows in float64), while the
        masked scores stay well inside what the scheme holds (|x| <= 2^19 at level 0 of a
        60-bit first prime and a 40-bit scale). Any other non-finite constant is refused."""
        for node in self.nodes:
            for i, name in enumerate(node.inputs[:2]):
                value = self.constants.get(name)
                if value is None or np.all(np.isfinite(value)):
                    continue
                readers = self.consumers(node.outputs[0]) if node.outputs else []
                if node.op != "Add" or np.any(np.isnan(value) | (value == np.inf)) or not readers \
                        or any(r.op not in ("Softmax", "LogSoftmax") for r in readers):
                    raise ValueError(f"[nn.load] node '{node.name}' ({node.op}) reads the constant '{name}', which "
                                     "holds inf or NaN: encrypted values are finite. -inf is accepted in an "
                                     "attention mask added to scores that only a Softmax reads")
                finite = f"{name}.finite"
                self.constants[finite] = np.where(np.isneginf(value), -MASK_FILL, value)
                node.inputs[i] = finite

    def _mark_tensor_products(self) -> None:
        """A MatMul of two tensors (attention's Q K^T and P V) is not a linear map of one
        tensor: it runs as TensorMatMul, products of ciphertexts."""
        for node in self.nodes:
            if node.op == "MatMul" and not any(name in self.constants for name in node.inputs[:2]):
                node.op = "TensorMatMul"

    def _remove_inference_dropout(self) -> None:
        """Inference-mode Dropout passes its input through: it becomes an Identity.
        (Identity and Dropout of constants, such as BatchNorm1d's statistics behind
        the legacy exporter's Identity nodes, were evaluated while parsing.)"""
        for i, node in enumerate(self.nodes):
            if node.op != "Dropout":
                continue
            training = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
            if training is not None and bool(np.asarray(self.constants.get(training, True)).reshape(-1)[0]):
                raise UnsupportedOperator(f"[nn.load] Dropout at node '{node.name}' runs in training mode: call "
                                          "module.eval() before exporting")
            self.nodes[i] = Node("Identity", node.name, node.inputs[:1], node.outputs[:1], {})

    def _attach_layer_constants(self, opset: int) -> None:
        """Non-linear layers carry their constant operands as attributes, so the key
        holder needs only the node (Clip's bounds, PRelu's slope, LayerNorm's scale)."""
        for node in self.nodes:
            if node.op not in NONLINEAR_OPS:
                continue
            node.attrs["_opset"] = opset
            extra = [self.constants.get(name) if name else None for name in node.inputs[1:]]
            if any(name and name not in self.constants for name in node.inputs[1:]):
                raise UnsupportedOperator(f"[nn.load] {node.op} at node '{node.name}' needs constant parameters")
            if node.op == "Clip":
                node.attrs["bounds"] = clip_bounds(node, self.constants)
            elif node.op == "PRelu":
                slope = np.asarray(extra[0], dtype=np.float64)
                rank = len(self.shapes.get(node.inputs[0], ())) or slope.ndim
                while slope.ndim > rank:  # ONNX aligns it right against (batch, *sample)
                    slope = slope[0]
                node.attrs["slope"] = slope
            elif node.op == "LayerNormalization":
                node.attrs["scale"] = None if len(extra) < 1 else extra[0]
                node.attrs["bias"] = None if len(extra) < 2 else extra[1]
            node.inputs = node.inputs[:1]

    def _conv1d_as_conv2d(self) -> None:
        """A 1-D convolution (C, L) becomes a 2-D one on (C, 1, L) between two reshapes."""
        nodes = []
        for node in self.nodes:
            w = self.constants.get(node.inputs[1]) if node.op == "Conv" else None
            if w is None or w.ndim != 3:
                nodes.append(node)
                continue
            c, length = self.shapes[node.inputs[0]]
            a = node.attrs
            pads = tuple(a.get("pads", (0, 0)))
            w_name, x2, y2 = f"{node.name}.weight2d", f"{node.name}.input2d", f"{node.name}.output2d"
            self.constants[w_name] = w[:, :, None, :]
            out = self.shapes.get(node.outputs[0])
            if out is None:
                raise ValueError(f"[nn.load] node '{node.name}': the 1-D convolution's output shape is unknown")
            self.shapes[x2], self.shapes[y2] = (c, 1, length), (out[0], 1, out[1])
            attrs = {**a, "pads": (0, pads[0], 0, pads[1]), "strides": (1,) + tuple(a.get("strides", (1,))),
                     "dilations": (1,) + tuple(a.get("dilations", (1,))), "kernel_shape": (1, w.shape[2])}
            nodes += [Node("Reshape", f"{node.name}.to2d", [node.inputs[0]], [x2]),
                      Node("Conv", node.name, [x2, w_name] + node.inputs[2:], [y2], attrs),
                      Node("Reshape", f"{node.name}.to1d", [y2], node.outputs[:1])]
        self.nodes = nodes

    def ops(self) -> list[str]:
        return [n.op for n in self.nodes]
