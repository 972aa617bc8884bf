"""Inference jobs: a bounded queue, worker threads, and the client-aided rounds.

A job runs ``model(enc, client=RemoteClient(...))``. When the model reaches a
client-aided layer, the remote client publishes a *round* (the ciphertexts the key
holder must refresh and the layer to apply), the job enters ``awaiting_client``, and
the worker waits until the client posts the answer or ``round_timeout`` passes (then
the job fails and its memory is freed). States: ``queued`` -> ``running`` <->
``awaiting_client`` -> ``done`` | ``failed``; every change is written to the store, so
a restart reports a job it interrupted as ``failed: server restarted`` (it never runs
twice: an idempotency key returns the job already made for it).
"""

from __future__ import annotations

import queue
import threading
import time
import traceback
from dataclasses import dataclass, field

import numpy as np

from ..ckks.batch import EncryptedTensor
from ..nn.client import Client
from . import wire


class QueueFull(Exception):
    """Too many jobs waiting: the caller answers 429 with Retry-After."""


class ClientTimeout(RuntimeError):
    pass


@dataclass
class Round:
    """One client-aided exchange: what the key holder gets, and its answer once posted."""
    number: int
    layer: str                      # node_to_json
    payload: bytes                  # the ciphertexts, as a container
    entries: int                    # how many (the answer may hold no more)
    answered: threading.Event = field(default_factory=threading.Event)
    answer: tuple | None = None     # (object array, out shape) once posted


@dataclass
class Job:
    id: str
    tenant: str
    session: str
    body: bytes
    state: str = "queued"
    progress: dict = field(default_factory=dict)
    round: Round | None = None
    rounds: int = 0
    cancelled: threading.Event = field(default_factory=threading.Event)
    started: float = 0.0


class RemoteClient(Client):
    """The key holder over the network: each layer becomes a round the job waits on."""

    def __init__(self, runner: "JobRunner", job: Job, keys):
        self.runner, self.job, self.keys = runner, job, keys
        self.graph = None

    def _exchange(self, node, x: np.ndarray, shape, clip):
        job = self.job
        job.rounds += 1
        r = Round(job.rounds, wire.node_to_json(node, shape, clip),
                  wire.pack_tensor(x, batch=0, sample_shape=x.shape), int(x.size))
        job.round = r
        self.runner.set_state(job, "awaiting_client")
        deadline = time.monotonic() + self.runner.config.round_timeout
        while not r.answered.wait(timeout=0.5):
            if job.cancelled.is_set():
                raise ClientTimeout("[serve] the job was cancelled")
            if time.monotonic() > deadline:
                raise ClientTimeout(f"[serve] the client did not answer round {r.number} ({node.op} at "
                                    f"'{node.name}') within {self.runner.config.round_timeout:g} s")
        job.round = None
        self.runner.set_state(job, "running")
        return r.answer

    def apply(self, node, x, shape, clip):
        out, out_shape = self._exchange(node, x, shape, clip)
        return out, out_shape

    def apply_vector(self, node, ct):
        out, _ = self._exchange(node, np.array([ct], dtype=object), (1,), None)
        return out.flat[0]


class JobRunner:
    def __init__(self, host, store, config, metrics):
        self.host, self.store, self.config, self.metrics = host, store, config, metrics
        self.executor = None  # --ray: every job's layers go to the cluster (connected at start: fail fast)
        if config.ray is not None:
            from ..distributed import RayExecutor
            self.executor = RayExecutor(config.ray or None)
        self._queue: queue.Queue = queue.Queue(maxsize=config.queue)
        self._live: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._threads = [threading.Thread(target=self._work, name=f"ringfire-job-{i}", daemon=True)
                         for i in range(config.workers)]
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

    def set_state(self, job: Job, state: str, **extra) -> None:
        # The store first: a reader who sees the live state can then find its error and result.
        self.store.set_job(job.id, state, progress=job.progress or None, **extra)
        job.state = state

    def answer(self, job: Job, number: int, out: np.ndarray, out_shape) -> None:
        """The client's answer to a round: taken once (a repeated answer is refused, so a
        retried request can never replace the one the job already used)."""
        with self._lock:
            r = job.round
            if r is None or r.number != number or r.answered.is_set():
                raise LookupError(f"[serve] the job is not waiting for round {number} (answered already, or "
                                  "not reached)")
            r.answer = (out, tuple(out_shape))
            r.answered.set()

    @staticmethod
    def open_round(job: Job) -> Round | None:
        """The round the job waits on, if it still waits (one read: the worker may move on)."""
        r = job.round
        return r if r is not None and not r.answered.is_set() else None

    def cancel(self, job: Job) -> None:
        job.cancelled.set()

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
            finally:
                with self._lock:
                    self._live.pop(job.id, None)
                job.body = b""

    def _run(self, job: Job) -> None:
        if job.cancelled.is_set():
            self.set_state(job, "failed", error="cancelled before it ran")
            return
        job.started = time.monotonic()
        self.set_state(job, "running")
        try:
            out = self._infer(job)
            data = wire.pack_tensor(out.cts, out.batch, out.packing, out.period, out.sample_shape, out.element_slots)
            self.store.write_result(job.id, data)
            job.progress["done"] = job.progress.get("total", 0)
            self.set_state(job, "done", result_bytes=len(data))
            self.metrics.job_seconds.observe(time.monotonic() - job.started)
        except Exception as e:  # noqa: BLE001 - every failure ends the job with its reason
            message = str(e) or type(e).__name__
            if not isinstance(e, (ValueError, ClientTimeout, MemoryError)):
                message += " (" + traceback.format_exception_only(type(e), e)[-1].strip() + ")"
            self.set_state(job, "failed", error=message)
            self.metrics.jobs_failed.inc()

    def _infer(self, job: Job) -> EncryptedTensor:
        host, session = self.host, self.store.session(job.session, job.tenant)
        paths = {kind: self.store.blob_path(job.tenant, entry["sha256"]) for kind, entry in session["keys"].items()}
        keys = host.keys_for(job.session, paths)
        ctx = host.ctx

        def load(data: bytes):
            ct = ctx.load(data)
            ct._keys = keys
            return ct

        fields = wire.unpack_tensor(job.body, load, max_entries=host.max_input_entries(),
                                    max_entry_bytes=host.max_ciphertext_bytes())
        job.body = b""
        enc = EncryptedTensor(fields["cts"], fields["batch"], ctx, fields["packing"], fields["period"],
                              fields["sample_shape"], fields["element_slots"])

        def progress(done, total, label):
            job.progress = {"done": done, "total": total, "layer": label}
            if job.state == "running":
                self.store.set_job(job.id, "running", progress=job.progress)

        return host.model(enc, client=RemoteClient(self, job, keys), progress=progress, executor=self.executor)

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
                self.set_state(job, "failed", error="the server stopped before the job finished")
                failed += 1
        return failed
