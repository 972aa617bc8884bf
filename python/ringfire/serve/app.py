"""The HTTP service: Open Inference Protocol v2 where it fits (health, model metadata),
and what encrypted inference adds (sessions, resumable key uploads, jobs with
client-aided rounds, streamed results). Every body is bounded before it is read
(``Content-Length`` against the route's limit, then a counted read), every refusal is
a 4xx with ``{"error": ...}`` that names the problem, and a tenant only ever sees its
own sessions, keys and jobs (another tenant's ids answer 404, like unknown ones).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import secrets
import sqlite3
import threading
import time

import anyio
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from .. import __version__, memory
from . import wire
from .auth import TokenBook, tenant_of
from .config import ServeConfig
from .host import CheckBusy, Host, NotForThisModel, StoredKeysDamaged
from .jobs import Job, JobRunner, QueueFull
from .keychecks import KeyChecks
from .keydigest import BLOCK, PENDING, aligned
from .metrics import Metrics, RequestTimer
from .retention import Retention
from .store import TERMINAL, ChunkBusy, Store, TenantBusy

log = logging.getLogger("ringfire.serve")
JSON_LIMIT = 64 * 1024
# The states a settled status read answers with: each asks something of the client.
SETTLED = ("awaiting_client", *TERMINAL)
_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+)$")
_DIGEST = re.compile(r"^[0-9a-f]{64}$")
_OLD_CLIENT = ("this server names keys by their block digest (X-Key-Digest, X-Chunk-Digest, {\"digest\"}; "
               "ringfire.serve.keydigest), not by a plain SHA-256: update the client")


def refuse(status: int, message: str, headers: dict | None = None):
    raise HTTPException(status, detail=message, headers=headers)


class NoRoom(Exception):
    """Stored keys that would take their tenant past its stored bytes in this session (413)."""


async def off_loop(fn, *args):
    """``fn(*args)`` on a worker thread. Every store call goes through here (or runs in a sync
    route, which FastAPI puts on a thread): one may wait for another process's lock, up to the
    store's busy timeout, on its thread's own connection, and meanwhile the event loop goes on
    answering health probes, other tenants and uploads."""
    return await anyio.to_thread.run_sync(fn, *args)


async def each_of(parts: list):
    for part in parts:
        yield part


async def blocks_of(f, block: int = 1 << 20):
    """An open file's bytes in blocks, each read on a worker thread; closed at the end."""
    try:
        while piece := await off_loop(f.read, block):
            yield piece
    finally:
        f.close()


async def body_pieces(request: Request, limit: int, what: str):
    """The body as it arrives, at most `limit` bytes: its declared length is checked before
    any is read, and the read stops at the limit whatever the sender does."""
    declared = request.headers.get("content-length")
    if declared is None:
        refuse(411, f"{what}: send a Content-Length (bodies are bounded before they are read)")
    if not declared.isdigit():
        refuse(400, f"{what}: Content-Length {declared!r} is not a number")
    if int(declared) > limit:
        refuse(413, f"{what}: {int(declared)} bytes; this endpoint takes at most {limit}")
    size = 0
    async for piece in request.stream():
        size += len(piece)
        if size > min(limit, int(declared)):
            refuse(413, f"{what}: more bytes than the Content-Length said")
        if piece:
            yield piece
    if size != int(declared):
        refuse(400, f"{what}: {size} bytes arrived, Content-Length said {declared}")


SMALL_PIECE = 4096  # pieces below this are gathered (a sender dripping bytes cannot make a list of objects)


async def read_pieces(request: Request, limit: int, what: str) -> list[bytes]:
    """The whole body as the pieces it arrived in (bounded as :func:`body_pieces` bounds it),
    for ``wire.unpack_tensor``: not joined into one more copy of it. Small pieces are gathered
    into larger ones, so a body costs about its own size however it was cut."""
    pieces, small = [], bytearray()
    async for piece in body_pieces(request, limit, what):
        if len(piece) >= SMALL_PIECE and not small:
            pieces.append(piece)
            continue
        small += piece
        if len(small) >= 16 * SMALL_PIECE:
            pieces.append(bytes(small))
            small.clear()
    if small:
        pieces.append(bytes(small))
    return pieces


async def read_body(request: Request, limit: int, what: str) -> bytes:
    """The whole body as one bytes object (small bodies: JSON)."""
    return b"".join(await read_pieces(request, limit, what))


async def read_json(request: Request, what: str) -> dict:
    body = await read_body(request, JSON_LIMIT, what)
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        refuse(400, f"{what}: the body is not JSON")
    if not isinstance(data, dict):
        refuse(400, f"{what}: expected a JSON object")
    return data


class RateLimiter:
    """A token bucket per tenant: `rate` requests per second, bursts of twice that."""

    def __init__(self, rate: float):
        self.rate, self.burst = rate, 2 * rate
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, tenant: str) -> float:
        """0 if the request may go ahead, else the seconds until it may."""
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(tenant, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens < 1:
                self._buckets[tenant] = (tokens, now)
                return (1 - tokens) / self.rate
            self._buckets[tenant] = (tokens - 1, now)
            return 0.0


class ProcessHeader:
    """ASGI middleware naming the process that answered (``X-Ringfire-Process``, an opaque
    nonce; the store's server_processes table maps it to a host and pid): with replicas,
    which one served a request (logs, tests)."""

    def __init__(self, app, process: str):
        self.app, self.header = app, (b"x-ringfire-process", process.encode())

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_named(message):
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), self.header]
            await send(message)
        return await self.app(scope, receive, send_named)


