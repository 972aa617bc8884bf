"""The head every multi-part switching key starts with: a magic tag, then a fixed struct (the
parts' lengths, and what the key was made for), read before any part is."""

from __future__ import annotations

import struct


def open_key_bytes(data, magic: bytes, head: struct.Struct, name: str, what: str) -> tuple[memoryview, tuple, int]:
    """``data`` as a memoryview, its head's fields, and where the parts start; refuses, by
    name, what is not bytes (``name``: the key class whose ``to_bytes`` makes them) and bytes
    without ``magic`` (``what``: the key, as the message names it)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"[switching] expected the bytes of {name}.to_bytes(), got {type(data).__name__}")
    data = memoryview(data)
    start = len(magic) + head.size
    if len(data) < start or bytes(data[:len(magic)]) != magic:
        raise ValueError(f"[switching] not {what} ({name}.to_bytes)")
    return data, head.unpack_from(data, len(magic)), start


def load_key_part(context, blob: bytes, kind: type, what: str, *, mac_key: bytes | None = None):
    """One part of a multi-part key, loaded by ``context`` (envelope, checksum, parameters) and
    refused, by name, when it is not a ``kind`` (``what``: the part, as messages name it,
    "the FHEW-to-BGV key's embedding part")."""
    try:
        part = context.load(blob, mac_key=mac_key)
    except ValueError as e:
        raise ValueError(f"[switching] {what}: {e}") from None
    if not isinstance(part, kind):
        raise ValueError(f"[switching] {what} holds a {type(part).__name__}, not the {kind.__name__} that belongs "
                         f"there")
    return part
