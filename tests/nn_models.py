"""Shared helpers for the ringfire.nn tests: tiny ONNX graphs built with
onnx.helper, an onnxruntime reference, and a small deterministic NumPy trainer
(MLP and CNN on scikit-learn's bundled digits).

Not a test module (no ``test_`` prefix); imported by test_nn_ops.py and
test_nn_digits.py.
"""

from __future__ import annotations

import numpy as np

OPSET = 13


# ---- ONNX building ---------------------------------------------------------------------
def make_model(nodes, in_shape, inits=None, out_name="y", out_shape=None, in_name="x", extra_inputs=(), opset=OPSET):
    """Serialized ONNX model (opset 13): one float input ``x`` of per-sample shape
    ``in_shape`` (batch axis symbolic), initializers from ``inits`` (name -> array;
    float arrays become float32, integer arrays int64). ``out_shape`` (per sample)
    defaults to what onnxruntime computes, so the declared output is fully typed
    like an exporter's."""
    from onnx import TensorProto, helper, numpy_helper

    inits = inits or {}
    tensors = []
    for name, value in inits.items():
        arr = np.asarray(value)
        arr = arr.astype(np.int64) if arr.dtype.kind in "iu" else arr.astype(np.float32)
        tensors.append(numpy_helper.from_array(arr, name))

    def build(shape):
        out_dims = None if shape is None else ["N"] + list(shape)
        g = helper.make_graph(list(nodes), "net",
                              [helper.make_tensor_value_info(in_name, TensorProto.FLOAT, ["N"] + list(in_shape))],
                              [helper.make_tensor_value_info(out_name, TensorProto.FLOAT, out_dims)], tensors)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = min(m.ir_version, 8)  # readable by older onnxruntime releases too
        return m.SerializeToString()

    if out_shape is None:
        probe = build(None)
        out_shape = ort_run(probe, np.zeros((2,) + tuple(in_shape)), in_name).shape[1:]
    return build(tuple(out_shape))


def mlp_bytes(sizes=(16, 8, 4), seed=0, activation="Relu"):
    """A random Gemm MLP with `activation` between layers, as a serialized ONNX model."""
    from onnx import helper

    rng = np.random.default_rng(seed)
    nodes, inits, prev = [], {}, "x"
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        inits[f"W{i}"], inits[f"B{i}"] = rng.normal(0, 0.4, (a, b)), rng.normal(0, 0.1, b)
        nodes.append(helper.make_node("Gemm", [prev, f"W{i}", f"B{i}"], [f"h{i}"]))
        prev = f"h{i}"
        if i < len(sizes) - 2:
            nodes.append(helper.make_node(activation, [prev], [f"a{i}"]))
            prev = f"a{i}"
    nodes[-1].output[0] = "y"
    return make_model(nodes, (sizes[0],), inits, out_shape=(sizes[-1],))


def ort_run(model_bytes, x, in_name="x"):
    """onnxruntime's output (float64), x batch first."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(model_bytes, opts, providers=["CPUExecutionProvider"])
    return sess.run(None, {in_name: np.asarray(x, dtype=np.float32)})[0].astype(np.float64)


def node(op, inputs, outputs, **attrs):
    from onnx import helper

    return helper.make_node(op, list(inputs), list(outputs) if isinstance(outputs, (list, tuple)) else [outputs],
                            **attrs)


# ---- data ------------------------------------------------------------------------------
def digits_split(seed=0):
    """scikit-learn's bundled 8x8 digits (no download), scaled to [0, 1]: a stratified
    1437/360 train/test split. Returns (x_train, y_train, x_test, y_test), x as (n, 1, 8, 8)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    x = (d.images / 16.0).astype(np.float64)[:, None]
    xtr, xte, ytr, yte = train_test_split(x, d.target, test_size=360, stratify=d.target, random_state=seed)
    return xtr, ytr, xte, yte


def served_digits_model(name: str, images: int = 64) -> tuple[bytes, np.ndarray]:
    """The digits model the service benchmarks run (serve_load, serve_floor, serve_stack):
    "mlp", or "cnn" with max pooling, trained here; with `images` test images shaped for it.
    Returns (ONNX bytes, x)."""
    x_train, y_train, x_test, _ = digits_split()
    if name == "mlp":
        return mlp_onnx(mlp_train(x_train, y_train)), x_test[:images]
    if name == "cnn":
        return (cnn_onnx(cnn_train(x_train.reshape(-1, 1, 8, 8), y_train, pool="max"), pool="max"),
                x_test[:images].reshape(-1, 1, 8, 8))
    raise ValueError(f"no served digits model {name!r}: mlp or cnn")


