"""The client of ``ringfire serve``: it makes (or takes) the keys, uploads the evaluation
keys once (resuming an interrupted upload, skipping keys the server already has),
encrypts, submits, answers the client-aided rounds, and decrypts. The secret key never
leaves it; the server sees the evaluation keys, the ciphertexts, the model's layer
names, and timing.

    client = rf.serve.Client("http://127.0.0.1:8000", token=TOKEN)
    session = client.session("mlp")            # keys made here, uploaded once
    y = session.infer(x)                       # x: NumPy, batch first
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import uuid
import weakref

import numpy as np

from .. import _progress, ckks, memory
from .. import io as rf_io
from ..ckks.batch import EncryptedTensor
from ..nn.client import LocalClient, encryption_level
from . import wire
from .keydigest import BLOCK, PENDING, BlockHasher, chunk_digest, digests_of, key_digest
from .turns import Turns

log = logging.getLogger("ringfire.serve")

CHUNK = 16 * 2**20
CHUNK_RESENDS = 3  # a chunk that arrives corrupt is sent again at most this many times
RETRY_AFTER_MOST = 30.0  # the longest a server's Retry-After makes the client wait before trying again
# Each key's size and block digests, by key object, for as long as it lives: a client that opens
# another session with the same keys, or resumes an upload, names them without serializing and
# hashing them again (N16_D30's relinearization key: 24 ms; N16_BOOT's bootstrapping keys, 3.06 GB:
# seconds). Kept with the key's native object, so a key whose words were replaced is hashed anew.
_KEY_DIGESTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


# Keys this client made (Client.keygen) from the operating system's randomness: no server holds
# them before this client sent them, so they go named with their last chunk (one pass over them)
# even to a tenant that stores keys of their kind, instead of a pass to hash them first and ask
# whether the server has them (N16_BOOT's 3.15 GB: 2.1-2.5 s here before any byte was sent).
_MADE_HERE: weakref.WeakSet = weakref.WeakSet()


# The key holder's work (encrypting inputs, answering rounds, decrypting results) of every session in
# this process, a turn at a time (as many at once as the kernels' threads leave cores for), first
# come first served: sessions computing all at once would finish together and leave the server
# idle meanwhile (turns.py).
KEY_HOLDER_TURNS = Turns()


def _known_digests(key) -> tuple[int, bytes] | None:
    """The key's size and block digests if this client took them from its current words."""
    cached = _KEY_DIGESTS.get(key)
    return cached[1:] if cached is not None and cached[0]() is key._res else None


def _remember_digests(key, native, total: int, blocks: bytes) -> None:
    """Keeps the size and block digests taken from the key's words `native` (its ``_res``)."""
    _KEY_DIGESTS[key] = (weakref.ref(native), total, blocks)

RETAIN_FREED = 64 * 2**20  # freed memory the client's process keeps mapped (Client's docstring)
READ_BYTES = 2**20  # what httpx reads from its socket at a time in the client's process (Client's docstring)
HTTPCORE_READ_BYTES = 64 * 2**10  # httpcore's own
MAX_ENTRIES = 2**24  # ciphertexts a container from the server may hold (each one's bytes: the context's largest object)


def retry_after(response, otherwise: float) -> float:
    """Seconds to wait before trying again: the response's Retry-After (at most RETRY_AFTER_MOST),
    or ``otherwise`` where it has none in seconds (absent, or an HTTP date from a proxy)."""
    try:
        return min(RETRY_AFTER_MOST, max(0.0, float(response.headers["retry-after"])))
    except (KeyError, ValueError):
        return otherwise


class ServerError(RuntimeError):
    """The server refused a request or a job failed: its status and message; ``unknown``: what
    a 404 did not find, where the server says (``X-Ringfire-Unknown``: "session", "job")."""

    def __init__(self, status: int, message: str, unknown: str | None = None):
        super().__init__(f"[serve] {status}: {message}")
        self.status, self.message, self.unknown = status, message, unknown


def read_in_pieces_of(size: int) -> None:
    """httpcore's HTTP/1.1 connections (httpx's, in this process) read ``size`` bytes from their
    socket at a time, unless something set a size of its own (left alone) or this httpcore has
    no such setting (its own reads then). ``size``: 4 KiB to 64 MiB."""
    if isinstance(size, bool) or not isinstance(size, int) or not 2**12 <= size <= 2**26:
        raise ValueError(f"[serve] read_bytes={size!r}: from 4096 to {2**26} bytes (or 0: httpcore's own)")
    try:
        from httpcore._sync.http11 import HTTP11Connection
    except ImportError:
        return
    if getattr(HTTP11Connection, "READ_NUM_BYTES", None) == HTTPCORE_READ_BYTES:
        HTTP11Connection.READ_NUM_BYTES = size


