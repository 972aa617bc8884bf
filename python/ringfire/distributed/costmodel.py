"""How long a distributed run takes on K nodes of C cores, from a profile of one run here.

``profile = record(model, enc, client)`` runs the model in this process on one core with a
recording executor: each ``map`` becomes a :class:`Stage` (its items, their measured compute
seconds, how many input ciphertexts an item reads, the bytes of the inputs and the results);
whatever runs outside the maps (the key holder's rounds, structural operators, sums) is the
serial part. ``predict(profile, nodes, cores, bandwidth)`` then prices each stage as the
executor runs it:

* the items cut into ``chunks_per_worker`` chunks per worker, run in waves of W = K x C
  tasks; a chunk costs its items' compute, the decoding of the inputs it reads and the
  encoding of its results (seconds per byte measured here), and a fixed task overhead;
* the stage's inputs cross the network once to every node that runs a chunk, the results
  once back, at ``bandwidth`` bytes/s (the driver's link carries all of it, one after the
  other: no overlap is assumed);
* the driver encodes the inputs, decodes the results, and runs the serial part;
* the keys are bundled once by the driver and cross once per node (``include_keys``: the
  first run of a key set; ``RayExecutor.publish_keys`` does the bundling ahead);
* tasks that run side by side on one machine compute ``contention`` times slower (measured:
  memory bandwidth and caches are shared);
* a stage whose function builds something once per worker process (``per_worker_setup``:
  one ciphertext per sample, where each worker encodes the model's diagonals on its first
  sample) pays that setup once on every worker, side by side: the profile times it as the
  first item's excess over the median of the others.

Efficiency is ``T(1 core) / (W x T(W))`` against the same model on one worker. The model
ignores contention between the driver and the workers for a machine's cores (none on a real
cluster, where the driver has its own) and network latency beyond the task overhead.
"""

from __future__ import annotations

import math
import pickle
import statistics
import time
from dataclasses import asdict, dataclass, field

from .. import _core
from .. import io as rf_io


@dataclass
class Stage:
    label: str
    items: int
    compute_seconds: float       # all items, one core
    shared_elements: int         # ciphertexts in the stage's input
    shared_bytes: int            # their serialized bytes
    reads_per_item: float        # distinct inputs an item reads (a dense layer: all of them)
    result_bytes: int            # the results' serialized bytes
    setup_seconds: float = 0.0   # once per worker process, before its first item (per_worker_setup)


@dataclass
class Profile:
    stages: list = field(default_factory=list)
    serial_seconds: float = 0.0  # outside the maps: the key holder, structural operators, sums
    total_seconds: float = 0.0   # the whole run here, one core
    load_seconds_per_byte: float = 0.0
    save_seconds_per_byte: float = 0.0
    key_bytes: int = 0
    key_publish_seconds: float = 0.0  # the driver bundles (serializes, hashes) the keys: once per key set

    def to_dict(self) -> dict:
        return asdict(self)


class _CountingReads:
    """The shared inputs, counting which elements an item reads."""

    def __init__(self, inner):
        self.inner, self.read = inner, set()

    def __getitem__(self, index):
        self.read.add(int(index))
        return self.inner[index]

    def __len__(self):
        return len(self.inner)


def _ct_bytes(value) -> int:
    if value is None or isinstance(value, (float, int)):
        return 0
    if isinstance(value, (tuple, list)):
        return sum(_ct_bytes(v) for v in value)
    # As serialized (format version 5: each residue in its prime's bits), not as held in memory.
    primes = value.context.params.q_primes[:value.level + 1]
    return value.size * rf_io.stored_poly_bytes(value.context.poly_degree, primes)


class RecordingExecutor:
    """Runs maps in this process (as :data:`ringfire.parallel.IN_PROCESS`) and records them."""

    name = "recording"
    workers = 1

    def __init__(self):
        self.stages: list[Stage] = []

    def map(self, fn, items, *, ev, shared=None, const=None, label: str = "work") -> list:
        items = list(items)
        parts = shared if isinstance(shared, tuple) else (shared,)
        flat = [p.reshape(-1) if hasattr(p, "reshape") else p for p in parts if p is not None]
        counted = tuple(_CountingReads(p) for p in flat)
        view = counted if isinstance(shared, tuple) else (counted[0] if counted else None)
        out, reads, times = [], 0, []
        for item in items:
            for c in counted:
                c.read.clear()
            start = time.perf_counter()
            out.append(fn(ev, view, item, const))
            times.append(time.perf_counter() - start)
            reads += sum(len(c.read) for c in counted)
        setup = 0.0
        if getattr(fn, "per_worker_setup", False) and len(times) > 1:
            setup = max(0.0, times[0] - statistics.median(times[1:]))
        elements = sum(len(p) for p in flat)
        self.stages.append(Stage(label, len(items), sum(times) - setup, elements,
                                 sum(_ct_bytes(v) for p in flat for v in p),
                                 reads / max(1, len(items)), _ct_bytes(out), setup))
        return out


