"""Radix-4 integers on the 64-bit torus sets (ringfire.tfhe.RadixUInt): every operation
against Python's integers on random and edge values, bytes, and what is refused."""

import pickle
import warnings

import numpy as np
import pytest

import ringfire as rf


@pytest.fixture(scope="module")
def toy():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = rf.tfhe.Context.preset("TOY_T64", insecure=True)
        sk = ctx.keygen(insecure_deterministic_seed=21)
    return ctx, sk


def operands(bits, count, seed):
    rng = np.random.default_rng(seed)
    top = (1 << bits) - 1
    u = rng.integers(0, top + 1, count, dtype=np.uint64)
    v = rng.integers(0, top + 1, count, dtype=np.uint64)
    edges = [(0, 0), (top, top), (0, top), (top, 0), (top // 2, top // 2), (top - 1, top), (1 << (bits - 1), (1 << (bits - 1)) - 1)]
    for i, (a, b) in enumerate(edges):
        u[i], v[i] = a, b
    return u, v


@pytest.mark.parametrize("bits", [2, 6, 8])
def test_every_operation_matches_python_integers_toy(toy, bits):
    ctx, sk = toy
    u, v = operands(bits, 24, bits)
    mod = 1 << bits
    x, y = ctx.encrypt_radix(u, sk, bits=bits), ctx.encrypt_radix(v, sk, bits=bits)
    assert x.bits == bits and len(x.blocks) == bits // 2 and x.shape == (24,)
    dec = lambda r: ctx.decrypt(r, sk)  # noqa: E731
    assert (dec(x + y) == (u + v) % mod).all()
    assert (dec(x - y) == (u - v) % mod).all()
    assert (dec(x < y) == (u < v)).all() and (dec(x <= y) == (u <= v)).all()
    assert (dec(x > y) == (u > v)).all() and (dec(x >= y) == (u >= v)).all()
    assert (dec(x == y) == (u == v)).all() and (dec(x != y) == (u != v)).all()
    assert (dec(x.min(y)) == np.minimum(u, v)).all() and (dec(x.max(y)) == np.maximum(u, v)).all()
    c = mod - 3
    assert (dec(x + c) == (u + c) % mod).all() and (dec(c - x) == (c - u) % mod).all()
    assert (dec(x & y) == (u & v)).all() and (dec(x | y) == (u | v)).all() and (dec(x ^ y) == (u ^ v)).all()
    assert (dec(~x) == (mod - 1 - u)).all() and (dec(x & c) == (u & c)).all()
    for n in (1, 2, 3, bits - 1, bits, bits + 5):
        assert (dec(x << n) == (u << np.uint64(min(n, bits))) % mod).all(), n
        assert (dec(x >> n) == (u >> np.uint64(min(n, bits)))).all(), n
    wide = lambda a: a.astype(object)  # noqa: E731 - Python ints: negative constants, no wrap before the mod
    for k in (0, 1, 3, 6, mod - 1, 0x2D % mod, -5):
        assert (wide(dec(x * k)) == wide(u) * k % mod).all(), k
    assert (dec(x * y) == (u * v) % mod).all() and (dec(-x) == (mod - u) % mod).all()
    assert (dec((x * y) + x) == (u * v + u) % mod).all()
    assert (dec((x + y) - y) == u).all()  # results are clean blocks: they compose
    assert (dec((x + y) < x) == ((u + v) % mod < u)).all()


def test_shapes_indexing_and_bytes_toy(toy):
    ctx, sk = toy
    values = np.arange(12, dtype=np.uint64).reshape(3, 4) * 20
    x = ctx.encrypt_radix(values, sk, bits=8)
    assert ctx.decrypt(x[1], sk).tolist() == values[1].tolist() and len(x) == 3
    blob = x.to_bytes(mac_key=b"k" * 32)
    back = ctx.load(blob, mac_key=b"k" * 32)
    assert isinstance(back, rf.tfhe.RadixUInt) and back.shape == (3, 4)
    assert (ctx.decrypt(back + 1, sk) == values + 1).all()
    raw = bytearray(rf.io.unwrap(x.to_bytes()))
    raw[-40] ^= 1
    with pytest.raises(ValueError):
        ctx.load(rf.io.wrap(bytes(raw)))


def test_what_radix_integers_refuse(toy):
    ctx, sk = toy
    x = ctx.encrypt_radix([1, 2], sk, bits=8)
    with pytest.raises(ValueError, match="even number of bits"):
        ctx.encrypt_radix([1], sk, bits=7)
    with pytest.raises(ValueError, match=r"\[0, 2\^8 - 1\]"):
        ctx.encrypt_radix([256], sk, bits=8)
    with pytest.raises(ValueError, match="operands differ"):
        x + ctx.encrypt_radix([1, 2], sk, bits=6)
    with pytest.raises(TypeError, match="RadixUInt"):
        x + ctx.encrypt([1, 2], sk, bits=4)
    with pytest.raises(TypeError):
        pickle.dumps(x)
    for bad in (2.5, True, np.array([2, 3])):
        with pytest.raises(TypeError, match="public int"):
            x * bad
    with pytest.raises(TypeError):
        np.array([2, 3]) * x  # not an array of objects, one product per element
    with pytest.raises(TypeError, match="RadixUInt"):
        x * ctx.encrypt([1, 2], sk, bits=4)
    with pytest.raises(ValueError, match="operands differ"):
        x * ctx.encrypt_radix([1, 2], sk, bits=6)
    with pytest.raises(ValueError, match="shift counts"):
        x << -1
    with pytest.raises(TypeError):
        bool(x < x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        small = rf.tfhe.Context.preset("TOY", insecure=True)
    with pytest.raises(ValueError, match="torus set"):
        small.trivial_radix([1], bits=8)


def test_sixteen_bits_at_128_bit_security():
    ctx = rf.tfhe.Context.preset("STD128_T64")
    assert ctx.failure_probability("radix", log2=True) < -128
    sk = ctx.keygen()
    u, v = np.array([51234, 7, 40000], dtype=np.uint64), np.array([40000, 9, 40000], dtype=np.uint64)
    x, y = ctx.encrypt_radix(u, sk, bits=16), ctx.encrypt_radix(v, sk, bits=16)
    assert ctx.decrypt(x + y, sk).tolist() == ((u + v) % 65536).tolist()
    assert ctx.decrypt(x < y, sk).tolist() == (u < v).tolist()
    assert ctx.decrypt(x.max(y), sk).tolist() == np.maximum(u, v).tolist()
    assert ctx.decrypt(x[:1] * y[:1], sk).tolist() == [51234 * 40000 % 65536]  # 114 tables, one element


def test_products_keep_every_table_input_inside_the_budget_toy(toy):
    """Squares (a block times itself: 4a + a would carry 25 times a block's error) go through
    the square's tables, and min/max results (blocks of twice a bootstrap's error) are
    refreshed before they are packed: every table input within 17 bootstraps' error."""
    ctx, sk = toy
    u, v = np.array([7, 200, 255, 0], dtype=np.uint64), np.array([9, 13, 255, 1], dtype=np.uint64)
    x, y = ctx.encrypt_radix(u, sk, bits=8), ctx.encrypt_radix(v, sk, bits=8)
    from ringfire.tfhe.radix import _tables
    worst, squares, real = [0.0], [0], ctx.bootstrap_many

    def watched(items, table=None):
        worst[0] = max([worst[0]] + [c.variance / ctx.params.bootstrap_variance() for c in items])
        squares[0] += sum(len(items) for t in ("square_low", "square_high") if table is _tables(ctx)[t])
        return real(items, table)
    ctx.bootstrap_many = watched
    try:
        m = x.max(y)
        w = lambda a: a.astype(object)  # noqa: E731
        mm = np.maximum(u, v)
        assert (w(ctx.decrypt(x * x, sk)) == w(u) * w(u) % 256).all()
        assert (w(ctx.decrypt(x * (x << 2), sk)) == w(u) * (w(u) * 4 % 256) % 256).all()
        assert (w(ctx.decrypt(m * m, sk)) == w(mm) * w(mm) % 256).all()
        assert (w(ctx.decrypt(m * 0xB7, sk)) == w(mm) * 0xB7 % 256).all()
        assert (ctx.decrypt(m < x, sk) == (mm < u)).all()
    finally:
        del ctx.bootstrap_many
    assert worst[0] <= 17.0 + 1e-9, worst[0]
    assert squares[0] >= 4 + 3  # x * x's diagonal (blocks 0 and 1, low and high parts) and the rest
