"""B512 encoding (seed 004 Table I): round trips, field placement, and rejected words/fields."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ringfire.rpu import isa
from ringfire.rpu.isa import FIELDS, FORMATS, OPCODES, Instruction, decode, encode

REG = st.integers(0, 63)


@st.composite
def instructions(draw, op=None):
    op = op or draw(st.sampled_from(sorted(OPCODES)))
    fmt = OPCODES[op].fmt
    fields = {}
    for name in FORMATS[fmt]:
        if name == "address":
            fields[name] = draw(st.integers(0, (1 << 16) - 1)) * 16 if fmt == "vmem" else draw(st.integers(0, (1 << 20) - 1))
        elif name == "mode":
            fields[name] = draw(st.sampled_from(sorted(isa.MODE_NAMES)))
        elif name == "value":
            fields[name] = 0
        else:
            fields[name] = draw(REG)
    if fmt == "vmem":
        fields["value"] = draw(st.integers(0, isa.MAX_MODE_VALUE[fields["mode"]]))
    if fmt == "bfly" and fields["vd"] == fields["vd1"]:
        fields["vd1"] = (fields["vd"] + 1) % 64
    return Instruction(op, **fields)


def test_seventeen_instructions_in_three_classes():
    assert len(OPCODES) == 17
    pipes = [o.pipeline for o in OPCODES.values()]
    assert (pipes.count(isa.LOADSTORE), pipes.count(isa.COMPUTE), pipes.count(isa.SHUFFLE)) == (5, 8, 4)
    codes = {(o.opcode, o.bfly) for o in OPCODES.values()}
    assert len(codes) == 17 and isa.SPARE_OPCODES == [0xF]
    assert [o.name for o in OPCODES.values() if o.source == "ours"] == ["aload", "mload", "gsbfly"]


def test_fields_match_table_one():
    # [63:55] VD1 [54:49] VT1 [48] BFLY [47:44] OPCODE [43:24] ADDRESS [23:18] VD [17:12] [11:6] [5:0]
    spans = {name: (low + width - 1, low) for name, (low, width) in FIELDS.items()}
    assert spans["vd1"] == (63, 55) and spans["vt1"] == (54, 49) and spans["bfly"] == (48, 48)
    assert spans["opcode"] == (47, 44) and spans["address"] == (43, 24) and spans["vd"] == (23, 18)
    assert spans["vs"] == spans["mode"] == (17, 12) and spans["vt"] == spans["value"] == (11, 6)
    assert spans["rm"] == (5, 0)


@pytest.mark.parametrize("op", sorted(OPCODES))
@given(data=st.data())
def test_round_trip_every_instruction(op, data):
    instr = data.draw(instructions(op))
    word = encode(instr)
    assert 0 <= word < 1 << 64
    assert decode(word) == instr
    assert (word >> 44) & 0xF == OPCODES[op].opcode and (word >> 48) & 1 == OPCODES[op].bfly


def test_field_placement_example():
    w = encode(Instruction("bfly", vd=58, vd1=57, vs=60, vt=20, vt1=19, rm=1))
    assert w == (57 << 55) | (19 << 49) | (1 << 48) | (0x7 << 44) | (58 << 18) | (60 << 12) | (20 << 6) | 1
    w = encode(Instruction("vload", vd=20, address=8192, rm=1))
    assert w == (8192 << 24) | (20 << 18) | 1


@given(st.integers(0, (1 << 64) - 1))
def test_decode_accepts_exactly_the_encodable_words(word):
    try:
        instr = decode(word)
    except ValueError as e:
        assert "[rpu.isa]" in str(e)
    else:
        assert encode(instr) == word


def test_decode_rejections():
    with pytest.raises(ValueError, match="opcode 0xf"):
        decode(0xF << 44)
    with pytest.raises(ValueError, match="BFLY=1 is not an instruction"):
        decode((1 << 48) | (0x5 << 44))
    with pytest.raises(ValueError, match="reserved"):
        decode((0xB << 44) | (1 << 30))          # shuffle with an address
    with pytest.raises(ValueError, match="v64 out of range"):
        decode((64 << 55) | (1 << 48) | (0x7 << 44) | (1 << 18))   # 9-bit VD1 field holding 64
    with pytest.raises(ValueError, match="64-bit"):
        decode(1 << 64)


@pytest.mark.parametrize("kwargs, message", [
    (dict(op="vaddmod", vd=64), "v64 out of range"),
    (dict(op="vaddmod", rm=70), "m70 out of range"),
    (dict(op="vload", rm=99), "a99 out of range"),
    (dict(op="sload", rt=-1), "s-1 out of range"),
    (dict(op="vload", address=8), "multiple of 16"),
    (dict(op="vload", address=1 << 20), "multiple of 16"),
    (dict(op="vload", mode=4), "mode 4"),
    (dict(op="vload", mode=isa.CONTIGUOUS, value=1), "needs a value in 0..0"),
    (dict(op="vload", mode=isa.REPEATED, value=10), "0..9"),
    (dict(op="sload", address=1 << 20), "SDM word index"),
    (dict(op="bfly", vd=3, vd1=3), "must differ"),
    (dict(op="unpklo", rm=1), "not used"),
    (dict(op="nop"), "unknown instruction"),
])
def test_bad_fields_raise_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Instruction(**kwargs)


def test_register_sets():
    b = Instruction("bfly", vd=1, vd1=2, vs=3, vt=4, vt1=5, rm=6)
    assert b.vector_reads() == (3, 4, 5) and b.vector_writes() == (1, 2) and b.scalar_regs() == ("m6",)
    s = Instruction("vstore", vd=7, rm=2)
    assert s.vector_reads() == (7,) and s.vector_writes() == () and s.scalar_regs() == ("a2",)
    assert Instruction("vmulmods", vd=1, vs=2, rt=3, rm=4).scalar_regs() == ("s3", "m4")
