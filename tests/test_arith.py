"""ringfire.arith against Python integers: every reduction, edge values, errors."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import ringfire as rf
from ringfire import arith

HARD_A, HARD_B, HARD_Q = 994674970, 994705408, 994705409  # seed 002 §II-B


@st.composite
def modulus_and_values(draw, max_bits=61, size=16):
    bits = draw(st.integers(2, max_bits))
    q = draw(st.integers(max(2, 1 << (bits - 1)), (1 << bits) - 1))
    edge = st.sampled_from([0, 1, q - 1, q // 2])
    value = st.one_of(edge, st.integers(0, q - 1))
    a = draw(st.lists(value, min_size=1, max_size=size))
    b = draw(st.lists(value, min_size=len(a), max_size=len(a)))
    return q, a, b


@pytest.mark.parametrize("method", ["barrett", "alg4", "shoup", "native"])
@given(data=modulus_and_values())
def test_mul_mod_matches_python(method, data):
    q, a, b = data
    got = arith.mul_mod(np.array(a, np.uint64), np.array(b, np.uint64), q, method=method)
    assert [int(v) for v in got] == [(x * y) % q for x, y in zip(a, b)]


@given(data=modulus_and_values(max_bits=60))
def test_dhem_matches_python_within_its_headroom(data):
    q, a, b = data
    assume(q != 1 << 59)  # its constant is 2^64: refused (test below)
    got = arith.mul_mod(np.array(a, np.uint64), np.array(b, np.uint64), q, method="dhem")
    assert [int(v) for v in got] == [(x * y) % q for x, y in zip(a, b)]


def test_dhem_refuses_the_60_bit_modulus_without_headroom():
    with pytest.raises(ValueError, match="Dhem-Quisquater.*headroom.*2\\^59"):
        arith.mul_mod(np.array([1], np.uint64), np.array([2], np.uint64), 1 << 59, method="dhem")


def test_dhem_refuses_61_bit_moduli_clearly():
    q = rf.ring.find_primes(61, 1, 16)[0]
    with pytest.raises(ValueError, match="Dhem-Quisquater.*headroom.*60"):
        arith.mul_mod(np.array([1], np.uint64), np.array([2], np.uint64), q, method="dhem")


@pytest.mark.parametrize("method", arith.METHODS)
def test_seed_hard_case(method):
    got = arith.mul_mod(np.array([HARD_A], np.uint64), np.array([HARD_B], np.uint64), HARD_Q, method=method)
    assert int(got[0]) == (HARD_A * HARD_B) % HARD_Q


@pytest.mark.parametrize("method", arith.METHODS)
def test_extreme_operands_for_every_width(method):
    for bits in range(2, 62):
        if method == "dhem" and bits > 60:
            continue
        for q in {(1 << (bits - 1)) + (bits > 1), (1 << bits) - 1}:
            if q < 2:
                continue
            vals = np.array([0, 1, q - 1, q - 2 if q > 2 else 0], np.uint64)
            a, b = np.meshgrid(vals, vals)
            got = arith.mul_mod(a, b, q, method=method)
            ref = np.array([[(int(x) * int(y)) % q for x, y in zip(r1, r2)] for r1, r2 in zip(a, b)], dtype=object)
            assert (got.astype(object) == ref).all(), (bits, q)


@given(data=modulus_and_values())
def test_mad_add_sub_neg(data):
    q, a, b = data
    aa, bb = np.array(a, np.uint64), np.array(b, np.uint64)
    assert [int(v) for v in arith.mad_mod(aa, bb, aa, q)] == [(x * y + x) % q for x, y in zip(a, b)]
    assert [int(v) for v in arith.add_mod(aa, bb, q)] == [(x + y) % q for x, y in zip(a, b)]
    assert [int(v) for v in arith.sub_mod(aa, bb, q)] == [(x - y) % q for x, y in zip(a, b)]
    assert [int(v) for v in arith.neg_mod(aa, q)] == [(-x) % q for x in a]


@given(q=st.integers(3, (1 << 61) - 1), a=st.integers(0, (1 << 64) - 1), e=st.integers(0, (1 << 64) - 1))
def test_pow_and_inverse(q, a, e):
    assert arith.pow_mod(a, e, q) == pow(a, e, q)
    from math import gcd

    if gcd(a, q) == 1:
        assert arith.inv_mod(a, q) == pow(a, -1, q)
    else:
        with pytest.raises(ValueError, match="no inverse"):
            arith.inv_mod(a, q)


def test_broadcasting_and_shapes():
    q = 97
    a = np.arange(12, dtype=np.uint64).reshape(3, 4)
    got = arith.mul_mod(a, 5, q)
    assert got.shape == (3, 4)
    assert (got == (a * 5) % q).all()


def test_clear_errors():
    with pytest.raises(ValueError, match=r"\[arith.mul_mod\].*not below q=97"):
        arith.mul_mod(np.array([97], np.uint64), np.array([1], np.uint64), 97)
    with pytest.raises(ValueError, match="unknown method"):
        arith.mul_mod([1], [1], 97, method="montgomery-ish")
    with pytest.raises(ValueError, match="2 <= q < 2\\^61"):
        arith.mul_mod([1], [1], 1 << 61)
    with pytest.raises(ValueError, match="negative"):
        arith.mul_mod(np.array([-1]), [1], 97)
    with pytest.raises(TypeError):
        arith.mul_mod(np.array([1.5]), [1], 97)


def test_modulus_constants_follow_the_seed_formulas():
    q = HARD_Q
    c = arith.modulus_constants(q)
    m = q.bit_length()
    assert c["bits"] == m
    assert c["mu_classic"] == (1 << (2 * m)) // q
    assert c["mu_dhem"] == (1 << (2 * m + 3)) // q
    assert c["mu_alg4"] == (1 << (2 * m + 1)) // q
