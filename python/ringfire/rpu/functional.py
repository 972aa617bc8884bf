"""Functional (bit-exact) simulator of the B512 architectural state.

Lanes are exact Python integers held in NumPy ``object`` arrays, so every
modulus below 2^128 works and a 512-lane modular multiply is one vectorised
``(a * b) % q`` (about 0.1 ms). Compute results are ``(a op b) mod q`` for any
lane values; with reduced inputs that is exactly the hardware's modular result.

Memories are arrays of 128-bit words; the VDM is byte-addressed by the ISA
(16-byte aligned), the SDM word-addressed. Every out-of-range address, bad
register content or overlapping store raises ``ValueError`` naming the
instruction -- nothing wraps silently.
"""

from __future__ import annotations

import functools

import numpy as np

from .asm import format_instruction
from .isa import (CONTIGUOUS, HALF, LANE_LIMIT, MAX_SDM_BYTES, MAX_VDM_BYTES, MODE_NAMES, NUM_VREGS, REPEATED,
                  SKIP, STRIDED, VECTOR_LENGTH, WORD_BYTES, Instruction)

DEFAULT_VDM_BYTES = 4 << 20     # the implemented RPU (seed 004 §IV-B3)
DEFAULT_SDM_BYTES = 32 << 10    # seed 004 §IV-B5


@functools.lru_cache(maxsize=None)
def element_offsets(mode: int, value: int) -> np.ndarray:
    """Word offset of each of the 512 elements, relative to the first, for one addressing mode."""
    k = np.arange(VECTOR_LENGTH, dtype=np.int64)
    if mode == CONTIGUOUS:
        out = k
    elif mode == STRIDED:
        out = k << value
    elif mode == SKIP:
        out = ((k >> value) << (value + 1)) + (k & ((1 << value) - 1))
    elif mode == REPEATED:
        out = k & ((1 << value) - 1)
    else:
        raise ValueError(f"[rpu.functional] unknown addressing mode {mode}")
    out.setflags(write=False)
    return out


def _zeros(count: int) -> np.ndarray:
    out = np.empty(count, dtype=object)
    out.fill(0)
    return out


def _check_words(where: str, values) -> np.ndarray:
    arr = np.asarray([int(v) for v in np.asarray(values, dtype=object).ravel()], dtype=object)
    for v in arr:
        if not 0 <= v < LANE_LIMIT:
            raise ValueError(f"[rpu.functional] {where}: value {v} is not a 128-bit word")
    return arr


