"""B512 assembler and disassembler: text <-> :class:`Instruction` <-> 64-bit words.

Assembly syntax (one instruction per line; ``;`` or ``#`` starts a comment;
mnemonics are case-insensitive; numbers may be decimal or ``0x`` hex)::

    mload    m0, 0                       ; MRF[0] <- SDM word 0
    aload    a1, 1                       ; ARF[1] <- SDM word 1 (a VDM byte address)
    vload    v60, 0(a1)                  ; 512 contiguous words from ARF[1] + 0 bytes
    vload    v19, 16(a3), repeated 0     ; broadcast one word
    vstore   v21, 16(a2), strided 1      ; every other word
    vmulmod  v59, v20, v19, m0
    vaddmods v2, v3, s4, m0
    bfly     v58, v57, v60, v20, v19, m0 ; v58 = v60 + v20*v19, v57 = v60 - v20*v19
    unpklo   v56, v58, v57

Addressing modes are ``contiguous`` (the default), ``strided v``, ``skip v`` and
``repeated v`` (see :mod:`ringfire.rpu.isa`). A program is a plain list of
instructions; binaries are little-endian 64-bit words, one per instruction.
"""

from __future__ import annotations

import re

from .isa import (FORMATS, MODE_BY_NAME, MODE_NAMES, OPCODES, Instruction, decode, encode, rm_file,
                  rt_file)

_MEM_OPERAND = re.compile(r"^(?P<off>[-+]?(?:0x[0-9a-f]+|\d+))\s*\(\s*(?P<reg>[a-z]\w*)\s*\)$", re.IGNORECASE)


def _number(text: str, what: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise ValueError(f"{what} must be a number, got {text!r}") from None


def _register(text: str, prefix: str, what: str) -> int:
    text = text.strip().lower()
    if not text.startswith(prefix) or not text[1:].isdigit():
        raise ValueError(f"{what} must be a {prefix}-register like {prefix}0..{prefix}63, got {text!r}")
    index = int(text[1:])
    if not 0 <= index < 64:
        raise ValueError(f"register {text} out of range ({prefix}0..{prefix}63)")
    return index


def _parse_line(mnemonic: str, operands: list[str]) -> Instruction:
    op = mnemonic.lower()
    info = OPCODES.get(op)
    if info is None:
        raise ValueError(f"unknown mnemonic {mnemonic!r} (known: {', '.join(OPCODES)})")
    fmt = info.fmt
    if fmt == "vmem":
        if len(operands) not in (2, 3):
            raise ValueError(f"{op} takes 'vN, OFFSET(aM)[, MODE VALUE]', got {len(operands)} operands")
        vd = _register(operands[0], "v", "the vector register")
        m = _MEM_OPERAND.match(operands[1].strip())
        if not m:
            raise ValueError(f"memory operand must look like 16(a1), got {operands[1].strip()!r}")
        address = _number(m.group("off"), "the byte offset")
        rm = _register(m.group("reg"), "a", "the base register")
        mode, value = 0, 0
        if len(operands) == 3:
            parts = operands[2].split()
            if not parts or parts[0].lower() not in MODE_BY_NAME or len(parts) > 2:
                raise ValueError(f"addressing mode must be one of {', '.join(MODE_BY_NAME)} [VALUE], "
                                 f"got {operands[2].strip()!r}")
            mode = MODE_BY_NAME[parts[0].lower()]
            value = _number(parts[1], "the mode value") if len(parts) == 2 else 0
        return Instruction(op, vd=vd, address=address, rm=rm, mode=mode, value=value)
    names = FORMATS[fmt]
    if len(operands) != len(names):
        raise ValueError(f"{op} takes {len(names)} operands ({', '.join(names)}), got {len(operands)}")
    fields = {}
    for name, text in zip(names, operands):
        if name == "address":
            fields[name] = _number(text.strip(), "the SDM word index")
        elif name == "rt":
            fields[name] = _register(text, rt_file(op), name)
        elif name == "rm":
            fields[name] = _register(text, rm_file(op), name)
        else:
            fields[name] = _register(text, "v", name)
    return Instruction(op, **fields)


def assemble(text: str) -> list[Instruction]:
    """Parses assembly text; ValueError naming the line number and the reason on any error."""
    program = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = re.split(r"[;#]", raw, maxsplit=1)[0].strip()
        if not line:
            continue
        mnemonic, _, rest = line.partition(" ")
        operands = [o for o in rest.split(",")] if rest.strip() else []
        try:
            program.append(_parse_line(mnemonic, operands))
        except ValueError as e:
            msg = str(e).removeprefix("[rpu.isa] ")
            raise ValueError(f"[rpu.asm] line {lineno}: {msg}  (in: {raw.strip()!r})") from None
    return program


def format_instruction(instr: Instruction) -> str:
    """One instruction as assembly text (re-assembles to the same instruction)."""
    op, fmt = instr.op, instr.info.fmt
    if fmt == "vmem":
        text = f"v{instr.vd}, {instr.address}(a{instr.rm})"
        if instr.mode or instr.value:
            text += f", {MODE_NAMES[instr.mode]} {instr.value}"
    elif fmt == "smem":
        text = f"{rt_file(op)}{instr.rt}, {instr.address}"
    else:
        parts = []
        for name in FORMATS[fmt]:
            if name == "rt":
                parts.append(f"{rt_file(op)}{instr.rt}")
            elif name == "rm":
                parts.append(f"{rm_file(op)}{instr.rm}")
            else:
                parts.append(f"v{getattr(instr, name)}")
        text = ", ".join(parts)
    return f"{op:<9}{text}"


def disassemble(program, listing: bool = False) -> str:
    """Assembly text for a program (instructions or 64-bit words).

    ``listing=True`` prefixes each line with its index and machine word, like an
    assembler listing; the plain form re-assembles to the same program.
    """
    lines = []
    for i, item in enumerate(program):
        instr = item if isinstance(item, Instruction) else decode(item)
        text = format_instruction(instr)
        lines.append(f"{i:05d}  {encode(instr):016x}  {text}" if listing else text)
    return "\n".join(lines) + ("\n" if lines else "")


def to_bytes(program) -> bytes:
    """Little-endian 64-bit words, one per instruction."""
    return b"".join(encode(i).to_bytes(8, "little") for i in program)


def from_bytes(data: bytes) -> list[Instruction]:
    """Inverse of :func:`to_bytes`; ValueError naming the instruction index on a bad word."""
    if len(data) % 8:
        raise ValueError(f"[rpu.asm] a binary program is a whole number of 8-byte words; got {len(data)} bytes")
    program = []
    for i in range(0, len(data), 8):
        try:
            program.append(decode(int.from_bytes(data[i:i + 8], "little")))
        except ValueError as e:
            raise ValueError(f"[rpu.asm] instruction {i // 8} (byte {i}): {e}") from None
    return program