def cifar_shaped(x8: np.ndarray) -> np.ndarray:
    """(n, 1, 8, 8) digits -> (n, 3, 32, 32) float32: each pixel a 4x4 block, gray on all channels
    (a CIFAR-10-shaped stand-in where no CIFAR-10 ships)."""
    return np.repeat(np.kron(x8, np.ones((1, 1, 4, 4))), 3, axis=1).astype(np.float32)


# ---- a tiny NumPy trainer ------------------------------------------------------------------
def relu(z):
    return np.maximum(z, 0.0)


def relu_grad(z):
    return (z > 0).astype(z.dtype)


class PolyAct:
    """p(z) = sum c_k z^k as a trainable-through activation (fixed coefficients)."""

    def __init__(self, coeffs):
        self.c = np.asarray(coeffs, dtype=np.float64)

    def __call__(self, z):
        return np.polynomial.polynomial.polyval(z, self.c)

    def grad(self, z):
        return np.polynomial.polynomial.polyval(z, np.polynomial.polynomial.polyder(self.c))


def _act(activation):
    if activation is None or activation == "relu":
        return relu, relu_grad
    return activation, activation.grad


def softmax_xent(logits, y):
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    n = logits.shape[0]
    loss = -np.mean(np.log(p[np.arange(n), y] + 1e-12))
    g = p
    g[np.arange(n), y] -= 1.0
    return loss, g / n


class Adam:
    def __init__(self, params, lr=1e-2, b1=0.9, b2=0.999, eps=1e-8):
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}
        self.t = 0

    def step(self, params, grads):
        self.t += 1
        for k in params:
            self.m[k] = self.b1 * self.m[k] + (1 - self.b1) * grads[k]
            self.v[k] = self.b2 * self.v[k] + (1 - self.b2) * grads[k] ** 2
            mh = self.m[k] / (1 - self.b1 ** self.t)
            vh = self.v[k] / (1 - self.b2 ** self.t)
            params[k] -= self.lr * mh / (np.sqrt(vh) + self.eps)


def _minibatches(n, batch, rng):
    order = rng.permutation(n)
    for i in range(0, n, batch):
        yield order[i:i + batch]


# ---- MLP 64-32-10 -----------------------------------------------------------------------------
def mlp_init(seed=0, sizes=(64, 32, 10)):
    rng = np.random.default_rng(seed)
    a, h, o = sizes
    return {"W1": rng.normal(0, np.sqrt(2.0 / a), (a, h)), "b1": np.zeros(h),
            "W2": rng.normal(0, np.sqrt(1.0 / h), (h, o)), "b2": np.zeros(o)}


def mlp_forward(p, x, activation=None, cache=False):
    f, _ = _act(activation)
    x = x.reshape(x.shape[0], -1)
    z1 = x @ p["W1"] + p["b1"]
    a1 = f(z1)
    out = a1 @ p["W2"] + p["b2"]
    return (out, (x, z1, a1)) if cache else out


def mlp_train(x, y, epochs=60, lr=1e-2, batch=64, seed=0, params=None, activation=None):
    p = mlp_init(seed) if params is None else {k: v.copy() for k, v in params.items()}
    _, df = _act(activation)
    opt, rng = Adam(p, lr), np.random.default_rng(seed + 1)
    for _ in range(epochs):
        for idx in _minibatches(len(x), batch, rng):
            out, (xb, z1, a1) = mlp_forward(p, x[idx], activation, cache=True)
            _, g = softmax_xent(out, y[idx])
            grads = {"W2": a1.T @ g, "b2": g.sum(0)}
            gz1 = (g @ p["W2"].T) * df(z1)
            grads["W1"], grads["b1"] = xb.T @ gz1, gz1.sum(0)
            opt.step(p, grads)
    return p


def mlp_onnx(p):
    nodes = [node("Flatten", ["x"], ["f"]),
             node("Gemm", ["f", "W1", "b1"], ["h"]),
             node("Relu", ["h"], ["a"]),
             node("Gemm", ["a", "W2", "b2"], ["y"])]
    return make_model(nodes, (1, 8, 8), p, out_shape=(10,))


