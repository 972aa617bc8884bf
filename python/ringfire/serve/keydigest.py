"""How ``ringfire serve`` names an uploaded key and checks each chunk of it: BLAKE3 over blocks.

A key is cut into blocks of ``BLOCK`` bytes (the last one may be shorter) and each block is
hashed once with BLAKE3. The key's digest is a BLAKE3 over those block digests; a chunk's
digest is a BLAKE3 over the digests of the blocks it holds (chunks start on a block boundary
and hold whole blocks, the key's last chunk excepted). So every byte is hashed once on each
side:

- the client hashes its key as it sends it, and names it with its last chunk (the chunks
  before carry ``PENDING``); where the server may hold the key already (this tenant stores
  keys of its kind), or an upload is to be resumed, it hashes the key in a pass of its own
  first, and the key's digest decides whether it has to be sent at all. Every chunk's digest
  follows from the same block digests;
- the server hashes each block as it arrives, checks the chunk with it, and names the key at
  commit from the block digests it kept.

BLAKE3 and not SHA-256: both sides hash every byte of every upload (3.15 GB for N16_BOOT's
keys), and on the 2-vCPU machines of BENCHMARKS.md BLAKE3 hashes 64 KiB blocks at 7.5 GB/s
against SHA-256's 2.15 GB/s (with the CPU's SHA instructions), for the same 256-bit digests.
The two digests are domain-separated, so a chunk's digest never names a key. Version 2 of
the scheme: version 1 hashed the blocks with SHA-256 (a client of that version is refused
its first chunk: its digests do not match).
"""

from __future__ import annotations

try:
    from blake3 import blake3 as _blake3
except ImportError:  # pragma: no cover - the serve extra installs it
    _blake3 = None

BLOCK = 1 << 16
DIGEST = 32  # bytes of a block's digest; block digests travel concatenated, DIGEST bytes each
_KEY = b"ringfire key digest v2\n"
_CHUNK = b"ringfire chunk digest v2\n"
# X-Key-Digest of a chunk before the key's last, when the client hashes the key as it sends it
# and names it with its last chunk (one pass over the key instead of two).
PENDING = "pending"


def _hasher(data=b""):
    if _blake3 is None:
        raise ImportError("[serve] key digests need the blake3 package: pip install 'ringfire[serve]'")
    return _blake3(data)


def key_digest(digests: bytes) -> str:
    """The digest that names a key: BLAKE3 over its blocks' digests (64 hex digits)."""
    return _hasher(_KEY + digests).hexdigest()


def chunk_digest(digests: bytes) -> str:
    """The digest of a chunk from the digests of the blocks it holds."""
    return _hasher(_CHUNK + digests).hexdigest()


def digests_of(digests: bytes, first: int, size: int) -> bytes:
    """Of a key's block digests, those of the blocks the bytes [first, first + size) hold
    (``first`` on a block boundary)."""
    return digests[first // BLOCK * DIGEST:(first + size + BLOCK - 1) // BLOCK * DIGEST]


def aligned(first: int, size: int, total: int) -> bool:
    """A chunk starts on a block boundary and holds whole blocks, or ends the key."""
    return first % BLOCK == 0 and (size % BLOCK == 0 or first + size == total)


class BlockHasher:
    """The BLAKE3 digest of each ``BLOCK``-byte block of what it is fed, through ``update`` or
    ``write`` (the file interface a key's ``save_to`` takes; the bytes are hashed before the
    call returns, so a writer that lends its buffer only for the call is served). One thread:
    BLAKE3 keeps the GIL over a 64 KiB block, and a second thread hashing half of each write
    gained nothing (N16_D30's relinearization key serialized and hashed in 15.0-16.7 ms
    either way, where SHA-256 took 23-28 ms on two threads). The digests are kept
    concatenated (DIGEST bytes a block: 0.05 % of what was hashed)."""

    def __init__(self):
        self._done = bytearray()
        self._open = _hasher()  # the block being filled
        self._filled = 0
        self.size = 0

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
                self._open, self._filled = _hasher(), 0
        whole = len(view) // BLOCK
        if whole:
            self._done += self._whole_blocks(view[:whole * BLOCK])
            view = view[whole * BLOCK:]
        if len(view):
            self._open.update(view)
            self._filled = len(view)

    @staticmethod
    def _whole_blocks(view: memoryview) -> bytes:
        return b"".join(_hasher(view[i:i + BLOCK]).digest() for i in range(0, len(view), BLOCK))

    def whole_blocks(self) -> bytes:
        """The digests of the blocks complete so far (another thread may go on feeding)."""
        return bytes(self._done)

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
