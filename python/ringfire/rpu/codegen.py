"""NTT program generator for the RPU (seed 004 §V, seed 003 §IV) and a one-call runner.

>>> from ringfire.rpu import codegen
>>> prog = codegen.generate_ntt(1024)                     # optimized forward 1K NTT
>>> result = codegen.run_ntt(prog, q=ring.find_primes(61, 1, 1024)[0])   # doctest: +SKIP
>>> result["verified"], result["cycles"]                  # doctest: +SKIP

Generated programs do not depend on the modulus: the kernel reads ``q``, the
buffer addresses and ``1/n`` from the SDM (see :mod:`ringfire.rpu.ntt_graph`
for the memory plan), so one program serves every prime below 2^128.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from .config import RpuConfig
from .cycle import CycleReport, simulate
from .functional import DEFAULT_VDM_BYTES, Machine
from .isa import WORD_BYTES, Instruction
from .ntt_graph import (BUF_TWIDDLE, BUF_X, BUF_Y, SDM_MODULUS, SDM_NINV, SDM_TWIDDLE, SDM_X, SDM_Y,
                        NttGraph, build_ntt_graph)
from .reference import library_ntt, twiddle_table
from .schedule import emit_naive, emit_scheduled


@dataclass
class NttProgram:
    """A generated kernel plus what is needed to set up and read back a run."""
    n: int
    inverse: bool
    optimized: bool
    program: list[Instruction]
    graph: NttGraph
    config: RpuConfig

    def buffer_word(self, buf: int) -> int:
        return {BUF_X: 0, BUF_Y: self.n, BUF_TWIDDLE: 2 * self.n}[buf]

    def load_inputs(self, machine: Machine, coeffs, q: int) -> None:
        """Writes SDM constants, the twiddle table and the input into ``machine``."""
        n = self.n
        if len(coeffs) != n:
            raise ValueError(f"[rpu.codegen] expected {n} input values, got {len(coeffs)}")
        if 3 * n > len(machine.vdm):
            raise ValueError(f"[rpu.codegen] a {n}-point NTT needs {3 * n * WORD_BYTES} B of VDM, "
                             f"the machine has {len(machine.vdm) * WORD_BYTES}")
        sdm = [0] * 5
        sdm[SDM_MODULUS] = q
        sdm[SDM_X], sdm[SDM_Y], sdm[SDM_TWIDDLE] = (self.buffer_word(b) * WORD_BYTES
                                                    for b in (BUF_X, BUF_Y, BUF_TWIDDLE))
        sdm[SDM_NINV] = pow(n, -1, q)
        machine.sdm_write(0, sdm)
        machine.vdm_write(self.buffer_word(BUF_TWIDDLE), twiddle_table(n, q, inverse=self.inverse))
        machine.vdm_write(self.buffer_word(BUF_X), coeffs)

    def read_output(self, machine: Machine) -> list[int]:
        return machine.vdm_read(self.buffer_word(self.graph.output_buffer), self.n)

    def counts(self) -> dict:
        out: dict[str, int] = {}
        for instr in self.program:
            out[instr.op] = out.get(instr.op, 0) + 1
        return out


def generate_ntt(n: int, inverse: bool = False, optimized: bool = True, config: RpuConfig | None = None,
                 resident_vectors: int = 32, group_vectors: int = 16, twiddle_share: int = 4,
                 window: int = 3) -> NttProgram:
    """A forward (or inverse) negacyclic NTT kernel for ``n`` in 1K..64K.

    ``optimized=False`` gives the naive program (graph order, round-robin
    registers); ``optimized=True`` list-schedules against ``config``'s cycle
    model. ``resident_vectors``: largest transform (in 512-vectors) kept in
    registers for all stages; ``group_vectors``: rectangle size above that;
    ``twiddle_share``: butterflies sharing one twiddle register.
    """
    config = config or RpuConfig()
    graph = build_ntt_graph(n, inverse, resident_vectors, group_vectors, twiddle_share)
    program = emit_scheduled(graph, config, window=window) if optimized else emit_naive(graph)
    return NttProgram(n, inverse, optimized, program, graph, config)


def run_ntt(prog: NttProgram, q: int, coeffs=None, seed: int = 1, functional: bool = True) -> dict:
    """Runs ``prog`` functionally (checked against the library NTT) and through the cycle model.

    ``coeffs`` defaults to seeded random values below ``q``. Returns cycles,
    seconds, frequency, verification and wall-clock timings of each step.
    """
    if not (3 <= q < (1 << 128) and q % (2 * prog.n) == 1):
        raise ValueError(f"[rpu.codegen] q must be an NTT-friendly prime (q = 1 mod 2n) below 2^128, got {q}")
    if coeffs is None:
        rnd = random.Random(seed)
        coeffs = [rnd.randrange(q) for _ in range(prog.n)]
    out: dict = {"n": prog.n, "q_bits": q.bit_length(), "inverse": prog.inverse, "optimized": prog.optimized}
    t0 = time.perf_counter()
    if functional:
        machine = Machine(vdm_bytes=max(DEFAULT_VDM_BYTES, 3 * prog.n * WORD_BYTES))
        prog.load_inputs(machine, coeffs, q)
        machine.run(prog.program)
        got = prog.read_output(machine)
        t1 = time.perf_counter()
        expected, oracle = library_ntt(coeffs, q, inverse=prog.inverse)
        out.update(verified=got == expected, oracle=oracle, functional_seconds=t1 - t0)
    else:
        out.update(verified=None, oracle=None, functional_seconds=0.0)
    t2 = time.perf_counter()
    report: CycleReport = simulate(prog.program, prog.config)
    out["cycle_model_seconds"] = time.perf_counter() - t2
    out.update(report.as_dict())
    out["theoretical_cycles"] = prog.n * (prog.n.bit_length() - 1) // prog.config.hples
    out["instruction_counts"] = prog.counts()
    return out