# ---- CNN: Conv(1->4, 3x3, pad 1) -> ReLU -> {Average,Max}Pool 2x2 -> Flatten -> Gemm(64->10) ----------
def cnn_init(seed=0, channels=4):
    rng = np.random.default_rng(seed)
    return {"Wc": rng.normal(0, np.sqrt(2.0 / 9), (channels, 1, 3, 3)), "bc": np.zeros(channels),
            "Wf": rng.normal(0, np.sqrt(1.0 / (channels * 16)), (10, channels * 16)), "bf": np.zeros(10)}


def _im2col(x):
    """x (B, 1, 8, 8), pad 1 -> (B, 64, 9) windows in (ky, kx) order."""
    xp = np.pad(x[:, 0], ((0, 0), (1, 1), (1, 1)))
    b, h, w = x.shape[0], x.shape[2], x.shape[3]
    cols = np.empty((b, h, w, 9))
    for ky in range(3):
        for kx in range(3):
            cols[..., ky * 3 + kx] = xp[:, ky:ky + h, kx:kx + w]
    return cols.reshape(b, h * w, 9)


def cnn_forward(p, x, pool="avg", activation=None, cache=False):
    f, _ = _act(activation)
    b = x.shape[0]
    c = p["Wc"].shape[0]
    cols = _im2col(x)                                            # (B, 64, 9)
    z = cols @ p["Wc"].reshape(c, 9).T + p["bc"]                   # (B, 64, C)
    z = z.transpose(0, 2, 1).reshape(b, c, 8, 8)                   # NCHW
    a = f(z)
    win = a.reshape(b, c, 4, 2, 4, 2)
    pooled = win.mean(axis=(3, 5)) if pool == "avg" else win.max(axis=(3, 5))
    flat = pooled.reshape(b, -1)
    out = flat @ p["Wf"].T + p["bf"]
    return (out, (cols, z, a, win, pooled, flat)) if cache else out


def cnn_train(x, y, epochs=40, lr=1e-2, batch=64, seed=0, pool="avg", params=None, activation=None):
    p = cnn_init(seed) if params is None else {k: v.copy() for k, v in params.items()}
    _, df = _act(activation)
    opt, rng = Adam(p, lr), np.random.default_rng(seed + 1)
    c = p["Wc"].shape[0]
    for _ in range(epochs):
        for idx in _minibatches(len(x), batch, rng):
            out, (cols, z, a, win, pooled, flat) = cnn_forward(p, x[idx], pool, activation, cache=True)
            _, g = softmax_xent(out, y[idx])
            b = len(idx)
            grads = {"Wf": g.T @ flat, "bf": g.sum(0)}
            gp = (g @ p["Wf"]).reshape(pooled.shape)               # (B, C, 4, 4)
            if pool == "avg":
                gwin = np.broadcast_to(gp[:, :, :, None, :, None] / 4.0, win.shape)
            else:
                mask = win == pooled[:, :, :, None, :, None]
                mask = mask / mask.sum(axis=(3, 5), keepdims=True)
                gwin = mask * gp[:, :, :, None, :, None]
            ga = gwin.reshape(a.shape)
            gz = (ga * df(z)).reshape(b, c, 64).transpose(0, 2, 1)  # (B, 64, C)
            grads["Wc"] = np.einsum("bpc,bpk->ck", gz, cols).reshape(p["Wc"].shape)
            grads["bc"] = gz.sum(axis=(0, 1))
            opt.step(p, grads)
    return p


