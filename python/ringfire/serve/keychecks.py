"""The full check of uploaded keys, off the upload's path.

A complete upload is kept once its digest (keydigest.py) and its envelope (kind, parameters, size) are
right; loading the keys, which reads and range-checks every word (a tenth of a second for
a 58 MiB relinearization key, seconds for bootstrapping keys), follows here, one key at a
time on one thread, and the loaded keys stay in the host's cache for the first job. Keys that
fail are dropped from the store and from every session that linked them, and the sessions'
status says why; sound keys that do not serve this model (rotations it needs are missing) are
taken out of this model's sessions alone and kept for the others (kept in the store: any replica sharing it reports the refusal). Nothing depends on this having run: a job whose keys are not in the cache
loads and checks them itself (:meth:`Host.keys_for`).
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from .host import NotForThisModel, StoredKeysDamaged

log = logging.getLogger("ringfire.serve")


class KeyChecks:
    def __init__(self, host, store, metrics):
        self.host, self.store, self.metrics = host, store, metrics
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="ringfire-keycheck")
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, str], threading.Event] = {}

    def submit(self, tenant: str, kind: str, sha: str) -> None:
        with self._lock:
            if (tenant, sha) in self._pending:
                return
            self._pending[(tenant, sha)] = threading.Event()
        self._pool.submit(self._check, tenant, kind, sha)

    def _check(self, tenant: str, kind: str, sha: str) -> None:
        path = self.store.blob_path(tenant, sha)
        try:
            # Loaded once and kept: the first job of a session that links these keys uses this
            # load, and a job loading them meanwhile waits for it (never a second copy).
            self.host.warm(kind, path)
        except NotForThisModel as e:  # sound keys, of use to another model's sessions: kept for them
            message = f"the uploaded {kind} keys do not serve this model: {e}"
            log.warning("tenant %s: %s", tenant, message)
            sessions = self.store.unlink_blob(tenant, sha, self.host.config.name, self.host.fingerprint)
            self.metrics.refused.labels("422").inc()
            self.store.key_refused(sessions, kind, message)
        except Exception as e:  # noqa: BLE001 - any failure to load is a refusal, with its reason
            reason = e.reason if isinstance(e, StoredKeysDamaged) else e  # new keys: the load's own words
            message = f"the uploaded {kind} keys were refused after their upload: {reason}"
            log.warning("tenant %s: %s", tenant, message)
            self._drop(tenant, kind, path, message)
            self.metrics.refused.labels("422").inc()
        finally:
            with self._lock:
                self._pending.pop((tenant, sha)).set()

    def forget_damaged(self, tenant: str, error: StoredKeysDamaged) -> None:
        """Stored keys that no longer load (a link's check or a job found them so): gone from the
        store and from the sessions that linked them (their status says why), so that their
        owner's next upload of them is stored anew instead of linking the damaged copy."""
        log.warning("tenant %s: %s; forgotten, to be sent again", tenant, error)
        self._drop(tenant, error.kind, error.path, f"{error}: send them again")
        self.metrics.keys_deleted.labels("damaged").inc()

    def _drop(self, tenant: str, kind: str, path, message: str) -> None:
        """The stored keys at `path` out of the cache, the store and every session that linked
        them, whose status gives `message`."""
        self.host.evict(path)
        sessions = self.store.drop_blob(tenant, path.name)
        self.store.key_refused(sessions, kind, message)

    def refuse_for_session(self, sid: str, kind: str, sha: str, error: Exception) -> None:
        """Keys `sha` linked unchecked that a job found do not serve this model: out of the
        session (kept in the store for other models), the session's status says why."""
        message = f"the {kind} keys linked do not serve this model: {error}"
        log.warning("session %s: %s", sid, message)
        self.store.unlink(sid, kind, sha)
        self.metrics.refused.labels("422").inc()
        self.store.key_refused([sid], kind, message)

    def failure(self, sid: str, kind: str) -> str | None:
        """Why the session's `kind` keys were dropped after their upload (None: they were not)."""
        return self.store.key_failure(sid, kind)

    def forget(self, sid: str, kind: str) -> None:
        """A new upload or link replaces the session's `kind` keys: the old refusal is history."""
        self.store.forget_key_failure(sid, kind)

    def wait(self, timeout: float | None = None) -> bool:
        """Waits for the checks under way (tests, shutdown); False if some still run."""
        with self._lock:
            events = list(self._pending.values())
        return all(e.wait(timeout) for e in events)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
