"""The server's Prometheus metrics (``GET /metrics``), in a registry of its own so that
several servers in one process (tests) do not collide."""

from __future__ import annotations

import resource
import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

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


class Metrics:
    def __init__(self):
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Histogram("ringfire_request_seconds", "Request latency by route and status",
                                  ["route", "status"], registry=r,
                                  buckets=(0.001, 0.005, 0.02, 0.05, 0.1, 0.25, 1, 5, 30))
        self.job_seconds = Histogram("ringfire_job_seconds", "Inference job latency, from start to result",
                                     registry=r, buckets=(0.1, 0.5, 1, 5, 15, 60, 300, 1800))
        self.jobs_failed = Counter("ringfire_jobs_failed_total", "Jobs that ended in failure", registry=r)
        self.queue_depth = Gauge("ringfire_queue_depth", "Jobs waiting to run", registry=r)
        self.uploaded = Counter("ringfire_uploaded_bytes_total", "Key bytes received", registry=r)
        self.key_hits = Counter("ringfire_keystore_hits_total", "Key sets linked or uploaded that the store had",
                                registry=r)
        self.refused = Counter("ringfire_refused_total", "Requests refused, by reason", ["reason"], registry=r)
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
