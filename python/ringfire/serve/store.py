"""What a server keeps on disk, so that a restart loses nothing: a SQLite table of
sessions, key sets and jobs, key blobs named by their digest (keydigest.py: uploaded once,
linked by any session of the same tenant that has the same keys), partial uploads (resumable at
any chunk), and finished results.

Layout under the store directory::

    state.sqlite                       sessions, uploads, keys, jobs
    blobs/<tenant>/<digest>            committed keys (read-only once written)
    uploads/<upload id>.part           bytes received so far
    results/<job id>.rft               a finished job's encrypted output
    rounds/<job id>.<n>.ask / .answer  a client-aided round's ciphertexts, and the key holder's answer
    locks/<tenant folder>              a tenant's lock while an upload's room is counted and taken

Every write of a blob, a result or a round goes to a temporary file first and is renamed
into place, so a crash never leaves half a file under a final name. Each thread has its
own connection, so one that waits for another process's lock holds up no other thread (a
request, the heartbeat, a job); several processes may share one store
(the replicas of ``ringfire serve --replicas``, serve/replicas.py): SQLite's file locks
order their writes, a chunk being written is locked on its file, every job names the
process that runs it (its *owner*), and each process's heartbeat says it still lives.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import socket
import sqlite3
import threading
import time
import uuid
from pathlib import Path

from ..io import STREAM_HEADER, write_atomically
from .directwrite import DIRECT_FROM, open_direct
from .inorder import InOrder
from .keydigest import BLOCK, PENDING, BlockHasher, chunk_digest, file_digests, key_digest

SCHEMA = """
create table if not exists sessions (id text primary key, tenant text not null, model text not null,
    fingerprint text not null, created real not null);
create table if not exists session_keys (session text not null, kind text not null, sha256 text not null,
    size integer not null, primary key (session, kind));
create table if not exists blobs (tenant text not null, sha256 text not null, size integer not null,
    kind text not null, primary key (tenant, sha256));
create table if not exists uploads (id text primary key, tenant text not null, session text not null,
    kind text not null, total integer not null, sha256 text not null, received integer not null);
create table if not exists jobs (id text primary key, tenant text not null, session text not null,
    idempotency text, state text not null, error text, progress text, created real not null,
    updated real not null, result_bytes integer);
create unique index if not exists jobs_idempotency on jobs (session, idempotency);
create table if not exists rounds (job text not null, number integer not null, layer text not null,
    entries integer not null, claimed integer not null default 0, out_shape text, primary key (job, number));
create table if not exists key_failures (session text not null, kind text not null, message text not null,
    primary key (session, kind));
create table if not exists server_processes (id text primary key, host text not null, pid integer not null,
    shared integer not null, beat real not null);
"""
# The columns named sha256 hold a key's digest (keydigest.py: BLAKE3 over its blocks, version 2);
# stores written before hold plain SHA-256s or version-1 digests there, which no new upload
# matches (the keys they name still serve the sessions linked to them; a new session uploads
# them once more).
# Columns added since the first stores were written (added to an older store when opened).
# A blob's ``params``: the parameter identity (hex) of the server that checked and kept it; a
# key made for other parameters is never linked into a session (a store outlives a server, and
# the next one may serve another model). Blobs kept before the column existed have none: their
# envelope's header says (Store._blob_params).
# ``used``: when a session or a blob was last used (a session: opened, keys given, a job
# submitted; a blob: kept, linked, or freed by a session's end), what retention.py goes by; a
# jobs row's ``expired``: when its result was deleted (kept past the server's result lifetime).
# ``reserved`` (blobs, uploads): the bytes the server expects to write beside the keys (their
# image, keys derived from them), counted against the tenant from the upload's start, whether
# or not they are written yet (Store.stored_bytes).
ADDED_COLUMNS = {"jobs": {"owner": "text", "cancel": "integer not null default 0", "expired": "real"},
                 "blobs": {"params": "text", "used": "real", "reserved": "integer not null default 0"},
                 "uploads": {"reserved": "integer not null default 0"},
                 "sessions": {"used": "real"}}

TERMINAL = ("done", "failed")
# When a session ``s`` was last used: a request named it (opened, keys given, a job submitted:
# its ``used``) or one of its jobs moved on (progress, a round answered, its end): a session
# whose job ran longer than the idle time is not idle the moment that job ends.
_LAST_USED = ("max(coalesce(s.used, s.created), coalesce((select max(j.updated) from jobs j "
              "where j.session = s.id), 0))")
# A session unused since ``:before`` with no job under way: retention.py closes those.
_IDLE = (f"{_LAST_USED} < :before and not exists (select 1 from jobs j where j.session = s.id "
         "and j.state not in ('done', 'failed'))")
# What a tenant's limits count (the parameter: the tenant): its sessions, its jobs in flight.
_SESSIONS_OF = "select count(*) from sessions where tenant = ?"
_JOBS_IN_FLIGHT = "select count(*) from jobs where tenant = ? and state not in ('done', 'failed')"
BEHIND_BYTES = 8 * 2**20  # pieces of a chunk waiting to be hashed and written


def _host() -> str:
    """This host as the processes sharing a store tell each other apart: its name, and where
    they exist its boot and its pid namespace (containers on one host share a name, not pids)."""
    parts = [socket.gethostname()]
    try:
        parts.append(Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8])
        parts.append(str(os.stat("/proc/self/ns/pid").st_ino))
    except OSError:
        pass
    return "/".join(parts)


HOST = _host()
BUSY_SECONDS = 10.0  # how long a statement waits for another process's lock


def _alive(host: str, pid: int) -> bool:
    """Whether a process that beat recently still lives: its pid answers where it can be asked
    (this host, boot and pid namespace); elsewhere its beat is all there is."""
    if host != HOST:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: alive
        return True
    return True


class ChunkBusy(RuntimeError):
    """Another request is writing a chunk of the same upload (the caller answers 409)."""


class TenantBusy(RuntimeError):
    """The tenant's lock stayed held past its wait (the caller answers 503 with Retry-After)."""


