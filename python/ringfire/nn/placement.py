"""Where an encrypted model runs: ``model(enc, device="cuda")``.

The server's work (linear layers, polynomials, bootstraps) runs where its
ciphertexts live, so running a model on a device means moving the input there
and keeping every ciphertext that enters the run later on it: the key holder's
replies (client-aided layers) are encrypted on the host and would otherwise
meet device ciphertexts in the next layer. Moves are lazy (``ct.to``): an
upload happens at the first device operation that reads the data.
"""

from __future__ import annotations

import copy

import numpy as np


def ciphertext_device(enc) -> str | None:
    """The device of the tensor's first ciphertext (None when it holds none)."""
    first = next((c for c in enc.cts.flat if c is not None and not isinstance(c, float)), None)
    return None if first is None else first.device


def _moved(values: np.ndarray, device: str) -> np.ndarray:
    out = np.empty(values.shape, dtype=object)
    for idx, v in np.ndenumerate(values):
        out[idx] = v.to(device) if v is not None and not isinstance(v, float) else v
    return out


def move_tensor(enc, device: str):
    """A shallow copy of the EncryptedTensor ``enc`` with its ciphertexts on ``device``."""
    moved = copy.copy(enc)
    moved.cts = _moved(enc.cts, device)
    return moved


class ClientOnDevice:
    """A client whose replies are placed on ``device``; everything else is the wrapped
    client's (counters, graph, noise flooding)."""

    def __init__(self, client, device: str):
        self._client, self._device = client, device

    def apply(self, node, x, shape, clip):
        out, out_shape = self._client.apply(node, x, shape, clip)
        return _moved(out, self._device), out_shape

    def apply_vector(self, node, ct):
        return self._client.apply_vector(node, ct).to(self._device)

    def __getattr__(self, name):
        return getattr(self._client, name)

    def __setattr__(self, name, value):
        if name in ("_client", "_device"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._client, name, value)


def on_device(enc, client, device: str | None):
    """``(enc, client)`` for a run on ``device``: the input moved there and the client's
    replies placed there. ``device=None`` runs where the input lives (replies are placed
    there too, so a CPU context's client can serve a model run on a GPU)."""
    from .. import _core

    target = _core.parse_device(device) if device is not None else ciphertext_device(enc)
    if target is None or target == "cpu" and device is None:
        return enc, client
    if device is not None:
        enc = move_tensor(enc, target)
    return enc, (ClientOnDevice(client, target) if client is not None else None)
