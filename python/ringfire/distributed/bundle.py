"""A key bundle: the context and the evaluation keys a worker needs, as one blob named by
its SHA-256. It is sent to each node once (from the driver's object store, or read from a
shared path) and kept in the node's key cache, where every later task finds it.

Blob layout::

    "RFKB" | version u16 | header length u32 | header (JSON) | the parts, back to back

The header lists the parts in order: ``{"parts": [["context", n], ["relin", n], ...]}``.
The context part is the pickled context (its parameters and options: how a context
travels between ringfire processes); the keys are their checksummed ``to_bytes()``.
The public key is left out: workers never encrypt.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import struct
from dataclasses import dataclass

MAGIC = b"RFKB"
VERSION = 1
KEY_KINDS = ("relin", "galois", "bootstrap")


@dataclass(frozen=True)
class KeyBundle:
    sha256: str
    blob: bytes

    @classmethod
    def of(cls, ctx, keys) -> "KeyBundle":
        parts = [("context", pickle.dumps(ctx))]
        for kind in KEY_KINDS:
            key = getattr(keys, kind, None) if keys is not None else None
            if key is not None:
                parts.append((kind, key.to_bytes()))
        header = json.dumps({"parts": [[name, len(data)] for name, data in parts]}).encode()
        blob = b"".join([MAGIC, struct.pack("<HI", VERSION, len(header)), header] + [data for _, data in parts])
        return cls(hashlib.sha256(blob).hexdigest(), blob)

    @property
    def nbytes(self) -> int:
        return len(self.blob)


def open_bundle_file(path):
    """(context, KeySet) from a bundle in a file, each key streamed from it (``ctx.load_from``):
    the keys are never held beside their bytes, so a worker holds the keys alone."""
    from ..rlwe.keys import KeySet
    with open(path, "rb") as f:
        head = f.read(10)
        if head[:4] != MAGIC:
            raise ValueError("[distributed] not a key bundle (bad magic bytes)")
        version, length = struct.unpack_from("<HI", head, 4)
        if version != VERSION:
            raise ValueError(f"[distributed] key bundle version {version}; this ringfire reads version {VERSION}")
        parts = json.loads(f.read(length))["parts"]
        if not parts or parts[0][0] != "context":
            raise ValueError("[distributed] key bundle: the context must come first")
        ctx = pickle.loads(f.read(parts[0][1]))
        keys = {}
        for name, size in parts[1:]:
            if name not in KEY_KINDS:
                raise ValueError(f"[distributed] key bundle: unknown part {name!r}")
            start = f.tell()
            keys[name] = ctx.load_from(f)
            if f.tell() - start != size:
                raise ValueError(f"[distributed] key bundle: part {name!r} declares {size} bytes, holds "
                                 f"{f.tell() - start}")
        if f.read(1):
            raise ValueError("[distributed] key bundle: bytes after the last part")
    return ctx, KeySet(**keys)
