"""``ringfire serve MODEL --ray [ADDRESS] --replicas K``: the service as a Ray Serve
application, the same FastAPI app in K replicas, at most one per node.

Every replica serves every request: they share one store (``--store``, a directory every
node sees at the same path), so a session made through one replica, keys uploaded through
another and a job's rounds answered through a third all meet there. A job runs on the
replica that took it (its *owner*, serve/jobs.py); the others read its state, serve its
rounds and take their answers through the store. A replica that dies loses only its
unfinished jobs, which the others report failed within seconds (serve/app.py's
heartbeat); Ray Serve starts a new replica in its place.

Requests are not batched across clients (``@serve.batch``): a ciphertext's slots can only
hold inputs encrypted under one key, so the batch axis belongs to one session's request
(``--packing batch`` fills it), never to several tenants'.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import time
from dataclasses import replace
from pathlib import Path

from .config import ServeConfig

log = logging.getLogger("ringfire.serve")
STORE_MARK = ".ringfire-store-id"   # a random name the driver writes: each replica must read the same
APP_NAME = "ringfire"


def mark_store(store: str | os.PathLike) -> str:
    """Writes a new random mark into the store and returns it (the replicas check it)."""
    from ..io import write_atomically
    root = Path(store)
    root.mkdir(parents=True, exist_ok=True)
    mark = secrets.token_hex(16)
    write_atomically(root / STORE_MARK, mark.encode())
    return mark


def check_store(store: str | os.PathLike, mark: str) -> None:
    """Raises unless this node sees the driver's store (the same mark under the same path)."""
    path = Path(store) / STORE_MARK
    try:
        seen = path.read_text()
    except OSError:
        seen = None
    if seen != mark:
        raise RuntimeError(f"[serve] the store {str(store)!r} on node {socket.gethostname()} is not the one the "
                           "service was started with: replicas need one directory every node sees at the same path "
                           "(a shared volume or NFS with working locks), and --store given as that path")


class Replica:
    """One replica: checks that it sees the shared store, then builds the app on it."""

    def __init__(self, config: ServeConfig, mark: str):
        check_store(config.store, mark)
        for what in (config.model, config.tokens, config.params, config.calibration):
            if what and not Path(what).exists():
                raise FileNotFoundError(f"[serve] {what!r} is missing on node {socket.gethostname()}: the model, "
                                        "tokens and parameter files must be at the same path on every node")
        self.config = config

    def __serve_build_asgi_app__(self):
        from .app import create_app
        return create_app(self.config)


def check_count(replicas) -> int:
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
        raise ValueError(f"[serve] replicas: a count from 1 up, got {replicas!r}")
    return replicas


def deployment(config: ServeConfig, replicas: int, *, cpus: float = 1.0):
    """The Ray Serve application for `config` in `replicas` replicas (bind it, then
    ``serve.run``); the store is marked here, so call it where the store is reachable."""
    from ray import serve
    check_count(replicas)
    if config.ray:
        raise ValueError("[serve] replicas run their jobs on their own node: leave config.ray unset")
    shared = replace(config, shared_store=True)
    mark = mark_store(shared.store)
    ingress = serve.ingress()(Replica)
    # Uploads, long-polled status reads and round answers wait in a replica at once: many
    # requests in flight each, so that none queues behind a client's ten-second wait.
    return serve.deployment(ingress, name="ringfire", num_replicas=replicas, max_replicas_per_node=1,
                            max_ongoing_requests=256, ray_actor_options={"num_cpus": cpus},
                            graceful_shutdown_timeout_s=config.drain_timeout + 5,
                            health_check_period_s=5, health_check_timeout_s=30).bind(shared, mark)


