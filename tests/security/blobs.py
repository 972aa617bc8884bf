"""Hand-made ringfire objects for the tests that play the attacker: the
envelope of cpp/include/ringfire/io/serialize.h with any payload, resealed
with a valid checksum (which is not a defence: anyone can compute it)."""

from __future__ import annotations

import struct

from envelope_checksum import reseal

# "RFHE" | version u16 | kind u16 | parameter identity (32 bytes) | payload length u64
HEADER = 48
OLD_HEADER = 24  # versions 1 and 2: a u64 fingerprint instead of the identity
KINDS = {"parameters": 1, "plaintext": 2, "ciphertext": 3, "public key": 4, "relin key": 5, "galois keys": 6,
         "secret key": 7}


def envelope(kind: str, payload: bytes, identity: bytes | int = b"", version: int = 4) -> bytes:
    """Versions 3 and 4: ``identity`` is ``params.identity`` (32 bytes); versions 1 and 2:
    the u64 ``params.legacy_fingerprint``."""
    if version >= 3:
        who = bytes(identity).ljust(32, b"\0")
        assert len(who) == 32
    else:
        who = struct.pack("<Q", int(identity))
    body = b"RFHE" + struct.pack("<HH", version, KINDS[kind]) + who + struct.pack("<Q", len(payload)) + payload
    return reseal(body + bytes(8))


def parameters_payload(n: int, q: list[int], p: list[int], dnum: int, security: int, scale_bits: int,
                       scheme: int = 1, plain_modulus: int = 0, reserved_levels: int = 0) -> bytes:
    """Version 2 (scheme 1 = CKKS)."""
    return (struct.pack("<QI", n, len(q)) + struct.pack(f"<{len(q)}Q", *q) + struct.pack("<I", len(p)) +
            struct.pack(f"<{len(p)}Q", *p) +
            struct.pack("<IIIBQI", dnum, security, scale_bits, scheme, plain_modulus, reserved_levels))
