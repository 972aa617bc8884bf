"""What the store keeps, and for how long. Sessions, results and keys nobody uses any more are
deleted, so that a tenant's limits (sessions, stored bytes) never lock it out for good and the
store's disk does not grow with every client that came and went (``ringfire infer --server``
opens a session with fresh keys each time it runs).

* A session unused for ``session_idle`` seconds (no request named it, no job of it under way)
  is closed as ``DELETE /v1/sessions/{id}`` closes it (``Store.close_session``): its jobs'
  results and rounds and its partial uploads deleted, its links to keys removed.
* A job's result is deleted ``result_ttl`` seconds after the job ended; its status keeps the
  time (``expired``) and its result's GET answers 410 saying so.
* A stored key that no session links, unused for ``key_idle`` seconds, is deleted. A key set
  stays stored after its session ends, so that a client that comes back with the same keys
  skips the upload; when an upload would take a tenant past its stored-bytes limit, its keys
  that no session links are deleted first, least recently used first (:meth:`make_room`).

A value of 0 keeps that kind for good. Files of the key folders that belong to no stored key (an
image written while its key was deleted, a crash's temporary files) are deleted once they are
``ORPHAN_GRACE`` seconds old. The sweep runs every ``sweep_every`` seconds on a thread
of its own (and once at start); every process that shares a store sweeps it, to the same end.
"""

from __future__ import annotations

import logging
import threading
import time

from .config import ServeConfig
from .metrics import Metrics
from .store import Store

log = logging.getLogger("ringfire.serve")

ORPHAN_GRACE = 3600.0  # longer than any write of a key image or of derived keys takes


class Retention:
    def __init__(self, store: Store, config: ServeConfig, metrics: Metrics):
        self.store, self.config, self.metrics = store, config, metrics
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        c = self.config
        kept = lambda seconds: f"{seconds:g} s" if seconds else "for good"  # noqa: E731
        log.info("retention: sessions closed after %s unused, results kept %s, keys no session links kept %s "
                 "unused (and deleted for room)", kept(c.session_idle), kept(c.result_ttl), kept(c.key_idle))
        self.sweep()
        self._thread = threading.Thread(target=self._run, name="ringfire-retention", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.config.sweep_every):
            try:
                self.sweep()
            except Exception:  # noqa: BLE001 - a busy store: the next sweep tries again
                log.exception("retention sweep")

    def sweep(self, now: float | None = None) -> dict:
        """Closes idle sessions, deletes expired results, idle unlinked keys and files of no key;
        returns the counts."""
        now = time.time() if now is None else now
        config, store, done = self.config, self.store, {"sessions": 0, "results": 0, "keys": 0, "orphans": 0}
        if config.session_idle:
            before = now - config.session_idle
            for sid, tenant in store.idle_sessions(before):
                if store.close_session(sid, idle_before=before) is None:  # named by a request meanwhile
                    continue
                self.metrics.sessions_closed.labels("idle").inc()
                log.info("session %s of %s closed after %g s unused", sid, tenant, config.session_idle)
                done["sessions"] += 1
        if config.result_ttl:
            done["results"] = store.expire_results(now - config.result_ttl)
            self.metrics.results_expired.inc(done["results"])
        if config.key_idle:
            for tenant, sha, _ in store.unlinked_blobs(before=now - config.key_idle):
                store.drop_blob(tenant, sha)
                self.metrics.keys_deleted.labels("idle").inc()
                done["keys"] += 1
        store.drop_sessionless_uploads()
        done["orphans"], freed = store.sweep_orphans(now - ORPHAN_GRACE)
        if done["orphans"]:
            log.info("retention: %d files of no stored key deleted (%d bytes)", done["orphans"], freed)
        if any(done.values()):
            log.info("retention: %(sessions)d sessions closed, %(results)d results and %(keys)d keys deleted", done)
        return done

    def make_room(self, tenant: str, over: int, keep: str | None = None) -> int:
        """Deletes the tenant's stored keys that no session links (but `keep`), least recently
        used first, until `over` bytes are freed or none is left; returns the bytes freed, as
        the tenant's stored bytes count them (Store.key_charges: the key, and beside it the
        larger of what it reserved and what was written)."""
        freed = 0
        charges, _ = self.store.key_charges(tenant)
        for _, sha, _ in self.store.unlinked_blobs(tenant):
            if freed >= over:
                break
            if sha == keep:
                continue
            self.store.drop_blob(tenant, sha)  # its images and derived keys go with it
            self.metrics.keys_deleted.labels("room").inc()
            freed += charges.get(sha, 0)
        if freed:
            log.info("%d bytes of %s's unlinked keys deleted to make room for an upload", freed, tenant)
        return freed