class Machine:
    """B512 architectural state plus an interpreter for programs.

    >>> m = Machine()
    >>> m.sdm_write(0, [97]); m.run(assemble("mload m0, 0"))   # doctest: +SKIP
    """

    def __init__(self, vdm_bytes: int = DEFAULT_VDM_BYTES, sdm_bytes: int = DEFAULT_SDM_BYTES):
        for name, size, limit in (("vdm_bytes", vdm_bytes, MAX_VDM_BYTES), ("sdm_bytes", sdm_bytes, MAX_SDM_BYTES)):
            if not (WORD_BYTES <= size <= limit and size % WORD_BYTES == 0):
                raise ValueError(f"[rpu.functional] {name} must be a multiple of 16 in [16, {limit}], got {size}")
        self.vdm = _zeros(vdm_bytes // WORD_BYTES)
        self.sdm = _zeros(sdm_bytes // WORD_BYTES)
        self.vregs = [_zeros(VECTOR_LENGTH) for _ in range(NUM_VREGS)]
        self.sregs = [0] * 64
        self.aregs = [0] * 64
        self.mregs = [0] * 64
        self.executed = 0

    # ---- host access (what the controlling RISC-V core / DMA would do) ----------
    def vdm_write(self, word: int, values) -> None:
        arr = _check_words("vdm_write", values)
        if not 0 <= word <= len(self.vdm) - len(arr):
            raise ValueError(f"[rpu.functional] vdm_write: words [{word}, {word + len(arr)}) outside the "
                             f"{len(self.vdm)}-word VDM")
        self.vdm[word:word + len(arr)] = arr

    def vdm_read(self, word: int, count: int) -> list[int]:
        if not (0 <= word and count >= 0 and word + count <= len(self.vdm)):
            raise ValueError(f"[rpu.functional] vdm_read: words [{word}, {word + count}) outside the VDM")
        return [int(v) for v in self.vdm[word:word + count]]

    def sdm_write(self, word: int, values) -> None:
        arr = _check_words("sdm_write", values)
        if not 0 <= word <= len(self.sdm) - len(arr):
            raise ValueError(f"[rpu.functional] sdm_write: words [{word}, {word + len(arr)}) outside the "
                             f"{len(self.sdm)}-word SDM")
        self.sdm[word:word + len(arr)] = arr

    def vreg(self, index: int) -> list[int]:
        return [int(v) for v in self.vregs[index]]

    def set_vreg(self, index: int, values) -> None:
        arr = _check_words("set_vreg", values)
        if len(arr) != VECTOR_LENGTH:
            raise ValueError(f"[rpu.functional] set_vreg: a vector has {VECTOR_LENGTH} lanes, got {len(arr)}")
        self.vregs[index] = arr

    # ---- execution -------------------------------------------------------------
    def run(self, program) -> "Machine":
        """Executes the instructions in order (the architectural result of any legal schedule)."""
        for pc, instr in enumerate(program):
            try:
                self.step(instr)
            except ValueError as e:
                raise ValueError(f"[rpu.functional] instruction {pc} ({format_instruction(instr).strip()}): "
                                 f"{str(e).removeprefix('[rpu.functional] ')}") from None
        return self

    def step(self, instr: Instruction) -> None:
        getattr(self, "_" + instr.info.fmt)(instr)
        self.executed += 1

    def _modulus(self, rm: int) -> int:
        q = self.mregs[rm]
        if not (3 <= q < LANE_LIMIT and q % 2 == 1):
            raise ValueError(f"modulus register m{rm} holds {q}, not an odd modulus in [3, 2^128) (not loaded?)")
        return q

    def _vdm_indices(self, instr: Instruction) -> np.ndarray:
        base = self.aregs[instr.rm] + instr.address
        if base % WORD_BYTES:
            raise ValueError(f"VDM byte address {base} (a{instr.rm} + {instr.address}) is not 16-byte aligned")
        idx = base // WORD_BYTES + element_offsets(instr.mode, instr.value)
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= len(self.vdm):
            raise ValueError(f"{MODE_NAMES[instr.mode]} access touches VDM words [{lo}, {hi}] outside the "
                             f"{len(self.vdm)}-word ({len(self.vdm) * WORD_BYTES} B) VDM")
        return idx

    def _vmem(self, instr: Instruction) -> None:
        idx = self._vdm_indices(instr)
        if instr.op == "vload":
            self.vregs[instr.vd] = self.vdm[idx]
        else:
            if instr.mode == REPEATED and instr.value < 9:
                raise ValueError("a store in repeated mode would write the same word more than once")
            self.vdm[idx] = self.vregs[instr.vd]

    def _smem(self, instr: Instruction) -> None:
        if instr.address >= len(self.sdm):
            raise ValueError(f"SDM word {instr.address} outside the {len(self.sdm)}-word SDM")
        value = int(self.sdm[instr.address])
        if instr.op == "sload":
            self.sregs[instr.rt] = value
        elif instr.op == "aload":
            if value % WORD_BYTES or value >= len(self.vdm) * WORD_BYTES:
                raise ValueError(f"address {value} loaded into a{instr.rt} is not a 16-byte aligned VDM address")
            self.aregs[instr.rt] = value
        else:
            self.mregs[instr.rt] = value
            self._modulus(instr.rt)

    def _vv(self, instr: Instruction) -> None:
        q = self._modulus(instr.rm)
        a, b = self.vregs[instr.vs], self.vregs[instr.vt]
        self.vregs[instr.vd] = _ARITH[instr.op](a, b) % q

    def _vs(self, instr: Instruction) -> None:
        q = self._modulus(instr.rm)
        self.vregs[instr.vd] = _ARITH[instr.op[:-1]](self.vregs[instr.vs], self.sregs[instr.rt]) % q

    def _bfly(self, instr: Instruction) -> None:
        q = self._modulus(instr.rm)
        a, b, w = self.vregs[instr.vs], self.vregs[instr.vt], self.vregs[instr.vt1]
        if instr.op == "bfly":
            t = (b * w) % q
            hi, lo = (a + t) % q, (a - t) % q
        else:
            hi, lo = (a + b) % q, ((a - b) * w) % q
        self.vregs[instr.vd], self.vregs[instr.vd1] = hi, lo

    def _shuf(self, instr: Instruction) -> None:
        a, b = self.vregs[instr.vs], self.vregs[instr.vt]
        out = np.empty(VECTOR_LENGTH, dtype=object)
        if instr.op == "unpklo":
            out[0::2], out[1::2] = a[:HALF], b[:HALF]
        elif instr.op == "unpkhi":
            out[0::2], out[1::2] = a[HALF:], b[HALF:]
        elif instr.op == "pklo":
            out[:HALF], out[HALF:] = a[0::2], b[0::2]
        else:
            out[:HALF], out[HALF:] = a[1::2], b[1::2]
        self.vregs[instr.vd] = out


_ARITH = {
    "vaddmod": lambda a, b: a + b,
    "vsubmod": lambda a, b: a - b,
    "vmulmod": lambda a, b: a * b,
}
