"""Functional simulator: every instruction against a plain Python reference, exact 128-bit lanes."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ringfire.rpu import Instruction, Machine, assemble
from ringfire.rpu.isa import HALF, VECTOR_LENGTH

Q128 = (1 << 128) - 159          # a prime just below 2^128
Q61 = (1 << 61) - 1
MODULI = st.sampled_from([Q128, Q61, 12289, 3])


def machine_with(q, vectors, scalar=0):
    m = Machine(vdm_bytes=1 << 16, sdm_bytes=1 << 10)
    m.sdm_write(0, [q, scalar, 4096])
    m.run(assemble("mload m2, 0\nsload s5, 1\naload a1, 2"))
    for i, vec in enumerate(vectors):
        m.set_vreg(i, vec)
    return m


@st.composite
def case(draw, count=3):
    """A modulus, ``count`` random vectors (seeded, with the edge values 0 and q-1) and a scalar."""
    q, seed = draw(MODULI), draw(st.integers(0, 2**32))
    rnd = random.Random(seed)
    vectors = [[rnd.randrange(q) for _ in range(VECTOR_LENGTH)] for _ in range(count)]
    for v in vectors:
        v[:2] = [0, q - 1]
    return q, vectors, draw(st.sampled_from([0, 1, q - 1, rnd.randrange(q)]))


REFERENCE = {
    "vaddmod": lambda a, b, q: (a + b) % q,
    "vsubmod": lambda a, b, q: (a - b) % q,
    "vmulmod": lambda a, b, q: (a * b) % q,
}


@pytest.mark.parametrize("op", sorted(REFERENCE))
@settings(max_examples=20)
@given(c=case())
def test_vector_vector_compute(op, c):
    q, (a, b, _), _ = c
    m = machine_with(q, [a, b]).run([Instruction(op, vd=0, vs=0, vt=1, rm=2)])   # VD may equal VS
    assert m.vreg(0) == [REFERENCE[op](x, y, q) for x, y in zip(a, b)]


@pytest.mark.parametrize("op", ["vaddmods", "vsubmods", "vmulmods"])
@settings(max_examples=20)
@given(c=case())
def test_vector_scalar_compute(op, c):
    q, (a, _, _), s = c
    m = machine_with(q, [a], scalar=s).run([Instruction(op, vd=9, vs=0, rt=5, rm=2)])
    assert m.vreg(9) == [REFERENCE[op[:-1]](x, s, q) for x in a]


@settings(max_examples=20)
@given(c=case())
def test_butterflies_equal_their_three_instruction_sequences(c):
    q, (a, b, w), _ = c
    m = machine_with(q, [a, b, w]).run([Instruction("bfly", vd=3, vd1=4, vs=0, vt=1, vt1=2, rm=2),
                                        Instruction("gsbfly", vd=5, vd1=6, vs=0, vt=1, vt1=2, rm=2)])
    t = [x * y % q for x, y in zip(b, w)]
    assert m.vreg(3) == [(x + y) % q for x, y in zip(a, t)] and m.vreg(4) == [(x - y) % q for x, y in zip(a, t)]
    assert m.vreg(5) == [(x + y) % q for x, y in zip(a, b)]
    assert m.vreg(6) == [(x - y) * z % q for x, y, z in zip(a, b, w)]


def test_butterfly_reads_sources_before_writing():
    q = 97
    m = machine_with(q, [[1] * 512, [2] * 512, [3] * 512]).run(
        [Instruction("bfly", vd=1, vd1=0, vs=0, vt=1, vt1=2, rm=2)])
    assert m.vreg(1) == [7] * 512 and m.vreg(0) == [(1 - 6) % q] * 512


def test_shuffles_and_their_identities():
    a, b = list(range(512)), list(range(1000, 1512))
    m = machine_with(Q61, [a, b]).run(assemble(
        "unpklo v2, v0, v1\nunpkhi v3, v0, v1\npklo v4, v0, v1\npkhi v5, v0, v1\npklo v6, v2, v3\npkhi v7, v2, v3"))
    assert m.vreg(2) == [x for i in range(HALF) for x in (a[i], b[i])]
    assert m.vreg(3) == [x for i in range(HALF, 512) for x in (a[i], b[i])]
    assert m.vreg(4) == a[0::2] + b[0::2] and m.vreg(5) == a[1::2] + b[1::2]
    assert m.vreg(6) == a and m.vreg(7) == b          # PK undoes UNPK


def test_addressing_modes_load_and_store():
    m = machine_with(Q61, [])
    base = 4096 // 16
    m.vdm_write(base, list(range(5000, 8000)))
    m.run(assemble("vload v0, 16(a1)\nvload v1, 32(a1), strided 2\nvload v2, 0(a1), skip 3\n"
                   "vload v3, 48(a1), repeated 2\nvload v4, 0(a1), repeated 0"))
    word = lambda w: 5000 + w
    assert m.vreg(0) == [word(1 + k) for k in range(512)]
    assert m.vreg(1) == [word(2 + 4 * k) for k in range(512)]
    assert m.vreg(2) == [word((k >> 3) * 16 + (k & 7)) for k in range(512)]
    assert m.vreg(3) == [word(3 + (k & 3)) for k in range(512)]
    assert m.vreg(4) == [word(0)] * 512
    m.run(assemble("vstore v0, 16384(a1), strided 1\nvstore v4, 16400(a1), strided 1"))
    out = m.vdm_read(base + 1024, 1024)
    assert out[0::2] == m.vreg(0) and out[1::2] == [word(0)] * 512


def test_scalar_loads():
    m = Machine(sdm_bytes=1 << 10)
    m.sdm_write(3, [Q128, 12345, 1 << 20])
    m.run(assemble("mload m63, 3\nsload s0, 4\naload a7, 5"))
    assert m.mregs[63] == Q128 and m.sregs[0] == 12345 and m.aregs[7] == 1 << 20


@pytest.mark.parametrize("program, setup, message", [
    ("vaddmod v0, v1, v2, m3", None, "instruction 0 .*m3 holds 0"),
    ("vload v0, 0(a1)\nvload v0, 1048560(a2)", None, "instruction 1 .*outside the 4096-word"),
    ("vload v0, 0(a1), strided 12", None, "outside"),
    ("vstore v0, 0(a1), repeated 3", None, "same word more than once"),
    ("sload s0, 100000", None, "SDM word 100000 outside"),
    ("aload a0, 0", 17, "not a 16-byte aligned VDM address"),
    ("mload m0, 0", 10, "not an odd modulus"),
])
def test_errors_are_clear(program, setup, message):
    m = Machine(vdm_bytes=1 << 16, sdm_bytes=1 << 10)
    m.sdm_write(0, [setup or 0])
    with pytest.raises(ValueError, match=message):
        m.run(assemble(program))


def test_host_access_is_checked():
    m = Machine(vdm_bytes=1 << 12, sdm_bytes=1 << 10)
    with pytest.raises(ValueError, match="128-bit word"):
        m.vdm_write(0, [1 << 128])
    with pytest.raises(ValueError, match="outside"):
        m.vdm_write(255, [1, 2])
    with pytest.raises(ValueError, match="vdm_bytes"):
        Machine(vdm_bytes=64 << 20)
