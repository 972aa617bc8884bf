"""``rf.nn.load``: an ONNX model ready to run on encrypted batches."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

import numpy as np

from .._progress import progress_bar
from ..parallel import IN_PROCESS
from . import work
from .activations import Polynomial
from .client import fresh_level
from .executor import Executor
from .graph import Graph, UnsupportedOperator
from .diagonal_cache import DiagonalCache
from .diagonal_cache import check_limit as check_cache_limit
from .inter import InterRunner, check_sparse_bootstrap, period_for, sparse_bootstrap_slots
from .inter_plan import inter_costs
from .masking import Masker
from .placement import ciphertext_device, on_device
from .. import memory
from ..memory_guard import guard
from .refresh import Refresher, choose_degrees, element_bounds
from ..ckks.batch import EncryptedTensor
from .runtimes import INPUT, EncryptedRuntime, PlainRuntime, PlanRuntime, is_ct
from .nonlinear import ELEMENTWISE, NONLINEAR_OPS, PER_SAMPLE, chains_of
from .torch_export import export as export_torch, is_torch_module


@dataclass
class Plan:
    """What an encrypted run will cost, computed before running it."""

    levels_needed: int            # most levels consumed between fresh (re-)encryptions
    levels_available: int
    input_ciphertexts: int
    output_ciphertexts: int
    largest_tensor: int           # ciphertexts in the largest activation
    counts: dict
    activation_bytes: int         # peak bytes of live activations
    key_bytes: int
    workspace_bytes: int
    suggestion: str | None = None
    notes: list = field(default_factory=list)
    dry_run_bytes: int | None = None  # activations' peak measured by a dry run (plan(dry_run=True))
    slots_fit: bool = True            # inter packing: a sample's period fits the context's slots
    staging_bytes: int = 0            # outside the pool: a layer's diagonals before they are encoded
    pool_cache_bytes: int = 0         # freed blocks the pool may keep for reuse (rf.memory.cache_limit)
    allocated_bytes: int = 0          # every block the run allocates, summed (bounds what it can leave cached)

    @property
    def fits(self) -> bool:
        return self.levels_needed <= self.levels_available and self.slots_fit

    @property
    def peak_bytes(self) -> int:
        return (self.activation_bytes + self.key_bytes + self.workspace_bytes + self.staging_bytes
                + self.pool_cache_bytes)

    @property
    def run_bytes(self) -> int:
        """What a run allocates beside the keys (made already) and the pool's cache: what the
        memory guard checks before a run, and a server counts per job."""
        return self.peak_bytes - self.key_bytes - self.pool_cache_bytes

    def describe(self) -> str:
        gib = 2.0**30
        lines = [f"levels: needs {self.levels_needed}, context has {self.levels_available}"
                 + ("" if self.fits else "  <-- too shallow"),
                 f"ciphertexts: input {self.input_ciphertexts}, output {self.output_ciphertexts}, "
                 f"largest activation {self.largest_tensor}",
                 f"operations: {self.counts}",
                 f"predicted peak memory: {self.peak_bytes / gib:.3f} GiB (activations "
                 f"{self.activation_bytes / gib:.3f}, keys {self.key_bytes / gib:.3f}, workspace "
                 f"{self.workspace_bytes / gib:.3f}"
                 + (f", staging {self.staging_bytes / gib:.3f}" if self.staging_bytes else "")
                 + f", the pool's cache {self.pool_cache_bytes / gib:.3f})"]
        if self.suggestion:
            lines.append(f"suggestion: {self.suggestion}")
        return "\n".join(lines + self.notes)


def pool_cache_bytes(allocated: int) -> tuple[int, str]:
    """The bytes of freed blocks the pool may keep for reuse during a run that allocates
    ``allocated`` bytes in all: the cache limit in force (``rf.memory.set_cache_limit``), and
    never more than the run frees; and the plan's note on it."""
    limit = memory.cache_limit()
    if limit is None:
        return 0, ("the pool's cache of freed blocks is not counted: it has no limit (rf.memory.set_cache_limit); "
                   "a guarded run keeps it within half the room its prediction leaves")
    counted = min(int(limit), int(allocated))
    return counted, (f"the pool's cache of freed blocks: {counted / 2**30:.3f} GiB counted, its limit "
                     f"({int(limit) / 2**30:.3f} GiB) or what the run allocates in all, the less")



def _top_level(enc: EncryptedTensor) -> int | None:
    """The highest level among an input's ciphertexts (what the memory guard plans the input at)."""
    levels = [c.level for c in enc.cts.flat if is_ct(c)]
    return max(levels) if levels else None


def secure_degree(levels: int, slots: int = 1, scale_bits: int = 40, base_bits: int = 60) -> int | None:
    """log2 of the smallest N (2^13..2^17) with >= `slots` slots whose 128-bit bound fits a
    base prime, `levels` rescaling primes and one 60-bit special prime; None if none does."""
    from .. import _core

    for log_n in range(13, 18):
        total = base_bits + scale_bits * levels + 60
        if 2 ** (log_n - 1) >= slots and total <= _core.max_log_qp(2**log_n, 128):
            return log_n
    return None


