"""Encrypted vectors behave like the NumPy vectors they encrypt: a length,
NumPy's broadcasting rules (mismatches raise naming both shapes), decryption
in the original shape, and the reductions TenSEAL users reach for (sum, dot,
matmul, polyval, powers, division by a constant), each checked against NumPy."""

import numpy as np
import pytest

import ringfire as rf

BITS = 14  # worst-case precision asked of one product at N=2^13, scale 2^40


@pytest.fixture(scope="module")
def ckks():
    ctx = rf.ckks.Context(poly_degree=2**13, coeff_bits=[60, 40, 40, 60], scale_bits=40)
    sk, keys = ctx.keygen(rotations="power_of_two")
    return ctx, sk, keys


@pytest.fixture(scope="module")
def bfv():
    ctx = rf.bfv.Context(poly_degree=2**13, plain_bits=17)
    sk, keys = ctx.keygen(rotations="power_of_two", swap_rows=True)
    return ctx, sk, keys


def close(got, want, bits=BITS):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.max(np.abs(got - want), initial=0.0) <= 2.0**-bits * max(1.0, np.max(np.abs(want), initial=0.0)), \
        (got, want)


def test_length_and_decrypt_shape(ckks):
    ctx, sk, keys = ckks
    x = np.array([0.5, -1.0, 2.0])
    ct = ctx.encrypt(x, keys)
    assert len(ct) == 3 and ct.shape == (3,) and ct.ndim == 1
    assert "length=3" in repr(ct)
    close(ctx.decrypt(ct, sk), x)
    scalar = ctx.encrypt(1.5, keys)
    assert scalar.shape == () and "shape=()" in repr(scalar)
    with pytest.raises(TypeError, match="scalar"):
        len(scalar)
    value = ctx.decrypt(scalar, sk)
    assert np.ndim(value) == 0 and abs(value - 1.5) < 1e-6
    full = ctx.encrypt(np.ones(ctx.slots), keys)
    assert len(full) == ctx.slots


def test_broadcasting_follows_numpy(ckks):
    ctx, sk, keys = ckks
    x = np.array([1.0, 2.0, 3.0])
    ct = ctx.encrypt(x, keys)
    # The reproductions: a length-1 vector used to reach slot 0 only, a
    # short one to zero the slots past it, a long one to be padded silently.
    close(ctx.decrypt(ct + np.array([1.0]), sk), x + 1.0)
    close(ctx.decrypt(np.array([2.0]) * ct, sk), 2.0 * x)
    close(ctx.decrypt(ct - np.array([1.0, 2.0, 3.0]), sk), np.zeros(3))
    for bad in (np.array([2.0, 2.0]), np.ones(4), np.ones(ctx.slots)):
        with pytest.raises(ValueError, match=r"shapes \(3,\) and \(\d+,\)"):
            ct * bad
    with pytest.raises(ValueError, match=r"\(3,\) and \(2,\)"):
        np.array([2.0, 2.0]) * ct  # the reflected operator too
    with pytest.raises(ValueError, match="slots"):
        ct + np.ones(ctx.slots + 1)
    with pytest.raises(ValueError, match="matrix product"):
        ct + np.ones((3, 3))
    other = ctx.encrypt(np.ones(4), keys)
    with pytest.raises(ValueError, match=r"\(3,\) and \(4,\)"):
        ct + other
    # An encrypted scalar broadcasts; an encrypted length-1 vector cannot (slot 0 only).
    close(ctx.decrypt(ct * ctx.encrypt(2.0, keys), sk), 2.0 * x)
    with pytest.raises(ValueError, match="slot 0 only"):
        ct + ctx.encrypt(np.array([1.0]), keys)


def test_lengths_survive_operations_and_serialization(ckks):
    ctx, sk, keys = ckks
    x = np.array([0.25, 0.5, -0.75, 1.0, 0.1])
    ct = ctx.encrypt(x, keys)
    for derived in (-ct, ct * 3, ct * ct, ct.rotate(1), ct.copy(), ctx.load(ct.to_bytes()),
                    ctx.evaluator(keys).rescale(ctx.evaluator(keys).multiply_scalar(ct, 2.0))):
        assert derived.shape == (5,)
    close(ctx.decrypt(ctx.load((ct * 2).to_bytes()), sk), 2 * x)
    pt = ctx.encode(x)
    assert pt.shape == (5,) and ctx.load(pt.to_bytes()).shape == (5,)
    close(ctx.decrypt(ctx.encrypt(pt, keys), sk), x)


