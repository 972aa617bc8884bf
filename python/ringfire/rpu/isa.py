"""The B512 instruction set (seed 004 §III, Table I): the one opcode/encoding table.

Everything another module needs to know about an instruction -- its class, its
binary layout, which registers it reads and writes -- is derived from
:data:`OPCODES` below, so there is exactly one place to change an encoding.

Architectural state (seed 004 §III): vectors of ``VECTOR_LENGTH = 512`` lanes of
128 bits; 64 vector (``v``), 64 scalar (``s``), 64 address (``a``) and 64
modulus (``m``) registers; a vector data memory (VDM, at most 32 MiB) and a
scalar data memory (SDM, at most 16 MiB), both of 128-bit words.

Binary layout (Table I; bit 63 is the most significant bit of the 64-bit word)::

    [63:55] VD1  [54:49] VT1  [48] BFLY  [47:44] OPCODE  [43:24] ADDRESS
    [23:18] VD   [17:12] VS / MODE       [11:6] VT / RT / VALUE   [5:0] RM

Choices made where the paper is open (declared here and in ``docs/rpu.md``):

* **Opcode numbers** are ours (the paper gives none). 15 four-bit opcodes are
  used and ``0xF`` is spare ("spare encoding space").
* **17 instructions** = 15 opcodes + two butterflies selected by the BFLY bit:
  ``BFLY`` (Cooley-Tukey, ``VD = VS + VT*VT1``, ``VD1 = VS - VT*VT1``) shares the
  ``VMULMOD`` opcode, ``GSBFLY`` (Gentleman-Sande, ``VD = VS + VT``,
  ``VD1 = (VS - VT)*VT1``) shares ``VSUBMOD``. The paper names 14 instructions;
  ``ALOAD`` and ``MLOAD`` (SDM -> address / modulus register) and ``GSBFLY`` are
  our three, chosen because a kernel must be able to set its own address and
  modulus registers and because the inverse NTT needs the GS butterfly.
* **Vector addresses**: the first element is at byte ``ARF[RM] + ADDRESS``; the
  20-bit ADDRESS is a *byte* offset (the SPIRAL listing loads the second half of a
  1K NTT at offset 8192 = 512 x 16 B) and must be 16-byte aligned.
* **Scalar addresses**: ADDRESS is an SDM *word* index: 2^20 words x 16 B is
  exactly the 16 MiB SDM maximum.
* **Addressing modes** (MODE field, VALUE = v; element k of the vector):
  ``CONTIGUOUS`` (0): word k (v must be 0); ``STRIDED`` (1): word k*2^v;
  ``SKIP`` (2, the paper's STRIDED-SKIP): transfer 2^v words, skip 2^v words,
  i.e. word (k >> v)*2^(v+1) + (k mod 2^v); ``REPEATED`` (3): word k mod 2^v,
  a block of 2^v words repeated over the vector (v = 0 is a broadcast, the
  listing's ``_vbroadcast``). Words are relative to the first element.
* Vector stores name the stored register in the VD field (Table I has one
  vector-register field for LSIs).
* Sources are read before any destination is written (``VD`` may equal ``VS``);
  the two destinations of a butterfly must differ.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

VECTOR_LENGTH = 512
HALF = VECTOR_LENGTH // 2
WORD_BYTES = 16                     # one 128-bit lane / memory word
NUM_VREGS = NUM_SREGS = NUM_AREGS = NUM_MREGS = 64
MAX_VDM_BYTES = 32 << 20
MAX_SDM_BYTES = 16 << 20
LANE_LIMIT = 1 << 128

# Field positions: name -> (low bit, width).
FIELDS = {
    "vd1": (55, 9), "vt1": (49, 6), "bfly": (48, 1), "opcode": (44, 4), "address": (24, 20),
    "vd": (18, 6), "vs": (12, 6), "mode": (12, 6), "vt": (6, 6), "rt": (6, 6), "value": (6, 6), "rm": (0, 6),
}

# Instruction formats: which Table I fields each one uses, in assembly operand order.
FORMATS = {
    "vmem": ("vd", "address", "rm", "mode", "value"),   # vector load/store
    "smem": ("rt", "address"),                          # SDM -> SRF/ARF/MRF
    "vv": ("vd", "vs", "vt", "rm"),                     # vector-vector compute
    "vs": ("vd", "vs", "rt", "rm"),                     # vector-scalar compute
    "bfly": ("vd", "vd1", "vs", "vt", "vt1", "rm"),     # butterflies
    "shuf": ("vd", "vs", "vt"),                         # shuffles
}

# Pipelines (seed 004 §IV-A: three decoupled queues).
LOADSTORE, COMPUTE, SHUFFLE = "loadstore", "compute", "shuffle"


@dataclass(frozen=True)
class OpInfo:
    """One row of the opcode table."""
    name: str
    opcode: int
    bfly: int
    fmt: str
    pipeline: str
    source: str        # "paper" or "ours" (a choice where seed 004 is open)
    meaning: str


OPCODES: dict[str, OpInfo] = {o.name: o for o in [
    OpInfo("vload", 0x0, 0, "vmem", LOADSTORE, "paper", "VD <- VDM[ARF[RM] + ADDRESS, MODE, VALUE]"),
    OpInfo("vstore", 0x1, 0, "vmem", LOADSTORE, "paper", "VDM[ARF[RM] + ADDRESS, MODE, VALUE] <- VD"),
    OpInfo("sload", 0x2, 0, "smem", LOADSTORE, "paper", "SRF[RT] <- SDM[ADDRESS]"),
    OpInfo("aload", 0x3, 0, "smem", LOADSTORE, "ours", "ARF[RT] <- SDM[ADDRESS] (a VDM byte address)"),
    OpInfo("mload", 0x4, 0, "smem", LOADSTORE, "ours", "MRF[RT] <- SDM[ADDRESS] (an odd modulus)"),
    OpInfo("vaddmod", 0x5, 0, "vv", COMPUTE, "paper", "VD <- VS + VT mod MRF[RM]"),
    OpInfo("vsubmod", 0x6, 0, "vv", COMPUTE, "paper", "VD <- VS - VT mod MRF[RM]"),
    OpInfo("vmulmod", 0x7, 0, "vv", COMPUTE, "paper", "VD <- VS * VT mod MRF[RM]"),
    OpInfo("vaddmods", 0x8, 0, "vs", COMPUTE, "paper", "VD <- VS + SRF[RT] mod MRF[RM]"),
    OpInfo("vsubmods", 0x9, 0, "vs", COMPUTE, "paper", "VD <- VS - SRF[RT] mod MRF[RM]"),
    OpInfo("vmulmods", 0xA, 0, "vs", COMPUTE, "paper", "VD <- VS * SRF[RT] mod MRF[RM]"),
    OpInfo("bfly", 0x7, 1, "bfly", COMPUTE, "paper",
           "t = VT*VT1; VD <- VS + t; VD1 <- VS - t (Cooley-Tukey)"),
    OpInfo("gsbfly", 0x6, 1, "bfly", COMPUTE, "ours",
           "VD <- VS + VT; VD1 <- (VS - VT)*VT1 (Gentleman-Sande)"),
    OpInfo("unpklo", 0xB, 0, "shuf", SHUFFLE, "paper", "VD[2i] <- VS[i], VD[2i+1] <- VT[i], i < 256"),
    OpInfo("unpkhi", 0xC, 0, "shuf", SHUFFLE, "paper", "VD[2i] <- VS[256+i], VD[2i+1] <- VT[256+i]"),
    OpInfo("pklo", 0xD, 0, "shuf", SHUFFLE, "paper", "VD[i] <- VS[2i], VD[256+i] <- VT[2i]"),
    OpInfo("pkhi", 0xE, 0, "shuf", SHUFFLE, "paper", "VD[i] <- VS[2i+1], VD[256+i] <- VT[2i+1]"),
]}
_BY_CODE = {(o.opcode, o.bfly): o for o in OPCODES.values()}
SPARE_OPCODES = sorted(set(range(16)) - {o.opcode for o in OPCODES.values()})

# Vector addressing modes (MODE field).
CONTIGUOUS, STRIDED, SKIP, REPEATED = 0, 1, 2, 3
MODE_NAMES = {CONTIGUOUS: "contiguous", STRIDED: "strided", SKIP: "skip", REPEATED: "repeated"}
MODE_BY_NAME = {v: k for k, v in MODE_NAMES.items()}
MAX_MODE_VALUE = {CONTIGUOUS: 0, STRIDED: 12, SKIP: 8, REPEATED: 9}

# Register-file prefix of each register operand (for messages and assembly).
REGISTER_FILE = {"vd": "v", "vs": "v", "vt": "v", "vd1": "v", "vt1": "v"}
_SCALAR_FILE = {"sload": "s", "aload": "a", "mload": "m"}


def rt_file(op: str) -> str:
    """Register file named by the RT field of ``op`` (scalar for ``vs`` compute)."""
    return _SCALAR_FILE.get(op, "s")


def rm_file(op: str) -> str:
    """``a`` (address register) for vector memory ops, ``m`` (modulus) for compute."""
    return "a" if OPCODES[op].fmt == "vmem" else "m"


@dataclass(frozen=True)
class Instruction:
    """One decoded B512 instruction; unused fields stay 0.

    Construct with keyword fields, e.g. ``Instruction("bfly", vd=1, vd1=2, vs=3,
    vt=4, vt1=5, rm=0)``; the constructor validates every field (ValueError).
    """
    op: str
    vd: int = 0
    vs: int = 0
    vt: int = 0
    vd1: int = 0
    vt1: int = 0
    rt: int = 0
    rm: int = 0
    address: int = 0
    mode: int = 0
    value: int = 0

    def __post_init__(self):
        info = OPCODES.get(self.op)
        if info is None:
            raise ValueError(f"[rpu.isa] unknown instruction {self.op!r}")
        used = FORMATS[info.fmt]
        for name in ("vd", "vs", "vt", "vd1", "vt1", "rt", "rm", "address", "mode", "value"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool):
                raise ValueError(f"[rpu.isa] {self.op}: field {name} must be an int, got {v!r}")
            if name not in used and v != 0:
                raise ValueError(f"[rpu.isa] {self.op}: field {name} is not used by this instruction (got {v})")
        for name in used:
            v = getattr(self, name)
            if name in ("vd", "vs", "vt", "vd1", "vt1", "rt", "rm") and not 0 <= v < 64:
                prefix = REGISTER_FILE.get(name) or (rt_file(self.op) if name == "rt" else rm_file(self.op))
                raise ValueError(f"[rpu.isa] {self.op}: register {prefix}{v} out of range (0..63)")
        if info.fmt == "vmem":
            if self.mode not in MODE_NAMES:
                raise ValueError(f"[rpu.isa] {self.op}: addressing mode {self.mode} is not one of 0..3")
            if not 0 <= self.value <= MAX_MODE_VALUE[self.mode]:
                raise ValueError(f"[rpu.isa] {self.op}: mode {MODE_NAMES[self.mode]} needs a value in "
                                 f"0..{MAX_MODE_VALUE[self.mode]}, got {self.value}")
            if not 0 <= self.address < (1 << 20) or self.address % WORD_BYTES:
                raise ValueError(f"[rpu.isa] {self.op}: byte offset {self.address} must be a multiple of 16 "
                                 f"in [0, 2^20)")
        if info.fmt == "smem" and not 0 <= self.address < (1 << 20):
            raise ValueError(f"[rpu.isa] {self.op}: SDM word index {self.address} must be in [0, 2^20)")
        if info.fmt == "bfly" and self.vd == self.vd1:
            raise ValueError(f"[rpu.isa] {self.op}: the two destinations must differ (both v{self.vd})")

    @property
    def info(self) -> OpInfo:
        return OPCODES[self.op]

    @property
    def pipeline(self) -> str:
        return OPCODES[self.op].pipeline

    def vector_reads(self) -> tuple[int, ...]:
        fmt = OPCODES[self.op].fmt
        if fmt == "vmem":
            return (self.vd,) if self.op == "vstore" else ()
        if fmt in ("vv", "shuf"):
            return (self.vs, self.vt)
        if fmt == "vs":
            return (self.vs,)
        if fmt == "bfly":
            return (self.vs, self.vt, self.vt1)
        return ()

    def vector_writes(self) -> tuple[int, ...]:
        fmt = OPCODES[self.op].fmt
        if fmt == "vmem":
            return (self.vd,) if self.op == "vload" else ()
        if fmt == "bfly":
            return (self.vd, self.vd1)
        if fmt in ("vv", "vs", "shuf"):
            return (self.vd,)
        return ()

    def scalar_regs(self) -> tuple[str, ...]:
        """Scalar registers touched, as names like ``'m0'``, ``'a3'`` (for hazard tracking)."""
        fmt = OPCODES[self.op].fmt
        if fmt == "smem":
            return (f"{rt_file(self.op)}{self.rt}",)
        if fmt == "vmem":
            return (f"a{self.rm}",)
        if fmt == "vs":
            return (f"s{self.rt}", f"m{self.rm}")
        if fmt in ("vv", "bfly"):
            return (f"m{self.rm}",)
        return ()

    def replace(self, **fields) -> "Instruction":
        return dataclasses.replace(self, **fields)


def encode(instr: Instruction) -> int:
    """The 64-bit word of one instruction (Table I layout)."""
    info = instr.info
    word = (info.opcode << 44) | (info.bfly << 48)
    for name in FORMATS[info.fmt]:
        low, width = FIELDS[name]
        word |= (getattr(instr, name) & ((1 << width) - 1)) << low
    return word


def decode(word: int) -> Instruction:
    """Inverse of :func:`encode`; ValueError for a word no instruction encodes."""
    if not isinstance(word, int) or not 0 <= word < (1 << 64):
        raise ValueError(f"[rpu.isa] an instruction word must be a 64-bit unsigned int, got {word!r}")
    opcode, bfly = (word >> 44) & 0xF, (word >> 48) & 1
    info = _BY_CODE.get((opcode, bfly))
    if info is None:
        raise ValueError(f"[rpu.isa] word {word:#018x}: opcode {opcode:#x} with BFLY={bfly} is not an instruction")
    fields = {}
    covered = (0xF << 44) | (1 << 48)
    for name in FORMATS[info.fmt]:
        low, width = FIELDS[name]
        fields[name] = (word >> low) & ((1 << width) - 1)
        covered |= ((1 << width) - 1) << low
    if word & ~covered:
        raise ValueError(f"[rpu.isa] word {word:#018x}: bits {word & ~covered:#x} are reserved for {info.name} "
                         f"and must be zero")
    return Instruction(info.name, **fields)
