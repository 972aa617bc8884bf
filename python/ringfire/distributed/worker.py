"""The worker's side: the node's key cache and the task that runs a chunk of items.

Keys are fetched once per node: the first task on a node that lacks a bundle gets it (from
the driver's object store, or a shared path), checks its SHA-256 and writes it to the node's
key cache (``RINGFIRE_KEY_CACHE``, else ``<temp dir>/ringfire-keys``) under that hash, with
its keys written once as key images beside it; every worker process on the node maps those
images read-only (``ctx.map_keys``), so the node's processes share one copy of the keys (the
page cache's) and each keeps its mapping for the tasks after it. A worker process that dies
costs a mapping, not a fetch or a load. ``fetches.log`` in the cache records each fetch
(hash, node, process).
"""

from __future__ import annotations

import ctypes
import gc
import hashlib
import os
import resource
import tempfile
import time
from pathlib import Path

from .. import _core
from ..io import sha256_of_file, write_atomically
from ..memory_guard import proc_memory, reset_peak_rss
from ..parallel import forget_key_set
from .bundle import map_bundle_file, open_bundle_file
from .codec import decode, decode_shared, encode

_OPENED: dict = {}  # (bundle SHA-256, mapped) -> (context, keys, evaluator), in this process
_THREADS = {"set": 0}


def cache_dir() -> Path:
    return Path(os.environ.get("RINGFIRE_KEY_CACHE") or Path(tempfile.gettempdir()) / "ringfire-keys")


def _node_id() -> str:
    try:
        import ray
        return ray.get_runtime_context().get_node_id()
    except Exception:  # outside Ray (tests of the cache alone)
        return "local"


def _fetch(sha: str, source) -> bytes:
    kind, where = source
    if kind == "path":
        data = Path(where).read_bytes()
    else:
        import ray
        data = ray.get(where[0])  # boxed in a list: the task fetches it only on a cache miss
    if hashlib.sha256(data).hexdigest() != sha:
        raise ValueError(f"[distributed] the key bundle fetched from {kind} does not hash to {sha}")
    return data


def bundle_path(sha: str, source) -> Path:
    """The bundle's file in this node's key cache (its hash checked, reading it in blocks),
    fetched and stored there first if missing."""
    directory = cache_dir()
    path = directory / sha
    if path.exists():
        if sha256_of_file(path) == sha:
            return path
        path.unlink(missing_ok=True)  # a damaged copy: fetch it again
    data = _fetch(sha, source)
    directory.mkdir(parents=True, exist_ok=True)
    write_atomically(path, data)  # tasks beside this one see the whole file or none
    del data
    with open(directory / "fetches.log", "a") as log:
        log.write(f"{sha} {_node_id()} {os.getpid()}\n")
    return path


def opened(sha: str, source, map_keys: bool = True):
    """(context, keys, evaluator) of a bundle in this process: its keys mapped from the node's
    key images, or (``map_keys=False``) loaded into this process."""
    hit = _OPENED.get((sha, map_keys))
    if hit is None:
        _OPENED.clear()  # one key set per process at a time: a new one replaces the last
        forget_key_set()  # and what was cached for it (its context and keys with it)
        gc.collect()
        _reset_peak_rss()  # the peak reported from here on is this key set's job's, not the last one's
        ctx, keys = (map_bundle_file if map_keys else open_bundle_file)(bundle_path(sha, source))
        if map_keys:
            _reset_peak_rss()  # what writing the images loaded goes back to the system
        hit = _OPENED[(sha, map_keys)] = (ctx, keys, ctx.evaluator(keys))
    return hit


def _reset_peak_rss() -> None:
    _core.host_pool_flush()  # the pool's cached blocks (the last key set's) go back to the system
    try:  # and so do glibc's freed heap pages: the new peak starts from what is live
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass
    reset_peak_rss()  # and the kernel's high-water mark starts again from there


def peak_rss() -> int:
    """The process's peak resident set in bytes since its current key set was opened (since
    it started where the high-water mark cannot be reset)."""
    peak = proc_memory("VmHWM").get("VmHWM")
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def memory() -> dict:
    """This process's PSS (shared pages split between the processes that map them) and RssAnon,
    in bytes (zeros where /proc does not say)."""
    return {"pss": proc_memory("Pss", table="smaps_rollup").get("Pss", 0),
            "rss_anon": proc_memory("RssAnon").get("RssAnon", 0)}


def run_chunk(sha: str, source, fn, items: list, shared, const, threads: int, map_keys: bool = True) -> dict:
    """``fn(ev, shared, item, const)`` for each item, with the results encoded for the trip
    back, and where and how long it ran."""
    if _THREADS["set"] != threads:  # the cores the task was given, no more (no oversubscription)
        _core.set_num_threads(max(1, int(threads)))
        _THREADS["set"] = threads
    start = time.perf_counter()
    ctx, keys, ev = opened(sha, source, map_keys)
    inputs = decode_shared(shared, ctx, keys)
    constant = decode(const, ctx, keys)
    results = [encode(fn(ev, inputs, item, constant)) for item in items]
    mapped = all(key.mapped for key in (keys.relin, keys.galois, keys.bootstrap) if key is not None)
    return {"results": results, "node": _node_id(), "pid": os.getpid(), "seconds": time.perf_counter() - start,
            "peak_rss": peak_rss(), "keys_mapped": mapped, "memory": memory()}
