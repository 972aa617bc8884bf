"""What crosses the network: encrypted tensors as one binary body, never base64 or JSON
numbers. Each ciphertext travels in its own checksummed envelope (``to_bytes``), and the
container around them is bounded before it is parsed: the caller says how many entries
and how many bytes per entry it accepts, so a body cannot make the reader allocate more
than the body itself.

Container ``RFT1``::

    magic "RFT1" | version u16 | packing u8 (0 batch, 1 inter) | reserved u8 |
    batch u32 | period u32 | ndim u8 | shape u32 x ndim |
    sample ndim u8 | sample shape u32 x ndim | slots flag u8 [| count u32 | u32 x count] |
    entries: kind u8 (0 absent, 1 a known constant f64, 2 a ciphertext: length u64 | bytes)

A container is built and read as a list of pieces (``tensor_parts``, ``unpack_tensor``
over the pieces a socket delivers), never joined into one buffer: a body of tens of MiB
joined is as many MiB of fresh memory, which the operating system maps in page by page
(on two cores that cost more than sending the bytes). A client joins consecutive pieces
into blocks of about 1 MiB as it sends them (``Blocks``), never more than one at a time.

The layer description of a client-aided round is JSON (``node_to_json``): the operator,
its name and attributes, the tensor's shape, and the clip bounds.

A reply that carries data (``REPLY_TYPE``: a submission's or an answer's reply whose job's
next status is a round to answer or its result) is the status and the data in one body::

    magic "RFR1" | JSON length u32 | JSON (the reply's fields, the status among them) | container
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable

import numpy as np

MAGIC = b"RFT1"
REPLY_MAGIC = b"RFR1"
REPLY_TYPE = "application/vnd.ringfire.reply"
MAX_REPLY_HEAD = 1 << 16  # a status and its layer description are a few hundred bytes
_HEAD = struct.Struct("<4sHBBIIB")
_ABSENT, _CONSTANT, _CIPHERTEXT = 0, 1, 2
MAX_DIMS = 8


class WireError(ValueError):
    """A body that is not a well-formed container (the message says what is wrong)."""


def tensor_parts(cts: np.ndarray, batch: int, packing: str = "batch", period: int = 0, sample_shape=None,
                 element_slots=None) -> list[bytes]:
    """The container of an object array of ciphertexts (None and floats allowed), as the
    pieces to send one after the other (``parts_size`` is its length)."""
    sample_shape = tuple(cts.shape) if sample_shape is None else tuple(sample_shape)
    parts = [_HEAD.pack(MAGIC, 1, 1 if packing == "inter" else 0, 0, int(batch), int(period), cts.ndim),
             struct.pack(f"<{cts.ndim}I", *cts.shape), struct.pack("<B", len(sample_shape)),
             struct.pack(f"<{len(sample_shape)}I", *sample_shape)]
    if element_slots is None:
        parts.append(b"\0")
    else:
        slots = np.asarray(element_slots, dtype=np.uint32).ravel()
        parts += [b"\1", struct.pack("<I", slots.size), slots.tobytes()]
    for c in cts.flat:
        if c is None:
            parts.append(struct.pack("<B", _ABSENT))
        elif isinstance(c, float):
            parts.append(struct.pack("<Bd", _CONSTANT, c))
        else:
            data = c.to_bytes()
            parts += [struct.pack("<BQ", _CIPHERTEXT, len(data)), data]
    return parts


def pack_tensor(*args, **kwargs) -> bytes:
    """:func:`tensor_parts` as one bytes object (for a file, or a test that cuts it)."""
    return b"".join(tensor_parts(*args, **kwargs))


def parts_size(parts: list) -> int:
    return sum(len(p) for p in parts)


SEND_BLOCK = 1 << 20


class Blocks:
    """A container's parts as the blocks a client uploads: consecutive parts joined up to
    about `block` bytes; a part that size or larger goes alone, uncopied (an N = 2^16
    envelope is tens of MB). httpx sends each
    part as its own event and write, and a ciphertext is two parts, its length and its
    envelope; a block costs one of each and one copy of its bytes, and never more than a
    block is joined at a time (64 seeded inputs, 6 MB: 2.4-3.3 ms of the client's CPU
    instead of 3.0-4.7, 1.3-2.2 ms of the receiving server's instead of 2.3-3.0;
    ``benchmarks/serve_upload_parts.py``). Iterable again, for a retried request."""

    def __init__(self, parts: list, block: int = SEND_BLOCK):
        self.parts, self.block = parts, block

    def __iter__(self):
        pending, size = [], 0
        for part in self.parts:
            if len(part) >= self.block:  # large enough alone: what waits goes first, then it, uncopied
                if pending:
                    yield self._joined(pending)
                    pending, size = [], 0
                yield part
                continue
            pending.append(part)
            size += len(part)
            if size >= self.block:
                yield self._joined(pending)
                pending, size = [], 0
        if pending:
            yield self._joined(pending)

    @staticmethod
    def _joined(pending: list):
        return pending[0] if len(pending) == 1 else b"".join(pending)


class _Reader:
    """Reads a body that arrives in pieces (any bytes-like objects, of any sizes). A field
    inside one piece is a view of it; one that spans pieces is gathered into a copy of its
    own size (bytes), which the caller has bounded before asking."""

    def __init__(self, pieces: Iterable):
        self._pieces = iter(pieces)
        self._piece, self._pos = memoryview(b""), 0

    def _next_piece(self) -> bool:
        for piece in self._pieces:
            if len(piece):
                self._piece, self._pos = memoryview(piece).cast("B"), 0
                return True
        return False

    def take(self, n: int, what: str):
        left = len(self._piece) - self._pos
        if n <= left:
            out = self._piece[self._pos:self._pos + n]
            self._pos += n
            return out
        spans, have = [], 0  # joined once into bytes: the one copy a load makes anyway
        while True:
            step = min(n - have, len(self._piece) - self._pos)
            spans.append(self._piece[self._pos:self._pos + step])
            have, self._pos = have + step, self._pos + step
            if have == n:
                return b"".join(spans)
            if not self._next_piece():
                raise WireError(f"[serve.wire] truncated body: {what} needs {n} bytes, {have} left")

    def unpack(self, fmt: str, what: str):
        s = struct.Struct(fmt)
        return s.unpack(self.take(s.size, what))

    def skip(self, n: int, what: str) -> None:
        """Passes over `n` bytes without copying them."""
        while n:
            step = min(n, len(self._piece) - self._pos)
            self._pos += step
            n -= step
            if n and not self._next_piece():
                raise WireError(f"[serve.wire] truncated body: {what} needs {n} bytes more than arrived")

    def extra(self) -> int:
        """The bytes after the last field (the rest is read to count them)."""
        left = len(self._piece) - self._pos
        while self._next_piece():
            left += len(self._piece)
        return left


def check_tensor(data, *, max_entries: int, max_entry_bytes: int) -> dict:
    """Raises WireError unless ``data`` is a well-formed container within the limits: its
    framing only, each ciphertext passed over, not copied or loaded (a server answers a
    malformed body at once, before it queues the job that loads it). Returns its fields, as
    :func:`unpack_tensor` does, each ciphertext's entry None."""
    return unpack_tensor(data, None, max_entries=max_entries, max_entry_bytes=max_entry_bytes)


