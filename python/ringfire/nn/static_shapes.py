"""Exported graphs that compute with their own shape, made static per sample.

Exporters write what the Python code did: ``x.size(0)`` becomes ``Shape`` followed by
``Gather``/``Concat``/``Reshape`` chains, and torch's attention moves the batch axis into
the middle of its tensors (``(L, B*heads, d)``) and back. Under batch packing the batch
lives in the slots, so every such graph has one static form per sample. This module finds
it from one plaintext run of the exported graph at batch 1 (ONNX's reference evaluator,
every intermediate kept), then:

* everything that does not depend on the input's values (``Shape``, ``Size`` and all that
  computes with them, constants) becomes an initializer with the value observed;
* if the batch axis stays first throughout, reshape targets are rewritten to keep it
  (``[-1, *sample]``) and the graph is done;
* otherwise the graph is *lifted*: the batch-1 tensor becomes the sample, with a new
  batch axis in front of every tensor (axes shift by one, Gemm becomes MatMul + Add,
  shape-changing operators become Reshapes to the observed shape, layers that need the
  batch first are wrapped in Reshapes that drop and restore the observed leading 1).

Either way the result is a valid ONNX model for any batch size, equal to the original one
sample at a time (the tests run both with onnxruntime), which ``Graph.from_onnx`` reads.
"""

from __future__ import annotations

import numpy as np

# Operators whose output is known without the input's values (its static shape is enough).
SHAPE_ONLY = {"Shape", "Size"}
# Operators that read their input with the batch first and keep it first: wrapped as they are.
BATCH_FIRST = {"Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
               "BatchNormalization", "InstanceNormalization", "Flatten"}
# Element-wise operators: the same in any layout (constants broadcast from the right).
ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh", "Gelu", "Erf", "Exp", "Abs", "Neg", "Clip",
               "LeakyRelu", "Elu", "Selu", "HardSigmoid", "HardSwish", "Softplus", "Identity", "Dropout", "Where",
               "Sqrt", "Pow", "Reciprocal", "Cast", "Max", "Min", "Mish", "Swish", "PRelu"}
# Operators with one `axis` attribute (ONNX axes count the batch).
AXIS_ATTR = {"Softmax", "LogSoftmax", "LayerNormalization", "Concat", "Gather", "Split"}
REDUCE = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"}
# Gathers by constant indices that may pick along any axis, the batch-1 axis included.
GATHER_BY_TABLE = {"GatherND", "GatherElements"}


def needs_static(model) -> bool:
    """Whether the graph computes with its own shape or moves the batch axis."""
    return any(n.op_type in SHAPE_ONLY or _transposes_axis_0(n) for n in model.graph.node)


def _transposes_axis_0(node) -> bool:
    """A Transpose that moves the first axis (the batch, unless it moved already)."""
    return node.op_type == "Transpose" and list(_attr(node, "perm", [0]))[:1] != [0]


