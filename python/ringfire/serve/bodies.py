"""Request bodies handed to the app as the HTTP parser made them, without uvicorn's copies.

uvicorn's httptools protocol gathers the pieces of a body that arrive between two reads of the
app in a ``bytearray`` (a copy of every piece) and hands them on as ``bytes(bytearray)``
(another copy): on the server's event loop an encrypted input of 9 MB was copied twice more
than it needs to be (perf, BENCHMARKS.md). Here the pieces stay the ``bytes`` objects the
parser made and are handed on as they are where one arrived since the app's last read (the
app reads each piece as it comes: app.py ``body_pieces``), joined once where several did.

Only what uvicorn keeps in ``cycle.body`` changes: an object that takes ``+=``, ``len()`` and
``bytes()`` as the ``bytearray`` did. Where uvicorn or httptools are missing, uvicorn's own
choice stands (``"auto"``).
"""

from __future__ import annotations


class _Pieces:
    """A body's pieces since the app's last read: ``+=`` keeps a piece (no copy), ``bytes()``
    gives the one piece itself, or all of them joined."""

    __slots__ = ("_parts", "_size")

    def __init__(self, first: bytes = b""):
        self._parts = [first] if first else []
        self._size = len(first)

    def __iadd__(self, piece) -> "_Pieces":
        piece = piece if type(piece) is bytes else bytes(piece)
        self._parts.append(piece)
        self._size += len(piece)
        return self

    def __len__(self) -> int:
        return self._size

    def __bytes__(self) -> bytes:
        return self._parts[0] if len(self._parts) == 1 else b"".join(self._parts)


def http_protocol():
    """The protocol class for ``uvicorn.run(..., http=...)``: httptools' with bodies kept as
    pieces, or ``"auto"`` where httptools is not installed."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return "auto"

    class PiecewiseBodies(HttpToolsProtocol):
        def on_body(self, body: bytes) -> None:
            cycle = getattr(self, "cycle", None)
            # uvicorn starts each read's pieces as a fresh bytearray: kept as pieces from here on
            # (anything else means its internals changed: left to it).
            if cycle is not None and type(cycle.body) is bytearray:
                cycle.body = _Pieces(bytes(cycle.body))
            super().on_body(body)

    return PiecewiseBodies