class Client:
    """A connection to a server. ``token``: the tenant's bearer token; ``verify``: TLS
    verification (a CA bundle path for a private CA); ``timeout``: seconds per request.
    ``retain_freed``: bytes of freed memory this process keeps mapped for its next buffers
    (:func:`ringfire.memory.retain_freed`, as ``ringfire serve`` does), set by the first
    client unless the process set its own; 0 leaves the C library's defaults. An upload sends
    a key in 1 MiB pieces, and by default glibc hands each one's memory back to the system when
    it is freed: the next ones fault their pages in again (N16_D30's 43 MB key serialized for
    sending: 6,300-7,000 page faults and 22-27 ms each time; 0-120 faults and 13 ms from the
    second time with the memory kept).

    ``read_bytes``: what httpx reads from its socket at a time, for every httpx client of this
    process (httpcore's HTTP/1.1 connections), set by the first client unless the process
    changed httpcore's own 64 KiB; 0 leaves it. A round's ciphertexts and a result arrive
    through httpx's parser in Python, where each read costs about the same whatever its size:
    downloading took 1.5 ms of CPU per MB in 64 KiB reads and 0.45-0.5 in 1 MiB reads
    (loopback, both sides keeping freed memory; docs/serving.md)."""

    def __init__(self, url: str, token: str, *, verify=True, timeout: float = 120.0, chunk_bytes: int = CHUNK,
                 retain_freed: int = RETAIN_FREED, read_bytes: int = READ_BYTES):
        import httpx
        if retain_freed and memory.retained_freed() is None:
            memory.retain_freed(retain_freed)
        if read_bytes:
            read_in_pieces_of(read_bytes)
        self.url = url.rstrip("/")
        self.chunk_bytes = int(chunk_bytes)
        if self.chunk_bytes <= 0 or self.chunk_bytes % BLOCK:
            raise ValueError(f"[serve] chunk_bytes={chunk_bytes}: a positive multiple of {BLOCK} (chunks hold whole "
                             "blocks of the key's digest)")
        self.http = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"}, verify=verify,
                                 timeout=timeout)
        self._described: dict[str, dict] = {}  # the last description read of each model

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def request(self, method: str, path: str, *, expect=(200,), retries: int = 4, stream: bool = False, **kwargs):
        """One request, retried on 429 (after Retry-After), on a gateway's 502/503/504 (a replica
        going away behind it) and on dropped connections. With ``stream``, an expected
        response comes back with its body unread (``iter_raw()``; the caller closes it)."""
        import httpx
        for attempt in range(retries + 1):
            try:
                response = self.http.send(self.http.build_request(method, path, **kwargs), stream=stream)
            except httpx.TransportError:
                if attempt == retries:
                    raise
                time.sleep(0.2 * 2**attempt)
                continue
            if stream and response.status_code not in expect:
                try:
                    response.read()  # a refusal: its message is small, read it as unstreamed
                except httpx.TransportError:
                    if attempt == retries:
                        raise
                    time.sleep(0.2 * 2**attempt)
                    continue
                finally:
                    response.close()
            if response.status_code == 429 and attempt < retries:
                time.sleep(retry_after(response, 1.0))
                continue
            if response.status_code in (502, 503, 504) and attempt < retries:
                time.sleep(retry_after(response, 0.5 * 2**attempt))  # a busy check says when; a gateway may not
                continue
            if response.status_code not in expect:
                try:
                    message = response.json().get("error", response.text)
                except ValueError:
                    message = response.text
                raise ServerError(response.status_code, message, response.headers.get("x-ringfire-unknown"))
            return response
        raise AssertionError("unreachable")

    def download_tensor(self, path: str, load, *, max_entry_bytes: int, max_entries: int = MAX_ENTRIES,
                        retries: int = 4) -> dict:
        """An encrypted tensor the server keeps (a job's result), read and loaded as its bytes
        arrive (never gathered whole) within the limits given; a connection dropped mid-body
        asks again."""
        import httpx
        for attempt in range(retries + 1):
            response = self.request("GET", path, stream=True)
            try:
                return wire.unpack_tensor(response.iter_raw(), load, max_entries=max_entries,
                                          max_entry_bytes=max_entry_bytes)
            except httpx.TransportError:
                if attempt == retries:
                    raise
                time.sleep(0.2 * 2**attempt)
            finally:
                response.close()
        raise AssertionError("unreachable")

    def models(self) -> list[str]:
        return self.request("GET", "/v2/models").json()["models"]

    def sessions(self) -> list[dict]:
        """This tenant's open sessions on the server, least recently used first: id, model,
        created and last used (seconds since the epoch), jobs under way."""
        return self.request("GET", "/v1/sessions").json()["sessions"]

    def close_sessions(self, unused_for: float = 0.0) -> list[str]:
        """Closes this tenant's sessions unused for at least `unused_for` seconds with no job
        under way (by the server's clock); returns their ids. For a tenant at its session limit
        whose clients did not close theirs (a process that was killed)."""
        listed = self.request("GET", "/v1/sessions").json()
        now = float(listed.get("now", time.time()))
        closed = []
        for s in listed["sessions"]:
            if not s["jobs_under_way"] and now - s["used"] >= unused_for:
                self.request("DELETE", f"/v1/sessions/{s['id']}", expect=(200, 404))
                closed.append(s["id"])
        return closed

    def model(self, name: str) -> dict:
        """What the server says of model `name` (its parameters, packing, the keys it needs), read now."""
        self._described[name] = self.request("GET", f"/v2/models/{name}").json()
        return self._described[name]

    def context(self, name: str, **options) -> ckks.Context:
        """The model's parameters as a context (made here; its randomness is the client's).
        ``options`` go to :meth:`ckks.Context.from_bytes`; parameters the server runs without the
        security check (toy rings, for tests) load with it off, which warns."""
        params = self.model(name)["parameters"]
        return ckks.Context.from_bytes(self.request("GET", f"/v2/models/{name}/context").content,
                                       bootstrap=params["bootstrap_options"],
                                       insecure_no_security_check=params["insecure"], **options)

    def description(self, name: str) -> dict:
        """What the server said of model `name` when this client last read it (:meth:`model`),
        read now if it never did."""
        return self._described.get(name) or self.model(name)

    def keygen(self, name: str, ctx, *, master_rotations: bool = False):
        """(secret key, evaluation keys) for model `name` in `ctx` (its parameters): the Galois
        keys of its rotations, or master keys instead, and bootstrapping keys where it bootstraps."""
        params = self.description(name)["parameters"]
        if master_rotations:
            secret_key, keys = ctx.keygen(bootstrap=params["bootstrap"], master_rotations=True)
        else:
            secret_key, keys = ctx.keygen(rotations=params["rotations"], bootstrap=params["bootstrap"])
        if not ctx._deterministic:
            for key in (keys.relin, keys.galois, keys.bootstrap, keys.master):
                if key is not None:
                    _MADE_HERE.add(key)
        return secret_key, keys

    def session(self, name: str, ctx=None, secret_key=None, keys=None, *, progress: bool | None = None,
                master_rotations: bool = False) -> "Session":
        """A session for model `name`: with `ctx`, `secret_key` and `keys` given, those (they must
        match the model's parameters and cover its rotations); else a context and keys made here.
        Evaluation keys the server lacks are uploaded. ``master_rotations``: make and send master
        keys instead of the model's Galois keys (the server derives those; a fraction of the
        bytes and of the client's keygen time, docs/keys.md), where the model accepts them."""
        if ctx is None:
            ctx = self.context(name)
        # The description the context was made from, when this client read it (one request
        # fewer: what matters to the keys is in the fingerprint, which the server checks again).
        info = self._described.get(name)
        if info is None or info["parameters"]["fingerprint"] != f"{ctx.fingerprint:016x}":
            info = self.model(name)
        params = info["parameters"]
        if f"{ctx.fingerprint:016x}" != params["fingerprint"]:
            raise ValueError(f"[serve] this context's parameters are not the model's: make it with "
                             f"client.context({name!r})")
        if master_rotations and not params.get("master_keys"):
            raise ValueError(f"[serve] model {name!r} takes no master keys (it makes no rotations, or its "
                             "parameters leave no room for them under the security bound): send its Galois keys")
        if secret_key is None or keys is None:
            secret_key, keys = self.keygen(name, ctx, master_rotations=master_rotations)
        session = Session(self, name, None, ctx, secret_key, keys, info)
        session.open(progress=progress)
        return session


