"""ringfire.ring against exact Python-integer references."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ringfire import ring
from reference import (automorphism_coeff, crt_compose, is_prime_slow, negacyclic_schoolbook,
                       ntt_by_evaluation)

BITS = [20, 30, 40, 50, 55, 60, 61]


def random_poly(rng, n, moduli):
    return np.stack([rng.integers(0, q, n, dtype=np.uint64) for q in moduli])


# ---- primes -----------------------------------------------------------------------

@pytest.mark.parametrize("bits", [16, 20, 40, 61])
def test_find_primes_properties(bits):
    n = 64
    primes = ring.find_primes(bits, 4, n)
    assert len(set(primes)) == 4
    assert primes == sorted(primes, reverse=True)
    assert primes == ring.find_primes(bits, 4, n)  # deterministic
    for p in primes:
        assert p.bit_length() == bits and p % (2 * n) == 1
        if bits <= 20:
            assert is_prime_slow(p)
        else:
            assert all(pow(a, p - 1, p) == 1 for a in (2, 3, 5, 7))


def test_find_primes_are_the_largest_ones():
    n, bits = 16, 14
    expected = [p for p in range((1 << bits) - 1, (1 << (bits - 1)) - 1, -1) if p % (2 * n) == 1 and is_prime_slow(p)]
    assert ring.find_primes(bits, len(expected), n) == expected
    with pytest.raises(ValueError, match="only .* primes"):
        ring.find_primes(bits, len(expected) + 1, n)


def test_primitive_root_is_minimal_and_of_order_2n():
    n = 32
    for q in ring.find_primes(30, 3, n):
        psi = ring.primitive_root(q, n)
        assert pow(psi, n, q) == q - 1
        # x^n mod q for every x up to psi at once: n = 2^5 squarings, each product < 2^62.
        powers = np.arange(1, psi + 1, dtype=np.int64)
        for _ in range(5):
            powers = powers * powers % q
        assert np.flatnonzero(powers == q - 1)[0] + 1 == psi


def test_prime_helpers():
    assert ring.is_prime(2) and not ring.is_prime(1) and ring.is_prime((1 << 61) - 1)
    assert ring.is_ntt_friendly(ring.find_primes(40, 1, 1024)[0], 1024)
    assert not ring.is_ntt_friendly(97, 1024)


# ---- NTT --------------------------------------------------------------------------

@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("n", [16, 32, 64])
def test_ntt_equals_evaluation_at_odd_powers_of_psi(n, bits):
    q = ring.find_primes(bits, 1, n)[0]
    rng = np.random.default_rng(n * bits)
    a = rng.integers(0, q, n, dtype=np.uint64)
    a[:2] = [q - 1, 0]
    expected = ntt_by_evaluation([int(x) for x in a], q, ring.primitive_root(q, n))
    assert [int(x) for x in ring.ntt(a, q)] == expected
    assert np.array_equal(ring.intt(np.array(expected, np.uint64), q), a)


@pytest.mark.parametrize("log_n", range(4, 18))
def test_round_trip_all_sizes(log_n):
    n = 1 << log_n
    moduli = ring.find_primes(61, 2, n) if log_n < 17 else ring.find_primes(50, 1, n)
    rng = np.random.default_rng(log_n)
    a = random_poly(rng, n, moduli)
    a[0, :3] = [0, 1, moduli[0] - 1]
    y = ring.ntt(a, moduli)
    assert y.shape == a.shape and y.dtype == np.uint64
    assert (y < np.array(moduli, dtype=np.uint64)[:, None]).all()
    assert np.array_equal(ring.intt(y, moduli), a)


@pytest.mark.parametrize("method", ["ntt", "karatsuba"])
@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("n", [16, 128])
def test_poly_mul_matches_schoolbook(n, bits, method):
    moduli = ring.find_primes(bits, 2, n)
    rng = np.random.default_rng(bits + n)
    a, b = random_poly(rng, n, moduli), random_poly(rng, n, moduli)
    a[0, :] = moduli[0] - 1  # extreme values in one limb
    got = ring.poly_mul(a, b, moduli, method=method)
    for limb, q in enumerate(moduli):
        assert [int(x) for x in got[limb]] == negacyclic_schoolbook(a[limb], b[limb], q)


def test_karatsuba_equals_plain_product_on_large_batches():
    n = 1 << 12
    moduli = ring.find_primes(61, 3, n)
    rng = np.random.default_rng(1)
    a = np.stack([random_poly(rng, n, moduli) for _ in range(2)])
    b = np.stack([random_poly(rng, n, moduli) for _ in range(2)])
    assert np.array_equal(ring.poly_mul(a, b, moduli), ring.poly_mul(a, b, moduli, method="karatsuba"))


@given(st.data())
def test_ntt_is_linear_and_multiplicative(data):
    n = 32
    bits = data.draw(st.sampled_from(BITS))
    q = ring.find_primes(bits, 1, n)[0]
    vals = st.lists(st.integers(0, q - 1), min_size=n, max_size=n)
    a = np.array(data.draw(vals), np.uint64)
    b = np.array(data.draw(vals), np.uint64)
    fa, fb = ring.ntt(a, q), ring.ntt(b, q)
    assert [int(x) for x in ring.ntt((a.astype(object) + b.astype(object)) % q, q)] == \
        [(int(x) + int(y)) % q for x, y in zip(fa, fb)]
    prod = ring.intt(np.array([(int(x) * int(y)) % q for x, y in zip(fa, fb)], np.uint64), q)
    assert [int(x) for x in prod] == negacyclic_schoolbook(a, b, q)


def test_batched_shapes():
    n = 64
    moduli = ring.find_primes(40, 3, n)
    rng = np.random.default_rng(5)
    stack = np.stack([np.stack([random_poly(rng, n, moduli) for _ in range(2)]) for _ in range(3)])  # (3,2,3,N)
    out = ring.ntt(stack, moduli)
    assert out.shape == stack.shape
    assert np.array_equal(out[2, 1], ring.ntt(stack[2, 1], moduli))
    one = ring.find_primes(40, 1, n)[0]
    rows = rng.integers(0, one, (5, n), dtype=np.uint64)  # single modulus, (..., N)
    assert np.array_equal(ring.ntt(rows, one)[3], ring.ntt(rows[3], one))


def test_input_is_not_modified():
    n = 16
    q = ring.find_primes(30, 1, n)[0]
    a = np.arange(n, dtype=np.uint64)
    ring.ntt(a, q)
    assert np.array_equal(a, np.arange(n, dtype=np.uint64))


def test_clear_errors():
    n = 64
    q = ring.find_primes(40, 1, n)[0]
    with pytest.raises(ValueError, match="power of two"):
        ring.ntt(np.zeros(48, np.uint64), q)
    with pytest.raises(ValueError, match="power of two"):
        ring.ntt(np.zeros(8, np.uint64), q)
    with pytest.raises(ValueError, match="not an NTT-friendly prime"):
        ring.ntt(np.zeros(n, np.uint64), 97)
    with pytest.raises(ValueError, match="not below its modulus"):
        ring.ntt(np.full(n, q, np.uint64), q)
    with pytest.raises(ValueError, match=r"shaped \(\.\.\., 2, N\)"):
        ring.ntt(np.zeros((3, n), np.uint64), ring.find_primes(40, 2, n))
    with pytest.raises(ValueError, match="differ in shape"):
        ring.poly_mul(np.zeros(n, np.uint64), np.zeros(2 * n, np.uint64), q)
    with pytest.raises(ValueError, match="method"):
        ring.poly_mul(np.zeros(n, np.uint64), np.zeros(n, np.uint64), q, method="fft")
    with pytest.raises(ValueError, match="appears twice"):
        ring.ntt(np.zeros((2, n), np.uint64), [q, q])
    with pytest.raises(ValueError, match="scalar"):
        ring.ntt(np.uint64(3), q)


# ---- automorphisms ------------------------------------------------------------------

@pytest.mark.parametrize("k", [1, 3, 5, 25, 127, -1])
def test_automorphism_coeff_and_eval(k):
    n = 64
    moduli = ring.find_primes(50, 2, n)
    rng = np.random.default_rng(k % 1000)
    a = random_poly(rng, n, moduli)
    got = ring.automorphism(a, k, moduli)
    for limb, q in enumerate(moduli):
        assert [int(x) for x in got[limb]] == automorphism_coeff(a[limb], k % (2 * n), q)
    assert np.array_equal(ring.automorphism(ring.ntt(a, moduli), k, moduli, form="eval"), ring.ntt(got, moduli))


def test_automorphism_rejects_even_k():
    q = ring.find_primes(40, 1, 16)[0]
    with pytest.raises(ValueError, match="odd"):
        ring.automorphism(np.zeros(16, np.uint64), 4, q)


# ---- RNS ----------------------------------------------------------------------------

@given(st.lists(st.integers(-(1 << 200), 1 << 200), min_size=1, max_size=20), st.sampled_from([1, 2, 4, 7]))
def test_crt_compose_decompose(values, limbs):
    base = ring.RnsBase(16, ring.find_primes(45, limbs, 16))
    res = base.decompose(values)
    assert res.shape == (limbs, len(values))
    for i, v in enumerate(values):
        assert [int(r) for r in res[:, i]] == [v % q for q in base.moduli]
    composed = base.compose(res)
    assert [int(x) for x in composed] == [v % base.product for v in values]
    assert [crt_compose(res[:, i], base.moduli) for i in range(len(values))] == list(composed)


# (20, 3): more source primes than the vector kernel keeps its factors inline
# for; n = 16, the smallest ring.
@pytest.mark.parametrize("src_count,dst_count,src_bits,dst_bits,n", [
    (1, 2, 30, 40, 64), (3, 2, 61, 50, 64), (8, 5, 40, 61, 64), (2, 1, 50, 20, 64), (20, 3, 50, 61, 64),
    (7, 19, 40, 40, 512), (3, 2, 61, 50, 16)])
def test_base_conversion_against_big_integers(src_count, dst_count, src_bits, dst_bits, n):
    src = ring.find_primes(src_bits, src_count, n)
    dst = ring.find_primes(dst_bits, dst_count, n)
    big_q = 1
    for q in src:
        big_q *= q
    rng = np.random.default_rng(src_count * 10 + dst_count)
    values = [int(rng.integers(0, 1 << 62)) * int(rng.integers(0, 1 << 62)) ** src_count % big_q for _ in range(n)]
    # Values within a few units of Q/2 put the rounded quotient next to a half
    # (the multiword rule), several in one vector.
    specials = [0, 1, big_q - 1] + [big_q // 2 + d for d in range(-4, 6)]
    values[:len(specials)] = specials[:n]
    residues = np.array([[v % q for v in values] for q in src], dtype=np.uint64)
    fast = ring.base_convert(residues, src, dst)
    exact = ring.base_convert(residues, src, dst, exact=True)
    for j, p in enumerate(dst):
        for i, v in enumerate(values):
            centered = v if v <= big_q // 2 else v - big_q
            assert int(exact[j, i]) == centered % p
            # fast conversion: x + u*Q for some 0 <= u < L
            assert any(int(fast[j, i]) == (v + u * big_q) % p for u in range(src_count))


def test_reversed_bits_against_reversed_binary_strings():
    j = np.arange(64)
    want = [int(format(v, "06b")[::-1], 2) for v in range(64)]
    assert ring.reversed_bits(j, 6).tolist() == want
    assert ring.reversed_bits(j[:8], 3).tolist() == [0, 4, 2, 6, 1, 5, 3, 7]
