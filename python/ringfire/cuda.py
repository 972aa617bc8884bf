"""The GPU runtime: streams, synchronisation, compute frames, memory-pool
statistics, the kernel profiler and the debug mode (seed 000 §III).

Placement itself lives on the objects: ``ct.to("cuda")``, ``keys.to("cuda")``
and ``Context(..., device="cuda")``. Work on a GPU is asynchronous: an
operation returns once its kernels are queued, and ``decrypt``, ``.to("cpu")``
and :func:`synchronize` are the points where the host waits::

    with rf.cuda.profile() as prof:
        y = (x * x).rotate(1)
        rf.cuda.synchronize()
    print(prof.table())          # per kernel and per operation, with the NTT share
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
from collections import defaultdict

from . import _core

__all__ = ["available", "device_count", "synchronize", "Stream", "stream", "frame", "pool_stats", "flush",
           "profile", "Profile", "set_debug_sync"]


def available() -> bool:
    """True when this build has the CUDA backend and a GPU is visible."""
    return _core.cuda_compiled() and _core.cuda_device_count() > 0


def device_count() -> int:
    return _core.cuda_device_count()


def _device_name(device) -> str:
    if isinstance(device, int):
        return f"cuda:{device}"
    name = _core.parse_device(str(device))
    if not name.startswith("cuda"):
        raise ValueError(f"[cuda] expected a CUDA device ('cuda', 'cuda:N' or an index), got {device!r}")
    return name


def _index(device) -> int:
    name = _device_name(device)
    return int(name.split(":")[1]) if ":" in name else 0


def require_device(device) -> str:
    """The canonical name of a CUDA device, or a clear error when it is not usable here."""
    name = _device_name(device)
    if not _core.cuda_compiled():
        raise NotImplementedError(f"[cuda] {name}: this build of ringfire has no CUDA backend (built with "
                                  "RINGFIRE_CUDA=OFF or without nvcc); use device='cpu'")
    if _index(name) >= _core.cuda_device_count():
        raise NotImplementedError(f"[cuda] {name}: this machine has {_core.cuda_device_count()} visible GPU(s); "
                                  "use device='cpu'")
    return name


def synchronize(device="cuda") -> None:
    """Blocks until every operation issued to ``device`` (all streams) has finished."""
    _core.synchronize(require_device(device))


class Stream:
    """A CUDA stream: operations issued inside ``with stream:`` queue on it, in
    order, and run concurrently with other streams' work. A context made with
    ``device="cuda"`` owns one and uses it for all its operations."""

    def __init__(self, device="cuda"):
        self.device = require_device(device)
        self.handle = _core.cuda_create_stream(_index(self.device))
        self._previous = []

    def __enter__(self):
        self._previous.append(_core.exchange_current_queue(self.handle))
        return self

    def __exit__(self, *exc):
        _core.exchange_current_queue(self._previous.pop())
        return False

    def synchronize(self) -> None:
        """Waits for this stream's work (and the rest of the device's)."""
        _core.synchronize(self.device)

    def close(self) -> None:
        if self.handle:
            _core.cuda_destroy_stream(_index(self.device), self.handle)
            self.handle = 0

    def __repr__(self) -> str:
        return f"Stream({self.device!r}, handle={self.handle:#x})"


def stream(device="cuda") -> Stream:
    """A new :class:`Stream` (use it as a context manager)."""
    return Stream(device)


@contextlib.contextmanager
def frame(device="cuda"):
    """A compute frame (seed 000 §III-G): GPU buffers released inside it are
    kept until it ends instead of being reused, so work spread over several
    streams never reuses memory another stream still reads; at the end the
    device is synchronised and the buffers go back to the pool."""
    name = require_device(device) if str(device) != "cpu" else "cpu"
    _core.frame_begin(name)
    try:
        yield
    finally:
        _core.frame_end(name)


def pool_stats(device="cuda") -> dict:
    """The caching allocator's counters: hits, misses, bytes in use, cached and retained."""
    name = "cpu" if str(device) == "cpu" else require_device(device)
    return dict(_core.pool_stats(name))


def flush(device="cuda") -> None:
    """Waits for the device, then returns its cached memory to the driver."""
    _core.pool_flush(require_device(device))


def set_debug_sync(on: bool, device="cuda") -> None:
    """Synchronise after every kernel, so an error names the launch that caused it
    (also ``RINGFIRE_CUDA_SYNC=1``). Slow; for debugging."""
    _core.cuda_set_sync_each_kernel(_index(require_device(device)), bool(on))


class Profile:
    """Kernel times from :func:`profile`: ``records`` is a list of
    ``(kernel, operation, seconds)``, one per launch."""

    def __init__(self, device: str):
        self.device = device
        self.records: list[tuple[str, str, float]] = []

    @property
    def total(self) -> float:
        return sum(r[2] for r in self.records)

    def ntt_share(self) -> float:
        """Fraction of the kernel time spent in NTT / inverse NTT kernels (seed 000 Fig. 9)."""
        total = self.total
        return sum(s for k, _, s in self.records if k.startswith("ntt")) / total if total else 0.0

    def _grouped(self, key) -> list[dict]:
        groups = defaultdict(lambda: [0, 0.0, 0.0])
        for kernel, op, seconds in self.records:
            g = groups[key(kernel, op)]
            g[0] += 1
            g[1] += seconds
            if kernel.startswith("ntt"):
                g[2] += seconds
        total = self.total or 1.0
        rows = [dict(name=name, count=c, total_ms=t * 1e3, mean_us=t / c * 1e6, share=t / total,
                     ntt_share=(n / t if t else 0.0)) for name, (c, t, n) in groups.items()]
        return sorted(rows, key=lambda r: -r["total_ms"])

    def by_kernel(self) -> list[dict]:
        return self._grouped(lambda kernel, op: kernel)

    def by_operation(self) -> list[dict]:
        return self._grouped(lambda kernel, op: op or "(outside ckks operations)")

    def table(self) -> str:
        out = io.StringIO()
        for title, rows in (("kernel", self.by_kernel()), ("operation", self.by_operation())):
            out.write(f"{title:34} {'count':>7} {'total ms':>10} {'mean us':>9} {'share':>7} {'NTT':>6}\n")
            for r in rows:
                out.write(f"{r['name'][:34]:34} {r['count']:7d} {r['total_ms']:10.3f} {r['mean_us']:9.2f} "
                          f"{100 * r['share']:6.1f}% {100 * r['ntt_share']:5.1f}%\n")
            out.write("\n")
        out.write(f"{len(self.records)} launches, {self.total * 1e3:.3f} ms of kernel time, "
                  f"NTT {100 * self.ntt_share():.1f}%\n")
        return out.getvalue()

    def to_csv(self, path: str | os.PathLike) -> None:
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["kernel", "operation", "seconds"])
            w.writerows(self.records)

    def to_json(self, path: str | os.PathLike | None = None) -> str:
        text = json.dumps(dict(device=self.device, total_s=self.total, ntt_share=self.ntt_share(),
                               by_kernel=self.by_kernel(), by_operation=self.by_operation()), indent=1)
        if path is not None:
            with open(path, "w") as f:
                f.write(text)
        return text


@contextlib.contextmanager
def profile(device="cuda"):
    """Times every kernel launched on ``device`` inside the block with CUDA
    events, grouped by kernel and by CKKS operation on exit."""
    name = require_device(device)
    prof = Profile(name)
    _core.cuda_start_profiling(_index(name))
    try:
        yield prof
    finally:
        prof.records = [tuple(r) for r in _core.cuda_stop_profiling(_index(name))]
