"""Linear layers as explicit sparse maps: output element o = sum of
weight * input element + bias. Batch-axis packing evaluates each output as one
ciphertext linear combination; the planner counts the terms.

Every builder works on per-sample shapes (no batch axis) and returns a
:class:`LinearMap` over flattened (C-order) element indices.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class LinearMap:
    out_shape: tuple[int, ...]
    rows: np.ndarray      # output index of each term
    cols: np.ndarray      # input index of each term
    weights: np.ndarray   # weight of each term
    bias: np.ndarray      # one per output element (flattened)

    @property
    def terms(self) -> int:
        return int(self.rows.size)

    def dense(self, in_size: int) -> np.ndarray:
        m = np.zeros((int(np.prod(self.out_shape)), in_size))
        np.add.at(m, (self.rows, self.cols), self.weights)
        return m

    def apply(self, x: np.ndarray) -> np.ndarray:
        """Plaintext check: x is (batch, *in_shape)."""
        flat = x.reshape(x.shape[0], -1)
        out = np.zeros((x.shape[0], int(np.prod(self.out_shape))))
        np.add.at(out.T, self.rows, (flat[:, self.cols] * self.weights).T)
        return (out + self.bias).reshape((x.shape[0],) + tuple(self.out_shape))


def conv(in_shape, weight, bias, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), group=1) -> LinearMap:
    c_in, h, w = in_shape
    m_out, c_per_group, kh, kw = weight.shape
    sh, sw = strides
    dh, dw = dilations
    top, left, bottom, right = pads[0], pads[1], pads[2], pads[3]
    oh = (h + top + bottom - dh * (kh - 1) - 1) // sh + 1
    ow = (w + left + right - dw * (kw - 1) - 1) // sw + 1
    m_per_group = m_out // group
    mm, yy, xx, cc, ky, kx = np.meshgrid(np.arange(m_out), np.arange(oh), np.arange(ow), np.arange(c_per_group),
                                         np.arange(kh), np.arange(kw), indexing="ij")
    iy = yy * sh - top + ky * dh
    ix = xx * sw - left + kx * dw
    ci = (mm // m_per_group) * c_per_group + cc
    valid = (iy >= 0) & (iy < h) & (ix >= 0) & (ix < w)
    rows = ((mm * oh + yy) * ow + xx)[valid]
    cols = ((ci * h + iy) * w + ix)[valid]
    weights = weight[mm, cc, ky, kx][valid]
    b = np.zeros(m_out) if bias is None else np.asarray(bias, dtype=np.float64)
    keep = weights != 0
    return LinearMap((m_out, oh, ow), rows[keep], cols[keep], weights[keep], np.repeat(b, oh * ow))


def matrix(in_shape, w, bias=None) -> LinearMap:
    """y = x @ w (+ bias) over the last axis of x; w is (K, M)."""
    k, m = w.shape
    lead = int(np.prod(in_shape[:-1])) if len(in_shape) > 1 else 1
    if in_shape[-1] != k:
        raise ValueError(f"[nn] matrix product: input has {in_shape[-1]} features, weight expects {k}")
    ll, mm, kk = np.meshgrid(np.arange(lead), np.arange(m), np.arange(k), indexing="ij")
    weights = w[kk, mm]
    keep = weights != 0
    b = np.zeros(m) if bias is None else np.broadcast_to(np.asarray(bias, dtype=np.float64), (m,))
    return LinearMap(tuple(in_shape[:-1]) + (m,), (ll * m + mm)[keep], (ll * k + kk)[keep], weights[keep],
                     np.tile(b, lead))


def average_pool(in_shape, kernel, strides, pads=(0, 0, 0, 0), count_include_pad=False) -> LinearMap:
    c, h, w = in_shape
    kh, kw = kernel
    ones = np.ones((c, 1, kh, kw))
    lm = conv(in_shape, ones, None, strides, pads, (1, 1), group=c)
    if count_include_pad:
        lm.weights = lm.weights / (kh * kw)
    else:
        counts = np.bincount(lm.rows, minlength=int(np.prod(lm.out_shape)))
        lm.weights = lm.weights / counts[lm.rows]
    return lm


def global_average_pool(in_shape) -> LinearMap:
    c = in_shape[0]
    spatial = int(np.prod(in_shape[1:]))
    rows = np.repeat(np.arange(c), spatial)
    cols = np.arange(c * spatial)
    return LinearMap((c,) + (1,) * (len(in_shape) - 1), rows, cols, np.full(rows.size, 1.0 / spatial), np.zeros(c))


def elementwise(in_shape, scale, offset) -> LinearMap:
    """y = scale * x + offset with per-element (broadcast) scale and offset."""
    size = int(np.prod(in_shape))
    s = np.broadcast_to(scale, in_shape).reshape(-1)
    o = np.broadcast_to(offset, in_shape).reshape(-1).astype(np.float64)
    idx = np.arange(size)
    keep = s != 0
    return LinearMap(tuple(in_shape), idx[keep], idx[keep], s[keep].astype(np.float64), o)


def reduce_mean(in_shape, axes, keepdims: bool = True) -> LinearMap:
    """The mean over ``axes`` (per-sample axes), as ONNX ReduceMean."""
    in_shape = tuple(in_shape)
    kept_shape = tuple(1 if i in axes else s for i, s in enumerate(in_shape))
    count = int(np.prod([in_shape[i] for i in axes])) if axes else 1
    cols = np.arange(int(np.prod(in_shape)))
    coords = np.unravel_index(cols, in_shape)
    rows = np.ravel_multi_index(tuple(np.zeros_like(c) if i in axes else c for i, c in enumerate(coords)), kept_shape)
    out_shape = kept_shape if keepdims else tuple(s for i, s in enumerate(in_shape) if i not in axes)
    return LinearMap(out_shape, rows, cols, np.full(cols.size, 1.0 / count), np.zeros(int(np.prod(kept_shape))))
