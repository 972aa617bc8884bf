"""ONNX builders for the networks of the scale study (seed 001): MobileNetV2
(width multiplier x resolution) and ResNet-50, with random weights.

The graphs follow the standard architectures so that their *shapes* -- and
hence ciphertext counts, memory and operation counts under batch-axis
packing -- are those of the real models; the weights are random (fixed seed),
so the outputs mean nothing. Every builder returns an ``onnx.ModelProto``
(opset 13, float32 initializers, static per-sample shapes, symbolic batch
axis ``"N"``); ``model.info`` is not available on protobufs, so the builders
also return the shape bookkeeping they did themselves, for independent checks::

    model, info = zoo.mobilenet_v2(0.35, 96)
    info["activations"]   # [(kind, op, per-sample output shape), ...] in graph order

MobileNetV2: Sandler et al. 2018 / the TF-slim and Keras reference: stem conv
3x3/2 -> 17 inverted-residual blocks (expand 1x1 + BN + ReLU6, depthwise 3x3
+ BN + ReLU6, project 1x1 + BN, residual Add when stride 1 and equal
channels) -> 1x1 conv to 1280 channels (``make_divisible(1280*width)`` above
width 1.0) + BN + ReLU6 -> GlobalAveragePool -> Gemm (1000 classes). ReLU6 is
``Clip(0, 6)`` with min/max inputs (opset 13). Padding is symmetric
(PyTorch/Keras-style ``pads=1``); TF "SAME" pads stride-2 layers
asymmetrically but gives the same output shapes for the even resolutions here.

ResNet-20 (:func:`resnet20`): the CIFAR network of the same paper, basic blocks.

ResNet-50: He et al. 2016 (torchvision v1.5 layout, stride on the 3x3 conv):
conv 7x7/2 + BN + ReLU, MaxPool 3x3/2, bottleneck stages [3, 4, 6, 3] with
widths 64..512 (x4 expansion), projection shortcuts (1x1 conv + BN),
residual Add + ReLU, GlobalAveragePool, Gemm (1000 classes).
"""

from __future__ import annotations

import numpy as np

MOBILENET_WIDTHS = (0.35, 0.5, 0.75, 1.0, 1.3, 1.4)
MOBILENET_RESOLUTIONS = (96, 128, 160, 192, 224)
# (expansion t, output channels c, repeats n, first stride s)
MOBILENET_V2_SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                         (6, 160, 3, 2), (6, 320, 1, 1))
TINY_MOBILENET_SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2))


def make_divisible(v: float, divisor: int = 8, min_value: int | None = None) -> int:
    """Channel rounding of the MobileNet reference implementations."""
    min_value = divisor if min_value is None else min_value
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return int(new_v)