class Session:
    inline = True  # replies carry the round or the result they announce (False: each read by a request of its own)

    def __init__(self, client: Client, model: str, sid: str, ctx, secret_key, keys, info: dict):
        self.client, self.model, self.id = client, model, sid
        self.ctx, self.secret_key, self.keys, self.info = ctx, secret_key, keys, info
        self.packing = info["parameters"]["packing"]
        self.local = LocalClient(ctx, secret_key, keys)
        self.rounds = 0
        self.closed = False
        self.upload_timings: dict = {}  # per kind, from open or the last upload_keys (bytes, prepare_s, transfer_s)
        self.key_state: dict = {}  # per kind, from open or the last upload_keys: "linked", "uploaded" or "stored"

    # ---- the session's end ------------------------------------------------------------------
    def close(self) -> None:
        """Ends the session on the server (``DELETE /v1/sessions/{id}``): its unfinished jobs
        stopped, its jobs' results deleted. Its keys stay stored for this tenant's next sessions,
        which link them without an upload. A tenant holds a limited number of sessions at once:
        close those it no longer uses (the server closes them itself after they sat unused for
        its ``session_idle``). Closing twice is harmless."""
        if self.id is not None and not self.closed:
            # 404: closed already (by the server, unused); 405: a server of before, which keeps sessions
            self.client.request("DELETE", f"/v1/sessions/{self.id}", expect=(200, 404, 405))
            self.closed = True

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, kind, error, trace) -> None:
        if error is None:
            self.close()
            return
        try:  # the error that ended the block is the one to see, not a failed close after it
            self.close()
        except Exception as e:  # noqa: BLE001
            log.warning("session %s not closed after %s: %s", self.id, kind.__name__, e)

    # ---- keys ---------------------------------------------------------------------------
    def open(self, progress: bool | None = None) -> dict:
        """Opens the session on the server and gives it the evaluation keys the model needs.
        The digests of the keys this client hashed already go with the request that opens it
        (the server links those this tenant stored, so a client that comes back is ready in one
        request). A key the server could not hold (this tenant stores no key of its kind, or
        :meth:`Client.keygen` made it here from the system's randomness) is hashed as it is sent
        and named with its last chunk: one pass over it instead of two. The others are hashed
        first, linked where the server has them, and uploaded otherwise (so with a server that
        takes no key named last). Returns what :meth:`upload_keys` returns; ServerError (422),
        the session closed again, where keys the server stores already do not serve this model
        (Galois keys without rotations it needs): before any is sent."""
        kinds = list(map(self._sent_as, self.info["parameters"]["keys"]))
        one_pass = bool(self.info["parameters"].get("keys_named_last"))
        hashed = {kind: self._hash(kind) for kind in kinds if not one_pass or self._hashed_before(kind)}
        made_here = {kind for kind in kinds if kind not in hashed and self._key(kind) in _MADE_HERE}
        # The first key that may go named last starts serializing while the session opens (its
        # first chunk is serialized whole before it is sent); dropped if it is hashed first after all.
        early = next((kind for kind in kinds if kind not in hashed), None)
        started = None if early is None else _KeyStream(self._key(early), 0, ahead=self.client.chunk_bytes,
                                                        hasher=BlockHasher())
        try:
            opened = self.client.request("POST", "/v1/sessions", expect=(201,), json={
                "model": self.model, "fingerprint": self.info["parameters"]["fingerprint"],
                "keys": {kind: h["digest"] for kind, h in hashed.items()}}).json()
            self.id = opened["id"]
            try:
                refused = opened.get("refused") or {}
                if refused:  # these very keys, stored: sending them would be refused after the upload
                    raise ServerError(422, "; ".join(refused.values()))
                if no_room := opened.get("no_room"):  # as they would be sent
                    raise ServerError(413, "; ".join(no_room.values()))
                linked = set(opened.get("linked", ()))
                stored = set(opened.get("stored_kinds", kinds))  # keys of these kinds are stored: these, perhaps
                if started is not None and early in stored and early not in made_here:
                    started.close()  # hashed first after all: its stream is not needed
                todo = {kind: ("linked" if kind in linked else 0, h) for kind, h in hashed.items()}
                for kind in kinds:
                    if kind in hashed:
                        continue
                    if kind in stored and kind not in made_here:
                        h = self._hash(kind)
                        todo[kind] = ("linked" if self._link(kind, h["digest"]) else 0, h)
                    else:
                        todo[kind] = ("named last", {"key": self._key(kind),
                                                     "stream": started if kind == early else None})
                self.key_state = self._send({kind: todo[kind] for kind in kinds}, progress)
            except ServerError as e:
                if e.status in (413, 422):  # keys this model refuses or has no room for: of no use
                    self.close()
                raise
        finally:
            if started is not None:
                started.close()
        return self.key_state

    def upload_keys(self, progress: bool | None = None) -> dict:
        """Each evaluation key set the session lacks: linked when the server stored it already
        (the same digest), else uploaded in chunks, from the server's offset when an earlier
        upload was interrupted. A key is serialized twice and never held whole beside the keys
        (3.48 GiB at N16_BOOT): once to hash it (its digest, keydigest.py, names it before any
        chunk is sent, and gives every chunk's digest), then again as its chunks are sent.
        Returns {kind: "linked" | "uploaded" | "stored"}; ``upload_timings`` then holds, per
        uploaded kind, its bytes and the seconds spent hashing it here (``prepare_s``) and
        sending it until the server kept it (``transfer_s``)."""
        status = self.client.request("GET", f"/v1/sessions/{self.id}").json()["keys"]
        todo, out = {}, {}
        for kind, st in status.items():
            if st["stored"]:
                out[kind] = "stored"
                continue
            sent = self._sent_as(kind)
            h = self._hash(sent)
            # Master keys for the Galois keys start over: a 409 says where to resume.
            resume = st["received"] if sent == kind and st.get("total") == h["total"] else 0
            todo[sent] = ("linked" if self._link(sent, h["digest"]) else resume, h)
        self.key_state = {**out, **self._send(todo, progress)}
        return self.key_state

    def _sent_as(self, kind: str) -> str:
        """The kind sent for a kind the model needs: master keys for its Galois keys where this
        client holds only those (the server derives the Galois keys)."""
        return "master" if kind == "galois" and self.keys.galois is None and self.keys.master is not None else kind

    def _link(self, kind: str, digest: str) -> bool:
        """Whether the server linked this tenant's stored key of that digest to the session."""
        return self.client.request("POST", f"/v1/sessions/{self.id}/keys/{kind}/link", expect=(200, 404),
                                   json={"digest": digest}).status_code == 200

    def _key(self, kind: str):
        key = getattr(self.keys, kind)
        if key is None:
            raise ValueError(f"[serve] model {self.model!r} needs {kind} keys and these keys hold none: make them "
                             f"with ctx.keygen(rotations=..., bootstrap=...) as client.model({self.model!r}) says")
        return key

    def _hashed_before(self, kind: str) -> bool:
        """Whether this client knows the key's digests already (no pass over it to name it)."""
        return _known_digests(self._key(kind)) is not None

    def _hash(self, kind: str) -> dict:
        """The key of `kind` serialized once to hash it: its digest, its block digests, its size."""
        key, start = self._key(kind), time.perf_counter()
        native = key._res  # the words the digests are of (a write makes a new one)
        known = _known_digests(key)
        if known is not None:
            total, blocks = known
        else:
            hasher = BlockHasher()
            total = key.save_to(hasher)
            blocks = hasher.digests()
            _remember_digests(key, native, total, blocks)
        hashed = time.perf_counter()
        return {"key": key, "total": total, "blocks": blocks, "digest": key_digest(blocks), "hashed": hashed,
                "prepare_s": hashed - start}

    def _send(self, todo: dict, progress) -> dict:
        """{kind: ("linked", "named last" or the byte to resume from, _hash's dict or {"key": key})}:
        the keys not linked, uploaded."""
        out, self.upload_timings = {}, {}
        # Every key hashed in a pass of its own is hashed before any is sent.
        ended = max((h["hashed"] for _, h in todo.values() if "hashed" in h), default=time.perf_counter())
        for kind, (how, h) in todo.items():
            if how == "linked":
                out[kind] = "linked"
                continue
            began = ended  # the requests after the hashing count as the first key's transfer
            named_last = how == "named last"
            total = self._upload(kind, h["key"], 0 if named_last else how, progress, None if named_last else h,
                                 h.get("stream"))
            ended = time.perf_counter()
            self.upload_timings[kind] = {"bytes": total, "prepare_s": 0.0 if named_last else h["prepare_s"],
                                         "transfer_s": ended - began}
            out[kind] = "uploaded"
        return out

    def _upload(self, kind: str, key, start: int, progress, named: dict | None,
                stream: "_KeyStream | None" = None) -> int:
        """The key from byte `start`, one chunk per request, serialized again as it is sent;
        each chunk is held (``chunk_bytes``) until the server kept it, so a chunk refused or
        cut off is sent again as it was (a chunk the server found corrupt, up to
        ``CHUNK_RESENDS`` times). `named`: the key's size, digest and block digests from a
        pass of its own (:meth:`_hash`), where each chunk's digest comes from. None: the key is
        named with its last chunk, hashed as it is serialized here (from byte 0): each chunk is
        serialized whole before its request (its digest goes in its headers) but the first,
        which is sent as it is serialized and checked against the digest of what the server
        kept (a server that names it: ``keys_named_last`` 2); the chunks before the last say
        ``X-Key-Digest: pending``; where the server holds another offset
        (a restart), the key is hashed in a pass of its own and the upload resumes there.
        `stream`: the key's stream from byte 0, started already with a hasher (named last).
        Returns the key's size."""
        step, resent, resume_at = self.client.chunk_bytes, 0, None
        # A server that names what it kept in its answer to a chunk (keys_named_last 2) takes the
        # first chunk of a key named last as it is serialized, without its digest.
        stream_first = self.info["parameters"].get("keys_named_last", 0) >= 2
        if stream is None:
            stream = _KeyStream(key, start, ahead=step, hasher=BlockHasher() if named is None else None)
        hasher = stream.hasher
        try:
            if named is None:  # the envelope's header, its first bytes, says how long the key is
                magic, *_, length = rf_io.STREAM_HEADER.unpack(stream.peek(rf_io.STREAM_HEADER.size))
                if magic != b"RFHE":
                    raise ValueError(f"[serve] {kind} keys serialize without a streamed envelope's header")
                total = rf_io.STREAM_HEADER.size + length + 8  # its header, its payload, its checksum
            else:
                total = named["total"]
            with _progress.progress_bar(total, f"uploading {kind} keys", progress, unit="B") as bar:
                bar.update(start)
                offset, pieces = start, None
                while offset < total:
                    size = min(step, total - offset)
                    # Named last, the first chunk (not the key's last) goes as it is serialized,
                    # without its digest: the server's answer names what it kept, checked here.
                    first_named_last = named is None and offset == 0 and size < total and stream_first
                    if pieces is None:
                        pieces = stream.take(size)
                        if named is None and not first_named_last:
                            pieces.fill()
                    digest, blocks = (named["digest"], named["blocks"]) if named is not None else \
                        self._named_so_far(key, stream, total, offset + size == total)
                    headers = {"Content-Range": f"bytes {offset}-{offset + size - 1}/{total}",
                               "Content-Length": str(size), "X-Key-Digest": digest,
                               "Content-Type": "application/octet-stream"}
                    if not first_named_last:
                        headers["X-Chunk-Digest"] = chunk_digest(digests_of(blocks, offset, size))
                    response = self.client.request("PUT", f"/v1/sessions/{self.id}/keys/{kind}", content=pieces,
                                                   headers=headers, expect=(200, 409, 422))
                    if first_named_last and response.status_code == 200:
                        kept = response.json().get("chunk_digest")
                        if kept != chunk_digest(digests_of(hasher.whole_blocks(), 0, size)):
                            if resent == CHUNK_RESENDS:
                                raise ServerError(422, "the first chunk the server kept does not match what was sent")
                            resent += 1  # its bytes changed on the way: sent again at 0, it starts the upload over
                            continue
                    if response.status_code == 422:
                        if response.headers.get("x-chunk-refused") != "digest" or resent == CHUNK_RESENDS:
                            raise ServerError(422, response.json().get("error", response.text))
                        resent += 1  # its bytes changed on the way: the same chunk again
                        continue
                    if response.status_code == 409:  # the server has a different offset: resume there
                        time.sleep(min(5.0, retry_after(response, 0.0)))
                        received = int(response.headers.get("x-received", "0"))
                        if named is None and received != offset:  # named first, then resumed there
                            resume_at = received
                            break
                        if received != offset:
                            stream.close()
                            pieces.release()
                            stream, offset, pieces = _KeyStream(key, received, ahead=step), received, None
                            bar.reset(total)
                            bar.update(received)
                        continue
                    pieces.release()
                    offset, pieces = offset + size, None
                    bar.update(size)
        finally:
            stream.close()
        if resume_at is not None:
            if pieces is not None:
                pieces.release()
            return self._upload(kind, key, resume_at, progress, self._hash(kind))
        return total

    @staticmethod
    def _named_so_far(key, stream: "_KeyStream", total: int, last: bool) -> tuple[str, bytes]:
        """A key named with its last chunk: the digest its next chunk says (pending, or the
        key's at the last) and the block digests so far (every byte of a chunk is hashed once
        the chunk was read from the stream; at the last, once the save ended)."""
        if not last:
            return PENDING, stream.hasher.whole_blocks()
        stream.finish()
        if stream.hasher.size != total:
            raise ValueError(f"[serve] the key serialized to {stream.hasher.size} bytes, its envelope's header "
                             f"says {total}")
        blocks = stream.hasher.digests()
        _remember_digests(key, key._res, total, blocks)
        return key_digest(blocks), blocks

    # ---- inference ---------------------------------------------------------------------------
    def submit(self, enc: EncryptedTensor, idempotency_key: str | None = None) -> str:
        """Sends the encrypted input; returns the job's id at once."""
        return self._submit(enc, idempotency_key, wait=0)["job"]

    def _submit(self, enc: EncryptedTensor, idempotency_key: str | None, wait: float) -> dict:
        """The job made for `enc`; with `wait`, its first settled status too (``status``), where the
        server gives it, with the round it asks for or the result (``carried``) where it sends them.
        A session the server closed meanwhile (unused for its ``session_idle``) is opened again with
        the same keys, which the server links (no upload), and the input sent there; one this
        client closed is not."""
        try:
            return self._submit_once(enc, idempotency_key, wait)
        except ServerError as e:
            if e.status != 404 or e.unknown != "session" or self.closed:
                raise
        log.info("session %s was closed by the server (unused); opening it again", self.id)
        self.open(progress=False)
        return self._submit_once(enc, idempotency_key, wait)

    def _submit_once(self, enc: EncryptedTensor, idempotency_key: str | None, wait: float) -> dict:
        import httpx
        parts = wire.tensor_parts(enc.cts, enc.batch, enc.packing, enc.period, enc.sample_shape, enc.element_slots)
        key = idempotency_key or uuid.uuid4().hex
        for attempt in range(3):
            response = self.client.request("POST", f"/v1/sessions/{self.id}/infer", content=wire.Blocks(parts),
                                           expect=(200, 202), params=self._wait_params(wait), stream=True,
                                           headers={"Idempotency-Key": key, "Content-Type": "application/octet-stream",
                                                    "Content-Length": str(wire.parts_size(parts))})
            try:
                return self._reply(response)
            except httpx.TransportError:  # dropped before the job's id arrived: the same key names it again
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _limits(self) -> dict:
        """What a container from the server may hold, each entry checked before it is read."""
        return {"max_entries": MAX_ENTRIES, "max_entry_bytes": self.ctx._largest_object_bytes()}

    def _wait_params(self, wait: float) -> dict | None:
        if not wait:
            return None
        return {"wait": wait, "inline": 1} if self.inline else {"wait": wait}

    def _reply(self, response) -> dict:
        """A reply's fields, its body read and closed. One that carries data (wire.REPLY_TYPE) has
        it loaded as it arrives into its status (``carried``: the container's fields); where the
        connection drops after the status arrived, the status comes without it (the round or the
        result is then read as before)."""
        import httpx
        try:
            if not response.headers.get("content-type", "").startswith(wire.REPLY_TYPE):
                response.read()
                return response.json()
            head: dict = {}
            try:
                carried = wire.unpack_reply(response.iter_raw(), self.ctx.load, head, **self._limits())
            except httpx.TransportError:
                if not isinstance(head.get("status"), dict):
                    raise
                return head
            if not isinstance(head.get("status"), dict):
                raise wire.WireError("[serve] a reply that carries data came without its job's status")
            head["status"]["carried"] = carried
            return head
        finally:
            response.close()

    def wait(self, job: str, progress: bool | None = None, timeout: float | None = None,
             status: dict | None = None) -> EncryptedTensor:
        """Answers the job's rounds until it is done, then downloads the result (the status
        requests wait on the server until the job moves on). ``status``: one the server gave
        already (with the submission, or with the last answer), used before asking again. A
        status that carries its round or the result (a reply with ``inline``) saves the request
        that would read it."""
        deadline = None if timeout is None else time.monotonic() + timeout
        answered = 0  # the last round answered: never twice (a status read can lag the worker)
        seen = ""
        with _progress.progress_bar(None, "encrypted inference (server)", progress, unit="step") as bar:
            while True:
                if status is None:
                    status = self.client.request("GET", f"/v1/jobs/{job}",
                                                 params={"wait": STATUS_WAIT, "seen": seen, "settled": 1}).json()
                seen = f"{status['state']}:{status.get('round', {}).get('number', '')}"
                if status["progress"]:
                    bar.set_postfix_str(f"{status['progress'].get('layer', '')} "
                                        f"{status['progress'].get('done')}/{status['progress'].get('total')}")
                if status["state"] == "done":
                    break
                if status["state"] == "failed":
                    raise ServerError(410, f"job {job} failed: {status['error']}")
                number = status.get("round", {}).get("number", 0) if status["state"] == "awaiting_client" else 0
                announced, status = status, None
                if number > answered:
                    took, status = self._answer(job, number, announced)
                    if took:
                        answered = number
                        bar.update()
                        continue
                    # Not served at this moment: read the status again soon, not after the
                    # long poll's wait for a change the job may never make.
                    seen = ""
                    time.sleep(0.05)
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError(f"[serve] job {job} still {announced['state']} after {timeout:g} s")
        fields = status.get("carried") or self.client.download_tensor(
            f"/v1/jobs/{job}/result", self.ctx.load, **self._limits())
        return EncryptedTensor(fields["cts"], fields["batch"], self.ctx, fields["packing"], fields["period"],
                               fields["sample_shape"], fields["element_slots"])

    def _answer(self, job: str, number: int, status: dict) -> tuple[bool, dict | None]:
        """Answers round ``number`` (announced by ``status``, which may carry its ciphertexts),
        and returns whether the server took the answer, with the job's next settled status where
        the server gave it with its reply. False when the server does not serve the round at
        this moment (409: a status read that ran ahead of the round's question, or the job moved
        on), for the next status read to say whether to ask again."""
        layer = status.get("round", {}).get("layer")
        if "carried" in status and layer is not None:
            node, shape, clip = wire.node_from_fields(layer)
            x = status["carried"]["cts"]
        else:
            question = self._question(job, number)
            if question is None:
                return False, None
            node, shape, clip, x = question
        with KEY_HOLDER_TURNS.turn():
            if self.packing == "inter":  # one sample per ciphertext: the layer on its slot vector
                out, out_shape = np.array([self.local.apply_vector(node, x.flat[0])], dtype=object), (1,)
            else:
                out, out_shape = self.local.apply(node, x, shape, clip)
            parts = wire.tensor_parts(out, batch=0, sample_shape=out.shape)
        # 409: answered already (a retry after a lost response) or no longer awaited (the job
        # ended): the next status read says which.
        # The reply waits for the job's next settled status (a server that does not give it
        # answers at once, and the next status read asks).
        import httpx
        reply = self.client.request("POST", f"/v1/jobs/{job}/rounds/{number}", content=wire.Blocks(parts),
                                    expect=(200, 409), params=self._wait_params(STATUS_WAIT), stream=True,
                                    headers={"X-Ringfire-Out-Shape": json.dumps(list(out_shape)),
                                             "Content-Type": "application/octet-stream",
                                             "Content-Length": str(wire.parts_size(parts))})
        self.rounds += 1
        if reply.status_code == 409:
            reply.close()
            return True, None
        try:
            return True, self._reply(reply).get("status")
        except httpx.TransportError:  # taken (the server said so); the next status read goes on
            return True, None

    def _question(self, job: str, number: int):
        """Round ``number``'s layer and ciphertexts, read by a request of their own: (node, shape,
        clip, ciphertexts), or None where the server does not serve the round at this moment."""
        import httpx
        # Streamed: the ciphertexts load as they arrive, never gathered whole (a round is tens of MiB).
        response = self.client.request("GET", f"/v1/jobs/{job}/rounds/{number}", expect=(200, 409), stream=True)
        try:
            if response.status_code == 409:
                return None
            node, shape, clip = wire.node_from_json(response.headers["x-ringfire-layer"])
            x = wire.unpack_tensor(response.iter_raw(), self.ctx.load, **self._limits())["cts"]
        except httpx.TransportError:  # dropped mid-body: the next status read says whether to ask again
            return None
        finally:
            response.close()
        return node, shape, clip, x

    def infer_encrypted(self, enc: EncryptedTensor, progress: bool | None = None,
                        idempotency_key: str | None = None) -> EncryptedTensor:
        made = self._submit(enc, idempotency_key, wait=STATUS_WAIT)
        return self.wait(made["job"], progress, status=made.get("status"))

    def infer(self, x, progress: bool | None = None) -> np.ndarray:
        """The model's outputs on `x` (NumPy, batch first): encrypted here, computed by the
        server, decrypted here."""
        # With the secret key: seeded ciphertexts, half the bytes of public-key ones; at the
        # level the model's first layers need (fewer limbs than the top, where it says).
        x = np.asarray(x, dtype=np.float64)
        shape = (self.info.get("inputs") or [{}])[0].get("shape")  # [-1, *the sample's]
        if shape is not None and (x.ndim < 1 or list(x.shape[1:]) != list(shape[1:])):  # before it is encrypted
            raise ValueError(f"[serve] model {self.model!r} takes inputs of shape (batch, "
                             f"{', '.join(map(str, shape[1:]))}), got {x.shape}")
        level = encryption_level(self.ctx, self.info["parameters"].get("input_level", self.ctx.max_level), x)
        with KEY_HOLDER_TURNS.turn():
            enc = self.ctx.encrypt_batch(x, self.secret_key, packing=self.packing, level=level)
        out = self.infer_encrypted(enc, progress)
        with KEY_HOLDER_TURNS.turn():
            return self.ctx.decrypt_batch(out, self.secret_key)


