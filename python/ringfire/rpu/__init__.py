"""ringfire.rpu -- a software model of the Ring Processing Unit and its B512 ISA (seeds 003, 004).

* :mod:`~ringfire.rpu.isa` -- the instruction set: the one opcode/encoding table, encode/decode.
* :mod:`~ringfire.rpu.asm` -- assembler and disassembler (text <-> instructions <-> 64-bit words).
* :mod:`~ringfire.rpu.functional` -- bit-exact functional simulator (128-bit modular lanes).
* :mod:`~ringfire.rpu.config` / :mod:`~ringfire.rpu.cycle` -- design point and cycle-level timing model.
* :mod:`~ringfire.rpu.ntt_graph`, :mod:`~ringfire.rpu.schedule`, :mod:`~ringfire.rpu.codegen` --
  constant-geometry NTT/iNTT generator (naive and list-scheduled) and a runner that verifies against
  :func:`ringfire.ring.ntt`.
* :mod:`~ringfire.rpu.elementwise` -- ringAdd / ringMult / copy kernels (seed 003's RA, RM).
* :mod:`~ringfire.rpu.projection` -- traces of real runs projected onto RPU chips (seed 003 Table 1).
* :mod:`~ringfire.rpu.sweep` -- design-space and sensitivity sweeps; :mod:`~ringfire.rpu.cli` -- ``ringfire rpu``.

See ``docs/rpu.md`` for the choices made where the papers are open and the reproduction report.
"""

from .asm import assemble, disassemble, from_bytes, to_bytes
from .codegen import NttProgram, generate_ntt, run_ntt
from .config import RpuConfig, trebuchet_tile
from .cycle import CycleReport, simulate
from .functional import Machine
from .isa import OPCODES, Instruction, decode, encode
from .projection import Projection, project, seed003_workload, table1

__all__ = ["assemble", "disassemble", "from_bytes", "to_bytes", "NttProgram", "generate_ntt", "run_ntt",
           "RpuConfig", "trebuchet_tile", "CycleReport", "simulate", "Machine", "OPCODES", "Instruction",
           "decode", "encode", "Projection", "project", "seed003_workload", "table1"]
