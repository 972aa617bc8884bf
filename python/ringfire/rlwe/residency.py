"""Lazy placement (seed 000 §III-C): one value, copies on several devices.

A :class:`Residency` holds the copies of one immutable native object
(ciphertext, plaintext or key) by device. Asking for the copy on a device
that has none makes it then (an upload, or a download, which waits for the
device); later requests reuse it. Objects never change in place: an
operation that writes a value replaces its residency, which drops every
other copy, so a stale copy is never used (the dirty tracking).
"""

from __future__ import annotations

from .. import _core


class Residency:
    __slots__ = ("_copies", "__weakref__")  # weakly referenced: serve.client keeps digests by it

    def __init__(self, native):
        self._copies = {_device_of(native): native}

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

    def any(self):
        """Some valid copy, for metadata that every copy shares (moves no data)."""
        return next(iter(self._copies.values()))


def _device_of(native) -> str:
    return getattr(native, "device", "cpu")  # secret keys have no device: they stay on the host


class Placed:
    """Lazy placement for the Python objects that wrap natives (plaintexts,
    ciphertexts, keys): a :class:`Residency` plus the device operations on the
    object use. Subclasses set ``self._context`` (which gives the queue per
    device) and call :meth:`_place`."""

    def _place(self, native, device=None):
        self._res = Residency(native)
        self._device = _device_of(native) if device is None else _core.parse_device(str(device))

    @property
    def _native(self):
        """The copy on this object's device (uploaded at the first use that needs it)."""
        return self._on(self._device)

    @_native.setter
    def _native(self, native):  # a write: the other devices' copies are now stale
        self._place(native)

    def _on(self, device: str):
        """The copy on ``device``: made at its first use there, then reused."""
        return self._res.get(device, self._context._queue_on(device))

    def _host(self):
        """The host copy (a download, and so a sync point, when the value lives on a GPU)."""
        return self._res.get("cpu", self._context._queue_on(self._device))

    @property
    def device(self) -> str:
        """Where operations on this object run ('cpu', 'cuda:0', ...)."""
        return self._device

    @property
    def resident_on(self) -> list[str]:
        """Devices that hold a valid copy right now (placement is lazy)."""
        return self._res.devices

    def _moved(self, device: str):
        """This object placed on ``device``, sharing the copies: an upload made
        for one serves both. Nothing moves until an operation needs it."""
        device = _core.parse_device(str(device))
        if device.startswith("cuda"):
            from .. import cuda
            cuda.require_device(device)
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__)
        out._device = device
        return out
