"""Masks that hide client-aided layers' inputs from the key holder (``masking=True``).

In client-aided mode the key holder decrypts every input of a non-linear layer. Where the
layer commutes with a transformation the server can undo, the server applies a fresh
random one before sending and the key holder never sees the true values:

- **Scale masks** (``Relu``, ``LeakyRelu``, ``PRelu``, ``Abs``, ``Clip`` to [0, inf) and
  ``MaxPool``): f(r x) = r f(x) for r > 0. Each value is multiplied by its own
  r = 2^u, u uniform in [-bits, bits] (``MaxPool``: one r per window, or per channel
  where windows overlap, so a window's maximum stays its maximum); the server multiplies the returned
  values by 1/r. The key holder learns the sign of every value (which it needs to
  apply the layer), which input of each pooling window is largest (and, where windows
  overlap, how a channel's values compare with each other), and the magnitude times r:
  the magnitude only up to a factor it cannot tell from 2^(±bits). Costs one level before
  the decryption and one after the re-encryption, and up to ``bits`` bits of precision.
- **Shift masks** (``Softmax``, ``LogSoftmax``, ``LayerNormalization``): f(x + b) = f(x)
  for b constant along the normalized axes. One uniform b per sample is added to every
  value (no level). The key holder learns the differences between the values of a
  sample, not where they sit.
- **Everything else** (``Sigmoid``, ``Tanh``, ``Gelu``, ``Elu``, ``Clip`` to bounded
  ranges, ...) has no such symmetry: its inputs reach the key holder unmasked.

Every sample (slot) and every value draws its own mask from the operating system's
CSPRNG, so masks do not repeat across values, layers or runs.
"""

from __future__ import annotations

import math
import os

import numpy as np

SCALE_MASKED = {"Relu", "LeakyRelu", "PRelu", "Abs", "MaxPool"}
SHIFT_MASKED = {"Softmax", "LogSoftmax", "LayerNormalization"}


def mask_kind(node) -> str | None:
    """``"scale"``, ``"shift"`` or None (the layer's input is sent unmasked)."""
    if node.op in SCALE_MASKED:
        return "scale"
    if node.op == "Clip":
        low, high = node.attrs["bounds"]
        if low in (0.0, -math.inf) and high in (0.0, math.inf):
            return "scale"
        return None
    if node.op in SHIFT_MASKED:
        return "shift"
    return None


def uniform(shape) -> np.ndarray:
    """Uniform doubles in [0, 1) from the OS CSPRNG (53 random bits each)."""
    count = int(np.prod(shape, dtype=np.int64))
    words = np.frombuffer(os.urandom(8 * count), dtype=np.uint64) >> np.uint64(11)
    return (words.astype(np.float64) * 2.0**-53).reshape(shape)


def _is_ct(v) -> bool:
    return v is not None and not isinstance(v, float)


