"""Envelopes for bytes that cross a trust boundary.

ringfire's binary format (``obj.to_bytes()``) carries a checksum (XXH64 from
format version 4, FNV-1a before): it catches accidents, not an attacker, who
can edit any field and recompute it.
Loading validates every field, but some edits stay well-formed (a Galois key
under another element with its own tag edited to match, a different noise
estimate). Two envelopes close that gap:

* **Authentication** -- :func:`authenticate` / :func:`verify`: a keyed
  BLAKE2b-256 tag over the whole object (the MAC of RFC 7693 keyed mode), for
  objects sent between parties who share a MAC key (keys from the client to a
  server, ciphertexts in both directions). ``obj.to_bytes(mac_key=k)`` and
  ``ctx.load(data, mac_key=k)`` use it; a load given a MAC key refuses
  unauthenticated bytes, so an attacker cannot strip the tag.
* **Password protection** for secret keys -- :func:`seal_secret` /
  :func:`open_secret`: scrypt (RFC 7914; N = 2^17, r = 8, p = 1 by default,
  about 0.5 s and 128 MiB) derives a key that encrypts the object with
  ChaCha20-Poly1305 (RFC 8439, from the ``cryptography`` package), the
  header bound as associated data. ``sk.to_bytes(password=...)`` and
  ``ctx.load(data, password=...)`` use it.

Layouts (little-endian):

* authenticated: ``"RFMA" | version u16 (1) | algorithm u16 (1 = BLAKE2b-256) |
  length u64 | object | tag (32 bytes)``
* sealed: ``"RFSK" | version u16 (1) | kdf u16 (1 = scrypt) | log2(N) u8 | r u8 |
  p u8 | salt (16) | nonce (12) | ChaCha20-Poly1305(object) with tag (16)``

Both are checked before any object parsing; sizes and scrypt costs are
bounded (at most 1 GiB of scrypt memory), so hostile bytes fail fast.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import struct
from pathlib import Path

__all__ = ["new_mac_key", "authenticate", "verify", "is_authenticated", "seal_secret", "open_secret", "is_sealed",
           "compress", "decompress", "is_compressed", "wrap", "unwrap"]

_MAC_MAGIC = b"RFMA"
_MAC_HEADER = struct.Struct("<4sHHQ")
_MAC_TAG_BYTES = 32
_MAC_PERSON = b"ringfire-mac"

_ZSTD_MAGIC = b"RFZS"
_ZSTD_HEADER = struct.Struct("<4sHHQ")
# Objects are residues mod primes of 20-60 bits in 64-bit words: keys and
# fresh ciphertexts compress by less than 2x. Structured ones (a zero
# plaintext, a ciphertext times 0) compress without bound, but are no larger
# than the parameters allow. A claimed size beyond both is a decompression
# bomb and is refused before anything is decompressed.
_ZSTD_MAX_RATIO = 8
_ZSTD_SLACK = 1 << 16

_SEAL_MAGIC = b"RFSK"
_SEAL_HEADER = struct.Struct("<4sHHBBB16s12s")
_SCRYPT_DEFAULT = (17, 8, 1)  # log2(N), r, p
_SCRYPT_MAX_BYTES = 1 << 30   # 128 * r * N


@contextlib.contextmanager
def atomic_file(path, *, sync: bool = True, mode: int = 0o666):
    """A binary file to write ``path`` through: a temporary file beside it, synced and renamed
    into place when the block ends, removed if it raises; readers (other processes included)
    see the whole file or none of it. ``sync=False`` skips the sync: for files that need not
    outlive a crash of the machine, only be whole for their readers. ``mode``: the file's
    permissions from its first byte on (less the umask), e.g. 0o600 for a secret."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode), "wb") as out:
            yield out
            out.flush()
            if sync:
                os.fsync(out.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomically(path, data, *, sync: bool = True, mode: int = 0o666) -> None:
    """Writes ``data`` to ``path`` whole or not at all (:func:`atomic_file`): bytes, or a
    list of bytes-like pieces written one after the other (never joined in memory)."""
    with atomic_file(path, sync=sync, mode=mode) as out:
        if isinstance(data, list):
            out.writelines(data)
        else:
            out.write(data)


def stored_poly_bytes(poly_degree: int, primes) -> int:
    """The bytes a polynomial over ``primes`` takes serialized (format version 5): for each
    prime, N residues in the bits it needs, ``bit_length(q - 1)``."""
    return sum(poly_degree * (int(q) - 1).bit_length() // 8 for q in primes)


def new_mac_key() -> bytes:
    """32 random bytes from the operating system, for :func:`authenticate`."""
    return secrets.token_bytes(32)


_BYTES_LIKE = (bytes, bytearray, memoryview)


def _mac_key(key) -> bytes:
    # bytes(int) would be that many zero bytes: a key anyone can guess.
    if not isinstance(key, _BYTES_LIKE):
        raise TypeError(f"[io.mac] a MAC key is bytes (rf.io.new_mac_key() makes one), got {type(key).__name__}")
    key = bytes(key)
    if not 16 <= len(key) <= 64:
        raise ValueError(f"[io.mac] a MAC key has 16 to 64 bytes (rf.io.new_mac_key() makes one), got {len(key)} bytes")
    return key


def _tag(key: bytes, message: bytes) -> bytes:
    return hashlib.blake2b(message, key=key, digest_size=_MAC_TAG_BYTES, person=_MAC_PERSON).digest()


def authenticate(data: bytes, mac_key: bytes) -> bytes:
    """``data`` (any ringfire object's bytes) with a keyed BLAKE2b-256 tag."""
    data = bytes(data)
    header = _MAC_HEADER.pack(_MAC_MAGIC, 1, 1, len(data))
    return header + data + _tag(_mac_key(mac_key), header + data)


def is_authenticated(blob: bytes) -> bool:
    return bytes(blob[:4]) == _MAC_MAGIC


def verify(blob: bytes, mac_key: bytes) -> bytes:
    """The object inside an :func:`authenticate` envelope; ``ValueError`` when the
    tag does not match (wrong key, or bytes changed anywhere)."""
    blob = bytes(blob)
    key = _mac_key(mac_key)
    if not is_authenticated(blob):
        raise ValueError("[io.verify] these bytes are not authenticated (no RFMA envelope); a load given a MAC key "
                         "accepts only authenticated objects")
    if len(blob) < _MAC_HEADER.size + _MAC_TAG_BYTES:
        raise ValueError("[io.verify] truncated authenticated object")
    _, version, algorithm, length = _MAC_HEADER.unpack_from(blob)
    if version != 1 or algorithm != 1:
        raise ValueError(f"[io.verify] unsupported envelope version {version} / algorithm {algorithm}")
    if length != len(blob) - _MAC_HEADER.size - _MAC_TAG_BYTES:
        raise ValueError("[io.verify] truncated or padded: the envelope's length disagrees with the input")
    body, tag = blob[:-_MAC_TAG_BYTES], blob[-_MAC_TAG_BYTES:]
    if not hmac.compare_digest(_tag(key, body), tag):
        raise ValueError("[io.verify] authentication failed: the bytes were changed, or the MAC key is not the one "
                         "they were authenticated with")
    return body[_MAC_HEADER.size:]


def _aead():
    try:
        from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
        from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
    except ImportError as err:  # pragma: no cover - a dependency of the package
        raise ImportError("[io] password protection needs the 'cryptography' package: pip install cryptography") from err
    return ChaCha20Poly1305, Scrypt


def _password(password) -> bytes:
    if isinstance(password, str):
        password = password.encode("utf-8")
    if not isinstance(password, _BYTES_LIKE):
        raise TypeError(f"[io.seal] a password is str or bytes, got {type(password).__name__}")
    password = bytes(password)
    if not password:
        raise ValueError("[io.seal] the password is empty")
    return password


def _derive(password: bytes, salt: bytes, log_n: int, r: int, p: int) -> bytes:
    _, scrypt = _aead()
    return scrypt(salt=salt, length=32, n=1 << log_n, r=r, p=p).derive(password)


def seal_secret(data: bytes, password, *, scrypt_log_n: int = _SCRYPT_DEFAULT[0]) -> bytes:
    """``data`` (a secret key's bytes) encrypted under a key derived from
    ``password`` (str or bytes). ``scrypt_log_n`` trades time for resistance to
    guessing (17: about 0.5 s; fewer only for tests)."""
    chacha, _ = _aead()
    log_n, r, p = int(scrypt_log_n), _SCRYPT_DEFAULT[1], _SCRYPT_DEFAULT[2]
    if not 10 <= log_n <= 20:
        raise ValueError(f"[io.seal] scrypt_log_n must be in [10, 20], got {log_n}")
    salt, nonce = secrets.token_bytes(16), secrets.token_bytes(12)
    header = _SEAL_HEADER.pack(_SEAL_MAGIC, 1, 1, log_n, r, p, salt, nonce)
    key = _derive(_password(password), salt, log_n, r, p)
    return header + chacha(key).encrypt(nonce, bytes(data), header)


def is_sealed(blob: bytes) -> bool:
    return bytes(blob[:4]) == _SEAL_MAGIC


def open_secret(blob: bytes, password) -> bytes:
    """The bytes inside :func:`seal_secret`'s envelope; ``ValueError`` for a wrong
    password or changed bytes."""
    blob = bytes(blob)
    if not is_sealed(blob):
        raise ValueError("[io.open] these bytes are not a password-protected secret key")
    if len(blob) < _SEAL_HEADER.size + 16:
        raise ValueError("[io.open] truncated password-protected object")
    _, version, kdf, log_n, r, p, salt, nonce = _SEAL_HEADER.unpack_from(blob)
    if version != 1 or kdf != 1:
        raise ValueError(f"[io.open] unsupported envelope version {version} / key derivation {kdf}")
    if not (10 <= log_n <= 20 and 1 <= r <= 32 and 1 <= p <= 16 and 128 * r * (1 << log_n) <= _SCRYPT_MAX_BYTES):
        raise ValueError(f"[io.open] scrypt costs out of range (N=2^{log_n}, r={r}, p={p})")
    chacha, _ = _aead()
    from cryptography.exceptions import InvalidTag

    header = blob[:_SEAL_HEADER.size]
    key = _derive(_password(password), salt, log_n, r, p)
    try:
        return chacha(key).decrypt(nonce, blob[_SEAL_HEADER.size:], header)
    except InvalidTag:
        raise ValueError("[io.open] wrong password, or the protected bytes were changed") from None


def _zstandard():
    try:
        import zstandard
    except ImportError:
        raise ImportError("[io] compressed objects need the zstandard package: pip install 'ringfire[zstd]'") from None
    return zstandard


def compress(data: bytes, level: int = 3) -> bytes:
    """``data`` compressed with Zstandard (``"RFZS" | version u16 | algorithm u16 |
    length u64 | zstd frame``). Format version 5 stores each residue in the bits
    its prime needs, so uniform ciphertexts and keys do not compress further (version
    4's 64-bit words gave Zstandard 15-24 %); structured objects do (an all-zero
    ciphertext shrinks 2000x)."""
    header = _ZSTD_HEADER.pack(_ZSTD_MAGIC, 1, 1, len(data))
    return header + _zstandard().ZstdCompressor(level=level).compress(bytes(data))


def is_compressed(blob: bytes) -> bool:
    return bytes(blob[:4]) == _ZSTD_MAGIC


def decompress(blob: bytes, max_size: int = 0) -> bytes:
    """The inverse of :func:`compress`, bounded whatever the frame holds: the declared
    size must be at most 8x the input's or ``max_size`` (``ctx.load`` passes the largest
    object its parameters allow); the frame's header must agree with it (one frame, no
    dictionary, a window no larger than the output); and the output is decoded into a
    buffer of exactly the declared size, so a bomb stops at that size instead of
    expanding first and being measured afterwards (:func:`_bounded_frame`)."""
    if len(blob) < _ZSTD_HEADER.size:
        raise ValueError(f"[io.decompress] {len(blob)} bytes are too short for a compressed object")
    magic, version, algorithm, length = _ZSTD_HEADER.unpack_from(blob)
    if magic != _ZSTD_MAGIC or version != 1 or algorithm != 1:
        raise ValueError(f"[io.decompress] not a ringfire compressed object (version {version}, algorithm "
                         f"{algorithm})")
    frame = bytes(blob[_ZSTD_HEADER.size:])
    if length > max(_ZSTD_MAX_RATIO * len(frame) + _ZSTD_SLACK, max_size):
        raise ValueError(f"[io.decompress] the header claims {length} bytes from {len(frame)} compressed: more than "
                         f"{_ZSTD_MAX_RATIO}x and more than the largest object these parameters allow ({max_size} "
                         "bytes); refused")
    zstd = _zstandard()
    window = _bounded_frame(zstd, frame, length)
    try:
        # One frame, decoded into a buffer of `length` bytes: more output is an error
        # (the decoder stops when the buffer is full), trailing bytes too.
        out = zstd.ZstdDecompressor(max_window_size=window).decompress(
            frame, max_output_size=max(length, 1), read_across_frames=False, allow_extra_data=False)
    except zstd.ZstdError as error:
        if "did not decompress full frame" in str(error):  # what the full buffer, or a cut frame, reports
            raise ValueError(f"[io.decompress] the compressed data does not decode to the {length} bytes the header "
                             "says (it holds more, or it is cut short)") from None
        raise ValueError(f"[io.decompress] corrupt compressed data: {error}") from None
    if len(out) != length:
        raise ValueError(f"[io.decompress] the compressed data holds {len(out)} bytes, the header says {length}")
    return out


# The smallest window a Zstandard frame can declare (2^10 bytes).
_ZSTD_MIN_WINDOW = 1 << 10


def _bounded_frame(zstd, frame: bytes, length: int) -> int:
    """Checks the frame's header against the declared ``length`` before any decoding and
    returns the largest window the decoder may open: a frame from :func:`compress` is
    one frame with its content size and no dictionary, whose window never exceeds its
    content; a larger declared window would make the decoder allocate it up front."""
    try:
        params = zstd.get_frame_parameters(frame)
    except zstd.ZstdError as error:
        raise ValueError(f"[io.decompress] corrupt compressed data: {error}") from None
    if params.dict_id != 0:
        raise ValueError(f"[io.decompress] the frame needs dictionary {params.dict_id}; ringfire's frames use none")
    if params.content_size not in (zstd.CONTENTSIZE_UNKNOWN, length):
        raise ValueError(f"[io.decompress] the frame says it holds {params.content_size} bytes, the header says "
                         f"{length}")
    window = max(_ZSTD_MIN_WINDOW, 1 << max(length - 1, 1).bit_length())
    if params.window_size > window:
        raise ValueError(f"[io.decompress] the frame asks for a {params.window_size}-byte window to produce "
                         f"{length} bytes; refused")
    return window


def wrap(data: bytes, mac_key: bytes | None = None, compress_level: int | None = None) -> bytes:
    """``data``, compressed when ``compress_level`` is given (1-22; 3 is fast), then
    authenticated with ``mac_key`` (what every ``to_bytes(mac_key=..., compress=...)``
    returns)."""
    if compress_level is not None:
        data = compress(data, compress_level)
    return data if mac_key is None else authenticate(data, mac_key)


def compress_level(compress) -> int | None:
    """``to_bytes(compress=...)``: False/None (off), True (level 3) or a level 1-22."""
    if compress is None or compress is False:
        return None
    level = 3 if compress is True else compress
    if not isinstance(level, int) or not 1 <= level <= 22:
        raise ValueError(f"[io] compress must be True, False or a Zstandard level 1-22, got {compress!r}")
    return level


def unwrap(data: bytes, mac_key: bytes | None = None, password=None, max_size: int = 0) -> bytes:
    """The object bytes inside whatever envelopes ``data`` has, checked: what every
    load does first. With ``mac_key``, unauthenticated bytes are refused (an
    attacker could have stripped the tag); authenticated bytes without
    ``mac_key`` are refused too (they were meant to be checked)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"[io.load] expected the bytes of to_bytes(), got {type(data).__name__}")
    data = bytes(data)
    if is_authenticated(data):
        if mac_key is None:
            raise ValueError("[io.load] these bytes are authenticated: pass mac_key= to check them")
        data = verify(data, mac_key)
    elif mac_key is not None:
        raise ValueError("[io.load] a MAC key was given but these bytes are not authenticated: refused (an attacker "
                         "could have stripped the tag)")
    if is_sealed(data):
        if password is None:
            raise ValueError("[io.load] this secret key is password-protected: pass password=")
        data = open_secret(data, password)
    elif password is not None:
        raise ValueError("[io.load] a password was given but these bytes are not a password-protected secret key")
    if is_compressed(data):
        data = decompress(data, max_size)
    return data


# ---- streamed keys --------------------------------------------------------------------------
# A key's envelope (format version 4): magic, version u16, kind u16, the parameter identity
# (32 bytes), the payload length u64 — then the payload and the u64 checksum.
STREAM_HEADER = struct.Struct("<4sHH32sQ")
STREAMED_KINDS = {4: "public key", 5: "relinearization key", 6: "Galois key set", 8: "bootstrap key set",
                  9: "master key set"}


def stream_out(file, write_all) -> int:
    """Runs ``write_all(write)`` against ``file`` (a path, written atomically: a temporary
    file renamed into place, or a binary file object); returns the bytes written."""
    written = 0

    def write(view) -> None:
        nonlocal written
        out.write(view)
        written += len(view)

    with contextlib.nullcontext(file) if hasattr(file, "write") else atomic_file(file) as out:
        write_all(write)
    return written


class Stream:
    """A binary source with ``readinto`` (a file, a socket's ``makefile("rb")``, anything
    with ``read``), with the bytes already taken from it put back in front."""

    def __init__(self, file, prefix: bytes = b""):
        self._file, self._prefix = file, prefix

    def readinto(self, view) -> int:
        if self._prefix:
            n = min(len(view), len(self._prefix))
            view[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        if hasattr(self._file, "readinto"):
            return self._file.readinto(view) or 0
        data = self._file.read(len(view))
        view[:len(data)] = data
        return len(data)

    def read_exactly(self, n: int) -> bytes:
        """n bytes, or fewer only where the stream ends (b"" at its end)."""
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            step = self.readinto(view[got:])
            if not step:
                break
            got += step
        return bytes(buf[:got])


def read_envelope_header(stream: Stream) -> tuple[str, int] | None:
    """The kind and total size of the next streamed key envelope (None at the stream's end);
    the header stays in the stream for the native loader, which checks it in full."""
    head = stream.read_exactly(STREAM_HEADER.size)
    if not head:
        return None
    if len(head) < STREAM_HEADER.size:
        raise ValueError(f"[io.load] truncated: {len(head)} bytes where a key's header needs {STREAM_HEADER.size}")
    magic, version, kind, _, length = STREAM_HEADER.unpack(head)
    if magic != b"RFHE":
        raise ValueError("[io.load] not a ringfire object (bad magic bytes); authenticated, sealed or compressed "
                         "blobs load with ctx.load(bytes)")
    if version < 4:
        raise ValueError(f"[io.load] streamed loading reads format version 4 on (this is version {version}); "
                         "load older files whole with ctx.load(bytes)")
    if kind not in STREAMED_KINDS:
        raise ValueError(f"[io.load] kind {kind} is not a streamed key (keys stream: "
                         f"{', '.join(STREAMED_KINDS.values())}); load it whole with ctx.load(bytes)")
    if length > 1 << 48:  # 256 TiB: no key is that large; a forged header, refused before any allocation
        raise ValueError(f"[io.load] the header declares a {length}-byte payload")
    stream._prefix = head + stream._prefix
    return STREAMED_KINDS[kind], STREAM_HEADER.size + length + 8


def sha256_of_file(file) -> str:
    """The SHA-256 of a file (a path, or a binary file object read from its start), read in
    4 MiB blocks, never whole."""
    if not hasattr(file, "read"):
        with open(file, "rb") as f:
            return sha256_of_file(f)
    file.seek(0)
    digest = hashlib.sha256()
    while block := file.read(1 << 22):
        digest.update(block)
    return digest.hexdigest()
