"""Inference jobs: a bounded queue, worker threads, and the client-aided rounds.

A job runs ``model(enc, client=RemoteClient(...))``. When the model reaches a
client-aided layer, the remote client publishes a *round* in the store (the ciphertexts
the key holder must refresh and the layer to apply), the job enters ``awaiting_client``,
and the worker waits until an answer is written there or ``round_timeout`` passes (then
the job fails and its memory is freed). Through the store, not this process's memory, so
that any replica sharing it may serve the round and take its answer. States: ``queued``
-> ``running`` <-> ``awaiting_client`` -> ``done`` | ``failed``; every change is written to
the store, so a restart reports a job it interrupted as ``failed`` (it never runs twice: an
idempotency key returns the job already made for it).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import traceback
from dataclasses import dataclass, field

import numpy as np

from ..ckks.batch import EncryptedTensor
from ..nn.client import Client
from . import wire
from .host import NotForThisModel, StoredKeysDamaged
from .turns import Turns
from .watchers import Watchers

log = logging.getLogger("ringfire.serve")


class QueueFull(Exception):
    """Too many jobs waiting: the caller answers 429 with Retry-After."""


class ClientTimeout(RuntimeError):
    pass


class JobLost(RuntimeError):
    """Another process ended the job (it took this one for dead): its work stops here."""


ROUND_POLL_SECONDS = 0.01   # how often a waiting job of a shared store looks for an answer file
CANCEL_POLL_SECONDS = 0.5   # how often it reads the store's cancel flag
PROGRESS_WRITE_SECONDS = 0.5  # how often a running job's progress reaches the store (reads of a live job
                              # come from memory; the store's copy is for other processes)


@dataclass
class Job:
    id: str
    tenant: str
    session: str
    body: list          # the encrypted input, as the pieces it arrived in (wire.py)
    state: str = "queued"
    progress: dict = field(default_factory=dict)
    rounds: int = 0
    question: tuple | None = None   # (round number, its ciphertexts as a container's parts, layer, entries) while open
    answer: tuple | None = None     # (round number, loaded ciphertexts, out shape) handed over in memory
    answered: threading.Event = field(default_factory=threading.Event)
    cancelled: threading.Event = field(default_factory=threading.Event)
    started: float = 0.0


class RemoteClient(Client):
    """The key holder over the network: each layer becomes a round the job waits on."""

    def __init__(self, runner: "JobRunner", job: Job, keys, max_entry_bytes: int):
        self.runner, self.job, self.keys, self.max_entry_bytes = runner, job, keys, max_entry_bytes
        self.graph = None

    def _with_keys(self, cts: np.ndarray) -> np.ndarray:
        """The session's keys on every ciphertext of an answer (constants and absent entries stay)."""
        for ct in cts.flat:
            if ct is not None and not isinstance(ct, float):
                ct._keys = self.keys
        return cts

    def _exchange(self, node, x: np.ndarray, shape, clip):
        job, store, shared = self.job, self.runner.store, self.runner.config.shared_store
        job.rounds += 1
        number = job.rounds
        payload, layer = wire.tensor_parts(x, batch=0, sample_shape=x.shape), wire.node_to_json(node, shape, clip)
        job.answer = None
        job.answered.clear()
        # The store first, memory second: a status read serves the round from memory, and the
        # round's GET and POST look it up in the store, so a client that reads the round in a
        # status must find it there too (the other order answered such a GET with a 409).
        store.open_round(job.id, number, layer, int(x.size), payload if shared else None)
        job.question = (number, payload, layer, int(x.size))
        self.runner.set_state(job, "awaiting_client")
        with self.runner.turns.given_back():  # another job computes while this one waits
            cts, out_shape = self._answer(node, number, int(x.size))
        job.question = job.answer = None
        self.runner.set_state(job, "running")
        return self._with_keys(cts), out_shape

    def _answer(self, node, number: int, entries: int):
        """Round `number`'s answer, when it reaches this process or (a shared store) another."""
        job, store, shared = self.job, self.runner.store, self.runner.config.shared_store
        now = time.monotonic()
        deadline, look_at_cancel = now + self.runner.config.round_timeout, now
        while True:
            if job.answer is not None and job.answer[0] == number:  # the answer reached this process,
                _, cts, out_shape = job.answer                      # loaded by the request that took it
                store.drop_rounds(job.id)
                break
            if shared and (found := store.round_answer(job.id, number)) is not None:  # ... or another
                data, out_shape = found
                cts = wire.unpack_tensor(data, self.runner.host.ctx.load, max_entries=max(1, entries),
                                         max_entry_bytes=self.max_entry_bytes)["cts"]
                break
            now = time.monotonic()
            if now >= look_at_cancel:
                self.runner.stop_if_asked(job)
                look_at_cancel = now + CANCEL_POLL_SECONDS
            if self.runner.stopping:  # no answer can reach a server that shuts down: do not hold it up
                raise ClientTimeout(f"[serve] the server stopped while the job waited for its client (round "
                                    f"{number})")
            if now > deadline:
                raise ClientTimeout(f"[serve] the client did not answer round {number} ({node.op} at "
                                    f"'{node.name}') within {self.runner.config.round_timeout:g} s")
            job.answered.wait(ROUND_POLL_SECONDS if shared else CANCEL_POLL_SECONDS)
        return cts, out_shape

    def apply(self, node, x, shape, clip):
        out, out_shape = self._exchange(node, x, shape, clip)
        return out, out_shape

    def apply_vector(self, node, ct):
        out, _ = self._exchange(node, np.array([ct], dtype=object), (1,), None)
        return out.flat[0]