def _codec_seconds_per_byte(ctx, keys, count: int = 16) -> tuple[float, float]:
    """(load, save) seconds per byte of ciphertexts at the top level as a map moves them, the
    median of five batches of ``count``: saving encodes them and pickles the batch (as Ray
    serializes a task's arguments and its reply), loading unpickles and decodes. Fresh bytes
    each time: one ciphertext timed again and again, warm in the cache, cost a quarter to a
    tenth of that to save and a half to a third to load here (BENCHMARKS.md, Scale-out on Ray)."""
    from .codec import decode, encode
    cts = [ctx.encrypt([0.5], keys) for _ in range(count)]
    nbytes = sum(len(ct.to_bytes()) for ct in cts)
    loads, saves = [], []
    for _ in range(5):
        start = time.perf_counter()
        blob = pickle.dumps([encode(ct) for ct in cts], protocol=5)
        saves.append(time.perf_counter() - start)
        start = time.perf_counter()
        [decode(v, ctx, keys) for v in pickle.loads(blob)]
        loads.append(time.perf_counter() - start)
    return statistics.median(loads) / nbytes, statistics.median(saves) / nbytes


def record(model, enc, client=None) -> Profile:
    """Runs ``model(enc, client=client)`` here on one core and returns its profile."""
    from .bundle import KeyBundle
    first = next(c for c in enc.cts.flat if c is not None)
    recorder = RecordingExecutor()
    threads = _core.num_threads()
    _core.set_num_threads(1)  # the cost of an item on one core, as a one-core task pays it
    try:
        start = time.perf_counter()
        model(enc, client=client, executor=recorder)
        total = time.perf_counter() - start
    finally:
        _core.set_num_threads(threads)
    load, save = _codec_seconds_per_byte(model.ctx, first.keys)
    mapped = sum(s.compute_seconds + s.setup_seconds for s in recorder.stages)
    start = time.perf_counter()
    bundle = KeyBundle.of(model.ctx, first.keys)
    publish = time.perf_counter() - start
    return Profile(recorder.stages, total - mapped, total, load, save, bundle.nbytes, publish)


def predict(profile: Profile, nodes: int, cores: int = 1, bandwidth: float = 1.25e9, task_overhead: float = 0.005,
            chunks_per_worker: int = 2, include_keys: bool = False, contention: float = 1.0) -> dict:
    """Predicted seconds of the profiled run on ``nodes`` x ``cores`` one-core tasks over a link of
    ``bandwidth`` bytes/s (1.25e9: 10 Gb/s), and its parts. ``contention``: how many times longer
    a task computes while other tasks run beside it on its machine (shared memory bandwidth
    and caches): 1.0 for one-core nodes on machines of their own; measure it for nodes of
    several cores, or for several nodes on one machine (``benchmarks/distributed_scaling.py``
    does, for its nodes that share this machine)."""
    if not contention >= 1.0:
        raise ValueError(f"[distributed] contention is how many times longer a task computes beside others: "
                         f">= 1.0, got {contention!r}")
    workers = nodes * cores
    keys = profile.key_publish_seconds + profile.key_bytes * nodes / bandwidth
    parts = {"serial": profile.serial_seconds, "compute": 0.0, "codec": 0.0, "network": 0.0, "overhead": 0.0,
             "keys": keys if include_keys else 0.0}
    stages = []
    for s in profile.stages:
        if s.items == 0:
            continue
        before = {k: parts[k] for k in ("compute", "codec", "network", "overhead")}
        chunks = min(s.items, workers * chunks_per_worker)
        waves = math.ceil(chunks / workers)
        per_chunk = s.items / chunks
        element = s.shared_bytes / max(1, s.shared_elements)
        decoded = min(s.shared_elements, per_chunk * s.reads_per_item) * element
        results = s.result_bytes / s.items * per_chunk
        slower = contention if min(chunks, workers) > 1 else 1.0
        parts["compute"] += (waves * per_chunk * s.compute_seconds / s.items + s.setup_seconds) * slower
        parts["codec"] += waves * (decoded * profile.load_seconds_per_byte + results * profile.save_seconds_per_byte)
        parts["codec"] += s.shared_bytes * profile.save_seconds_per_byte + s.result_bytes * profile.load_seconds_per_byte
        parts["network"] += (s.shared_bytes * min(nodes, chunks) + s.result_bytes) / bandwidth
        parts["overhead"] += waves * task_overhead
        stages.append({"label": s.label, "seconds": sum(parts[k] - before[k] for k in before)})
    parts["total"] = float(sum(parts.values()))
    parts["stages"] = stages  # each map's share of the total, in order, beside the executor's own timings
    return parts


def efficiency(profile: Profile, nodes: int, cores: int = 1, **options) -> float:
    """Parallel efficiency on ``nodes`` x ``cores`` against one worker of one core."""
    one = predict(profile, 1, 1, **options)["total"]
    return one / (nodes * cores * predict(profile, nodes, cores, **options)["total"])


