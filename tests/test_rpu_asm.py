"""Assembler / disassembler: text <-> binary round trips and line-numbered errors."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ringfire.rpu import asm
from ringfire.rpu.isa import Instruction
from test_rpu_isa import instructions

LISTING = """
; the seed's Listing 1 (1K NTT, first butterfly), in our syntax
mload    m1, 0
aload    a1, 1
aload    a3, 2
vload    v60, 0(a1)
vload    v20, 8192(a1)
vload    v19, 16(a3), repeated 0      # _vbroadcast
vmulmod  v59, v20, v19, m1
vaddmod  v58, v60, v59, m1
vsubmod  v57, v60, v59, m1
UNPKLO   v56, v58, v57
vstore   v21, 16(a2), strided 1
"""


def test_listing_assembles():
    prog = asm.assemble(LISTING)
    assert [i.op for i in prog] == ["mload", "aload", "aload", "vload", "vload", "vload", "vmulmod", "vaddmod",
                                    "vsubmod", "unpklo", "vstore"]
    assert prog[4] == Instruction("vload", vd=20, address=8192, rm=1)
    assert prog[5] == Instruction("vload", vd=19, address=16, rm=3, mode=3, value=0)
    assert prog[10] == Instruction("vstore", vd=21, address=16, rm=2, mode=1, value=1)
    assert asm.assemble(asm.disassemble(prog)) == prog
    assert asm.from_bytes(asm.to_bytes(prog)) == prog


@given(st.lists(instructions(), max_size=30))
def test_text_and_binary_round_trips(prog):
    assert asm.assemble(asm.disassemble(prog)) == prog
    data = asm.to_bytes(prog)
    assert len(data) == 8 * len(prog) and asm.from_bytes(data) == prog
    listing = asm.disassemble(data and asm.from_bytes(data), listing=True)
    assert len(listing.splitlines()) == len(prog)


def test_listing_format_shows_index_and_word():
    line = asm.disassemble([Instruction("unpklo", vd=56, vs=58, vt=57)], listing=True).strip()
    index, word, text = line.split(maxsplit=2)
    assert index == "00000" and int(word, 16) == (0xB << 44) | (56 << 18) | (58 << 12) | (57 << 6)
    assert text.split() == ["unpklo", "v56,", "v58,", "v57"]


@pytest.mark.parametrize("source, message", [
    ("vaddmod v1, v2, v3, m0\nvaddmod v1, v2, v64, m0", r"line 2: .*v64 out of range"),
    ("vfoo v1, v2", r"line 1: unknown mnemonic 'vfoo'"),
    ("\n\nvload v1, 16(a1), diagonal 2", r"line 3: addressing mode must be one of"),
    ("vload v1, a1", r"line 1: memory operand must look like"),
    ("vload v1, 8(a1)", r"line 1: .*multiple of 16"),
    ("bfly v1, v2, v3, v4, m0", r"line 1: bfly takes 6 operands"),
    ("vaddmod v1, v2, s3, m0", r"line 1: vt must be a v-register"),
    ("vmulmods v1, v2, v3, m0", r"line 1: rt must be a s-register"),
    ("sload s1, lots", r"line 1: the SDM word index must be a number"),
    ("vload v1, 0(a1), repeated 12", r"line 1: .*0\.\.9"),
])
def test_errors_name_the_line_and_reason(source, message):
    with pytest.raises(ValueError, match=message):
        asm.assemble(source)


def test_binary_errors():
    with pytest.raises(ValueError, match="whole number of 8-byte words"):
        asm.from_bytes(b"\x00" * 12)
    bad = asm.to_bytes([Instruction("unpklo")]) + (0xF << 44).to_bytes(8, "little")
    with pytest.raises(ValueError, match="instruction 1 "):
        asm.from_bytes(bad)
