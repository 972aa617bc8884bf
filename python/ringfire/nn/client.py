"""Client-aided non-linear layers (seed 001 §4.2): the server sends the
ciphertexts of a ReLU/Clip/MaxPool input to the key holder, who decrypts,
applies the layer in the clear, re-encrypts at a fresh level and returns them.
:class:`Client` is the interface (in-process today, a network later)."""

from __future__ import annotations

import numpy as np

from . import activations


class Client:
    """The key holder's side of the protocol."""

    def apply(self, node, x, shape, clip):
        """x: object array of ciphertexts (sample shape); returns (new array, new shape)."""
        raise NotImplementedError


class LocalClient(Client):
    """Runs the key holder in-process: decrypt, apply, re-encrypt at the top level."""

    def __init__(self, ctx, secret_key, keys, graph=None):
        self.ctx, self.secret_key, self.keys, self.graph = ctx, secret_key, keys, graph
        self.round_trips = 0
        self.ciphertexts_received = 0

    def apply(self, node, x, shape, clip):
        self.round_trips += 1
        slots = self.ctx.slots
        plain = np.zeros(tuple(x.shape) + (slots,))
        for idx, ct in np.ndenumerate(x):
            if isinstance(ct, float):  # a constant the server knows (sent in the clear)
                plain[idx] = ct
            elif ct is not None:
                plain[idx] = self.ctx.decrypt(ct, self.secret_key)
                self.ciphertexts_received += 1
        out_plain, out_shape = activations.exact(node, plain, shape, clip)
        out = np.empty(out_plain.shape[:-1], dtype=object)
        for idx in np.ndindex(out.shape):
            out[idx] = self.ctx.encrypt(out_plain[idx], self.keys)
        return out, tuple(out_shape)

    def apply_vector(self, node, ct):
        """Inter-axis packing: the layer on one decrypted, tiled slot vector."""
        from .executor import clip_bounds

        self.round_trips += 1
        self.ciphertexts_received += 1
        values = self.ctx.decrypt(ct, self.secret_key)
        clip = clip_bounds(node, self.graph.constants) if node.op == "Clip" else None
        out, _ = activations.exact(node, values, values.shape, clip)
        return self.ctx.encrypt(out, self.keys)
