"""The non-linear operators: one table of what the key holder computes in the
clear (client-aided mode) and what has a polynomial form (``activation="poly"``).

Arrays here are shaped (*sample_shape, batch): the batch is the last axis, so
an ONNX axis ``a`` (which counts the batch as axis 0) is array axis ``a - 1``.

Two kinds:

* **element-wise** (Relu, Sigmoid, Tanh, Gelu, LeakyRelu, ...): one value in,
  one out. With inter-axis packing too, and as least-squares polynomials fitted
  on the calibration range for non-interactive runs (``activation="poly"``).
* **per-sample** (MaxPool, Softmax, LogSoftmax, LayerNormalization): each
  output reads several values of the same sample; batch-axis packing only.

In client-aided mode the key holder decrypts every input of these layers: it
sees each pre-activation value of each sample (docs/nn.md, "Non-linear layers").
"""

from __future__ import annotations

import math

import numpy as np

from .activations import maxpool

_erf = np.vectorize(math.erf, otypes=[float])


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # no overflow warnings for large |z|


def _gelu(node, z):
    if node.attrs.get("approximate", b"none") in (b"tanh", "tanh"):
        return 0.5 * z * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z**3)))
    return 0.5 * z * (1.0 + _erf(z / math.sqrt(2.0)))


def _prelu(node, z):
    slope = np.asarray(node.attrs["slope"], dtype=np.float64)
    if slope.size > 1:  # (…sample axes) -> aligned right against (*sample, batch)
        slope = slope.reshape((1,) * (z.ndim - 1 - slope.ndim) + slope.shape + (1,))
    return np.where(z >= 0, z, slope * z)


def _attr(node, name, default):
    return float(node.attrs.get(name, default))


# op -> f(node, z): the element-wise operators, exactly as ONNX defines them.
ELEMENTWISE = {
    "Relu": lambda n, z: np.maximum(z, 0.0),
    "Clip": lambda n, z: np.clip(z, *n.attrs["bounds"]),
    "Sigmoid": lambda n, z: _sigmoid(z),
    "HardSigmoid": lambda n, z: np.clip(_attr(n, "alpha", 0.2) * z + _attr(n, "beta", 0.5), 0.0, 1.0),
    "HardSwish": lambda n, z: z * np.clip(z / 6.0 + 0.5, 0.0, 1.0),
    "Tanh": lambda n, z: np.tanh(z),
    "Erf": lambda n, z: _erf(z),
    "Gelu": _gelu,
    "LeakyRelu": lambda n, z: np.where(z >= 0, z, _attr(n, "alpha", 0.01) * z),
    "PRelu": _prelu,
    "Elu": lambda n, z: np.where(z >= 0, z, _attr(n, "alpha", 1.0) * np.expm1(np.minimum(z, 0.0))),
    "Selu": lambda n, z: _attr(n, "gamma", 1.0507009873554805) * np.where(
        z > 0, z, _attr(n, "alpha", 1.6732632423543772) * np.expm1(np.minimum(z, 0.0))),
    "Softplus": lambda n, z: np.logaddexp(0.0, z),
    "Softsign": lambda n, z: z / (1.0 + np.abs(z)),
    "Mish": lambda n, z: z * np.tanh(np.logaddexp(0.0, z)),
    # ONNX's Swish (opset 24), and torch's SiLU once graph.py fuses its x * Sigmoid(x).
    "Swish": lambda n, z: z * _sigmoid(_attr(n, "alpha", 1.0) * z),
    "Abs": lambda n, z: np.abs(z),
    "Exp": lambda n, z: np.exp(z),
}

PER_SAMPLE = {"MaxPool", "Softmax", "LogSoftmax", "LayerNormalization"}

NONLINEAR_OPS = set(ELEMENTWISE) | PER_SAMPLE

def _sample_axis(node, axis: int, rank: int) -> int:
    """ONNX axis (batch included) -> axis of a (*sample, batch) array of sample rank ``rank``."""
    full = axis + rank + 1 if axis < 0 else axis
    if not 1 <= full <= rank:
        raise ValueError(f"[nn] node '{node.name}': {node.op} along axis {axis} (the batch axis or out of range "
                         f"for a rank-{rank + 1} input) cannot run per sample")
    return full - 1


