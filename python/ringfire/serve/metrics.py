"""The server's Prometheus metrics (``GET /metrics``), in a registry of its own so that
several servers in one process (tests) do not collide."""

from __future__ import annotations

import os
import resource
import threading
import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily

from ..memory_guard import proc_memory


def _resident_bytes() -> float:
    try:
        with open("/proc/self/statm") as f:
            return float(int(f.read().split()[1]) * resource.getpagesize())
    except OSError:
        return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


def _anonymous_bytes() -> float:
    """RssAnon: the resident memory that is the process's own, without mapped files (the
    key images' pages are the page cache's: shared, and dropped under pressure)."""
    return float(proc_memory("RssAnon").get("RssAnon", float("nan")))


ROLES = {"ringfire-job": "jobs", "AnyIO worker thread": "requests", "ringfire-kernel": "kernels"}


def _role(name: str) -> str:
    return next((role for prefix, role in ROLES.items() if name.startswith(prefix)), "other")


class ThreadCpu:
    """``ringfire_thread_cpu_seconds_total{role}``: the process's CPU by what its threads do,
    read from /proc at each scrape (Linux; elsewhere they stay at 0). Roles: ``event_loop``
    (the main thread: HTTP, framing, long polls; loading the model at start), ``requests``
    (the worker threads a request's blocking work goes to: the store, loading an answer),
    ``jobs`` (the job workers: loading inputs, the model's Python, the share of its kernels a
    job runs itself), ``kernels`` (the kernels' thread pool), ``other``. Where the time goes
    tells an operator whether the server is busy computing or moving bytes. A thread that
    ended keeps the CPU it had at the last scrape (what it spent after that is not counted:
    the counters never go back), also where the system gave its id to a new thread."""

    def __init__(self):
        self.event_loop: int | None = None  # the loop's native thread id, set when the app starts
        # Clock ticks, whole numbers: sums of floats in another order can come out a rounding
        # below the last scrape's, which Prometheus would read as a counter reset.
        self._seen: dict[int, tuple[str, int]] = {}  # tid -> (role, CPU ticks at the last scrape)
        self._ended: dict[str, int] = {}
        self._lock = threading.Lock()
        self._tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def _read(self) -> dict[int, tuple[str, int]]:
        names = {t.native_id: t.name for t in threading.enumerate() if t.native_id is not None}
        out = {}
        try:
            tids = os.listdir("/proc/self/task")
        except OSError:
            return out
        for entry in tids:
            tid = int(entry)
            try:
                with open(f"/proc/self/task/{entry}/stat") as f:
                    comm, rest = f.read().rsplit(")", 1)
            except OSError:  # ended meanwhile
                continue
            fields = rest.split()  # after the name: state is field 3, utime 14 and stime 15
            ticks = int(fields[11]) + int(fields[12])
            role = "event_loop" if tid == self.event_loop else _role(names.get(tid, comm.split("(", 1)[-1]))
            out[tid] = (role, ticks)
        return out

    def collect(self):
        with self._lock:
            now = self._read()
            for tid, (role, ticks) in self._seen.items():
                later = now.get(tid)
                if later is None or later[0] != role or later[1] < ticks:  # ended (its id reused)
                    self._ended[role] = self._ended.get(role, 0) + ticks
            self._seen = now
            totals = dict(self._ended)
            for role, ticks in now.values():
                totals[role] = totals.get(role, 0) + ticks
        family = CounterMetricFamily("ringfire_thread_cpu_seconds", "The server's CPU by what its threads do "
                                     "(event_loop, requests, jobs, kernels, other)", labels=["role"])
        for role in ("event_loop", "requests", "jobs", "kernels", "other"):
            family.add_metric([role], totals.get(role, 0) / self._tick)
        yield family


class Metrics:
    def __init__(self):
        self.registry = CollectorRegistry()
        r = self.registry
        self.thread_cpu = ThreadCpu()
        r.register(self.thread_cpu)
        self.requests = Histogram("ringfire_request_seconds", "Request latency by route and status",
                                  ["route", "status"], registry=r,
                                  buckets=(0.001, 0.005, 0.02, 0.05, 0.1, 0.25, 1, 5, 30))
        self.job_seconds = Histogram("ringfire_job_seconds", "Inference job latency, from start to result",
                                     registry=r, buckets=(0.1, 0.5, 1, 5, 15, 60, 300, 1800))
        self.jobs_failed = Counter("ringfire_jobs_failed_total", "Jobs that ended in failure", registry=r)
        self.queue_depth = Gauge("ringfire_queue_depth", "Jobs waiting to run", registry=r)
        self.waiting_turn = Gauge("ringfire_jobs_waiting_turn", "Jobs ready to compute, waiting for one of the "
                                  "turns --computing allows (serve/turns.py)", registry=r)
        self.uploaded = Counter("ringfire_uploaded_bytes_total", "Key bytes received", registry=r)
        self.key_hits = Counter("ringfire_keystore_hits_total", "Key sets linked or uploaded that the store had",
                                registry=r)
        self.refused = Counter("ringfire_refused_total", "Requests refused, by reason", ["reason"], registry=r)
        self.sessions_closed = Counter("ringfire_sessions_closed_total", "Sessions ended, by why (client, idle)",
                                       ["reason"], registry=r)
        self.keys_deleted = Counter("ringfire_keys_deleted_total", "Stored keys no session linked, deleted by why "
                                    "(idle; room: a new upload needed their bytes; damaged: they no longer loaded)",
                                    ["reason"], registry=r)
        self.results_expired = Counter("ringfire_results_expired_total", "Results deleted past their lifetime",
                                       registry=r)
        Gauge("ringfire_resident_memory_bytes", "The server's resident memory", registry=r).set_function(
            _resident_bytes)
        Gauge("ringfire_anonymous_memory_bytes", "The server's resident memory other than mapped files (key images "
              "are mapped: their pages are the page cache's)", registry=r).set_function(_anonymous_bytes)


class RequestTimer:
    """ASGI middleware that times every HTTP request into ``ringfire_request_seconds`` by route
    and status. A plain ASGI wrapper, not Starlette's BaseHTTPMiddleware: that one relays the
    request body through a stream of its own and runs the endpoint in a separate task, which
    made sending a 58.5 MiB key take 0.35-0.41 s instead of 0.22-0.24 (BENCHMARKS.md, "Serving")."""

    def __init__(self, app, metrics: Metrics):
        self.app, self.metrics = app, metrics

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start, status = time.perf_counter(), [500]

        async def send_observed(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_observed)
        finally:
            route = getattr(scope.get("route"), "path", "unmatched")  # the router fills the shared scope
            self.metrics.requests.labels(route, str(status[0])).observe(time.perf_counter() - start)