def test_rotation_of_a_partial_vector_shifts_in_the_padding(ckks):
    ctx, sk, keys = ckks
    x = np.array([1.0, 2.0, 3.0, 4.0])
    close(ctx.decrypt(ctx.encrypt(x, keys).rotate(1), sk), np.array([2.0, 3.0, 4.0, 0.0]))
    tiled = ctx.encrypt(np.tile(x, ctx.slots // 4), keys)  # the cyclic rotation within 4
    close(ctx.decrypt(tiled.rotate(1), sk)[:4], np.roll(x, -1))


@pytest.mark.parametrize("n", [1, 3, 8, 100])
def test_sum_and_dot(ckks, n):
    ctx, sk, keys = ckks
    rng = np.random.default_rng(n)
    x, y = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    a, b = ctx.encrypt(x, keys), ctx.encrypt(y, keys)
    total = a.sum()
    assert total.shape == () and total.level == a.level  # a fresh vector's tail is zero: no mask
    close(ctx.decrypt(total, sk), x.sum(), bits=12)
    first = a.sum(broadcast=False)
    assert first.shape == (1,)
    close(ctx.decrypt(first, sk), [x.sum()], bits=12)
    close(ctx.decrypt(a.dot(y), sk), x @ y, bits=12)
    close(ctx.decrypt(a.dot(b), sk), x @ y, bits=12)
    # After adding a scalar the slots past n are not zero: sum masks them (a level).
    shifted = (a + 1.0).sum()
    assert shifted.level == a.level - 1
    close(ctx.decrypt(shifted, sk), (x + 1).sum(), bits=12)


def test_matmul_polyval_power_division(ckks):
    ctx, sk, keys = ckks
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, 6)
    w = rng.uniform(-1, 1, (6, 4))
    ct = ctx.encrypt(x, keys)
    y = ct @ w
    assert y.shape == (4,) and y.level == ct.level - 1
    close(ctx.decrypt(y, sk), x @ w, bits=12)
    close(ctx.decrypt(ct.mm(w) + 1.0, sk), x @ w + 1.0, bits=12)
    close(ctx.decrypt(w.T @ ct, sk), w.T @ x, bits=12)          # NumPy on the left defers to us
    close(ctx.decrypt(np.float64(2.0) * ct - np.ones(6), sk), 2 * x - 1)
    with pytest.raises(ValueError, match="not aligned"):
        ct @ rng.uniform(size=(5, 4))
    close(ctx.decrypt(ct.polyval([0.5, -1.0, 2.0]), sk), 0.5 - x + 2 * x**2, bits=12)
    close(ctx.decrypt(ct ** 2, sk), x**2)
    close(ctx.decrypt(ct / 4, sk), x / 4)
    close(ctx.decrypt(ct / np.arange(1.0, 7.0), sk), x / np.arange(1.0, 7.0))
    with pytest.raises(ZeroDivisionError):
        ct / 0
    with pytest.raises(TypeError, match="reciprocal"):
        ct / ct


def test_matmul_with_its_own_keys_matches_the_composed_path():
    ctx = rf.ckks.Context(poly_degree=2**13, coeff_bits=[60, 40, 60], scale_bits=40)
    w = np.random.default_rng(8).uniform(-1, 1, (5, 3))
    x = np.linspace(-1, 1, 5)
    sk, keys = ctx.keygen(rotations=rf.ckks.matmul_rotations(ctx, w.shape))
    close(ctx.decrypt(ctx.encrypt(x, keys) @ w, sk), x @ w, bits=12)


def test_bfv_vectors_are_exact(bfv):
    ctx, sk, keys = bfv
    t = ctx.plain_modulus
    rng = np.random.default_rng(1)
    x = rng.integers(-100, 100, 7)
    y = rng.integers(-100, 100, 7)
    ct = ctx.encrypt(x, keys)
    assert ct.shape == (7,)
    assert np.array_equal(ctx.decrypt(ct, sk), x)
    assert np.array_equal(ctx.decrypt(ct + np.array([5]), sk), x + 5)
    assert np.array_equal(ctx.decrypt(ct * y, sk), x * y)
    with pytest.raises(ValueError, match=r"\(7,\) and \(3,\)"):
        ct + np.array([1, 2, 3])
    assert ctx.decrypt(ct.sum(), sk) == x.sum()
    assert ctx.decrypt(ct.dot(y), sk) == (x @ y + t // 2) % t - t // 2
    assert ctx.decrypt((ct + 3).sum(broadcast=False), sk)[0] == (x + 3).sum()
    assert np.array_equal(ctx.decrypt(ct ** 3, sk), ((x**3 + t // 2) % t) - t // 2)
    with pytest.raises(TypeError, match="inverse mod t"):
        ct / 2
    wide = ctx.encrypt(rng.integers(-9, 9, ctx.row_size + 5), keys)  # spans both rows
    assert ctx.decrypt(wide.sum(), sk) == ctx.decrypt(wide, sk).sum()


def test_torch_like_tensors_are_accepted(ckks):
    """Anything with __array__ works as an operand; a torch-like tensor is detached
    and moved to the host first (PyTorch itself is exercised in test_torch.py)."""
    ctx, sk, keys = ckks

    class FakeTensor:
        def __init__(self, data):
            self.data = np.asarray(data, dtype=np.float32)

        def detach(self):
            return self

        def cpu(self):
            return self

        def numpy(self):
            return self.data

        def __array__(self, dtype=None, copy=None):
            raise AssertionError("torch tensors are read through detach().cpu().numpy()")

    x = np.array([1.0, 2.0, 3.0])
    ct = ctx.encrypt(FakeTensor(x), keys)
    close(ctx.decrypt(ct * FakeTensor([2.0, 2.0, 2.0]), sk), 2 * x)
    close(ctx.decrypt(FakeTensor([1.0]) + ct, sk), x + 1)