def run(config: ServeConfig, replicas: int, *, address: str | None, host: str, port: int,
        tls_cert: str | None = None, tls_key: str | None = None, cpus: float = 1.0) -> None:
    """Connects to the cluster at `address` (None: RAY_ADDRESS or a local one), starts Ray
    Serve's HTTP proxy on host:port and the replicas behind it, and returns once they answer
    there. Refuses, before deploying, more replicas than nodes with `cpus` CPUs, a second
    ringfire service on the cluster, and a proxy another command started on another port."""
    check_count(replicas)
    try:
        import ray
        from ray import serve
    except ImportError as e:
        raise ImportError(f"[serve] replicas need Ray Serve: pip install 'ringfire[ray]' ({e})") from None
    ray.init(address=address or None, ignore_reinit_error=True, log_to_driver=False)
    nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) >= cpus]
    if len(nodes) < replicas:
        raise ValueError(f"[serve] {replicas} replicas take one node each with {cpus:g} CPU; the cluster has "
                         f"{len(nodes)} such nodes: add nodes (ray start --address ...) or ask for fewer replicas")
    if APP_NAME in _applications():
        raise RuntimeError(f"[serve] a ringfire service already runs on this cluster (Ray Serve application "
                           f"{APP_NAME!r}): stop its command first, or `serve shutdown`")
    options = {"host": host, "port": port}
    if tls_cert:
        options.update(ssl_certfile=tls_cert, ssl_keyfile=tls_key)
    serve.start(http_options=options)
    try:
        serve.run(deployment(config, replicas, cpus=cpus), name=APP_NAME, route_prefix="/")
    except RuntimeError as e:  # Ray says "failed to update the deployments": the replicas' own error is below
        why = _failure() or str(e)
        stop(wait=0)
        raise RuntimeError(f"[serve] the replicas did not start: {why}") from None
    if not _answers(host, port, bool(tls_cert)):
        stop(wait=0)
        raise RuntimeError(f"[serve] nothing of this service answers on {host}:{port}: Ray Serve's proxy on this "
                           "cluster was started on another address (serve.start keeps the first); `serve shutdown` "
                           "and start again")
    log.info("%d replicas of %s serving at %s://%s:%d", replicas, config.name, "https" if tls_cert else "http",
             host, port)


def _applications() -> dict:
    from ray import serve
    try:
        return dict(serve.status().applications)
    except Exception:  # noqa: BLE001 - Serve not started on this cluster: no applications
        return {}


def _failure() -> str | None:
    """The replicas' error as Ray Serve recorded it (its last line: the exception)."""
    app = _applications().get(APP_NAME)
    if app is None:
        return None
    messages = [d.message for d in app.deployments.values() if d.message] or [app.message]
    lines = [line.strip() for line in "\n".join(messages).splitlines() if line.strip()]
    return lines[-1] if lines else None


def _answers(host: str, port: int, tls: bool) -> bool:
    import ssl
    import urllib.request
    where = "127.0.0.1" if host in ("0.0.0.0", "") else "::1" if host == "::" else host
    url = f"{'https' if tls else 'http'}://{where}:{port}/v2/health/live"
    context = ssl._create_unverified_context() if tls else None  # our own proxy, its own certificate
    for _ in range(20):
        try:
            with urllib.request.urlopen(url, timeout=3, context=context) as response:
                return response.status == 200 and b"live" in response.read()
        except OSError:
            time.sleep(0.5)
    return False


def stop(wait: float = 660.0) -> None:
    """Takes the application down, waiting up to `wait` seconds while its replicas finish
    their running jobs; then Ray Serve itself (its proxy frees the port) if nothing else of
    Serve runs on the cluster. A Ray instance this process started (``--ray`` with no cluster
    to join) ends with it, replicas and all, at once."""
    import ray
    from ray import serve
    from ray._private import worker
    if getattr(getattr(worker, "_global_node", None), "head", False):  # a head node this process started
        ray.shutdown()
        return
    serve.delete(APP_NAME, _blocking=False)
    deadline = time.monotonic() + wait
    while APP_NAME in _applications() and time.monotonic() < deadline:
        time.sleep(0.5)
    if not _applications():
        serve.shutdown()
