"""Cycle-level timing model of the RPU (seed 004 §IV): front end, busyboard, queues, pipelines.

The model is event-driven at instruction granularity, which makes it exact for
this machine and fast (a 64K NTT, ~5k instructions, in ~0.1 s):

1. **Front end** -- in order, at most one dispatch per cycle. An instruction
   dispatches at the first cycle ``t`` when (a) none of its registers is on the
   busyboard and (b) its queue has a free entry. Otherwise the *whole* front end
   stalls; the stall is charged to the reason that held it last (busyboard or
   queue full) and to the waiting instruction's pipeline.
2. **Busyboard** -- every register an instruction names (vector and scalar) is
   busy from its dispatch until its last write-back. With
   ``busy_reads=False`` only written registers are tracked (plus WAR: a writer
   waits until earlier readers have streamed their operands out).
3. **Three decoupled queues/pipelines** (load/store, compute, shuffle), each
   in order and fully pipelined: a new instruction starts ``occupancy`` cycles
   after the previous one in the same pipeline.
4. **Occupancy** -- ``e = ceil(512 / hples)`` elements per lane. Compute:
   ``e * mul_ii`` for multiplies and butterflies, ``e`` for add/sub; shuffle:
   ``e``; vector load/store: ``max(e, words per VDM bank)`` where word ``w``
   lives in bank ``w % banks`` (bank conflicts of strided patterns appear here).
5. **Latency** (start to last write-back) = occupancy + unit depth
   (``mul_latency (+ add_latency)``, ``add_latency``, ``shuffle_latency``,
   ``ls_latency``).
6. **VRF SRAM ports** -- register ``r`` lives in single-port SRAM
   ``r // regs_per_sram``. An instruction streams its operands out of their
   SRAMs during ``[start, start + occupancy)`` and its results in during the
   last ``occupancy`` cycles of its latency; two streams may not use one SRAM
   in the same cycle, so a start is delayed until all its windows are free
   (older instructions win). Two operands in one SRAM serialise.
"""

from __future__ import annotations

import functools
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from .config import RpuConfig
from .functional import element_offsets
from .isa import COMPUTE, LOADSTORE, SHUFFLE, Instruction

PIPELINES = (LOADSTORE, COMPUTE, SHUFFLE)


@functools.lru_cache(maxsize=None)
def words_per_bank(mode: int, value: int, banks: int) -> int:
    """The most distinct words one vector access reads from a single VDM bank (rotation-invariant).

    A repeated word (REPEATED mode, broadcast) is read once and fanned out by the VBAR.
    """
    return int(np.bincount(np.unique(element_offsets(mode, value)) % banks, minlength=banks).max())


@dataclass
class Timing:
    """When one instruction dispatched, started and finished (cycles)."""
    dispatch: int
    start: int
    finish: int
    pipeline: str
    occupancy: int


@dataclass
class CycleReport:
    """What a simulation reports (seed 004 §VI: cycles, time, utilisation, stalls)."""
    cycles: int
    frequency_hz: float
    instructions: int
    counts: dict = field(default_factory=dict)            # per pipeline
    busy_cycles: dict = field(default_factory=dict)       # per pipeline
    busyboard_stalls: dict = field(default_factory=dict)  # front-end stall cycles, by waiting pipeline
    queue_stalls: dict = field(default_factory=dict)      # front-end stall cycles, by full queue
    sram_delay: int = 0                                    # cycles starts were pushed by VRF SRAM conflicts
    config: dict = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return self.cycles / self.frequency_hz

    @property
    def utilization(self) -> dict:
        return {p: (self.busy_cycles[p] / self.cycles if self.cycles else 0.0) for p in PIPELINES}

    def as_dict(self) -> dict:
        return {"cycles": self.cycles, "seconds": self.seconds, "frequency_hz": self.frequency_hz,
                "instructions": self.instructions, "counts": dict(self.counts),
                "busy_cycles": dict(self.busy_cycles), "utilization": self.utilization,
                "stalls": {"busyboard": dict(self.busyboard_stalls), "queue_full": dict(self.queue_stalls),
                           "total": sum(self.busyboard_stalls.values()) + sum(self.queue_stalls.values())},
                "sram_conflict_delay": self.sram_delay, "config": dict(self.config)}