def _softmax(node, x, rank: int, log: bool):
    opset = int(node.attrs.get("_opset", 13))
    axis = int(node.attrs.get("axis", -1 if opset >= 13 else 1))
    start = _sample_axis(node, axis, rank)
    # Opset 13 normalises along one axis; before, over every axis from `axis` on.
    axes = (start,) if opset >= 13 else tuple(range(start, rank))
    shifted = x - np.max(x, axis=axes, keepdims=True)
    log_norm = np.log(np.sum(np.exp(shifted), axis=axes, keepdims=True))
    return shifted - log_norm if log else np.exp(shifted - log_norm)


def _layer_norm(node, x, rank: int):
    start = _sample_axis(node, int(node.attrs.get("axis", -1)), rank)
    axes = tuple(range(start, rank))
    mean = np.mean(x, axis=axes, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + _attr(node, "epsilon", 1e-5))
    tail = (1,) * (x.ndim - rank)  # the batch axis (and any trailing axes) broadcast
    scale = node.attrs.get("scale")
    bias = node.attrs.get("bias")
    if scale is not None:
        y = y * np.asarray(scale).reshape(np.asarray(scale).shape + tail)
    if bias is not None:
        y = y + np.asarray(bias).reshape(np.asarray(bias).shape + tail)
    return y


class Chain:
    """Client-aided layers that follow one another with nothing in between (a ReLU, then a
    MaxPool): the key holder applies them all in one round, so the ciphertexts between them
    are never encrypted, sent back and sent again. It reads as its last layer (the level its
    result is encrypted at) and names every layer."""

    op = "Chain"

    def __init__(self, nodes):
        if len(nodes) < 2:
            raise ValueError("[nn] a chain of client-aided layers has at least two")
        self.nodes = list(nodes)

    @property
    def name(self) -> str:
        return " + ".join(n.name for n in self.nodes)

    @property
    def attrs(self) -> dict:
        return self.nodes[-1].attrs

    def __repr__(self) -> str:
        return f"Chain({', '.join(f'{n.op} {n.name}' for n in self.nodes)})"


def chains_of(graph, polys) -> dict:
    """The client-aided layers that run as one round: {first layer's name: Chain}. A layer
    joins the one before it when it reads only that layer's output and nothing else does
    (and the output is not the model's): the key holder then computes both in the clear."""
    consumers: dict[str, int] = {}
    for n in graph.nodes:
        for name in n.inputs:
            consumers[name] = consumers.get(name, 0) + 1
    aided = lambda n: n.op in NONLINEAR_OPS and n.name not in polys  # noqa: E731
    chains, current = {}, []
    for n in graph.nodes:
        prev = current[-1] if current else None
        if prev is not None and aided(n) and n.inputs[:1] == prev.outputs[:1] \
                and all(name in graph.constants for name in n.inputs[1:]) \
                and consumers.get(prev.outputs[0]) == 1 and prev.outputs[0] not in graph.output_names:
            current.append(n)
            continue
        if len(current) > 1:
            chains[current[0].name] = Chain(current)
        current = [n] if aided(n) else []
    if len(current) > 1:
        chains[current[0].name] = Chain(current)
    return chains


def exact(node, x, shape):
    """The layer in the clear on an array (*shape, batch...): (output, output shape)."""
    if isinstance(node, Chain):
        for layer in node.nodes:
            x, shape = exact(layer, x, shape)
        return x, shape
    op = node.op
    if op in ELEMENTWISE:
        return ELEMENTWISE[op](node, x), tuple(shape)
    rank = len(shape)
    if op == "MaxPool":
        k = tuple(node.attrs["kernel_shape"])
        strides = tuple(node.attrs.get("strides", (1,) * len(k)))
        pads = tuple(node.attrs.get("pads", (0,) * 4))
        out = maxpool(x, k, strides, pads, ceil_mode=bool(node.attrs.get("ceil_mode", 0)))
        return out, tuple(out.shape[:3])
    if op in ("Softmax", "LogSoftmax"):
        return _softmax(node, x, rank, op == "LogSoftmax"), tuple(shape)
    if op == "LayerNormalization":
        return _layer_norm(node, x, rank), tuple(shape)
    raise ValueError(f"[nn] no exact implementation of {op}")