class Heartbeat:
    """This process's beat in the store every few seconds (with its host and pid), so that
    others know it lives; with a store shared by replicas, the unfinished jobs of processes
    silent for longer (or gone from this host) are reported failed."""

    def __init__(self, store: Store, process: str, config: ServeConfig):
        self.store, self.process, self.shared = store, process, config.shared_store
        self.silent = config.silent_seconds
        self.period = min(2.0, self.silent / 4)  # a few beats fit in the silence that means death
        self._stop = threading.Event()
        self._join()
        store.settle_journal()
        if self.shared:
            self.sweep()
        else:
            restarted = store.fail_unfinished("server restarted while the job was unfinished; submit it again")
            if restarted:
                log.warning("%d jobs left unfinished by the previous server process marked failed", restarted)
        self._thread = threading.Thread(target=self._run, name="ringfire-heartbeat", daemon=True)
        self._thread.start()

    def _join(self) -> None:
        """The first beat; refused where a plain server would share its store, or replicas
        theirs with a plain server."""
        others = self.store.join(self.process, self.shared, self.silent)
        if others:
            p = others[0]
            kind = "replica" if p["shared"] else "server"
            raise RuntimeError(f"[serve] the store {str(self.store.root)!r} is in use by another {kind} (pid {p['pid']} "
                               f"on {p['host']}, seen {time.time() - p['beat']:.0f} s ago): "
                               + ("replicas share a store only with replicas of the same service"
                                  if self.shared else "give this server a store of its own"))

    def sweep(self) -> int:
        lost = self.store.fail_orphans(f"the server process running the job stopped (silent for "
                                       f"{self.silent:g} s, or gone); submit it again", self.silent)
        if lost:
            log.warning("%d jobs of server processes that stopped marked failed", lost)
        return lost

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self.store.beat(self.process, self.shared)
                if self.shared:
                    self.sweep()
            except Exception:  # noqa: BLE001 - a busy or closed store: the next beat tries again
                log.exception("heartbeat")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.store.leave(self.process)


