"""ringfire.arith128 against plain Python integers: every op, edge moduli and
values, primes, and errors."""

from math import gcd

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ringfire import _core, arith128

LIMIT = 1 << 128
P128 = (1 << 128) - 159  # largest 128-bit prime
M127 = (1 << 127) - 1  # Mersenne prime
P65 = (1 << 64) + 13  # smallest prime above 2^64
P64 = (1 << 64) - 59  # largest 64-bit prime
PSI12 = 318665857834031151167461  # strong pseudoprime to every base 2..37
PSI13 = 3317044064679887385961981  # strong pseudoprime to every base 2..41

EDGE_MODULI = [
    3, 5, 7, (1 << 61) - 1, P64, (1 << 64) - 1, (1 << 64) + 1, P65, M127, (1 << 127) + 1, (1 << 127) + 29,
    P128, LIMIT - 1, LIMIT - 3,
]


def edge_values(q):
    return sorted({0, 1, 2 % q, q // 2, q // 2 + 1, q - 2, q - 1})


@st.composite
def odd_modulus(draw):
    """Odd q in [3, 2^128): an edge modulus, or a random one of random width."""
    if draw(st.booleans()):
        return draw(st.sampled_from(EDGE_MODULI))
    bits = draw(st.integers(2, 128))
    return draw(st.integers(1 << (bits - 1), (1 << bits) - 1)) | 1


@st.composite
def modulus_and_values(draw):
    q = draw(odd_modulus())
    value = st.one_of(st.sampled_from(edge_values(q)), st.integers(0, q - 1))
    return q, draw(value), draw(value)


# ---- arithmetic against Python ints ---------------------------------------------------


@given(data=modulus_and_values())
def test_add_sub_mul_neg_match_python(data):
    q, a, b = data
    assert arith128.add_mod128(a, b, q) == (a + b) % q
    assert arith128.sub_mod128(a, b, q) == (a - b) % q
    assert arith128.mul_mod128(a, b, q) == (a * b) % q
    assert arith128.neg_mod128(a, q) == (-a) % q


@given(data=modulus_and_values(), e=st.one_of(st.sampled_from([0, 1, 2, LIMIT - 1]), st.integers(0, LIMIT - 1)))
def test_pow_matches_python(data, e):
    q, a, _ = data
    assert arith128.pow_mod128(a, e, q) == pow(a, e, q)


@given(data=modulus_and_values(), e=st.integers(-(LIMIT - 1), -1))
def test_negative_exponent_matches_python(data, e):
    q, a, _ = data
    if gcd(a, q) == 1:
        assert arith128.pow_mod128(a, e, q) == pow(a, e, q)
    else:
        with pytest.raises(ValueError, match="no inverse"):
            arith128.pow_mod128(a, e, q)


@given(data=modulus_and_values())
def test_inv_matches_python(data):
    q, a, _ = data
    if gcd(a, q) == 1:
        assert arith128.inv_mod128(a, q) == pow(a, -1, q)
    else:
        with pytest.raises(ValueError, match=r"\[arith.Modulus128.inv\].*no inverse"):
            arith128.inv_mod128(a, q)


@pytest.mark.parametrize("q", EDGE_MODULI)
def test_edge_values_for_edge_moduli(q):
    vals = edge_values(q)
    for a in vals:
        for b in vals:
            assert arith128.add_mod128(a, b, q) == (a + b) % q
            assert arith128.sub_mod128(a, b, q) == (a - b) % q
            assert arith128.mul_mod128(a, b, q) == (a * b) % q
        assert arith128.neg_mod128(a, q) == (-a) % q
        for e in (0, 1, 2, q - 2, q - 1, LIMIT - 1):
            assert arith128.pow_mod128(a, e, q) == pow(a, e, q)
        if gcd(a, q) == 1:
            assert arith128.inv_mod128(a, q) == pow(a, -1, q)


@pytest.mark.parametrize("q", [M127, P128, P65, (1 << 127) + 29])
def test_fermat_for_prime_moduli(q):
    for a in (2, 3, q - 1, q // 3, 0xDEADBEEF):
        assert arith128.pow_mod128(a, q - 1, q) == 1


# ---- primes -------------------------------------------------------------------------


def _strong_probable_prime(n, base):
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    x = pow(base, d, n)
    if x in (1, n - 1):
        return True
    for _ in range(s - 1):
        x = x * x % n
        if x == n - 1:
            return True
    return False


def _reference_is_prime(n):
    """Miller-Rabin with the first 30 primes as bases (an independent check)."""
    if n < 2:
        return False
    bases = [p for p in range(2, 114) if all(p % d for d in range(2, p))]
    for p in bases:
        if n % p == 0:
            return n == p
    return all(_strong_probable_prime(n, p) for p in bases)


@pytest.mark.parametrize("n", [2, 3, 5, 97, P64, P65, M127, P128, (1 << 89) - 1, (1 << 107) - 1, (1 << 127) + 29])
def test_known_primes(n):
    assert arith128.is_prime128(n)


@pytest.mark.parametrize(
    "n", [0, 1, 4, 561, (1 << 64) - 1, (1 << 64) + 1, LIMIT - 1, PSI12, PSI13, P64 * P64, P65 * 3, M127 + 2]
)
def test_known_composites(n):
    assert not arith128.is_prime128(n)


@given(n=st.integers(0, LIMIT - 1))
def test_is_prime_matches_reference(n):
    assert arith128.is_prime128(n) == _reference_is_prime(n)


@pytest.mark.parametrize("bits,poly_degree", [(20, 8), (61, 1024), (64, 4096), (100, 1 << 12), (127, 1 << 16),
                                              (128, 1 << 10), (128, 1 << 16)])
def test_find_ntt_primes128(bits, poly_degree):
    primes = arith128.find_ntt_primes128(bits, 3, poly_degree)
    assert len(primes) == 3 and len(set(primes)) == 3
    assert primes == sorted(primes, reverse=True)
    for p in primes:
        assert p.bit_length() == bits
        assert p % (2 * poly_degree) == 1
        assert _reference_is_prime(p)
    # Nothing larger was skipped.
    c = primes[0] + 2 * poly_degree
    while c < 1 << bits:
        assert not _reference_is_prime(c)
        c += 2 * poly_degree


@pytest.mark.parametrize("poly_degree", [1, 4, 8, 1 << 10])
def test_primitive_root128(poly_degree):
    for q in arith128.find_ntt_primes128(128, 2, poly_degree):
        root = arith128.primitive_root128(q, poly_degree)
        assert pow(root, poly_degree, q) == q - 1  # order exactly 2N
        if poly_degree <= 8:
            assert all(pow(root, k, q) > root for k in range(3, 2 * poly_degree, 2))


# ---- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize("q", [-3, 0, 1, 2, 4, 1 << 64, LIMIT - 2, LIMIT, LIMIT + 1])
def test_bad_modulus_is_value_error(q):
    with pytest.raises(ValueError, match=r"\[arith128.mul_mod128\] modulus must be odd"):
        arith128.mul_mod128(1, 1, q)


@pytest.mark.parametrize("fn", [arith128.add_mod128, arith128.sub_mod128, arith128.mul_mod128])
def test_unreduced_operands_are_value_errors(fn):
    q = P128
    for a, b in [(q, 0), (0, q), (-1, 0), (0, -1), (LIMIT, 1)]:
        with pytest.raises(ValueError, match="< q="):
            fn(a, b, q)
    with pytest.raises(ValueError):
        arith128.neg_mod128(q, q)
    with pytest.raises(ValueError):
        arith128.inv_mod128(q + 2, q)
    with pytest.raises(ValueError):
        arith128.pow_mod128(q, 1, q)
    with pytest.raises(ValueError, match="exponent"):
        arith128.pow_mod128(1, LIMIT, q)


def test_not_invertible_and_other_value_errors():
    with pytest.raises(ValueError, match="no inverse"):
        arith128.inv_mod128(3, LIMIT - 1)  # 3 divides 2^128 - 1
    with pytest.raises(ValueError, match="no inverse"):
        arith128.inv_mod128(0, P128)
    for n in (-1, LIMIT):
        with pytest.raises(ValueError):
            arith128.is_prime128(n)
    with pytest.raises(ValueError, match="bits"):
        arith128.find_ntt_primes128(129, 1, 16)
    with pytest.raises(ValueError, match="power of two"):
        arith128.find_ntt_primes128(100, 1, 12)
    with pytest.raises(ValueError, match="only 0 primes"):
        arith128.find_ntt_primes128(4, 1, 1024)
    with pytest.raises(ValueError, match="not a prime"):
        arith128.primitive_root128(LIMIT - 1, 4)


def test_non_integers_are_type_errors():
    for bad in (1.0, "1", True, None):
        with pytest.raises(TypeError):
            arith128.mul_mod128(bad, 1, P128)
        with pytest.raises(TypeError):
            arith128.mul_mod128(1, 1, bad)


def test_native_errors_surface_as_value_error():
    # The C++ checks stand on their own too: InvalidArgument -> ValueError.
    with pytest.raises(ValueError, match=r"\[arith.Modulus128\]"):
        _core.mod128_op("mul", 1, 0, 1, 0, 4, 0)
    with pytest.raises(ValueError, match="unknown op"):
        _core.mod128_op("div", 1, 0, 1, 0, 7, 0)
    with pytest.raises(ValueError, match="not below q"):
        _core.mod128_op(op="add", a_lo=7, a_hi=0, b_lo=1, b_hi=0, q_lo=7, q_hi=0)
    assert _core.mod128_op(op="mul", a_lo=2, a_hi=0, b_lo=0, b_hi=1 << 62, q_lo=P128 & ((1 << 64) - 1),
                           q_hi=P128 >> 64) == (0, 1 << 63)
    assert _core.is_prime128(lo=P128 & ((1 << 64) - 1), hi=P128 >> 64) is True