def suggest_parameters(levels: int, scale_bits: int = 40, base_bits: int = 60) -> str:
    log_n = secure_degree(levels, 1, scale_bits, base_bits)
    if log_n is None:
        return f"{levels} levels do not fit N <= 2^17 at 128-bit security: use client-aided activations to reset levels"
    return (f"rf.ckks.Context(poly_degree=2**{log_n}, coeff_bits=[{base_bits}] + [{scale_bits}] * {levels} + [60], "
            f"scale_bits={scale_bits})")


class Model:
    """A plaintext model (weights in the clear) that runs on encrypted inputs.

    Args:
        activation: ``"client"`` (ReLU/Clip/MaxPool by the key holder, seed 001 §4.2)
            or ``"poly"`` (polynomial approximations, no interaction; MaxPool unsupported).
        poly_degree: degree of the fitted polynomials (``"poly"`` mode; default 2, or the
            planner's choice when bootstrapping).
        calibration: plaintext inputs (batch first) whose activation ranges set the
            fitting intervals (``"poly"`` mode), widened by ``range_margin``.
        activation_range: a fixed interval bound for every activation instead.
        masking: (``"client"`` mode) mask what the key holder decrypts where the layer
            allows it: a random positive factor per value for ReLU-like layers and
            MaxPool, a random shift per sample for Softmax and LayerNorm
            (:mod:`ringfire.nn.masking` says what the key holder still learns). A scale
            mask costs a level before the key holder and one after; ``plan()`` counts them.
        mask_bits: scale masks are 2^u with u uniform in [-mask_bits, mask_bits]: wider
            hides magnitudes better and costs up to ``mask_bits`` bits of precision per layer.
        bootstrap: (``"poly"`` mode) bootstrap tensors where an operator needs more
            levels than they have left, so models of any depth run without a client
            (:mod:`ringfire.nn.refresh`; with inter-axis packing, one bootstrap per image
            and refresh). Default: whenever the context can bootstrap
            (``Context.preset("N16_BOOT")``). Each activation is then a minimax
            polynomial whose degree the planner picks to bootstrap the fewest
            ciphertexts (127, 63 or 31 on N16_BOOT) unless ``poly_degree`` is given, and
            calibration data is required: it bounds every bootstrapped value.
    """

    def __init__(self, graph: Graph, ctx, activation: str = "client", poly_degree: int | None = None,
                 calibration=None, activation_range: float | None = None, range_margin: float = 1.2,
                 packing: str = "batch", masking: bool = False, mask_bits: float = 4.0,
                 bootstrap: bool | None = None):
        if packing not in ("batch", "inter", "any"):
            raise ValueError("[nn] packing must be 'batch', 'inter' or 'any'")
        self.packing = packing
        if activation not in ("client", "poly"):
            raise ValueError("[nn] activation must be 'client' or 'poly'")
        if masking and activation != "client":
            raise ValueError("[nn] masking=True masks what the key holder decrypts: it needs activation='client'")
        self.graph, self.ctx, self.activation, self.masking = graph, ctx, activation, bool(masking)
        self._levels_unlowered = None  # set by _lower_fresh_levels, at the first plan
        Masker.check_bits(mask_bits)
        self.mask_bits = float(mask_bits)
        for n in graph.nodes:  # what the planner needs without running the layer
            n._out_shape = graph.shapes.get(n.outputs[0])
        self.bootstrap = self._bootstrapping(bootstrap, activation, packing)
        self.polys: dict[str, Polynomial] = {}
        self._bounds: dict[str, np.ndarray] = {}  # tensor name -> integer bootstrap bound per element
        nonlinear = [n for n in graph.nodes if n.op in NONLINEAR_OPS]
        if activation == "poly":
            for n in nonlinear:
                if n.op in PER_SAMPLE or (n.op == "PRelu" and np.asarray(n.attrs["slope"]).size != 1):
                    hint = (" (or drop the final Softmax and apply it after decryption: argmax is unchanged)"
                            if n.op in ("Softmax", "LogSoftmax") else
                            " (or replace MaxPool by AveragePool)" if n.op == "MaxPool" else "")
                    raise UnsupportedOperator(f"[nn.load] {n.op} at node '{n.name}' has no polynomial form: use "
                                              f"activation='client'{hint}")
            ranges, tensors = {}, {}
            if self.bootstrap and calibration is None:
                raise ValueError("[nn.load] bootstrapping needs calibration=inputs: they bound the values it "
                                 "refreshes (ev.bootstrap(bound=...))")
            if activation_range is None or self.bootstrap:
                if calibration is None:
                    raise ValueError("[nn.load] activation='poly' needs calibration=inputs or activation_range=")
                self._calibrate(np.asarray(calibration, dtype=np.float64), ranges, tensors, range_margin)
            fit = Polynomial.minimax if self.bootstrap else Polynomial.fit
            bounds = {n.name: activation_range if activation_range is not None else ranges[n.name] * range_margin
                      for n in nonlinear}
            degrees = self._activation_degrees(bounds, poly_degree)
            for n in nonlinear:
                degree, bound = degrees[n.name], bounds[n.name]
                if n.op == "Relu":
                    self.polys[n.name] = fit("relu", bound, degree)
                elif n.op == "Clip" and n.attrs["bounds"] == (0.0, 6.0):
                    self.polys[n.name] = fit("relu6", bound, degree)
                else:  # any other element-wise layer: a fit of its exact function on the range seen
                    self.polys[n.name] = fit(lambda z, n=n: ELEMENTWISE[n.op](n, z), bound, degree,
                                             name=n.op.lower())

    def _lower_fresh_levels(self) -> None:
        """Each client-aided layer's key holder encrypts its result at the level the layers
        after it spend before the next key holder (``node.attrs["_fresh_level"]``), not at the
        top: a ciphertext of fewer limbs is smaller and every linear layer that reads it
        costs less (a ReLU before one convolution needs one level, whatever the context
        has). The planner's first walk, everything fresh at the top, finds those depths and
        the levels the model needs; the plans count memory at the lowered levels. Runs at the
        first plan (every encrypted run plans first)."""
        rt, _ = self._walk(self.polys, fresh_levels={})
        self._levels_unlowered = rt.levels_needed
        self._input_depth = int(rt.fresh_depth.get(INPUT, self.ctx.max_level))
        for n in self.graph.nodes:
            if n.name in rt.fresh_depth:
                n.attrs["_fresh_level"] = int(rt.fresh_depth[n.name])

    @property
    def input_level(self) -> int:
        """The lowest level to encrypt the input at (``ctx.encrypt_batch(x, keys,
        level=model.input_level)``): what the layers before the first key holder spend, as
        :meth:`_lower_fresh_levels` finds for each key holder's result. Fewer limbs to send
        and to multiply (the digits CNN: 2 of 3). The top with inter packing, polynomial
        activations or bootstrapping, where the input's depth is the model's own."""
        if self.packing != "batch" or self.activation != "client" or self.bootstrap:
            return self.ctx.max_level
        if self._levels_unlowered is None:
            self._lower_fresh_levels()
        return min(self.ctx.max_level, self._input_depth)

    def _bootstrapping(self, bootstrap, activation, packing) -> bool:
        if bootstrap is None:
            bootstrap = activation == "poly" and self.ctx.can_bootstrap
        if bootstrap and activation != "poly":
            raise ValueError("[nn] bootstrap=True is for activation='poly' (client-aided layers already return "
                             "fresh ciphertexts)")
        if bootstrap and not self.ctx.can_bootstrap:
            raise ValueError("[nn] bootstrap=True needs a context that reserves levels for bootstrapping: "
                             "rf.ckks.Context.preset('N16_BOOT') or Context(..., bootstrap=True)")
        products = [n.name for n in self.graph.nodes if n.op == "TensorMatMul"]
        if bootstrap and products:
            raise ValueError(f"[nn] MatMul of two encrypted tensors (node '{products[0]}') runs without "
                             "bootstrapping: use activation='client' (attention's Softmax needs the key holder "
                             "anyway), or bootstrap=False")
        broadcast = [n.name for n in self.graph.nodes if n.op in ("Add", "Sub", "Mul") and self.graph.broadcasts(n)]
        if bootstrap and broadcast:
            raise ValueError(f"[nn] node '{broadcast[0]}' broadcasts one encrypted tensor against another, which "
                             "runs without bootstrapping: use activation='client', or bootstrap=False")
        if bootstrap and self.ctx.bootstrap_min_level:
            raise ValueError(f"[nn] this context runs SlotsToCoeffs first (bootstrap={{'stc_first': True}}), so it "
                             f"bootstraps only from level {self.ctx.bootstrap_min_level} up; the runner refreshes "
                             "tensors at level 0: use a context without stc_first")
        sparse = sparse_bootstrap_slots(self.ctx)
        if bootstrap and sparse is not None:
            # A batch fills the first slots and zeros the rest, which a sparse bootstrap (of
            # n-periodic vectors only) would return divided by the number of copies. One
            # sample per ciphertext is tiled with the model's period: periodic by construction.
            if packing != "inter":
                raise ValueError(f"[nn] this context bootstraps {sparse} of its {self.ctx.slots} slots (sparse "
                                 "packing), which keeps only periodic vectors; batch packing needs full-slot "
                                 "bootstrapping (bootstrap=True or N16_BOOT), packing='inter' runs under it")
            check_sparse_bootstrap(self.ctx, period_for(self.graph))
        return bool(bootstrap)

    def _activation_degrees(self, bounds: dict, pinned) -> dict:
        """Each activation's degree: ``pinned`` if given, 2 without bootstrapping (seed 001),
        else the planner's choice (:func:`.refresh.choose_degrees`)."""
        if pinned is not None or not self.bootstrap:
            return dict.fromkeys(bounds, 2 if pinned is None else pinned)
        if self.packing == "inter":  # one ciphertext per sample: count bootstraps per sample
            bootstrapped = lambda polys: InterRunner(self.graph, self.ctx, polys,  # noqa: E731
                                                     bounds={}).bootstraps_needed()
        else:
            bootstrapped = lambda polys: self._plan_runtime(polys)[0].counts["bootstrapped_ciphertexts"]  # noqa: E731
        return choose_degrees(bounds, self.ctx.max_level, bootstrapped)

    def _walk(self, polys, fresh_levels: dict, runtime=PlanRuntime):
        """One walk of the graph by a planning runtime (PlanRuntime or a subclass that records
        more): (runtime, output values)."""
        rt = runtime(self.ctx.max_level, 2 * self.ctx.poly_degree * 8, polys, masking=self.masking,
                     graph=self.graph, bootstrapping=self.bootstrap, fresh_levels=fresh_levels,
                     chains=self._chains(polys), slots=self.ctx.slots)
        values, _ = Executor(self.graph, rt).run(rt.input(self.graph.input_shape))
        return rt, values

    def _plan_runtime(self, polys, runtime=PlanRuntime, input_level: int | None = None):
        """The planner's walk of the graph with these activations, client-aided results at the
        levels the run encrypts them at, the input at ``input_level`` (default
        :attr:`input_level`, where the documented runs encrypt it): (runtime, output
        ciphertexts)."""
        if self.activation == "client" and self._levels_unlowered is None:
            self._lower_fresh_levels()
        fresh = {n.name: fresh_level(n, self.ctx) for n in self.graph.nodes
                 if "_fresh_level" in n.attrs} if self.activation == "client" else {}
        fresh[INPUT] = self.input_level if input_level is None else min(int(input_level), self.ctx.max_level)
        rt, values = self._walk(polys, fresh, runtime)
        if self._levels_unlowered is not None:  # lowered fresh levels spend the same depths from lower down
            rt.levels_needed = self._levels_unlowered
        return rt, values[0].size

    def _calibrate(self, x, ranges, tensors, margin) -> None:
        """Runs the calibration inputs in the clear: each activation's input range, and
        (bootstrapping) each tensor's bound per element."""
        self._run_plain(x, PlainRuntime(record_ranges=ranges, record_tensors=tensors if self.bootstrap else None))
        if self.bootstrap:
            tensors[self.graph.input_name] = np.max(np.abs(self._per_sample(x)), axis=-1)
            self._bounds = {name: element_bounds(m, margin) for name, m in tensors.items()}

    # ---- plaintext -------------------------------------------------------------
    def _run_plain(self, x, runtime):
        values, _ = Executor(self.graph, runtime).run(self._per_sample(x))
        return np.moveaxis(values[0], -1, 0)

    def _per_sample(self, x):
        """A batch-first array as the plaintext runtime holds it: (*sample_shape, batch)."""
        return np.moveaxis(x.reshape((x.shape[0],) + self.graph.input_shape), 0, -1)

    def plaintext(self, x, approximate: bool = False) -> np.ndarray:
        """The model in the clear (batch first); ``approximate`` uses the fitted polynomials."""
        runtime = PlainRuntime(activation=self.polys if approximate else "exact")
        return self._run_plain(np.asarray(x, dtype=np.float64), runtime)

    # ---- encrypted ---------------------------------------------------------------
    def __call__(self, enc: EncryptedTensor, client=None, progress: bool | None = False,
                 device: str | None = None, memory_check: bool = True, executor=None) -> EncryptedTensor:
        """Runs the model on ``ctx.encrypt_batch(x, keys)``; ``client`` applies the
        client-aided layers. ``progress=True`` shows a bar on stderr (ciphertexts
        produced, layer by layer); ``None`` shows it when stderr is a terminal; a
        callable receives ``(done, total, label)`` after each layer (or sample) instead.
        ``device`` (``"cuda"``, ``"cuda:N"``, ``"cpu"``): where the server's work runs
        (default: where the input's ciphertexts live, e.g. a ``device="cuda"`` context's);
        the input is moved there and the client's replies are placed there, with
        results bit-identical to the CPU's (:mod:`.placement`).

        Before anything is allocated, the plan's predicted peak (less the keys, which
        exist already) is compared with the memory this process can get: a run that does
        not fit spills to disk, or is refused with the numbers
        (:mod:`ringfire.memory_guard`); ``memory_check=False`` skips that (and warns).

        ``executor`` (:mod:`ringfire.parallel`; e.g. ``rf.distributed.RayExecutor(...)``)
        runs each layer's independent ciphertexts -- a linear layer's outputs, an
        activation's elements, a refresh's bootstraps; with inter packing, the samples --
        elsewhere, with results bit-identical to the default in-process run."""
        if not isinstance(enc, EncryptedTensor):
            raise TypeError("[nn] expected the EncryptedTensor from ctx.encrypt_batch(x, keys)")
        executor = IN_PROCESS if executor is None else executor
        enc, client = on_device(enc, client, device)
        on_host = (ciphertext_device(enc) or "cpu") == "cpu"
        needed = self._bytes_to_allocate(enc.packing, _top_level(enc)) if on_host and memory_check else 0
        with guard(needed, "this encrypted inference", memory_check=memory_check,
                   fixes="a smaller batch, or the other packing"):
            return self._run(enc, client, progress, executor)

    @property
    def diagonal_cache_bytes(self) -> int | None:
        """With inter packing, the most bytes of encoded diagonals kept from one sample to the
        next (None, the default: all of them; 0: each linear layer's diagonals are encoded where
        it runs and freed after). Encoding them costs about what the rest of a sample does, so
        keep them where they fit; a model whose diagonals outgrow memory (the plan's
        ``counts["diagonal_bytes"]``: 25 GiB for ResNet-18 at 32x32) runs within a bound, each
        sample encoding again what the cache could not keep. The plan's workspace follows."""
        return self.__dict__.get("_diagonal_cache_bytes")

    @diagonal_cache_bytes.setter
    def diagonal_cache_bytes(self, limit: int | None) -> None:
        self._diagonal_cache_bytes = check_cache_limit(limit)
        if hasattr(self, "_inter_cache"):
            self._inter_cache.set_limit(limit)
        self.__dict__.pop("_guard_bytes", None)  # the memory guard's figures come from the plan

    def _bytes_to_allocate(self, packing: str, input_level: int | None = None) -> int:
        """The plan's predicted peak less the keys (made already), per packing and level of
        the input (batch packing: an input above :attr:`input_level` makes the layers before
        the first key holder larger), computed once (an inter plan builds every linear map to
        count its diagonals); with inter packing, less the encoded diagonals too once an
        earlier sample has cached them all. The pool's cache is counted under the limit in
        force now."""
        cache = self.__dict__.setdefault("_guard_bytes", {})
        key = (packing, input_level if packing == "batch" else None)
        if key not in cache:
            plan = self._plan(packing, input_level)
            cache[key] = (plan.run_bytes, plan.counts.get("transforms", 0), plan.counts.get("diagonal_bytes", 0),
                          plan.allocated_bytes)
        needed, transforms, diagonal_bytes, allocated = cache[key]
        encoded = sum(1 for key in getattr(self, "_inter_cache", {}) if len(key) == 4)  # (node, level, scale, period)
        if packing == "inter" and transforms and encoded >= transforms and self.diagonal_cache_bytes is None:
            needed -= diagonal_bytes
        return needed + pool_cache_bytes(allocated)[0]

    def input_problem(self, packing: str, shape, sample_shape) -> str | None:
        """Why an encrypted input cannot run on this model, or None: its sample (the
        ciphertexts' ``shape`` with batch packing, ``sample_shape`` with inter packing) must
        have the model's input shape."""
        got, expected = tuple(sample_shape if packing == "inter" else shape), tuple(self.graph.input_shape)
        return None if got == expected else f"the model expects inputs of shape {expected} per sample, got {got}"

    def _run(self, enc: EncryptedTensor, client, progress, executor) -> EncryptedTensor:
        if enc.packing == "inter":
            return self._call_inter(enc, client, progress, executor)
        if problem := self.input_problem("batch", enc.cts.shape, enc.sample_shape):
            raise ValueError(f"[nn] {problem}")
        plan = self.plan()
        if not plan.fits:
            raise ValueError(f"[nn] the parameters are too shallow for this model: it needs {plan.levels_needed} "
                             f"levels between (re-)encryptions, the context has {plan.levels_available}. "
                             f"Try {plan.suggestion}")
        if self.activation == "client" and client is None and any(n.op in NONLINEAR_OPS for n in self.graph.nodes):
            raise ValueError("[nn] this model has client-aided layers: pass client=rf.nn.LocalClient(ctx, sk, keys)")
        keys = next(c for c in enc.cts.flat if c is not None).keys
        masker = self._masker(keys)
        refresher = Refresher(self.ctx, keys, self._bounds, executor) if self.bootstrap else None
        runtime = EncryptedRuntime(self.ctx, keys, client, self.polys, masker, refresher, executor,
                                   chains=self._chains(self.polys))
        start = time.perf_counter()
        work = {id(n): int(np.prod(n._out_shape or (1,))) for n in self.graph.nodes}
        total, done = sum(work.values()), [0]
        with progress_bar(total, "encrypted inference", _bar_option(progress), unit="ct") as bar:
            def advance(node):
                bar.set_postfix_str(f"{node.op} {node.name}")
                bar.update(work[id(node)])
                done[0] += work[id(node)]
                if callable(progress):
                    progress(done[0], total, f"{node.op} {node.name}")
            values, _ = Executor(self.graph, runtime).run(enc.cts, on_node=advance)
        self.last_run = {"seconds": time.perf_counter() - start, **runtime.counts,
                         "masked_values": masker.masked_values if masker else 0}
        if refresher is not None:
            self.last_run.update(bootstraps=refresher.bootstraps, bootstrapped_ciphertexts=refresher.ciphertexts,
                                 bootstrap_seconds=refresher.seconds)
        return EncryptedTensor(values[0], enc.batch, self.ctx)

    def __getstate__(self) -> dict:
        # The encoded diagonals one ciphertext per sample caches (tens of GiB on N16_BOOT)
        # are rebuilt by the next run rather than pickled.
        state = dict(self.__dict__)
        state.pop("_inter_cache", None)
        return state

    def _chains(self, polys) -> dict:
        """Client-aided layers that run as one round with the layer before them
        (:func:`.nonlinear.chains_of`); none with masking, whose masks are per layer."""
        return {} if self.masking or self.activation != "client" else chains_of(self.graph, polys)

    def _masker(self, keys) -> Masker | None:
        return Masker(self.ctx, keys, self.mask_bits) if self.masking else None

    def rotations(self) -> list[int]:
        """Galois-key steps inter-axis packing needs (pass to ``ctx.keygen(rotations=...)``);
        batch packing needs none, so a model only it can run (convolutions) returns []."""
        try:
            return InterRunner(self.graph, self.ctx, self.polys).rotations()
        except UnsupportedOperator:
            if self.packing == "inter":
                raise
            return []

    def _call_inter(self, enc: EncryptedTensor, client, progress=False, executor=IN_PROCESS) -> EncryptedTensor:
        if problem := self.input_problem("inter", enc.cts.shape, enc.sample_shape):
            raise ValueError(f"[nn] {problem}")
        if enc.element_slots is not None and not np.array_equal(enc.element_slots, np.arange(enc.element_slots.size)):
            raise ValueError("[nn] this input's elements are not in C-order (it is another model's output, in its "
                             "layout): decrypt it, or encrypt it again with ctx.encrypt_batch(x, keys, "
                             "packing='inter')")
        if not hasattr(self, "_inter_cache"):
            self._inter_cache = DiagonalCache(self.diagonal_cache_bytes)
        bounds = {name: int(b.max()) for name, b in self._bounds.items()} if self.bootstrap else None
        runner = InterRunner(self.graph, self.ctx, self.polys, enc.period, self._inter_cache, bounds)
        runner.check_fits()
        period = runner.period
        needed = runner.levels_needed(self.masking)
        if needed > self.ctx.max_level:
            raise ValueError(f"[nn] packing='inter' needs {needed} levels, the context has "
                             f"{self.ctx.max_level}. Try {suggest_parameters(needed)}")
        masker = self._masker(next(c for c in enc.cts.flat if c is not None).keys)
        if client is not None and getattr(client, "graph", None) is None:
            client.graph = self.graph
        start = time.perf_counter()
        outs = np.empty(enc.cts.size, dtype=object)
        if executor is not IN_PROCESS:
            outs[:] = self._inter_elsewhere(enc, client, executor, runner, bounds)
        else:
            with progress_bar(enc.cts.size, "encrypted inference", _bar_option(progress), unit="sample") as bar:
                for i, ct in enumerate(enc.cts):
                    outs[i] = runner.run(ct, client, masker)
                    bar.update()
                    if callable(progress):
                        progress(i + 1, enc.cts.size, f"sample {i + 1}")
        self.last_run = {"seconds": time.perf_counter() - start, "packing": "inter", "period": period,
                         "layout": runner.placement.kind,
                         "masked_values": masker.masked_values if masker else 0}
        if self.bootstrap:
            self.last_run.update(bootstraps=runner.bootstraps, bootstrap_seconds=runner.bootstrap_seconds,
                                 bootstraps_planned_per_sample=runner.bootstraps_needed())
        out_shape = self.graph.shapes.get(self.graph.output_names[0]) or (None,)
        return EncryptedTensor(outs, enc.batch, self.ctx, "inter", period, out_shape,
                               element_slots=runner.output_slots())

    def _inter_elsewhere(self, enc: EncryptedTensor, client, executor, runner, bounds) -> list:
        """The samples of an inter-packed batch on ``executor``, one task per sample (the
        executor shows its own progress)."""
        if self.activation == "client" and any(n.op in NONLINEAR_OPS for n in self.graph.nodes):
            raise ValueError("[nn] an inter-packed model with client-aided layers runs its samples in this process "
                             "(each waits on the key holder): drop executor=, or use batch packing or polynomial "
                             "activations (activation='poly') to spread it")
        first = next(c for c in enc.cts.flat if c is not None)
        # The token names this model and period in the workers' runner caches (built once each).
        token = self.__dict__.setdefault("_executor_token", uuid.uuid4().hex) + f":{runner.period}"
        spec = (token, self, runner.period, bounds)
        outs = executor.map(work.inter_sample, list(range(enc.cts.size)), ev=self.ctx.evaluator(first.keys),
                            shared=enc.cts.reshape(-1), const=spec, label="samples")
        if self.bootstrap:  # what the runners elsewhere did, as the local runner would count it
            runner.bootstraps = runner.bootstraps_needed() * enc.cts.size
        return outs

    # ---- planning -----------------------------------------------------------------
    def plan(self, dry_run: bool = False) -> Plan:
        """Levels, ciphertext counts, operations and memory, from the planner's rules. With
        ``dry_run=True``, the real encrypted code path then runs on placeholders
        (:mod:`.dry_run`: no arithmetic, the memory of a real run): it raises where the
        real run would, and ``dry_run_bytes`` is the activations' measured peak."""
        plan = self._plan()
        if dry_run and self.packing == "inter":
            raise ValueError("[nn] plan(dry_run=True) rehearses batch packing; an inter-packed model's plan comes "
                             "from its levels and diagonals (plan() without dry_run)")
        if dry_run and plan.fits:
            from .dry_run import dry_run as run_dry
            try:
                rehearsal = run_dry(self)
            except Exception as e:
                raise type(e)(f"[nn] the dry run of the encrypted code path failed although the plan fits: {e}") \
                    from e
            plan.dry_run_bytes = int(rehearsal["activation_bytes"])
            plan.notes.append(f"dry run of the encrypted code path: ran to the end in {rehearsal['seconds']:.1f} s; "
                              f"activations peaked at {plan.dry_run_bytes / 2**30:.3f} GiB "
                              f"(planned {plan.activation_bytes / 2**30:.3f})")
        return plan

    def _plan(self, packing: str | None = None, input_level: int | None = None) -> Plan:
        """The plan under ``packing`` (default: the model's own); with batch packing, the input
        at ``input_level`` (default :attr:`input_level`)."""
        return self._plan_inter() if (packing or self.packing) == "inter" else self._plan_batch(input_level)

    def _inter_runner(self) -> InterRunner:
        """A runner for planning one ciphertext per sample (no cache; bootstrapping from levels)."""
        return InterRunner(self.graph, self.ctx, self.polys, bounds={} if self.bootstrap else None)

    def _plan_batch(self, input_level: int | None = None) -> Plan:
        ctx = self.ctx
        rt, output_ciphertexts = self._plan_runtime(self.polys, input_level=input_level)
        key_bytes, workspace, notes = self._keys_and_workspace()
        levels = rt.levels_needed
        allocated = rt.allocated + workspace
        cached, note = pool_cache_bytes(allocated)
        notes.append(note)
        level = rt.fresh_levels[INPUT]
        if level < ctx.max_level:
            notes.append(f"the input counted at level {level} of {ctx.max_level}"
                         + (" (model.input_level: ctx.encrypt_batch(x, keys, level=model.input_level))"
                            if input_level is None else ""))
        return Plan(notes=notes, levels_needed=levels, levels_available=ctx.max_level,
                    input_ciphertexts=int(np.prod(self.graph.input_shape)), output_ciphertexts=output_ciphertexts,
                    largest_tensor=rt.largest_tensor, counts=dict(rt.counts), activation_bytes=int(rt.peak),
                    key_bytes=int(key_bytes), workspace_bytes=int(workspace), staging_bytes=int(rt.staging),
                    pool_cache_bytes=cached, allocated_bytes=int(allocated),
                    suggestion=None if levels <= ctx.max_level else suggest_parameters(levels))

    def _keys_and_workspace(self) -> tuple[int, int, list]:
        """Bytes of the relinearization, public and bootstrapping keys, of the key-switching
        (and bootstrapping) temporaries, and notes saying what they hold."""
        ctx = self.ctx
        n = ctx.poly_degree
        limbs = len(ctx.params.q_primes)  # these keys span the whole chain, bootstrapping's levels included
        key_limbs = limbs + len(ctx.params.p_primes)
        key_bytes = ctx._core.rlwe.switch_key_bytes(limbs - 1) + 2 * limbs * n * 8  # relinearization + public
        workspace = (2 * 2 + 3) * key_limbs * n * 8   # key-switching accumulators and temporaries
        notes = []
        if self.bootstrap:  # its Galois and encapsulation keys (seeded, as held), the DFT diagonals, its temporaries
            boot = ctx.bootstrap_plan()
            key_bytes += boot.held_bytes + boot.plaintext_bytes
            workspace += boot.temporary_bytes
            notes.append(f"the workspace includes {boot.temporary_bytes / 2**30:.2f} GiB for a bootstrap's "
                         "temporaries, the bootstrap plan's count of its circuit in the pool's blocks")
        return key_bytes, workspace, notes

    def _plan_inter(self) -> Plan:
        """One ciphertext per sample (:mod:`.inter_plan`): counts per sample; memory for one
        sample in flight, the Galois keys and the diagonals every sample reuses."""
        ctx = self.ctx
        runner = self._inter_runner()
        period = runner.period
        costs = inter_costs(runner, self.masking)
        key_bytes, workspace, notes = self._keys_and_workspace()
        galois = len(runner.rotations())
        key_bytes += galois * ctx._core.rlwe.switch_key_bytes(ctx.max_level)
        hoisted = costs.hoisted * 2 * (ctx.max_level + 1) * ctx.poly_degree * 8  # the baby rotations
        limit = self.diagonal_cache_bytes
        bounded = limit is not None and limit < costs.diagonal_bytes
        # Within a bound: what the cache keeps, and the transform at hand beside it.
        diagonals = min(costs.diagonal_bytes, limit + costs.largest_diagonal_bytes) if bounded \
            else costs.diagonal_bytes
        workspace += hoisted + diagonals
        # Every sample's tensors, the workspace, and the diagonals each sample encodes again.
        allocated = costs.activation_bytes + workspace + (costs.diagonal_bytes if bounded else 0)
        pool_cached, cache_note = pool_cache_bytes(allocated)
        cached = (f"at most {limit / 2**30:.2f} GiB of them kept between samples (diagonal_cache_bytes), the rest "
                  "encoded again at every sample" if bounded else "cached for every sample")
        notes.append(f"packing='inter', period {period}, {runner.placement.kind} layout: per sample "
                     f"{costs.transforms} linear transforms ({costs.diagonals} diagonals, {costs.key_switches} "
                     "rotations)"
                     + (f", {costs.products} products of ciphertexts" if costs.products else "")
                     + (f", {costs.bootstraps} bootstraps" if self.bootstrap else "")
                     + f"; {galois} Galois keys; {costs.diagonal_bytes / 2**30:.2f} GiB of encoded diagonals, "
                     + cached)
        if galois:
            try:
                notes.append(f"keys on the wire: {ctx.master_key_plan(runner.rotations(), ctx.max_level)}")
            except ValueError:  # no room for master keys at the user's top level
                pass
        if self.bootstrap and sparse_bootstrap_slots(ctx) is None and 2 * period <= ctx.slots:
            notes.append(f"the bootstrap keeps all {ctx.slots} slots where a sample needs {period}: a context made "
                         f"with bootstrap={{'slots': {period}}} bootstraps sooner (one EvalMod instead of two), "
                         "with fewer keys")
        counts = {"packing": "inter", "period": period, "layout": runner.placement.kind, "galois_keys": galois,
                  "transforms": costs.transforms, "diagonals": costs.diagonals, "rotations_per_sample": costs.key_switches,
                  "bootstraps_per_sample": costs.bootstraps, "diagonal_bytes": costs.diagonal_bytes,
                  "ct_mults": costs.products}
        levels = runner.levels_needed(self.masking)
        if period > ctx.slots:
            notes.insert(0, f"a sample's period {period} exceeds the context's {ctx.slots} slots: one sample per "
                            f"ciphertext needs poly_degree >= {2 * period}, or packing='batch'")
        return Plan(notes=notes + [cache_note], levels_needed=levels, levels_available=ctx.max_level,
                    input_ciphertexts=1, slots_fit=period <= ctx.slots,
                    output_ciphertexts=1, largest_tensor=1, counts=counts,
                    activation_bytes=int(costs.activation_bytes), key_bytes=int(key_bytes),
                    workspace_bytes=int(workspace), staging_bytes=int(costs.staging_bytes), pool_cache_bytes=pool_cached,
                    allocated_bytes=int(allocated),
                    suggestion=None if levels <= ctx.max_level else suggest_parameters(levels))

    def choose_packing(self, samples: int, costs: dict | None = None) -> dict:
        """The packing that runs ``samples`` samples sooner, from the plan's counts and
        measured per-operation costs (``costs.measure_costs(ctx, keys, secret_key)``;
        measured here when None, a few seconds; with bootstrapping, pass costs measured
        with bootstrapping keys). A batch-packed run costs the same for 1 sample as for a
        full batch (the batch lives in the slots: ``ceil(samples / slots)`` runs); one
        ciphertext per sample costs per sample, far less each, after encoding its diagonals once. Returns ``{"packing",
        "batch_seconds", "inter_seconds", "reason"}``; encrypt with
        ``ctx.encrypt_batch(x, keys, packing=choice["packing"])`` on a model loaded with
        ``packing="any"``."""
        from . import costs as cost_model

        if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
            raise ValueError(f"[nn.choose_packing] samples must be a positive integer, got {samples!r}")
        if costs is None:
            costs = cost_model.measure_costs(self.ctx)
        runs = -(-int(samples) // self.ctx.slots)
        batch = runs * cost_model.predict_batch_seconds(self, costs)
        try:
            period_for(self.graph)
        except UnsupportedOperator as e:
            return {"packing": "batch", "batch_seconds": batch, "inter_seconds": None,
                    "reason": f"one ciphertext per sample cannot run this model: {e}"}
        parts = cost_model.predict_inter_breakdown(self, costs)
        inter = parts["encoding"] + int(samples) * parts["total"]
        packing = "inter" if inter < batch else "batch"
        reason = (f"{samples} sample(s): about {inter:.3g} s one per ciphertext ({parts['encoding']:.3g} s of it "
                  f"encoding the diagonals once) against {batch:.3g} s batch-packed ({runs} run(s) of up to "
                  f"{self.ctx.slots})")
        return {"packing": packing, "batch_seconds": batch, "inter_seconds": inter, "reason": reason}

    def describe(self) -> str:
        ops = {}
        for node in self.graph.nodes:
            ops[node.op] = ops.get(node.op, 0) + 1
        masking = f", masking (mask_bits={self.mask_bits:g})" if self.masking else ""
        masking += ", bootstrapping where levels run out" if self.bootstrap else ""
        lines = [f"input per sample {self.graph.input_shape}; operators {ops}; activation={self.activation}{masking}"]
        lines += [f"  {name}: {p.describe()}" for name, p in self.polys.items()]
        return "\n".join(lines)


def _bar_option(progress):
    """What the progress bar takes: a callable reports on its own, without a bar."""
    return False if callable(progress) else progress


def load(model, ctx, **options) -> Model:
    """Loads an ONNX model (path, bytes, ``onnx.ModelProto``, or a ``torch.nn.Module``
    in eval mode with ``example_input=`` and optionally ``exporter="auto"|"torchscript"|
    "dynamo"`` and ``batch_axis=`` (1 for a sequence-first module, torch's transformer layers
    by default: the loaded model then takes batch-first inputs), see
    :mod:`ringfire.nn.torch_export`) for encrypted inference under ``ctx``."""
    graph = _graph(model, options.pop("example_input", None), options.pop("exporter", "auto"),
                   options.pop("batch_axis", 0))
    return Model(graph, ctx, **options)


def inter_period(model, example_input=None, exporter: str = "auto", batch_axis: int = 0) -> int:
    """The period one sample per ciphertext (``packing="inter"``) tiles ``model``'s tensors
    with (``model`` as :func:`load` takes it). It is known before any context exists, so a
    bootstrappable context can bootstrap just those slots, which is faster and needs fewer
    keys than full-slot bootstrapping::

        period = rf.nn.inter_period("resnet20.onnx")                       # 16384 at 32x32
        ctx = rf.ckks.Context.preset("N16_BOOT", bootstrap={"slots": period})
    """
    return period_for(_graph(model, example_input, exporter, batch_axis))


def _graph(model, example, exporter, batch_axis=0) -> Graph:
    if is_torch_module(model):
        model = export_torch(model, example, exporter, batch_axis)
    elif example is not None or batch_axis != 0:
        raise ValueError("[nn] example_input= and batch_axis= are for torch modules; an ONNX model carries its "
                         "input shape")
    return Graph.from_onnx(model)
