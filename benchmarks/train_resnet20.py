#!/usr/bin/env python3
"""Trains ``ringfire.nn.zoo.resnet20`` at 32x32 on scikit-learn's bundled digits, in NumPy,
and writes the trained ONNX model (the weights the encrypted-inference benchmarks use).

    python benchmarks/train_resnet20.py [--epochs 12] [--out tests/data/resnet20_digits32.onnx]

No CIFAR-10 ships with any installed package and this machine has no network or torch, so the
CIFAR-shaped stand-in is the 8x8 digits (1797 images, the stratified 1437/360 split of
``tests/nn_models.digits_split``) upsampled 4x to 32x32 and repeated over 3 channels. The
trainer differentiates the zoo's own ONNX graph node by node (Conv, BatchNormalization with
batch statistics, Relu, Add, GlobalAveragePool, Flatten, Gemm), so the trained network is
exactly the graph ringfire runs; BatchNorm's running statistics are then measured over 512
training images, layer by layer. SGD with momentum 0.9, weight decay 5e-4, a cosine learning rate from 0.05,
batches of 64, random shifts of up to 2 pixels. Prints the test accuracy by onnxruntime.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the shared digits split, its 32x32 form, the loss
import nn_models as M  # noqa: E402

from ringfire.nn import zoo  # noqa: E402


def _windows(x: np.ndarray, k: int, stride: int, pad: int):
    """(B, C, k, k, OH, OW) strided view of the padded input."""
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))) if pad else x
    b, c, h, w = xp.shape
    oh, ow = (h - k) // stride + 1, (w - k) // stride + 1
    s = xp.strides
    view = np.lib.stride_tricks.as_strided(xp, (b, c, k, k, oh, ow),
                                           (s[0], s[1], s[2], s[3], s[2] * stride, s[3] * stride), writeable=False)
    return view, xp.shape


class Trainer:
    """Forward and backward passes over the zoo's ONNX graph."""

    def __init__(self, model):
        from onnx import numpy_helper
        self.model = model
        self.params = {t.name: numpy_helper.to_array(t).astype(np.float32).copy() for t in model.graph.initializer}
        self.nodes = list(model.graph.node)
        self.attrs = [{a.name: (list(a.ints) if a.ints else a.i if a.type == 2 else a.f) for a in n.attribute}
                      for n in self.nodes]
        for n, attrs in zip(self.nodes, self.attrs):  # where calibration stores a BatchNorm's statistics
            if n.op_type == "BatchNormalization":
                attrs["_mean"], attrs["_var"] = n.input[3], n.input[4]
        self.calibrating = False

    def forward(self, x, train: bool):
        p, values, caches = self.params, {"x": x}, []
        for node, attrs in zip(self.nodes, self.attrs):
            ins = [values[i] if i in values else p[i] for i in node.input]
            out, cache = getattr(self, "_f_" + node.op_type)(ins, attrs, train)
            values[node.output[0]] = out
            caches.append(cache)
        return values[self.nodes[-1].output[0]], caches

    def backward(self, grad_out, caches):
        grads = {k: np.zeros_like(v) for k, v in self.params.items()}
        upstream = {self.nodes[-1].output[0]: grad_out}
        for node, attrs, cache in zip(reversed(self.nodes), reversed(self.attrs), reversed(caches)):
            g = upstream.pop(node.output[0], None)
            if g is None:
                continue
            for name, gi in zip(node.input, getattr(self, "_b_" + node.op_type)(g, cache, attrs)):
                if gi is None:
                    continue
                if name in grads:
                    grads[name] += gi
                elif name != "x":
                    upstream[name] = upstream[name] + gi if name in upstream else gi
        return grads

    # ---- operators -------------------------------------------------------------------------
    def _f_Conv(self, ins, a, train):
        x, w = ins[0], ins[1]
        k, stride, pad = w.shape[2], a.get("strides", [1, 1])[0], a.get("pads", [0] * 4)[0]
        view, padded_shape = _windows(x, k, stride, pad)
        out = np.einsum("bcijhw,ocij->bohw", view, w, optimize=True)
        if len(ins) > 2:
            out += ins[2][None, :, None, None]
        return out, (x, w, view, padded_shape, k, stride, pad, len(ins) > 2)

    def _b_Conv(self, g, cache, a):
        x, w, view, padded_shape, k, stride, pad, has_bias = cache
        dw = np.einsum("bohw,bcijhw->ocij", g, view, optimize=True)
        dpad = np.zeros(padded_shape, dtype=g.dtype)
        oh, ow = g.shape[2], g.shape[3]
        for i in range(k):  # col2im: each kernel tap adds its share back where it read
            for j in range(k):
                dpad[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride] += np.einsum("bohw,oc->bchw", g,
                                                                                             w[:, :, i, j])
        dx = dpad[:, :, pad:pad + x.shape[2], pad:pad + x.shape[3]] if pad else dpad
        return [dx, dw] + ([g.sum(axis=(0, 2, 3))] if has_bias else [])

    def _f_BatchNormalization(self, ins, a, train):
        x, gamma, beta, mean, var = ins
        eps = a.get("epsilon", 1e-5)
        if train or self.calibrating:
            mean, var = x.mean(axis=(0, 2, 3), dtype=np.float64), x.var(axis=(0, 2, 3), dtype=np.float64)
            mean, var = mean.astype(x.dtype), var.astype(x.dtype)
        if self.calibrating:
            self.params[a["_mean"]], self.params[a["_var"]] = mean, var
        inv = 1.0 / np.sqrt(var + eps)
        xhat = (x - mean[None, :, None, None]) * inv[None, :, None, None]
        return gamma[None, :, None, None] * xhat + beta[None, :, None, None], (xhat, gamma, inv)

    def _b_BatchNormalization(self, g, cache, a):
        xhat, gamma, inv = cache
        n = g.shape[0] * g.shape[2] * g.shape[3]
        dgamma, dbeta = (g * xhat).sum(axis=(0, 2, 3)), g.sum(axis=(0, 2, 3))
        dxhat = g * gamma[None, :, None, None]
        dx = (inv[None, :, None, None] / n) * (n * dxhat - dxhat.sum(axis=(0, 2, 3))[None, :, None, None]
                                               - xhat * (dxhat * xhat).sum(axis=(0, 2, 3))[None, :, None, None])
        return [dx, dgamma, dbeta, None, None]

    def _f_Relu(self, ins, a, train):
        return np.maximum(ins[0], 0), ins[0] > 0

    def _b_Relu(self, g, mask, a):
        return [g * mask]

    def _f_Add(self, ins, a, train):
        return ins[0] + ins[1], None

    def _b_Add(self, g, cache, a):
        return [g, g]

    def _f_GlobalAveragePool(self, ins, a, train):
        return ins[0].mean(axis=(2, 3), keepdims=True), ins[0].shape

    def _b_GlobalAveragePool(self, g, shape, a):
        return [np.broadcast_to(g / (shape[2] * shape[3]), shape)]

    def _f_Flatten(self, ins, a, train):
        return ins[0].reshape(ins[0].shape[0], -1), ins[0].shape

    def _b_Flatten(self, g, shape, a):
        return [g.reshape(shape)]

    def _f_Gemm(self, ins, a, train):  # transB=1: y = x W^T + b
        return ins[0] @ ins[1].T + ins[2], (ins[0], ins[1])

    def _b_Gemm(self, g, cache, a):
        x, w = cache
        return [g @ w, g.T @ x, g.sum(axis=0)]

    # ---- training ----------------------------------------------------------------------------
    def fit(self, x, y, epochs, batch=64, lr=0.05, momentum=0.9, decay=5e-4, seed=0):
        rng = np.random.default_rng(seed)
        velocity = {k: np.zeros_like(v) for k, v in self.params.items()}
        bn_stats = {n.input[i] for n in self.nodes if n.op_type == "BatchNormalization" for i in (3, 4)}
        steps, total = 0, epochs * -(-len(x) // batch)
        for epoch in range(epochs):
            start, losses = time.perf_counter(), []
            for idx in M._minibatches(len(x), batch, rng):
                xb = shift(x[idx], rng)
                logits, caches = self.forward(xb, train=True)
                loss, g = M.softmax_xent(logits.astype(np.float64), y[idx])
                grads = self.backward(g.astype(np.float32), caches)
                rate = lr * 0.5 * (1 + np.cos(np.pi * steps / total))
                for k, v in self.params.items():
                    if k in bn_stats:
                        continue
                    velocity[k] = momentum * velocity[k] + grads[k] + (decay * v if v.ndim > 1 else 0)
                    v -= rate * velocity[k]
                steps += 1
                losses.append(loss)
            print(f"epoch {epoch + 1}/{epochs}: loss {np.mean(losses):.4f} ({time.perf_counter() - start:.0f} s)",
                  file=sys.stderr, flush=True)

    def set_running_statistics(self, x):
        """Each BatchNorm's population mean and variance over ``x``, layer by layer: a layer's
        statistics are measured with every BatchNorm before it already in eval mode."""
        self.calibrating = True
        try:
            self.forward(x, train=False)
        finally:
            self.calibrating = False

    def onnx(self):
        from onnx import numpy_helper
        for t in self.model.graph.initializer:
            t.CopyFrom(numpy_helper.from_array(self.params[t.name].astype(np.float32), t.name))
        self.model.producer_name = "ringfire benchmarks/train_resnet20.py"
        return self.model


def shift(x, rng, most=2):
    """Each image moved by up to ``most`` pixels each way (zeros come in)."""
    out = np.zeros_like(x)
    h, w = x.shape[2:]
    for i, (dy, dx) in enumerate(rng.integers(-most, most + 1, (len(x), 2))):
        out[i, :, max(dy, 0):h + min(dy, 0), max(dx, 0):w + min(dx, 0)] = \
            x[i, :, max(-dy, 0):h + min(-dy, 0), max(-dx, 0):w + min(-dx, 0)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--out", default=str(HERE.parent / "tests" / "data" / "resnet20_digits32.onnx"))
    args = ap.parse_args()
    import onnxruntime as ort

    xtr, ytr, xte, yte = M.digits_split()
    xtr, xte = M.cifar_shaped(xtr), M.cifar_shaped(xte)
    net, _ = zoo.resnet20(resolution=32, classes=10, seed=0)
    trainer = Trainer(net)
    trainer.fit(xtr, ytr, args.epochs)
    trainer.set_running_statistics(xtr[:512])
    model = trainer.onnx()
    pathlib.Path(args.out).write_bytes(model.SerializeToString())
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    logits = session.run(None, {"x": xte})[0]
    print(f"test accuracy (onnxruntime): {np.mean(logits.argmax(1) == yte):.4f} on {len(yte)} images; "
          f"wrote {args.out}")


if __name__ == "__main__":
    main()
