"""Pickle and copy for every public object (what multiprocessing, joblib and
Ray need): through the checksummed format, contexts as their parameters only,
results from a worker process computing under the keys of the context they
were sent from."""

import copy
import multiprocessing
import pickle
import warnings

import numpy as np
import pytest

import ringfire as rf


@pytest.fixture(scope="module")
def ckks():
    ctx = rf.ckks.Context.preset("N13_D2")
    sk, keys = ctx.keygen(rotations=[1, 2])
    return ctx, sk, keys


def round_trip(obj):
    return pickle.loads(pickle.dumps(obj))


def test_ciphertexts_plaintexts_and_keys_round_trip(ckks):
    ctx, sk, keys = ckks
    x = np.array([0.5, 1.5, -2.0])
    ct = ctx.encrypt(x, keys)
    back = round_trip(ct)
    assert back.context is ctx  # joins the live context with these parameters
    assert back.shape == (3,) and back.level == ct.level
    assert np.allclose(ctx.decrypt(back * 2, sk), 2 * x, atol=1e-5)
    pt = round_trip(ctx.encode(x))
    assert pt.shape == (3,) and np.allclose(pt.decode()[:3].real, x, atol=1e-6)
    with pytest.warns(RuntimeWarning, match="in the clear"):
        sk2 = round_trip(sk)
    assert np.allclose(ctx.decrypt(ct, sk2), x, atol=1e-6)
    keys2 = round_trip(keys)
    assert keys2.galois.rotations() == [1, 2] and keys2.relin is not None and keys2.public is not None
    assert np.allclose(ctx.decrypt(ctx.encrypt(x, keys2).rotate(1), sk), [1.5, -2.0, 0.0], atol=1e-5)
    ev = round_trip(ctx.evaluator(keys))
    assert repr(ev) == "ckks.Evaluator(keys: relin, galois)"
    assert np.allclose(ctx.decrypt(ev.rotate(ct, 2), sk), [-2.0, 0.0, 0.0], atol=1e-5)


def test_a_context_pickles_its_parameters_only(ckks):
    ctx, sk, keys = ckks
    data = pickle.dumps(ctx)
    assert len(data) < 2048  # no keys, no tables: the parameters' bytes
    assert rf._core.save_secret_key(sk._native)[48:112] not in data  # 64 of its coefficients
    fresh = pickle.loads(data)
    assert fresh.fingerprint == ctx.fingerprint and fresh.params.identity == ctx.params.identity
    # The PRNG state is never copied: two contexts from one pickle encrypt differently.
    assert ctx.encrypt([1.0], keys).to_bytes() != fresh.encrypt([1.0], keys).to_bytes()


def test_deepcopy_is_an_independent_context(ckks):
    ctx, sk, keys = ckks
    clone = copy.deepcopy(ctx)
    assert clone is not ctx and clone.fingerprint == ctx.fingerprint
    assert clone._default_keys is ctx._default_keys
    other_sk, other_keys = clone.keygen()
    assert ctx._default_keys is keys  # keygen on the copy leaves the original's keys alone
    ct = ctx.encrypt([1.0, 2.0], keys)
    assert copy.deepcopy(ct).shape == (2,) and copy.copy(keys.relin) is keys.relin


def test_scheme_objects_and_circuits_round_trip():
    bfv = rf.bfv.Context(poly_degree=2**13, plain_bits=20)
    sk, keys = bfv.keygen()
    ct = round_trip(bfv.encrypt([1, 2, 3], keys) * 5)
    assert type(ct.context) is rf.bfv.Context and ct.shape == (3,)
    assert list(bfv.decrypt(ct, sk)) == [5, 10, 15]
    poly = round_trip(rf.ckks.Polynomial([1.0, 2.0, 3.0], "chebyshev", (-2.0, 2.0)))
    assert poly.degree == 2 and poly.interval == (-2.0, 2.0) and poly(1.0) == pytest.approx(1 + 2 * 0.5 - 3 * 0.5)
    assert round_trip(rf.ckks.Polynomial([1.0, 2.0], "monomial"))(3.0) == 7.0
    ctx = rf.ckks.Context.preset("N13_D2")
    original = rf.ckks.LinearTransform(ctx, np.eye(4)[::-1], level=1)
    lt = round_trip(original)
    assert (lt.level, lt.dimension, lt.diagonal_count, lt.rotations()) == (1, 4, 2, original.rotations())


def test_insecure_contexts_warn_again_when_unpickled():
    with pytest.warns(RuntimeWarning, match="security check is disabled"):
        toy = rf.ckks.Context(poly_degree=1024, coeff_bits=[40, 30], scale_bits=30, special_bits=[40],
                              insecure_no_security_check=True)
    data = pickle.dumps(toy)
    del toy
    with pytest.warns(RuntimeWarning, match="security check is disabled"):
        back = pickle.loads(data)
    assert back.params.security == 0


def test_encrypted_tensors_round_trip(ckks):
    ctx, sk, keys = ckks
    x = np.random.default_rng(0).uniform(-1, 1, (3, 2, 2))
    t = round_trip(ctx.encrypt_batch(x, keys))
    assert t.shape == (3, 2, 2)
    assert np.allclose(ctx.decrypt_batch(t, sk), x, atol=1e-5)


def _square_in_worker(args):
    ct, keys = args
    ct.context.set_keys(keys)
    return ct * ct


def test_a_worker_process_computes_and_sends_back():
    ctx = rf.ckks.Context.preset("N13_D2")
    sk, keys = ctx.keygen()
    xs = [np.array([1.0, -2.0]), np.array([0.5, 3.0])]
    cts = [ctx.encrypt(x, keys) for x in xs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork in a threaded process (CPython 3.12+)
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            results = pool.map(_square_in_worker, [(ct, keys) for ct in cts])
    for x, r in zip(xs, results):
        assert r.context is ctx and r.shape == (2,)
        assert np.allclose(ctx.decrypt(r, sk), x * x, atol=1e-4)