class CycleModel:
    """Incremental model: :meth:`probe` says when an instruction could dispatch, :meth:`issue` commits it.

    The list scheduler of :mod:`ringfire.rpu.schedule` drives the same object, so
    the cycles it optimises for are exactly the cycles :func:`simulate` reports.
    """

    def __init__(self, config: RpuConfig):
        self.cfg = config
        self.fe_next = 0
        self.busy_until: dict[str, int] = {}
        self.read_until: dict[str, int] = {}
        self.pipe_free = {p: 0 for p in PIPELINES}
        self.queue_starts = {p: deque(maxlen=config.queue_depth) for p in PIPELINES}
        self.sram: dict[int, list[tuple[int, int]]] = {}
        self.finish = 0
        self.counts = {p: 0 for p in PIPELINES}
        self.busy_cycles = {p: 0 for p in PIPELINES}
        self.busyboard_stalls = {p: 0 for p in PIPELINES}
        self.queue_stalls = {p: 0 for p in PIPELINES}
        self.sram_delay = 0

    # ---- costs -------------------------------------------------------------------
    def _shape(self, instr: Instruction) -> tuple[int, int]:
        """(occupancy, latency) before VRF SRAM serialisation."""
        c, e = self.cfg, self.cfg.elements_per_lane
        fmt = instr.info.fmt
        if fmt == "vmem":
            occ = max(e, words_per_bank(instr.mode, instr.value, c.banks))
            return occ, occ + c.ls_latency
        if fmt == "smem":
            return 1, 1 + c.ls_latency
        if fmt == "shuf":
            return e, e + c.shuffle_latency
        if fmt == "bfly":
            occ = e * c.mul_ii
            return occ, occ + c.mul_latency + c.add_latency
        if instr.op.startswith("vmulmod"):
            occ = e * c.mul_ii
            return occ, occ + c.mul_latency
        return e, e + c.add_latency

    def _registers(self, instr: Instruction) -> tuple[list[str], list[str]]:
        reads = [f"v{r}" for r in instr.vector_reads()]
        writes = [f"v{r}" for r in instr.vector_writes()]
        scalars = list(instr.scalar_regs())
        if instr.info.fmt == "smem":
            writes += scalars
        else:
            reads += scalars
        return reads, writes

    def _windows(self, instr: Instruction) -> tuple[int, int, list[tuple[int, int, int]]]:
        """(occupancy, latency, [(sram, begin offset, length)]) with same-SRAM streams serialised."""
        occ, lat = self._shape(instr)
        per = self.cfg.regs_per_sram
        reads: dict[int, int] = {}
        writes: dict[int, int] = {}
        for r in instr.vector_reads():
            reads[r // per] = reads.get(r // per, 0) + 1
        for r in instr.vector_writes():
            writes[r // per] = writes.get(r // per, 0) + 1
        worst_read = max(reads.values(), default=1)
        occ_eff = occ * worst_read
        lat += occ_eff - occ
        windows = [(s, 0, n * occ) for s, n in reads.items()]
        for s, n in writes.items():
            begin = lat - n * occ
            if s in reads:
                begin = max(begin, reads[s] * occ)
            lat = max(lat, begin + n * occ)
            windows.append((s, begin, n * occ))
        return occ_eff, lat, windows

    # ---- dispatch ------------------------------------------------------------------
    def probe(self, instr: Instruction) -> tuple[int, str | None]:
        """Earliest dispatch cycle of ``instr`` now, and what holds it (None, 'busyboard', 'queue')."""
        reads, writes = self._registers(instr)
        return self.probe_registers(reads, writes, instr.pipeline)

    def probe_registers(self, reads, writes, pipeline: str) -> tuple[int, str | None]:
        """:meth:`probe` for an instruction given by its register names (``'v3'``, ``'m0'``)."""
        t, reason = self.fe_next, None
        busy = self.busy_until
        for r in reads + writes:
            b = busy.get(r, 0)
            if b > t:
                t, reason = b, "busyboard"
        if not self.cfg.busy_reads:
            for r in writes:
                b = self.read_until.get(r, 0)
                if b > t:
                    t, reason = b, "busyboard"
        starts = self.queue_starts[pipeline]
        if len(starts) == self.cfg.queue_depth and starts[0] > t:
            t, reason = starts[0], "queue"
        return t, reason

    def issue(self, instr: Instruction) -> Timing:
        """Dispatches ``instr`` at its earliest cycle and returns its timing."""
        t, reason = self.probe(instr)
        pipe = instr.pipeline
        stall = t - self.fe_next
        if stall > 0:
            (self.busyboard_stalls if reason == "busyboard" else self.queue_stalls)[pipe] += stall
        occ, lat, windows = self._windows(instr)
        first = max(t + 1, self.pipe_free[pipe])
        start = self._fit(first, windows, prune_before=t)
        self.sram_delay += start - first
        finish = start + lat
        for s, b, length in windows:
            self.sram.setdefault(s, []).append((start + b, start + b + length))
        reads, writes = self._registers(instr)
        if self.cfg.busy_reads:
            for r in reads + writes:
                self.busy_until[r] = finish
        else:
            for r in writes:
                self.busy_until[r] = finish
            for r in reads:
                self.read_until[r] = max(self.read_until.get(r, 0), start + occ)
        self.pipe_free[pipe] = start + occ
        self.queue_starts[pipe].append(start)
        self.fe_next = t + 1
        self.finish = max(self.finish, finish)
        self.counts[pipe] += 1
        self.busy_cycles[pipe] += occ
        return Timing(t, start, finish, pipe, occ)

    def _fit(self, start: int, windows, prune_before: int) -> int:
        for s, _, _ in windows:
            lst = self.sram.get(s)
            if lst and lst[0][1] <= prune_before:
                self.sram[s] = [iv for iv in lst if iv[1] > prune_before]
        moved = True
        while moved:
            moved = False
            for s, b, length in windows:
                for lo, hi in self.sram.get(s, ()):
                    if start + b < hi and lo < start + b + length:
                        start, moved = hi - b, True
        return start

    def report(self, instructions: int) -> CycleReport:
        cycles = max(self.finish, self.fe_next)
        return CycleReport(cycles=cycles, frequency_hz=self.cfg.clock_hz, instructions=instructions,
                           counts=dict(self.counts), busy_cycles=dict(self.busy_cycles),
                           busyboard_stalls=dict(self.busyboard_stalls), queue_stalls=dict(self.queue_stalls),
                           sram_delay=self.sram_delay, config=self.cfg.as_dict())


def simulate(program, config: RpuConfig | None = None) -> CycleReport:
    """Runs the timing model over a program (a list of :class:`Instruction`)."""
    model = CycleModel(config or RpuConfig())
    n = 0
    for instr in program:
        model.issue(instr)
        n += 1
    return model.report(n)
