"""Independent Python references for the checksum that closes a serialized object:
FNV-1a (format versions 1-3) and XXH64 (version 4 on), and `reseal`, which recomputes it
after a deliberate edit so the edit reaches the field validation."""

import struct

_M = 0xFFFFFFFFFFFFFFFF
_P1, _P2, _P3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
_P4, _P5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & _M
    return h


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _M, 31) * _P1) & _M


def xxh64(data: bytes, seed: int = 0) -> int:
    """XXH64 as its specification states it (slow; for tests)."""
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + _P1 + _P2) & _M, (seed + _P2) & _M, seed, (seed - _P1) & _M]
        while i + 32 <= n:
            for lane in range(4):
                v[lane] = _round(v[lane], struct.unpack_from("<Q", data, i + 8 * lane)[0])
            i += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M
        for lane in v:
            h = ((h ^ _round(0, lane)) * _P1 + _P4) & _M
    else:
        h = (seed + _P5) & _M
    h = (h + n) & _M
    while i + 8 <= n:
        h ^= _round(0, struct.unpack_from("<Q", data, i)[0])
        h = (_rotl(h, 27) * _P1 + _P4) & _M
        i += 8
    if i + 4 <= n:
        h ^= (struct.unpack_from("<I", data, i)[0] * _P1) & _M
        h = (_rotl(h, 23) * _P2 + _P3) & _M
        i += 4
    while i < n:
        h ^= (data[i] * _P5) & _M
        h = (_rotl(h, 11) * _P1) & _M
        i += 1
    h ^= h >> 33
    h = (h * _P2) & _M
    h ^= h >> 29
    h = (h * _P3) & _M
    return h ^ (h >> 32)


def checksum(body: bytes) -> int:
    """The checksum an envelope of `body`'s version ends with (the native one: fast)."""
    from ringfire import _core
    version = struct.unpack_from("<H", body, 4)[0] if len(body) >= 6 else 4
    return _core.checksum64(body) if version >= 4 else _core.fnv1a64(body)


def reseal(blob: bytes) -> bytes:
    """`blob` with its trailing checksum recomputed for its (possibly edited) body."""
    body = bytes(blob[:-8])
    return body + struct.pack("<Q", checksum(body))