def new_id() -> str:
    return uuid.uuid4().hex


def _key_folder(tenant: str) -> str:
    """The folder of a tenant's keys, under the store's ``blobs``."""
    return hashlib.sha256(tenant.encode()).hexdigest()[:32]


def _key_file(name: str) -> tuple[str, bool, bool]:
    """(the digest of the key it belongs to, whether it lies beside the key rather than being
    it, whether it is a temporary file) of a file of a key folder: ``DIGEST`` a key as
    uploaded; ``DIGEST.SUFFIX`` its image, derived keys and their images; temporary files
    ``.DIGEST.SUFFIX.PID.RANDOM.tmp`` (io.atomic_file) and ``DIGEST.SUFFIX.partial-PID-RANDOM``
    (a key image's)."""
    temporary = name.startswith(".") or ".partial-" in name
    bare = name.lstrip(".")
    return bare.split(".")[0], "." in bare, temporary


class Store:
    def __init__(self, directory: str | os.PathLike, *, shared: bool = False):
        """``shared``: other processes (replicas, possibly on other machines) open the same
        directory: the rollback journal instead of WAL (which needs memory shared on one
        host), and uploads hashed from their files at commit (chunks may reach any process)."""
        self.root, self.shared = Path(directory), shared
        self.direct_from = DIRECT_FROM  # uploads at least this large are written past the page cache
        for sub in ("blobs", "uploads", "results", "rounds", "locks"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self._local = threading.local()             # this thread's connection
        self._connections: list[sqlite3.Connection] = []  # every thread's, closed together
        self._memory = threading.Lock()             # the in-memory state below
        # The block digests of each upload whose chunks this process received in order from
        # its start, and up to which byte: the commit then needs no second pass over the file.
        self._digests: dict[str, tuple[int, bytes]] = {}
        self._writing: set[str] = set()  # uploads with a chunk arriving (one at a time each)
        self._tenant_threads: dict[str, threading.Lock] = {}  # this process's side of tenant_lock
        with self._transaction():  # processes opening a new store at once: one creates it
            for statement in filter(str.strip, SCHEMA.split(";")):
                self._db.execute(statement)
            for table, columns in ADDED_COLUMNS.items():
                have = {row[1] for row in self._db.execute(f"pragma table_info({table})")}
                for column, kind in columns.items():
                    if column not in have:
                        self._db.execute(f"alter table {table} add column {column} {kind}")

    def settle_journal(self) -> None:
        """The journal for how the store is shared (once the server knows it may use the store:
        the mode is the file's, for every process): WAL for one process (readers never wait for
        the writer), the rollback journal for replicas (WAL needs memory shared on one host).
        WAL with synchronous=normal: a commit survives the process dying (what a restart needs)
        without an fsync per statement; the rollback journal syncs fully."""
        self._journal("delete" if self.shared else "wal")

    @property
    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = self._connect()
        return db

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.root / "state.sqlite", check_same_thread=False, isolation_level=None,
                             timeout=BUSY_SECONDS)
        # First: every statement after it may meet another process's lock, and waits for it
        # (less than a heartbeat's silence, so a wait never passes for death).
        db.execute(f"pragma busy_timeout={int(BUSY_SECONDS * 1000)}")
        db.execute(f"pragma synchronous={'full' if self.shared else 'normal'}")
        with self._memory:
            self._connections.append(db)
        return db

    def _reconnect(self) -> None:
        """This thread's connection closed and opened again."""
        db = self._db
        with self._memory:
            self._connections.remove(db)
        db.close()
        self._local.db = None

    def _journal(self, mode: str) -> None:
        for attempt in range(100):  # changing it needs the database to itself for a moment
            try:
                if self._db.execute(f"pragma journal_mode={mode}").fetchone()[0] == mode:
                    return
            except sqlite3.OperationalError:
                pass
            # Replicas starting together each hold a connection while they wait for the others
            # to let go: step back (close, a random pause) so that one of them gets it.
            self._reconnect()
            time.sleep(0.02 + 0.2 * secrets.randbelow(1000) / 1000)
        raise RuntimeError(f"[serve] the store {str(self.root)!r} is held by another process in another journal "
                           f"mode (this one needs {mode}): a plain server and replicas cannot share a store")

    @contextlib.contextmanager
    def _transaction(self):
        """Statements as one, under the write lock from the start (BEGIN IMMEDIATE)."""
        db = self._db
        db.execute("begin immediate")
        try:
            yield
            db.execute("commit")
        except BaseException:
            if db.in_transaction:  # a failed commit too: never keep the lock
                db.execute("rollback")
            raise

    def _q(self, sql: str, args=()) -> list:
        return self._db.execute(sql, args).fetchall()

    @contextlib.contextmanager
    def tenant_lock(self, tenant: str, wait: float = BUSY_SECONDS):
        """The tenant's lock across every process that shares the store (a file lock under
        ``locks/``: on the replicas' shared volume, as SQLite's own), so that what is counted
        against the tenant and then taken (an upload's room) is counted and taken at once by
        whichever process took the request. Its threads queue on a lock of this process first
        (only one of them polls the file); TenantBusy past ``wait`` seconds."""
        deadline = time.monotonic() + wait
        with self._memory:
            ours = self._tenant_threads.setdefault(tenant, threading.Lock())
        if not ours.acquire(timeout=wait):
            raise TenantBusy(f"[serve] this tenant's stored bytes are being counted for another request for more "
                             f"than {wait:g} s; try again")
        try:
            with open(self.root / "locks" / _key_folder(tenant), "a+b") as f:
                while True:
                    try:
                        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() > deadline:
                            raise TenantBusy(f"[serve] another process of this store has counted this tenant's "
                                             f"stored bytes for more than {wait:g} s; try again") from None
                        time.sleep(0.005)
                try:
                    yield
                finally:
                    fcntl.flock(f, fcntl.LOCK_UN)
        finally:
            ours.release()

    # ---- sessions ---------------------------------------------------------------------
    def create_session(self, tenant: str, model: str, fingerprint: str, most: int | None = None) -> str | None:
        """A new session's id; None where the tenant has ``most`` sessions already (counted and
        added in one statement: requests at once, on any process of the store, never pass it)."""
        sid = new_id()
        now = time.time()
        added = self._db.execute(
            "insert into sessions (id, tenant, model, fingerprint, created, used) select ?, ?, ?, ?, ?, ? "
            f"where ? is null or ({_SESSIONS_OF}) < ?",
            (sid, tenant, model, fingerprint, now, now, most, tenant, most)).rowcount
        return sid if added else None

    def session(self, sid: str, tenant: str) -> dict | None:
        """The tenant's session, or None (another tenant's ids look the same as unknown ones)."""
        rows = self._q("select id, model, fingerprint, created from sessions where id = ? and tenant = ?", (sid, tenant))
        if not rows:
            return None
        keys = {k: {"digest": s, "size": n} for k, s, n in
                self._q("select kind, sha256, size from session_keys where session = ?", (sid,))}
        return {"id": rows[0][0], "model": rows[0][1], "fingerprint": rows[0][2], "created": rows[0][3], "keys": keys}

    def count_sessions(self, tenant: str) -> int:
        return self._q(_SESSIONS_OF, (tenant,))[0][0]

    def touch_session(self, sid: str) -> None:
        """The session is in use now (it is closed only after it sat unused: retention.py)."""
        self._q("update sessions set used = ? where id = ?", (time.time(), sid))

    def close_session(self, sid: str, idle_before: float | None = None) -> dict | None:
        """Ends a session: its unfinished jobs asked to stop (the caller stops the live ones),
        its jobs, their results and rounds deleted, its partial uploads dropped, its links to keys
        removed (the keys stay, for the tenant's next sessions: retention.py deletes them once
        unused). With `idle_before`, only a session still unused since then with no job under
        way (None otherwise: a request that named it meanwhile keeps it). Returns
        {"jobs_stopped": ids of the jobs that had not ended, "results_deleted": count}."""
        with self._transaction():  # the rows at once; the files once no row names them
            if idle_before is not None and not self._q(f"select 1 from sessions s where s.id = :sid and {_IDLE}",
                                                       {"sid": sid, "before": idle_before}):
                return None
            jobs = self._q("select id, state from jobs where session = ?", (sid,))
            unfinished = [jid for jid, state in jobs if state not in TERMINAL]
            for jid in unfinished:
                self.cancel_job(jid)
            uploads = [uid for (uid,) in self._q("select id from uploads where session = ?", (sid,))]
            self._q("update blobs set used = ? where sha256 in (select sha256 from session_keys where session = ?) "
                    "and tenant = (select tenant from sessions where id = ?)", (time.time(), sid, sid))
            for table, column in (("session_keys", "session"), ("key_failures", "session"), ("uploads", "session"),
                                  ("jobs", "session"), ("sessions", "id")):
                self._q(f"delete from {table} where {column} = ?", (sid,))
        deleted = 0
        for jid, _ in jobs:
            path = self.result_path(jid)
            if path.exists():
                path.unlink(missing_ok=True)
                deleted += 1
            self.drop_rounds(jid, files=True)
        for uid in uploads:
            self.drop_upload(uid)
        return {"jobs_stopped": unfinished, "results_deleted": deleted}

    def sessions_of(self, tenant: str) -> list[dict]:
        """The tenant's sessions, least recently used first: id, model, created, used, and its
        jobs under way."""
        rows = self._q(f"select s.id, s.model, s.created, {_LAST_USED} as last, (select count(*) from jobs j "
                       "where j.session = s.id and j.state not in ('done', 'failed')) from sessions s "
                       "where s.tenant = ? order by last", (tenant,))
        return [dict(zip(("id", "model", "created", "used", "jobs_under_way"), row)) for row in rows]

    def idle_sessions(self, before: float) -> list[tuple[str, str]]:
        """(session, tenant) of the sessions last used before `before` (_LAST_USED) with no job
        under way."""
        return self._q(f"select s.id, s.tenant from sessions s where {_IDLE}", {"before": before})

    # ---- key blobs ----------------------------------------------------------------------
    def blob_path(self, tenant: str, sha: str) -> Path:
        return self.root / "blobs" / _key_folder(tenant) / sha

    def stored_kinds(self, tenant: str, params: str) -> list[str]:
        """The kinds of the keys this tenant stores for parameters `params` (a blob kept before
        blobs named theirs counts: it may be one)."""
        return sorted(r[0] for r in self._q("select distinct kind from blobs where tenant = ? and "
                                            "(params = ? or params is null)", (tenant, params)))

    def has_blob(self, tenant: str, sha: str) -> bool:
        return bool(self._q("select 1 from blobs where tenant = ? and sha256 = ?", (tenant, sha)))

    def unlinked_blobs(self, tenant: str | None = None, before: float | None = None) -> list[tuple[str, str, int]]:
        """(tenant, digest, size) of the stored keys no session links, least recently used first:
        of one tenant, and/or last used before `before`."""
        where, args = ["not exists (select 1 from session_keys k join sessions s on s.id = k.session "
                       "where k.sha256 = b.sha256 and s.tenant = b.tenant)"], []
        if tenant is not None:
            where.append("b.tenant = ?")
            args.append(tenant)
        if before is not None:
            where.append("coalesce(b.used, 0) < ?")
            args.append(before)
        return self._q(f"select b.tenant, b.sha256, b.size from blobs b where {' and '.join(where)} "
                       "order by coalesce(b.used, 0)", tuple(args))

    def linkable(self, tenant: str, sha: str, kind: str, params: str) -> int | None:
        """The size of the blob of `kind` named `sha` the tenant stored for parameters `params`,
        which a session may link (None: none; a key of the same tenant for other parameters,
        kept while another model was served, is not one). Nothing is linked yet: the caller
        checks that the keys serve its model first, so a refusal leaves the session as it was."""
        rows = self._q("select size, params from blobs where tenant = ? and sha256 = ? and kind = ?",
                       (tenant, sha, kind))
        if not rows:
            return None
        size, kept_for = rows[0]
        if kept_for is None:
            kept_for = self._blob_params(tenant, sha)
        if kept_for != params:  # unknown (compressed keys kept before blobs named theirs): sent again
            return None
        return size

    def link(self, sid: str, kind: str, tenant: str, sha: str, size: int) -> bool:
        """Points the session's `kind` at the tenant's stored blob `sha` (:meth:`linkable`), if
        it is still stored (False: deleted meanwhile, by retention or to make room)."""
        linked = self._db.execute(
            "insert or replace into session_keys select ?, ?, ?, ? where exists "
            "(select 1 from blobs where tenant = ? and sha256 = ?)", (sid, kind, sha, size, tenant, sha)).rowcount
        if linked:
            self._q("update blobs set used = ? where tenant = ? and sha256 = ?", (time.time(), tenant, sha))
        return bool(linked)

    def unlink(self, sid: str, kind: str, sha: str) -> None:
        """Takes the session's `kind` keys `sha` out of it (a job found they do not serve its
        model; keys of that kind linked since stay)."""
        self._q("delete from session_keys where session = ? and kind = ? and sha256 = ?", (sid, kind, sha))

    def drop_sessionless_uploads(self) -> int:
        """Uploads whose session is gone (closed while the upload started, after its uploads
        were dropped): dropped, so that they stop counting; returns how many."""
        gone = [uid for (uid,) in self._q("select id from uploads where session not in (select id from sessions)")]
        for uid in gone:
            self.drop_upload(uid)
        return len(gone)

    def _blob_params(self, tenant: str, sha: str) -> str | None:
        """The parameter identity a blob kept without one names in its envelope's header (then
        recorded), or None where it has no plain envelope to read (compressed or authenticated
        keys: loading them checks their parameters)."""
        try:
            with open(self.blob_path(tenant, sha), "rb") as f:
                head = f.read(STREAM_HEADER.size)
        except FileNotFoundError:
            return None
        if len(head) < STREAM_HEADER.size or not head.startswith(b"RFHE"):
            return None
        params = STREAM_HEADER.unpack(head)[3].hex()
        self._q("update blobs set params = ? where tenant = ? and sha256 = ?", (params, tenant, sha))
        return params

    def stored_bytes(self, tenant: str) -> int:
        """What the tenant's quota counts: its stored keys (:meth:`key_charges`), files beside
        them of no stored key, uploads under way at their whole size with what they reserve,
        and results."""
        charges, loose = self.key_charges(tenant)
        parts = self._q("select coalesce(sum(total + reserved), 0) from uploads where tenant = ?", (tenant,))[0][0]
        results = self._q("select coalesce(sum(result_bytes), 0) from jobs where tenant = ?", (tenant,))[0][0]
        return sum(charges.values()) + loose + int(parts + results)

    def key_charges(self, tenant: str) -> tuple[dict[str, int], int]:
        """({digest: bytes} each stored key counts, the bytes of files beside them of no stored
        key). A key counts as uploaded, with the larger of what its upload reserved beside it
        and what lies beside it now (:meth:`beside_bytes`): written later, at first use, or more
        than reserved (keys derived for several models)."""
        beside = self._beside_by_key(tenant)
        charges = {sha: int(size) + max(int(reserved), beside.pop(sha, 0))
                   for sha, size, reserved in self._q("select sha256, size, reserved from blobs where tenant = ?",
                                                      (tenant,))}
        return charges, sum(beside.values())

    def beside_of(self, tenant: str, sha: str) -> tuple[int, int]:
        """(the bytes reserved beside the tenant's stored key `sha`, the bytes of the files beside
        it now)."""
        rows = self._q("select reserved from blobs where tenant = ? and sha256 = ?", (tenant, sha))
        return (int(rows[0][0]) if rows else 0), self._beside_by_key(tenant).get(sha, 0)

    def reserve_beside(self, tenant: str, sha: str, size: int) -> None:
        """Raises what the tenant's stored key `sha` reserves beside it to `size` (never lowers it)."""
        self._q("update blobs set reserved = max(reserved, ?) where tenant = ? and sha256 = ?", (size, tenant, sha))

    def beside_bytes(self, tenant: str) -> int:
        """The disk the server fills beside the tenant's stored keys: key images (expanded, up to
        twice an upload) and Galois keys derived from master keys with their images (ResNet-20's
        1.49 GB from 220 MB sent), with their temporary files. Files named after their blob with
        a suffix; read from the directory, so whatever wrote them counts."""
        return sum(self._beside_by_key(tenant).values())

    def _beside_by_key(self, tenant: str) -> dict[str, int]:
        """{digest: bytes of the files beside that key}, from the tenant's key folder (a key's
        image, derived keys and their images: ``DIGEST.SUFFIX``; temporary files
        ``.DIGEST.SUFFIX...`` or ``DIGEST.SUFFIX.partial-...``)."""
        folder = self.blob_path(tenant, "-").parent
        out: dict[str, int] = {}
        try:
            entries = os.scandir(folder)
        except FileNotFoundError:
            return out
        with entries:
            for entry in entries:
                sha, beside, _ = _key_file(entry.name)
                if not beside:
                    continue  # a key as uploaded: counted by its row
                with contextlib.suppress(FileNotFoundError):  # removed meanwhile
                    out[sha] = out.get(sha, 0) + entry.stat().st_size
        return out

    def sweep_orphans(self, before: float) -> tuple[int, int]:
        """Deletes the files of the key folders that belong to no stored key, last written
        before `before`: images and derived keys of a key deleted while they were written, and
        temporary files a crash left (``.NAME.PID.RANDOM.tmp``, io.atomic_file;
        ``NAME.partial-PID-RANDOM``, a key image's). Both count
        against their tenant's stored bytes (:meth:`beside_bytes`) until they go. Returns
        (files, bytes) deleted."""
        kept = {(_key_folder(tenant), sha) for tenant, sha in self._q("select tenant, sha256 from blobs")}
        files = freed = 0
        try:
            folders = [f for f in os.scandir(self.root / "blobs") if f.is_dir(follow_symlinks=False)]
        except FileNotFoundError:
            return 0, 0
        for folder in folders:
            with os.scandir(folder.path) as entries:
                for entry in entries:
                    sha, _, temporary = _key_file(entry.name)
                    if not temporary and (folder.name, sha) in kept:
                        continue
                    with contextlib.suppress(FileNotFoundError):
                        stat = entry.stat(follow_symlinks=False)
                        if stat.st_mtime >= before:  # perhaps being written, or a blob committed just now
                            continue
                        if not temporary and self._q("select 1 from blobs where sha256 = ?", (sha,)):
                            continue  # kept since the sweep began (by any tenant: kept, to be safe)
                        os.unlink(entry.path)
                        files, freed = files + 1, freed + stat.st_size
        return files, freed

    # ---- resumable uploads -------------------------------------------------------------
    def upload(self, sid: str, kind: str, tenant: str, total: int, sha: str, restart: bool = False,
               reserved: int = 0, resume_only: bool = False) -> dict | None:
        """The upload of `kind` for the session with this size and hash: the one under way
        (to resume), or a new one (always with `restart`). A key the client names with its last
        chunk has the digest PENDING until then: the upload under way takes the first digest a
        chunk of it names (the commit checks the bytes against it)."""
        rows = [] if restart else self._q(
            "select id, received, sha256 from uploads where session = ? and kind = ? and total = ? "
            "and sha256 in (?, ?)", (sid, kind, total, sha, PENDING))
        if rows:
            uid, received, named = rows[0]
            if named != sha:
                self._q("update uploads set sha256 = ? where id = ?", (sha, uid))
            return {"id": uid, "received": received}
        if resume_only:
            return None
        for (replaced,) in self._q("select id from uploads where session = ? and kind = ?", (sid, kind)):
            self.drop_upload(replaced)  # its row, its bytes so far and its running digest
        uid = new_id()
        self._q("insert into uploads (id, tenant, session, kind, total, sha256, received, reserved) "
                "values (?, ?, ?, ?, ?, ?, 0, ?)", (uid, tenant, sid, kind, total, sha, reserved))
        self.part_path(uid).write_bytes(b"")
        return {"id": uid, "received": 0}

    def upload_state(self, sid: str, kind: str) -> dict | None:
        rows = self._q("select id, total, sha256, received, reserved from uploads where session = ? and kind = ?",
                       (sid, kind))
        return None if not rows else dict(zip(("id", "total", "digest", "received", "reserved"), rows[0]))

    def chunk_writer(self, uid: str, offset: int) -> "ChunkWriter":
        """A writer of the upload's next chunk at `offset` (what was received so far): its
        bytes go to the file as they arrive, and count only once :meth:`ChunkWriter.keep`
        is called (a chunk refused on the way is cut off the file again)."""
        with self._memory:
            if uid in self._writing:
                raise ChunkBusy(f"[serve] a chunk of this upload is arriving already; resend after it (at "
                                f"offset {offset})")
            self._writing.add(uid)
            upto, before = self._digests.get(uid, (0, None))
        if self.shared:
            before = None  # other processes may write chunks too: the commit hashes the file
        elif offset == 0:
            before = b""
        elif upto != offset or offset % BLOCK:
            before = None  # resumed after a restart, or chunks sent to other replicas: the commit hashes the file
        total = self._q("select total from uploads where id = ?", (uid,))
        try:
            writer = ChunkWriter(self, uid, offset, before, direct=bool(total) and total[0][0] >= self.direct_from)
        except BaseException:  # the part file would not open or is locked: the upload is free for the next chunk
            self._released(uid)
            raise
        # Under the file's lock: a chunk another process kept meanwhile has moved the upload on
        # (a chunk at 0 starts it over, whatever it held).
        current = self._q("select received from uploads where id = ?", (uid,))
        if not current or current[0][0] != offset and offset != 0:
            writer.abandon()
            raise ChunkBusy(f"[serve] this upload holds {current[0][0] if current else 0} bytes now, not {offset}")
        return writer

    def append(self, uid: str, offset: int, chunk: bytes) -> int:
        """Writes a whole `chunk` at `offset`; returns the bytes the upload now holds."""
        with self.chunk_writer(uid, offset) as writer:
            writer.write(chunk)
            return writer.keep()

    def _released(self, uid: str) -> None:
        with self._memory:
            self._writing.discard(uid)

    def _kept(self, uid: str, received: int, blocks: bytes | None) -> None:
        if not self._db.execute("update uploads set received = ? where id = ?", (received, uid)).rowcount:
            with self._memory:  # the upload was dropped (started over) while this chunk arrived
                self._digests.pop(uid, None)
            raise ChunkBusy(f"[serve] this upload was started over while a chunk of it arrived; resend from "
                            f"the offset the session reports")
        with self._memory:
            if blocks is None:
                self._digests.pop(uid, None)
            else:
                self._digests[uid] = (received, blocks)

    def upload_digest(self, uid: str) -> str:
        """The digest of everything received for the upload (keydigest.py): from the block
        digests taken as the chunks arrived when this process saw every one, else read from
        the file."""
        with self._memory:
            upto, blocks = self._digests.pop(uid, (0, None))
        if blocks is not None and upto == self.part_path(uid).stat().st_size:
            return key_digest(blocks)
        return key_digest(file_digests(self.part_path(uid)))

    def part_path(self, uid: str) -> Path:
        return self.root / "uploads" / f"{uid}.part"

    def commit_upload(self, uid: str, sid: str, kind: str, tenant: str, sha: str, size: int, params: str) -> bool:
        """Moves a complete upload, checked for parameters `params` (their identity, hex), under
        its hash (dropping it if the tenant has the blob already) and links it to the session;
        True if the blob was new."""
        part, final = self.part_path(uid), self.blob_path(tenant, sha)
        new = not self.has_blob(tenant, sha)
        if new:
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(part, final)
            os.chmod(final, 0o444)
            os.utime(final)  # kept now, whenever its last chunk came: no orphan to the sweep meanwhile
        # The rows as one: the bytes never count twice (upload and blob), and the blob is linked
        # before anything (make_room, retention) can take it for unlinked.
        with self._transaction():
            reserved = self._q("select reserved from uploads where id = ?", (uid,))
            if new:
                self._q("insert or ignore into blobs (tenant, sha256, size, kind, params, used, reserved) "
                        "values (?, ?, ?, ?, ?, ?, ?)",
                        (tenant, sha, size, kind, params, time.time(), reserved[0][0] if reserved else 0))
            else:
                # Checked for `params` just now: a blob kept before blobs named theirs is named now.
                self._q("update blobs set params = ? where tenant = ? and sha256 = ? and params is null",
                        (params, tenant, sha))
            self._q("delete from uploads where id = ?", (uid,))
            self._q("insert or replace into session_keys values (?, ?, ?, ?)", (sid, kind, sha, size))
        if not new:
            part.unlink(missing_ok=True)
        return new

    def drop_blob(self, tenant: str, sha: str) -> list[str]:
        """Forgets a stored blob: its file, its row and every session's link to it; returns
        the sessions that had linked it."""
        sessions = [r[0] for r in self._q("select session from session_keys where sha256 = ? and session in "
                                          "(select id from sessions where tenant = ?)", (sha, tenant))]
        self._q("delete from session_keys where sha256 = ? and session in (select id from sessions where tenant = ?)",
                (sha, tenant))
        self._q("delete from blobs where tenant = ? and sha256 = ?", (tenant, sha))
        blob = self.blob_path(tenant, sha)
        for derived in blob.parent.glob(f"{sha}.*"):  # its key image, keys derived from it and their images
            derived.unlink(missing_ok=True)
        blob.unlink(missing_ok=True)
        return sessions

    def unlink_blob(self, tenant: str, sha: str, model: str, fingerprint: str) -> list[str]:
        """Takes a stored blob out of the sessions of `model` served with parameters `fingerprint`
        that link it (keys that do not serve that model), keeping the blob for the tenant's
        sessions of other models; returns the sessions unlinked."""
        mine = "select id from sessions where tenant = ? and model = ? and fingerprint = ?"
        args = (sha, tenant, model, fingerprint)
        sessions = [r[0] for r in self._q(f"select session from session_keys where sha256 = ? and session in ({mine})",
                                          args)]
        self._q(f"delete from session_keys where sha256 = ? and session in ({mine})", args)
        return sessions

    def drop_upload(self, uid: str) -> None:
        with self._memory:
            self._digests.pop(uid, None)
        self.part_path(uid).unlink(missing_ok=True)
        self._q("delete from uploads where id = ?", (uid,))

    # ---- jobs ---------------------------------------------------------------------------
    def job_for(self, sid: str, idempotency: str) -> dict | None:
        """The job a session already made under this idempotency key."""
        rows = self._q("select id, state from jobs where session = ? and idempotency = ?", (sid, idempotency))
        return None if not rows else {"id": rows[0][0], "state": rows[0][1]}

    def create_job(self, tenant: str, sid: str, idempotency: str | None, owner: str | None = None,
                   most: int | None = None) -> tuple[str | None, bool]:
        """(job id, created): an idempotency key already seen for the session returns its job
        (the unique index settles two requests with the same key at once, from any process);
        (None, False) where the tenant has ``most`` jobs in flight already (counted and added in
        one statement, as sessions are). `owner`: the process that will run it."""
        jid, now = new_id(), time.time()
        try:
            added = self._db.execute(
                "insert into jobs (id, tenant, session, idempotency, state, created, updated, owner) "
                f"select ?, ?, ?, ?, 'queued', ?, ?, ? where ? is null or ({_JOBS_IN_FLIGHT}) < ?",
                (jid, tenant, sid, idempotency, now, now, owner, most, tenant, most)).rowcount
        except sqlite3.IntegrityError:
            return self.job_for(sid, idempotency)["id"], False
        return (jid, True) if added else (None, False)

    def set_job(self, jid: str, state: str, *, error: str | None = None, progress: dict | None = None,
                result_bytes: int | None = None) -> bool:
        """Moves an unfinished job on; False (nothing written) once it ended: ``done`` and
        ``failed`` are final, whoever wrote them (a process that was silent for too long
        finds its job failed by the others, and stops it)."""
        return self._db.execute(
                "update jobs set state = ?, error = coalesce(?, error), progress = coalesce(?, progress), "
                "updated = ?, result_bytes = coalesce(?, result_bytes) where id = ? and state not in ('done', 'failed')",
                (state, error, None if progress is None else json.dumps(progress), time.time(), result_bytes,
                 jid)).rowcount == 1

    def job(self, jid: str, tenant: str) -> dict | None:
        rows = self._q("select id, session, state, error, progress, created, updated, result_bytes, expired from jobs "
                       "where id = ? and tenant = ?", (jid, tenant))
        if not rows:
            return None
        keys = ("id", "session", "state", "error", "progress", "created", "updated", "result_bytes", "expired")
        out = dict(zip(keys, rows[0]))
        out["progress"] = json.loads(out["progress"]) if out["progress"] else None
        return out

    def jobs_in_flight(self, tenant: str) -> int:
        return self._q(_JOBS_IN_FLIGHT, (tenant,))[0][0]

    def fail_unfinished(self, reason: str) -> int:
        """Marks every job a previous server process left unfinished as failed; returns how many."""
        rows = self._q("select id from jobs where state not in ('done', 'failed')")
        for (jid,) in rows:
            self.set_job(jid, "failed", error=reason)
            self.drop_rounds(jid, files=True)  # the store may have been shared when they ran
        return len(rows)

    def cancel_job(self, jid: str) -> bool:
        """Asks the job's owner to stop it (it reads the flag while it waits) and closes its open
        round to answers; False if it ended."""
        asked = self._db.execute("update jobs set cancel = 1 where id = ? and state not in ('done', 'failed')",
                                 (jid,)).rowcount == 1
        self._db.execute("update rounds set claimed = 1 where job = ?", (jid,))
        return asked

    def stopped(self, jid: str) -> str | None:
        """Why the job's owner should stop it: "cancelled", "ended" (another process ended it),
        or None."""
        rows = self._q("select state, cancel from jobs where id = ?", (jid,))
        if not rows:  # its session was closed
            return "ended"
        state, cancel = rows[0]
        return "ended" if state in TERMINAL else "cancelled" if cancel else None

    # ---- processes sharing the store ---------------------------------------------------------
    def beat(self, process: str, shared: bool) -> None:
        """`process` (this one: its host and pid kept for operators and for liveness) still lives."""
        self._db.execute("insert or replace into server_processes values (?, ?, ?, ?, ?)",
                         (process, HOST, os.getpid(), int(shared), time.time()))

    def join(self, process: str, shared: bool, silent_for: float) -> list[dict]:
        """`process`'s first beat, unless processes it may not share the store with live
        (returned; a plain server shares with none, a replica with replicas only). Read and
        written as one: of two servers starting at once, the second sees the first."""
        with self._transaction():
            refusing = [p for p in self._live(silent_for) if p["id"] != process and not (shared and p["shared"])]
            if not refusing:
                self.beat(process, shared)
        return refusing

    def _live(self, silent_for: float) -> list[dict]:
        """Processes that beat within `silent_for` seconds, but those of this host whose pid is
        gone (a process killed here is known dead at once, not after the silence)."""
        rows = self._db.execute("select id, host, pid, shared, beat from server_processes where beat >= ?",
                                (time.time() - silent_for,)).fetchall()
        return [dict(zip(("id", "host", "pid", "shared", "beat"), r)) for r in rows if _alive(r[1], r[2])]

    def leave(self, process: str) -> None:
        self._q("delete from server_processes where id = ?", (process,))

    def fail_orphans(self, reason: str, silent_for: float) -> int:
        """Marks failed the unfinished jobs whose owner is not a live process (one that died,
        or was silent for `silent_for` seconds); returns how many. Clocks of the replicas'
        machines are compared: keep them in sync (NTP)."""
        with self._transaction():  # read and marked as one: a job cannot finish, nor a process beat, in between
            alive = {p["id"] for p in self._live(silent_for)}
            rows = self._db.execute("select id, owner from jobs where state not in ('done', 'failed')").fetchall()
            lost = [jid for jid, owner in rows if owner not in alive]
            for jid in lost:
                self._db.execute("update jobs set state = 'failed', error = ?, updated = ? where id = ?",
                                 (reason, time.time(), jid))
            self._db.execute("delete from server_processes where beat < ?", (time.time() - silent_for - 3600,))
        for jid in lost:
            self.drop_rounds(jid)
        return len(lost)

    # ---- client-aided rounds --------------------------------------------------------------
    # The owner writes a round's row (and, in a shared store, its ciphertexts); any process
    # serves them, takes the one answer (the claim is a single update, so two answers race and
    # one wins) and writes it beside them, where the owner looks for it. A request that
    # reaches the owner itself goes through its memory (serve/jobs.py): no file.
    def _round_path(self, jid: str, number: int, what: str) -> Path:
        return self.root / "rounds" / f"{jid}.{int(number)}.{what}"

    def open_round(self, jid: str, number: int, layer: str, entries: int, payload: list[bytes] | None) -> None:
        """Publishes the round; its ciphertexts (a container's parts) as a file only when
        `payload` is given (a store shared with other processes: the owner serves its own
        requests from memory)."""
        if payload is not None:
            write_atomically(self._round_path(jid, number, "ask"), payload, sync=False)
        self._q("insert or replace into rounds (job, number, layer, entries) values (?, ?, ?, ?)",
                (jid, number, layer, entries))

    def waiting_round(self, jid: str) -> dict | None:
        """The round the job waits on and nobody answered yet: number, layer, entries."""
        rows = self._q("select number, layer, entries from rounds where job = ? and claimed = 0 "
                       "order by number desc limit 1", (jid,))
        return None if not rows else dict(zip(("number", "layer", "entries"), rows[0]))

    def round_question(self, jid: str, number: int) -> Path:
        return self._round_path(jid, number, "ask")

    def answer_round(self, jid: str, number: int, out_shape: tuple, data: list[bytes] | None) -> bool:
        """Takes the round's one answer; False if the round was answered already (or is not
        open). `data` is written for the owner to read, or None where the caller is the owner
        and hands the answer over in memory. Written beside its place first and renamed there
        once claimed, so a claimed answer is lost only if this process dies in between (the
        owner then gives up at its round timeout)."""
        final = self._round_path(jid, number, "answer")
        with contextlib.ExitStack() as written:
            if data is not None:
                staged = final.with_name(f".{final.name}.{new_id()}")
                written.callback(staged.unlink, missing_ok=True)
                write_atomically(staged, data, sync=False)
            won = self._db.execute("update rounds set claimed = 1, out_shape = ? where job = ? and number = ? "
                                   "and claimed = 0", (json.dumps(list(out_shape)), jid, number)).rowcount == 1
            if won and data is not None:
                os.replace(staged, final)
        return won

    def round_answer(self, jid: str, number: int) -> tuple[bytes, tuple] | None:
        """The answer once it is written: (bytes, out shape), or None."""
        path = self._round_path(jid, number, "answer")
        if not path.exists():
            return None
        data = path.read_bytes()
        shape = self._q("select out_shape from rounds where job = ? and number = ?", (jid, number))[0][0]
        self.drop_rounds(jid)
        return data, tuple(json.loads(shape))

    def drop_rounds(self, jid: str, *, files: bool | None = None) -> None:
        """Forgets the job's rounds, and their files where any may exist (``files``; by default
        in a shared store only: a process alone on its store hands rounds over in memory and
        writes none, and listing the directory cost every request a few tenths of a ms)."""
        self._q("delete from rounds where job = ?", (jid,))
        if not (self.shared if files is None else files):
            return
        for pattern in (f"{jid}.*", f".{jid}.*"):  # published, and staged by a process that died
            for path in (self.root / "rounds").glob(pattern):
                path.unlink(missing_ok=True)

    # ---- refusals of keys after their upload ------------------------------------------------
    def key_refused(self, sessions: list[str], kind: str, message: str) -> None:
        for sid in sessions:
            self._q("insert or replace into key_failures values (?, ?, ?)", (sid, kind, message))

    def key_failure(self, sid: str, kind: str) -> str | None:
        rows = self._q("select message from key_failures where session = ? and kind = ?", (sid, kind))
        return rows[0][0] if rows else None

    def forget_key_failure(self, sid: str, kind: str) -> None:
        self._q("delete from key_failures where session = ? and kind = ?", (sid, kind))

    def result_path(self, jid: str) -> Path:
        return self.root / "results" / f"{jid}.rft"

    def write_result(self, jid: str, parts: list[bytes]) -> None:
        write_atomically(self.result_path(jid), parts)

    def expire_results(self, before: float) -> int:
        """Deletes the results of jobs that ended before `before` (the job keeps its row, marked
        expired, for the client that asks for it later); returns how many."""
        rows = self._q("select id from jobs where state = 'done' and updated < ? and expired is null", (before,))
        now = time.time()
        for (jid,) in rows:
            self.result_path(jid).unlink(missing_ok=True)
            self._q("update jobs set expired = ?, result_bytes = 0 where id = ?", (now, jid))
        return len(rows)

    def close(self) -> None:
        with self._memory:
            connections, self._connections = self._connections, []
        for db in connections:
            db.close()
        self._local = threading.local()