class JobRunner:
    def __init__(self, host, store, config, metrics, owner: str, key_checks=None):
        self.host, self.store, self.config, self.metrics = host, store, config, metrics
        self.key_checks = key_checks  # told of stored keys a job finds damaged or not for this model
        self.owner = owner  # this process's name in the store: the jobs it creates are its to run
        self.executor = None  # --ray: every job's layers go to the cluster (connected at start: fail fast)
        if config.ray is not None:
            from ..distributed import RayExecutor
            self.executor = RayExecutor(config.ray or None)
        self._queue: queue.Queue = queue.Queue(maxsize=config.queue)
        self._live: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.watchers = Watchers()  # long-polled status reads, woken at each change of a job here
        self.workers = config.workers if config.workers is not None else host.default_workers()
        self.turns = Turns(config.computing or (self.workers if self.executor or config.device != "cpu" else None))
        metrics.waiting_turn.set_function(lambda: self.turns.waiting)
        log.info("running up to %d jobs at once, %d of them computing (--computing)", self.workers, self.turns.most)
        self._threads = [threading.Thread(target=self._work, name=f"ringfire-job-{i}", daemon=True)
                         for i in range(self.workers)]
        for t in self._threads:
            t.start()

    # ---- submission and state ----------------------------------------------------------
    def submit(self, job: Job) -> None:
        if self._stopping.is_set():
            raise QueueFull("[serve] the server is shutting down")
        try:
            self._queue.put_nowait(job)
        except queue.Full:
            raise QueueFull(f"[serve] {self.config.queue} jobs are waiting already") from None
        with self._lock:
            self._live[job.id] = job
        self.metrics.queue_depth.set(self._queue.qsize())

    def live(self, jid: str) -> Job | None:
        with self._lock:
            return self._live.get(jid)

    def set_state(self, job: Job, state: str, *, notify: bool = True, **extra) -> None:
        """The job's state (and progress) in the store, then here; ``notify`` wakes its long polls."""
        # The store first: a reader who sees the live state can then find its error and result.
        if not self.store.set_job(job.id, state, progress=job.progress or None, **extra):
            job.state = "failed"
            raise JobLost(f"[serve] job {job.id} was ended by another server process")
        job.state = state
        if notify:
            self.watchers.notify(job.id)

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def cancel(self, job: Job) -> None:
        job.cancelled.set()
        job.answered.set()  # a waiting job looks at once

    def deliver(self, job: Job, number: int, cts: np.ndarray, out_shape: tuple) -> None:
        """A round's answer, loaded and checked, taken by this process for its own job (claimed
        in the store first)."""
        job.answer = (number, cts, tuple(out_shape))
        job.answered.set()
        self.watchers.notify(job.id)  # its status no longer shows the round

    @staticmethod
    def question(job: Job | None, number: int) -> list[bytes] | None:
        """The round's ciphertexts from memory (the container's parts), when the job is this
        process's and waits on it."""
        q = job.question if job is not None else None
        return q[1] if q is not None and q[0] == number else None

    @staticmethod
    def waiting_round(job: Job) -> dict | None:
        """The round this process's job waits on, unanswered here (number, layer and entries), from
        memory."""
        q, answered = job.question, job.answer
        return None if q is None or answered is not None and answered[0] == q[0] else \
            {"number": q[0], "layer": q[2], "entries": q[3]}

    def stop_if_asked(self, job: Job) -> None:
        """Raises if the job was cancelled (here, or through the store by any process sharing
        it) or ended by another process."""
        why = "cancelled" if job.cancelled.is_set() else self.store.stopped(job.id)
        if why == "cancelled":
            raise ClientTimeout("[serve] the job was cancelled")
        if why == "ended":
            raise JobLost(f"[serve] job {job.id} was ended by another server process")

    # ---- the workers ---------------------------------------------------------------------
    def _work(self) -> None:
        while not self._stopping.is_set():
            try:
                job = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            self.metrics.queue_depth.set(self._queue.qsize())
            try:
                self._run(job)
            except Exception:  # noqa: BLE001 - the store failed under the job: report it, keep the worker
                log.exception("job %s", job.id)
                try:
                    self._end(job, "the server could not record the job's state (its store failed); submit it again")
                except Exception:  # noqa: BLE001 - still failing: the heartbeat's sweep or a restart reports it
                    log.exception("job %s: its failure could not be recorded", job.id)
            finally:
                with self._lock:
                    self._live.pop(job.id, None)
                job.body = []
                self.watchers.notify(job.id)  # its status now comes from the store

    def _run(self, job: Job) -> None:
        try:
            self.stop_if_asked(job)
        except ClientTimeout:
            self._end(job, "cancelled before it ran")
            return
        except JobLost:
            return
        job.started = time.monotonic()
        try:
            self.set_state(job, "running")
            with self.turns.turn():  # given back while the job waits for its client
                out = self._infer(job)
                parts = wire.tensor_parts(out.cts, out.batch, out.packing, out.period, out.sample_shape,
                                          out.element_slots)
                self.store.write_result(job.id, parts)
            job.progress["done"] = job.progress.get("total", 0)
            self.set_state(job, "done", result_bytes=wire.parts_size(parts))
            self.metrics.job_seconds.observe(time.monotonic() - job.started)
        except JobLost as e:
            # Reported failed by the others while this process was silent (stopped, swapped out):
            # its client was told to submit again, so nothing of this run may count.
            log.warning("%s while this process ran it; its work is dropped", e)
            self.store.result_path(job.id).unlink(missing_ok=True)
        except Exception as e:  # noqa: BLE001 - every failure ends the job with its reason
            message = str(e) or type(e).__name__
            if not isinstance(e, (ValueError, ClientTimeout, MemoryError)):
                message += " (" + traceback.format_exception_only(type(e), e)[-1].strip() + ")"
            self._end(job, message)
        finally:
            self.store.drop_rounds(job.id)

    def _end(self, job: Job, error: str) -> None:
        """The job failed here (unless another process ended it first: then nothing to add)."""
        if self.store.set_job(job.id, "failed", error=error, progress=job.progress or None):
            self.metrics.jobs_failed.inc()
        job.state = "failed"
        self.watchers.notify(job.id)

    def _infer(self, job: Job) -> EncryptedTensor:
        host, session = self.host, self.store.session(job.session, job.tenant)
        paths = {kind: self.store.blob_path(job.tenant, entry["digest"]) for kind, entry in session["keys"].items()}
        try:
            keys = host.keys_for(job.session, paths)
        except StoredKeysDamaged as e:  # forgotten, so that the client's next session sends them again
            if self.key_checks is not None:
                self.key_checks.forget_damaged(job.tenant, e)
            raise
        except NotForThisModel as e:  # linked unchecked: out of the session, which says why
            if self.key_checks is not None and getattr(e, "path", None):
                self.key_checks.refuse_for_session(job.session, e.kind, e.path.name, e)
            raise
        ctx = host.ctx

        def load(data: bytes):
            ct = ctx.load(data)
            ct._keys = keys
            return ct

        fields = wire.unpack_tensor(job.body, load, max_entries=host.max_input_entries(),
                                    max_entry_bytes=host.max_ciphertext_bytes())
        job.body = []
        enc = EncryptedTensor(fields["cts"], fields["batch"], ctx, fields["packing"], fields["period"],
                              fields["sample_shape"], fields["element_slots"])

        last = {"cancel_look": time.monotonic(), "store_write": time.monotonic()}

        def progress(done, total, label):
            # In memory for this process's status reads (a progress step wakes no long poll: it
            # waits for the state or the round to change); in the store now and then, which also
            # finds a job another process ended.
            job.progress = {"done": done, "total": total, "layer": label}
            now = time.monotonic()
            if job.state == "running" and now - last["store_write"] > PROGRESS_WRITE_SECONDS:
                last["store_write"] = now
                self.set_state(job, "running", notify=False)
            if now - last["cancel_look"] > CANCEL_POLL_SECONDS:  # between layers too, not only in rounds
                last["cancel_look"] = now
                self.stop_if_asked(job)

        client = RemoteClient(self, job, keys, host.max_ciphertext_bytes())
        return host.model(enc, client=client, progress=progress, executor=self.executor)

    def stop(self, drain_timeout: float) -> int:
        """Stops taking jobs, waits up to `drain_timeout` for the running ones, fails the rest."""
        self._stopping.set()
        deadline = time.monotonic() + drain_timeout
        for t in self._threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        failed = 0
        with self._lock:
            for job in self._live.values():
                job.cancelled.set()
                self._end(job, "the server stopped before the job finished")
                failed += 1
        return failed
