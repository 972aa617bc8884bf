"""Lazy placement (seed 000 §III-C): one value, copies on several devices.

A :class:`Residency` holds the copies of one immutable native object
(ciphertext, plaintext or key) by device. Asking for the copy on a device
that has none makes it then (an upload, or a download, which waits for the
device); later requests reuse it. Objects never change in place: an
operation that writes a value replaces its residency, which drops every
other copy, so a stale copy is never used (the dirty tracking).
"""

from __future__ import annotations


class Residency:
    __slots__ = ("_copies",)

    def __init__(self, native):
        self._copies = {getattr(native, "device", "cpu"): native}

    def get(self, device: str, queue: int = 0):
        """The copy on ``device``, made on first use (issued on ``queue``)."""
        native = self._copies.get(device)
        if native is None:
            source = self._copies.get("cpu") or next(iter(self._copies.values()))
            native = source.to(device, queue)
            self._copies[device] = native
        return native

    @property
    def devices(self) -> list[str]:
        """Devices holding a valid copy now."""
        return list(self._copies)
