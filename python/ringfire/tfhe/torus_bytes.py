"""The bytes of the 64-bit torus sets' ciphertexts and evaluation keys.

Both are a magic, the parameter set's identity (SHA-256 of its fields), the
payload, and a SHA-256 of everything before it; :mod:`ringfire.io`'s envelopes
(authentication, compression) go around that. Loading checks the digest first,
then the magic and the identity, then every length against what the parameters
imply, before a word is read:

- ciphertexts: the evaluation keys' identity (zeros where the context had none),
  encoding (0 booleans, 1 integers, 2 ``UInt`` planes, 3 ``RadixUInt`` blocks of 2 bits),
  bits, the shape's rank and dimensions, then the words (little-endian uint64);
- evaluation keys: the two public seeds (bootstrapping, key switching), then both
  keys' bodies (little-endian uint64; every mask is expanded from its seed).
"""

from __future__ import annotations

import hashlib
import math
import struct

import numpy as np

CIPHERTEXTS = b"RFTFHET64CT1"
KEYS = b"RFTFHET64EK1"
MAX_RANK = 8
_DIGEST = 32
_ENVELOPE = b"RFHE"  # ringfire.io's objects: the 32-bit sets' ciphertexts and keys


def _seal(payload: bytes) -> bytes:
    return payload + hashlib.sha256(payload).digest()


def _check_head(raw: bytes, magic: bytes, identity: bytes, what: str) -> None:
    """The magic (naming what the bytes are instead, where it can) and the parameters' identity."""
    if not raw.startswith(magic):
        hint = (" (these are a 32-bit set's bytes: load them with STD128, STD128_LP or STD128_LUT)"
                if raw.startswith(_ENVELOPE) else " (these are torus ciphertexts)" if raw.startswith(CIPHERTEXTS)
                else " (these are torus evaluation keys)" if raw.startswith(KEYS) else "")
        raise ValueError(f"not ringfire.tfhe 64-bit torus {what}{hint}")
    if len(raw) < len(magic) + 32 + _DIGEST:
        raise ValueError(f"truncated tfhe {what}")
    if raw[len(magic):len(magic) + 32] != identity:
        raise ValueError(f"these {what} were made under different tfhe parameters")


def _payload(raw: bytes, magic: bytes, what: str) -> bytes:
    """The payload after the magic and the identity (checked by _check_head), once the digest is."""
    body, digest = raw[:-_DIGEST], raw[-_DIGEST:]
    if hashlib.sha256(body).digest() != digest:
        raise ValueError(f"tfhe {what}: checksum mismatch (damaged or altered bytes)")
    return body[len(magic) + 32:]


def is_torus(raw: bytes) -> bool:
    """Whether ``raw`` (unwrapped) holds torus ciphertexts or keys: what a 32-bit set's
    loader checks to name them instead of calling them foreign."""
    return raw.startswith(CIPHERTEXTS) or raw.startswith(KEYS)


def pack_ciphertexts(identity: bytes, key_id: bytes | None, encoding: int, bits: int, shape: tuple,
                     words: np.ndarray) -> bytes:
    head = CIPHERTEXTS + identity + (key_id or bytes(32)) + struct.pack("<BBB", encoding, bits, len(shape))
    body = struct.pack(f"<{len(shape)}Q", *shape) + np.ascontiguousarray(words, dtype="<u8").tobytes()
    return _seal(head + body)


def unpack_ciphertexts(raw: bytes, identity: bytes, width: int):
    """(key id or None, encoding, bits, shape, words (rows, width) uint64), each field checked."""
    _check_head(raw, CIPHERTEXTS, identity, "ciphertexts")
    body = _payload(raw, CIPHERTEXTS, "ciphertexts")
    if len(body) < 35:
        raise ValueError("truncated tfhe ciphertexts")
    key_id = body[:32] if any(body[:32]) else None
    body = body[32:]
    encoding, bits, rank = struct.unpack_from("<BBB", body, 0)
    if (encoding > 3 or rank > MAX_RANK or (encoding == 0 and bits != 0) or (encoding > 0 and not 1 <= bits <= 64)
            or (encoding == 3 and bits % 2)):
        raise ValueError(f"malformed tfhe ciphertexts (encoding {encoding}, bits {bits}, rank {rank})")
    if len(body) < 3 + 8 * rank:
        raise ValueError("truncated tfhe ciphertexts")
    shape = struct.unpack_from(f"<{rank}Q", body, 3)
    at = 3 + 8 * rank
    rows = math.prod(shape) * (bits if encoding == 2 else bits // 2 if encoding == 3 else 1)
    if len(body) - at != rows * width * 8:
        raise ValueError(f"tfhe ciphertexts of shape {shape} need {rows * width * 8} bytes of words, "
                         f"got {len(body) - at}")
    words = np.frombuffer(body, dtype="<u8", offset=at).astype(np.uint64).reshape(rows, width)
    return key_id, encoding, bits, tuple(shape), words


def keys_size(bsk_words: int, ksk_words: int) -> int:
    """Bytes of a key set: magic, identity, two seeds, the bodies, the digest."""
    return len(KEYS) + 32 + 64 + 8 * (bsk_words + ksk_words) + _DIGEST


def pack_keys(identity: bytes, bsk_seed: bytes, ksk_seed: bytes, bsk: np.ndarray, ksk: np.ndarray) -> bytes:
    return _seal(KEYS + identity + bsk_seed + ksk_seed + np.ascontiguousarray(bsk, dtype="<u8").tobytes()
                 + np.ascontiguousarray(ksk, dtype="<u8").tobytes())


def unpack_keys(raw: bytes, identity: bytes, bsk_words: int, ksk_words: int, name: str):
    """(bootstrap seed, key-switch seed, bootstrap bodies, key-switch bodies), checked."""
    _check_head(raw, KEYS, identity, "evaluation keys")
    if len(raw) != keys_size(bsk_words, ksk_words):
        raise ValueError(f"evaluation keys of {name} are {keys_size(bsk_words, ksk_words)} bytes, got {len(raw)}")
    body = _payload(raw, KEYS, "evaluation keys")
    words = np.frombuffer(body, dtype="<u8", offset=64).astype(np.uint64)
    return body[:32], body[32:64], words[:bsk_words], words[bsk_words:]