def cnn_onnx(p, pool="avg"):
    pool_op = "AveragePool" if pool == "avg" else "MaxPool"
    nodes = [node("Conv", ["x", "Wc", "bc"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             node("Relu", ["c"], ["r"]),
             node(pool_op, ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             node("Flatten", ["p"], ["f"]),
             node("Gemm", ["f", "Wf", "bf"], ["y"], transB=1)]
    return make_model(nodes, (1, 8, 8), p, out_shape=(10,))


def accuracy(logits, y):
    return float(np.mean(np.argmax(logits, axis=1) == y))


# ---- a deeper MLP (scikit-learn's trainer), for bootstrapped non-interactive inference ------------
def deep_mlp_onnx(x_train, y_train, hidden=(16, 16), seed=0):
    """An MLP 64-hidden...-10 with ReLU, trained by scikit-learn on ``x_train``; returns
    (onnx bytes, the classifier). Each hidden ReLU layer costs a bootstrap without a client."""
    from sklearn.neural_network import MLPClassifier

    clf = MLPClassifier(hidden_layer_sizes=tuple(hidden), max_iter=500, random_state=seed)
    clf.fit(x_train.reshape(len(x_train), -1), y_train)
    inits, nodes, prev = {}, [node("Flatten", ["x"], ["f"])], "f"
    last = len(clf.coefs_) - 1
    for i, (w, b) in enumerate(zip(clf.coefs_, clf.intercepts_)):
        inits[f"W{i}"], inits[f"b{i}"] = w.T.copy(), b.copy()
        out = "y" if i == last else f"h{i}"
        nodes.append(node("Gemm", [prev, f"W{i}", f"b{i}"], [out], transB=1))
        if i != last:
            nodes.append(node("Relu", [out], [f"a{i}"]))
            prev = f"a{i}"
    return make_model(nodes, tuple(x_train.shape[1:]), inits, out_shape=(10,)), clf


def residual_cnn(rng):
    """A small residual CNN on 1x4x4 images: period 64 under inter-axis packing."""
    inits = {"W1": rng.normal(0, 0.4, (4, 1, 3, 3)), "W2": rng.normal(0, 0.3, (4, 4, 3, 3)),
             "W3": rng.normal(0, 0.5, (3, 16))}
    nodes = [node("Conv", ["x", "W1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]), node("Relu", ["c1"], ["r1"]),
             node("Conv", ["r1", "W2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             node("Add", ["c2", "r1"], ["s"]), node("Relu", ["s"], ["r2"]),
             node("AveragePool", ["r2"], ["p"], kernel_shape=[2, 2], strides=[2, 2]), node("Flatten", ["p"], ["f"]),
             node("Gemm", ["f", "W3"], ["y"], transB=1)]
    return make_model(nodes, (1, 4, 4), inits)


# ---- graphs that move the batch axis (torch's attention as exported) -----------------

L, E = 3, 4  # sequence and width of the attention graphs below


def attention_moving_the_batch() -> bytes:
    """Self-attention as torch's exporter writes it: the batch goes to axis 1, then merges with
    two heads into axis 0 through a shape computed from the tensor's own Shape, and back."""
    r = np.random.default_rng(2)
    half = np.array([E // 2])
    nodes = [node("Transpose", ["x"], "t", perm=[1, 0, 2]), node("MatMul", ["t", "W"], "p"),
             node("Shape", ["p"], "s"), node("Gather", ["s", "zero"], "len", axis=0),
             node("Gather", ["s", "one"], "batch", axis=0), node("Mul", ["batch", "two"], "batch_heads"),
             node("Unsqueeze", ["len", "axes0"], "len1"), node("Unsqueeze", ["batch_heads", "axes0"], "bh1"),
             node("Unsqueeze", ["batch", "axes0"], "b1"),
             node("Concat", ["len1", "bh1", "half"], "split_heads", axis=0),
             node("Reshape", ["p", "split_heads"], "r"), node("Transpose", ["r"], "q", perm=[1, 0, 2]),
             node("Transpose", ["q"], "k", perm=[0, 2, 1]), node("MatMul", ["q", "k"], "scores"),
             node("Mul", ["scores", "scale"], "scaled"), node("Softmax", ["scaled"], "weights", axis=-1),
             node("MatMul", ["weights", "q"], "o"), node("Transpose", ["o"], "o2", perm=[1, 0, 2]),
             node("Concat", ["len1", "b1", "width"], "merge_heads", axis=0),
             node("Reshape", ["o2", "merge_heads"], "o3"), node("Transpose", ["o3"], "y", perm=[1, 0, 2])]
    return make_model(nodes, (L, E), {"W": r.normal(0, 0.5, (E, E)), "zero": np.array(0), "one": np.array(1),
                                      "two": np.array(2), "axes0": np.array([0]), "half": half,
                                      "width": np.array([E]), "scale": np.array([0.5])})


def class_token_after_the_batch_moved(middle_token: bool = False) -> bytes:
    """A class token concatenated to the sequence after the batch axis moved (a ViT's, written
    sequence-first), then a dense layer; with ``middle_token`` a second data part follows it."""
    r = np.random.default_rng(5)
    parts = ["t", "token", "t"] if middle_token else ["token", "t"]
    length = 2 * L + 1 if middle_token else L + 1
    nodes = [node("Transpose", ["x"], "t", perm=[1, 0, 2]), node("Concat", parts, "y_t", axis=0),
             node("Transpose", ["y_t"], "y_b", perm=[1, 0, 2]), node("MatMul", ["y_b", "W"], "y")]
    return make_model(nodes, (L, E), {"token": r.normal(0, 1, (1, 1, E)), "W": r.normal(0, 0.5, (E, E))},
                      out_shape=(length, E))


# ---- small torch modules (torch passed in: it is an optional dependency) ---------------------
def self_attention(torch, width=8, heads=2):
    """``nn.MultiheadAttention`` as self-attention (batch first), the way models call it."""

    class SelfAttention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = torch.nn.MultiheadAttention(width, heads, batch_first=True)

        def forward(self, x):
            return self.attention(x, x, x, need_weights=False)[0]

    return SelfAttention().eval()


def tiny_vit(torch, torchvision):
    """torchvision's VisionTransformer at 16x16 with 8x8 patches, one layer of width 8; its
    classification head, which torchvision starts at zero, gets random weights."""
    vit = torchvision.models.VisionTransformer(image_size=16, patch_size=8, num_layers=1, num_heads=2,
                                               hidden_dim=8, mlp_dim=16, num_classes=5).eval()
    torch.nn.init.normal_(vit.heads.head.weight, std=0.5)
    torch.nn.init.normal_(vit.heads.head.bias, std=0.1)
    return vit


def bert_encoder(torch, transformers, width=16, heads=2, ff=32, layers=1, positions=16):
    """Hugging Face's BertModel (by default at a small size: width 16, 2 heads, one layer)
    called on input embeddings: the key holder embeds the tokens, the model runs the encoder.
    ``benchmarks/nn_torch_transformer.py --model bert`` builds its encoders here too."""
    config = transformers.BertConfig(vocab_size=64, hidden_size=width, num_hidden_layers=layers,
                                     num_attention_heads=heads, intermediate_size=ff,
                                     max_position_embeddings=positions, hidden_dropout_prob=0.0,
                                     attention_probs_dropout_prob=0.0)
    bert = transformers.BertModel(config, add_pooling_layer=False).eval()

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = bert

        def forward(self, embeddings):
            return self.model(inputs_embeds=embeddings).last_hidden_state

    return Encoder().eval()


ATTENTION_SEQ, ATTENTION_HEADS, ATTENTION_DH = 4, 2, 4


def multi_head_block(seed=0, seq=ATTENTION_SEQ, heads=ATTENTION_HEADS, head_width=ATTENTION_DH):
    """Multi-head self-attention as exporters write it: a packed q/k/v projection split by
    Gather, heads split off by Reshape and Transpose, scores scaled, Softmax, the heads merged
    back, the output projection, a residual sum and LayerNorm."""
    width = heads * head_width
    r = np.random.default_rng(seed)
    inits = {"Win": r.normal(0, 0.4, (width, 3 * width)), "bin": r.normal(0, 0.1, 3 * width),
             "Wo": r.normal(0, 0.4, (width, width)), "scale": np.array(head_width ** -0.5),
             "shape3": np.array([0, seq, 3, heads, head_width], dtype=np.int64),
             "merged": np.array([0, seq, width], dtype=np.int64),
             "i0": np.array(0, dtype=np.int64), "i1": np.array(1, dtype=np.int64), "i2": np.array(2, dtype=np.int64),
             "g": 1 + r.normal(0, 0.1, width), "b": r.normal(0, 0.1, width)}
    nodes = [
        node("MatMul", ["x", "Win"], "proj"), node("Add", ["proj", "bin"], "projb"),
        node("Reshape", ["projb", "shape3"], "split"),                       # (1, L, 3, H, dh)
        node("Gather", ["split", "i0"], "q", axis=2), node("Gather", ["split", "i1"], "k", axis=2),
        node("Gather", ["split", "i2"], "v", axis=2),                        # (1, L, H, dh)
        node("Transpose", ["q"], "qh", perm=[0, 2, 1, 3]), node("Transpose", ["k"], "kt", perm=[0, 2, 3, 1]),
        node("Transpose", ["v"], "vh", perm=[0, 2, 1, 3]),
        node("MatMul", ["qh", "kt"], "scores"), node("Mul", ["scores", "scale"], "scaled"),
        node("Softmax", ["scaled"], "attn", axis=-1),
        node("MatMul", ["attn", "vh"], "mixed"),                             # (1, H, L, dh)
        node("Transpose", ["mixed"], "tokens", perm=[0, 2, 1, 3]), node("Reshape", ["tokens", "merged"], "concat"),
        node("MatMul", ["concat", "Wo"], "out"), node("Add", ["x", "out"], "res"),
        node("LayerNormalization", ["res", "g", "b"], "y", axis=-1, epsilon=1e-5),
    ]
    return make_model(nodes, (seq, width), inits, opset=17)