def unpack_tensor(data, load, *, max_entries: int, max_entry_bytes: int) -> dict:
    """The container's fields and its entries, each ciphertext passed through ``load`` (the
    context's, which checks its envelope; None: passed over, the entry left None). ``data``:
    the body as one bytes-like object, or its pieces in order (a list, or an iterator that
    reads them from a socket as they come). Entry counts and sizes are checked against the
    limits before anything is allocated for them."""
    return _unpack(_reader(data), load, max_entries, max_entry_bytes)


def reply_head(fields: dict) -> bytes:
    """The start of a reply that carries data: its fields as JSON; the container follows."""
    text = json.dumps(fields).encode()
    return REPLY_MAGIC + struct.pack("<I", len(text)) + text


def unpack_reply(data, load, head: dict, *, max_entries: int, max_entry_bytes: int) -> dict:
    """A reply that carries data (``reply_head`` and a container): ``head`` gets the reply's
    fields as soon as they are read (a caller whose connection drops later still has the
    status), and the container's fields are returned as :func:`unpack_tensor` returns them."""
    r = _reader(data)
    magic, length = r.unpack("<4sI", "the reply's head")
    if magic != REPLY_MAGIC or length > MAX_REPLY_HEAD:
        raise WireError(f"[serve.wire] not a reply that carries data (magic {bytes(magic)!r}, {length} bytes of JSON)")
    try:
        fields = json.loads(bytes(r.take(length, "the reply's fields")))
    except ValueError as e:
        raise WireError(f"[serve.wire] the reply's fields are not JSON: {e}") from None
    if not isinstance(fields, dict):
        raise WireError("[serve.wire] the reply's fields are not a JSON object")
    head.update(fields)
    return _unpack(r, load, max_entries, max_entry_bytes)