class Masker:
    """Masks a layer's inputs before they go to the key holder and unmasks what comes back.

    Args:
        ctx, keys: the model's context and the public keys (constants known to the server
            are encrypted masked, so that every value the key holder sees is masked).
        scale_bits: r = 2^u with u uniform in [-scale_bits, scale_bits].
        shift_bits: b uniform in [-2^shift_bits, 2^shift_bits], lowered where the
            ciphertext's modulus leaves less room.
    """

    def __init__(self, ctx, keys, scale_bits: float = 4.0, shift_bits: float = 8.0):
        self.check_bits(scale_bits, "scale_bits")
        self.check_bits(shift_bits, "shift_bits")
        self.ctx, self.keys, self.ev = ctx, keys, ctx.evaluator(keys)
        self.scale_bits, self.shift_bits = float(scale_bits), float(shift_bits)
        self.masked_values = 0  # values that reached the key holder masked, counted per ciphertext

    @staticmethod
    def check_bits(bits, name: str = "mask_bits") -> None:
        if isinstance(bits, bool) or not isinstance(bits, (int, float)) or not 0 < bits <= 16:
            raise ValueError(f"[nn.masking] {name} must be a number in (0, 16], got {bits!r}")

    # ---- the random masks ---------------------------------------------------------
    def _scales(self, shape) -> np.ndarray:
        return np.exp2(self.scale_bits * (2.0 * uniform(shape) - 1.0))

    def _shift_bound(self, level: int, scale: float) -> float:
        """2^shift_bits, or less where q_0...q_level leaves under 2^shift_bits + 8 bits of room above the scale."""
        room = sum(math.log2(q) for q in self.ctx.params.q_primes[:level + 1]) - math.log2(scale) - 1.0
        return 2.0 ** max(0.0, min(self.shift_bits, room - 8.0))

    # ---- the layer's input and output ----------------------------------------------
    def mask(self, node, x: np.ndarray, shape) -> tuple[np.ndarray, np.ndarray | None]:
        """The array to send (a Ciphertext per value) and the masks (None for a shift)."""
        kind = mask_kind(node)
        cts = [c for c in x.flat if _is_ct(c)]
        if kind is None or not cts:
            return x, None
        slots = self.ctx.slots
        if kind == "shift":
            level = min(c.level for c in cts)
            bound = self._shift_bound(level, max(c.scale for c in cts))
            b = bound * (2.0 * uniform(slots) - 1.0)

            def shift_ct(idx, c):
                return self.ev.add_plain(c, self.ctx.encode(b, level=c.level, scale=c.scale))

            # A known zero is shifted too: the layer sees every value of a sample moved by b.
            return self._map(x, shift_ct, lambda idx, v: v + b, zeros_too=True), None
        if node.op == "MaxPool":
            r, masks = self._pool_scales(node, x.shape)
        else:
            r = masks = self._scales(x.shape + (slots,))

        def scale_ct(idx, c):
            if c.level < 1:
                raise ValueError(f"[nn.masking] node '{node.name}' ({node.op}): its input is at level 0 and the "
                                 f"scale mask needs one level; see Model.plan()")
            return self._times(c, r[idx])

        return self._map(x, scale_ct, lambda idx, v: r[idx] * v, zeros_too=False), masks

    def _pool_scales(self, node, shape):
        """MaxPool's masks: one r per window (and channel and sample) when the windows do
        not overlap (stride >= kernel), else one per channel. Returns the mask of every
        input value, and the masks per window (channel, window index..., slot), which
        ``unmask`` reads at each output position."""
        slots, spatial = self.ctx.slots, len(shape) - 1
        kernel = tuple(node.attrs["kernel_shape"])
        strides = tuple(node.attrs.get("strides", (1,) * spatial))
        pads = tuple(node.attrs.get("pads", (0,) * (2 * spatial)))
        if any(s < k for s, k in zip(strides, kernel)):  # overlapping windows: per channel
            per_channel = self._scales((shape[0],) + (1,) * spatial + (slots,))
            return np.broadcast_to(per_channel, tuple(shape) + (slots,)), per_channel
        # The window of each input position along each axis (stride >= kernel: at most one);
        # positions in no window get a window index of their own past the real ones.
        windows, index = [], []
        for size, k, stride, begin in zip(shape[1:], kernel, strides, pads[:spatial]):
            real = (size + 2 * max(pads) + stride) // stride + 1
            pos = np.arange(size) + begin
            inside = pos % stride < k
            index.append(np.where(inside, pos // stride, real + np.arange(size)))
            windows.append(real + size)
        per_window = self._scales((shape[0],) + tuple(windows) + (slots,))
        per_value = per_window[np.ix_(np.arange(shape[0]), *index)]
        return per_value, per_window

    def unmask(self, node, out: np.ndarray, r: np.ndarray | None) -> np.ndarray:
        """Divides what the key holder returned by the scale masks (nothing to undo for a shift)."""
        if r is None:
            return out
        if node.op == "MaxPool":  # output (c, i, j) is window (i, j) of channel c
            window = tuple(slice(0, n) if r.shape[a + 1] > 1 else slice(0, 1) for a, n in enumerate(out.shape[1:]))
            inverse = np.broadcast_to(1.0 / r[(slice(None),) + window], out.shape + (r.shape[-1],))
        else:
            inverse = 1.0 / r

        return self._map(out, lambda idx, c: self._times(c, inverse[idx]), None, zeros_too=False, count=False)

    def _times(self, c, factors):
        """c times a slot vector, rescaled onto the canonical scale of the level below."""
        pt = self.ctx.encode(factors, level=c.level, scale=self.ctx.landing_scale(c.level, c.scale))
        return self.ev.rescale(self.ev.multiply_plain(c, pt))

    def _map(self, x, on_ct, on_constant, zeros_too: bool, count: bool = True):
        """Ciphertexts through ``on_ct``. Known constants (floats; None is a known zero, which
        a scale mask leaves zero, so only ``zeros_too`` masks it) through ``on_constant`` and
        then encrypted: a masked constant sent in the clear would tell the key holder its mask."""
        out = np.empty(x.shape, dtype=object)
        for idx, v in np.ndenumerate(x):
            if _is_ct(v):
                out[idx] = on_ct(idx, v)
                self.masked_values += count
            elif on_constant is not None and (v is not None or zeros_too):
                out[idx] = self.ctx.encrypt(on_constant(idx, 0.0 if v is None else float(v)), self.keys)
                self.masked_values += count
            else:
                out[idx] = v
        return out
