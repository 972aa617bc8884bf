"""Many requests at once (docs/nn.md): one context, model and in-process key holder shared by
threads, each request's kernels on one thread or on the pool, every result against
onnxruntime, and no two concurrent encryptions drawing the same randomness."""

import threading

import numpy as np
import pytest

import ringfire as rf

pytest.importorskip("onnxruntime")

from nn_models import mlp_bytes, ort_run  # noqa: E402

THREADS, EACH = 4, 2


@pytest.fixture(scope="module")
def served():
    ctx = rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=40, special_bits=[60])
    sk, keys = ctx.keygen()
    data = mlp_bytes((16, 8, 4))
    return ctx, sk, keys, rf.nn.load(data, ctx), data


def run_at_once(target, threads=THREADS):
    errors = []

    def guarded(i):
        try:
            target(i)
        except BaseException as e:  # noqa: BLE001 - reported by the test's thread
            errors.append(e)
    pool = [threading.Thread(target=guarded, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in pool), "a request did not finish"
    if errors:
        raise errors[0]


@pytest.mark.parametrize("kernel_threads", [1, None], ids=["one-thread-each", "shared-pool"])
def test_requests_at_once_match_onnxruntime(served, kernel_threads):
    ctx, sk, keys, model, data = served
    holder = rf.nn.LocalClient(ctx, sk, keys)
    inputs = [np.random.default_rng(i).uniform(-1, 1, (8, 16)) for i in range(THREADS * EACH)]
    results = [None] * len(inputs)

    def request(i):
        for k in range(EACH):
            j = i * EACH + k
            results[j] = ctx.decrypt_batch(model(ctx.encrypt_batch(inputs[j], sk), client=holder), sk)

    before = rf.num_threads()
    if kernel_threads is not None:
        rf.set_num_threads(kernel_threads)
    try:
        run_at_once(request)
    finally:
        rf.set_num_threads(before)
    for x, got in zip(inputs, results):
        ref = ort_run(data, x)
        assert got.shape == ref.shape
        assert np.max(np.abs(got - ref)) < 1e-4 * max(1.0, float(np.max(np.abs(ref))))


def test_concurrent_encryptions_draw_their_own_randomness(served):
    ctx, sk, keys, _, _ = served
    x = np.linspace(-1, 1, ctx.slots)
    blobs = [[] for _ in range(THREADS)]

    def encrypt(i):
        for _ in range(8):
            blobs[i].append(ctx.encrypt(x, sk).to_bytes())
            blobs[i].append(ctx.encrypt(x, keys).to_bytes())
    run_at_once(encrypt)
    every = [b for per in blobs for b in per]
    assert len(set(every)) == len(every), "two encryptions of the same values came out the same"