def _reader(data) -> "_Reader":
    return _Reader([data] if isinstance(data, (bytes, bytearray, memoryview)) else data)


def _unpack(r: "_Reader", load, max_entries: int, max_entry_bytes: int) -> dict:
    magic, version, packing, _, batch, period, ndim = r.unpack("<4sHBBIIB", "the header")
    if magic != MAGIC or version != 1 or packing > 1:
        raise WireError(f"[serve.wire] not an encrypted-tensor container (magic {bytes(magic)!r}, version {version})")
    if ndim > MAX_DIMS:
        raise WireError(f"[serve.wire] {ndim} dimensions; at most {MAX_DIMS}")
    shape = r.unpack(f"<{ndim}I", "the shape")
    (sample_ndim,) = r.unpack("<B", "the sample rank")
    if sample_ndim > MAX_DIMS:
        raise WireError(f"[serve.wire] {sample_ndim} sample dimensions; at most {MAX_DIMS}")
    sample_shape = r.unpack(f"<{sample_ndim}I", "the sample shape")
    count = int(np.prod(shape, dtype=np.int64)) if ndim else 1
    if count > max_entries:
        raise WireError(f"[serve.wire] {count} entries; this endpoint takes at most {max_entries}")
    (has_slots,) = r.unpack("<B", "the slot flag")
    element_slots = None
    if has_slots:
        (n,) = r.unpack("<I", "the slot count")
        if n > max_entries * 65536:
            raise WireError(f"[serve.wire] {n} element slots is more than the tensor can hold")
        element_slots = np.frombuffer(r.take(4 * n, "the element slots"), dtype=np.uint32).astype(np.int64)
    cts = np.empty(count, dtype=object)
    for i in range(count):
        (kind,) = r.unpack("<B", "an entry kind")
        if kind == _ABSENT:
            cts[i] = None
        elif kind == _CONSTANT:
            (cts[i],) = r.unpack("<d", "a constant")
        elif kind == _CIPHERTEXT:
            (length,) = r.unpack("<Q", "an entry length")
            if length > max_entry_bytes:
                raise WireError(f"[serve.wire] a ciphertext of {length} bytes; these parameters make at most "
                                f"{max_entry_bytes}")
            if load is None:
                r.skip(length, "a ciphertext")
            else:
                cts[i] = load(bytes(r.take(length, "a ciphertext")))
        else:
            raise WireError(f"[serve.wire] unknown entry kind {kind}")
    if extra := r.extra():
        raise WireError(f"[serve.wire] {extra} bytes after the last entry")
    return {"cts": cts.reshape(shape), "batch": batch, "packing": "inter" if packing else "batch",
            "period": period, "sample_shape": tuple(sample_shape), "element_slots": element_slots}


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return value


def _layer(node) -> dict:
    return {"op": node.op, "name": node.name, "attrs": {k: _jsonable(v) for k, v in node.attrs.items()}}


def node_to_json(node, shape, clip) -> str:
    """The layer a client-aided round asks the key holder to apply (a chain of layers: each
    of them, in order, under ``"chain"``)."""
    from ..nn.nonlinear import Chain
    layer = {"chain": [_layer(n) for n in node.nodes]} if isinstance(node, Chain) else _layer(node)
    return json.dumps({**layer, "shape": list(shape), "clip": _jsonable(clip)})


def _node_from(d: dict):
    from ..nn.graph import Node
    attrs = {k: (tuple(v) if isinstance(v, list) and all(isinstance(x, int) for x in v) else v)
             for k, v in d["attrs"].items()}
    return Node(d["op"], d["name"], [], [], attrs)


def node_from_json(text: str):
    """(node, shape, clip) from :func:`node_to_json` (attributes as lists; NumPy reads them)."""
    return node_from_fields(json.loads(text))


def node_from_fields(d: dict):
    """(node, shape, clip) from :func:`node_to_json`'s fields already parsed (a status's round)."""
    from ..nn.nonlinear import Chain
    node = Chain([_node_from(n) for n in d["chain"]]) if "chain" in d else _node_from(d)
    clip = tuple(d["clip"]) if isinstance(d["clip"], list) else d["clip"]
    return node, tuple(d["shape"]), clip