class ChunkWriter:
    """One chunk of an upload, hashed block by block (keydigest.py) and written to its part
    file as its pieces arrive, on two threads of the chunk's own (inorder.py): the event loop
    that receives the pieces only hands them on. Both threads are drained before the chunk's
    digest is read and before the chunk is kept or cut off. ``before``: the upload's block
    digests up to ``offset`` (None when this process did not see them all); ``direct``: write
    past the page cache where the file system allows it (a large upload: directwrite.py)."""

    def __init__(self, store: Store, uid: str, offset: int, before: bytes | None, direct: bool = False):
        self.store, self.uid, self.offset, self.size = store, uid, offset, 0
        self._before, self._blocks = before, BlockHasher()
        self._file = open(store.part_path(uid), "r+b")
        try:  # one writer per upload across the processes sharing the store
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._file.close()
            raise ChunkBusy(f"[serve] a chunk of this upload is arriving already; resend after it (at offset "
                            f"{offset})") from None
        self._file.seek(offset)
        self._kept = False
        # Hashing and writing on a thread each: one after the other on one thread they fell
        # behind the socket, and a chunk's answer waited 11-18 ms a 43 MB key for them to catch
        # up (7-12 ms on two threads; N16_D30's relinearization key, 16 MiB chunks).
        self._hashing = InOrder(self._blocks.update, BEHIND_BYTES)
        # A large upload past the page cache where the file system allows it (directwrite.py).
        self._direct = open_direct(store.part_path(uid), offset) if direct else None
        self._writing = InOrder(self._file.write if self._direct is None else self._direct.write, BEHIND_BYTES)

    def write(self, piece) -> None:
        """Hands on a piece (bytes the caller will not change: it is hashed and written later)."""
        self._hashing.put(piece)
        self._writing.put(piece)
        self.size += len(piece)

    def _finish(self) -> None:
        """Waits for every piece put to be hashed and written (the first error either met is raised)."""
        try:
            self._hashing.finish()
        finally:
            try:
                self._writing.finish()
            finally:
                if self._direct is not None:
                    self._file.seek(self._direct.close())  # where keep() cuts the file

    def digest(self) -> str:
        """The chunk's digest, once every piece put is hashed and written (this waits for them)."""
        self._finish()
        return chunk_digest(self._blocks.digests())

    def keep(self) -> int:
        """The chunk counts: returns the bytes the upload now holds."""
        self._finish()
        self._file.truncate()
        received = self.offset + self.size
        blocks = None if self._before is None else self._before + self._blocks.digests()
        try:
            self.store._kept(self.uid, received, blocks)
        finally:
            self._kept = True
            self._file.close()  # the lock goes with it, after the upload's new length is written
        return received

    def abandon(self) -> None:
        """Lets go of the upload before a byte was written (its file stays as it was)."""
        self._finish()
        self._file.close()
        self._kept = True
        self.store._released(self.uid)

    def __enter__(self) -> "ChunkWriter":
        return self

    def __exit__(self, *exc) -> None:
        try:
            if not self._kept:  # refused or cut off: the file ends where the last kept chunk did
                try:
                    self._finish()
                except Exception:
                    if exc[0] is None:
                        raise  # else the refusal under way says more than the write behind it
                finally:
                    self._file.truncate(self.offset)
                    self._file.close()
        finally:
            self.store._released(self.uid)

