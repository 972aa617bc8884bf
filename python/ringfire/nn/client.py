"""Client-aided non-linear layers (seed 001 §4.2): the server sends the
ciphertexts of a non-linear layer's input (ReLU, Sigmoid, GELU, Softmax,
LayerNorm, MaxPool, ...: :mod:`.nonlinear`) to the key holder, who decrypts,
applies the layer in the clear, re-encrypts at a fresh level and returns them.
The key holder therefore sees every pre-activation value of every sample, unless the
model masks them (``masking=True``, :mod:`.masking`: a random positive factor per value
for ReLU-like layers and MaxPool, a random shift per sample for Softmax and LayerNorm).
:class:`Client` is the interface (in-process today, a network later)."""

from __future__ import annotations

import numpy as np

from .. import io as rf_io
from .nonlinear import exact as exact_layer


def relaid(node, values: np.ndarray, layouts: dict) -> np.ndarray:
    """``node`` applied to the tensor that ``values`` (a decrypted tiled slot vector) holds in
    the input layout ``layouts["in"]``, written in ``layouts["out"]`` and tiled like it."""
    from .layouts import rebuilt

    # The server sends these: sizes are checked before anything is allocated from them.
    period = int(layouts["period"])
    if period <= 0 or values.size % period:
        raise ValueError(f"[nn] the period {period} sent with '{node.name}' does not divide {values.size} slots")
    for side in ("in", "out"):
        dims = [int(d) for d in layouts[side]["shape"]] + [int(g) for g in (layouts[side].get("grid") or ())]
        if not dims or min(dims) <= 0 or int(np.prod(layouts[side]["shape"], dtype=object)) > period:
            raise ValueError(f"[nn] the {side}put layout sent with '{node.name}' does not fit a period of {period}")
    source, target = rebuilt(layouts["in"]), rebuilt(layouts["out"])
    if source.span > period or target.span > period:
        raise ValueError(f"[nn] the layouts sent with '{node.name}' reach beyond a period of {period}")
    shape = tuple(int(s) for s in layouts["in"]["shape"])
    tensor = np.real(values[:period][source.slots]).reshape(shape + (1,))
    out, _ = exact_layer(node, tensor, shape)
    out = np.asarray(out, dtype=np.float64).reshape(-1)
    if out.size != target.slots.size:
        raise ValueError(f"[nn] '{node.name}' gives {out.size} values, its output layout holds {target.slots.size}")
    vector = np.zeros(period)
    vector[target.slots] = out
    return np.tile(vector, values.size // period)


# The values a ciphertext sent to the key holder may reach, as a share of its level's room
# (ctx.max_value): one bit of headroom for the decryption's own noise.
DECRYPTION_HEADROOM = 0.5
# A seeded ciphertext carries the seed its second polynomial is expanded from.
SEED_BYTES = 32


def for_decryption(ev, ct):
    """``ct`` at the lowest level whose modulus still holds its values, which is all the key
    holder needs to decrypt it: fewer limbs to send and to decrypt (the digits CNN's ReLU
    inputs: half the bytes). Dropping limbs keeps the scale and adds a rounding error of a few
    bits, far below it. A ciphertext whose values have no known bound stays where it is."""
    bound = getattr(ct, "bound", None)
    if bound is None or ct.level == 0:
        return ct
    level = _lowest_level_holding(ct._context, bound, 0, ct.level, ct.scale)
    return ct if level == ct.level else ev.mod_switch(ct, level)


def _lowest_level_holding(ctx, bound: float, start: int, stop: int, scale=None) -> int:
    """The lowest level from `start` below `stop` whose room at `scale` (default: each level's
    canonical one) holds `bound` with :data:`DECRYPTION_HEADROOM`; `stop` if none does."""
    return next((lv for lv in range(start, stop) if bound <= DECRYPTION_HEADROOM * ctx.max_value(lv, scale)), stop)


def encryption_level(ctx, planned: int, values) -> int:
    """The level to encrypt an input at: ``planned`` (``model.input_level``, what the first
    layers spend), raised while the level's modulus does not hold the values' largest
    magnitude with the same headroom :func:`for_decryption` keeps (an input that reaches the
    first key holder untouched would otherwise start at level 0, whose room is small)."""
    peak = float(np.max(np.abs(values))) if np.size(values) else 0.0
    return _lowest_level_holding(ctx, peak, int(planned), max(int(planned), ctx.max_level))


def fresh_level(node, ctx) -> int:
    """The level to encrypt a layer's result at: what the model asks for
    (``node.attrs["_fresh_level"]``: the levels the layers after it spend), at most the top.
    A request that is not a small non-negative integer is refused: it comes from the server."""
    want = node.attrs.get("_fresh_level")
    if want is None:
        return ctx.max_level
    if isinstance(want, bool) or not isinstance(want, (int, np.integer)) or want < 0:
        raise ValueError(f"[nn] layer '{node.name}' asks for its result at level {want!r}: expected an integer >= 0")
    return min(int(want), ctx.max_level)


class Client:
    """The key holder's side of the protocol."""

    def apply(self, node, x, shape, clip):
        """x: object array of ciphertexts (sample shape); returns (new array, new shape).
        ``clip`` is Clip's (min, max), also in ``node.attrs["bounds"]`` (None for other layers)."""
        raise NotImplementedError


class LocalClient(Client):
    """Runs the key holder in-process: decrypt, apply, re-encrypt with the secret key (seeded
    ciphertexts, half the bytes to send back) at the level the model asks for
    (:func:`fresh_level`: what the layers after it spend; the top when it does not say).

    The server chooses what the key holder decrypts, so every decryption here
    adds fresh noise before the values are used (``ctx.decrypt``'s default: noise
    of the ciphertext's own size, which defeats recovering the key from
    results; see docs/security.md). ``noise_flooding=True`` (or a number of bits)
    adds statistically hiding noise instead, for deployments where results of
    the activations can reach the server (a released prediction): it costs
    about 20 + log2(N)/2 bits of precision at 40-bit statistical security, so
    it needs a large scale where the activations are decrypted (about 2^52 for
    10 bits at N = 2^13; decrypt's error says what a context lacks).
    """

    def __init__(self, ctx, secret_key, keys, graph=None, *, noise_flooding: bool | float = False):
        self.ctx, self.secret_key, self.keys, self.graph = ctx, secret_key, keys, graph
        self.noise_flooding = noise_flooding
        self.round_trips = 0
        self.ciphertexts_received = 0
        # The ciphertexts' polynomials each way, as rf.serve sends them (about 100 bytes of
        # header each are not counted): what a key holder elsewhere would receive (two
        # polynomials per ciphertext, at the level it is sent at) and send back (seeded: one
        # polynomial and a seed).
        self.bytes_received = 0
        self.bytes_sent = 0

    def _stored_bytes(self, ct, polynomials: int) -> int:
        return polynomials * rf_io.stored_poly_bytes(self.ctx.poly_degree, self.ctx.params.q_primes[:ct.level + 1])

    def _decrypt(self, ct):
        self.bytes_received += self._stored_bytes(ct, 2)
        return self.ctx.decrypt(ct, self.secret_key, noise_flooding=self.noise_flooding)

    def apply(self, node, x, shape, clip):
        self.round_trips += 1
        decrypted = {}
        for idx, ct in np.ndenumerate(x):
            if ct is not None and not isinstance(ct, float):
                decrypted[idx] = self._decrypt(ct)
                self.ciphertexts_received += 1
        # Every ciphertext of a batch-packed tensor holds the batch: one length.
        width = max((v.size for v in decrypted.values()), default=1)
        plain = np.zeros(tuple(x.shape) + (width,))
        for idx, ct in np.ndenumerate(x):
            if isinstance(ct, float):  # a constant the server knows (sent in the clear)
                plain[idx] = ct
            elif idx in decrypted:
                plain[idx][:decrypted[idx].size] = decrypted[idx]
        out_plain, out_shape = exact_layer(node, plain, shape)
        out = np.empty(out_plain.shape[:-1], dtype=object)
        level = fresh_level(node, self.ctx)
        for idx in np.ndindex(out.shape):
            out[idx] = self._encrypt(out_plain[idx], level)
        return out, tuple(out_shape)

    def _encrypt(self, values, level=None):
        """Encrypted with the secret key the key holder has anyway: a seeded ciphertext (half the
        bytes on the way back to the server) with only the encryption's own Gaussian error; it
        computes with the key set's evaluation keys."""
        ct = self.ctx.encrypt(values, self.secret_key, level=level)
        ct._keys = self.keys
        self.bytes_sent += self._stored_bytes(ct, 1) + SEED_BYTES
        return ct

    def apply_vector(self, node, ct):
        """Inter-axis packing: the layer on one decrypted, tiled slot vector. A layer that reads
        the sample as a tensor says where (``node.attrs["_layouts"]``): its input is read from one
        period of the vector, its output written in its own layout and tiled."""
        self.round_trips += 1
        self.ciphertexts_received += 1
        values = self._decrypt(ct)
        layouts = node.attrs.get("_layouts")
        if layouts is None:
            out, _ = exact_layer(node, values, values.shape)
            return self._encrypt(out)
        return self._encrypt(relaid(node, values, layouts))
