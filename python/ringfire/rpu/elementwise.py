"""Element-wise ring kernels for the RPU: ringAdd, ringMult and a vector copy (seed 003's RA, RM).

Each kernel streams ``n / 512`` vectors: load the operands, one modular
add (or multiply), store the result. Registers rotate over ``groups``
sets, each set's registers in different VRF SRAMs whatever the
configuration stacks per SRAM, and the program is software-pipelined by
``lag`` vectors. On the TREBUCHET tile (``config.trebuchet_tile``) a 64K
ringAdd or ringMult then takes 3,084 cycles (1.54 us at 2 GHz): the
load/store pipeline's bound, 3 x 128 vectors x 8 cycles, plus latency
(seed 003 measured 1.73 us). Without the pipelining (``lag=0``) the
in-order front end waits on each result: 5,004 and 5,900 cycles. Memory plan: three ``n``-word buffers (a, b,
out) back to back in the VDM, their byte addresses in SDM words 1..3,
the modulus in SDM word 0.

>>> from ringfire.rpu import elementwise
>>> prog = elementwise.generate("mult", 1024)
>>> elementwise.run(prog, q=(1 << 61) - 1)["verified"]   # doctest: +SKIP
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .config import RpuConfig
from .cycle import simulate
from .functional import Machine
from .isa import VECTOR_LENGTH, WORD_BYTES, Instruction

KERNELS = {"add": "vaddmod", "mult": "vmulmod", "copy": None}
SDM_MODULUS, SDM_A, SDM_B, SDM_OUT = 0, 1, 2, 3


@dataclass
class ElementwiseProgram:
    kernel: str
    n: int
    program: list[Instruction]

    def vectors(self) -> int:
        return self.n // VECTOR_LENGTH


def generate(kernel: str, n: int, groups: int = 16, lag: int = 3) -> ElementwiseProgram:
    """The ``kernel`` (``add``, ``mult`` or ``copy``) program over ``n`` words (512 <= n <= 64K, a power of two)."""
    if kernel not in KERNELS:
        raise ValueError(f"[rpu.elementwise] kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")
    if not (VECTOR_LENGTH <= n <= 65536 and n & (n - 1) == 0):
        raise ValueError(f"[rpu.elementwise] n must be a power of two in [512, 65536], got {n}")
    if not 1 <= groups <= 21:
        raise ValueError(f"[rpu.elementwise] groups must be in [1, 21] (3 registers each), got {groups}")
    if not 0 <= 2 * lag < groups:
        raise ValueError(f"[rpu.elementwise] lag must be in [0, groups / 2), got {lag} with {groups} groups")
    prog = [Instruction("mload", rt=0, address=SDM_MODULUS)]
    prog += [Instruction("aload", rt=r, address=w) for r, w in ((0, SDM_A), (1, SDM_B), (2, SDM_OUT))]
    op = KERNELS[kernel]
    vectors = n // VECTOR_LENGTH
    # Software-pipelined: step i loads vector i, computes vector i - lag and
    # stores vector i - 2 * lag, so the in-order front end never waits on a
    # result it has just asked for.
    for i in range(vectors + 2 * lag):
        if i < vectors:
            prog += [Instruction("vload", vd=reg, address=_offset(i), rm=buf)
                     for reg, buf in zip(_registers(i, groups), (0, 1) if op else (0,))]
        c = i - lag
        if op is not None and 0 <= c < vectors:
            ra, rb, rc = _registers(c, groups)
            prog.append(Instruction(op, vd=rc, vs=ra, vt=rb, rm=0))
        s = i - 2 * lag
        if 0 <= s < vectors:
            ra, _, rc = _registers(s, groups)
            prog.append(Instruction("vstore", vd=rc if op else ra, address=_offset(s), rm=2))
    return ElementwiseProgram(kernel, n, prog)


def _registers(i: int, groups: int) -> tuple[int, int, int]:
    """Vector i's operand, operand and result registers: three SRAMs apart for any stacking up to 16."""
    g = i % groups
    return g, g + 21, g + 42


def _offset(i: int) -> int:
    return i * VECTOR_LENGTH * WORD_BYTES


def cycles(kernel: str, n: int, config: RpuConfig | None = None) -> dict:
    """Cycles and seconds of one ``kernel`` over ``n`` words on ``config`` (the cycle model)."""
    config = config or RpuConfig()
    report = simulate(generate(kernel, n).program, config)
    return {"kernel": kernel, "n": n, "cycles": report.cycles, "seconds": report.seconds,
            "frequency_hz": report.frequency_hz}


def run(prog: ElementwiseProgram, q: int, seed: int = 1) -> dict:
    """Runs ``prog`` on the functional simulator with random operands below ``q``; checks it against Python."""
    if not 3 <= q < (1 << 128) or q % 2 == 0:
        raise ValueError(f"[rpu.elementwise] q must be an odd modulus below 2^128, got {q}")
    n = prog.n
    rnd = random.Random(seed)
    a = [rnd.randrange(q) for _ in range(n)]
    b = [rnd.randrange(q) for _ in range(n)]
    machine = Machine(vdm_bytes=3 * n * WORD_BYTES)
    machine.sdm_write(0, [q, 0, n * WORD_BYTES, 2 * n * WORD_BYTES])
    machine.vdm_write(0, a)
    machine.vdm_write(n, b)
    machine.run(prog.program)
    got = machine.vdm_read(2 * n, n)
    expected = {"add": [(x + y) % q for x, y in zip(a, b)], "mult": [x * y % q for x, y in zip(a, b)],
                "copy": a}[prog.kernel]
    return {"kernel": prog.kernel, "n": n, "verified": got == expected}
