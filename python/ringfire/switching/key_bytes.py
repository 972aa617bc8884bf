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
