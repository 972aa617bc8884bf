"""Micro-architecture parameters of one RPU design point (seed 004 §IV, §VI).

Defaults are the paper's (128 HPLEs, 128 VDM banks) design. Latencies the paper
does not state are our choices, marked below; the sensitivity study (seed 004
Figs. 8-9, ``docs/rpu.md``) varies them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

# Clock = VDM clock (single clock domain), seed 004 §IV-B3 and §VI-B.
FREQUENCY_BY_BANKS = {32: 1.29e9, 64: 1.53e9, 128: 1.68e9, 256: 1.68e9}
TREBUCHET_FREQUENCY = 2.0e9   # seed 003: 18.3k cycles = 9.15 us


@dataclass(frozen=True)
class RpuConfig:
    """One RPU configuration.

    ``hples``
        lanes (High-Performance LAW Engines); a 512-lane instruction takes ceil(512 / hples)
        cycles per lane.
    ``banks``
        VDM banks; word w lives in bank ``w % banks``; a vector load/store moves at most one
        word per bank per cycle.
    ``mul_latency``
        modular-multiplier pipeline depth (ours: 8, Barrett 128b).
    ``mul_ii``
        multiplier initiation interval (cycles between elements).
    ``add_latency``
        modular adder/subtractor depth (ours: 1).
    ``shuffle_latency``
        SBAR latency (paper: <= 7 costs nothing; ours: 4).
    ``ls_latency``
        VBAR/VDM latency (paper sweeps 4..10; ours: 4).
    ``queue_depth``
        entries in each of the three decoupled queues (ours: 8).
    ``regs_per_sram``
        vector registers stacked in one single-port VRF SRAM (RPU paper and TREBUCHET v2: 4;
        TREBUCHET v1: 1).
    ``busy_reads``
        the busyboard also marks registers an in-flight instruction only *reads*. Seed 004
        says it "tracks all the vector registers being used by all in-flight instructions";
        read literally (True) our best schedules of the 64K NTT need ~15-17k cycles, 1.5x
        the paper's 11.3k, so the default (False) tracks destinations and makes writers wait
        for pending readers (WAR) -- see docs/rpu.md.
    ``frequency_hz``
        clock; None -> from the bank count (1.29/1.53/1.68/1.68 GHz).
    """
    hples: int = 128
    banks: int = 128
    mul_latency: int = 8
    mul_ii: int = 1
    add_latency: int = 1
    shuffle_latency: int = 4
    ls_latency: int = 4
    queue_depth: int = 8
    regs_per_sram: int = 4
    busy_reads: bool = False
    frequency_hz: float | None = None

    def __post_init__(self):
        for name in ("hples", "banks"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1 or v > 512 or v & (v - 1):
                raise ValueError(f"[rpu.config] {name} must be a power of two in [1, 512], got {v!r}")
        for name in ("mul_latency", "add_latency", "shuffle_latency", "ls_latency"):
            v = getattr(self, name)
            if not isinstance(v, int) or not 0 <= v <= 1000:
                raise ValueError(f"[rpu.config] {name} must be an int in [0, 1000], got {v!r}")
        if not isinstance(self.mul_ii, int) or not 1 <= self.mul_ii <= 64:
            raise ValueError(f"[rpu.config] mul_ii must be in [1, 64], got {self.mul_ii!r}")
        if not isinstance(self.queue_depth, int) or self.queue_depth < 1:
            raise ValueError(f"[rpu.config] queue_depth must be >= 1, got {self.queue_depth!r}")
        if self.regs_per_sram not in (1, 2, 4, 8, 16, 32, 64):
            raise ValueError(f"[rpu.config] regs_per_sram must be a power of two dividing 64, got {self.regs_per_sram}")
        if self.frequency_hz is None and self.banks not in FREQUENCY_BY_BANKS:
            raise ValueError(f"[rpu.config] no published clock for {self.banks} banks "
                             f"(known: {sorted(FREQUENCY_BY_BANKS)}); pass frequency_hz")
        if self.frequency_hz is not None and not self.frequency_hz > 0:
            raise ValueError(f"[rpu.config] frequency_hz must be > 0, got {self.frequency_hz}")

    @property
    def clock_hz(self) -> float:
        return self.frequency_hz if self.frequency_hz is not None else FREQUENCY_BY_BANKS[self.banks]

    @property
    def elements_per_lane(self) -> int:
        return -(-512 // self.hples)

    def replace(self, **changes) -> "RpuConfig":
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["frequency_hz"] = self.clock_hz
        return d


def trebuchet_tile(version: int) -> RpuConfig:
    """The TREBUCHET RPU tile (seed 003): v1 = one vector register per VRF SRAM, v2 = four.

    Seed 003 does not give the tile's lane/bank counts; its "ideal" 16k cycles
    for a 64K NTT equals n*log2(n)/64, so we take 64 HPLEs and 64 banks at 2 GHz.
    """
    if version not in (1, 2):
        raise ValueError(f"[rpu.config] TREBUCHET tile version is 1 or 2, got {version}")
    return RpuConfig(hples=64, banks=64, regs_per_sram=1 if version == 1 else 4, frequency_hz=TREBUCHET_FREQUENCY)
