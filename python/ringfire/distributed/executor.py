"""RayExecutor: a layer's independent ciphertexts as Ray tasks.

Each ``map`` call cuts its items into chunks (``chunks_per_worker`` per worker, so a slow
node does not hold the layer back by more than a chunk), puts the layer's inputs and
constants in the object store once, submits one task per chunk and gathers the results in
order. Tasks are pure functions of their arguments, so running one twice is harmless: a
chunk whose task was lost (its node died, its worker crashed, its result went with its
node) is submitted again, up to ``max_attempts`` times, and counted in ``stats["retried"]``;
an exception raised by the work itself is raised here, unchanged, and never retried.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from pathlib import Path

from .._progress import progress_bar
from ..io import write_atomically
from .bundle import KEY_KINDS, KeyBundle
from .codec import decode, encode, encode_shared
from .worker import run_chunk

_MAP_LOG = 1000  # maps whose wall time stats["map_seconds"] keeps (a server's executor runs for weeks)


def _forget_context(bundles: dict, watched: set, ident: int) -> None:
    """A context was freed: its bundles go (a module function: the finalizer must not keep
    the executor alive)."""
    watched.discard(ident)
    for key in list(bundles):
        if key[0] == ident:
            bundles.pop(key, None)


class TaskFailed(RuntimeError):
    """A chunk of work could not be completed on the cluster within its attempts."""


def import_ray():
    try:
        import ray
    except ImportError as e:
        raise ImportError("[distributed] Ray is not installed: pip install 'ringfire[ray]'") from e
    return ray


def _shared_bytes(encoded) -> int:
    """Bytes of ciphertext data in an encoded value (what a task moves)."""
    if isinstance(encoded, bytes):
        return len(encoded)
    if isinstance(encoded, (tuple, list)):
        return sum(_shared_bytes(v) for v in encoded)
    return 0


class RayExecutor:
    """Runs :mod:`ringfire.parallel` maps as Ray tasks.

    ``address``: a running cluster's (``"auto"``, ``"127.0.0.1:6379"``, ``"ray://..."``); None
    joins ``RAY_ADDRESS``'s or starts a local one. ``cpus_per_task``: cores each task gets
    (its ringfire thread pool uses exactly those). ``key_path``: a directory every node can
    read (a shared file system) where the driver leaves the key bundle; without it the
    bundle goes through the driver's object store, once per node. ``progress``: True for a
    bar per layer on stderr, or a callable ``(done, total, label, retried)``. ``map_keys``:
    workers map the bundle's keys from key images written once per node (the default: one
    copy of the keys per node, the page cache's), or, False, each worker process loads its
    own copy.

    ``stats["node_memory"]``: per node, each worker process's memory at the end of its last
    task (PSS, which splits pages shared by several processes between them, and RssAnon);
    ``summary()["peak_node_pss_bytes"]``: the largest sum of a node's workers' PSS seen.
    """

    name = "ray"

    def __init__(self, address: str | None = None, *, cpus_per_task: int = 1, chunks_per_worker: int = 2,
                 max_attempts: int = 4, progress=False, key_path: str | os.PathLike | None = None,
                 init_options: dict | None = None, map_keys: bool = True):
        ray = import_ray()
        if cpus_per_task < 1 or chunks_per_worker < 1 or max_attempts < 1:
            raise ValueError("[distributed] cpus_per_task, chunks_per_worker and max_attempts must be >= 1")
        if not isinstance(map_keys, bool):
            raise TypeError(f"[distributed] map_keys takes True or False, got {map_keys!r}")
        self._started_ray = not ray.is_initialized()
        if self._started_ray:
            ray.init(address=address, logging_level="WARNING", log_to_driver=False, **(init_options or {}))
        self.cpus_per_task, self.chunks_per_worker, self.max_attempts = cpus_per_task, chunks_per_worker, max_attempts
        self.progress = progress
        self.map_keys = map_keys
        self.key_path = None if key_path is None else Path(key_path)
        self._bundles = {}  # ids of the context and its keys -> (sha, source), while they live (publish_keys)
        self._watched = set()  # ids of the contexts whose end drops their bundles
        self._lock = threading.Lock()  # a server's job threads share one executor
        self._task = ray.remote(run_chunk).options(num_cpus=cpus_per_task, max_retries=0)
        self.stats = {"maps": 0, "tasks": 0, "items": 0, "retried": 0, "errors": [], "nodes": set(),
                      "task_seconds": 0.0, "shared_bytes": 0, "result_bytes": 0, "bundle_bytes": 0,
                      "peak_rss": {},  # node -> the largest resident set of a worker process there
                      "keys_mapped": True,  # every task's keys were mapped key images (worker.py)
                      "node_memory": {}, "peak_node_pss": 0,  # node -> pid -> {"pss", "rss_anon"}
                      "map_seconds": [],  # (label, items, chunks, seconds) of the last _MAP_LOG maps
                      "key_sets": 0, "publish_seconds": 0.0}  # key bundles made, and the driver's time on them

    # ---- the cluster ------------------------------------------------------------------------
    @property
    def workers(self) -> int:
        """Tasks the cluster can run at once now."""
        import ray
        return max(1, int(ray.cluster_resources().get("CPU", 0) // self.cpus_per_task))

    def close(self) -> None:
        """Disconnects (and stops the local cluster this executor started, if any)."""
        if self._started_ray:
            import ray
            ray.shutdown()
            self._started_ray = False

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RayExecutor(workers={self.workers}, cpus_per_task={self.cpus_per_task})"

    # ---- keys -------------------------------------------------------------------------------
    def _bundle(self, ev):
        """(context, keys, sha, source) of the evaluator's context and keys, the bundle made and
        published once."""
        ctx = ev.context
        keys = ev.keys if ev.keys is not None else ctx._default_keys  # ctx.set_keys(...)'s
        if keys is None:
            raise ValueError("[distributed] the work needs evaluation keys: encrypt with ctx.encrypt(values, keys) "
                             "or call ctx.set_keys(keys)")
        with self._lock:
            return (ctx, keys) + self._publish(ctx, keys)

    def publish_keys(self, ctx, keys) -> str:
        """Makes the key bundle of ``ctx`` and ``keys`` and puts it where the nodes fetch it
        (the object store, or ``key_path``) now, rather than in the first map that needs it;
        returns its SHA-256. Call it when the keys arrive, so that the first request with them
        does not pay for serializing and hashing them. Once per key set: the executor keeps the
        bundle while ``ctx`` and its key objects live, and lets it go with them."""
        with self._lock:
            return self._publish(ctx, keys)[0]

    def _publish(self, ctx, keys):
        # What the bundle holds names it: a server makes a KeySet per job from the keys it
        # cached for the session, and those jobs share one bundle.
        parts = (ctx,) + tuple(getattr(keys, kind, None) for kind in KEY_KINDS)
        key = tuple(id(part) for part in parts)
        hit = self._bundles.get(key)
        if hit is None:
            import ray
            start = time.perf_counter()
            bundle = KeyBundle.of(ctx, keys)
            if self.key_path is not None:
                self.key_path.mkdir(parents=True, exist_ok=True)
                path = self.key_path / bundle.sha256
                if not path.exists():
                    write_atomically(path, bundle.blob)
                source = ("path", str(path))
            else:
                source = ("ref", [ray.put(bundle.blob)])  # boxed: tasks fetch it only on a cache miss
            hit = self._bundles[key] = (bundle.sha256, source)
            # The entry goes with any of its keys (a closed session's keys free their object in
            # the store) or its context, so later keys at a reused id() cannot find it. A
            # server's context outlives every session: it is watched once, not once a bundle.
            for part in parts[1:]:
                if part is not None:
                    weakref.finalize(part, self._bundles.pop, key, None)
            if key[0] not in self._watched:
                self._watched.add(key[0])
                weakref.finalize(ctx, _forget_context, self._bundles, self._watched, key[0])
            self.stats["bundle_bytes"] = bundle.nbytes
            self.stats["key_sets"] += 1
            self.stats["publish_seconds"] += time.perf_counter() - start
        return hit

    def _count(self, reply: dict) -> None:
        with self._lock:
            s = self.stats
            s["tasks"] += 1
            s["nodes"].add(reply["node"])
            s["peak_rss"][reply["node"]] = max(s["peak_rss"].get(reply["node"], 0), reply["peak_rss"])
            s["keys_mapped"] = s["keys_mapped"] and reply.get("keys_mapped", False)
            node = s["node_memory"].setdefault(reply["node"], {})
            node[reply["pid"]] = reply["memory"]
            s["peak_node_pss"] = max(s["peak_node_pss"], sum(m["pss"] for m in node.values()))
            s["task_seconds"] += reply["seconds"]
            s["result_bytes"] += _shared_bytes(reply["results"])

    def summary(self) -> dict:
        """What this executor did, JSON-ready: tasks, items, layers, nodes, retries, bytes moved."""
        with self._lock:
            s = dict(self.stats)
            return {"executor": "ray", "tasks": s["tasks"], "items": s["items"], "layers": s["maps"],
                    "nodes": len(s["nodes"]), "retried": s["retried"], "errors": list(s["errors"][-5:]),
                    "task_seconds": round(s["task_seconds"], 3), "bytes_out": s["shared_bytes"],
                    "bytes_back": s["result_bytes"], "key_bundle_bytes": s["bundle_bytes"],
                    "peak_worker_rss_bytes": max(s["peak_rss"].values(), default=0), "keys_mapped": s["keys_mapped"],
                    "peak_node_pss_bytes": s["peak_node_pss"], "key_sets_published": s["key_sets"],
                    "publish_seconds": round(s["publish_seconds"], 3)}

    # ---- the work -----------------------------------------------------------------------------
    def _chunks(self, items: list) -> list:
        parts = min(len(items), self.workers * self.chunks_per_worker)
        return [items[k * len(items) // parts:(k + 1) * len(items) // parts] for k in range(parts)]

    def map(self, fn, items, *, ev, shared=None, const=None, label: str = "work") -> list:
        import ray
        items = list(items)
        if not items:
            return []
        start = time.perf_counter()
        ctx, keys, sha, source = self._bundle(ev)
        encoded_shared = None if shared is None else encode_shared(shared)
        with self._lock:
            self.stats["shared_bytes"] += _shared_bytes(encoded_shared)
        shared_ref = None if encoded_shared is None else ray.put(encoded_shared)
        const_ref = ray.put(encode(const))
        chunks = self._chunks(items)
        pending = {}

        def submit(k: int, attempt: int) -> None:
            ref = self._task.remote(sha, source, fn, chunks[k], shared_ref, const_ref, self.cpus_per_task,
                                    self.map_keys)
            pending[ref] = (k, attempt)

        for k in range(len(chunks)):
            submit(k, 1)
        out = [None] * len(chunks)
        done = 0
        callback = self.progress if callable(self.progress) else None
        with progress_bar(len(items), label, bool(self.progress) and callback is None, unit="ct") as bar:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                k, attempt = pending.pop(ready[0])
                try:
                    reply = ray.get(ready[0])
                except ray.exceptions.RayTaskError as e:  # the work itself raised: not the cluster's doing
                    raise e.as_instanceof_cause() from None
                except ray.exceptions.RayError as e:  # lost to the cluster: run it again
                    with self._lock:
                        self.stats["errors"].append(f"{label}, chunk {k + 1}/{len(chunks)}, attempt {attempt}: "
                                                    f"{type(e).__name__}")
                    if attempt >= self.max_attempts:
                        raise TaskFailed(f"[distributed] {label}: chunk {k + 1} of {len(chunks)} "
                                         f"({len(chunks[k])} items) failed {attempt} times; last: "
                                         f"{type(e).__name__}: {e}") from e
                    with self._lock:
                        self.stats["retried"] += 1
                    bar.set_postfix_str(f"retried {self.stats['retried']}")
                    submit(k, attempt + 1)
                    continue
                out[k] = reply["results"]
                self._count(reply)
                done += len(chunks[k])
                bar.update(len(chunks[k]))
                if callback is not None:
                    callback(done, len(items), label, self.stats["retried"])
        results = [decode(r, ctx, keys) for chunk in out for r in chunk]
        with self._lock:
            self.stats["maps"] += 1
            self.stats["items"] += len(items)
            log = self.stats["map_seconds"]
            log.append((label, len(items), len(chunks), time.perf_counter() - start))
            del log[:-_MAP_LOG]
        return results


def report(executor) -> str:
    """One line on what a RayExecutor did: tasks, nodes, retries, bytes moved."""
    s = executor.summary()
    return (f"{s['tasks']} tasks ({s['items']} items, {s['layers']} layers) on {s['nodes']} nodes, "
            f"{s['retried']} retried; {s['bytes_out'] / 2**20:.1f} MiB out, {s['bytes_back'] / 2**20:.1f} MiB back")