class _Builder:
    """Appends ONNX nodes and tracks per-sample shapes by its own arithmetic."""

    def __init__(self, name: str, in_shape, seed: int):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []
        self.shapes = {"x": tuple(in_shape)}
        self.activations = []   # (kind, op, output shape): kind in linear/nonlinear/add/structural
        self.count = 0

    def _fresh(self, prefix):
        self.count += 1
        return f"{prefix}_{self.count}"

    def _init(self, name, arr):
        from onnx import numpy_helper
        self.inits.append(numpy_helper.from_array(np.asarray(arr, dtype=np.float32), name))
        return name

    def _node(self, op, inputs, shape, kind, **attrs):
        from onnx import helper
        out = self._fresh(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        self.shapes[out] = tuple(shape)
        self.activations.append((kind, op, tuple(shape)))
        return out

    def conv(self, x, out_c, k, stride=1, group=1, bn=True, gamma=(0.5, 1.0)):
        c, h, w = self.shapes[x]
        pad = k // 2
        oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
        fan_in = (c // group) * k * k
        wname = self._init(self._fresh("W"), self.rng.normal(0, np.sqrt(2.0 / fan_in), (out_c, c // group, k, k)))
        inputs = [x, wname]
        if not bn:
            inputs.append(self._init(self._fresh("B"), self.rng.normal(0, 0.05, out_c)))
        y = self._node("Conv", inputs, (out_c, oh, ow), "linear", kernel_shape=[k, k], strides=[stride, stride],
                       pads=[pad] * 4, group=group)
        if bn:
            # BatchNormalization (folded into the Conv by ringfire): the builder's
            # bookkeeping keeps the Conv as the linear layer and BN as folded.
            params = [self.rng.uniform(*gamma, out_c), self.rng.normal(0, 0.05, out_c),
                      self.rng.normal(0, 0.05, out_c), self.rng.uniform(0.8, 1.2, out_c)]
            names = [self._init(self._fresh(p), v) for p, v in zip(("gamma", "beta", "mean", "var"), params)]
            y = self._node("BatchNormalization", [y] + names, (out_c, oh, ow), "folded", epsilon=1e-5)
        return y

    def relu6(self, x):
        lo = self._init(self._fresh("clip_min"), np.array(0.0))
        hi = self._init(self._fresh("clip_max"), np.array(6.0))
        return self._node("Clip", [x, lo, hi], self.shapes[x], "nonlinear")

    def relu(self, x):
        return self._node("Relu", [x], self.shapes[x], "nonlinear")

    def maxpool(self, x, k=3, stride=2, pad=1):
        c, h, w = self.shapes[x]
        oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
        return self._node("MaxPool", [x], (c, oh, ow), "nonlinear", kernel_shape=[k, k], strides=[stride, stride],
                          pads=[pad] * 4)

    def add(self, a, b):
        assert self.shapes[a] == self.shapes[b]
        return self._node("Add", [a, b], self.shapes[a], "add")

    def head(self, x, classes):
        c = self.shapes[x][0]
        g = self._node("GlobalAveragePool", [x], (c, 1, 1), "linear")
        f = self._node("Flatten", [g], (c,), "structural", axis=1)
        wname = self._init(self._fresh("Wfc"), self.rng.normal(0, np.sqrt(1.0 / c), (classes, c)))
        bname = self._init(self._fresh("Bfc"), self.rng.normal(0, 0.01, classes))
        return self._node("Gemm", [f, wname, bname], (classes,), "linear", transB=1)

    def finish(self, y):
        from onnx import TensorProto, helper
        graph = helper.make_graph(
            self.nodes, self.name,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"] + list(self.shapes["x"]))],
            [helper.make_tensor_value_info(y, TensorProto.FLOAT, ["N"] + list(self.shapes[y]))], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="ringfire.nn.zoo")
        model.ir_version = min(model.ir_version, 8)  # readable by older onnxruntime builds
        info = {"name": self.name, "input_shape": self.shapes["x"], "output_shape": self.shapes[y],
                "activations": list(self.activations),
                "parameters": int(sum(int(np.prod(t.dims)) for t in self.inits))}
        return model, info


def mobilenet_v2(width: float = 1.0, resolution: int = 224, classes: int = 1000, seed: int = 0,
                 settings=MOBILENET_V2_SETTINGS, last_channels: int | None = None):
    """MobileNetV2(width, resolution) as ONNX; returns ``(model, info)``.

    ``settings``/``last_channels`` shrink the network for tests (see :func:`tiny_mobilenet_v2`).
    """
    b = _Builder(f"mobilenet_v2_{width}_{resolution}", (3, resolution, resolution), seed)
    in_c = make_divisible(32 * width)
    x = b.relu6(b.conv("x", in_c, 3, stride=2))
    for t, c, n, s in settings:
        out_c = make_divisible(c * width)
        for i in range(n):
            stride = s if i == 0 else 1
            h = x
            if t != 1:
                h = b.relu6(b.conv(h, in_c * t, 1))
            hidden = b.shapes[h][0]
            h = b.relu6(b.conv(h, hidden, 3, stride=stride, group=hidden))
            h = b.conv(h, out_c, 1, gamma=(0.1, 0.3))  # linear bottleneck (small gamma: bounded residual sums)
            x = b.add(x, h) if stride == 1 and in_c == out_c else h
            in_c = out_c
    if last_channels is None:
        last_channels = make_divisible(1280 * width) if width > 1.0 else 1280
    x = b.relu6(b.conv(x, last_channels, 1))
    return b.finish(b.head(x, classes))


def tiny_mobilenet_v2(resolution: int = 8, width: float = 0.35, classes: int = 10, seed: int = 0):
    """A MobileNetV2 with the same operators (Conv, depthwise Conv, BN, ReLU6, Add, GAP, Gemm)
    but two stages, 32 final channels and 10 classes: small enough to run encrypted in a test."""
    return mobilenet_v2(width, resolution, classes, seed, settings=TINY_MOBILENET_SETTINGS, last_channels=32)


def resnet50(resolution: int = 224, classes: int = 1000, seed: int = 0, layers=(3, 4, 6, 3),
             widths=(64, 128, 256, 512), stem: int = 64, expansion: int = 4):
    """ResNet-50 (bottleneck blocks) as ONNX; returns ``(model, info)``."""
    b = _Builder(f"resnet50_{resolution}" if tuple(layers) == (3, 4, 6, 3) else f"resnet_{resolution}",
                 (3, resolution, resolution), seed)
    x = b.maxpool(b.relu(b.conv("x", stem, 7, stride=2)))
    in_c = stem
    for stage, (n, w) in enumerate(zip(layers, widths)):
        for i in range(n):
            stride = 2 if (i == 0 and stage > 0) else 1
            h = b.relu(b.conv(x, w, 1))
            h = b.relu(b.conv(h, w, 3, stride=stride))
            h = b.conv(h, w * expansion, 1, gamma=(0.1, 0.3))
            short = x if (stride == 1 and in_c == w * expansion) else b.conv(x, w * expansion, 1, stride=stride)
            x = b.relu(b.add(short, h))
            in_c = w * expansion
    return b.finish(b.head(x, classes))


def resnet20(resolution: int = 32, classes: int = 10, seed: int = 0, blocks: int = 3, widths=(16, 32, 64)):
    """ResNet-20 for CIFAR-10-shaped inputs (He et al. 2016, Sec. 4.2) as ONNX; returns
    ``(model, info)``: conv 3x3 (16) + BN + ReLU, three stages of ``blocks`` basic blocks
    (two 3x3 convs with BN) at widths 16/32/64, the first of stages 2 and 3 with stride 2
    and a projection shortcut (1x1 conv + BN, option B), residual Add + ReLU,
    GlobalAveragePool, Gemm."""
    b = _Builder(f"resnet20_{resolution}", (3, resolution, resolution), seed)
    x = b.relu(b.conv("x", widths[0], 3))
    in_c = widths[0]
    for stage, w in enumerate(widths):
        for i in range(blocks):
            stride = 2 if (i == 0 and stage > 0) else 1
            h = b.relu(b.conv(x, w, 3, stride=stride))
            h = b.conv(h, w, 3, gamma=(0.2, 0.5))  # small gamma: bounded residual sums
            short = x if (stride == 1 and in_c == w) else b.conv(x, w, 1, stride=stride)
            x = b.relu(b.add(short, h))
            in_c = w
    return b.finish(b.head(x, classes))


def tiny_resnet(resolution: int = 16, classes: int = 10, seed: int = 0):
    """ResNet with the ResNet-50 operators (stem conv, MaxPool, bottlenecks with projection
    shortcut and identity shortcut, GAP, Gemm) at a test size."""
    return resnet50(resolution, classes, seed, layers=(2, 1), widths=(4, 8), stem=8, expansion=2)


def seed001_configs():
    """The MobileNetV2 configurations of seed 001 (Fig. 2-5): every width with every
    resolution for widths <= 1.0; 1.3 and 1.4 only at 224 (the pretrained TF-slim set)."""
    out = [(w, r) for w in MOBILENET_WIDTHS if w <= 1.0 for r in MOBILENET_RESOLUTIONS]
    return out + [(1.3, 224), (1.4, 224)]


def expected_counts(info) -> dict:
    """Ciphertext counts under batch-axis packing from the builder's own shape
    arithmetic (independent of ringfire's planner): one rescaled output
    ciphertext per element of every linear layer (Conv with BN folded, GAP,
    Gemm), one client round trip per *input* element of every ReLU/ReLU6/MaxPool, except
    a non-linear layer right after another (the stem's ReLU then MaxPool), which the key
    holder computes in the same round (these builders' layers read only the one before)."""
    acts = info["activations"]
    size = lambda s: int(np.prod(s))  # noqa: E731
    rescales = sum(size(s) for kind, op, s in acts if kind == "linear")
    round_trips, prev, prev_kind = 0, tuple(info["input_shape"]), None
    for kind, op, s in acts:
        if kind == "nonlinear" and prev_kind != "nonlinear":
            round_trips += size(prev)
        if kind != "structural":
            prev, prev_kind = s, kind
    live = [size(info["input_shape"])] + [size(s) for kind, op, s in acts if kind in ("linear", "nonlinear", "add")]
    return {"input_ciphertexts": size(info["input_shape"]), "output_ciphertexts": size(info["output_shape"]),
            "rescales": rescales, "client_round_trips": round_trips, "largest_tensor": max(live)}
