"""How ``ringfire serve`` names an uploaded key and checks each chunk of it: SHA-256 over blocks.

A key is cut into blocks of ``BLOCK`` bytes (the last one may be shorter) and each block is
hashed once. The key's digest is a SHA-256 over those block digests; a chunk's digest is a
SHA-256 over the digests of the blocks it holds (chunks start on a block boundary and hold
whole blocks, the key's last chunk excepted). So every byte is hashed once on each side:

- the client hashes its key in one pass before the first chunk (the key's digest decides
  whether it has to be sent at all: the server may hold it already) and every chunk's digest
  follows from the same block digests;
- the server hashes each block as it arrives, checks the chunk with it, and names the key at
  commit from the block digests it kept.

A plain SHA-256 of the whole key and another of each chunk hashed every byte twice on each
side. The two digests are domain-separated, so a chunk's digest never names a key.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor

BLOCK = 1 << 16
DIGEST = 32  # bytes of a block's digest; block digests travel concatenated, DIGEST bytes each
_KEY = b"ringfire key digest v1\n"
_CHUNK = b"ringfire chunk digest v1\n"
_SPLIT = 1 << 20  # a write at least this long is hashed on two threads (hashlib releases the GIL)


def key_digest(digests: bytes) -> str:
    """The digest that names a key: SHA-256 over its blocks' digests (64 hex digits)."""
    return hashlib.sha256(_KEY + digests).hexdigest()


def chunk_digest(digests: bytes) -> str:
    """The digest of a chunk from the digests of the blocks it holds."""
    return hashlib.sha256(_CHUNK + digests).hexdigest()


def digests_of(digests: bytes, first: int, size: int) -> bytes:
    """Of a key's block digests, those of the blocks the bytes [first, first + size) hold
    (``first`` on a block boundary)."""
    return digests[first // BLOCK * DIGEST:(first + size + BLOCK - 1) // BLOCK * DIGEST]


def aligned(first: int, size: int, total: int) -> bool:
    """A chunk starts on a block boundary and holds whole blocks, or ends the key."""
    return first % BLOCK == 0 and (size % BLOCK == 0 or first + size == total)


class BlockHasher:
    """The SHA-256 of each ``BLOCK``-byte block of what it is fed, through ``update`` or
    ``write`` (the file interface a key's ``save_to`` takes; the bytes are hashed before the
    call returns, so a writer that lends its buffer only for the call is served). With
    ``two_threads``, long writes are hashed on two cores: the client hashes its key while the
    server waits, the server hashes on one core beside its event loop. The digests are kept
    concatenated (DIGEST bytes a block: 0.05 % of what was hashed)."""

    def __init__(self, two_threads: bool = False):
        self._done = bytearray()
        self._open = hashlib.sha256()  # the block being filled
        self._filled = 0
        self.size = 0
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="ringfire-hash") if two_threads else None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def __enter__(self) -> "BlockHasher":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        self.update(view)
        return len(view)

    def update(self, data) -> None:
        view = memoryview(data).cast("B")
        self.size += len(view)
        if self._filled:  # finish the open block first
            take = min(BLOCK - self._filled, len(view))
            self._open.update(view[:take])
            self._filled += take
            view = view[take:]
            if self._filled == BLOCK:
                self._done += self._open.digest()
                self._open, self._filled = hashlib.sha256(), 0
        whole = len(view) // BLOCK
        if whole:
            self._done += self._whole_blocks(view[:whole * BLOCK])
            view = view[whole * BLOCK:]
        if len(view):
            self._open.update(view)
            self._filled = len(view)

    def _whole_blocks(self, view: memoryview) -> bytes:
        def digests(part: memoryview) -> bytes:
            return b"".join(hashlib.sha256(part[i:i + BLOCK]).digest() for i in range(0, len(part), BLOCK))

        if self._pool is None or len(view) < _SPLIT:
            return digests(view)
        half = len(view) // BLOCK // 2 * BLOCK
        second = self._pool.submit(digests, view[half:])
        first = digests(view[:half])
        return first + second.result()

    def digests(self) -> bytes:
        """Every block's digest so far, concatenated, the last, partial block's included
        (feeding may go on after; what was returned stays as it was)."""
        return bytes(self._done) + (self._open.copy().digest() if self._filled else b"")


def file_digests(file, offset: int = 0, size: int | None = None) -> bytes:
    """The block digests of ``size`` bytes (to the end when None) of a binary file or path,
    from ``offset`` (on a block boundary), read in pieces, never whole."""
    if not hasattr(file, "read"):
        with open(file, "rb") as f:
            return file_digests(f, offset, size)
    file.seek(offset)
    hasher = BlockHasher()
    left = float("inf") if size is None else size
    while left:
        piece = file.read(int(min(16 * BLOCK, left)))
        if not piece:
            break
        hasher.update(piece)
        left -= len(piece)
    return hasher.digests()
