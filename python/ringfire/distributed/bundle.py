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
from pathlib import Path

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


def _open_parts(f, context: bool = True) -> tuple:
    """(context, the key parts [(kind, bytes)]) of the bundle file `f`, read up to its keys
    (``context=False``: None for the context, which is not unpickled)."""
    head = f.read(10)
    if head[:4] != MAGIC:
        raise ValueError("[distributed] not a key bundle (bad magic bytes)")
    version, length = struct.unpack_from("<HI", head, 4)
    if version != VERSION:
        raise ValueError(f"[distributed] key bundle version {version}; this ringfire reads version {VERSION}")
    parts = json.loads(f.read(length))["parts"]
    if not parts or parts[0][0] != "context":
        raise ValueError("[distributed] key bundle: the context must come first")
    data = f.read(parts[0][1])
    return (pickle.loads(data) if context else None), parts[1:]


def open_bundle_file(path):
    """(context, KeySet) from a bundle in a file, each key streamed from it (``ctx.load_from``):
    the keys are never held beside their bytes, so a worker holds the keys alone."""
    from ..rlwe.keys import KeySet
    with open(path, "rb") as f:
        ctx, parts = _open_parts(f)
        keys = {}
        for name, size in parts:
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


def image_paths(path) -> dict:
    """Where the key images of the bundle at `path` live (beside it): kind -> path."""
    path = Path(path)
    with open(path, "rb") as f:
        _, parts = _open_parts(f, context=False)
    return _images_of(path, parts)


def _images_of(path: Path, parts) -> dict:
    return {name: path.with_name(f"{path.name}.{name}.image") for name, _ in parts}


def map_bundle_file(path):
    """(context, KeySet) of a bundle with its keys mapped from key images beside it
    (``ctx.map_keys``): every worker process on a node shares one copy of the keys, the
    page cache's. The first process to open a bundle writes the images (relinearization and
    Galois keys expanded, bootstrapping keys seeded, as ringfire serve writes them), each
    renamed into place whole, under a lock file beside the bundle: the node's other processes
    wait for it and map the same files (were two to write, the first would map a file the
    second replaced, and the node would hold two copies)."""
    import fcntl

    from ..rlwe.keys import KeySet
    path = Path(path)
    with open(path, "rb") as f:
        ctx, parts = _open_parts(f)
    images = _images_of(path, parts)
    for attempt in range(2):
        if not all(image.exists() for image in images.values()):
            with open(path.with_name(path.name + ".lock"), "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
                if not all(image.exists() for image in images.values()):
                    _, loaded = open_bundle_file(path)
                    for kind, image in images.items():
                        if not image.exists():
                            getattr(loaded, kind).save_image(image, expanded=kind != "bootstrap")
                    del loaded
        try:
            return ctx, KeySet(**{kind: ctx.map_keys(image, verify=True) for kind, image in images.items()})
        except ValueError:  # a damaged image: written again from the bundle (checked by its SHA-256)
            if attempt:
                raise
            for image in images.values():
                image.unlink(missing_ok=True)