def make_static(model):
    """The model with its shape computations folded and, where the batch axis moves, lifted
    (see the module docstring). Raises ``ValueError`` naming what cannot be made static."""
    from onnx import helper

    g = model.graph
    initializers = {t.name for t in g.initializer}
    inputs = [v for v in g.input if v.name not in initializers]
    if len(inputs) != 1:
        raise ValueError(f"[nn.load] expected exactly one data input, got {[v.name for v in inputs]}")
    source = inputs[0]
    sample = _sample_dims(source)
    values = _observe(model, source, sample)
    data = _data_tensors(g, source.name)
    shapes = {name: tuple(np.shape(values[name])) for name in data if name in values}
    constants = {}
    for n in g.node:
        for i in n.input:
            if i and i not in data and i in values:
                constants[i] = np.asarray(values[i])
    lift = any(shape[:1] != (1,) for shape in shapes.values()) or any(
        _transposes_axis_0(n) for n in g.node if n.input and n.input[0] in data)
    builder = _Builder(constants)
    if lift:
        for name, shape in shapes.items():
            if name != source.name and not shape:
                raise ValueError(f"[nn.load] tensor '{name}' is a scalar computed from the input: not per sample")
        builder.reshape(source.name, source.name + "/sample", (-1, *shapes[source.name]))
        builder.value_info.append(helper.make_tensor_value_info(source.name + "/sample", 1,
                                                                ["batch", *shapes[source.name]]))
        renamed = {source.name: source.name + "/sample"}
        shapes[source.name + "/sample"] = shapes[source.name]
    else:
        renamed = {}
    for n in g.node:
        if not any(o in data for o in n.output):
            continue  # folded: its outputs are constants now
        node = helper.make_node(n.op_type, [renamed.get(i, i) for i in n.input], list(n.output), name=n.name,
                                domain=n.domain)
        node.attribute.extend(n.attribute)
        if lift:
            _lift(builder, node, shapes)
        else:
            _keep_batch_first(builder, node, shapes)
    outputs, output_names = [], {o.name for o in g.output}
    for out in g.output:
        shape = shapes.get(out.name)
        if shape is None:
            raise ValueError(f"[nn.load] output '{out.name}' does not depend on the input")
        if lift:
            if shape[:1] != (1,):
                raise ValueError(f"[nn.load] output '{out.name}' has shape {shape} at batch 1: its batch axis is "
                                 "not first, so it cannot be returned per sample")
            builder.rename_output(out.name, (-1, *shape[1:]))
        outputs.append(helper.make_tensor_value_info(out.name, out.type.tensor_type.elem_type,
                                                     ["batch", *shape[1:]]))
    value_info = [helper.make_tensor_value_info(name, 1, ["batch", *(shape if lift else shape[1:])])
                  for name, shape in shapes.items() if name not in output_names and name != source.name]
    value_info += builder.value_info
    graph = helper.make_graph(builder.nodes, g.name or "static", [_with_batch(source, sample)], outputs,
                              builder.initializers(), value_info=value_info)
    static = helper.make_model(graph, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    return static


def _attr(node, name, default=None):
    from onnx import helper
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _set_attr(node, name, value) -> None:
    from onnx import helper
    for i, a in enumerate(node.attribute):
        if a.name == name:
            del node.attribute[i]
            break
    node.attribute.append(helper.make_attribute(name, value))


def _sample_dims(value_info) -> tuple[int, ...]:
    dims = value_info.type.tensor_type.shape.dim
    if not dims or not all(d.HasField("dim_value") for d in dims[1:]):
        raise ValueError("[nn.load] the input's per-sample shape must be static (export with a fixed input shape)")
    return tuple(int(d.dim_value) for d in dims[1:])


def _with_batch(value_info, sample):
    from onnx import helper
    return helper.make_tensor_value_info(value_info.name, value_info.type.tensor_type.elem_type, ["batch", *sample])


def _observe(model, source, sample) -> dict:
    """Every tensor's value in one run at batch 1 (the values of the constants; the shapes
    of the rest)."""
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    dtype = helper.tensor_dtype_to_np_dtype(source.type.tensor_type.elem_type)
    x = np.random.default_rng(0).standard_normal((1, *sample)).astype(dtype)
    try:
        results = ReferenceEvaluator(model).run(None, {source.name: x}, intermediate=True)
    except Exception as error:  # noqa: BLE001 - the evaluator raises many types
        raise ValueError(f"[nn.load] the graph could not be evaluated at batch 1 to find its static shapes: "
                         f"{type(error).__name__}: {error}") from None
    values = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    values.update(results)
    return values


def _data_tensors(graph, source: str) -> set[str]:
    """The tensors whose values depend on the input's values."""
    data = {source}
    for n in graph.node:
        if n.op_type not in SHAPE_ONLY and any(i in data for i in n.input if i):
            data.update(o for o in n.output if o)
    return data


class _Builder:
    """The rewritten graph's nodes and the constants they read."""

    def __init__(self, constants: dict):
        self.nodes = []
        self.value_info = []
        self._constants = dict(constants)
        self._used: dict[str, np.ndarray] = {}
        self._count = 0

    def const(self, name: str) -> np.ndarray:
        return self._constants[name]

    def is_const(self, name: str) -> bool:
        return name in self._constants

    def new_const(self, value, hint: str) -> str:
        self._count += 1
        name = f"static/{hint}/{self._count}"
        self._constants[name] = np.asarray(value)
        return name

    def add(self, node) -> None:
        for name in node.input:
            if name in self._constants:
                self._used[name] = self._constants[name]
        self.nodes.append(node)

    def reshape(self, src: str, dst: str, target) -> None:
        from onnx import helper
        shape = self.new_const(np.array(target, dtype=np.int64), "shape")
        self.add(helper.make_node("Reshape", [src, shape], [dst], name=f"static/reshape/{dst}"))

    def rename_output(self, name: str, target) -> None:
        """The node that made ``name`` now makes ``name/lifted``; a Reshape makes ``name``."""
        for node in self.nodes:
            for i, o in enumerate(node.output):
                if o == name:
                    node.output[i] = name + "/lifted"
            for i, o in enumerate(node.input):
                if o == name:
                    node.input[i] = name + "/lifted"
        self.reshape(name + "/lifted", name, target)

    def initializers(self) -> list:
        from onnx import numpy_helper
        return [numpy_helper.from_array(np.asarray(v), k) for k, v in self._used.items()]


def _keep_batch_first(b: _Builder, node, shapes) -> None:
    """The batch stays first: only reshape targets change (to keep the batch whatever its size)."""
    if node.op_type == "Reshape":
        node.input[1] = b.new_const(np.array((-1, *shapes[node.output[0]][1:]), dtype=np.int64), "shape")
        for i, a in enumerate(node.attribute):
            if a.name == "allowzero":  # the new target has no zeros; the default reads them as "copy"
                del node.attribute[i]
                break
    b.add(node)


def _full_axis(axis: int, rank: int, node) -> int:
    full = axis + rank if axis < 0 else axis
    if not 0 <= full < rank:
        raise ValueError(f"[nn.load] node '{node.name}': axis {axis} out of range for rank {rank}")
    return full


def _lift(b: _Builder, node, shapes) -> None:
    """One node in the lifted graph, where every data tensor has a new batch axis in front."""
    from onnx import helper

    op = node.op_type
    data_in = [i for i in node.input if i and not b.is_const(i)]
    rank = len(shapes[data_in[0]]) if data_in else 0
    out_shape = shapes[node.output[0]]
    if op in ("Reshape", "Squeeze", "Unsqueeze", "Flatten", "Expand") and len(data_in) == 1:
        b.reshape(data_in[0], node.output[0], (-1, *out_shape))
    elif op == "Transpose":
        perm = list(_attr(node, "perm", list(range(rank))[::-1]))
        _set_attr(node, "perm", [0] + [p + 1 for p in perm])
        b.add(node)
    elif op in AXIS_ATTR:
        default = -1 if op in ("Softmax", "LogSoftmax", "LayerNormalization") else 0
        axis = int(_attr(node, "axis", default))
        if op in ("Softmax", "LogSoftmax") and _attr(node, "axis") is None:
            axis = -1  # opset 13+: the last axis
        if op == "Concat" and any(b.is_const(i) for i in node.input if i):
            return _concat_with_constants(b, node, shapes, _full_axis(axis, rank, node))
        if axis >= 0:
            axis += 1
        _set_attr(node, "axis", axis)
        b.add(node)
    elif op == "Slice":
        starts = b.const(node.input[1])
        axes = b.const(node.input[3]) if len(node.input) > 3 and node.input[3] else np.arange(len(starts))
        lifted = np.array([_full_axis(int(a), rank, node) + 1 for a in axes], dtype=np.int64)
        inputs = list(node.input) + [""] * (4 - len(node.input))
        inputs[3] = b.new_const(lifted, "axes")
        del node.input[:]
        node.input.extend(inputs[:max(4, len(inputs))])
        b.add(node)
    elif op in REDUCE:
        axes = _attr(node, "axes")
        if axes is None and len(node.input) > 1 and node.input[1]:
            axes = b.const(node.input[1])
        axes = range(rank) if axes is None or len(np.atleast_1d(axes)) == 0 else np.atleast_1d(axes)
        lifted = [_full_axis(int(a), rank, node) + 1 for a in axes]
        if _attr(node, "axes") is not None:
            _set_attr(node, "axes", lifted)
        else:
            del node.input[1:]
            node.input.append(b.new_const(np.array(lifted, dtype=np.int64), "axes"))
        b.add(node)
    elif op == "Gemm":
        _gemm_as_matmul(b, node, shapes)
    elif op == "Pad" and data_in == [node.input[0]] and len(node.input) > 1 and b.is_const(node.input[1]):
        _lift_pad(b, node, rank)
    elif op in GATHER_BY_TABLE and data_in == [node.input[0]]:
        _gather_as_selection(b, node, shapes)
    elif op == "MatMul" or op in ELEMENTWISE:
        # Broadcasting aligns from the right, so the new batch axes line up only when the
        # data operands have one rank: a lower one gets leading ones after its batch axis.
        top = max(len(shapes[i]) for i in data_in)
        for k, name in enumerate(node.input):
            if name in data_in and len(shapes[name]) < top:
                padded = (1,) * (top - len(shapes[name])) + shapes[name]
                b.reshape(name, f"{name}/rank{top}", (-1, *padded))
                b.value_info.append(helper.make_tensor_value_info(f"{name}/rank{top}", 1, ["batch", *padded]))
                node.input[k] = f"{name}/rank{top}"
        b.add(node)
    elif op in BATCH_FIRST:
        src = data_in[0]
        if shapes[src][:1] != (1,):
            raise ValueError(f"[nn.load] node '{node.name}': {op} reads a tensor whose first axis is not the batch "
                             f"(shape {shapes[src]} at batch 1)")
        b.reshape(src, src + "/batch-first", (-1, *shapes[src][1:]))
        node.input[0] = src + "/batch-first"
        out = node.output[0]
        node.output[0] = out + "/batch-first"
        b.add(node)
        b.reshape(out + "/batch-first", out, (-1, *out_shape))
        b.value_info.append(helper.make_tensor_value_info(src + "/batch-first", 1, ["batch", *shapes[src][1:]]))
        b.value_info.append(helper.make_tensor_value_info(out + "/batch-first", 1, ["batch", *out_shape[1:]]))
    else:
        raise ValueError(f"[nn.load] node '{node.name}': {op} moves the batch axis in this graph and cannot be "
                         "made per-sample yet")


def _concat_with_constants(b: _Builder, node, shapes, axis: int) -> None:
    """Concat of data with constants (a ViT's class token) on the lifted tensors. ONNX's Concat
    wants the batch axis on every part, which a constant observed at batch 1 lacks, so the data
    parts are concatenated, padded with zeros where the constants go, and the constants added
    as one tensor that broadcasts over the batch (zero elsewhere: the data stay as they are).
    ``axis`` counts the batch-1 tensor's axes."""
    from onnx import helper

    parts = [i for i in node.input if i]
    data = [k for k, name in enumerate(parts) if not b.is_const(name)]
    if data != list(range(data[0], data[-1] + 1)):
        raise ValueError(f"[nn.load] node '{node.name}': Concat with constants between its data inputs is not "
                         "supported")
    out, out_shape = node.output[0], shapes[node.output[0]]
    sizes = [b.const(name).shape[axis] if b.is_const(name) else shapes[name][axis] for name in parts]
    joined = parts[data[0]]
    if len(data) > 1:
        joined = f"{out}/data"
        b.add(helper.make_node("Concat", parts[data[0]:data[-1] + 1], [joined], name=f"{node.name}/data",
                               axis=axis + 1))
        shape = list(out_shape)
        shape[axis] = sum(sizes[data[0]:data[-1] + 1])
        b.value_info.append(helper.make_tensor_value_info(joined, 1, ["batch", *shape]))
    rank = len(out_shape) + 1  # the lifted tensors' rank
    pads = np.zeros(2 * rank, dtype=np.int64)
    pads[axis + 1] = sum(sizes[:data[0]])
    pads[rank + axis + 1] = sum(sizes[data[-1] + 1:])
    padded = f"{out}/padded"
    b.add(helper.make_node("Pad", [joined, b.new_const(pads, "pads")], [padded], name=f"{node.name}/pad"))
    b.value_info.append(helper.make_tensor_value_info(padded, 1, ["batch", *out_shape]))
    constants = np.zeros((1, *out_shape), dtype=np.result_type(*(b.const(n) for n in parts if b.is_const(n))))
    start = 0
    for name, size in zip(parts, sizes):
        if b.is_const(name):
            where = [slice(None)] * len(out_shape)
            where[axis] = slice(start, start + size)
            constants[(0, *where)] = b.const(name)
        start += size
    b.add(helper.make_node("Add", [padded, b.new_const(constants, "concatenated")], [out], name=node.name))


def _lift_pad(b: _Builder, node, rank: int) -> None:
    """Pad on the lifted tensor: the new batch axis is not padded (its `axes`, where given,
    shift by one; else a zero pair joins the constant pads in front)."""
    if len(node.input) > 3 and node.input[3]:
        axes = np.atleast_1d(b.const(node.input[3]))
        node.input[3] = b.new_const(np.array([_full_axis(int(a), rank, node) + 1 for a in axes], dtype=np.int64),
                                    "axes")
    else:
        pads = np.asarray(b.const(node.input[1]), dtype=np.int64)
        half = pads.size // 2
        node.input[1] = b.new_const(np.concatenate([[0], pads[:half], [0], pads[half:]]), "pads")
    b.add(node)


def _gather_as_selection(b: _Builder, node, shapes) -> None:
    """A gather by constant indices on the lifted tensor (torch writes GatherND for an adaptive
    pooling that upsamples): the same node run on each element's position in the batch-1 tensor
    says which element every output takes, so it becomes one Gather along the flattened sample."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    src, out = node.input[0], node.output[0]
    sample = shapes[src]
    count = int(np.prod(sample))
    positions = np.arange(count, dtype=np.int64).reshape(sample)
    feeds = {src: positions, **{i: b.const(i) for i in node.input[1:] if i}}
    taken = np.asarray(ReferenceEvaluator(node).run(None, feeds)[0], dtype=np.int64)
    flat = f"{src}/flat"
    b.reshape(src, flat, (-1, count))
    b.value_info.append(helper.make_tensor_value_info(flat, 1, ["batch", count]))
    b.add(helper.make_node("Gather", [flat, b.new_const(taken, "positions")], [out], name=node.name, axis=1))


def _gemm_as_matmul(b: _Builder, node, shapes) -> None:
    """Gemm on the lifted (batch, M, K) tensor: MatMul by the constant weight, then Add."""
    from onnx import helper

    if int(_attr(node, "transA", 0)) or not b.is_const(node.input[1]):
        raise ValueError(f"[nn.load] node '{node.name}': Gemm with transA or a non-constant weight moves the batch")
    w = b.const(node.input[1])
    w = (w.T if int(_attr(node, "transB", 0)) else w) * float(_attr(node, "alpha", 1.0))
    out = node.output[0]
    product = out + "/product" if len(node.input) > 2 and node.input[2] else out
    b.add(helper.make_node("MatMul", [node.input[0], b.new_const(w.astype(b.const(node.input[1]).dtype), "weight")],
                           [product], name=node.name))
    if product != out:
        bias = b.const(node.input[2]) * float(_attr(node, "beta", 1.0))
        b.add(helper.make_node("Add", [product, b.new_const(bias.astype(w.dtype), "bias")], [out],
                               name=node.name + "/bias"))
        b.value_info.append(helper.make_tensor_value_info(product, 1, ["batch", *shapes[out]]))