def create_app(config: ServeConfig) -> FastAPI:
    tokens = TokenBook(config.tokens)
    if config.retain_freed:
        # Request and response bodies, serialized ciphertexts and their arrays are C-library
        # buffers of 128 KiB and more: kept mapped, the kernel does not map and zero them anew
        # for every request.
        memory.retain_freed(config.retain_freed)
    host = Host(config)  # the model and parameters first: a server that cannot start leaves no store behind
    store = Store(config.store, shared=config.shared_store)
    # An opaque name, in responses and on jobs; the store maps it to a host and pid for operators.
    process = secrets.token_hex(6)
    heartbeat = Heartbeat(store, process, config)
    metrics = Metrics()
    checks = KeyChecks(host, store, metrics)
    runner = JobRunner(host, store, config, metrics, process, key_checks=checks)
    retention = Retention(store, config, metrics)
    limiter = RateLimiter(config.requests_per_second)
    state = {"stopping": False}

    @contextlib.asynccontextmanager
    async def lifespan(app):
        # A worker thread started and its store connection opened before the first request:
        # the first call through off_loop took a client's first POST /v1/sessions 8.9-9.6 ms
        # (the next ones 0.6-0.8), 1.7 ms after this.
        await off_loop(store.count_sessions, "")
        await off_loop(retention.start)
        metrics.thread_cpu.event_loop = threading.get_native_id()
        yield
        state["stopping"] = True
        failed = await anyio.to_thread.run_sync(runner.stop, config.drain_timeout)
        retention.stop()
        checks.close()
        heartbeat.stop()
        store.close()
        log.info("stopped; %d unfinished jobs marked failed", failed)

    app = FastAPI(title="ringfire serve", version=__version__, lifespan=lifespan,
                  description="Encrypted inference: the server holds the model and the client's evaluation keys; "
                              "the secret key never leaves the client. See docs/serving.md.")
    app.state.runner, app.state.store, app.state.host, app.state.metrics = runner, store, host, metrics
    app.state.key_checks, app.state.retention = checks, retention

    # ---- errors and metrics ---------------------------------------------------------------
    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException):
        metrics.refused.labels(str(exc.status_code)).inc()
        return JSONResponse({"error": exc.detail, "status": exc.status_code}, exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError):
        metrics.refused.labels("422").inc()
        return JSONResponse({"error": f"malformed request: {exc.errors()}", "status": 422}, 422)

    @app.exception_handler(sqlite3.OperationalError)
    async def store_busy(request: Request, exc: sqlite3.OperationalError):
        if "locked" not in str(exc) and "busy" not in str(exc):
            return await internal_error(request, exc)
        # Another process held the store past the busy timeout: the request may be sent again.
        metrics.refused.labels("503").inc()
        return JSONResponse({"error": "the store is busy (another process holds its lock); try again",
                             "status": 503}, 503, headers={"Retry-After": "1"})

    @app.exception_handler(TenantBusy)
    async def tenant_busy(request: Request, exc: TenantBusy):
        metrics.refused.labels("503").inc()
        return JSONResponse({"error": str(exc), "status": 503}, 503, headers={"Retry-After": "1"})

    @app.exception_handler(ClientDisconnect)
    async def client_gone(request: Request, exc: ClientDisconnect):
        # The client went away mid-body (a dropped connection; an upload resumes from its last
        # kept chunk): nobody reads this answer, and it is no fault of the server's.
        log.info("client disconnected during %s %s", request.method, request.url.path)
        metrics.refused.labels("499").inc()
        return JSONResponse({"error": "the client disconnected before its request arrived whole", "status": 499},
                            499)

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception):
        log.exception("internal error on %s %s", request.method, request.url.path)
        return JSONResponse({"error": f"internal error: {type(exc).__name__}", "status": 500}, 500)

    app.add_middleware(RequestTimer, metrics=metrics)
    app.add_middleware(ProcessHeader, process=process)

    # On the event loop, not a worker thread: a hash and comparisons in memory, cheaper than
    # the hand-off FastAPI makes for a plain function, and every authenticated request pays it.
    async def tenant(request: Request) -> str:
        who = tenant_of(request.headers.get("authorization"), tokens.current())
        if who is None:
            refuse(401, "missing or unknown bearer token (Authorization: Bearer <token>)",
                   {"WWW-Authenticate": "Bearer"})
        wait = limiter.take(who)
        if wait:
            refuse(429, f"more than {config.requests_per_second:g} requests per second", {"Retry-After": str(
                max(1, round(wait)))})
        return who

    def own_session(sid: str, who: str) -> dict:
        session = store.session(sid, who)
        if session is None:
            idle = f" or after {config.session_idle:g} s unused" if config.session_idle else ""
            refuse(404, f"no session {sid} (never opened, or closed: by its client{idle}); open a new one (keys "
                        f"this tenant stored are linked again, not sent)", {"X-Ringfire-Unknown": "session"})
        return session

    def own_job(jid: str, who: str) -> dict:
        job = store.job(jid, who)
        if job is None:
            refuse(404, f"no job {jid}", {"X-Ringfire-Unknown": "job"})
        return job

    # ---- health and models (Open Inference Protocol v2) ----------------------------------
    @app.get("/v2/health/live")
    async def live():
        return {"live": True}

    @app.get("/v2/health/ready")
    async def ready():
        if state["stopping"]:
            refuse(503, "shutting down")
        return {"ready": True}

    @app.get("/v2/models")
    async def models(who: str = Depends(tenant)):
        return {"models": [config.name]}

    def own_model(name: str):
        if name != config.name:
            refuse(404, f"no model {name!r}; this server has {config.name!r}")

    @app.get("/v2/models/{name}")
    async def model(name: str, who: str = Depends(tenant)):
        own_model(name)
        return host.describe()

    @app.get("/v2/models/{name}/context")
    async def context(name: str, who: str = Depends(tenant)):
        own_model(name)
        return Response(host.ctx.to_bytes(), media_type="application/octet-stream")

    # ---- sessions and keys ------------------------------------------------------------------
    @app.post("/v1/sessions", status_code=201)
    async def new_session(request: Request, who: str = Depends(tenant)):
        body = await read_json(request, "session")
        own_model(str(body.get("model")))
        if body.get("fingerprint") != host.fingerprint:
            refuse(409, f"the client's parameters (fingerprint {body.get('fingerprint')!r}) are not the model's "
                        f"({host.fingerprint}): make the context from GET /v2/models/{config.name}/context")
        digests = body.get("keys", {})
        if not isinstance(digests, dict):
            refuse(400, "keys: {kind: digest} of the keys to link from this tenant's stored ones")
        for kind, digest in digests.items():
            known_kind(kind)
            if not isinstance(digest, str) or not _DIGEST.match(digest):
                refuse(400, f"keys.{kind}: the key's digest, 64 lowercase hex digits")
        sid, linked, stored, refused, no_room = await off_loop(create_session, who, digests)
        return {"id": sid, "keys": host.needs, "linked": linked, "stored_kinds": stored, "refused": refused,
                "no_room": no_room}

    def create_session(who: str, digests: dict) -> tuple[str, list[str], list[str], dict, dict]:
        """A new session, with the keys of `digests` this tenant stored already linked (a client
        that comes back is ready in one request); returns its id, the kinds linked, the kinds
        of the keys this tenant stores (a client need not hash a key of another kind before it
        sends it: no stored key could be linked in its place) and, per kind, why stored keys
        named were refused (they do not serve this model: sending them would be refused too) and
        why others did not fit the tenant's stored bytes (NoRoom)."""
        sid = store.create_session(who, config.name, host.fingerprint, most=config.tenant_sessions)
        if sid is None:
            idle = (f", or one unused for {config.session_idle:g} s is closed by the server" if config.session_idle
                    else "")
            refuse(429, f"at most {config.tenant_sessions} sessions per tenant: close one (GET /v1/sessions lists "
                        f"them, DELETE /v1/sessions/{{id}} closes one; Client.close_sessions() in rf.serve){idle}")
        linked, refused, no_room = [], {}, {}
        # Master keys last: room made for what they derive never takes keys this request links.
        for kind, digest in sorted(digests.items(), key=lambda named: named[0] == "master"):
            try:
                if linked_if_they_serve(sid, kind, who, digest):
                    linked.append(kind)
            except NotForThisModel as e:
                refused[kind] = f"the stored {kind} keys with digest {digest} do not serve this model: {e}"
            except NoRoom as e:
                no_room[kind] = str(e)
        metrics.key_hits.inc(len(linked))
        return sid, linked, store.stored_kinds(who, host.params_id), refused, no_room

    def linked_if_they_serve(sid: str, kind: str, who: str, digest: str) -> bool:
        """Links the tenant's stored `kind` keys named `digest` into the session once they are
        known to serve this model: False where it stores none for these parameters (or the
        stored copy no longer loads: forgotten, to be sent again); NotForThisModel where they
        do not serve it (Galois or master keys without its rotations, kept for another model of
        these parameters); NoRoom where master keys would derive more than the tenant has room
        for. A refusal leaves the session's keys as they were."""
        size = store.linkable(who, digest, kind, host.params_id)
        if size is None:
            return False
        if not serves(sid, kind, who, digest):
            return False
        if kind == "master":
            room_for_derivation(who, digest)
        return store.link(sid, kind, who, digest, size)

    def room_for_derivation(who: str, digest: str) -> None:
        """Master keys going into a session of a model whose Galois keys were never derived from
        them (kept for another model of these parameters): what the derivation will write beside
        them is reserved against the tenant now, as an upload reserves it (keys no session links
        make room first), so that the first job's derivation cannot take the tenant past its
        stored bytes; NoRoom where it does not fit."""
        if host.derivation_kept(store.blob_path(who, digest)):
            return
        with store.tenant_lock(who):
            reserved, beside = store.beside_of(who, digest)
            needed = beside + host.beside_bytes_expected("master")
            if needed <= reserved:  # the upload's reservation still covers it (no derivation yet)
                return
            over = store.stored_bytes(who) + needed - max(reserved, beside) - config.tenant_bytes
            if over > 0 and retention.make_room(who, over, keep=digest) < over:
                raise NoRoom(f"this tenant would store more than {config.tenant_bytes} bytes: the Galois keys this "
                             f"model derives from the stored master keys {digest} take {needed - beside} more beside "
                             f"them; close sessions it no longer uses to free their keys")
            store.reserve_beside(who, digest, needed)

    def serves(sid: str, kind: str, who: str, digest: str, wait: bool = False) -> bool:
        """Whether the tenant's stored keys `digest` may take the session's `kind`: NotForThisModel
        where they do not serve this model; False where they no longer load (forgotten). Keys
        that cannot be checked now (another link's check is reading keys) take a kind the session
        lacks unchecked (its job checks them), and never replace the session's own: 503
        (``wait``: the check waits its turn instead, for an upload that arrived whole)."""
        try:
            problem = host.coverage_problem(kind, store.blob_path(who, digest), wait=wait)
        except StoredKeysDamaged as e:
            checks.forget_damaged(who, e)
            return False
        except CheckBusy as e:
            if kind in (store.session(sid, who) or {"keys": {}})["keys"]:
                refuse(503, f"{e}: these would replace the session's {kind} keys unchecked; retry",
                       {"Retry-After": "1"})
            return True
        if problem:
            raise NotForThisModel(problem)
        return True

    def key_status(session: dict) -> dict:
        out = {}
        for kind in host.needs:
            if kind == "galois" and "master" in session["keys"] and host.takes_master:
                out[kind] = {"stored": True, "derived_from": "master", **session["keys"]["master"]}
            elif kind in session["keys"]:
                out[kind] = {"stored": True, **session["keys"][kind]}
            else:
                up = store.upload_state(session["id"], kind)
                out[kind] = {"stored": False, "received": up["received"] if up else 0,
                             "total": up["total"] if up else None, "max_bytes": host.max_key_bytes(kind)}
                refused = checks.failure(session["id"], kind)
                if refused:
                    out[kind]["error"] = refused
        return out

    @app.get("/v1/sessions")
    def sessions(who: str = Depends(tenant)):
        """This tenant's sessions, least recently used first (times in seconds since the epoch):
        which to close (``DELETE /v1/sessions/{id}``) where a client lost track of its own."""
        return {"sessions": store.sessions_of(who), "limit": config.tenant_sessions,
                "closed_when_unused_for": config.session_idle or None, "now": time.time()}

    @app.get("/v1/sessions/{sid}")
    def session(sid: str, who: str = Depends(tenant)):
        s = own_session(sid, who)
        keys = key_status(s)
        return {"id": sid, "model": s["model"], "keys": keys, "missing": [k for k, v in keys.items() if not v["stored"]]}

    def known_kind(kind: str):
        if not host.accepts(kind):
            refuse(404, f"this model takes keys {host.needs}" + (" (master keys for the Galois keys)"
                                                                 if host.takes_master else "") + f", not {kind!r}")

    @app.post("/v1/sessions/{sid}/keys/{kind}/link")
    async def link(sid: str, kind: str, request: Request, who: str = Depends(tenant)):
        await off_loop(own_session, sid, who)
        known_kind(kind)
        body = await read_json(request, "link")
        if "digest" not in body and "sha256" in body:
            refuse(400, _OLD_CLIENT)
        digest = str(body.get("digest", ""))
        if not _DIGEST.match(digest):
            refuse(400, "digest: the key's digest, 64 lowercase hex digits")
        return await off_loop(link_key, sid, kind, who, digest)

    def link_key(sid: str, kind: str, who: str, digest: str) -> dict:
        store.touch_session(sid)
        try:
            if not linked_if_they_serve(sid, kind, who, digest):
                refuse(404, f"no stored {kind} keys for this model's parameters with digest {digest}: upload them")
        except NotForThisModel as e:
            refuse(422, f"the stored {kind} keys with digest {digest} do not serve this model: {e}")
        except NoRoom as e:
            refuse(413, str(e))
        metrics.key_hits.inc()
        checks.forget(sid, kind)
        return {"stored": True, "digest": digest}

    @app.put("/v1/sessions/{sid}/keys/{kind}")
    async def upload(sid: str, kind: str, request: Request, who: str = Depends(tenant)):
        known_kind(kind)
        match = _RANGE.match(request.headers.get("content-range", ""))
        if not match:
            refuse(400, "Content-Range: bytes FIRST-LAST/TOTAL is required (resumable chunked upload)")
        first, last, total = (int(v) for v in match.groups())
        whole = request.headers.get("x-key-digest", "")
        if not whole and "x-content-sha256" in request.headers:
            refuse(400, _OLD_CLIENT)
        if whole != PENDING and not _DIGEST.match(whole):
            refuse(400, "X-Key-Digest: the whole key's digest (keydigest.py; 64 lowercase hex digits) is required, "
                        f"or {PENDING!r} on the chunks before the key's last")
        if total > host.max_key_bytes(kind):
            refuse(413, f"{kind} keys for these parameters take at most {host.max_key_bytes(kind)} bytes; "
                        f"{total} declared")
        if not first <= last < total:
            refuse(416, f"bad range {first}-{last}/{total}: a chunk's bytes lie within the key's {total}")
        if last - first + 1 > config.chunk_bytes:
            refuse(416, f"bad range {first}-{last}/{total}: chunks of at most {config.chunk_bytes} bytes")
        if whole == PENDING and last == total - 1:
            refuse(400, f"X-Key-Digest: the key's last chunk names the key (its digest), not {PENDING!r}")
        if not aligned(first, last - first + 1, total):
            refuse(416, f"bad range {first}-{last}/{total}: a chunk starts at a multiple of {BLOCK} bytes and "
                        f"holds a multiple of {BLOCK} bytes, or ends the key")
        writer = await off_loop(open_chunk, sid, kind, who, first, total, whole)
        if isinstance(writer, dict):  # a retry of the last chunk after the upload was kept
            return writer
        # Hashed and written as it arrives, on the chunk's own thread (the event loop only hands
        # on the pieces of the socket's reads), kept only once its length and digest are right.
        with writer as chunk:
            async for piece in body_pieces(request, last - first + 1, "key chunk"):
                chunk.write(piece)
            if chunk.size != last - first + 1:
                refuse(400, f"the chunk holds {chunk.size} bytes, its range {last - first + 1}")
            said, got = request.headers.get("x-chunk-digest"), await off_loop(chunk.digest)
            if said is not None and said != got:
                refuse(422, "the chunk's digest does not match X-Chunk-Digest: send it again (digests are BLAKE3 "
                            "over 64 KiB blocks, ringfire.serve.keydigest version 2)",
                       {"X-Chunk-Refused": "digest"})
            try:
                received = await off_loop(chunk.keep)
            except ChunkBusy as e:  # started over meanwhile (a pending chunk at 0): its bytes do not count
                refuse(409, str(e), {"X-Received": "0", "Retry-After": "1"})
        metrics.uploaded.inc(last - first + 1)
        if received < total:  # the digest of what was kept: a chunk sent without one is checked by its sender
            return {"received": received, "total": total, "stored": False, "chunk_digest": got}
        return await off_loop(_commit, sid, kind, who, chunk.uid, whole, total)

    def open_chunk(sid: str, kind: str, who: str, first: int, total: int, whole: str):
        """The upload's writer at ``first``, or the answer to a chunk that arrives after the
        upload was kept."""
        kept = own_session(sid, who)["keys"].get(kind)
        if kept is not None and kept["digest"] == whole and kept["size"] == total:
            return {"received": total, "total": total, "stored": True, "digest": whole, "new": False}
        state_now = store.upload_state(sid, kind)
        restart = whole == PENDING and first == 0  # a key named with its last chunk starts at 0
        fresh = (state_now is None or state_now["total"] != total or restart
                 or state_now["digest"] not in (whole, PENDING))
        store.touch_session(sid)
        up = None if fresh else store.upload(sid, kind, who, total, whole, resume_only=True)
        if up is None:  # new, or the one under way went meanwhile (kept, started over)
            up = start_upload(sid, kind, who, total, whole, restart)
        if first != up["received"]:
            refuse(409, f"this upload has {up['received']} bytes; send the chunk starting there",
                   {"X-Received": str(up["received"])})
        try:
            return store.chunk_writer(up["id"], first)
        except ChunkBusy as e:
            refuse(409, str(e), {"X-Received": str(first), "Retry-After": "1"})

    def start_upload(sid: str, kind: str, who: str, total: int, whole: str, restart: bool) -> dict:
        """A new upload, counted against the tenant's stored bytes from its start at what it will
        hold: its whole size and what the server writes beside it (its image, keys derived from
        it), reserved until they are written; nothing beside where this tenant stores keys of
        the digest it names. The session's upload of `kind` it replaces stops counting. Under
        the tenant's lock (Store.tenant_lock: every process of the store), so that its uploads
        starting at once, on one replica or several, cannot share the same room."""
        named = whole if whole != PENDING else None
        with store.tenant_lock(who):  # TenantBusy past its wait: 503 (tenant_busy)
            reserved = 0 if named and store.has_blob(who, named) else host.beside_bytes_expected(kind)
            replaced = store.upload_state(sid, kind)  # dropped by the new one
            freed = replaced["total"] + replaced["reserved"] if replaced is not None else 0
            over = store.stored_bytes(who) - freed + total + reserved - config.tenant_bytes
            # Keys no session links go first (not those it names: stored, they are its room).
            if over > 0 and retention.make_room(who, over, keep=named) < over:
                refuse(413, f"this tenant would store more than {config.tenant_bytes} bytes: these {kind} keys "
                            f"take {total + reserved} with the image and derived keys the server keeps beside "
                            f"them, beside the keys its open sessions link (with theirs), uploads under way and "
                            f"results; close sessions it no longer uses to free theirs")
            # A session closed meanwhile leaves the row to the retention sweep.
            return store.upload(sid, kind, who, total, whole, restart=restart, reserved=reserved)

    def _commit(sid: str, kind: str, who: str, uid: str, whole: str, total: int) -> dict:
        """The complete upload, checked (hash, envelope, parameters, kind) before it is kept."""
        part = store.part_path(uid)
        if store.upload_digest(uid) != whole:
            store.drop_upload(uid)
            refuse(422, "the upload's digest does not match X-Key-Digest: send it again from the start")
        try:
            # The envelope now; loading every word follows off this request's path (KeyChecks).
            quick = host.check_header(kind, part, total)
            if not quick:
                host.check_keys(kind, part, keep_image=False)  # imaged under its blob's name, at first use
        except (ValueError, TypeError) as e:
            store.drop_upload(uid)
            refuse(422, f"these are not valid {kind} keys for this model: {e}")
        if quick and store.has_blob(who, whole):
            # Keys this tenant stored already, checked then, perhaps for another model of these
            # parameters: whether they serve this one is asked before they replace the session's
            # keys (KeyChecks sees new keys only). A stored copy that no longer loads gives way
            # to this upload.
            try:
                serves(sid, kind, who, whole, wait=True)
                if kind == "master":
                    room_for_derivation(who, whole)
            except NotForThisModel as e:
                store.drop_upload(uid)
                refuse(422, f"these {kind} keys do not serve this model: {e}")
            except NoRoom as e:
                store.drop_upload(uid)
                refuse(413, str(e))
        new = store.commit_upload(uid, sid, kind, who, whole, total, host.params_id)
        if not new:
            metrics.key_hits.inc()
        checks.forget(sid, kind)
        if quick and new:
            checks.submit(who, kind, whole)
        return {"received": total, "total": total, "stored": True, "digest": whole, "new": new}

    # ---- inference jobs ------------------------------------------------------------------------
    def max_input_bytes() -> int:
        return host.max_input_entries() * (host.max_ciphertext_bytes() + 16) + 4096

    async def carried(jid: str, status: dict):
        """What a settled status asks the client to read next, for a reply that carries it: the
        open round's ciphertexts (from the worker's memory, or the store for another process's
        job) or the finished job's result. (size, async iterator of its pieces), or None where
        the status asks for nothing to read or it is gone meanwhile (the client then asks for it
        as before)."""
        if status["state"] == "awaiting_client":
            parts = await round_parts(jid, status["round"]["number"], runner.live(jid))
            return None if parts is None else (wire.parts_size(parts), each_of(parts))
        if status["state"] == "done":
            return await off_loop(result_blocks, jid)
        return None

    def result_blocks(jid: str):
        """A finished job's result as (size, async iterator of its blocks), or None where its
        file is not in the store."""
        try:
            f = open(store.result_path(jid), "rb")
        except FileNotFoundError:
            return None
        return os.fstat(f.fileno()).st_size, blocks_of(f)

    async def reply_with_status(jid: str, fields: dict, status: dict, inline: bool, code: int):
        """``fields`` and the job's settled ``status``; with ``inline``, in one body with what the
        status asks the client to read next (wire.REPLY_TYPE): a round costs its client one
        request, and the result none."""
        fields = {**fields, "status": status}
        data = await carried(jid, status) if inline else None
        if data is None:
            return JSONResponse(fields, code)
        size, pieces = data
        head = wire.reply_head(fields)

        async def body():
            yield head
            async for piece in pieces:
                yield piece
        return StreamingResponse(body(), code, media_type=wire.REPLY_TYPE,
                                 headers={"Content-Length": str(len(head) + size)})

    @app.post("/v1/sessions/{sid}/infer", status_code=202)
    async def infer(sid: str, request: Request, who: str = Depends(tenant), wait: float = 0.0,
                    inline: bool = False):
        """With ``wait`` (seconds, at most 30), the answer also carries the job's first settled
        status (``status``: a round to answer, or its end), as a status read with ``settled``
        would: one request fewer an inference. With ``inline`` too, the reply's body also
        carries the round's ciphertexts or the result (``application/vnd.ringfire.reply``)."""
        idempotency = request.headers.get("idempotency-key")
        if idempotency is not None and not re.fullmatch(r"[A-Za-z0-9_.:-]{1,128}", idempotency):
            refuse(400, "Idempotency-Key: 1-128 letters, digits, '_', '.', ':', '-'")
        wait = wait_seconds(wait)
        repeated = await off_loop(admit_job, sid, who, idempotency)
        if repeated is not None:  # a retry: the job made the first time, never a second run
            return JSONResponse({"job": repeated["id"], "state": repeated["state"], "repeated": True}, 200)
        body = await read_pieces(request, max_input_bytes(), "encrypted input")
        made = await off_loop(start_job, sid, who, idempotency, body)
        if wait > 0 and isinstance(made, dict):
            status = await settled_status(made["job"], who, wait, "", True)
            return await reply_with_status(made["job"], made, status, inline, 202)
        return made

    def admit_job(sid: str, who: str, idempotency: str | None) -> dict | None:
        """Refuses a job that cannot run yet; returns the job an idempotency key made before."""
        missing = host.missing(own_session(sid, who)["keys"])
        store.touch_session(sid)
        if missing:
            refuse(409, f"the session lacks its {', '.join(missing)} keys: upload them first")
        repeated = store.job_for(sid, idempotency) if idempotency else None
        if repeated is None and store.jobs_in_flight(who) >= config.tenant_jobs:
            refuse_past_job_limit()
        return repeated

    def refuse_past_job_limit():
        refuse(429, f"at most {config.tenant_jobs} jobs in flight per tenant", {"Retry-After": "5"})

    def start_job(sid: str, who: str, idempotency: str | None, body: list[bytes]):
        try:  # the framing now (a malformed body never becomes a job); each ciphertext's envelope in the job
            fields = wire.check_tensor(body, max_entries=host.max_input_entries(),
                                       max_entry_bytes=host.max_ciphertext_bytes())
        except wire.WireError as e:
            refuse(422, f"the encrypted input is not a valid encrypted tensor for this model: {e}")
        if problem := host.input_problem(fields):  # a job that would fail at its first layer is not made
            refuse(422, f"the encrypted input does not fit this model: {problem}")
        jid, created = store.create_job(who, sid, idempotency, owner=process, most=config.tenant_jobs)
        if jid is None:  # others of this tenant's jobs came in meanwhile (this process or another)
            refuse_past_job_limit()
        if not created:  # the same key arrived twice at once: the other request made the job
            return JSONResponse({"job": jid, "state": store.job(jid, who)["state"], "repeated": True}, 200)
        try:
            runner.submit(Job(jid, who, sid, body))
        except QueueFull as e:
            store.set_job(jid, "failed", error=str(e))
            refuse(429, str(e), {"Retry-After": "10"})
        return {"job": jid, "state": "queued"}

    async def job_snapshot(jid: str, who: str) -> dict:
        """A job's state and open round: from the worker while it lives here (no store read:
        long-polls ask every few milliseconds), else from the store (a job of another replica,
        or one that ended)."""
        live = runner.live(jid)
        if live is not None and live.tenant == who and live.state not in TERMINAL:
            out = {"id": jid, "session": live.session, "state": live.state, "error": None,
                   "progress": dict(live.progress) or None}
            r = runner.waiting_round(live)
        else:
            out, r = await off_loop(stored_job, jid, who)
        if r is not None:
            out["state"] = "awaiting_client"
            out["round"] = {"number": r["number"], "layer": json.loads(r["layer"])}
        elif out["state"] == "awaiting_client":
            out["state"] = "running"  # answered: the worker is about to go on
        return out

    def stored_job(jid: str, who: str) -> tuple[dict, dict | None]:
        job = own_job(jid, who)
        out = {k: job[k] for k in ("id", "session", "state", "error", "progress")}
        return out, store.waiting_round(jid) if out["state"] not in TERMINAL else None

    def wait_seconds(wait: float) -> float:
        """A request's ``wait``, within 0 to 30 seconds (NaN is refused: no deadline follows from it)."""
        if math.isnan(wait):
            refuse(400, "wait: seconds from 0 to 30, got NaN")
        return min(max(wait, 0.0), 30.0)

    async def settled_status(jid: str, who: str, wait: float, seen: str, settled: bool) -> dict:
        """The job's status once it differs from ``seen`` (``state:round``; with ``settled``, once
        it asks something of the client or ends), or when ``wait`` seconds (from wait_seconds) are
        up: woken by the job's worker, no polling loop on the client."""
        deadline = time.monotonic() + wait
        with runner.watchers.watching(jid) as changed:
            while True:
                changed.clear()  # before the read: a change after it wakes the wait below
                out = await job_snapshot(jid, who)
                left = deadline - time.monotonic()
                moved = f"{out['state']}:{out.get('round', {}).get('number', '')}" != seen
                if moved and (not settled or out["state"] in SETTLED) or left <= 0:
                    return out
                # This process's job: its worker wakes the read (the 0.25 s look is a safety
                # net); another process's: the store is read again soon.
                with anyio.move_on_after(min(left, 0.25 if runner.live(jid) is not None else 0.005)):
                    await changed.wait()

    @app.get("/v1/jobs/{jid}")
    async def job_status(jid: str, who: str = Depends(tenant), wait: float = 0.0, seen: str = "",
                         settled: bool = False):
        """With ``wait`` (seconds, at most 30) and ``seen`` (the ``state:round`` last read), the
        answer comes when the job moves on or the wait ends: no polling loop on the client.
        With ``settled``, only a state that asks something of the client (a round to answer, a
        result, an error) or the wait's end answers: the states a job passes through on its way
        (queued, running) cost the client no request each."""
        return await settled_status(jid, who, wait_seconds(wait), seen, settled)

    def waiting_round(jid: str, who: str, number: int) -> dict:
        own_job(jid, who)
        r = store.waiting_round(jid)
        if r is None or r["number"] != number:
            refuse(409, f"job {jid} is not waiting for round {number}")
        return r

    async def open_round(jid: str, who: str, number: int) -> tuple[dict, Job | None]:
        """The round `number` the job waits on, and the job where this process runs it. A job
        of this process that this tenant owns and whose worker holds that round open is answered
        from memory (the worker opens a round in the store before it does in memory), with no
        store read and no trip to a worker thread; anything else, from the store."""
        live = runner.live(jid)
        if live is not None and live.tenant == who:
            r = runner.waiting_round(live)
            if r is not None and r["number"] == number:
                return r, live
        return await off_loop(waiting_round, jid, who, number), live

    async def round_parts(jid: str, number: int, live) -> list[bytes] | None:
        """Round ``number``'s container: from the worker's memory where this process runs the job
        (``live``), else from the store; None where the job gave up on the round meanwhile."""
        parts = runner.question(live, number)
        if parts is None:  # another process's job
            try:
                parts = [await off_loop(store.round_question(jid, number).read_bytes)]
            except FileNotFoundError:
                return None
        return parts

    @app.get("/v1/jobs/{jid}/rounds/{number}")
    async def get_round(jid: str, number: int, who: str = Depends(tenant)):
        r, live = await open_round(jid, who, number)
        parts = await round_parts(jid, number, live)
        if parts is None:
            refuse(409, f"job {jid} is not waiting for round {number}")
        # The container's pieces one after the other (wire.py: never joined).
        return StreamingResponse(each_of(parts), media_type="application/octet-stream",
                                 headers={"X-Ringfire-Layer": r["layer"],
                                          "Content-Length": str(wire.parts_size(parts))})

    @app.post("/v1/jobs/{jid}/rounds/{number}")
    async def answer_round(jid: str, number: int, request: Request, who: str = Depends(tenant),
                           wait: float = 0.0, inline: bool = False):
        """With ``wait`` (seconds, at most 30), the answer also carries the job's next settled
        status (``status``: the next round, or its end): one request fewer a round. With
        ``inline`` too, the reply's body also carries the next round's ciphertexts or the result."""
        wait = wait_seconds(wait)
        r, live = await open_round(jid, who, number)
        try:
            out_shape = tuple(int(v) for v in json.loads(request.headers.get("x-ringfire-out-shape", "null")))
        except (TypeError, ValueError):
            refuse(400, "X-Ringfire-Out-Shape: the layer's output shape as a JSON list is required")
        entries = max(1, r["entries"])
        body = await read_pieces(request, entries * (host.max_ciphertext_bytes() + 16) + 4096, "round answer")

        def take():  # checked here, by whichever process took the request, then claimed
            try:
                cts = wire.unpack_tensor(body, host.ctx.load, max_entries=entries,
                                         max_entry_bytes=host.max_ciphertext_bytes())["cts"]
            except ValueError as e:
                refuse(422, f"the answer is not a valid encrypted tensor for this model: {e}")
            if problem := host.answer_problem(r["layer"], cts, out_shape):
                refuse(422, f"the answer to round {number} does not fit its layer: {problem}")
            # Taken once: a repeated answer is refused, so a retried request can never replace the
            # one the job already used.
            if not store.answer_round(jid, number, out_shape, None if live is not None else body):
                refuse(409, f"[serve] the job is not waiting for round {number} (answered already, or not "
                            f"reached)")
            return cts
        cts = await off_loop(take)
        if live is not None:  # this process runs the job: handed over in memory, loaded once
            runner.deliver(live, number, cts, out_shape)
        if wait > 0:
            status = await settled_status(jid, who, wait, f"awaiting_client:{number}", True)
            return await reply_with_status(jid, {"accepted": True}, status, inline, 200)
        return {"accepted": True}

    @app.get("/v1/jobs/{jid}/result")
    def result(jid: str, who: str = Depends(tenant)):
        job = own_job(jid, who)
        if job["state"] == "failed":
            refuse(410, f"job {jid} failed: {job['error']}")
        if job["state"] != "done":
            refuse(409, f"job {jid} is {job['state']}", {"Retry-After": "1"})
        if job["expired"] is not None:
            refuse(410, f"job {jid}'s result was deleted {job['expired'] - job['updated']:.0f} s after the job ended "
                        f"(this server keeps results {config.result_ttl:g} s)")
        data = result_blocks(jid)
        if data is None:  # the store deletes only expired ones: someone removed it by hand
            log.error("job %s is done but its result file is missing from the store", jid)
            refuse(410, f"job {jid} is done but its result is no longer in the server's store")
        size, blocks = data
        return StreamingResponse(blocks, media_type="application/octet-stream", headers={"Content-Length": str(size)})

    @app.delete("/v1/sessions/{sid}")
    def close_session(sid: str, who: str = Depends(tenant)):
        """Ends the session: its unfinished jobs stopped, its jobs (their ids then unknown), their
        results and rounds and its partial uploads deleted. Its keys stay stored for this
        tenant's next sessions (linked by digest, no upload) until unused for the server's key
        lifetime, or until an upload needs their room."""
        own_session(sid, who)
        ended = store.close_session(sid)
        for live in filter(None, map(runner.live, ended["jobs_stopped"])):  # this process's: stopped now
            runner.cancel(live)
        metrics.sessions_closed.labels("client").inc()
        return {"closed": sid, "jobs_stopped": len(ended["jobs_stopped"]), "results_deleted": ended["results_deleted"]}

    @app.delete("/v1/jobs/{jid}")
    def cancel(jid: str, who: str = Depends(tenant)):
        own_job(jid, who)
        cancelled = store.cancel_job(jid)  # read by the job's process, wherever it runs
        live = runner.live(jid)
        if live is not None:
            runner.cancel(live)
        return {"cancelled": cancelled}

    @app.get("/metrics")
    async def prometheus():
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return app