PIECE = 1 << 20  # what a key is sent in
STATUS_WAIT = 10  # seconds a status read (or a reply that carries one) may wait on the server for a change
_END = object()


class _Stopped(Exception):
    """Raised inside a key's save when its reader went away (ends the serializing thread)."""


class _KeyStream:
    """A key's bytes from `start` on, serialized on a thread of its own (a key's ``save_to``
    pushes its bytes; the uploader pulls them a chunk at a time), at most `ahead` bytes ahead
    of the reader: a chunk's worth, so the next chunk is ready when the last one was kept.
    A save lends its buffers only for each write: they are copied."""

    def __init__(self, key, start: int, ahead: int = 16 * PIECE, hasher: BlockHasher | None = None):
        self._skip, self.hasher = start, hasher  # with a hasher, every byte written is hashed first
        self._pieces = _Handoff(max(1, ahead // PIECE))
        self._thread = threading.Thread(target=self._save, args=(key,), name="ringfire-key-stream", daemon=True)
        self._thread.start()
        self._rest = b""  # the part of a piece the last chunk did not take

    def _save(self, key) -> None:
        try:
            key.save_to(self)
            self._pieces.end()
        except _Stopped:
            pass
        except BaseException as e:  # noqa: BLE001 - the reader raises it
            self._pieces.end(e)

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        if self.hasher is not None:
            self.hasher.update(view)
        skip = min(self._skip, len(view))
        self._skip -= skip
        for i in range(skip, len(view), PIECE):
            if not self._pieces.put(bytes(view[i:i + PIECE])):
                raise _Stopped
        return len(view)

    def take(self, size: int) -> "_ChunkBody":
        """The next `size` bytes: a request body whose pieces are read from the stream as
        httpx sends them (the first chunk need not be serialized whole before its first byte
        goes out) and kept, so that the chunk can be sent again as it was."""
        return _ChunkBody(self, size)

    def peek(self, size: int) -> bytes:
        """The first `size` bytes still to be read, left in the stream."""
        while len(self._rest) < size:
            piece = self._pieces.get()
            if piece is None:
                raise ValueError(f"[serve] the key's serialization ended within its first {size} bytes")
            self._rest += piece
        return self._rest[:size]

    def finish(self) -> None:
        """After its last byte was read: waits for the key's save to end (every byte written,
        and hashed with a hasher), raising its error, or if it wrote more than was read."""
        if self._rest or self._pieces.get() is not None:
            raise ValueError("[serve] the key's serialization is longer than its envelope's header says")
        self._thread.join()

    def _next(self, most: int) -> bytes:
        piece = self._rest or self._pieces.get()
        if piece is None:
            raise ValueError(f"[serve] the key's serialization ended {most} bytes early")
        self._rest = piece[most:]
        return piece[:most]

    def close(self) -> None:
        self._pieces.stop()
        self._thread.join()


class _ChunkBody:
    """One chunk's bytes as pieces, read from a :class:`_KeyStream` on the first pass and
    kept: every pass (httpx sends a body again when a request is retried) yields the same
    bytes, and a pass cut off mid-way resumes where the stream stopped. ``release`` lets the
    bytes go once the server kept the chunk: httpx's response and its stream refer to each
    other, so the request (and its body) would otherwise live until Python's cycle collector
    ran, a chunk at a time piling up (500 MiB over N16_BOOT's 3.7 GB before it did)."""

    def __init__(self, stream: _KeyStream, size: int):
        self._stream, self._left, self._pieces = stream, size, []

    def __iter__(self):
        kept = len(self._pieces)
        yield from self._pieces[:kept]
        while self._left:
            piece = self._stream._next(self._left)
            self._pieces.append(piece)
            self._left -= len(piece)
            yield piece

    def fill(self) -> None:
        """Reads the chunk's bytes from the stream now (they are kept for every pass)."""
        for _ in self:
            pass

    def release(self) -> None:
        self._pieces, self._left = [], 0


class _Handoff:
    """Pieces from one thread to another, at most `most` waiting; the writer learns when the
    reader stopped (``put`` returns False), the reader gets None at the end or the writer's error."""

    def __init__(self, most: int):
        self._queue: queue.Queue = queue.Queue(most)
        self._stopped = threading.Event()

    def put(self, item) -> bool:
        while not self._stopped.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def end(self, error: BaseException | None = None) -> None:
        self.put(_END if error is None else error)

    def get(self):
        item = self._queue.get()
        if item is _END:
            return None
        if isinstance(item, BaseException):
            raise item
        return item

    def stop(self) -> None:
        self._stopped.set()
