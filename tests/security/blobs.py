"""Hand-made ringfire objects for the tests that play the attacker: the
envelope of cpp/include/ringfire/io/serialize.h with any payload, resealed
with a valid checksum (which is not a defence: anyone can compute it)."""

from __future__ import annotations

import struct

import ringfire as rf

HEADER = 24  # "RFHE" | version u16 | kind u16 | fingerprint u64 | payload length u64
KINDS = {"parameters": 1, "plaintext": 2, "ciphertext": 3, "public key": 4, "relin key": 5, "galois keys": 6,
         "secret key": 7}


def envelope(kind: str, payload: bytes, fingerprint: int = 0, version: int = 2) -> bytes:
    body = b"RFHE" + struct.pack("<HHQQ", version, KINDS[kind], fingerprint, len(payload)) + payload
    return body + struct.pack("<Q", rf._core.fnv1a64(body))


def reseal(blob: bytes) -> bytes:
    body = bytes(blob[:-8])
    return body + struct.pack("<Q", rf._core.fnv1a64(body))


def parameters_payload(n: int, q: list[int], p: list[int], dnum: int, security: int, scale_bits: int,
                       scheme: int = 1, plain_modulus: int = 0, reserved_levels: int = 0) -> bytes:
    """Version 2 (scheme 1 = CKKS)."""
    return (struct.pack("<QI", n, len(q)) + struct.pack(f"<{len(q)}Q", *q) + struct.pack("<I", len(p)) +
            struct.pack(f"<{len(p)}Q", *p) +
            struct.pack("<IIIBQI", dnum, security, scale_bits, scheme, plain_modulus, reserved_levels))
